//! Writing ASCII sections, byte for byte as the original agent printed them
//! (hprof_io.c's `write_printf` calls). Every format string here mirrors a C
//! `printf` format.
use std::fmt;
use std::io::Write;

use super::sections::*;

/// Append formatted text to a `Vec<u8>`. Writing into a vector cannot fail,
/// so the `io::Result` is settled here once instead of at every call.
macro_rules! put {
    ($out:expr, $($arg:tt)*) => {
        $out.write_fmt(format_args!($($arg)*)).expect("writing to a Vec<u8> cannot fail")
    };
}

/// Column titles of a SITES block (always printed).
pub const SITES_TITLES: [&str; 2] = [
    "          percent          live          alloc'ed  stack class",
    " rank   self  accum     bytes objs     bytes  objs trace name",
];
/// Column titles of SITES TOTALS (always printed), aligned over its rows.
pub const SITES_TOTALS_TITLES: &str =
    "              live bytes  live objs  alloc'ed bytes  alloc'ed objs   rows";
/// The labels of the two SITES TOTALS rows.
pub const SITES_TOTALS_LABELS: [&str; 2] = ["every site", "below cutoff"];
/// Column title of a CPU block, printed only when rows follow.
pub const CPU_TITLES: &str = "rank   self  accum   count trace method";
/// Column title of MONITOR TIME, printed only when the total is positive.
pub const MONITOR_TIME_TITLES: &str = "rank   self  accum   count trace monitor";
/// Column titles of MONITOR HOLDERS (always printed).
pub const MONITOR_HOLDERS_TITLES: &str = "rank trace holder   seen monitor";
/// First line of a `cpu=old` table.
pub const OLD_PROF_TITLES: &str = "count callee caller time";
/// Column title of LOCK TIME (always printed).
pub const LOCK_TIME_TITLES: &str = "rank   self  accum   count trace lock";

/// A percentage as C `%5.2f` prints it, including glibc's `nan`/`-nan`.
#[derive(Debug, Clone, Copy)]
pub struct Percent(pub f64);

impl fmt::Display for Percent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_nan() {
            // Rust spells it `NaN`; glibc prints the sign bit too.
            let text = if self.0.is_sign_negative() {
                "-nan"
            } else {
                "nan"
            };
            write!(f, "{text:>5}")
        } else {
            // Rust and glibc round the exact binary value the same way
            // (ties to even), so finite values print identically.
            write!(f, "{:5.2}", self.0)
        }
    }
}

/// A thread reference in monitor lines: `thread N`, or `<unknown thread>` for serial 0.
struct ThreadRef(u32);

impl fmt::Display for ThreadRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            0 => f.write_str("<unknown thread>"),
            serial => write!(f, "thread {serial}"),
        }
    }
}

/// Append the exact text of one section.
pub fn write_section(section: &Section, out: &mut Vec<u8>) {
    match section {
        Section::Header {
            version,
            created,
            prelude,
        } => write_file_header(version, created, prelude, out),
        Section::ThreadStart {
            object_id,
            thread_serial,
            name,
            group,
        } => {
            put!(
                out,
                "THREAD START (obj={object_id:x}, id = {thread_serial}, name=\"{name}\", group=\"{group}\")\n"
            )
        }
        Section::ThreadEnd { thread_serial } => put!(out, "THREAD END (id = {thread_serial})\n"),
        Section::Trace(trace) => write_trace(trace, out),
        Section::Sites(sites) => write_sites(sites, out),
        Section::SitesTotals(totals) => write_sites_totals(totals, out),
        Section::Cpu(cpu) => write_cpu(cpu, out),
        Section::WallStates(rows) => write_wall_states(rows, out),
        Section::OldProf(rows) => write_old_prof(rows, out),
        Section::MonitorWait {
            signature,
            timeout_ms,
            thread_serial,
        } => {
            put!(
                out,
                "WAIT: MONITOR {signature}, timeout={timeout_ms}, {}\n",
                ThreadRef(*thread_serial)
            )
        }
        Section::MonitorWaited {
            signature,
            waited_ms,
            thread_serial,
        } => {
            put!(
                out,
                "WAITED: MONITOR {signature}, time_waited={waited_ms}, {}\n",
                ThreadRef(*thread_serial)
            )
        }
        Section::MonitorDump { threads, monitors } => write_monitor_dump(threads, monitors, out),
        Section::MonitorTime {
            total_ms,
            created,
            rows,
        } => write_contention_time(
            &ContentionBlock {
                name: "MONITOR TIME",
                titles: MONITOR_TIME_TITLES,
                titles_always: false,
            },
            *total_ms,
            created,
            rows,
            out,
        ),
        Section::MonitorHolders(rows) => write_monitor_holders(rows, out),
        Section::HeapDump(dump) => {
            write_heap_dump_begin(dump.objects, dump.bytes, &dump.created, out);
            dump.entries
                .iter()
                .for_each(|entry| write_heap_entry(entry, out));
            write_heap_dump_end(out);
        }
        Section::LockTime {
            total_ms,
            created,
            rows,
        } => write_contention_time(
            &ContentionBlock {
                name: "LOCK TIME",
                titles: LOCK_TIME_TITLES,
                titles_always: true,
            },
            *total_ms,
            created,
            rows,
            out,
        ),
    }
}

