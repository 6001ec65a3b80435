//! The HPROF binary format: typed records, an encoder and a parser.

pub mod heap_walk;
pub mod layout;
pub mod object_layout;
pub mod object_runs;
pub mod reader;
pub mod records;
pub mod tags;
pub mod writer;

pub use records::*;
