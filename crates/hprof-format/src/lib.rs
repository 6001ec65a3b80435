//! Readers and writers of the profile formats of HPROF, the profiling agent
//! the JDK shipped from Java 5 to Java 8: the binary format
//! (`JAVA PROFILE 1.0.1` and `1.0.2`, heap dumps included, whole or in
//! segments), the ASCII `java.hprof.txt` text format, and the command frames
//! a `net=` front end sends to the agent. Pure Rust, no dependencies, no
//! unsafe code; nothing here touches a JVM.
//!
//! - [`binary`]: typed records ([`binary::Record`], [`binary::RecordBody`],
//!   heap dump sub-records [`binary::HeapRecord`]), the
//!   [`writer`](binary::writer), and the [`reader`](binary::reader): a whole
//!   file in memory ([`binary::reader::parse`]), record by record from any
//!   [`std::io::Read`] ([`binary::reader::RecordReader`]), or record headers
//!   and heap dump sub-records in bounded memory
//!   ([`binary::reader::RecordStream`]).
//! - [`ascii`]: the sections of `java.hprof.txt` ([`ascii::Section`]), a
//!   writer that prints them byte for byte as HPROF did, and a parser.
//! - [`commands`]: the `net=` command frames, read and encoded.
//! - [`names`]: JVM signatures to the dotted names HPROF prints.
//! - [`settings`]: the run's settings (depth, sampling interval) an
//!   hprof-rs file carries in a way HPROF's readers pass over.
//! - [`identify`]: a file's format from its first bytes, so that a file that
//!   is not a profile is refused before the rest of it is read.
//!
//! Parsers report a [`ParseError`]: a message and the byte offset where the
//! input went wrong.
//!
//! # Example
//!
//! Write a small binary profile into memory and read it back:
//!
//! ```
//! use hprof_format::binary::reader::{RecordReader, parse};
//! use hprof_format::binary::writer::{encode_header, encode_record};
//! use hprof_format::binary::{FileHeader, HeapRecord, Record, RecordBody, Version};
//!
//! fn main() -> Result<(), hprof_format::ParseError> {
//!     // The header, a string, then a heap dump of one segment.
//!     let header = FileHeader {
//!         version: Version::V102,
//!         id_size: 8,
//!         timestamp_ms: 1_700_000_000_000,
//!     };
//!     let mut bytes = Vec::new();
//!     encode_header(&header, &mut bytes);
//!     let bodies = [
//!         RecordBody::Utf8 { id: 1, text: b"main".to_vec() },
//!         RecordBody::HeapDumpSegment(vec![HeapRecord::RootStickyClass { object_id: 0x1000 }]),
//!         RecordBody::HeapDumpEnd,
//!     ];
//!     for body in bodies {
//!         encode_record(&Record { time: 0, body }, header.id_size, &mut bytes);
//!     }
//!
//!     // Read it back whole...
//!     let file = parse(&bytes)?;
//!     assert_eq!(file.header, header);
//!     assert_eq!(file.records.len(), 3);
//!
//!     // ...or one record at a time from any `Read`, with each record's offset.
//!     for item in RecordReader::new(bytes.as_slice())? {
//!         let (offset, record) = item?;
//!         println!("@{offset}: tag 0x{:02x}", record.body.tag());
//!     }
//!
//!     // A damaged file is an error at the byte offset where it goes wrong:
//!     // here the last record's 9-byte header, cut short.
//!     let error = parse(&bytes[..bytes.len() - 1]).unwrap_err();
//!     assert_eq!(error.offset, bytes.len() as u64 - 9);
//!     Ok(())
//! }
//! ```
//!
//! ASCII sections parse and print back to the same bytes:
//!
//! ```
//! use hprof_format::ascii::{Section, reader, writer};
//!
//! fn main() -> Result<(), hprof_format::ParseError> {
//!     let text = b"THREAD START (obj=50000001, id = 200001, name=\"main\", group=\"main\")\n\
//!                  THREAD END (id = 200001)\n";
//!     let sections = reader::parse(text)?;
//!     assert_eq!(sections[1], Section::ThreadEnd { thread_serial: 200001 });
//!     let mut out = Vec::new();
//!     for section in &sections {
//!         writer::write_section(section, &mut out);
//!     }
//!     assert_eq!(out, text);
//!     Ok(())
//! }
//! ```
//!
//! The `summary` example (`cargo run -p hprof-format --example summary -- FILE`)
//! reads a file of either format and counts its records or sections.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod ascii;
pub mod big_endian;
pub mod binary;
pub mod commands;
pub mod identify;
pub mod names;
pub mod settings;
pub mod wall_states;

/// The README's code examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

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
