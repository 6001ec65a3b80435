//! From the model to bytes: builds the typed sections/records of the chosen
//! format for each thing the agent reports, and encodes them.
//!
//! This is the glue between the model (what we know) and the formats (how it
//! is spelled); it holds the per-run output state (format, id size, clock)
//! and writes each string, frame and trace once, just before first use.

pub mod clock;
mod contention;
pub mod cpu;
pub mod heap_dump_ascii;
pub mod heap_dump_copy;
pub mod heap_dump_refs;
pub mod lock_time;
pub mod monitors;
pub mod sites;
pub mod times;
pub mod written;

use crate::format::ascii::{self, LineInfo, Section, TraceFrame};
use crate::format::binary::{self, FileHeader, Record, RecordBody, Version};
use crate::format::names::signature_to_name;
use crate::format::settings::RunSettings;
use crate::format::wall_states::{self, WallStateRow};
use crate::model::{FrameEntry, LINE_UNKNOWN, Model, TraceEntry};
use crate::options::Format;
use parking_lot::Mutex;
use rustc_hash::FxHashMap;
use std::collections::HashMap;
use std::time::Instant;
use written::Written;

/// Turns model facts into output bytes.
#[derive(Debug)]
pub struct Emitter {
    format: Format,
    id_size: u32,
    started: Instant,
    /// The records written so far. (Its lock is taken only inside the
    /// emitter, never across a call that could take it again.)
    written: Mutex<Written>,
}

/// What the file header announces.
#[derive(Debug, Clone)]
pub struct HeaderFacts {
    /// Binary only: 1.0.2 when the heap may be dumped in segments.
    pub version: Version,
    /// ctime of now, for the ASCII header.
    pub created: String,
    /// Milliseconds since 1970, for the binary header.
    pub timestamp_ms: u64,
    /// Binary CONTROL SETTINGS flags: 0x1 allocation traces, 0x2 cpu sampling.
    pub control_flags: u32,
    /// Binary CONTROL SETTINGS: the trace depth.
    pub depth: u16,
    /// ASCII: how heap=sites counts, which the prelude's guide says.
    pub sites_counting: SitesCounting,
    /// ASCII: paragraphs that follow the prelude's guide, about this run
    /// (each ending in a line end).
    pub notes: Vec<String>,
    /// The depth and interval, for the tools that read the file: the last
    /// lines of the ASCII prelude, a binary UTF8 record after CONTROL
    /// SETTINGS.
    pub settings: RunSettings,
}

/// How heap=sites counts, for the prelude's word on which SITES columns
/// are exact and which are estimates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SitesCounting {
    /// Counted in the byte code per site, rows from the live sample (the
    /// default, `alloc_count=sites`).
    PerSite,
    /// Counted in the byte code by calling context (`alloc_count=bytecode`).
    ByContext,
    /// One JVMTI event per object (`alloc_count=events`).
    EveryObject,
    /// One object per this many bytes allocated (`alloc_interval=`, and
    /// every attached profile).
    Sampled(u64),
}

/// The prelude printed under the ASCII header line: a short guide to the
/// sections that follow (our own words; the original's text is not copied),
/// saying how exact the SITES columns are under `sites`.
pub fn ascii_prelude(sites: SitesCounting) -> String {
    format!(
        "{PRELUDE_BEFORE_SITES}{}{PRELUDE_AFTER_SITES}",
        sites_paragraph(sites)
    )
}

