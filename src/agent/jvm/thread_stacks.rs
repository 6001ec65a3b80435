//! More stack for the threads a program starts while rewritten code runs.
//!
//! heap=sites' counting and cpu=times' timing make each rewritten method
//! bigger: interpreted frames keep more locals and operands, and a compiled
//! method grown past the JIT's inlining limits no longer has its callees
//! (itself, in a recursion) inlined, so every level takes a frame of its
//! own. A recursion that fitted its thread's stack without the agent would
//! then die of StackOverflowError: the agent would change what the program
//! computes. So while such code runs, every thread the program starts gets
//! a factor times the stack it would have had: [`REWRITTEN_CODE_FACTOR`]
//! under heap=sites, [`TIMED_CODE_FACTOR`] under cpu=times, whose
//! rewritten code may still run in a lower tier of the JIT when the same
//! code runs in C2's without the agent (see there).
//!
//! How: a thread's stack is sized by HotSpot's `JVM_StartThread`, the
//! native behind `Thread.start0()`, from the `stackSize` the `Thread` was
//! made with (0: `-Xss`, the `ThreadStackSize` flag). The agent binds
//! `start0` to its own function (JNI `RegisterNatives`), which writes the
//! larger size into that field, calls `JVM_StartThread` (exported by
//! libjvm.so) and writes the program's value back. The field is
//! `Thread.stackSize` up to JDK 18 and `Thread.holder.stackSize` (a
//! `Thread$FieldHolder`) from JDK 19 on. The main thread is not started
//! this way (the java launcher makes it before any agent loads); threads
//! started before VM init keep their size.
//!
//! Nothing the program reads changes. The new thread may run before
//! `JVM_StartThread` returns to the starter, so it waits in its ThreadStart
//! event, before any Java code of its own, until the starter has written
//! the value back ([`wait_until_sizes_are_written_back`]); the starter
//! itself is inside `Thread.start()` meanwhile, holding the Thread's lock.
//! Where every byte of address space counts (`ulimit -v`, strict
//! overcommit: `sys::address_space_is_limited`), threads keep their size
//! from the start: larger stacks would cost threads that start without the
//! agent. Elsewhere, a thread whose larger stack the system
//! refuses anyway (pthread_create fails) is started again with the size it
//! asked for, and the threads after it keep theirs.
//!
//! Stacks are reserved address space: a page is only backed by memory when
//! the thread's frames reach it, so a thread that never recurses deeply
//! costs what it did (a thread that does overflow fills its larger stack
//! before its StackOverflowError). Bound: the factor, and at most
//! [`MOST_BYTES`] per thread (a thread asking for more gets what it asked
//! for).

use crate::agent::jvm::{self, GlobalRef, kind, libjvm};
use jvmti_bindings::prelude::*;
use parking_lot::Mutex;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

/// How many times its stack a thread gets while heap=sites' rewritten code
/// runs. The deepest recursion measured (java-fixtures/StackDepth.java, JDK
/// 11-25) needed up to 2.5 times the stack once its rewritten method ran
/// compiled with profiling (C1, tier 3), and 1.15 times interpreted.
pub const REWRITTEN_CODE_FACTOR: u32 = 3;

/// How many times its stack a thread gets while cpu=times' rewritten code
/// runs: enough for a recursion running in C1's code under the agent to go
/// as deep as in C2's without it. C2 takes about ten times as long to
/// compile a method with the count inlined (java-fixtures/CompiledDepth.java's
/// `f`: 35-50 ms against 5, `-XX:+CITime`, JDK 21), so a deep call made
/// right after a warm-up can find C2's code in place without the agent and
/// C1's still under it (on a loaded machine, one run in 60 to 120). C1's
/// frames of that recursion under the agent take about ten times the stack
/// per level that C2's take without it (C2 inlines the recursion into
/// itself): on a thread the program made with 512 KiB, C1's code under the
/// agent reached 5,736 levels (JDK 21, 25; 6,556 on 11 and 17) with three
/// times the stack and 20,087 (22,958) with ten, against 17,495 without the
/// agent (13,123 on 11, 17,499 on 17). docs/decisions.md, 2026-12-07.
pub const TIMED_CODE_FACTOR: u32 = 10;

/// The largest stack the agent gives a thread (1 GiB, HotSpot's own limit
/// for `-Xss`).
pub const MOST_BYTES: i64 = 1 << 30;

/// `JVM_StartThread(JNIEnv*, jobject)`: `Thread.start0()`'s native.
type StartThread = unsafe extern "system" fn(*mut jni::JNIEnv, jni::jobject);

