//! Formats: turning profile data into bytes and bytes back into typed data.
//!
//! Nothing here touches the JVM. `binary` is the HPROF binary format
//! ("JAVA PROFILE 1.0.1" / "1.0.2"), `ascii` the `java.hprof.txt` text format.
//! Both sides (writer and reader) share the same typed structures so that
//! round trips can be tested record by record.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod ascii;
pub mod binary;
pub mod commands;
pub mod names;

/// An error found while parsing a file, with the byte offset where it was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// Byte offset from the start of the input.
    pub offset: u64,
    /// What was wrong there.
    pub message: String,
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "at byte offset {}: {}", self.offset, self.message)
    }
}

impl std::error::Error for ParseError {}
