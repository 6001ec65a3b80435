//! Parsing binary files. (Being implemented.)
use super::records::*;
use crate::format::ParseError;

/// A whole parsed binary file.
#[derive(Debug, Clone, PartialEq)]
pub struct BinaryFile {
    pub header: FileHeader,
    pub records: Vec<Record>,
}

/// Parse a complete binary file.
pub fn parse(_bytes: &[u8]) -> Result<BinaryFile, ParseError> {
    unimplemented!("parse")
}