/// Where a `Thread` keeps the stack size it was made with.
#[derive(Clone, Copy)]
enum StackSizeField {
    /// JDK 11 to 18: `Thread.stackSize`.
    InThread(jni::jfieldID),
    /// JDK 19 on: `Thread.holder`, then `Thread$FieldHolder.stackSize`.
    InHolder {
        holder: jni::jfieldID,
        size: jni::jfieldID,
    },
}

/// What the bound `start0` needs, found once.
struct Enlarging {
    start_thread: StartThread,
    field: StackSizeField,
    /// `-Xss` in bytes (0: unknown, such threads keep their size).
    default_bytes: i64,
    factor: i64,
}

// SAFETY: field IDs of java.lang.Thread and its holder class, which the boot
// loader never unloads, are valid on every thread for the JVM's whole life;
// the function pointer is libjvm.so's.
unsafe impl Send for Enlarging {}
// SAFETY: as above; nothing in it is ever written after it is set.
unsafe impl Sync for Enlarging {}

static ENLARGING: OnceLock<Enlarging> = OnceLock::new();

/// Held by a start from before it writes the larger size until it has
/// written the program's value back; a starting thread takes it in its
/// ThreadStart when a start is in flight. (Starts are serialised by it:
/// HotSpot serialises them on its Threads_lock anyway.)
static WRITING_BACK: Mutex<()> = Mutex::new(());

/// Set once the system refused a larger stack: from then on threads keep
/// the size they ask for (the room is short; a retry per thread would only
/// print HotSpot's warning twice).
static REFUSED: AtomicBool = AtomicBool::new(false);

/// Starts between their larger size and its write-back.
static STARTS_IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);

/// The longest a new thread waits for its starter's write-back: far above
/// a thread start's few hundred microseconds, so never reached unless the
/// starter is stopped (a debugger); the thread then goes on.
const LONGEST_WAIT: Duration = Duration::from_secs(5);

/// Called first thing in every ThreadStart, on the new thread, before any
/// Java code of its own runs: if a start is writing a Thread's stack size
/// back, waits until it has (the new thread may be that Thread).
pub fn wait_until_sizes_are_written_back() {
    if STARTS_IN_FLIGHT.load(Ordering::Acquire) > 0 {
        drop(WRITING_BACK.try_lock_for(LONGEST_WAIT));
    }
}

/// The stack size to start a thread with, given the `requested` size its
/// `Thread` was made with (0 or less: the JVM's default, `default_bytes`),
/// or None to leave the request as it is.
pub fn enlarged(requested: i64, default_bytes: i64, factor: i64) -> Option<i64> {
    let base = if requested > 0 {
        requested
    } else {
        default_bytes
    };
    if base <= 0 || factor <= 1 || base >= MOST_BYTES {
        return None;
    }
    Some(base.saturating_mul(factor).min(MOST_BYTES))
}

/// From now on every thread the program starts gets `factor` times its
/// stack, unless the address space is limited (they then keep their
/// sizes). An error says what was not found (the threads then keep their
/// sizes too).
pub fn enlarge_new_threads(jni: &JniEnv, factor: u32) -> Result<(), String> {
    if crate::sys::address_space_is_limited() {
        // The documented fallback, not a failure: nothing to report.
        return Ok(());
    }
    if ENLARGING.get().is_none() {
        let found = find(jni, factor)?;
        let _ = ENLARGING.set(found);
    }
    rebind(jni, true)
}

/// Threads started from now on get the stack they ask for again (an
/// attached profile's stop).
pub fn restore_new_threads(jni: &JniEnv) {
    if ENLARGING.get().is_some() {
        let _ = rebind(jni, false);
    }
}

fn find(jni: &JniEnv, factor: u32) -> Result<Enlarging, String> {
    let start_thread = libjvm::symbol(c"JVM_StartThread").ok_or("no JVM_StartThread in libjvm")?;
    // SAFETY: libjvm.so's JVM_StartThread has this signature (jvm.h).
    let start_thread: StartThread = unsafe { std::mem::transmute(start_thread) };
    let thread = jvm::find_class(jni, "java/lang/Thread").ok_or("no java.lang.Thread")?;
    let field = |class: jni::jclass, name: &str, signature: &str| {
        // SAFETY: `class` is a live local reference to a loaded class.
        let id = unsafe { jni.get_field_id(class, name, signature) };
        jvm::clear_exception(jni);
        id
    };
    let thread_class = thread.get().raw() as jni::jclass;
    let field = match field(thread_class, "holder", "Ljava/lang/Thread$FieldHolder;") {
        Some(holder) => {
            let holder_class = jvm::find_class(jni, "java/lang/Thread$FieldHolder")
                .ok_or("no java.lang.Thread$FieldHolder")?;
            let size = field(holder_class.get().raw() as jni::jclass, "stackSize", "J")
                .ok_or("no Thread$FieldHolder.stackSize")?;
            StackSizeField::InHolder { holder, size }
        }
        None => StackSizeField::InThread(
            field(thread_class, "stackSize", "J").ok_or("no Thread.stackSize")?,
        ),
    };
    let default_bytes =
        libjvm::intx_flag(c"ThreadStackSize").map_or(0, |kib| kib.saturating_mul(1024));
    Ok(Enlarging {
        start_thread,
        field,
        default_bytes,
        factor: i64::from(factor),
    })
}