/// The file header: `<version>, created <ctime>`, a blank line, the prelude
/// verbatim, then `\n--------\n\n`.
pub fn write_file_header(version: &str, created: &str, prelude: &str, out: &mut Vec<u8>) {
    put!(
        out,
        "{version}, created {created}\n\n{prelude}\n--------\n\n"
    );
}

/// A TRACE record: header line and frame lines (`\t<empty>` for no frames).
pub fn write_trace(trace: &TraceSection, out: &mut Vec<u8>) {
    write_trace_head(
        trace.serial,
        trace.thread_serial,
        trace.phase.as_deref(),
        out,
    );
    if trace.frames.is_empty() {
        write_empty_trace(out);
    }
    for frame in &trace.frames {
        write_trace_frame(frame, out);
    }
}

/// A TRACE block's first line. With [`write_trace_frame`] and
/// [`write_empty_trace`], lets a writer that prints many traces over the
/// same frames render each frame line once.
pub fn write_trace_head(
    serial: u32,
    thread_serial: Option<u32>,
    phase: Option<&str>,
    out: &mut Vec<u8>,
) {
    put!(out, "TRACE {serial}:");
    if let Some(thread) = thread_serial {
        put!(out, " (thread={thread})");
    }
    if let Some(phase) = phase {
        put!(out, " (from {phase} phase of JVM)");
    }
    out.push(b'\n');
}

/// The line a TRACE block without frames has.
pub fn write_empty_trace(out: &mut Vec<u8>) {
    out.extend_from_slice(b"\t<empty>\n");
}

/// One frame line of a TRACE block.
pub fn write_trace_frame(frame: &TraceFrame, out: &mut Vec<u8>) {
    let TraceFrame {
        class_name,
        method_name,
        source_file,
        line,
    } = frame;
    put!(
        out,
        "\t{class_name}.{method_name}({source_file}:{})\n",
        LineText(*line)
    );
}

/// The line part of a frame line.
struct LineText(LineInfo);

impl fmt::Display for LineText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            LineInfo::Line(n) => write!(f, "{n}"),
            LineInfo::Unknown => f.write_str("Unknown line"),
            LineInfo::Compiled => f.write_str("Compiled method"),
            LineInfo::Native => f.write_str("Native method"),
        }
    }
}

fn write_sites(sites: &SitesSection, out: &mut Vec<u8>) {
    put!(
        out,
        "SITES BEGIN (ordered by {}) {}\n",
        sites.ordered_by,
        sites.created
    );
    put!(out, "{}\n{}\n", SITES_TITLES[0], SITES_TITLES[1]);
    for row in &sites.rows {
        put!(
            out,
            "{:5} {}% {}% {:9} {:4} {:9} {:5} {:5} {}\n",
            row.rank,
            Percent(row.self_percent),
            Percent(row.accum_percent),
            row.live_bytes,
            row.live_objects,
            row.allocated_bytes,
            row.allocated_objects,
            row.trace_serial,
            row.class_name
        );
    }
    out.extend_from_slice(b"SITES END\n");
}

/// SITES TOTALS: two labelled rows under their titles, columns widening
/// as the counts need.
fn write_sites_totals(totals: &SitesTotals, out: &mut Vec<u8>) {
    put!(out, "SITES TOTALS BEGIN\n{SITES_TOTALS_TITLES}\n");
    for (label, counts) in SITES_TOTALS_LABELS
        .iter()
        .zip([&totals.all, &totals.below_cutoff])
    {
        put!(
            out,
            "{label:<12} {:>11} {:>10} {:>15} {:>14} {:>6}\n",
            counts.live_bytes,
            counts.live_objects,
            counts.allocated_bytes,
            counts.allocated_objects,
            counts.rows
        );
    }
    out.extend_from_slice(b"SITES TOTALS END\n");
}

/// The printed title of a CPU block.
pub fn cpu_title(title: CpuTitle) -> &'static str {
    match title {
        CpuTitle::Samples => "CPU SAMPLES",
        CpuTitle::TimeMs => "CPU TIME (ms)",
    }
}

