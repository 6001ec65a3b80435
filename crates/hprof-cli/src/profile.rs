//! The profile model shared by `collapse`, `flame`, `top` and `diff`: either
//! file format (ASCII `java.hprof.txt` or binary `java.hprof`) turned into
//! weighted stacks (CPU samples, CPU time, allocation sites) and, for a heap
//! dump, a class histogram.
//!
//! Binary files are read as a stream: a heap dump is walked one sub-record at
//! a time and only counted per class, so a dump of any size is read in
//! bounded memory.

use super::apportion::apportion;
use super::heap_histogram::{ClassAddresses, HeapCounts};
use super::heap_scan::{self, PRIMITIVE_KEY};
use super::profile_file::{self, Contents, OpenError};
use hprof_format::ParseError;
use hprof_format::ascii::{self, CpuTitle, LineInfo, MonitorTimeRow, Section, TraceFrame};
use hprof_format::binary::object_layout::ObjectLayout;
use hprof_format::binary::reader::{RecordStream, parse_body};
use hprof_format::binary::{BasicType, FileHeader, RecordBody};
use hprof_format::names::signature_to_name;
use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::path::Path;

/// Which cost a command looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum What {
    /// CPU SAMPLES: sample counts.
    Cpu,
    /// CPU TIME (ms): self time in milliseconds (cpu=times, ASCII files).
    Time,
    /// SITES: allocated bytes.
    Alloc,
    /// SITES: allocated objects.
    AllocObjects,
    /// SITES: live bytes.
    Live,
    /// SITES: live objects.
    LiveObjects,
}

impl What {
    /// The unit of the counts, for tables and titles.
    pub fn unit(self) -> &'static str {
        match self {
            What::Cpu => "samples",
            What::Time => "ms",
            What::Alloc | What::Live => "bytes",
            What::AllocObjects | What::LiveObjects => "objects",
        }
    }

    /// The name as given to `--what`.
    pub fn name(self) -> &'static str {
        match self {
            What::Cpu => "cpu",
            What::Time => "time",
            What::Alloc => "alloc",
            What::AllocObjects => "alloc-objects",
            What::Live => "live",
            What::LiveObjects => "live-objects",
        }
    }

    fn is_sites(self) -> bool {
        !matches!(self, What::Cpu | What::Time)
    }
}

/// One stack with its cost.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Weighted {
    /// `class.method` names, innermost first (the order of the files).
    pub frames: Vec<String>,
    /// For allocation sites: the allocated class, drawn as the leaf frame.
    pub class: Option<String>,
    pub value: u64,
    /// The TRACE serial the row cites (keys [`Profile::traces`]).
    pub trace: u32,
    /// CPU TIME: the row's calls (its count column); 0 for other kinds.
    pub calls: u64,
}

/// One row of the SITES table, all four counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Site {
    pub frames: Vec<String>,
    /// The TRACE serial the row cites.
    pub trace: u32,
    pub class: String,
    pub live_bytes: u64,
    pub live_objects: u64,
    pub allocated_bytes: u64,
    pub allocated_objects: u64,
}

pub use super::heap_histogram::ClassCount;

/// Where a frame's code is, when the file says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SourceLine {
    pub file: Option<String>,
    pub line: Option<u32>,
}

/// What a TRACE adds to its frames' names: the thread (with `thread=y`)
/// and each frame's source file and line, innermost first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TraceInfo {
    pub thread: Option<u32>,
    pub sources: Vec<SourceLine>,
}

/// One row of MONITOR TIME or LOCK TIME.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Contended {
    /// The waiting threads' stack, innermost first.
    pub frames: Vec<String>,
    pub trace: u32,
    /// The monitor's or lock's class.
    pub monitor: String,
    /// How many times threads waited.
    pub count: u64,
    /// The row's share of the table's total, in whole milliseconds (the
    /// file gives only a percentage; see [`apportion`]).
    pub delay_ms: u64,
}

