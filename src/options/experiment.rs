//! Bits of the hidden `X=` option: test and measuring aids, read by the
//! agent code that each one changes. None of them is documented for users.

/// Makes the ThreadStart callback panic: proves that a panic is contained
/// and reported, never unwound into the JVM.
pub const PANIC_IN_THREAD_START: i64 = 0x100;

/// Makes the allocation callback return at once: what the JVM's event
/// posting alone costs (the floor of exact allocation tracking; the SITES
/// table stays empty).
pub const ALLOC_EVENT_ONLY: i64 = 0x200;

/// Makes the allocation callback take the stack and return (event posting
/// plus stack walk).
pub const ALLOC_STACK_ONLY: i64 = 0x400;

/// Makes heap=sites counted in the bytecode tag every object for its live
/// sample, never sampling: what exact live columns per site cost that way.
pub const LIVE_SAMPLE_EVERY_OBJECT: i64 = 0x800;

/// Makes heap=sites counted in the bytecode keep no live sample (live
/// columns shared by what each site allocated): what the counting alone
/// costs, beside the default.
pub const LIVE_SAMPLE_OFF: i64 = 0x1000;

/// With LIVE_SAMPLE_EVERY_OBJECT, tags every object without finding its
/// site (no stack walk; the live columns are then wrong): what an event
/// and a tag per object cost alone, the floor of exact live columns from
/// JVMTI tags.
pub const LIVE_SAMPLE_WITHOUT_SITES: i64 = 0x2000;

/// Makes heap dumps go through the HotSpotDiagnostic MXBean, the fallback
/// for a JVM without a known management table (a test aid for that path).
pub const HEAP_DUMP_THROUGH_BEAN: i64 = 0x8000;

/// Makes cpu=samples take every stack through JVMTI at the thread's next
/// safepoint (the path used when AsyncGetCallTrace is absent): the old
/// path, beside the new one, for the safepoint-bias comparison and the
/// benchmarks.
pub const SAMPLES_THROUGH_JVMTI: i64 = 0x10000;

/// Makes the signal handler's stack walk read an unmapped address instead
/// of calling AsyncGetCallTrace: proves that the fault guard catches a
/// fault inside the walk (the sample is counted under `<fault in stack
/// walk>`) and the program goes on.
pub const FAULTING_STACK_WALK: i64 = 0x20000;

/// Makes cpu=samples leave HotSpot's `DebugNonSafepoints` off (neither the
/// flag nor CompiledMethodLoad events): what recording debug information at
/// every compiled instruction costs, measured.
pub const SAMPLES_WITHOUT_DEBUG_NON_SAFEPOINTS: i64 = 0x40000;

/// Makes the output file's first write sleep 7 s, longer than the writer's
/// stall limit, as a disk under heavy writeback can: proves that a slow
/// file is written to the end, never abandoned.
pub const SLOW_FILE_WRITE: i64 = 0x80000;

/// Attached to a running JVM (`hprof-rs attach`), heap=sites counts in the
/// byte code of every loaded class, retransformed at the attach, instead of
/// sampling: only to measure that design's cost against sampling's
/// (docs/decisions.md); its stop leaves the classes rewritten.
pub const ATTACH_BYTECODE_COUNTING: i64 = 0x10_0000;

/// Makes every dump say on standard error how many classes the tables know
/// as unloaded and loaded, and how many frame keys they hold: proves that
/// what is kept by class or method shrinks when classes unload. heap=sites
/// also says how many allocations it counted by walking their stacks.
pub const TABLE_SIZES_AT_DUMPS: i64 = 0x20_0000;

/// heap=sites retransforms the classes the JVM loaded before VM init, at
/// VM init, instead of rewriting them as they load (through a gate in
/// java.lang that passes nothing on until VM init): the design before,
/// kept to measure the start-up of the two (docs/decisions.md).
pub const RETRANSFORM_AT_VM_INIT: i64 = 0x40_0000;

/// heap=sites changes no class loaded before VM init: no early class-load
/// hook (so the class-data-sharing archive stays in use), no field in
/// java.lang.Thread, no retransformation at VM init. Those classes'
/// allocations then go uncounted: only to measure the start-up of a design
/// that leaves them unchanged at start (docs/decisions.md). Meant for the
/// default counting: with calling contexts (`alloc_count=bytecode`),
/// java.lang.Thread still gets their field, through the early hook.
pub const EARLY_CLASSES_UNCOUNTED: i64 = 0x80_0000;

/// cpu=times,timing=calls rewrites every class as usual but never engages the Tracker,
/// so each hook returns at once: what the calls into it alone cost, the
/// floor of timing every call through them (docs/decisions.md).
pub const TIMES_CALLS_ONLY: i64 = 0x100_0000;

/// cpu=times,timing=calls injects only `Tracker.CallCount` on entry, which counts the
/// call in the thread's own table and reads no clock; nothing is reported:
/// what counting every call exactly costs without timing it, the floor of a
/// design that counts calls in the byte code and takes times from samples
/// (docs/decisions.md).
pub const TIMES_CALL_COUNTS_ONLY: i64 = 0x200_0000;

/// As `TIMES_CALL_COUNTS_ONLY`, with the counting method one the JIT may
/// inline into the program's methods (`Tracker.CallCountInlined`): the
/// floor of counting in the method itself (docs/decisions.md).
pub const TIMES_CALL_COUNTS_INLINED: i64 = 0x1000_0000;

/// heap=sites leaves the classes loaded before VM init as they load and
/// counts their allocations from the live sample's events while it reports
/// every object; when its budget is spent, an agent thread retransforms
/// those classes so that their code counts, then the sample thins out
/// (`heap_sites/early_hand_over.rs`). The default under `alloc_count=sites`
/// when loaded with the JVM; this bit asks for it under
/// `alloc_count=bytecode` and when attached too.
pub const EARLY_CLASSES_BY_EVENTS: i64 = 0x400_0000;

/// heap=sites rewrites the classes loaded before VM init as they load,
/// through the early class-load hook and its field in java.lang.Thread (the
/// default before 2026-12-02): kept to measure the two
/// designs against each other (docs/decisions.md).
pub const EARLY_HOOK_KEPT: i64 = 0x800_0000;

/// cpu=times' default leaves the Tracker's first-call reports off: a
/// method no sample saw keeps a trace of its own frame (the default before
/// 2026-12-07); kept to measure what the reports cost.
pub const TIMES_NO_FIRST_CALLS: i64 = 0x2000_0000;

/// cpu=times counting calls inlined does not prime the count at VM init
/// (`Tracker.prime()`); kept to measure what priming costs and saves.
pub const TIMES_UNPRIMED: i64 = 0x4000_0000;

/// cpu=times leaves the stacks of the threads the program starts as they
/// are asked for (no `thread_stacks::TIMED_CODE_FACTOR`); kept to measure
/// what the larger stacks cost.
pub const TIMES_STACKS_AS_ASKED: i64 = 0x8000_0000;
