//! Typed sections of the ASCII `java.hprof.txt` format, as HPROF's
//! hprof_io.c printed them.
//!
//! The writer turns each section into exactly the bytes HPROF printed; the
//! reader parses those bytes back into the same structures.

/// The line number part of a frame line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineInfo {
    /// A line number from the method's line table.
    Line(u32),
    /// `Unknown line` (no table, native method, `lineno=n`).
    Unknown,
    /// `Compiled method` (never produced under JVMTI, accepted when reading).
    Compiled,
    /// `Native method` (never produced under JVMTI, accepted when reading).
    Native,
}

/// One frame line of a TRACE record: `\t<class>.<method>(<source>:<line>)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceFrame {
    /// Dotted class name, e.g. `java.lang.String`.
    pub class_name: String,
    /// Method name, `<Unknown Method>` when unknown.
    pub method_name: String,
    /// Source file, `<Unknown Source>` when unknown.
    pub source_file: String,
    /// Line number, or why there is none.
    pub line: LineInfo,
}

/// `TRACE 300001: (thread=200001)` and its frame lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceSection {
    /// The trace's serial number (`TRACE 300001:`), which other sections cite.
    pub serial: u32,
    /// Present only with `thread=y`.
    pub thread_serial: Option<u32>,
    /// JVMTI phase name when the trace was taken outside the live phase.
    pub phase: Option<String>,
    /// Innermost first. Empty prints `\t<empty>`.
    pub frames: Vec<TraceFrame>,
}

/// One row of the SITES block.
#[derive(Debug, Clone, PartialEq)]
pub struct SiteRow {
    /// `rank`: 1-based position in the block's order.
    pub rank: u64,
    /// `self`: the site's share of all live bytes, in percent as printed
    /// (`%5.2f`), e.g. 7.74.
    pub self_percent: f64,
    /// `accum`: running sum of the `self` column down to this row.
    pub accum_percent: f64,
    /// `live bytes`: bytes of the site's objects still alive.
    pub live_bytes: u64,
    /// `live objs`: the site's objects still alive.
    pub live_objects: u64,
    /// `alloc'ed bytes`: bytes allocated at the site.
    pub allocated_bytes: u64,
    /// `alloc'ed objs`: objects allocated at the site.
    pub allocated_objects: u64,
    /// `stack trace`: serial of the TRACE where the objects were allocated.
    pub trace_serial: u32,
    /// `class name`: dotted name of the allocated objects' class, e.g. `byte[]`.
    pub class_name: String,
}

/// `SITES BEGIN (ordered by live bytes) <ctime>` ... `SITES END`.
#[derive(Debug, Clone, PartialEq)]
pub struct SitesSection {
    /// `live bytes` or `allocated bytes`.
    pub ordered_by: String,
    /// The ctime string without its newline, e.g. `Sat Mar 27 10:51:58 2021`.
    pub created: String,
    /// The rows, in rank order.
    pub rows: Vec<SiteRow>,
}

/// The counts of a set of SITES rows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SiteCounts {
    /// How many rows (one per site: allocating trace and class).
    pub rows: u64,
    /// Bytes of their objects still alive.
    pub live_bytes: u64,
    /// Their objects still alive.
    pub live_objects: u64,
    /// Bytes allocated at them.
    pub allocated_bytes: u64,
    /// Objects allocated at them.
    pub allocated_objects: u64,
}

/// `SITES TOTALS BEGIN` ... `SITES TOTALS END`, hprof-rs's addition after
/// each SITES block: the totals of every site, which the block's rows do
/// not add up to when `cutoff` left rows out, and what it left out.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SitesTotals {
    /// Every site, listed or not (`every site`).
    pub all: SiteCounts,
    /// The rows the cutoff left out of the SITES block (`below cutoff`).
    pub below_cutoff: SiteCounts,
}

/// Which CPU block this is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CpuTitle {
    /// `CPU SAMPLES`
    Samples,
    /// `CPU TIME (ms)`
    TimeMs,
}

