//! One parsed ASCII profile (`java.hprof.txt`), indexed the ways the tests
//! look at it: traces by serial with their frames, the SITES rows, the CPU
//! SAMPLES / CPU TIME rows, the cpu=old table, the HEAP DUMP blocks and the
//! THREAD START lines.
//!
//! Parsing uses the crate's own reader ([`ascii::reader::parse`], which also
//! reads fragments such as a cpu=old table without header); a malformed file
//! panics with its path and the reader's offset, so a failure names the file.

use hprof_rs::format::ascii::{
    self, CpuSection, CpuTitle, HeapDumpSection, OldProfRow, Section, SiteRow, SitesSection,
    SitesTotals, TraceSection,
};
use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::path::Path;
use std::process::Command;

/// The sections of one ASCII profile, in file order, and what is looked up in them.
#[derive(Debug)]
pub struct AsciiProfile {
    /// The file's path (or what the bytes were), for messages.
    pub what: String,
    /// Every section, in file order (several dumps follow one another).
    pub sections: Vec<Section>,
    /// TRACE blocks by serial; a serial printed twice keeps its last block.
    traces: HashMap<u32, TraceSection>,
}

impl AsciiProfile {
    /// Reads and parses the file at `path`; panics when it cannot be read
    /// or is malformed.
    pub fn read(path: &Path) -> AsciiProfile {
        let bytes =
            fs::read(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        AsciiProfile::parse(&bytes, &path.display().to_string())
    }

    /// [`AsciiProfile::read`] that also requires a whole file: it must
    /// start with its `JAVA PROFILE 1.0.x` header line (or, for cpu=old,
    /// with the old table's title), as [`ascii::reader::parse_file`] checks.
    pub fn read_whole_file(path: &Path) -> AsciiProfile {
        let bytes =
            fs::read(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        let what = path.display().to_string();
        let parsed = ascii::reader::parse_file(&bytes);
        AsciiProfile::index(
            parsed.unwrap_or_else(|e| panic!("{what} is malformed: {e}")),
            what,
        )
    }

    /// Parses `bytes` (named `what` in the panic message when malformed).
    pub fn parse(bytes: &[u8], what: &str) -> AsciiProfile {
        let sections =
            ascii::reader::parse(bytes).unwrap_or_else(|e| panic!("{what} is malformed: {e}"));
        AsciiProfile::index(sections, what.to_owned())
    }

    fn index(sections: Vec<Section>, what: String) -> AsciiProfile {
        let traces = sections
            .iter()
            .filter_map(|s| match s {
                Section::Trace(trace) => Some((trace.serial, trace.clone())),
                _ => None,
            })
            .collect();
        AsciiProfile {
            what,
            sections,
            traces,
        }
    }

    /// How many sections satisfy `is`.
    pub fn count(&self, is: impl Fn(&Section) -> bool) -> usize {
        self.sections.iter().filter(|s| is(s)).count()
    }

    /// Every TRACE block, in file order.
    pub fn traces(&self) -> impl Iterator<Item = &TraceSection> {
        self.sections.iter().filter_map(|s| match s {
            Section::Trace(trace) => Some(trace),
            _ => None,
        })
    }

    /// The TRACE block of `serial` (its last one when printed twice);
    /// panics when that trace was not printed.
    pub fn trace(&self, serial: u32) -> &TraceSection {
        self.traces
            .get(&serial)
            .unwrap_or_else(|| panic!("TRACE {serial} was not printed in {}", self.what))
    }

    /// `Class.method` of each frame of TRACE `serial`, innermost first;
    /// panics when that trace was not printed.
    pub fn frames(&self, serial: u32) -> Vec<String> {
        self.trace(serial)
            .frames
            .iter()
            .map(|f| format!("{}.{}", f.class_name, f.method_name))
            .collect()
    }

    /// Thread name by serial, from the THREAD START lines (the last line
    /// wins when a serial starts twice).
    pub fn threads(&self) -> BTreeMap<u32, String> {
        self.sections
            .iter()
            .filter_map(|s| match s {
                Section::ThreadStart {
                    thread_serial,
                    name,
                    ..
                } => Some((*thread_serial, name.clone())),
                _ => None,
            })
            .collect()
    }

    /// Every SITES block, in file order.
    pub fn sites_blocks(&self) -> impl DoubleEndedIterator<Item = &SitesSection> {
        self.sections.iter().filter_map(|s| match s {
            Section::Sites(sites) => Some(sites),
            _ => None,
        })
    }

    /// The rows of the last SITES block (the exit dump's); panics when there is none.
    pub fn site_rows(&self) -> &[SiteRow] {
        &self
            .sites_blocks()
            .next_back()
            .unwrap_or_else(|| panic!("no SITES block in {}", self.what))
            .rows
    }

    /// The SITES TOTALS after the last SITES block (hprof-rs writes one
    /// right after each); panics when that block has none.
    pub fn sites_totals(&self) -> &SitesTotals {
        let last = self
            .sections
            .iter()
            .rposition(|s| matches!(s, Section::Sites(_)))
            .unwrap_or_else(|| panic!("no SITES block in {}", self.what));
        match self.sections.get(last + 1) {
            Some(Section::SitesTotals(totals)) => totals,
            next => panic!(
                "{}: the last SITES block is followed by {next:?}",
                self.what
            ),
        }
    }

    /// The last SITES block's rows of `class`.
    pub fn sites_of_class(&self, class: &str) -> Vec<&SiteRow> {
        self.site_rows()
            .iter()
            .filter(|r| r.class_name == class)
            .collect()
    }

    /// The last SITES block's rows of `class` whose trace has a frame in
    /// `method` (`Class.method`).
    pub fn sites_of_class_via(&self, class: &str, method: &str) -> Vec<&SiteRow> {
        self.sites_of_class(class)
            .into_iter()
            .filter(|r| self.frames(r.trace_serial).iter().any(|f| f == method))
            .collect()
    }

    /// Every CPU SAMPLES and CPU TIME block, in file order.
    pub fn cpu_blocks(&self) -> impl DoubleEndedIterator<Item = &CpuSection> {
        self.sections.iter().filter_map(|s| match s {
            Section::Cpu(cpu) => Some(cpu),
            _ => None,
        })
    }

    /// The first CPU block titled `title`, if any.
    pub fn first_cpu(&self, title: CpuTitle) -> Option<&CpuSection> {
        self.cpu_blocks().find(|cpu| cpu.title == title)
    }

    /// The last CPU block of either title (the exit dump's), if any.
    pub fn last_cpu(&self) -> Option<&CpuSection> {
        self.cpu_blocks().next_back()
    }

    /// Every HEAP DUMP block, in file order.
    pub fn heap_dumps(&self) -> impl Iterator<Item = &HeapDumpSection> {
        self.sections.iter().filter_map(|s| match s {
            Section::HeapDump(dump) => Some(dump),
            _ => None,
        })
    }

    /// The rows of every cpu=old table, in file order.
    pub fn old_prof_rows(&self) -> Vec<&OldProfRow> {
        self.sections
            .iter()
            .filter_map(|s| match s {
                Section::OldProf(rows) => Some(rows),
                _ => None,
            })
            .flatten()
            .collect()
    }
}

/// The sum of several SITES rows: (allocated objects, live objects,
/// allocated bytes, live bytes).
pub fn site_totals(rows: &[&SiteRow]) -> (u64, u64, u64, u64) {
    rows.iter().fold((0, 0, 0, 0), |t, r| {
        (
            t.0 + r.allocated_objects,
            t.1 + r.live_objects,
            t.2 + r.allocated_bytes,
            t.3 + r.live_bytes,
        )
    })
}

/// `hprof-rs print <path>` must accept the file (`what` names the run in
/// the failure); returns what it printed.
pub fn assert_print_accepts(path: &Path, what: &str) -> String {
    let out = super::run(Command::new(super::hprof_rs_bin()).arg("print").arg(path));
    super::assert_success(&out, &format!("{what}: hprof-rs print {}", path.display()));
    super::stdout_text(&out)
}

/// The sum of a CPU block's counts whose top frame is `method` (`Class.method`).
pub fn cpu_count_in(cpu: &CpuSection, method: &str) -> u64 {
    cpu.rows
        .iter()
        .filter(|r| r.method.as_deref() == Some(method))
        .map(|r| r.count)
        .sum()
}
