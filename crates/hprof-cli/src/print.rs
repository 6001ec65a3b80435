//! `hprof-rs print`: decode a binary profile into text, or check an ASCII one.

use super::profile_file::{self, Contents, OpenError};
use hprof_format::ParseError;
use hprof_format::ascii::{self, Section};
use hprof_format::binary::reader::RecordReader;
use hprof_format::binary::{HeapRecord, RecordBody};
use std::collections::{BTreeMap, HashMap};
use std::io::{BufWriter, Read, Write};
use std::path::Path;

/// Exit status for a malformed file.
const MALFORMED: i32 = 2;

/// Prints `file` to standard output (errors to standard error); returns the exit code.
pub fn print(file: &Path, verbose: bool) -> i32 {
    let mut out = BufWriter::new(std::io::stdout().lock());
    print_to(file, verbose, &mut out, &mut std::io::stderr().lock())
}

/// Prints `file` to `out` and errors to `err`; returns the exit code.
pub fn print_to(file: &Path, verbose: bool, out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    let result = match profile_file::open(file) {
        Ok(Contents::Binary(input)) => print_binary(input, out),
        Ok(Contents::Ascii(text)) => check_ascii(file, &text, verbose, out),
        Err(OpenError::Io(error)) => Err(Failure::Io(error)),
        Err(OpenError::Malformed(error)) => Err(Failure::Malformed(error)),
    };
    match result {
        Ok(()) => 0,
        Err(Failure::Io(error)) => {
            let _ = writeln!(err, "hprof-rs: {}: {error}", file.display());
            1
        }
        Err(Failure::Malformed(error)) => {
            let _ = writeln!(
                err,
                "hprof-rs: {}: malformed at byte offset {}: {}",
                file.display(),
                error.offset,
                error.message
            );
            MALFORMED
        }
    }
}

enum Failure {
    Io(std::io::Error),
    Malformed(ParseError),
}

impl From<std::io::Error> for Failure {
    fn from(error: std::io::Error) -> Self {
        Failure::Io(error)
    }
}

impl From<ParseError> for Failure {
    fn from(error: ParseError) -> Self {
        Failure::Malformed(error)
    }
}

/// One line per record (heap sub-records indented below their record),
/// prefixed by the record's byte offset; names are resolved where known.
fn print_binary(input: impl Read, out: &mut dyn Write) -> Result<(), Failure> {
    let reader = RecordReader::new(input)?;
    let header = *reader.header();
    writeln!(
        out,
        "{} (identifier size {}, started at {} ms since 1970)",
        header.version.header_text(),
        header.id_size,
        header.timestamp_ms
    )?;
    let mut names: HashMap<u64, String> = HashMap::new();
    let mut count = 0u64;
    for item in reader {
        let (offset, record) = item?;
        count += 1;
        if let RecordBody::Utf8 { id, text } = &record.body {
            names.insert(*id, String::from_utf8_lossy(text).into_owned());
        }
        writeln!(
            out,
            "@{offset} t={}us {}",
            record.time,
            describe(&record.body, &names)
        )?;
        if let RecordBody::HeapDump(subs) | RecordBody::HeapDumpSegment(subs) = &record.body {
            for sub in subs {
                writeln!(out, "    {}", describe_heap(sub))?;
            }
        }
    }
    writeln!(out, "{count} records")?;
    out.flush()?;
    Ok(())
}

fn name(names: &HashMap<u64, String>, id: u64) -> String {
    match names.get(&id) {
        // Debug formatting quotes the text and escapes newlines and control characters.
        Some(text) => format!("{id:#x} {text:?}"),
        None if id == 0 => "0".to_owned(),
        None => format!("{id:#x} (no UTF8 record)"),
    }
}

