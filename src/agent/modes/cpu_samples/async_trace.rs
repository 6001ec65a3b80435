//! Stacks taken where the CPU is: inside the SIGPROF handler, on the thread
//! itself, with HotSpot's `AsyncGetCallTrace` (AGCT, exported by libjvm;
//! `prims/forte.cpp`). It walks the frames that were executing when the
//! signal came (compiled, interpreted, a virtual thread's frames mounted on
//! its carrier), not the frame of the next safepoint poll, as JVMTI's
//! GetStackTrace does: no safepoint bias.
//!
//! The handler must not allocate, lock, or call JNI/JVMTI, so the frames go
//! into a ring of records allocated once at load time: a record is claimed
//! with a compare-and-swap (free -> writing), filled by AGCT, and published
//! (writing -> ready); the sampler thread copies ready ones out and frees
//! them ([`drain`]). When no record is free, no AGCT is present, or the
//! walk cannot be guarded, [`capture`] says so and the caller counts the
//! sample the old way (its stack taken later through JVMTI): no sample is
//! lost. The walk runs under the fault guard of `modes/cpu_samples/fault_guard.c`.
//!
//! This module is one of the few that talk to the JVM and the OS with
//! unsafe code (with `jvm/mod.rs` and `modes/cpu_samples/cpu_timers.rs`).

use crate::agent::jvm::{RawFrame, libjvm, native_thread};
use std::cell::UnsafeCell;
use std::ffi::{c_int, c_void};
use std::sync::OnceLock;
use std::sync::atomic::{
    AtomicBool, AtomicI32, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering,
};

/// `ASGCT_CallFrame` (`prims/forte.cpp`): for a Java frame the bytecode
/// index (-1 when unknown), for a native method -3; and the jmethodID.
#[repr(C)]
#[derive(Clone, Copy)]
struct CallFrame {
    bci: i32,
    method: *mut c_void,
}

/// `ASGCT_CallTrace`: the thread's JNIEnv, the frame count (or a negative
/// reason), and the frames to fill.
#[repr(C)]
struct CallTrace {
    env: *mut c_void,
    num_frames: i32,
    frames: *mut CallFrame,
}

/// AsyncGetCallTrace(trace, depth, ucontext), with its trace as an untyped
/// pointer, as the guard calls it.
type Walk = unsafe extern "C" fn(*mut c_void, c_int, *mut c_void);

unsafe extern "C" {
    fn hprof_fault_guard_install() -> c_int;
    fn hprof_walk_stack(
        walk: Walk,
        trace: *mut c_void,
        depth: c_int,
        ucontext: *mut c_void,
    ) -> c_int;
    #[cfg(test)]
    fn hprof_guarded_read(address: *mut c_void) -> c_int;
    fn hprof_faulting_walk(trace: *mut c_void, depth: c_int, ucontext: *mut c_void);
}

/// How the signal handler walks stacks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Walker {
    /// AsyncGetCallTrace, if libjvm exports it.
    AsyncGetCallTrace,
    /// A walk that always faults (a test of the guard).
    Faulting,
}

/// Why a stack could not be walked: AGCT's codes (`prims/forte.cpp`, the
/// "forte quality kit" names), and the guard's own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Unwalkable {
    /// `ticks_no_Java_frame` (0 frames): native code or the VM with no Java
    /// frame on the stack.
    NoJavaFrames,
    /// `ticks_GC_active` (-2).
    Gc,
    /// `ticks_unknown_not_Java` / `ticks_not_walkable_not_Java` (-3, -4):
    /// in the VM, a stub or native code, with frames AGCT cannot walk.
    NotJava,
    /// `ticks_unknown_Java` / `ticks_not_walkable_Java` (-5, -6): in Java
    /// code at a point AGCT cannot decipher (a frame being built).
    UnknownJava,
    /// `ticks_deopt` (-9): the thread is being deoptimized.
    Deopt,
    /// `ticks_safepoint` (-10), `ticks_unknown_state` (-7), `ticks_thread_exit`
    /// (-8) and any other code.
    Unknown,
    /// The walk faulted and the guard caught it.
    Fault,
}

impl Unwalkable {
    /// The pseudo-frame's class name in traces: `<GC>`, `<no Java frames>`...
    pub fn frame_name(self) -> &'static str {
        match self {
            Self::NoJavaFrames => "<no Java frames>",
            Self::Gc => "<GC>",
            Self::NotJava => "<not walkable: VM or native>",
            Self::UnknownJava => "<not walkable: Java>",
            Self::Deopt => "<deoptimization>",
            Self::Unknown => "<unknown>",
            Self::Fault => "<fault in stack walk>",
        }
    }

    /// A distinct small number per kind, for trace keys.
    pub fn code(self) -> u64 {
        self as u64
    }
}