/// `hprof_rs/StartBinder`, compiled by `java-tracker/build.sh` (`javac
/// --release 11`; `tests/bci_run.rs` checks it is fresh).
const START_BINDER_CLASS_FILE: &[u8] =
    include_bytes!("../../../java-tracker/hprof_rs/StartBinder.class");

/// The StartBinder, defined in the boot loader on first use.
static START_BINDER: OnceLock<GlobalRef<kind::Class>> = OnceLock::new();

/// Binds `Thread.start0()` to the enlarging function (`enlarging`) or
/// back to `JVM_StartThread`, through `StartBinder.rebind`: bound from an
/// agent's callback, or any class outside the boot loader, HotSpot would
/// print "Re-registering of platform native method" on the program's
/// standard output (a `jni+resolve` warning).
fn rebind(jni: &JniEnv, enlarging: bool) -> Result<(), String> {
    let binder = match START_BINDER.get() {
        Some(binder) => binder,
        None => {
            let class = jvm::define_boot_class(
                jni,
                "hprof_rs/StartBinder",
                START_BINDER_CLASS_FILE,
                "thread start binder",
            )?;
            let bind = jni::JNINativeMethod {
                name: c"bind".as_ptr() as *mut _,
                signature: c"(Z)V".as_ptr() as *mut _,
                fnPtr: bind_native as *mut std::ffi::c_void,
            };
            // SAFETY: `class` is the StartBinder, held by a global
            // reference; `bind_native` implements its `bind(Z)V`.
            let registered = unsafe { jni.register_natives(class.raw() as jni::jclass, &[bind]) };
            jvm::clear_exception(jni);
            registered.map_err(|code| format!("StartBinder.bind not bound (JNI error {code})"))?;
            START_BINDER.get_or_init(|| class)
        }
    };
    let class = binder.raw() as jni::jclass;
    // SAFETY: `class` is the StartBinder (global reference), which has a
    // static `rebind(Z)V`; the argument is a jboolean.
    unsafe {
        let rebind = jni
            .get_static_method_id(class, "rebind", "(Z)V")
            .ok_or("no StartBinder.rebind")?;
        let argument = jni::jvalue {
            z: jni::jboolean::from(enlarging),
        };
        jni.call_static_void_method(class, rebind, &[argument]);
    }
    if jvm::clear_exception(jni) {
        return Err("Thread.start0 not bound".into());
    }
    Ok(())
}

/// `StartBinder.bind(boolean)`: binds `Thread.start0()V`, from the
/// StartBinder's Java frame.
extern "system" fn bind_native(
    env: *mut jni::JNIEnv,
    _binder: jni::jclass,
    enlarging: jni::jboolean,
) {
    let _ = std::panic::catch_unwind(|| {
        let Some(found) = ENLARGING.get() else {
            return;
        };
        let function = if enlarging != 0 {
            start0_enlarging as *mut std::ffi::c_void
        } else {
            found.start_thread as *mut std::ffi::c_void
        };
        // SAFETY: the JVM calls a native method with its thread's JNIEnv.
        let jni = unsafe { JniEnv::from_raw(env) };
        let Some(thread) = jvm::find_class(&jni, "java/lang/Thread") else {
            return;
        };
        let method = jni::JNINativeMethod {
            name: c"start0".as_ptr() as *mut _,
            signature: c"()V".as_ptr() as *mut _,
            fnPtr: function,
        };
        // SAFETY: `thread` is a live local reference to java.lang.Thread,
        // whose native `start0()V` both functions bound here implement
        // (JNIEnv*, the Thread).
        // (A failure leaves an exception pending, which rebind reports.)
        let _ = unsafe { jni.register_natives(thread.get().raw() as jni::jclass, &[method]) };
    });
}

/// The value the program's `Thread` held, to be written back.
struct Held {
    /// The object holding the field: the Thread, or its holder (then a
    /// local reference `enlarge` made, deleted once written back).
    owner: jni::jobject,
    /// Its `long stackSize` field.
    size: jni::jfieldID,
    value: i64,
}