fn describe(body: &RecordBody, names: &HashMap<u64, String>) -> String {
    match body {
        RecordBody::Utf8 { id, text } => {
            format!("UTF8 {id:#x} {:?}", String::from_utf8_lossy(text))
        }
        RecordBody::LoadClass {
            class_serial,
            class_id,
            trace_serial,
            name_id,
        } => format!(
            "LOAD CLASS serial={class_serial} class={class_id:#x} trace={trace_serial} name={}",
            name(names, *name_id)
        ),
        RecordBody::UnloadClass { class_serial } => format!("UNLOAD CLASS serial={class_serial}"),
        RecordBody::Frame {
            frame_id,
            method_name_id,
            signature_id,
            source_file_id,
            class_serial,
            line,
        } => format!(
            "FRAME {frame_id:#x} method={} signature={} source={} class={class_serial} line={line}",
            name(names, *method_name_id),
            name(names, *signature_id),
            name(names, *source_file_id)
        ),
        RecordBody::Trace {
            trace_serial,
            thread_serial,
            frame_ids,
        } => {
            let frames: Vec<String> = frame_ids.iter().map(|f| format!("{f:#x}")).collect();
            format!(
                "TRACE {trace_serial} thread={thread_serial} frames=[{}]",
                frames.join(", ")
            )
        }
        RecordBody::AllocSites {
            flags,
            cutoff,
            total_live_bytes,
            total_live_instances,
            total_allocated_bytes,
            total_allocated_instances,
            sites,
        } => {
            let mut text = format!(
                "ALLOC SITES flags={flags:#x} cutoff={cutoff:#010x} live={total_live_bytes} bytes/{total_live_instances} objects allocated={total_allocated_bytes} bytes/{total_allocated_instances} objects, {} sites",
                sites.len()
            );
            for site in sites {
                text.push_str(&format!(
                    "\n    site array={} class={} trace={} live={}/{} allocated={}/{}",
                    site.array_type,
                    site.class_serial,
                    site.trace_serial,
                    site.live_bytes,
                    site.live_instances,
                    site.allocated_bytes,
                    site.allocated_instances
                ));
            }
            text
        }
        RecordBody::HeapSummary {
            live_bytes,
            live_instances,
            allocated_bytes,
            allocated_instances,
        } => format!(
            "HEAP SUMMARY live={live_bytes} bytes/{live_instances} objects allocated={allocated_bytes} bytes/{allocated_instances} objects"
        ),
        RecordBody::StartThread {
            thread_serial,
            thread_id,
            trace_serial,
            name_id,
            group_name_id,
            parent_group_name_id,
        } => format!(
            "START THREAD serial={thread_serial} object={thread_id:#x} trace={trace_serial} name={} group={} parent group={}",
            name(names, *name_id),
            name(names, *group_name_id),
            name(names, *parent_group_name_id)
        ),
        RecordBody::EndThread { thread_serial } => format!("END THREAD serial={thread_serial}"),
        RecordBody::HeapDump(subs) => format!("HEAP DUMP ({} sub-records)", subs.len()),
        RecordBody::HeapDumpSegment(subs) => {
            format!("HEAP DUMP SEGMENT ({} sub-records)", subs.len())
        }
        RecordBody::HeapDumpEnd => "HEAP DUMP END".to_owned(),
        RecordBody::CpuSamples { total, samples } => {
            let rows: Vec<String> = samples
                .iter()
                .map(|s| format!("{}x{}", s.trace_serial, s.count))
                .collect();
            format!("CPU SAMPLES total={total} rows=[{}]", rows.join(", "))
        }
        RecordBody::ControlSettings { flags, depth } => {
            format!("CONTROL SETTINGS flags={flags:#x} depth={depth}")
        }
        RecordBody::Unknown { tag, body } => {
            format!("UNKNOWN tag={tag:#04x} ({} bytes)", body.len())
        }
    }
}

fn describe_heap(record: &HeapRecord) -> String {
    format!("{record:?}")
}

/// Parses the whole text of the ASCII `file` and prints what it holds.
fn check_ascii(
    file: &Path,
    text: &[u8],
    verbose: bool,
    out: &mut dyn Write,
) -> Result<(), Failure> {
    let sections = ascii::reader::parse_file(text)?;
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for section in &sections {
        *counts.entry(section_kind(section)).or_default() += 1;
        if verbose {
            writeln!(out, "{section:?}")?;
        }
    }
    let summary: Vec<String> = counts
        .iter()
        .map(|(kind, n)| format!("{n} {kind}"))
        .collect();
    writeln!(
        out,
        "{}: valid ASCII profile, {} sections: {}",
        file.display(),
        sections.len(),
        summary.join(", ")
    )?;
    out.flush()?;
    Ok(())
}

fn section_kind(section: &Section) -> &'static str {
    match section {
        Section::Header { .. } => "HEADER",
        Section::ThreadStart { .. } => "THREAD START",
        Section::ThreadEnd { .. } => "THREAD END",
        Section::Trace(_) => "TRACE",
        Section::Sites(_) => "SITES",
        Section::SitesTotals(_) => "SITES TOTALS",
        Section::Cpu(_) => "CPU",
        Section::WallStates(_) => "WALL STATES",
        Section::OldProf(_) => "OLD PROF",
        Section::MonitorWait { .. } => "WAIT",
        Section::MonitorWaited { .. } => "WAITED",
        Section::MonitorDump { .. } => "MONITOR DUMP",
        Section::MonitorTime { .. } => "MONITOR TIME",
        Section::MonitorHolders(_) => "MONITOR HOLDERS",
        Section::HeapDump(_) => "HEAP DUMP",
        Section::LockTime { .. } => "LOCK TIME",
    }
}