/// AGCT's `ticks_no_class_load` (-1): the JVM refuses because ClassLoad
/// events are off (AGCT needs them on, so that jmethodIDs can exist).
const REFUSED: i32 = -1;
/// Marks a walk the guard caught faulting (no AGCT code is this low).
const FAULTED: i32 = i32::MIN;

/// What one sample became.
pub enum Taken {
    /// The frames, innermost first (jmethodID, bytecode index or -1).
    Frames(Vec<RawFrame>),
    Unwalkable(Unwalkable),
    /// AGCT refused (ClassLoad events off): take the stack through JVMTI.
    Refused,
}

/// One drained sample: whose, how many CPU intervals, what.
pub struct Sample {
    pub serial: u32,
    /// The key of the virtual thread mounted on the thread then (see
    /// `cpu_timers::note_mounted`), 0 for none or not tracked.
    pub mounted: u64,
    pub slot: usize,
    pub weight: u32,
    pub taken: Taken,
}

const FREE: u32 = 0;
const WRITING: u32 = 1;
const READY: u32 = 2;

struct Record {
    state: AtomicU32,
    serial: AtomicU32,
    mounted: AtomicU64,
    slot: AtomicU32,
    weight: AtomicU32,
    num_frames: AtomicI32,
}

/// The preallocated records and their frames (`depth` per record).
struct Ring {
    records: Box<[Record]>,
    frames: Box<[UnsafeCell<CallFrame>]>,
    depth: usize,
    cursor: AtomicUsize,
}

// SAFETY: a record's frames are written only by the thread that claimed the
// record (state WRITING, won by compare-and-swap) and read only by the
// sampler once it saw READY (release/acquire): never two at once.
unsafe impl Sync for Ring {}
// SAFETY: as above; the ring is only ever shared, in a static.
unsafe impl Send for Ring {}

/// Records tried from the cursor before a sample falls back.
const CLAIM_TRIES: usize = 8;
/// The most frames the ring holds in all: 256 Ki frames of 16 bytes, 4 MiB,
/// whatever `depth` is (records = this / depth, from 256 to 4096).
const RING_FRAMES: usize = 256 * 1024;

static RING: OnceLock<Ring> = OnceLock::new();
/// AsyncGetCallTrace, once found and the guard installed (0 until then).
static WALKER: AtomicUsize = AtomicUsize::new(0);

/// Threads that can be timed at once (a CPU timer and an owner slot
/// each); more are not sampled (reported once).
pub const MAX_SLOTS: usize = 16 * 1024;

/// Who owns each timer slot: its JNIEnv (AGCT needs the thread's own),
/// kernel thread id and thread serial, set before its timer starts (on the
/// thread itself, or for a thread running at an attach on the attaching
/// one). The handler checks the thread id: a signal from a timer just
/// deleted may still arrive after its slot was given to another thread.
static OWNER_ENV: [AtomicPtr<c_void>; MAX_SLOTS] =
    [const { AtomicPtr::new(std::ptr::null_mut()) }; MAX_SLOTS];
static OWNER_TID: [AtomicI32; MAX_SLOTS] = [const { AtomicI32::new(0) }; MAX_SLOTS];
static OWNER_SERIAL: [AtomicU32; MAX_SLOTS] = [const { AtomicU32::new(0) }; MAX_SLOTS];
/// The key of the virtual thread each slot's thread runs now (0 for none),
/// kept by `cpu_timers::note_mounted` when virtual threads are named.
static MOUNTED: [AtomicU64; MAX_SLOTS] = [const { AtomicU64::new(0) }; MAX_SLOTS];
/// Whether the handler has walked Java frames on each slot's thread since
/// it took the slot ([`has_walked`]).
static WALKED: [AtomicBool; MAX_SLOTS] = [const { AtomicBool::new(false) }; MAX_SLOTS];

/// At load time: finds AsyncGetCallTrace and allocates the ring for stacks
/// `depth` frames deep. An error says why stacks will be taken through
/// JVMTI instead.
pub fn prepare(depth: u32, walker: Walker) -> Result<(), String> {
    let walker = match walker {
        Walker::AsyncGetCallTrace => find_async_get_call_trace()
            .ok_or("libjvm does not export AsyncGetCallTrace (not HotSpot?)")?,
        Walker::Faulting => hprof_faulting_walk as Walk as usize,
    };
    let depth = (depth.max(1) as usize).min(i32::MAX as usize);
    let records = (RING_FRAMES / depth).clamp(256, 4096);
    let ring = Ring {
        records: (0..records)
            .map(|_| Record {
                state: AtomicU32::new(FREE),
                serial: AtomicU32::new(0),
                mounted: AtomicU64::new(0),
                slot: AtomicU32::new(0),
                weight: AtomicU32::new(0),
                num_frames: AtomicI32::new(0),
            })
            .collect(),
        frames: (0..records * depth)
            .map(|_| {
                UnsafeCell::new(CallFrame {
                    bci: 0,
                    method: std::ptr::null_mut(),
                })
            })
            .collect(),
        depth,
        cursor: AtomicUsize::new(0),
    };
    let _ = RING.set(ring);
    PENDING_WALKER.store(walker, Ordering::Release);
    Ok(())
}

