//! Writing ASCII sections. (Being implemented.)
use super::sections::*;

/// Append the exact text of one section.
pub fn write_section(_section: &Section, _out: &mut Vec<u8>) {
    unimplemented!("write_section")
}