/// One row of a CPU SAMPLES / CPU TIME block.
#[derive(Debug, Clone, PartialEq)]
pub struct CpuRow {
    /// `rank`: 1-based position.
    pub rank: u64,
    /// `self`: the trace's share of the total, in percent as printed.
    pub self_percent: f64,
    /// `accum`: running sum of the `self` column down to this row.
    pub accum_percent: f64,
    /// `count`: samples of the trace (CPU SAMPLES) or its calls (CPU TIME).
    pub count: u64,
    /// `trace`: the TRACE serial.
    pub trace_serial: u32,
    /// `class.method` of the top frame; `None` prints `<empty trace>`.
    pub method: Option<String>,
}

/// The leading columns that CPU rows and MONITOR TIME rows share
/// (`%4u %5.2f%% %5.2f%% %7u %5u`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RankColumns {
    /// 1-based rank.
    pub rank: u64,
    /// This row's share, as printed.
    pub self_percent: f64,
    /// Running sum of the shares down to this row.
    pub accum_percent: f64,
    /// Samples, calls or contended entries.
    pub count: u64,
    /// Trace the row belongs to.
    pub trace_serial: u32,
}

impl CpuRow {
    /// The shared leading columns of this row.
    pub fn columns(&self) -> RankColumns {
        let CpuRow {
            rank,
            self_percent,
            accum_percent,
            count,
            trace_serial,
            ..
        } = *self;
        RankColumns {
            rank,
            self_percent,
            accum_percent,
            count,
            trace_serial,
        }
    }

    /// A row from its leading columns and its method (`None` = `<empty trace>`).
    pub fn from_columns(columns: RankColumns, method: Option<String>) -> Self {
        let RankColumns {
            rank,
            self_percent,
            accum_percent,
            count,
            trace_serial,
        } = columns;
        CpuRow {
            rank,
            self_percent,
            accum_percent,
            count,
            trace_serial,
            method,
        }
    }
}

/// `CPU SAMPLES BEGIN (total = N) <ctime>` ... `CPU SAMPLES END`.
#[derive(Debug, Clone, PartialEq)]
pub struct CpuSection {
    /// `CPU SAMPLES` or `CPU TIME (ms)`.
    pub title: CpuTitle,
    /// `total = N`: samples (CPU SAMPLES) or milliseconds (CPU TIME).
    pub total: u64,
    /// The ctime string of the BEGIN line.
    pub created: String,
    /// The rows, in rank order.
    pub rows: Vec<CpuRow>,
}

/// What the BEGIN line of `cpu=wall`'s CPU SAMPLES ends with, after the
/// time stamp (HPROF's readers take the rest of the line as the date).
pub const WALL_CLOCK_MARK: &str = "(wall clock: every thread, whatever its state)";

impl CpuSection {
    /// Whether these are `cpu=wall`'s wall-clock samples.
    pub fn is_wall_clock(&self) -> bool {
        self.title == CpuTitle::Samples && self.created.ends_with(WALL_CLOCK_MARK)
    }
}

/// One row of the `cpu=old` table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OldProfRow {
    /// `count`: the number of calls.
    pub count: u64,
    /// `class.method(signature)`; `None` prints `<unknown callee>`.
    pub callee: Option<String>,
    /// `class.method(signature)` of the caller; `None` prints `<unknown caller>`.
    pub caller: Option<String>,
    /// `time`: milliseconds spent in those calls, callees included.
    pub time: u64,
}

/// A thread line inside MONITOR DUMP.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MonitorThread {
    /// `THREAD N`: the thread's serial.
    pub thread_serial: u32,
    /// `trace N`: the TRACE serial of the thread's stack at the dump.
    pub trace_serial: u32,
    /// e.g. `R`, `CW`, `native|R`.
    pub status: String,
}

/// A monitor inside MONITOR DUMP.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MonitorInfo {
    /// Raw JVM signature, e.g. `Ljava/lang/Object;`.
    pub signature: String,
    /// `owner: thread N`; 0 prints the monitor as `unowned`.
    pub owner_thread_serial: u32,
    /// `entry count`: how many times the owner has entered the monitor.
    pub entry_count: u32,
    /// `waiting to enter:` thread serials (0 prints `<unknown thread>`).
    pub waiting_to_enter: Vec<u32>,
    /// `waiting to be notified:` thread serials (0 prints `<unknown thread>`).
    pub waiting_to_be_notified: Vec<u32>,
}