/// The SITES entry of the prelude's list, by how heap=sites counts.
fn sites_paragraph(sites: SitesCounting) -> String {
    let how = match sites {
        SitesCounting::PerSite => "\
Counted in the byte code per site (the default):
each site's allocated objects and bytes are exact.
Past the first 8 MiB the program allocates, a
site's split among its traces (and threads, with
thread=y), and the live objects of a class made
at several sites, are
estimates from a sample (one object per 256 KiB),
never above what a row allocated.
alloc_count=events makes every column exact, at a
much higher cost."
            .to_owned(),
        SitesCounting::ByContext => "\
Counted in the byte code by calling context
(alloc_count=bytecode): every row's allocated
objects and bytes are exact. The live objects of a
class made at several sites are split as a sample
says: exact for the first 8 MiB allocated, then
estimates, never above what a row allocated."
            .to_owned(),
        SitesCounting::EveryObject => "\
Counted from one event per object
(alloc_count=events): every column is exact."
            .to_owned(),
        SitesCounting::Sampled(bytes) => format!(
            "\
Sampled: one object per about {} KiB allocated
stands for the objects like it (alloc_interval=,
and every profile attached to a running JVM), so
every column is an estimate.",
            bytes.div_ceil(1024)
        ),
    };
    let indent = " ".repeat(27);
    let mut out = String::from(
        "SITES                      allocation sites (heap=sites): live and allocated\n\
         \x20                          bytes and objects per class and allocating trace.\n",
    );
    for line in how.lines() {
        out.push_str(&indent);
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// The prelude's last paragraph: the settings line, and what it is for.
fn settings_paragraph(settings: &RunSettings) -> String {
    format!(
        "For hprof-rs's tool: the depth traces were cut at (a TRACE of that many\n\
         frames may have been cut) and the CPU sampling interval in ms.\n{}\n",
        settings.line()
    )
}

const PRELUDE_BEFORE_SITES: &str = "\
This file was written by hprof-rs, a drop-in replacement for the HPROF agent.
It uses the layout of HPROF's ASCII output (JAVA PROFILE 1.0.1).

Sections that may follow the dashed line:

THREAD START / THREAD END  a thread began or finished. \"id\" is the thread's
                           serial number; \"obj\" identifies its Thread object.
TRACE                      a stack trace, innermost frame first, with its serial
                           number. Other sections refer to traces by serial;
                           TRACE 300000 is the empty trace.
HEAP DUMP                  every object on the heap (heap=dump): roots (ROOT),
                           classes (CLS), instances (OBJ) and arrays (ARR).
";

const PRELUDE_AFTER_SITES: &str = "\
SITES TOTALS               an addition of hprof-rs, after each SITES: the
                           totals of every site, and of the rows the cutoff
                           left out of SITES.
CPU SAMPLES                where running threads were seen (cpu=samples).
CPU TIME                   method calls and time per trace (cpu=times).
WAIT / WAITED              a thread called Object.wait / stopped waiting
                           (monitor=y), with the monitor's class.
MONITOR DUMP               every thread's state and trace, and every monitor a
                           thread owns, with the threads waiting for it.
MONITOR TIME               time threads waited to enter monitors, per trace
                           and monitor class (monitor=y).
MONITOR HOLDERS            an addition of hprof-rs: for each MONITOR TIME row,
                           the trace of the thread that held the monitor.
LOCK TIME                  an addition of hprof-rs: time threads were blocked
                           acquiring java.util.concurrent locks, per trace.

A dump is written when the program ends (doe=y) and each time the process
receives SIGQUIT (kill -3).
";

impl Emitter {
    /// An emitter for `format`; binary identifiers are `id_size` bytes.
    pub fn new(format: Format, id_size: u32) -> Self {
        Self {
            format,
            id_size,
            started: Instant::now(),
            written: Mutex::new(Written::default()),
        }
    }

    /// The output format.
    pub fn format(&self) -> Format {
        self.format
    }

    /// Record time stamp: microseconds since the agent started, wrapping at 32 bits.
    fn now(&self) -> u32 {
        self.started.elapsed().as_micros() as u32
    }

    fn record(&self, body: RecordBody, out: &mut Vec<u8>) {
        binary::writer::encode_record(
            &Record {
                time: self.now(),
                body,
            },
            self.id_size,
            out,
        );
    }

    /// The name identifier of `text`, writing its UTF8 record first if new.
    fn name(&self, model: &mut Model, text: &str, out: &mut Vec<u8>) -> u64 {
        let id = model.names.intern(text);
        if self.written.lock().name(id) {
            self.record(
                RecordBody::Utf8 {
                    id,
                    text: text.as_bytes().to_vec(),
                },
                out,
            );
        }
        id
    }

    /// The file header (and, in binary, the CONTROL SETTINGS record and
    /// the UTF8 record of the settings line).
    pub fn file_header(&self, facts: &HeaderFacts, model: &mut Model) -> Vec<u8> {
        let mut out = Vec::new();
        match self.format {
            Format::Ascii => ascii::writer::write_section(
                &Section::Header {
                    version: Version::V101.header_text().to_owned(),
                    created: facts.created.clone(),
                    prelude: std::iter::once(ascii_prelude(facts.sites_counting))
                        .chain(facts.notes.iter().cloned())
                        .chain(std::iter::once(settings_paragraph(&facts.settings)))
                        .collect::<Vec<_>>()
                        .join("\n"),
                },
                &mut out,
            ),
            Format::Binary => {
                let header = FileHeader {
                    version: facts.version,
                    id_size: self.id_size,
                    timestamp_ms: facts.timestamp_ms,
                };
                binary::writer::encode_header(&header, &mut out);
                let body = RecordBody::ControlSettings {
                    flags: facts.control_flags,
                    depth: facts.depth,
                };
                self.record(body, &mut out);
                // A string no record names: readers keep it or pass over it.
                self.name(model, &facts.settings.line(), &mut out);
            }
        }
        out
    }

    /// THREAD START line / START THREAD record for thread `serial`.
    pub fn thread_start(&self, model: &mut Model, serial: u32) -> Vec<u8> {
        let mut out = Vec::new();
        let Some(thread) = model.threads.get(serial).cloned() else {
            return out;
        };
        match self.format {
            Format::Ascii => ascii::writer::write_section(
                &Section::ThreadStart {
                    object_id: thread.object_id,
                    thread_serial: serial,
                    name: thread.name,
                    group: thread.group,
                },
                &mut out,
            ),
            Format::Binary => {
                let name_id = self.name(model, &thread.name, &mut out);
                let group_name_id = self.name(model, &thread.group, &mut out);
                let parent_group_name_id = match &thread.parent_group {
                    Some(parent) => self.name(model, parent, &mut out),
                    None => 0,
                };
                let body = RecordBody::StartThread {
                    thread_serial: serial,
                    thread_id: thread.object_id,
                    trace_serial: thread.trace_serial,
                    name_id,
                    group_name_id,
                    parent_group_name_id,
                };
                self.record(body, &mut out);
            }
        }
        out
    }

    /// THREAD END line / END THREAD record.
    pub fn thread_end(&self, serial: u32) -> Vec<u8> {
        let mut out = Vec::new();
        match self.format {
            Format::Ascii => ascii::writer::write_section(
                &Section::ThreadEnd {
                    thread_serial: serial,
                },
                &mut out,
            ),
            Format::Binary => self.record(
                RecordBody::EndThread {
                    thread_serial: serial,
                },
                &mut out,
            ),
        }
        out
    }

    /// Binary LOAD CLASS records for classes not yet announced, then UNLOAD
    /// CLASS for those unloaded since the last call (nothing in ASCII,
    /// which has no class records outside heap dumps).
    pub fn class_loads(&self, model: &mut Model) -> Vec<u8> {
        let mut out = Vec::new();
        if self.format == Format::Ascii {
            return out;
        }
        let (unwritten, unloaded): (Vec<_>, Vec<u32>) = {
            let mut written = self.written.lock();
            let first = written.classes_to_look_at(model.classes.len());
            let unwritten = model
                .classes
                .iter_from(first)
                .filter(|c| written.class(c.serial))
                .cloned()
                .collect();
            let all_unloaded = model.classes.unloaded_from(0).len();
            let first_unload = written.unloads_to_write(all_unloaded);
            (
                unwritten,
                model.classes.unloaded_from(first_unload).to_vec(),
            )
        };
        for class in unwritten {
            let name_id = self.name(model, &signature_to_name(&class.signature), &mut out);
            let body = RecordBody::LoadClass {
                class_serial: class.serial,
                class_id: class.object_id,
                trace_serial: class.trace_serial,
                name_id,
            };
            self.record(body, &mut out);
        }
        for class_serial in unloaded {
            self.record(RecordBody::UnloadClass { class_serial }, &mut out);
        }
        out
    }

    /// The allocation sites: every unprinted trace first (ASCII and binary
    /// alike, as HPROF did), then the SITES section, or the ALLOC SITES and
    /// HEAP SUMMARY records with the LOAD CLASS records they refer to.
    pub fn sites(
        &self,
        model: &mut Model,
        sites: &[sites::SiteSnapshot],
        cutoff: f64,
        created: String,
        out: &mut Vec<u8>,
    ) {
        self.requested_sites(model, sites, cutoff, 0, created, out)
    }

    /// The allocation sites as [`sites`](Self::sites) writes them, with
    /// the ALLOC SITES `flags` a `net=` front end asked for, added to `out`
    /// (written in place: a program's sites can be tens of megabytes).
    pub fn requested_sites(
        &self,
        model: &mut Model,
        sites: &[sites::SiteSnapshot],
        cutoff: f64,
        flags: u16,
        created: String,
        out: &mut Vec<u8>,
    ) {
        out.extend(self.class_loads(model));
        self.unprinted_traces(model, out);
        match self.format {
            Format::Ascii => {
                for section in sites::ascii_sections(sites, cutoff, flags, created) {
                    ascii::writer::write_section(&section, out);
                }
            }
            Format::Binary => {
                for body in sites::binary_records(sites, cutoff, flags) {
                    self.record(body, out);
                }
            }
        }
    }

    /// A HEAP SUMMARY record of the totals of `sites` (binary only: ASCII
    /// has no such section, and HPROF wrote nothing there).
    pub fn heap_summary(&self, sites: &[sites::SiteSnapshot]) -> Vec<u8> {
        let mut out = Vec::new();
        if self.format == Format::Binary {
            self.record(sites::heap_summary_record(sites), &mut out);
        }
        out
    }

    /// Binary LOAD CLASS records still due, then every trace not printed
    /// yet (what a `net=` front end's DUMP TRACES asks for).
    pub fn pending_traces(&self, model: &mut Model) -> Vec<u8> {
        let mut out = self.class_loads(model);
        self.unprinted_traces(model, &mut out);
        out
    }

    /// CPU SAMPLES: the traces of the listed rows first (those not printed
    /// yet, in rank order), then the section or record.
    pub fn cpu_samples(
        &self,
        model: &mut Model,
        samples: &[cpu::TraceCount],
        cutoff: f64,
        created: String,
    ) -> Vec<u8> {
        let rows = cpu::rank(samples, cutoff);
        let listed: Vec<u32> = rows.iter().map(|r| r.trace_serial).collect();
        let mut out = self.class_loads(model);
        out.extend(self.unprinted_traces_of(model, &listed));
        match self.format {
            Format::Ascii => {
                let section = Section::Cpu(cpu::ascii_section(samples, cutoff, created));
                ascii::writer::write_section(&section, &mut out);
            }
            Format::Binary => self.record(cpu::binary_record(samples, cutoff), &mut out),
        }
        out
    }

    /// cpu=wall's samples (`states`: each trace's split, by trace serial):
    /// the traces of the listed rows, then a CPU SAMPLES section whose
    /// BEGIN line carries the wall-clock mark, with the listed traces'
    /// split by state after it (ASCII: a WALL STATES
    /// block) or before it (binary: the text of a UTF8 record).
    pub fn wall_samples(
        &self,
        model: &mut Model,
        samples: &[cpu::TraceCount],
        states: &HashMap<u32, WallStateRow>,
        cutoff: f64,
        created: String,
    ) -> Vec<u8> {
        let rows = cpu::rank(samples, cutoff);
        let listed: Vec<u32> = rows.iter().map(|r| r.trace_serial).collect();
        let states: Vec<WallStateRow> = listed
            .iter()
            .filter_map(|serial| states.get(serial))
            .copied()
            .collect();
        let mut out = self.class_loads(model);
        out.extend(self.unprinted_traces_of(model, &listed));
        let created = format!("{created} {}", ascii::WALL_CLOCK_MARK);
        match self.format {
            Format::Ascii => {
                let section = Section::Cpu(cpu::ascii_section(samples, cutoff, created));
                ascii::writer::write_section(&section, &mut out);
                ascii::writer::write_section(&Section::WallStates(states), &mut out);
            }
            Format::Binary => {
                // Written before every CPU SAMPLES record it goes with,
                // even when an earlier dump wrote the same text.
                let text = wall_states::utf8_text(&states);
                let id = model.names.intern(&text);
                self.written.lock().name(id);
                let body = RecordBody::Utf8 {
                    id,
                    text: text.into_bytes(),
                };
                self.record(body, &mut out);
                self.record(cpu::binary_record(samples, cutoff), &mut out);
            }
        }
        out
    }

    /// CPU TIME (ms): the traces of the listed rows first, then the section.
    pub fn cpu_times(
        &self,
        model: &mut Model,
        times: &[times::TraceTime],
        cutoff: f64,
        created: String,
    ) -> Vec<u8> {
        let listed: Vec<u32> = times::rank(times, cutoff)
            .iter()
            .map(|r| r.trace_serial)
            .collect();
        let mut out = self.unprinted_traces_of(model, &listed);
        ascii::writer::write_section(
            &Section::Cpu(times::ascii_section(times, cutoff, created)),
            &mut out,
        );
        out
    }

    /// The cpu=old table (no traces: it names methods directly).
    pub fn old_prof(&self, times: &[times::TraceTime]) -> Vec<u8> {
        let mut out = Vec::new();
        ascii::writer::write_section(&Section::OldProf(times::old_prof_rows(times)), &mut out);
        out
    }

    /// Every trace not printed yet, in serial order (what heap dumps and SITES
    /// print first), added to `out`.
    pub fn unprinted_traces(&self, model: &mut Model, out: &mut Vec<u8>) {
        let serials = self.take_unprinted(model.traces.iter());
        self.traces(model, &serials, out);
    }

    /// The given traces that are not printed yet, in the order given (what the
    /// CPU sections print first).
    pub fn unprinted_traces_of(&self, model: &mut Model, serials: &[u32]) -> Vec<u8> {
        let listed = serials.iter().filter_map(|&s| model.traces.get(s));
        let serials = self.take_unprinted(listed);
        let mut out = Vec::new();
        self.traces(model, &serials, &mut out);
        out
    }

    /// The serials of `traces` not printed yet (reserved serials never are),
    /// noting them printed.
    fn take_unprinted<'a>(&self, traces: impl Iterator<Item = &'a TraceEntry>) -> Vec<u32> {
        let mut written = self.written.lock();
        traces
            .filter(|t| !t.reserved && written.trace(t.serial))
            .map(|t| t.serial)
            .collect()
    }

    /// Writes the traces `serials` into `out`, one copy of an entry at a
    /// time (a program's traces can be tens of megabytes).
    fn traces(&self, model: &mut Model, serials: &[u32], out: &mut Vec<u8>) {
        // Deep traces share most of their frames: each frame's line is
        // rendered once per call (at depth=64 a program's exit dump printed
        // two million frame lines of about fifty thousand frames).
        let mut frame_lines: FxHashMap<u64, Vec<u8>> = FxHashMap::default();
        for &serial in serials {
            match self.format {
                Format::Ascii => {
                    if let Some(trace) = model.traces.get(serial) {
                        write_ascii_trace(model, trace, &mut frame_lines, out);
                    }
                }
                Format::Binary => {
                    let Some(trace) = model.traces.get(serial).cloned() else {
                        continue;
                    };
                    for &frame_id in &trace.key.frames {
                        self.frame_record(model, frame_id, out);
                    }
                    let body = RecordBody::Trace {
                        trace_serial: trace.serial,
                        thread_serial: trace.key.thread_serial.unwrap_or(0),
                        frame_ids: trace.key.frames.clone(),
                    };
                    self.record(body, out);
                }
            }
        }
    }

    /// Writes the FRAME record of `frame_id` (and its strings) if not yet written.
    fn frame_record(&self, model: &mut Model, frame_id: u64, out: &mut Vec<u8>) {
        if model.frames.get(frame_id).is_none() || !self.written.lock().frame(frame_id) {
            return;
        }
        // Cloned only when written: `name` below needs the model mutably.
        let Some(frame) = model.frames.get(frame_id).cloned() else {
            return;
        };
        let method_name_id = self.name(model, &frame.method_name, out);
        let signature_id = self.name(model, &frame.method_signature, out);
        let source_file_id = match &frame.source_file {
            Some(file) => self.name(model, file, out),
            None => 0,
        };
        let body = RecordBody::Frame {
            frame_id,
            method_name_id,
            signature_id,
            source_file_id,
            class_serial: frame.class_serial,
            line: frame.line,
        };
        self.record(body, out);
    }
}