fn write_cpu(cpu: &CpuSection, out: &mut Vec<u8>) {
    let title = cpu_title(cpu.title);
    put!(
        out,
        "{title} BEGIN (total = {}) {}\n",
        cpu.total,
        cpu.created
    );
    if !cpu.rows.is_empty() {
        put!(out, "{CPU_TITLES}\n");
    }
    for row in &cpu.rows {
        write_rank_columns(&row.columns(), out);
        match &row.method {
            Some(method) => put!(out, " {method}\n"),
            None => out.extend_from_slice(b" <empty trace>\n"),
        }
    }
    put!(out, "{title} END\n");
}

/// Column titles of WALL STATES, aligned over its rows.
pub const WALL_STATES_TITLES: &str =
    " trace    running     native    blocked    waiting   sleeping";

fn write_wall_states(rows: &[crate::wall_states::WallStateRow], out: &mut Vec<u8>) {
    out.extend_from_slice(b"WALL STATES BEGIN\n");
    put!(out, "{WALL_STATES_TITLES}\n");
    for row in rows {
        put!(out, "{:6}", row.trace_serial);
        for count in row.counts {
            put!(out, " {count:10}");
        }
        out.push(b'\n');
    }
    out.extend_from_slice(b"WALL STATES END\n");
}

/// The `%4u %5.2f%% %5.2f%% %7u %5u` columns shared by CPU and MONITOR TIME rows.
fn write_rank_columns(cols: &RankColumns, out: &mut Vec<u8>) {
    let RankColumns {
        rank,
        self_percent,
        accum_percent,
        count,
        trace_serial,
    } = *cols;
    let (self_percent, accum_percent) = (Percent(self_percent), Percent(accum_percent));
    put!(
        out,
        "{rank:4} {self_percent}% {accum_percent}% {count:7} {trace_serial:5}"
    );
}

fn write_old_prof(rows: &[OldProfRow], out: &mut Vec<u8>) {
    put!(out, "{OLD_PROF_TITLES}\n");
    for row in rows {
        let callee = row.callee.as_deref().unwrap_or("<unknown callee>");
        let caller = row.caller.as_deref().unwrap_or("<unknown caller>");
        put!(out, "{} {callee} {caller} {}\n", row.count, row.time);
    }
}

fn write_monitor_dump(threads: &[MonitorThread], monitors: &[MonitorInfo], out: &mut Vec<u8>) {
    out.extend_from_slice(b"MONITOR DUMP BEGIN\n");
    for t in threads {
        put!(
            out,
            "    THREAD {}, trace {}, status: {}\n",
            t.thread_serial,
            t.trace_serial,
            t.status
        );
    }
    for m in monitors {
        if m.owner_thread_serial == 0 {
            // The agent prints no owner line (and no entry count) for an unowned monitor.
            put!(out, "    MONITOR {} unowned\n", m.signature);
        } else {
            put!(out, "    MONITOR {}\n", m.signature);
            put!(
                out,
                "\towner: thread {}, entry count: {}\n",
                m.owner_thread_serial,
                m.entry_count
            );
        }
        write_waiters("waiting to enter:", &m.waiting_to_enter, out);
        write_waiters("waiting to be notified:", &m.waiting_to_be_notified, out);
    }
    out.extend_from_slice(b"MONITOR DUMP END\n");
}

/// `\t<label> thread 1, thread 2`: a comma after every waiter but the last.
fn write_waiters(label: &str, waiters: &[u32], out: &mut Vec<u8>) {
    put!(out, "\t{label}");
    for (i, serial) in waiters.iter().enumerate() {
        let comma = if i + 1 < waiters.len() { "," } else { "" };
        put!(out, " {}{comma}", ThreadRef(*serial));
    }
    out.push(b'\n');
}

/// A block of MONITOR TIME's layout: MONITOR TIME itself, or LOCK TIME.
struct ContentionBlock {
    /// `MONITOR TIME`: the block is `<name> BEGIN ...` ... `<name> END`.
    name: &'static str,
    titles: &'static str,
    /// Titles even when the total is 0 ms (MONITOR TIME prints them only
    /// when it is positive, as HPROF did).
    titles_always: bool,
}

fn write_contention_time(
    block: &ContentionBlock,
    total_ms: u64,
    created: &str,
    rows: &[MonitorTimeRow],
    out: &mut Vec<u8>,
) {
    let name = block.name;
    put!(out, "{name} BEGIN (total = {total_ms} ms) {created}\n");
    if total_ms > 0 || block.titles_always {
        put!(out, "{}\n", block.titles);
    }
    for row in rows {
        write_rank_columns(&row.columns(), out);
        put!(out, " {} (Java)\n", row.monitor);
    }
    put!(out, "{name} END\n");
}

