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
use hprof_format::settings::{self, RunSettings};
use hprof_format::wall_states::{self, WallStateRow};
use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::path::Path;

/// The root frame put under a stack the agent cut at its depth, so that
/// cut stacks stand together instead of each making a root of its own.
pub const TRUNCATED: &str = "[truncated]";

/// HPROF's default `interval=` in milliseconds, for a file that does not say.
pub const DEFAULT_INTERVAL_MS: u64 = 10;

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

    /// A cost of the SITES table.
    pub fn is_sites(self) -> bool {
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

/// Drawn for what a table counts in its total but lists in no row (rows
/// below `cutoff`).
pub const BELOW_CUTOFF: &str = "[rows below the cutoff]";

/// The totals a file states for its SITES table, over every site, listed
/// or not: hprof-rs's SITES TOTALS after an ASCII SITES block, or the
/// totals of a binary ALLOC SITES record.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StatedSiteTotals {
    pub live_bytes: u64,
    pub live_objects: u64,
    pub allocated_bytes: u64,
    pub allocated_objects: u64,
    /// How many rows the cutoff left out, when the file says (ASCII).
    pub rows_cut: Option<u64>,
}

/// What the cutoff left out of a SITES table: the stated totals less the
/// listed rows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct BelowCutoff {
    /// How many rows; null when the file does not say (binary files).
    pub rows: Option<u64>,
    pub live_bytes: u64,
    pub live_objects: u64,
    pub allocated_bytes: u64,
    pub allocated_objects: u64,
}

impl BelowCutoff {
    /// The left-out count of one kind of SITES cost.
    pub fn value(&self, what: What) -> u64 {
        match what {
            What::Alloc => self.allocated_bytes,
            What::AllocObjects => self.allocated_objects,
            What::Live => self.live_bytes,
            What::LiveObjects => self.live_objects,
            What::Cpu | What::Time => 0,
        }
    }