/// One row of MONITOR TIME.
#[derive(Debug, Clone, PartialEq)]
pub struct MonitorTimeRow {
    /// `rank`: 1-based position.
    pub rank: u64,
    /// `self`: the row's share of the total waiting time, in percent as printed.
    pub self_percent: f64,
    /// `accum`: running sum of the `self` column down to this row.
    pub accum_percent: f64,
    /// `count`: how many times threads waited.
    pub count: u64,
    /// `trace`: TRACE serial of the waiting threads' stack.
    pub trace_serial: u32,
    /// Dotted class name of the monitor; printed with ` (Java)` after it.
    pub monitor: String,
}

impl MonitorTimeRow {
    /// The shared leading columns of this row.
    pub fn columns(&self) -> RankColumns {
        let MonitorTimeRow {
            rank,
            self_percent,
            accum_percent,
            count,
            trace_serial,
            ..
        } = *self;
        RankColumns {
            rank,
            self_percent,
            accum_percent,
            count,
            trace_serial,
        }
    }

    /// A row from its leading columns and the monitor's class name.
    pub fn from_columns(columns: RankColumns, monitor: String) -> Self {
        let RankColumns {
            rank,
            self_percent,
            accum_percent,
            count,
            trace_serial,
        } = columns;
        MonitorTimeRow {
            rank,
            self_percent,
            accum_percent,
            count,
            trace_serial,
            monitor,
        }
    }
}

/// One row of MONITOR HOLDERS, hprof-rs's addition to HPROF's output: for
/// the MONITOR TIME row of the same rank, the trace of the monitor's owner
/// when contention on it began.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MonitorHolderRow {
    /// The rank of the MONITOR TIME row this completes.
    pub rank: u64,
    /// That row's trace (the waiting threads').
    pub trace_serial: u32,
    /// The owner's trace seen most often.
    pub holder_trace_serial: u32,
    /// How many of the sampled contentions found that trace...
    pub seen: u32,
    /// ...of how many were sampled.
    pub sampled: u32,
    /// Dotted class name of the monitor; printed with ` (Java)` after it.
    pub monitor: String,
}

/// A root line inside HEAP DUMP.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeapRoot {
    /// `ROOT %x (kind=<thread>, id=%u, trace=%u)`
    Thread {
        /// The rooted object's id (hex after `ROOT`): the thread object.
        object_id: u64,
        /// `id=`: the thread's serial.
        thread_serial: u32,
        /// `trace=`: a TRACE serial.
        trace_serial: u32,
    },
    /// `ROOT %x (kind=<thread block>, thread=%u)`
    ThreadBlock {
        /// The rooted object's id (hex after `ROOT`).
        object_id: u64,
        /// `thread=`: the thread's serial.
        thread_serial: u32,
    },
    /// `ROOT %x (kind=<JNI global ref>, id=%x, trace=%u)`
    JniGlobal {
        /// The rooted object's id (hex after `ROOT`).
        object_id: u64,
        /// `id=`: the JNI global reference (hex).
        ref_id: u64,
        /// `trace=`: a TRACE serial.
        trace_serial: u32,
    },
    /// `ROOT %x (kind=<JNI local ref>, thread=%u, frame=%d)`
    JniLocal {
        /// The rooted object's id (hex after `ROOT`).
        object_id: u64,
        /// `thread=`: the thread's serial.
        thread_serial: u32,
        /// `frame=`: frame number in the thread's stack (-1: none).
        frame: i32,
    },
    /// `ROOT %x (kind=<Java stack>, thread=%u, frame=%d)`
    JavaStack {
        /// The rooted object's id (hex after `ROOT`).
        object_id: u64,
        /// `thread=`: the thread's serial.
        thread_serial: u32,
        /// `frame=`: frame number in the thread's stack (-1: none).
        frame: i32,
    },
    /// `ROOT %x (kind=<native stack>, thread=%u)`
    NativeStack {
        /// The rooted object's id (hex after `ROOT`).
        object_id: u64,
        /// `thread=`: the thread's serial.
        thread_serial: u32,
    },
    /// `ROOT %x (kind=<system class>, name=%s)`
    SystemClass {
        /// The class object's id (hex after `ROOT`).
        object_id: u64,
        /// `name=`: the dotted class name.
        name: String,
    },
    /// `ROOT %x (kind=<busy monitor>)`
    BusyMonitor {
        /// The rooted object's id (hex after `ROOT`).
        object_id: u64,
    },
    /// `ROOT %x (kind=<unknown>)`
    Unknown {
        /// The rooted object's id (hex after `ROOT`).
        object_id: u64,
    },
}