/// MONITOR HOLDERS: `%4u %5u %6u %3u/%-3u %s (Java)` rows under their titles.
fn write_monitor_holders(rows: &[MonitorHolderRow], out: &mut Vec<u8>) {
    put!(out, "MONITOR HOLDERS BEGIN\n{MONITOR_HOLDERS_TITLES}\n");
    for row in rows {
        let seen = format!("{}/{}", row.seen, row.sampled);
        put!(
            out,
            "{:4} {:5} {:6} {seen:>6} {} (Java)\n",
            row.rank,
            row.trace_serial,
            row.holder_trace_serial,
            row.monitor
        );
    }
    out.extend_from_slice(b"MONITOR HOLDERS END\n");
}

/// `HEAP DUMP BEGIN (%u objects, %u bytes) <ctime>`: the first line of a heap
/// dump, for writers that stream the entries one by one.
pub fn write_heap_dump_begin(objects: u64, bytes: u64, created: &str, out: &mut Vec<u8>) {
    put!(
        out,
        "HEAP DUMP BEGIN ({objects} objects, {bytes} bytes) {created}\n"
    );
}

/// `HEAP DUMP END`: the last line of a heap dump.
pub fn write_heap_dump_end(out: &mut Vec<u8>) {
    out.extend_from_slice(b"HEAP DUMP END\n");
}

/// One ROOT/CLS/OBJ/ARR line of a heap dump with its indented sub-lines.
pub fn write_heap_entry(entry: &HeapEntry, out: &mut Vec<u8>) {
    match entry {
        HeapEntry::Root(root) => write_heap_root(root, out),
        HeapEntry::Class { .. } => write_class(entry, out),
        HeapEntry::Object {
            object_id,
            size,
            trace_serial,
            class_name,
            class_id,
            fields,
        } => {
            put!(
                out,
                "OBJ {object_id:x} (sz={size}, trace={trace_serial}, class={class_name}@{class_id:x})\n"
            );
            for (name, value) in fields {
                // The agent lines values up with one extra tab for short names.
                let sep = if name.len() < 8 { "\t" } else { "" };
                put!(out, "\t{name}\t{sep}{value:x}\n");
            }
        }
        HeapEntry::ObjectArray {
            object_id,
            size,
            trace_serial,
            length,
            array_class_name,
            array_class_id,
            elements,
        } => {
            put!(
                out,
                "ARR {object_id:x} (sz={size}, trace={trace_serial}, nelems={length}, \
                 elem type={array_class_name}@{array_class_id:x})\n"
            );
            for (index, value) in elements {
                put!(out, "\t[{index}]\t\t{value:x}\n");
            }
        }
        HeapEntry::PrimitiveArray {
            object_id,
            size,
            trace_serial,
            length,
            array_class_name,
        } => put!(
            out,
            "ARR {object_id:x} (sz={size}, trace={trace_serial}, nelems={length}, elem type={array_class_name})\n"
        ),
    }
}

fn write_heap_root(root: &HeapRoot, out: &mut Vec<u8>) {
    match root {
        HeapRoot::Thread {
            object_id,
            thread_serial,
            trace_serial,
        } => {
            put!(
                out,
                "ROOT {object_id:x} (kind=<thread>, id={thread_serial}, trace={trace_serial})\n"
            )
        }
        HeapRoot::ThreadBlock {
            object_id,
            thread_serial,
        } => {
            put!(
                out,
                "ROOT {object_id:x} (kind=<thread block>, thread={thread_serial})\n"
            )
        }
        HeapRoot::JniGlobal {
            object_id,
            ref_id,
            trace_serial,
        } => {
            put!(
                out,
                "ROOT {object_id:x} (kind=<JNI global ref>, id={ref_id:x}, trace={trace_serial})\n"
            )
        }
        HeapRoot::JniLocal {
            object_id,
            thread_serial,
            frame,
        } => {
            put!(
                out,
                "ROOT {object_id:x} (kind=<JNI local ref>, thread={thread_serial}, frame={frame})\n"
            )
        }
        HeapRoot::JavaStack {
            object_id,
            thread_serial,
            frame,
        } => {
            put!(
                out,
                "ROOT {object_id:x} (kind=<Java stack>, thread={thread_serial}, frame={frame})\n"
            )
        }
        HeapRoot::NativeStack {
            object_id,
            thread_serial,
        } => {
            put!(
                out,
                "ROOT {object_id:x} (kind=<native stack>, thread={thread_serial})\n"
            )
        }
        HeapRoot::SystemClass { object_id, name } => {
            put!(
                out,
                "ROOT {object_id:x} (kind=<system class>, name={name})\n"
            )
        }
        HeapRoot::BusyMonitor { object_id } => {
            put!(out, "ROOT {object_id:x} (kind=<busy monitor>)\n")
        }
        HeapRoot::Unknown { object_id } => put!(out, "ROOT {object_id:x} (kind=<unknown>)\n"),
    }
}

