//! The ASCII `java.hprof.txt` format: typed sections, a writer and a parser.

pub mod reader;
mod scan;
pub mod sections;
pub mod time;
pub mod writer;

pub use sections::*;
