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
    pub line: LineInfo,
}

/// `TRACE 300001: (thread=200001)` and its frame lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceSection {
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
    pub rank: u64,
    /// Percentages as printed (`%5.2f`), e.g. 7.74.
    pub self_percent: f64,
    pub accum_percent: f64,
    pub live_bytes: u64,
    pub live_objects: u64,
    pub allocated_bytes: u64,
    pub allocated_objects: u64,
    pub trace_serial: u32,
    pub class_name: String,
}

/// `SITES BEGIN (ordered by live bytes) <ctime>` ... `SITES END`.
#[derive(Debug, Clone, PartialEq)]
pub struct SitesSection {
    /// `live bytes` or `allocated bytes`.
    pub ordered_by: String,
    /// The ctime string without its newline, e.g. `Sat Mar 27 10:51:58 2021`.
    pub created: String,
    pub rows: Vec<SiteRow>,
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
    pub rank: u64,
    pub self_percent: f64,
    pub accum_percent: f64,
    pub count: u64,
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
    pub title: CpuTitle,
    pub total: u64,
    pub created: String,
    pub rows: Vec<CpuRow>,
}

/// One row of the `cpu=old` table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OldProfRow {
    pub count: u64,
    /// `class.method(signature)`; `None` prints `<unknown callee>`.
    pub callee: Option<String>,
    /// `None` prints `<unknown caller>`.
    pub caller: Option<String>,
    pub time: u64,
}

/// A thread line inside MONITOR DUMP.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MonitorThread {
    pub thread_serial: u32,
    pub trace_serial: u32,
    /// e.g. `R`, `CW`, `native|R`.
    pub status: String,
}

/// A monitor inside MONITOR DUMP.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MonitorInfo {
    /// Raw JVM signature, e.g. `Ljava/lang/Object;`.
    pub signature: String,
    pub owner_thread_serial: u32,
    pub entry_count: u32,
    pub waiting_to_enter: Vec<u32>,
    pub waiting_to_be_notified: Vec<u32>,
}

/// One row of MONITOR TIME.
#[derive(Debug, Clone, PartialEq)]
pub struct MonitorTimeRow {
    pub rank: u64,
    pub self_percent: f64,
    pub accum_percent: f64,
    pub count: u64,
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
        object_id: u64,
        thread_serial: u32,
        trace_serial: u32,
    },
    /// `ROOT %x (kind=<thread block>, thread=%u)`
    ThreadBlock { object_id: u64, thread_serial: u32 },
    /// `ROOT %x (kind=<JNI global ref>, id=%x, trace=%u)`
    JniGlobal {
        object_id: u64,
        ref_id: u64,
        trace_serial: u32,
    },
    /// `ROOT %x (kind=<JNI local ref>, thread=%u, frame=%d)`
    JniLocal {
        object_id: u64,
        thread_serial: u32,
        frame: i32,
    },
    /// `ROOT %x (kind=<Java stack>, thread=%u, frame=%d)`
    JavaStack {
        object_id: u64,
        thread_serial: u32,
        frame: i32,
    },
    /// `ROOT %x (kind=<native stack>, thread=%u)`
    NativeStack { object_id: u64, thread_serial: u32 },
    /// `ROOT %x (kind=<system class>, name=%s)`
    SystemClass { object_id: u64, name: String },
    /// `ROOT %x (kind=<busy monitor>)`
    BusyMonitor { object_id: u64 },
    /// `ROOT %x (kind=<unknown>)`
    Unknown { object_id: u64 },
}

/// A record line (plus its indented sub-lines) inside HEAP DUMP.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeapEntry {
    Root(HeapRoot),
    /// `CLS %x (name=%s, trace=%u)` and its sub-lines.
    Class {
        object_id: u64,
        name: String,
        trace_serial: u32,
        super_id: u64,
        loader_id: u64,
        signers_id: u64,
        domain_id: u64,
        /// `static <name>\t<id>` lines, in order.
        statics: Vec<(String, u64)>,
        /// `constant pool entry <index>\t<id>` lines, in order.
        constant_pool: Vec<(u32, u64)>,
    },
    /// `OBJ %x (sz=%u, trace=%u, class=%s@%x)` and its reference fields.
    Object {
        object_id: u64,
        size: u64,
        trace_serial: u32,
        class_name: String,
        class_id: u64,
        /// Non-null reference fields, (name, value), in order.
        fields: Vec<(String, u64)>,
    },
    /// `ARR %x (sz=%u, trace=%u, nelems=%u, elem type=%s@%x)` and `[i]` lines.
    ObjectArray {
        object_id: u64,
        size: u64,
        trace_serial: u32,
        length: u64,
        array_class_name: String,
        array_class_id: u64,
        /// Non-null elements, (index, value).
        elements: Vec<(u64, u64)>,
    },
    /// `ARR %x (sz=%u, trace=%u, nelems=%u, elem type=%s)`
    PrimitiveArray {
        object_id: u64,
        size: u64,
        trace_serial: u32,
        length: u64,
        array_class_name: String,
    },
}

/// `HEAP DUMP BEGIN (%u objects, %u bytes) <ctime>` ... `HEAP DUMP END`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeapDumpSection {
    pub objects: u64,
    pub bytes: u64,
    pub created: String,
    pub entries: Vec<HeapEntry>,
}

/// One section (or run-time line) of an ASCII profile, in file order.
#[derive(Debug, Clone, PartialEq)]
pub enum Section {
    /// `JAVA PROFILE 1.0.1, created <ctime>`, the prelude text, `--------`.
    Header {
        version: String,
        created: String,
        prelude: String,
    },
    /// `THREAD START (obj=%x, id = %d, name="%s", group="%s")`
    ThreadStart {
        object_id: u64,
        thread_serial: u32,
        name: String,
        group: String,
    },
    /// `THREAD END (id = %d)`
    ThreadEnd {
        thread_serial: u32,
    },
    Trace(TraceSection),
    Sites(SitesSection),
    Cpu(CpuSection),
    /// The `cpu=old` table, headed by `count callee caller time`.
    OldProf(Vec<OldProfRow>),
    /// `WAIT: MONITOR %s, timeout=%d, thread %d`
    MonitorWait {
        signature: String,
        timeout_ms: i64,
        thread_serial: u32,
    },
    /// `WAITED: MONITOR %s, time_waited=%d, thread %d`
    MonitorWaited {
        signature: String,
        waited_ms: i64,
        thread_serial: u32,
    },
    /// `MONITOR DUMP BEGIN` ... `MONITOR DUMP END`
    MonitorDump {
        threads: Vec<MonitorThread>,
        monitors: Vec<MonitorInfo>,
    },
    /// `MONITOR TIME BEGIN (total = %u ms) <ctime>` ... `MONITOR TIME END`
    MonitorTime {
        total_ms: u64,
        created: String,
        rows: Vec<MonitorTimeRow>,
    },
    /// `MONITOR HOLDERS BEGIN` ... `MONITOR HOLDERS END` (hprof-rs's
    /// addition, after MONITOR TIME).
    MonitorHolders(Vec<MonitorHolderRow>),
    HeapDump(HeapDumpSection),
    /// `LOCK TIME BEGIN (total = %u ms) <ctime>` ... `LOCK TIME END`
    /// (hprof-rs's addition, after MONITOR TIME): time threads spent blocked
    /// acquiring java.util.concurrent locks, rows laid out as MONITOR
    /// TIME's, each naming the lock's class.
    LockTime {
        total_ms: u64,
        created: String,
        rows: Vec<MonitorTimeRow>,
    },
}