/// A MONITOR TIME or LOCK TIME table and its total.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Contention {
    pub rows: Vec<Contended>,
    pub total_ms: u64,
}

/// Everything the tool's commands read from one profile.
#[derive(Debug, Clone, Default)]
pub struct Profile {
    /// `JAVA PROFILE 1.0.x, created <date>` or the binary header, in words.
    pub header: String,
    /// The last CPU SAMPLES table: stacks by sample count, and its total.
    pub samples: Option<(Vec<Weighted>, u64)>,
    /// The last CPU TIME table: stacks by self time (ms), and its total.
    pub times: Option<(Vec<Weighted>, u64)>,
    /// The last SITES table.
    pub sites: Option<Vec<Site>>,
    /// Per-class instances and shallow bytes over every heap dump in the
    /// file.
    pub histogram: Option<HashMap<String, ClassCount>>,
    /// For a binary heap dump, the object layout its shallow sizes were
    /// counted with, in words (an ASCII dump gives each object's size).
    pub heap_layout: Option<String>,
    /// Stack depth from a binary file's CONTROL SETTINGS record.
    pub depth: Option<u16>,
    /// Thread and source lines of every TRACE, by serial.
    pub traces: HashMap<u32, TraceInfo>,
    /// Thread names by thread serial (THREAD START).
    pub threads: BTreeMap<u32, String>,
    /// The last MONITOR TIME table (ASCII files, monitor=y).
    pub monitor_time: Option<Contention>,
    /// The last LOCK TIME table (ASCII files, monitor=y).
    pub lock_time: Option<Contention>,
}

/// Why a profile could not be read: one line for the user.
#[derive(Debug)]
pub struct ReadError(pub String);

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl Profile {
    /// The agent options the file shows (neither format records the option
    /// string itself), e.g. `cpu=samples, heap=sites, depth=4`.
    pub fn options(&self) -> String {
        let shown = [
            (self.samples.is_some(), "cpu=samples"),
            (self.times.is_some(), "cpu=times"),
            (self.sites.is_some(), "heap=sites"),
            (self.histogram.is_some(), "heap=dump"),
        ];
        let mut options: Vec<String> = shown
            .iter()
            .filter(|(present, _)| *present)
            .map(|(_, name)| (*name).to_owned())
            .collect();
        if let Some(depth) = self.depth {
            options.push(format!("depth={depth}"));
        }
        options.join(", ")
    }

    /// The kinds of cost this profile holds, in the order `--what` defaults to.
    pub fn available(&self) -> Vec<What> {
        let mut kinds = Vec::new();
        if self.samples.is_some() {
            kinds.push(What::Cpu);
        }
        if self.times.is_some() {
            kinds.push(What::Time);
        }
        if self.sites.is_some() {
            kinds.extend([
                What::Alloc,
                What::AllocObjects,
                What::Live,
                What::LiveObjects,
            ]);
        }
        kinds
    }

    /// `what` if given and present, else the first kind present.
    pub fn choose(&self, what: Option<What>) -> Result<What, ReadError> {
        let kinds = self.available();
        match what {
            Some(w) if kinds.contains(&w) => Ok(w),
            Some(w) => Err(ReadError(format!(
                "the profile has no {} data ({})",
                w.name(),
                describe_kinds(&kinds)
            ))),
            None => kinds.first().copied().ok_or_else(|| {
                ReadError("the profile has no CPU SAMPLES, CPU TIME or SITES table".into())
            }),
        }
    }

    /// The weighted stacks of one kind (empty when the kind is absent).
    pub fn stacks(&self, what: What) -> Vec<Weighted> {
        match what {
            What::Cpu => self.samples.as_ref().map(|s| s.0.clone()),
            What::Time => self.times.as_ref().map(|s| s.0.clone()),
            _ => self.sites.as_ref().map(|sites| {
                sites
                    .iter()
                    .map(|site| Weighted {
                        frames: site.frames.clone(),
                        class: Some(site.class.clone()),
                        value: site_value(site, what),
                        trace: site.trace,
                        calls: 0,
                    })
                    .collect()
            }),
        }
        .unwrap_or_default()
    }

    /// The total of one kind: the table's own total for CPU, the sum of the
    /// rows for sites (rows below the cutoff are not in the file).
    pub fn total(&self, what: What) -> u64 {
        match what {
            What::Cpu => self.samples.as_ref().map_or(0, |s| s.1),
            What::Time => self.times.as_ref().map_or(0, |s| s.1),
            _ if what.is_sites() => self
                .stacks(what)
                .iter()
                .fold(0, |sum: u64, w| sum.saturating_add(w.value)),
            _ => 0,
        }
    }
}