    /// `12 rows below the cutoff, 4096 bytes` (`rows below the cutoff:
    /// 4096 bytes` when the file does not count them).
    pub fn describe(&self, what: What) -> String {
        let (value, unit) = (self.value(what), what.unit());
        match self.rows {
            Some(1) => format!("1 row below the cutoff, {value} {unit}"),
            Some(rows) => format!("{rows} rows below the cutoff, {value} {unit}"),
            None => format!("rows below the cutoff: {value} {unit}"),
        }
    }
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
    /// The totals the file states for that table (None in ASCII files
    /// written before SITES TOTALS, and by HPROF).
    pub sites_totals: Option<StatedSiteTotals>,
    /// Per-class instances and shallow bytes over every heap dump in the
    /// file.
    pub histogram: Option<HashMap<String, ClassCount>>,
    /// For a binary heap dump, the object layout its shallow sizes were
    /// counted with, in words (an ASCII dump gives each object's size).
    pub heap_layout: Option<String>,
    /// The depth and sampling interval the file says it was taken with:
    /// hprof-rs's settings line, else (binary) the CONTROL SETTINGS depth.
    pub settings: RunSettings,
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
        if let Some(depth) = self.settings.depth {
            options.push(format!("depth={depth}"));
        }
        if let (Some(interval), true) = (self.settings.interval_ms, self.samples.is_some()) {
            options.push(format!("interval={interval}"));
        }
        options.join(", ")
    }

    /// The CPU sampling interval in milliseconds: the file's, else HPROF's
    /// default.
    pub fn interval_ms(&self) -> u64 {
        self.settings
            .interval_ms
            .filter(|&ms| ms > 0)
            .map_or(DEFAULT_INTERVAL_MS, u64::from)
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

    /// The weighted stacks of one kind (empty when the kind is absent). For
    /// SITES, what the cutoff left out (when the file states its totals) is
    /// one more stack, [`BELOW_CUTOFF`], so that the stacks sum to the total.
    pub fn stacks(&self, what: What) -> Vec<Weighted> {
        match what {
            What::Cpu => self.samples.as_ref().map(|s| s.0.clone()),
            What::Time => self.times.as_ref().map(|s| s.0.clone()),
            _ => self.sites.as_ref().map(|sites| {
                let mut stacks: Vec<Weighted> = sites
                    .iter()
                    .map(|site| Weighted {
                        frames: site.frames.clone(),
                        class: Some(site.class.clone()),
                        value: site_value(site, what),
                        trace: site.trace,
                        calls: 0,
                    })
                    .collect();
                let cut = self.sites_below_cutoff().map_or(0, |b| b.value(what));
                if cut > 0 {
                    stacks.push(Weighted {
                        frames: vec![BELOW_CUTOFF.to_owned()],
                        class: None,
                        value: cut,
                        trace: 0,
                        calls: 0,
                    });
                }
                stacks
            }),
        }
        .unwrap_or_default()
    }

    /// What the cutoff left out of the SITES table, when the file states
    /// its totals and they exceed the listed rows; None otherwise (also for
    /// files without stated totals, whose rows are all that is known).
    pub fn sites_below_cutoff(&self) -> Option<BelowCutoff> {
        let (sites, stated) = (self.sites.as_ref()?, self.sites_totals?);
        let listed = |f: fn(&Site) -> u64| sites.iter().map(f).fold(0, u64::saturating_add);
        let cut = BelowCutoff {
            rows: stated.rows_cut,
            live_bytes: stated.live_bytes.saturating_sub(listed(|s| s.live_bytes)),
            live_objects: stated
                .live_objects
                .saturating_sub(listed(|s| s.live_objects)),
            allocated_bytes: stated
                .allocated_bytes
                .saturating_sub(listed(|s| s.allocated_bytes)),
            allocated_objects: stated
                .allocated_objects
                .saturating_sub(listed(|s| s.allocated_objects)),
        };
        let anything = cut.rows.unwrap_or(0) > 0
            || [
                What::Alloc,
                What::AllocObjects,
                What::Live,
                What::LiveObjects,
            ]
            .iter()
            .any(|&w| cut.value(w) > 0);
        anything.then_some(cut)
    }

    /// For a SITES cost whose table lost rows to the cutoff, what they
    /// hold in words (`12 rows below the cutoff, 4096 bytes`).
    pub fn below_cutoff_text(&self, what: What) -> Option<String> {
        let cut = self.sites_below_cutoff().filter(|_| what.is_sites())?;
        Some(cut.describe(what))
    }

    /// The total of one kind: the table's own total for CPU; for SITES the
    /// file's stated total (rows below the cutoff included) when it has
    /// one, else the sum of the listed rows.
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

/// A trace's frames, with [`TRUNCATED`] as their root when there are as
/// many as `depth`: the agent keeps that many frames of a deeper stack, so
/// such a trace stands for a cut stack (or for one exactly that deep, which
/// the file cannot tell apart).
fn marked_if_cut(mut frames: Vec<String>, depth: Option<u32>) -> Vec<String> {
    if depth.is_some_and(|depth| depth > 0 && frames.len() == depth as usize) {
        frames.push(TRUNCATED.to_owned());
    }
    frames
}

/// The leaf a cpu=wall sample's state is drawn as: `[blocked]`.
pub fn state_leaf(state: &str) -> String {
    format!("[{state}]")
}

/// The state a leaf drawn by [`state_leaf`] names, if it is one.
pub fn state_of_leaf(leaf: &str) -> Option<&'static str> {
    let name = leaf.strip_prefix('[')?.strip_suffix(']')?;
    wall_states::STATES.iter().copied().find(|s| *s == name)
}

