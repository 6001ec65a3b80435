//! Prints a short summary of an HPROF profile, binary or ASCII:
//!
//! ```text
//! cargo run --release -p hprof-format --example summary -- FILE
//! ```
//!
//! A binary file is read as a stream of records in bounded memory: each
//! record's body is decoded except heap dump bodies, whose sub-records are
//! walked one at a time (a `JAVA PROFILE 1.0.1` heap dump is one record
//! holding the whole dump). An ASCII file is parsed whole.
//!
//! Exit status: 0 when the file was read, 1 when it could not be opened or
//! read, 2 when it is malformed (`error: at byte offset N: ...`).

use hprof_format::ParseError;
use hprof_format::ascii::{self, HeapEntry, Section};
use hprof_format::binary::reader::{RecordStream, parse_body};
use hprof_format::binary::tags;
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufReader, Read};
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let (Some(path), None) = (args.next(), args.next()) else {
        eprintln!("usage: summary FILE");
        return ExitCode::from(1);
    };
    match summarize(&path) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Io(e)) => {
            eprintln!("error: {path}: {e}");
            ExitCode::from(1)
        }
        Err(Failure::Malformed(e)) => {
            // ParseError displays as `at byte offset N: <message>`.
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

enum Failure {
    Io(std::io::Error),
    Malformed(ParseError),
}

impl From<std::io::Error> for Failure {
    fn from(e: std::io::Error) -> Self {
        Failure::Io(e)
    }
}

impl From<ParseError> for Failure {
    fn from(e: ParseError) -> Self {
        Failure::Malformed(e)
    }
}

fn summarize(path: &str) -> Result<(), Failure> {
    // A binary file starts with `JAVA PROFILE 1.0.x` and a NUL; an ASCII
    // one with `JAVA PROFILE 1.0.1, created ...` (or, for cpu=old, the
    // table's title line). The 18-byte header string with its NUL is the
    // sign of a binary file; the binary reader then checks the version.
    let mut start = Vec::with_capacity(19);
    File::open(path)?.take(19).read_to_end(&mut start)?;
    if start.len() == 19 && start.starts_with(b"JAVA PROFILE ") && start[18] == 0 {
        summarize_binary(path)
    } else {
        summarize_ascii(path)
    }
}

fn summarize_binary(path: &str) -> Result<(), Failure> {
    let mut stream = RecordStream::new(BufReader::new(File::open(path)?))?;
    let header = *stream.header();
    println!("{path}: binary profile");
    println!("  version          {}", header.version.header_text());
    println!("  identifier size  {} bytes", header.id_size);
    println!(
        "  time             {} ms since 1970 ({})",
        header.timestamp_ms,
        header.started_utc()
    );

    let mut records: BTreeMap<String, u64> = BTreeMap::new();
    let mut sub_records: BTreeMap<&str, u64> = BTreeMap::new();
    let mut body = Vec::new();
    while let Some(record) = stream.next_header()? {
        let kind = match tags::name(record.tag) {
            Some(name) => name.to_string(),
            None => format!("unknown tag 0x{:02x}", record.tag),
        };
        *records.entry(kind).or_default() += 1;
        if record.is_heap_dump() {
            // One sub-record at a time, each checked against its layout.
            let mut walker = stream.sub_records();
            while walker.next_into(&mut body)? {
                let name = tags::heap::name(body[0]).unwrap_or("unknown");
                *sub_records.entry(name).or_default() += 1;
            }
        } else {
            // Small bodies: decode them, so that a damaged one is reported.
            stream.read_body(&mut body)?;
            parse_body(record.tag, &body, header.id_size, record.offset)?;
        }
    }

    let total: u64 = records.values().sum();
    println!("{total} records, {} bytes", stream.offset());
    print_counts(records.iter().map(|(k, n)| (k.as_str(), *n)));
    if !sub_records.is_empty() {
        let total: u64 = sub_records.values().sum();
        println!("{total} heap dump sub-records");
        print_counts(sub_records.into_iter());
    }
    Ok(())
}

fn summarize_ascii(path: &str) -> Result<(), Failure> {
    let mut text = Vec::new();
    File::open(path)?.read_to_end(&mut text)?;
    let sections = ascii::reader::parse_file(&text)?;
    println!("{path}: ASCII profile");
    let mut kinds: BTreeMap<&str, u64> = BTreeMap::new();
    let mut entries: BTreeMap<&str, u64> = BTreeMap::new();
    for section in &sections {
        *kinds.entry(section_kind(section)).or_default() += 1;
        match section {
            Section::Header {
                version, created, ..
            } => {
                println!("  version          {version}");
                println!("  created          {created}");
            }
            Section::HeapDump(dump) => {
                for entry in &dump.entries {
                    *entries.entry(entry_kind(entry)).or_default() += 1;
                }
            }
            _ => {}
        }
    }
    println!("{} sections, {} bytes", sections.len(), text.len());
    print_counts(kinds.into_iter());
    if !entries.is_empty() {
        let total: u64 = entries.values().sum();
        println!("{total} heap dump entries");
        print_counts(entries.into_iter());
    }
    Ok(())
}

fn print_counts<'a>(counts: impl Iterator<Item = (&'a str, u64)>) {
    for (kind, n) in counts {
        println!("  {n:>10}  {kind}");
    }
}

fn section_kind(section: &Section) -> &'static str {
    match section {
        Section::Header { .. } => "header",
        Section::ThreadStart { .. } => "THREAD START",
        Section::ThreadEnd { .. } => "THREAD END",
        Section::Trace(_) => "TRACE",
        Section::Sites(_) => "SITES",
        Section::SitesTotals(_) => "SITES TOTALS",
        Section::Cpu(cpu) => ascii::writer::cpu_title(cpu.title),
        Section::WallStates(_) => "WALL STATES",
        Section::OldProf(_) => "cpu=old table",
        Section::MonitorWait { .. } => "WAIT",
        Section::MonitorWaited { .. } => "WAITED",
        Section::MonitorDump { .. } => "MONITOR DUMP",
        Section::MonitorTime { .. } => "MONITOR TIME",
        Section::MonitorHolders(_) => "MONITOR HOLDERS",
        Section::HeapDump(_) => "HEAP DUMP",
        Section::LockTime { .. } => "LOCK TIME",
    }
}

fn entry_kind(entry: &HeapEntry) -> &'static str {
    match entry {
        HeapEntry::Root(_) => "ROOT",
        HeapEntry::Class { .. } => "CLS",
        HeapEntry::Object { .. } => "OBJ",
        HeapEntry::ObjectArray { .. } => "ARR (objects)",
        HeapEntry::PrimitiveArray { .. } => "ARR (primitives)",
    }
}