fn write_class(entry: &HeapEntry, out: &mut Vec<u8>) {
    let HeapEntry::Class {
        object_id,
        name,
        trace_serial,
        super_id,
        loader_id,
        signers_id,
        domain_id,
        statics,
        constant_pool,
    } = entry
    else {
        unreachable!("write_class called with another entry");
    };
    put!(
        out,
        "CLS {object_id:x} (name={name}, trace={trace_serial})\n"
    );
    let links = [
        ("super", super_id),
        ("loader", loader_id),
        ("signers", signers_id),
        ("domain", domain_id),
    ];
    for (label, id) in links.into_iter().filter(|(_, id)| **id != 0) {
        put!(out, "\t{label}\t\t{id:x}\n");
    }
    for (field, value) in statics {
        put!(out, "\tstatic {field}\t{value:x}\n");
    }
    for (index, value) in constant_pool {
        put!(out, "\tconstant pool entry {index}\t{value:x}\n");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(section: &Section) -> String {
        let mut out = Vec::new();
        write_section(section, &mut out);
        String::from_utf8(out).unwrap()
    }

    fn frame(class_name: &str, method_name: &str, source_file: &str, line: LineInfo) -> TraceFrame {
        TraceFrame {
            class_name: class_name.into(),
            method_name: method_name.into(),
            source_file: source_file.into(),
            line,
        }
    }

    fn site(
        rank: u64,
        pct: (f64, f64),
        live: (u64, u64),
        alloc: (u64, u64),
        trace: u32,
        name: &str,
    ) -> SiteRow {
        SiteRow {
            rank,
            self_percent: pct.0,
            accum_percent: pct.1,
            live_bytes: live.0,
            live_objects: live.1,
            allocated_bytes: alloc.0,
            allocated_objects: alloc.1,
            trace_serial: trace,
            class_name: name.into(),
        }
    }

    #[test]
    fn percent_matches_c() {
        let shown: Vec<String> = [7.74, 0.1, 100.0, 0.125, f64::NAN, -f64::NAN, f64::INFINITY]
            .iter()
            .map(|p| Percent(*p).to_string())
            .collect();
        assert_eq!(
            shown,
            [
                " 7.74", " 0.10", "100.00", " 0.12", "  nan", " -nan", "  inf"
            ]
        );
    }

    #[test]
    fn file_header() {
        let header = Section::Header {
            version: "JAVA PROFILE 1.0.1".into(),
            created: "Sat Mar 27 10:51:47 2021".into(),
            prelude: "Prelude line\n".into(),
        };
        assert_eq!(
            text(&header),
            "JAVA PROFILE 1.0.1, created Sat Mar 27 10:51:47 2021\n\nPrelude line\n\n--------\n\n"
        );
    }

    #[test]
    fn thread_lines() {
        let start = Section::ThreadStart {
            object_id: 0x5000018d,
            thread_serial: 200002,
            name: "HPROF gc_finish watcher".into(),
            group: "system".into(),
        };
        assert_eq!(
            text(&start),
            "THREAD START (obj=5000018d, id = 200002, name=\"HPROF gc_finish watcher\", group=\"system\")\n"
        );
        assert_eq!(
            text(&Section::ThreadEnd {
                thread_serial: 200001
            }),
            "THREAD END (id = 200001)\n"
        );
    }

    #[test]
    fn trace_records() {
        let trace = TraceSection {
            serial: 301366,
            thread_serial: Some(200009),
            phase: None,
            frames: vec![
                frame(
                    "sun.nio.ch.EPollArrayWrapper",
                    "epollWait",
                    "EPollArrayWrapper.java",
                    LineInfo::Unknown,
                ),
                frame(
                    "sun.nio.ch.EPollArrayWrapper",
                    "poll",
                    "EPollArrayWrapper.java",
                    LineInfo::Line(269),
                ),
            ],
        };
        assert_eq!(
            text(&Section::Trace(trace)),
            "TRACE 301366: (thread=200009)\n\
             \tsun.nio.ch.EPollArrayWrapper.epollWait(EPollArrayWrapper.java:Unknown line)\n\
             \tsun.nio.ch.EPollArrayWrapper.poll(EPollArrayWrapper.java:269)\n"
        );
        let empty = TraceSection {
            serial: 300000,
            thread_serial: None,
            phase: None,
            frames: vec![],
        };
        assert_eq!(text(&Section::Trace(empty)), "TRACE 300000:\n\t<empty>\n");
        let early = TraceSection {
            serial: 300001,
            thread_serial: Some(200001),
            phase: Some("start".into()),
            frames: vec![frame(
                "X",
                "<Unknown Method>",
                "<Unknown Source>",
                LineInfo::Native,
            )],
        };
        assert_eq!(
            text(&Section::Trace(early)),
            "TRACE 300001: (thread=200001) (from start phase of JVM)\n\
             \tX.<Unknown Method>(<Unknown Source>:Native method)\n"
        );
    }

    #[test]
    fn sites_block() {
        let sites = SitesSection {
            ordered_by: "live bytes".into(),
            created: "Sat Mar 27 10:51:58 2021".into(),
            rows: vec![
                site(
                    1,
                    (7.74, 7.74),
                    (99016, 387),
                    (99016, 387),
                    300938,
                    "byte[]",
                ),
                site(
                    94,
                    (0.10, 60.05),
                    (1296, 3),
                    (1296, 3),
                    300000,
                    "java.lang.Thread",
                ),
                site(
                    159,
                    (0.04, 64.08),
                    (544, 1),
                    (544, 1),
                    300000,
                    "java.lang.StringCoding$StringDecoder",
                ),
            ],
        };
        assert_eq!(
            text(&Section::Sites(sites)),
            "SITES BEGIN (ordered by live bytes) Sat Mar 27 10:51:58 2021\n\
             \x20         percent          live          alloc'ed  stack class\n\
             \x20rank   self  accum     bytes objs     bytes  objs trace name\n\
             \x20   1  7.74%  7.74%     99016  387     99016   387 300938 byte[]\n\
             \x20  94  0.10% 60.05%      1296    3      1296     3 300000 java.lang.Thread\n\
             \x20 159  0.04% 64.08%       544    1       544     1 300000 java.lang.StringCoding$StringDecoder\n\
             SITES END\n"
        );
    }

    #[test]
    fn cpu_blocks() {
        let row = CpuRow {
            rank: 1,
            self_percent: 21.16,
            accum_percent: 21.16,
            count: 201,
            trace_serial: 300142,
            method: Some("onitama.ai.Searcher$MoveGenerator.generate".into()),
        };
        let empty_trace = CpuRow {
            rank: 2,
            method: None,
            ..row.clone()
        };
        let cpu = CpuSection {
            title: CpuTitle::Samples,
            total: 950,
            created: "Sun Jan 15 20:11:57 2017".into(),
            rows: vec![row, empty_trace],
        };
        assert_eq!(
            text(&Section::Cpu(cpu)),
            "CPU SAMPLES BEGIN (total = 950) Sun Jan 15 20:11:57 2017\n\
             rank   self  accum   count trace method\n\
             \x20  1 21.16% 21.16%     201 300142 onitama.ai.Searcher$MoveGenerator.generate\n\
             \x20  2 21.16% 21.16%     201 300142 <empty trace>\n\
             CPU SAMPLES END\n"
        );
        let no_rows = CpuSection {
            title: CpuTitle::TimeMs,
            total: 0,
            created: "Thu Nov 02 17:11:21 2017".into(),
            rows: vec![],
        };
        assert_eq!(
            text(&Section::Cpu(no_rows)),
            "CPU TIME (ms) BEGIN (total = 0) Thu Nov 02 17:11:21 2017\nCPU TIME (ms) END\n"
        );
    }

    #[test]
    fn old_prof_table() {
        let rows = vec![
            OldProfRow {
                count: 12,
                callee: Some("java.lang.String.charAt(I)C".into()),
                caller: None,
                time: 3,
            },
            OldProfRow {
                count: 1,
                callee: None,
                caller: Some("A.b()V".into()),
                time: 0,
            },
        ];
        assert_eq!(
            text(&Section::OldProf(rows)),
            "count callee caller time\n\
             12 java.lang.String.charAt(I)C <unknown caller> 3\n\
             1 <unknown callee> A.b()V 0\n"
        );
    }

    #[test]
    fn monitor_lines() {
        let wait = Section::MonitorWait {
            signature: "Ljava/lang/Object;".into(),
            timeout_ms: 0,
            thread_serial: 200001,
        };
        assert_eq!(
            text(&wait),
            "WAIT: MONITOR Ljava/lang/Object;, timeout=0, thread 200001\n"
        );
        let waited = Section::MonitorWaited {
            signature: "Ljava/lang/Object;".into(),
            waited_ms: 1002,
            thread_serial: 0,
        };
        assert_eq!(
            text(&waited),
            "WAITED: MONITOR Ljava/lang/Object;, time_waited=1002, <unknown thread>\n"
        );
    }

    #[test]
    fn monitor_dump_comma_rules() {
        let thread = |serial, trace, status: &str| MonitorThread {
            thread_serial: serial,
            trace_serial: trace,
            status: status.into(),
        };
        let dump = Section::MonitorDump {
            threads: vec![thread(200001, 300012, "CW"), thread(200002, 300000, "R")],
            monitors: vec![
                MonitorInfo {
                    signature: "Ljava/lang/Object;".into(),
                    owner_thread_serial: 200001,
                    entry_count: 1,
                    waiting_to_enter: vec![200003, 200004],
                    waiting_to_be_notified: vec![],
                },
                MonitorInfo {
                    signature: "LLock;".into(),
                    owner_thread_serial: 0,
                    entry_count: 0,
                    waiting_to_enter: vec![200005],
                    waiting_to_be_notified: vec![0, 200006, 200007],
                },
            ],
        };
        assert_eq!(
            text(&dump),
            "MONITOR DUMP BEGIN\n\
             \x20   THREAD 200001, trace 300012, status: CW\n\
             \x20   THREAD 200002, trace 300000, status: R\n\
             \x20   MONITOR Ljava/lang/Object;\n\
             \towner: thread 200001, entry count: 1\n\
             \twaiting to enter: thread 200003, thread 200004\n\
             \twaiting to be notified:\n\
             \x20   MONITOR LLock; unowned\n\
             \twaiting to enter: thread 200005\n\
             \twaiting to be notified: <unknown thread>, thread 200006, thread 200007\n\
             MONITOR DUMP END\n"
        );
    }

    #[test]
    fn monitor_time_block() {
        let row = MonitorTimeRow {
            rank: 1,
            self_percent: 100.0,
            accum_percent: 100.0,
            count: 3,
            trace_serial: 300020,
            monitor: "java.lang.Object".into(),
        };
        let time = Section::MonitorTime {
            total_ms: 5,
            created: "Mon Jun  9 20:33:05 2014".into(),
            rows: vec![row],
        };
        assert_eq!(
            text(&time),
            "MONITOR TIME BEGIN (total = 5 ms) Mon Jun  9 20:33:05 2014\n\
             rank   self  accum   count trace monitor\n\
             \x20  1 100.00% 100.00%       3 300020 java.lang.Object (Java)\n\
             MONITOR TIME END\n"
        );
    }

    #[test]
    fn sites_totals_block() {
        let counts = |rows, live_bytes, allocated_bytes| SiteCounts {
            rows,
            live_bytes,
            live_objects: rows,
            allocated_bytes,
            allocated_objects: 2 * rows,
        };
        // The titles end where the rows' columns end.
        let titles = format!(
            "{:<12} {:>11} {:>10} {:>15} {:>14} {:>6}",
            "", "live bytes", "live objs", "alloc'ed bytes", "alloc'ed objs", "rows"
        );
        assert_eq!(SITES_TOTALS_TITLES, titles);
        let totals = Section::SitesTotals(SitesTotals {
            all: counts(14, 20000216, 220000216),
            below_cutoff: counts(12, 0, 12345678901234567890),
        });
        assert_eq!(
            text(&totals),
            "SITES TOTALS BEGIN\n\
             \x20             live bytes  live objs  alloc'ed bytes  alloc'ed objs   rows\n\
             every site      20000216         14       220000216             28     14\n\
             below cutoff           0         12 12345678901234567890             24     12\n\
             SITES TOTALS END\n"
        );
    }

    #[test]
    fn monitor_holders_block() {
        let holders = Section::MonitorHolders(vec![MonitorHolderRow {
            rank: 1,
            trace_serial: 300020,
            holder_trace_serial: 300021,
            seen: 12,
            sampled: 16,
            monitor: "Contention".into(),
        }]);
        assert_eq!(
            text(&holders),
            "MONITOR HOLDERS BEGIN\n\
             rank trace holder   seen monitor\n\
             \x20  1 300020 300021  12/16 Contention (Java)\n\
             MONITOR HOLDERS END\n"
        );
    }

    #[test]
    fn heap_dump_lines() {
        let entries = vec![
            HeapEntry::Root(HeapRoot::Thread {
                object_id: 0,
                thread_serial: 200000,
                trace_serial: 300000,
            }),
            HeapEntry::Root(HeapRoot::ThreadBlock {
                object_id: 0x50000114,
                thread_serial: 200002,
            }),
            HeapEntry::Root(HeapRoot::JniGlobal {
                object_id: 0x50000006,
                ref_id: 0x1a,
                trace_serial: 300000,
            }),
            HeapEntry::Root(HeapRoot::JavaStack {
                object_id: 0x50008c6f,
                thread_serial: 200002,
                frame: 5,
            }),
            HeapEntry::Root(HeapRoot::JniLocal {
                object_id: 1,
                thread_serial: 200002,
                frame: -1,
            }),
            HeapEntry::Root(HeapRoot::NativeStack {
                object_id: 2,
                thread_serial: 200002,
            }),
            HeapEntry::Root(HeapRoot::SystemClass {
                object_id: 3,
                name: "java.lang.String".into(),
            }),
            HeapEntry::Root(HeapRoot::BusyMonitor { object_id: 4 }),
            HeapEntry::Root(HeapRoot::Unknown { object_id: 5 }),
            HeapEntry::Object {
                object_id: 0x50000114,
                size: 96,
                trace_serial: 300001,
                class_name: "java.lang.Thread".into(),
                class_id: 0x50000106,
                fields: vec![
                    ("name".into(), 0x50000116),
                    ("contextClassLoader".into(), 0x50008c53),
                ],
            },
            HeapEntry::ObjectArray {
                object_id: 0x50008c6f,
                size: 16,
                trace_serial: 300000,
                length: 1,
                array_class_name: "java.lang.String[]".into(),
                array_class_id: 0x5000008e,
                elements: vec![(0, 0x500007a5)],
            },
            HeapEntry::PrimitiveArray {
                object_id: 0x50000abc,
                size: 20,
                trace_serial: 300123,
                length: 10,
                array_class_name: "char[]".into(),
            },
            HeapEntry::Class {
                object_id: 0x5000008e,
                name: "java.lang.String[]".into(),
                trace_serial: 300000,
                super_id: 0x50000012,
                loader_id: 0,
                signers_id: 0,
                domain_id: 0x7,
                statics: vec![("CASE_INSENSITIVE_ORDER".into(), 0x5000001f)],
                constant_pool: vec![(12, 0x50000020)],
            },
        ];
        let dump = HeapDumpSection {
            objects: 39793,
            bytes: 2628264,
            created: "Wed Oct  4 13:54:03 2006".into(),
            entries,
        };
        assert_eq!(
            text(&Section::HeapDump(dump)),
            "HEAP DUMP BEGIN (39793 objects, 2628264 bytes) Wed Oct  4 13:54:03 2006\n\
             ROOT 0 (kind=<thread>, id=200000, trace=300000)\n\
             ROOT 50000114 (kind=<thread block>, thread=200002)\n\
             ROOT 50000006 (kind=<JNI global ref>, id=1a, trace=300000)\n\
             ROOT 50008c6f (kind=<Java stack>, thread=200002, frame=5)\n\
             ROOT 1 (kind=<JNI local ref>, thread=200002, frame=-1)\n\
             ROOT 2 (kind=<native stack>, thread=200002)\n\
             ROOT 3 (kind=<system class>, name=java.lang.String)\n\
             ROOT 4 (kind=<busy monitor>)\n\
             ROOT 5 (kind=<unknown>)\n\
             OBJ 50000114 (sz=96, trace=300001, class=java.lang.Thread@50000106)\n\
             \tname\t\t50000116\n\
             \tcontextClassLoader\t50008c53\n\
             ARR 50008c6f (sz=16, trace=300000, nelems=1, elem type=java.lang.String[]@5000008e)\n\
             \t[0]\t\t500007a5\n\
             ARR 50000abc (sz=20, trace=300123, nelems=10, elem type=char[])\n\
             CLS 5000008e (name=java.lang.String[], trace=300000)\n\
             \tsuper\t\t50000012\n\
             \tdomain\t\t7\n\
             \tstatic CASE_INSENSITIVE_ORDER\t5000001f\n\
             \tconstant pool entry 12\t50000020\n\
             HEAP DUMP END\n"
        );
    }

    #[test]
    fn field_names_of_eight_characters_get_one_tab() {
        let obj = |name: &str| HeapEntry::Object {
            object_id: 1,
            size: 16,
            trace_serial: 300000,
            class_name: "X".into(),
            class_id: 2,
            fields: vec![(name.into(), 0xab)],
        };
        let mut out = Vec::new();
        write_heap_entry(&obj("sevenCh"), &mut out);
        write_heap_entry(&obj("eightChr"), &mut out);
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("\tsevenCh\t\tab\n"), "{text:?}");
        assert!(text.contains("\teightChr\tab\n"), "{text:?}");
    }
}