/// What a profile holds, in words: `it holds: cpu, ...`.
pub fn describe_kinds(kinds: &[What]) -> String {
    if kinds.is_empty() {
        return "it holds no CPU or SITES table".into();
    }
    let names: Vec<&str> = kinds.iter().map(|k| k.name()).collect();
    format!("it holds: {}", names.join(", "))
}

fn site_value(site: &Site, what: What) -> u64 {
    match what {
        What::Alloc => site.allocated_bytes,
        What::AllocObjects => site.allocated_objects,
        What::Live => site.live_bytes,
        What::LiveObjects => site.live_objects,
        What::Cpu | What::Time => 0,
    }
}

/// Reads a profile file of either format; a file that is not a profile is
/// refused from its first bytes.
pub fn read_file(path: &Path) -> Result<Profile, ReadError> {
    let located = |e: ParseError| {
        ReadError(format!(
            "{}: not a readable profile: {} (byte offset {})",
            path.display(),
            e.message,
            e.offset
        ))
    };
    match profile_file::open(path) {
        Ok(Contents::Binary(input)) => read_binary(input).map_err(located),
        Ok(Contents::Ascii(text)) => {
            let sections = ascii::reader::parse_file(&text).map_err(located)?;
            // The text is no longer needed: freed before the stacks are named.
            drop(text);
            Ok(from_sections(sections))
        }
        Err(OpenError::Malformed(e)) => Err(located(e)),
        Err(OpenError::Io(e)) => Err(ReadError(format!("{}: {e}", path.display()))),
    }
}

/// The source file and line of an ASCII frame line, when known.
fn source_line(frame: &TraceFrame) -> SourceLine {
    let known = !frame.source_file.is_empty() && !frame.source_file.starts_with('<');
    SourceLine {
        file: known.then(|| frame.source_file.clone()),
        line: match frame.line {
            LineInfo::Line(n) => Some(n),
            _ => None,
        },
    }
}

/// A MONITOR TIME / LOCK TIME table with each row's milliseconds.
fn contention(
    rows: &[MonitorTimeRow],
    total_ms: u64,
    frames_of: impl Fn(u32) -> Vec<String>,
) -> Contention {
    let shares: Vec<f64> = rows.iter().map(|r| r.self_percent).collect();
    let counts: Vec<u64> = rows.iter().map(|r| r.count).collect();
    let delays = apportion(total_ms, &shares, &counts);
    Contention {
        rows: rows
            .iter()
            .zip(delays)
            .map(|(row, delay_ms)| Contended {
                frames: frames_of(row.trace_serial),
                trace: row.trace_serial,
                monitor: stable_class_name(&row.monitor),
                count: row.count,
                delay_ms,
            })
            .collect(),
        total_ms,
    }
}

/// `class.method` of an ASCII frame line.
fn frame_name(frame: &TraceFrame) -> String {
    format!(
        "{}.{}",
        stable_class_name(&frame.class_name),
        frame.method_name
    )
}