/// Writes `trace` as an ASCII TRACE block, each frame's line taken from
/// `frame_lines` or rendered into it.
fn write_ascii_trace(
    model: &Model,
    trace: &TraceEntry,
    frame_lines: &mut FxHashMap<u64, Vec<u8>>,
    out: &mut Vec<u8>,
) {
    let key = &trace.key;
    ascii::writer::write_trace_head(trace.serial, key.thread_serial, key.phase, out);
    let mut written = 0;
    for &id in &key.frames {
        if let Some(line) = frame_lines.get(&id) {
            out.extend_from_slice(line);
            written += 1;
        } else if let Some(frame) = model.frames.get(id) {
            let mut line = Vec::new();
            ascii::writer::write_trace_frame(&ascii_frame(frame), &mut line);
            out.extend_from_slice(&line);
            frame_lines.insert(id, line);
            written += 1;
        }
    }
    if written == 0 {
        ascii::writer::write_empty_trace(out);
    }
}

/// How an ASCII TRACE block prints `frame`: dotted class name,
/// `<Unknown Source>` and `Unknown line` where the facts are missing.
fn ascii_frame(frame: &FrameEntry) -> TraceFrame {
    TraceFrame {
        class_name: signature_to_name(&frame.class_signature),
        method_name: frame.method_name.clone(),
        source_file: frame
            .source_file
            .clone()
            .unwrap_or_else(|| "<Unknown Source>".into()),
        line: if frame.line == LINE_UNKNOWN || frame.line <= 0 {
            LineInfo::Unknown
        } else {
            LineInfo::Line(frame.line as u32)
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::TraceKey;

    /// Each trace is printed once, in serial order or in the order asked
    /// for; reserved serials never are.
    #[test]
    fn each_trace_is_printed_once() {
        let emitter = Emitter::new(Format::Binary, 8);
        let mut model = Model::new(true);
        let serials = |emitter: &Emitter, model: &Model, only: Option<&[u32]>| -> Vec<u32> {
            match only {
                None => emitter.take_unprinted(model.traces.iter()),
                Some(s) => emitter.take_unprinted(s.iter().filter_map(|&s| model.traces.get(s))),
            }
        };
        model.traces.intern(TraceKey {
            frames: vec![7],
            ..Default::default()
        });
        assert_eq!(serials(&emitter, &model, None), [300_000, 300_001]);
        assert!(serials(&emitter, &model, None).is_empty());
        let s = model.traces.intern(TraceKey {
            frames: vec![8],
            ..Default::default()
        });
        let reserved = model.traces.reserve();
        assert_eq!(
            serials(&emitter, &model, Some(&[reserved, s, 300_000])),
            [s]
        );
        assert!(
            serials(&emitter, &model, None).is_empty(),
            "reserved serials are never printed"
        );
        // Strings, frames and classes: once each, too.
        let mut out = Vec::new();
        let id = emitter.name(&mut model, "main", &mut out);
        let once = out.len();
        assert_eq!(emitter.name(&mut model, "main", &mut out), id);
        assert!(once > 0 && out.len() == once);
        model
            .classes
            .intern(0x5000_0001, "Ljava/lang/Object;", 300_000);
        assert!(!emitter.class_loads(&mut model).is_empty());
        assert!(emitter.class_loads(&mut model).is_empty());
    }

    /// The prelude guides the reader to the sections that may follow.
    #[test]
    fn the_prelude_lists_the_sections_that_are_written() {
        for written in [
            "THREAD START",
            "TRACE",
            "HEAP DUMP",
            "SITES",
            "SITES TOTALS",
            "CPU SAMPLES",
            "CPU TIME",
            "WAIT / WAITED",
            "MONITOR DUMP",
            "MONITOR TIME",
            "MONITOR HOLDERS",
            "LOCK TIME",
        ] {
            assert!(
                ascii_prelude(SitesCounting::PerSite).contains(written),
                "{written}"
            );
        }
    }

    /// Each way of counting says which SITES columns are exact, in the
    /// prelude's layout (every line within 80 columns).
    #[test]
    fn the_prelude_says_which_sites_columns_are_exact() {
        let cases = [
            (
                SitesCounting::PerSite,
                "each site's allocated objects and bytes are exact",
            ),
            (SitesCounting::ByContext, "every row's allocated"),
            (SitesCounting::EveryObject, "every column is exact"),
            (
                SitesCounting::Sampled(512 * 1024),
                "every column is an estimate",
            ),
        ];
        for (sites, says) in cases {
            let prelude = ascii_prelude(sites);
            assert!(prelude.contains(says), "{sites:?}:\n{prelude}");
            assert!(
                prelude.lines().all(|l| l.len() <= 80),
                "{sites:?}:\n{prelude}"
            );
            let paragraph = sites_paragraph(sites);
            assert!(
                paragraph
                    .lines()
                    .skip(1)
                    .all(|l| l.starts_with(&" ".repeat(27)))
            );
        }
        assert!(ascii_prelude(SitesCounting::Sampled(512 * 1024)).contains("about 512 KiB"));
        assert!(!ascii_prelude(SitesCounting::Sampled(1)).contains("exact"));
    }
}