/// A record line (plus its indented sub-lines) inside HEAP DUMP.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeapEntry {
    /// A `ROOT` line.
    Root(HeapRoot),
    /// `CLS %x (name=%s, trace=%u)` and its sub-lines.
    Class {
        /// The class object's id (hex after `CLS`).
        object_id: u64,
        /// `name=`: the dotted class name.
        name: String,
        /// `trace=`: a TRACE serial.
        trace_serial: u32,
        /// The `super` sub-line's id (0: no such line).
        super_id: u64,
        /// The `loader` sub-line's id (0: no such line).
        loader_id: u64,
        /// The `signers` sub-line's id (0: no such line).
        signers_id: u64,
        /// The `domain` (protection domain) sub-line's id (0: no such line).
        domain_id: u64,
        /// `static <name>\t<id>` lines, in order.
        statics: Vec<(String, u64)>,
        /// `constant pool entry <index>\t<id>` lines, in order.
        constant_pool: Vec<(u32, u64)>,
    },
    /// `OBJ %x (sz=%u, trace=%u, class=%s@%x)` and its reference fields.
    Object {
        /// The object's id (hex after `OBJ`).
        object_id: u64,
        /// `sz=`: the object's size in bytes.
        size: u64,
        /// `trace=`: TRACE serial of the allocation site.
        trace_serial: u32,
        /// `class=`: the dotted class name, before the `@`.
        class_name: String,
        /// `class=`: the class object's id, after the `@` (hex).
        class_id: u64,
        /// Non-null reference fields, (name, value), in order.
        fields: Vec<(String, u64)>,
    },
    /// `ARR %x (sz=%u, trace=%u, nelems=%u, elem type=%s@%x)` and `[i]` lines.
    ObjectArray {
        /// The array's id (hex after `ARR`).
        object_id: u64,
        /// `sz=`: the array's size in bytes.
        size: u64,
        /// `trace=`: TRACE serial of the allocation site.
        trace_serial: u32,
        /// `nelems=`: the number of elements.
        length: u64,
        /// `elem type=`: the dotted array class name (e.g. `java.lang.String[]`), before the `@`.
        array_class_name: String,
        /// `elem type=`: the array class object's id, after the `@` (hex).
        array_class_id: u64,
        /// Non-null elements, (index, value).
        elements: Vec<(u64, u64)>,
    },
    /// `ARR %x (sz=%u, trace=%u, nelems=%u, elem type=%s)`
    PrimitiveArray {
        /// The array's id (hex after `ARR`).
        object_id: u64,
        /// `sz=`: the array's size in bytes.
        size: u64,
        /// `trace=`: TRACE serial of the allocation site.
        trace_serial: u32,
        /// `nelems=`: the number of elements.
        length: u64,
        /// `elem type=`: the array type's name, e.g. `char[]`.
        array_class_name: String,
    },
}

impl HeapEntry {
    /// The dotted class name and size in bytes of an object or array
    /// (`OBJ` or `ARR`); `None` for roots and classes.
    pub fn class_and_size(&self) -> Option<(&str, u64)> {
        match self {
            HeapEntry::Object {
                class_name, size, ..
            } => Some((class_name, *size)),
            HeapEntry::ObjectArray {
                array_class_name,
                size,
                ..
            }
            | HeapEntry::PrimitiveArray {
                array_class_name,
                size,
                ..
            } => Some((array_class_name, *size)),
            HeapEntry::Root(_) | HeapEntry::Class { .. } => None,
        }
    }
}

/// `HEAP DUMP BEGIN (%u objects, %u bytes) <ctime>` ... `HEAP DUMP END`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeapDumpSection {
    /// The number of objects on the BEGIN line.
    pub objects: u64,
    /// The number of bytes on the BEGIN line.
    pub bytes: u64,
    /// The ctime string of the BEGIN line.
    pub created: String,
    /// The ROOT, CLS, OBJ and ARR lines with their sub-lines, in file order.
    pub entries: Vec<HeapEntry>,
}