/// A class name without the address the JVM puts in the names of hidden
/// classes (`Main$$Lambda.0x00007f6aa0003220`, `Main$$Lambda$14/0x0000000800c03000`,
/// `LambdaForm$DMH.0x00007f953c001000`): the address changes from run to
/// run, so without this the same lambda would never match between two runs.
pub fn stable_class_name(name: &str) -> String {
    let mut stable = String::with_capacity(name.len());
    let mut rest = name;
    while let Some(at) = rest.find("0x") {
        let before = &rest[..at];
        let after = &rest[at + 2..];
        let digits = after.bytes().take_while(u8::is_ascii_hexdigit).count();
        if digits >= 8 && (before.ends_with('.') || before.ends_with('/')) {
            stable.push_str(&before[..before.len() - 1]);
        } else {
            stable.push_str(before);
            stable.push_str(&rest[at..at + 2 + digits]);
        }
        rest = &after[digits..];
    }
    stable.push_str(rest);
    stable
}

/// Reads an ASCII profile held in memory.
pub fn read_ascii(text: &[u8]) -> Result<Profile, ParseError> {
    Ok(from_sections(ascii::reader::parse_file(text)?))
}

/// The profile of an ASCII file's sections.
fn from_sections(sections: Vec<Section>) -> Profile {
    let mut traces: HashMap<u32, Vec<String>> = HashMap::new();
    let mut profile = Profile::default();
    for section in &sections {
        match section {
            Section::Header {
                version, created, ..
            } => profile.header = format!("{version}, created {created}"),
            Section::Trace(trace) => {
                traces.insert(trace.serial, trace.frames.iter().map(frame_name).collect());
                let info = TraceInfo {
                    thread: trace.thread_serial,
                    sources: trace.frames.iter().map(source_line).collect(),
                };
                profile.traces.insert(trace.serial, info);
            }
            Section::ThreadStart {
                thread_serial,
                name,
                ..
            } => {
                profile.threads.insert(*thread_serial, name.clone());
            }
            _ => {}
        }
    }
    let frames_of = |serial: u32| traces.get(&serial).cloned().unwrap_or_default();
    for section in sections {
        match section {
            Section::Cpu(cpu) => {
                let time = cpu.title == CpuTitle::TimeMs;
                let counts: Vec<u64> = cpu.rows.iter().map(|row| row.count).collect();
                // CPU TIME rows give calls in the count column and the self
                // time only as a share of the total (2 decimals): the total
                // is shared out by those shares, so the rows sum to it.
                let values = if time {
                    let shares: Vec<f64> = cpu.rows.iter().map(|r| r.self_percent).collect();
                    apportion(cpu.total, &shares, &counts)
                } else {
                    counts.clone()
                };
                let stacks = cpu
                    .rows
                    .iter()
                    .zip(values)
                    .map(|(row, value)| Weighted {
                        frames: frames_of(row.trace_serial),
                        class: None,
                        value,
                        trace: row.trace_serial,
                        calls: if time { row.count } else { 0 },
                    })
                    .collect();
                if time {
                    profile.times = Some((stacks, cpu.total));
                } else {
                    profile.samples = Some((stacks, cpu.total));
                }
            }
            Section::Sites(sites) => {
                profile.sites = Some(
                    sites
                        .rows
                        .iter()
                        .map(|row| Site {
                            frames: frames_of(row.trace_serial),
                            trace: row.trace_serial,
                            class: stable_class_name(&row.class_name),
                            live_bytes: row.live_bytes,
                            live_objects: row.live_objects,
                            allocated_bytes: row.allocated_bytes,
                            allocated_objects: row.allocated_objects,
                        })
                        .collect(),
                )
            }
            Section::MonitorTime { total_ms, rows, .. } => {
                profile.monitor_time = Some(contention(&rows, total_ms, frames_of));
            }
            Section::LockTime { total_ms, rows, .. } => {
                profile.lock_time = Some(contention(&rows, total_ms, frames_of));
            }
            Section::HeapDump(dump) => {
                let histogram = profile.histogram.get_or_insert_with(HashMap::new);
                for entry in &dump.entries {
                    let Some((class, size)) = entry.class_and_size() else {
                        continue;
                    };
                    // A class's name is copied once, when it is first met.
                    match histogram.get_mut(class) {
                        Some(count) => count.add_object(size),
                        None => histogram
                            .entry(class.to_owned())
                            .or_default()
                            .add_object(size),
                    }
                }
            }
            _ => {}
        }
    }
    profile
}