/// cpu=wall's samples split by state: a stack whose trace has a row
/// becomes one stack per state it was sampled in, the state as its leaf
/// (where an allocated class is drawn), so that flame graphs, folded stacks
/// and the report show it. Samples a row does not account for stay whole.
fn split_by_state(stacks: Vec<Weighted>, rows: &[WallStateRow]) -> Vec<Weighted> {
    let by_trace: HashMap<u32, &WallStateRow> = rows.iter().map(|r| (r.trace_serial, r)).collect();
    let mut split = Vec::with_capacity(stacks.len());
    for stack in stacks {
        let Some(row) = by_trace.get(&stack.trace) else {
            split.push(stack);
            continue;
        };
        let mut rest = stack.value;
        for (state, &count) in wall_states::STATES.iter().zip(&row.counts) {
            let count = count.min(rest);
            if count > 0 {
                rest -= count;
                split.push(Weighted {
                    class: Some(state_leaf(state)),
                    value: count,
                    ..stack.clone()
                });
            }
        }
        if rest > 0 {
            split.push(Weighted {
                value: rest,
                ..stack
            });
        }
    }
    split
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
                version,
                created,
                prelude,
            } => {
                profile.header = format!("{version}, created {created}");
                profile.settings = RunSettings::find_in(prelude).unwrap_or_default();
            }
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
    let settings = profile.settings;
    let trace_of = |serial: u32| traces.get(&serial).cloned().unwrap_or_default();
    let frames_of = |serial: u32| marked_if_cut(trace_of(serial), settings.depth);
    let site_frames_of =
        |serial: u32| marked_if_cut(trace_of(serial), settings.sites_trace_depth());
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
            // (After the CPU SAMPLES block it splits.)
            Section::WallStates(rows) => {
                if let Some((stacks, total)) = profile.samples.take() {
                    profile.samples = Some((split_by_state(stacks, &rows), total));
                }
            }
            Section::SitesTotals(totals) => {
                profile.sites_totals = Some(StatedSiteTotals {
                    live_bytes: totals.all.live_bytes,
                    live_objects: totals.all.live_objects,
                    allocated_bytes: totals.all.allocated_bytes,
                    allocated_objects: totals.all.allocated_objects,
                    rows_cut: Some(totals.below_cutoff.rows),
                });
            }
            Section::Sites(sites) => {
                // The totals that follow belong to this table, not to an
                // earlier one.
                profile.sites_totals = None;
                profile.sites = Some(
                    sites
                        .rows
                        .iter()
                        .map(|row| Site {
                            frames: site_frames_of(row.trace_serial),
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
    /// cpu=wall: the states of the traces of the last CPU SAMPLES record
    /// (the UTF8 record written before it).
    wall_states: Option<Vec<WallStateRow>>,
    /// A wall-states UTF8 record not yet followed by its CPU SAMPLES.
    pending_wall_states: Option<Vec<WallStateRow>>,
    sites: Option<Vec<hprof_format::binary::AllocSite>>,
    sites_totals: Option<StatedSiteTotals>,
    /// The objects of the heap dumps, if any, per class.
    heap: Option<HeapCounts>,
    /// Where the LOAD CLASS records' classes are.
    class_addresses: ClassAddresses,
    /// The agent's note of its JVM's object layout.
    layout_note: Option<ObjectLayout>,
    /// CONTROL SETTINGS' depth.
    depth: Option<u16>,
    /// hprof-rs's settings line, from the UTF8 record that holds it.
    settings: Option<RunSettings>,
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
            let text = String::from_utf8_lossy(&text).into_owned();
            if text.starts_with(settings::PREFIX) && tables.settings.is_none() {
                tables.settings = RunSettings::from_line(&text);
            }
            if let Some(layout) = ObjectLayout::from_note(text.as_bytes()) {
                tables.layout_note = Some(layout);
            }
            if let Some(rows) = wall_states::from_utf8_text(&text) {
                tables.pending_wall_states = Some(rows);
            }
            tables.utf8.insert(id, text);
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
            tables.wall_states = tables.pending_wall_states.take();
        }
        RecordBody::AllocSites {
            sites,
            total_live_bytes,
            total_live_instances,
            total_allocated_bytes,
            total_allocated_instances,
            ..
        } => {
            tables.sites = Some(sites);
            tables.sites_totals = Some(StatedSiteTotals {
                live_bytes: unless_saturated(total_live_bytes),
                live_objects: unless_saturated(total_live_instances),
                allocated_bytes: total_allocated_bytes,
                allocated_objects: total_allocated_instances,
                rows_cut: None,
            });
        }
        RecordBody::ControlSettings { depth, .. } => tables.depth = Some(depth),
        _ => {}
    }
}

/// A 4-byte total of ALLOC SITES; 0 (nothing known beyond the listed
/// rows) when it is saturated, since the true total is then unknown.
fn unless_saturated(total: u32) -> u64 {
    if total == u32::MAX {
        0
    } else {
        u64::from(total)
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
    let mut settings = tables.settings.unwrap_or_default();
    settings.depth = settings.depth.or(tables.depth.map(u32::from));
    let trace_of = |serial: u32| -> Vec<String> {
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
    let frames_of = |serial: u32| marked_if_cut(trace_of(serial), settings.depth);
    let site_frames_of =
        |serial: u32| marked_if_cut(trace_of(serial), settings.sites_trace_depth());
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
        match &tables.wall_states {
            Some(states) => (split_by_state(stacks, states), *total),
            None => (stacks, *total),
        }
    });
    let sites = tables.sites.as_ref().map(|sites| {
        sites
            .iter()
            .map(|s| Site {
                frames: site_frames_of(s.trace_serial),
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
            "{}, started {}",
            header.version.header_text(),
            header.started_utc()
        ),
        samples,
        times: None,
        sites,
        sites_totals: tables.sites_totals,
        histogram,
        heap_layout,
        settings,
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

    /// A file of hprof-rs at depth=2: a trace of 2 frames may have been
    /// cut, one of 1 is whole; SITES traces kept 1 frame at most.
    const CUT_ASCII: &str = "JAVA PROFILE 1.0.1, created Thu Nov  2 17:11:21 2017\n\
\n\
The guide.\n\
\n\
hprof-rs settings: depth=2 sites_depth=1 interval=7\n\
--------\n\
\n\
TRACE 300001:\n\
\tHot.leaf(Hot.java:5)\n\
\tHot.deeper(Hot.java:9)\n\
TRACE 300002:\n\
\tHot.main(Hot.java:10)\n\
CPU SAMPLES BEGIN (total = 10) Thu Nov  2 17:11:22 2017\n\
rank   self  accum   count trace method\n\
   1 70.00% 70.00%       7 300001 Hot.leaf\n\
   2 30.00% 100.00%       3 300002 Hot.main\n\
CPU SAMPLES END\n\
SITES BEGIN (ordered by live bytes) Thu Nov  2 17:11:22 2017\n\
\x20         percent          live          alloc'ed  stack class\n\
\x20rank   self  accum     bytes objs     bytes  objs trace name\n\
\x20   1 100.00% 100.00%       16    1        16     1 300002 int[]\n\
SITES END\n";

    #[test]
    fn ascii_traces_as_deep_as_the_depth_get_the_truncated_root() {
        let profile = read_ascii(CUT_ASCII.as_bytes()).unwrap();
        let stacks = profile.stacks(What::Cpu);
        assert_eq!(stacks[0].frames, ["Hot.leaf", "Hot.deeper", TRUNCATED]);
        assert_eq!(stacks[1].frames, ["Hot.main"]);
        let sites = profile.stacks(What::Alloc);
        assert_eq!(sites[0].frames, ["Hot.main", TRUNCATED], "sites_depth=1");
        assert_eq!(profile.interval_ms(), 7);
        assert_eq!(
            profile.options(),
            "cpu=samples, heap=sites, depth=2, interval=7"
        );
        // HPROF's own files say neither: nothing is marked, 10 ms.
        let hprof = read_ascii(ASCII.as_bytes()).unwrap();
        assert_eq!(hprof.stacks(What::Cpu)[0].frames, ["Hot.leaf", "Hot.main"]);
        assert_eq!(hprof.interval_ms(), DEFAULT_INTERVAL_MS);
    }

    /// A binary file of two traces (2 frames and 1), CPU SAMPLES of both,
    /// with hprof-rs's settings record when `settings` is given.
    fn binary_file(settings: Option<&str>) -> Vec<u8> {
        use hprof_format::binary::writer::{encode_header, encode_record};
        use hprof_format::binary::{CpuSample, Record, Version};
        let header = FileHeader {
            version: Version::V101,
            id_size: 4,
            timestamp_ms: 1_796_585_248_082,
        };
        let utf8 = |id: u64, text: &str| RecordBody::Utf8 {
            id,
            text: text.as_bytes().to_vec(),
        };
        let frame = |frame_id: u64, method_name_id: u64| RecordBody::Frame {
            frame_id,
            method_name_id,
            signature_id: 0,
            source_file_id: 0,
            class_serial: 1,
            line: -1,
        };
        let mut bodies = vec![
            RecordBody::ControlSettings { flags: 2, depth: 2 },
            utf8(1, "Hot"),
            utf8(2, "leaf"),
            utf8(3, "main"),
            RecordBody::LoadClass {
                class_serial: 1,
                class_id: 0x100,
                trace_serial: 0,
                name_id: 1,
            },
            frame(0x10, 2),
            frame(0x11, 3),
            RecordBody::Trace {
                trace_serial: 300001,
                thread_serial: 0,
                frame_ids: vec![0x10, 0x11],
            },
            RecordBody::Trace {
                trace_serial: 300002,
                thread_serial: 0,
                frame_ids: vec![0x11],
            },
            RecordBody::CpuSamples {
                total: 10,
                samples: vec![
                    CpuSample {
                        count: 7,
                        trace_serial: 300001,
                    },
                    CpuSample {
                        count: 3,
                        trace_serial: 300002,
                    },
                ],
            },
        ];
        if let Some(line) = settings {
            bodies.insert(1, utf8(9, line));
        }
        let mut bytes = Vec::new();
        encode_header(&header, &mut bytes);
        for body in bodies {
            encode_record(&Record { time: 0, body }, header.id_size, &mut bytes);
        }
        bytes
    }

    #[test]
    fn binary_traces_as_deep_as_the_depth_get_the_truncated_root() {
        // The settings record wins over CONTROL SETTINGS' depth.
        let ours =
            read_binary(&binary_file(Some("hprof-rs settings: depth=3 interval=20"))[..]).unwrap();
        assert_eq!(ours.stacks(What::Cpu)[0].frames, ["Hot.leaf", "Hot.main"]);
        assert_eq!(ours.interval_ms(), 20);
        assert_eq!(
            ours.header,
            "JAVA PROFILE 1.0.1, started 2026-12-06T19:27:28.082Z"
        );
        // HPROF's binary files carry the depth in CONTROL SETTINGS alone.
        let hprof = read_binary(&binary_file(None)[..]).unwrap();
        let stacks = hprof.stacks(What::Cpu);
        assert_eq!(stacks[0].frames, ["Hot.leaf", "Hot.main", TRUNCATED]);
        assert_eq!(stacks[1].frames, ["Hot.main"]);
        assert_eq!(hprof.interval_ms(), DEFAULT_INTERVAL_MS);
    }

    const SITES: &str = "SITES BEGIN (ordered by live bytes) Thu Nov  2 17:11:22 2017\n\
\x20         percent          live          alloc'ed  stack class\n\
\x20rank   self  accum     bytes objs     bytes  objs trace name\n\
\x20   1 100.00% 100.00%       80    1       800    10 300001 int[]\n\
SITES END\n";

    const TOTALS: &str = "SITES TOTALS BEGIN\n\
\x20             live bytes  live objs  alloc'ed bytes  alloc'ed objs   rows\n\
every site            80          1            5800             60      4\n\
below cutoff           0          0            5000             50      3\n\
SITES TOTALS END\n";

    #[test]
    fn sites_totals_count_the_rows_below_the_cutoff_as_one_stack() {
        let header = "JAVA PROFILE 1.0.1, created Thu Nov  2 17:11:21 2017\n\n--------\n\n";
        let profile = read_ascii(format!("{header}{SITES}{TOTALS}").as_bytes()).unwrap();
        assert_eq!(profile.total(What::Alloc), 5800);
        assert_eq!(profile.total(What::AllocObjects), 60);
        assert_eq!(profile.total(What::Live), 80);
        let stacks = profile.stacks(What::Alloc);
        assert_eq!(stacks.len(), 2);
        assert_eq!(
            (&stacks[1].frames[..], stacks[1].value),
            (&[BELOW_CUTOFF.to_owned()][..], 5000)
        );
        assert_eq!(profile.stacks(What::Live).len(), 1, "nothing live was cut");
        assert_eq!(
            profile.below_cutoff_text(What::Alloc).as_deref(),
            Some("3 rows below the cutoff, 5000 bytes")
        );
        assert_eq!(profile.below_cutoff_text(What::Cpu), None);
        // A later SITES block without totals (HPROF's) is its rows alone.
        let later = read_ascii(format!("{header}{SITES}{TOTALS}{SITES}").as_bytes()).unwrap();
        assert_eq!(later.total(What::Alloc), 800);
        assert_eq!(later.sites_below_cutoff(), None);
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