/// One section (or run-time line) of an ASCII profile, in file order.
#[derive(Debug, Clone, PartialEq)]
pub enum Section {
    /// `JAVA PROFILE 1.0.1, created <ctime>`, the prelude text, `--------`.
    Header {
        /// The header string, e.g. `JAVA PROFILE 1.0.1`.
        version: String,
        /// The ctime string after `created`.
        created: String,
        /// The text between the blank line after the header line and `--------`.
        prelude: String,
    },
    /// `THREAD START (obj=%x, id = %d, name="%s", group="%s")`
    ThreadStart {
        /// `obj=`: the thread object's id (hex).
        object_id: u64,
        /// `id =`: the thread's serial, which other sections cite.
        thread_serial: u32,
        /// `name=`: the thread's name.
        name: String,
        /// `group=`: the name of the thread's group.
        group: String,
    },
    /// `THREAD END (id = %d)`
    ThreadEnd {
        /// `id =`: the thread's serial.
        thread_serial: u32,
    },
    /// `TRACE N:` and its frame lines.
    Trace(TraceSection),
    /// `SITES BEGIN` ... `SITES END`.
    Sites(SitesSection),
    /// `SITES TOTALS BEGIN` ... `SITES TOTALS END` (hprof-rs's addition,
    /// after SITES).
    SitesTotals(SitesTotals),
    /// `CPU SAMPLES BEGIN` or `CPU TIME (ms) BEGIN` ... `END`.
    Cpu(CpuSection),
    /// `WALL STATES BEGIN` ... `WALL STATES END` (hprof-rs's addition,
    /// after the CPU SAMPLES of `cpu=wall`): each trace's samples by state.
    WallStates(Vec<crate::wall_states::WallStateRow>),
    /// The `cpu=old` table, headed by `count callee caller time`.
    OldProf(Vec<OldProfRow>),
    /// `WAIT: MONITOR %s, timeout=%d, thread %d`
    MonitorWait {
        /// Raw JVM signature of the monitor object's class.
        signature: String,
        /// `timeout=`: the wait's timeout in milliseconds (0: none).
        timeout_ms: i64,
        /// `thread N`: the waiting thread's serial (0 prints `<unknown thread>`).
        thread_serial: u32,
    },
    /// `WAITED: MONITOR %s, time_waited=%d, thread %d`
    MonitorWaited {
        /// Raw JVM signature of the monitor object's class.
        signature: String,
        /// `time_waited=`: how long the thread waited, in milliseconds.
        waited_ms: i64,
        /// `thread N`: the waiting thread's serial (0 prints `<unknown thread>`).
        thread_serial: u32,
    },
    /// `MONITOR DUMP BEGIN` ... `MONITOR DUMP END`
    MonitorDump {
        /// The `THREAD` lines: each thread, its trace and status.
        threads: Vec<MonitorThread>,
        /// The `MONITOR` entries, with their owner and waiters.
        monitors: Vec<MonitorInfo>,
    },
    /// `MONITOR TIME BEGIN (total = %u ms) <ctime>` ... `MONITOR TIME END`
    MonitorTime {
        /// `total = N ms`: the waiting time of all rows.
        total_ms: u64,
        /// The ctime string of the BEGIN line.
        created: String,
        /// The rows, in rank order.
        rows: Vec<MonitorTimeRow>,
    },
    /// `MONITOR HOLDERS BEGIN` ... `MONITOR HOLDERS END` (hprof-rs's
    /// addition, after MONITOR TIME).
    MonitorHolders(Vec<MonitorHolderRow>),
    /// `HEAP DUMP BEGIN` ... `HEAP DUMP END`.
    HeapDump(HeapDumpSection),
    /// `LOCK TIME BEGIN (total = %u ms) <ctime>` ... `LOCK TIME END`
    /// (hprof-rs's addition, after MONITOR TIME): time threads spent blocked
    /// acquiring java.util.concurrent locks, rows laid out as MONITOR
    /// TIME's, each naming the lock's class.
    LockTime {
        /// `total = N ms`: the blocked time of all rows.
        total_ms: u64,
        /// The ctime string of the BEGIN line.
        created: String,
        /// The rows, in rank order.
        rows: Vec<MonitorTimeRow>,
    },
}