/// A LOAD CLASS name as a dotted Java name: the agent writes dotted names,
/// the JDK's own dumps `java/lang/String` and `[I`.
fn loaded_class_name(raw: &str) -> String {
    if raw.starts_with('[') {
        signature_to_name(raw)
    } else {
        raw.replace('/', ".")
    }
}

/// The Java name of a primitive array's element type, e.g. `int[]`.
fn primitive_array_name(type_byte: u8) -> String {
    match BasicType::from_u8(type_byte) {
        Some(BasicType::Boolean) => "boolean[]",
        Some(BasicType::Char) => "char[]",
        Some(BasicType::Float) => "float[]",
        Some(BasicType::Double) => "double[]",
        Some(BasicType::Byte) => "byte[]",
        Some(BasicType::Short) => "short[]",
        Some(BasicType::Int) => "int[]",
        Some(BasicType::Long) => "long[]",
        Some(BasicType::Object) | None => "unknown[]",
    }
    .to_owned()
}

/// What the binary reader collects before it can name things: names are
/// resolved at the end, since records may come in any order.
#[derive(Default)]
struct BinaryTables {
    utf8: HashMap<u64, String>,
    /// class serial -> name id
    class_names: HashMap<u32, u64>,
    /// class object id -> name id
    class_ids: HashMap<u64, u64>,
    /// frame id -> (method name id, class serial, source file id, line)
    frames: HashMap<u64, (u64, u32, u64, i32)>,
    /// trace serial -> (thread serial, frame ids innermost first)
    traces: HashMap<u32, (u32, Vec<u64>)>,
    /// thread serial -> name id
    threads: HashMap<u32, u64>,
    samples: Option<(Vec<(u32, u64)>, u64)>,
    sites: Option<Vec<hprof_format::binary::AllocSite>>,
    /// The objects of the heap dumps, if any, per class.
    heap: Option<HeapCounts>,
    /// Where the LOAD CLASS records' classes are.
    class_addresses: ClassAddresses,
    /// The agent's note of its JVM's object layout.
    layout_note: Option<ObjectLayout>,
    depth: Option<u16>,
}

/// Reads a binary profile as a stream, in bounded memory.
pub fn read_binary(input: impl Read) -> Result<Profile, ParseError> {
    let mut stream = RecordStream::new(input)?;
    let header = *stream.header();
    let mut tables = BinaryTables::default();
    let mut body = Vec::new();
    while let Some(record) = stream.next_header()? {
        if record.is_heap_dump() {
            let length = u64::from(record.length);
            let at = record.body_offset();
            count_heap_dump(stream.body(), length, &header, at, &mut tables)?;
        } else {
            stream.read_body(&mut body)?;
            collect_record(
                parse_body(record.tag, &body, header.id_size, record.offset)?,
                &mut tables,
            );
        }
    }
    Ok(resolve(&header, tables))
}