/// `Thread.start0()` while threads get more stack.
extern "system" fn start0_enlarging(env: *mut jni::JNIEnv, thread: jni::jobject) {
    let Some(enlarging) = ENLARGING.get() else {
        return;
    };
    // SAFETY: the JVM calls a native method with its thread's JNIEnv.
    let jni = unsafe { JniEnv::from_raw(env) };
    // SAFETY: JVM_StartThread called as the JVM calls start0: this thread's
    // JNIEnv and the Thread being started.
    let start = || unsafe { (enlarging.start_thread)(env, thread) };
    STARTS_IN_FLIGHT.fetch_add(1, Ordering::AcqRel);
    let writing_back = WRITING_BACK.lock();
    let held = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        enlarging.enlarge(&jni, thread)
    }))
    .ok()
    .flatten();
    start();
    if let Some(held) = held {
        // A larger stack the system refused (pthread_create failed: an
        // OutOfMemoryError is pending) is not worth the thread: it starts
        // with what it asked for, as it would have without the agent.
        let refused = jni.exception_check();
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            enlarging.write_back(&jni, held)
        }));
        if refused {
            REFUSED.store(true, Ordering::Release);
            jni.exception_clear();
            start();
        }
    }
    drop(writing_back);
    STARTS_IN_FLIGHT.fetch_sub(1, Ordering::AcqRel);
}

impl Enlarging {
    /// Writes the enlarged size into `thread`'s field; what it held.
    fn enlarge(&self, jni: &JniEnv, thread: jni::jobject) -> Option<Held> {
        let (owner, size) = match self.field {
            StackSizeField::InThread(size) => (thread, size),
            StackSizeField::InHolder { holder, size } => {
                // SAFETY: `thread` is the live Thread start0 was called on;
                // `holder` is its `Thread.holder` field.
                let owner = unsafe { jni.get_object_field(thread, holder) };
                if owner.is_null() {
                    return None;
                }
                (owner, size)
            }
        };
        // SAFETY: `owner` is a live Thread or Thread$FieldHolder, `size` its
        // `long stackSize` field.
        let value = unsafe { jni.get_long_field(owner, size) };
        let held = Held { owner, size, value };
        let refused = REFUSED.load(Ordering::Acquire);
        match enlarged(value, self.default_bytes, self.factor).filter(|_| !refused) {
            Some(bigger) => {
                // SAFETY: as above.
                unsafe { jni.set_long_field(owner, size, bigger) };
                Some(held)
            }
            None => {
                self.release(jni, held);
                None
            }
        }
    }

    /// Puts the program's value back (an exception JVM_StartThread threw
    /// is set aside meanwhile and thrown again).
    fn write_back(&self, jni: &JniEnv, held: Held) {
        let pending = jni.exception_occurred();
        if pending.is_some() {
            jni.exception_clear();
        }
        // SAFETY: `held.owner` is the live object `enlarge` read the field
        // `held.size` of.
        unsafe { jni.set_long_field(held.owner, held.size, held.value) };
        if let Some(pending) = pending {
            // SAFETY: the live throwable ExceptionOccurred just returned,
            // thrown again as it was; its local reference is then deleted.
            unsafe {
                let _ = jni.throw(pending);
                jni.delete_local_ref(pending);
            }
        }
        self.release(jni, held);
    }

    /// Deletes the holder's local reference (the Thread is the caller's).
    fn release(&self, jni: &JniEnv, held: Held) {
        if matches!(self.field, StackSizeField::InHolder { .. }) {
            // SAFETY: a local reference GetObjectField made on this thread,
            // used by nothing else.
            unsafe { jni.delete_local_ref(held.owner) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: i64 = 1 << 20;

    #[test]
    fn a_thread_gets_the_factor_times_what_it_asked_or_the_default() {
        assert_eq!(enlarged(0, MIB, 4), Some(4 * MIB));
        assert_eq!(enlarged(-1, MIB, 4), Some(4 * MIB));
        assert_eq!(enlarged(512 * 1024, MIB, 4), Some(2 * MIB));
    }

    #[test]
    fn sizes_stay_under_the_bound_and_unknowns_are_left_alone() {
        assert_eq!(enlarged(512 * MIB, MIB, 4), Some(MOST_BYTES));
        assert_eq!(enlarged(2 * MOST_BYTES, MIB, 4), None, "asked for more");
        assert_eq!(enlarged(0, 0, 4), None, "default unknown");
        assert_eq!(enlarged(MIB, MIB, 1), None, "no factor");
        assert_eq!(enlarged(i64::MAX / 2, MIB, 4), None);
    }
}