/// AsyncGetCallTrace, found by [`prepare`], until [`activate`] uses it.
static PENDING_WALKER: AtomicUsize = AtomicUsize::new(0);

/// At VM init (the JVM's own SIGSEGV/SIGBUS handlers are in place): the
/// fault guard goes in front of them and the handler starts using AGCT.
pub fn activate() -> Result<(), String> {
    let walker = PENDING_WALKER.load(Ordering::Acquire);
    if walker == 0 {
        return Err("AsyncGetCallTrace was not found".into());
    }
    // Under -Xcheck:jni HotSpot checks that its signal handlers are its
    // own and prints "Warning: SIGSEGV handler modified!" on the program's
    // standard output: no guard there, and so no walk in the handler.
    if libjvm::checks_jni() == libjvm::BoolFlag::Value(true) {
        return Err("-Xcheck:jni checks the JVM's signal handlers".into());
    }
    // SAFETY: installs async-signal-safe handlers that chain to the
    // previous ones (see modes/cpu_samples/fault_guard.c); called once, from VM init.
    if unsafe { hprof_fault_guard_install() } != 0 {
        return Err("cannot install the stack walk's fault guard".into());
    }
    WALKER.store(walker, Ordering::Release);
    Ok(())
}

fn find_async_get_call_trace() -> Option<usize> {
    libjvm::symbol(c"AsyncGetCallTrace").map(|found| found as usize)
}

/// Before a timer starts on `slot` for the thread `tid`: the thread's
/// JNIEnv and serial, for the handler.
pub fn own_slot(slot: usize, tid: libc::pid_t, jni_env: *mut c_void, serial: u32) {
    if slot >= MAX_SLOTS {
        return;
    }
    OWNER_ENV[slot].store(jni_env, Ordering::Relaxed);
    OWNER_SERIAL[slot].store(serial, Ordering::Relaxed);
    MOUNTED[slot].store(0, Ordering::Relaxed);
    WALKED[slot].store(false, Ordering::Relaxed);
    OWNER_TID[slot].store(tid, Ordering::Release);
}

/// The kernel id of the thread that owns `slot` (0 for none).
pub fn owner_tid(slot: usize) -> libc::pid_t {
    OWNER_TID
        .get(slot)
        .map_or(0, |tid| tid.load(Ordering::Acquire))
}

/// As a virtual thread mounts (`key`) on the slot's thread, or unmounts
/// (0): the samples its timer takes from now on are that virtual thread's.
pub fn set_mounted(slot: usize, key: u64) {
    if let Some(mounted) = MOUNTED.get(slot) {
        mounted.store(key, Ordering::Relaxed);
    }
}

/// True once the handler walked Java frames on the slot's thread.
pub fn has_walked(slot: usize) -> bool {
    WALKED.get(slot).is_some_and(|w| w.load(Ordering::Relaxed))
}

/// Once the slot's timer is deleted: the slot no longer leads to its thread.
pub fn disown_slot(slot: usize) {
    if slot < MAX_SLOTS {
        OWNER_TID[slot].store(0, Ordering::Release);
        OWNER_ENV[slot].store(std::ptr::null_mut(), Ordering::Relaxed);
    }
}