fn collect_record(body: RecordBody, tables: &mut BinaryTables) {
    match body {
        RecordBody::Utf8 { id, text } => {
            if let Some(layout) = ObjectLayout::from_note(&text) {
                tables.layout_note = Some(layout);
            }
            tables
                .utf8
                .insert(id, String::from_utf8_lossy(&text).into_owned());
        }
        RecordBody::LoadClass {
            class_serial,
            class_id,
            name_id,
            ..
        } => {
            tables.class_names.insert(class_serial, name_id);
            tables.class_ids.insert(class_id, name_id);
            tables.class_addresses.note(class_id);
        }
        RecordBody::Frame {
            frame_id,
            method_name_id,
            class_serial,
            source_file_id,
            line,
            ..
        } => {
            let frame = (method_name_id, class_serial, source_file_id, line);
            tables.frames.insert(frame_id, frame);
        }
        RecordBody::Trace {
            trace_serial,
            thread_serial,
            frame_ids,
        } => {
            tables
                .traces
                .insert(trace_serial, (thread_serial, frame_ids));
        }
        RecordBody::StartThread {
            thread_serial,
            name_id,
            ..
        } => {
            tables.threads.insert(thread_serial, name_id);
        }
        RecordBody::CpuSamples { total, samples } => {
            let rows = samples
                .iter()
                .map(|s| (s.trace_serial, u64::from(s.count)))
                .collect();
            tables.samples = Some((rows, u64::from(total)));
        }
        RecordBody::AllocSites { sites, .. } => tables.sites = Some(sites),
        RecordBody::ControlSettings { depth, .. } => tables.depth = Some(depth),
        _ => {}
    }
}

/// Counts the objects of one heap dump body per class.
fn count_heap_dump(
    input: &mut impl Read,
    length: u64,
    header: &FileHeader,
    body_offset: u64,
    tables: &mut BinaryTables,
) -> Result<(), ParseError> {
    let (classes, note) = (tables.class_addresses, tables.layout_note);
    let heap = tables
        .heap
        .get_or_insert_with(|| HeapCounts::new(note, classes, header.id_size));
    heap_scan::scan(input, length, header.id_size, body_offset, |counted| {
        heap.count(counted)
    })
}

