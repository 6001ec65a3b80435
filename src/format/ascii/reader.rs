//! Parsing ASCII files. (Being implemented.)
use super::sections::*;
use crate::format::ParseError;

/// Parse a whole ASCII profile into its sections, in file order.
pub fn parse(_text: &[u8]) -> Result<Vec<Section>, ParseError> {
    unimplemented!("parse")
}