/// In the SIGPROF handler: walks the interrupted thread's stack into a free
/// record. False when the sample must be counted the other way (no AGCT,
/// the slot not this thread's, no free record, no guard free).
pub fn capture(slot: usize, weight: u32, ucontext: *mut c_void) -> bool {
    let walker = WALKER.load(Ordering::Acquire);
    let Some(ring) = RING.get() else {
        return false;
    };
    if walker == 0 || slot >= MAX_SLOTS {
        return false;
    }
    let tid = native_thread::current_tid();
    if OWNER_TID[slot].load(Ordering::Acquire) != tid {
        return false;
    }
    let env = OWNER_ENV[slot].load(Ordering::Relaxed);
    if env.is_null() {
        return false;
    }
    let Some(index) = ring.claim() else {
        return false;
    };
    let record = &ring.records[index];
    let mut trace = CallTrace {
        env,
        num_frames: 0,
        frames: ring.frames[index * ring.depth].get(),
    };
    // SAFETY: `walker` is AsyncGetCallTrace, whose C signature is
    // (ASGCT_CallTrace*, jint, void*): the same as `Walk` with the trace
    // untyped. `trace.frames` points at this record's `depth` frames,
    // which this thread alone may write while it holds the record; the
    // ucontext is the one the kernel gave this handler. The guard catches
    // a fault inside the walk (and inside the step out of a stub, see
    // modes/cpu_samples/fault_guard.c).
    let outcome = unsafe {
        let walk: Walk = std::mem::transmute::<usize, Walk>(walker);
        hprof_walk_stack(walk, (&raw mut trace).cast(), ring.depth as c_int, ucontext)
    };
    let num_frames = match outcome {
        0 => trace.num_frames,
        1 => FAULTED,
        _ => {
            record.state.store(FREE, Ordering::Release);
            return false;
        }
    };
    record.serial.store(
        OWNER_SERIAL[slot].load(Ordering::Relaxed),
        Ordering::Relaxed,
    );
    record
        .mounted
        .store(MOUNTED[slot].load(Ordering::Relaxed), Ordering::Relaxed);
    record.slot.store(slot as u32, Ordering::Relaxed);
    record.weight.store(weight, Ordering::Relaxed);
    record.num_frames.store(num_frames, Ordering::Relaxed);
    record.state.store(READY, Ordering::Release);
    if num_frames > 0 {
        WALKED[slot].store(true, Ordering::Relaxed);
    }
    true
}

impl Ring {
    /// A free record, now marked as being written; None if the few tried
    /// are all taken.
    fn claim(&self) -> Option<usize> {
        let start = self.cursor.fetch_add(1, Ordering::Relaxed);
        (0..CLAIM_TRIES)
            .map(|i| (start + i) % self.records.len())
            .find(|&i| {
                self.records[i]
                    .state
                    .compare_exchange(FREE, WRITING, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
            })
    }
}

/// On the sampler thread: every sample taken since the last call.
pub fn drain() -> Vec<Sample> {
    let Some(ring) = RING.get() else {
        return Vec::new();
    };
    let mut samples = Vec::new();
    for (index, record) in ring.records.iter().enumerate() {
        if record.state.load(Ordering::Acquire) != READY {
            continue;
        }
        let num_frames = record.num_frames.load(Ordering::Relaxed);
        let taken = match num_frames {
            n if n > 0 => {
                let n = (n as usize).min(ring.depth);
                let frames = &ring.frames[index * ring.depth..index * ring.depth + n];
                Taken::Frames(
                    frames
                        .iter()
                        // SAFETY: READY was seen with acquire ordering after
                        // the writer's release: its writes are complete and
                        // nobody writes the record until it is FREE again.
                        .map(|cell| unsafe { *cell.get() })
                        .map(|f| {
                            (
                                f.method as u64,
                                if f.bci < 0 { -1 } else { i64::from(f.bci) },
                            )
                        })
                        .collect(),
                )
            }
            0 => Taken::Unwalkable(Unwalkable::NoJavaFrames),
            REFUSED => Taken::Refused,
            -2 => Taken::Unwalkable(Unwalkable::Gc),
            -3 | -4 => Taken::Unwalkable(Unwalkable::NotJava),
            -5 | -6 => Taken::Unwalkable(Unwalkable::UnknownJava),
            -9 => Taken::Unwalkable(Unwalkable::Deopt),
            FAULTED => Taken::Unwalkable(Unwalkable::Fault),
            _ => Taken::Unwalkable(Unwalkable::Unknown),
        };
        samples.push(Sample {
            serial: record.serial.load(Ordering::Relaxed),
            mounted: record.mounted.load(Ordering::Relaxed),
            slot: record.slot.load(Ordering::Relaxed) as usize,
            weight: record.weight.load(Ordering::Relaxed),
            taken,
        });
        record.state.store(FREE, Ordering::Release);
    }
    samples
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_guard_catches_a_fault_and_lets_a_good_read_through() {
        // SAFETY: installs the guard in this test process (chaining to
        // whatever handles SIGSEGV: the default action).
        assert_eq!(unsafe { hprof_fault_guard_install() }, 0);
        let mut word = 7u64;
        // SAFETY: reads a live local through the guard.
        let good = unsafe { hprof_guarded_read((&raw mut word).cast()) };
        assert_eq!(good, 0);
        // SAFETY: address 8 is never mapped; the guard catches the fault.
        let bad = unsafe { hprof_guarded_read(8 as *mut c_void) };
        assert_eq!(bad, 1, "the fault was caught");
        // And again: the fault signal was unblocked on the way out.
        // SAFETY: as above.
        let again = unsafe { hprof_guarded_read(8 as *mut c_void) };
        assert_eq!(again, 1);
    }
}