/// Names every frame, trace and class once all records are read.
fn resolve(header: &FileHeader, mut tables: BinaryTables) -> Profile {
    let heap = tables.heap.take().map(|heap| heap.finish(header.id_size));
    let text = |id: &u64| tables.utf8.get(id).map(String::as_str).unwrap_or("?");
    let class_of_serial = |serial: u32| {
        tables.class_names.get(&serial).map_or_else(
            || "Unknown_class".to_owned(),
            |n| stable_class_name(&loaded_class_name(text(n))),
        )
    };
    let frames_of = |serial: u32| -> Vec<String> {
        tables
            .traces
            .get(&serial)
            .map_or_else(Vec::new, |(_, ids)| {
                ids.iter()
                    .map(|frame| match tables.frames.get(frame) {
                        Some((method, class, ..)) => {
                            format!("{}.{}", class_of_serial(*class), text(method))
                        }
                        None => "<unknown frame>".to_owned(),
                    })
                    .collect()
            })
    };
    let samples = tables.samples.as_ref().map(|(rows, total)| {
        let stacks = rows
            .iter()
            .map(|&(trace, count)| Weighted {
                frames: frames_of(trace),
                class: None,
                value: count,
                trace,
                calls: 0,
            })
            .collect();
        (stacks, *total)
    });
    let sites = tables.sites.as_ref().map(|sites| {
        sites
            .iter()
            .map(|s| Site {
                frames: frames_of(s.trace_serial),
                trace: s.trace_serial,
                class: if s.array_type > 2 {
                    primitive_array_name(s.array_type)
                } else {
                    class_of_serial(s.class_serial)
                },
                live_bytes: u64::from(s.live_bytes),
                live_objects: u64::from(s.live_instances),
                allocated_bytes: u64::from(s.allocated_bytes),
                allocated_objects: u64::from(s.allocated_instances),
            })
            .collect()
    });
    let heap_layout = heap.as_ref().map(|(_, said)| said.clone());
    let histogram = heap.as_ref().map(|(counts, _)| {
        let mut named: HashMap<String, ClassCount> = HashMap::new();
        for (&key, count) in counts {
            let name = if key & PRIMITIVE_KEY != 0 {
                primitive_array_name((key & 0xff) as u8)
            } else {
                tables
                    .class_ids
                    .get(&key)
                    .map_or_else(|| format!("class@{key:#x}"), |n| loaded_class_name(text(n)))
            };
            let merged = named.entry(name).or_default();
            merged.merge(count);
        }
        named
    });
    let source_of = |frame: &u64| match tables.frames.get(frame) {
        Some(&(_, _, file, line)) => SourceLine {
            file: (file != 0).then(|| text(&file).to_owned()),
            // HPROF's negative codes: unknown, compiled, native.
            line: u32::try_from(line).ok().filter(|&n| n > 0),
        },
        None => SourceLine::default(),
    };
    let traces = tables
        .traces
        .iter()
        .map(|(&serial, (thread, ids))| {
            let info = TraceInfo {
                // 0: the trace is not tied to a thread (thread=n).
                thread: (*thread != 0).then_some(*thread),
                sources: ids.iter().map(source_of).collect(),
            };
            (serial, info)
        })
        .collect();
    let threads = tables
        .threads
        .iter()
        .map(|(&serial, name)| (serial, text(name).to_owned()))
        .collect();
    Profile {
        header: format!(
            "{}, started at {} ms since 1970",
            header.version.header_text(),
            header.timestamp_ms
        ),
        samples,
        times: None,
        sites,
        histogram,
        heap_layout,
        depth: tables.depth,
        traces,
        threads,
        monitor_time: None,
        lock_time: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ASCII: &str = "JAVA PROFILE 1.0.1, created Thu Nov  2 17:11:21 2017\n\
\n\
--------\n\
\n\
TRACE 300001:\n\
\tHot.leaf(Hot.java:5)\n\
\tHot.main(Hot.java:9)\n\
TRACE 300002:\n\
\tHot.other(Hot.java:7)\n\
\tHot.main(Hot.java:10)\n\
CPU SAMPLES BEGIN (total = 10) Thu Nov  2 17:11:22 2017\n\
rank   self  accum   count trace method\n\
   1 70.00% 70.00%       7 300001 Hot.leaf\n\
   2 30.00% 100.00%       3 300002 Hot.other\n\
CPU SAMPLES END\n";

    #[test]
    fn ascii_cpu_samples_become_stacks_with_their_counts() {
        let profile = read_ascii(ASCII.as_bytes()).unwrap();
        assert_eq!(profile.choose(None).unwrap(), What::Cpu);
        assert_eq!(profile.total(What::Cpu), 10);
        let stacks = profile.stacks(What::Cpu);
        assert_eq!(stacks.len(), 2);
        assert_eq!(stacks[0].frames, ["Hot.leaf", "Hot.main"]);
        assert_eq!(stacks[0].value, 7);
        assert!(profile.choose(Some(What::Alloc)).is_err());
    }

    #[test]
    fn binary_class_names_are_dotted() {
        assert_eq!(loaded_class_name("java/lang/String"), "java.lang.String");
        assert_eq!(loaded_class_name("[I"), "int[]");
        assert_eq!(loaded_class_name("Foo$Bar"), "Foo$Bar");
        assert_eq!(primitive_array_name(10), "int[]");
    }

    #[test]
    fn hidden_class_addresses_are_dropped() {
        assert_eq!(
            stable_class_name("Main$$Lambda.0x00007f6aa0003220"),
            "Main$$Lambda"
        );
        assert_eq!(
            stable_class_name("Main$$Lambda$14/0x0000000800c03000"),
            "Main$$Lambda$14"
        );
        assert_eq!(
            stable_class_name("java.lang.invoke.LambdaForm$DMH.0x00007f953c001000.x"),
            "java.lang.invoke.LambdaForm$DMH.x"
        );
        assert_eq!(stable_class_name("A.0x12"), "A.0x12");
        assert_eq!(stable_class_name("int[]"), "int[]");
    }
}
