//! The kernel thread id and JNIEnv of a Java thread other than the calling
//! one, read out of HotSpot's own structures: what cpu=samples needs to
//! give a thread already running at an attach a CPU timer of its own
//! (`modes/cpu_samples/sampler.rs`), as a thread makes at its ThreadStart.
//!
//! `java.lang.Thread.eetop` (a private `long`) holds the thread's
//! `JavaThread*` while it runs, and 0 once it ended. The JavaThread's
//! `_osthread` field (listed under `JavaThread` on JDK 11 to 21, under its
//! base class `Thread` on JDK 25) points at its `OSThread`, whose
//! `_thread_id` is the kernel's id of the thread on Linux; their offsets
//! come from the VMStructs table HotSpot exports for the Serviceability
//! Agent (`jvm/libjvm.rs`). The thread's JNIEnv is a field of its
//! JavaThread, at an offset fixed per build that VMStructs does not give:
//! it is learnt once, on the calling thread, as its own JNIEnv less its
//! own `eetop` (as async-profiler does), rather than asked of the JVM in
//! the signal handler (`JavaVM::GetEnv` reads HotSpot's thread-local
//! current thread, which is not promised to be async-signal-safe). All of
//! it is checked on the calling thread first: the id read must be the one
//! the kernel gives it. A JNIEnv read for another thread must hold the JNI
//! function table the calling thread's holds (every JavaThread's does).
//!
//! A thread may end while it is read: its JavaThread is freed once it has
//! cleared `eetop`. So every read of the JVM's memory goes through the
//! kernel (`process_vm_readv` on this process), which fails on an address
//! no longer mapped instead of faulting, and [`NativeThreads::still_running`]
//! reads `eetop` again afterwards: the same value says the thread had not
//! reached its end when the reads were made (a Thread's `eetop`, once 0,
//! never changes again), so what was read was its live JavaThread. Where
//! the kernel refuses such reads (a seccomp filter), the check on the
//! calling thread fails and nothing is read.

use super::{LocalThread, ThreadLongField, libjvm};
use jvmti_bindings::prelude::*;
use std::ffi::c_void;
use std::sync::OnceLock;

/// Where HotSpot keeps a Java thread's kernel id and JNIEnv.
pub struct NativeThreads {
    eetop: ThreadLongField,
    /// The offsets of `_osthread` in JavaThread, of `_thread_id` in
    /// OSThread and of the JNIEnv in JavaThread.
    osthread: usize,
    thread_id: usize,
    jni_env: isize,
    /// The JNI function table every JavaThread's JNIEnv points at.
    functions: usize,
}

/// A running Java thread's kernel id and JNIEnv.
pub struct NativeThread {
    pub tid: libc::pid_t,
    pub jni_env: *mut c_void,
    /// The `eetop` they were read from.
    java_thread: jni::jlong,
}

/// The layout, learnt once per process (it is the build's): the first
/// caller's JNI environment and thread are the ones it is learnt on.
pub fn native_threads(jni: &JniEnv, env: &Jvmti) -> Result<&'static NativeThreads, &'static str> {
    static LEARNT: OnceLock<Result<NativeThreads, String>> = OnceLock::new();
    LEARNT
        .get_or_init(|| NativeThreads::learn(jni, env))
        .as_ref()
        .map_err(String::as_str)
}

impl NativeThreads {
    fn learn(jni: &JniEnv, env: &Jvmti) -> Result<Self, String> {
        let osthread = libjvm::field_offset(c"JavaThread", c"_osthread")
            .or_else(|| libjvm::field_offset(c"Thread", c"_osthread"))
            .ok_or("no Thread::_osthread in the JVM's VMStructs")?;
        let thread_id = libjvm::field_offset(c"OSThread", c"_thread_id")
            .ok_or("no OSThread::_thread_id in the JVM's VMStructs")?;
        let eetop = ThreadLongField::find(jni, "eetop").ok_or("no java.lang.Thread.eetop")?;
        let own = env
            .get_current_thread()
            .ok()
            .filter(|thread| !thread.is_null())
            .ok_or("no current thread")?;
        // SAFETY: the local reference GetCurrentThread just made, deleted
        // only here.
        let own = unsafe { super::OwnedLocal::<super::kind::Thread>::new(Some(jni), own) };
        let own_env = jni.raw() as usize;
        // SAFETY: a JNIEnv's first word is its function table.
        let functions = unsafe { *(own_env as *const usize) };
        let mut layout = Self {
            eetop,
            osthread,
            thread_id,
            jni_env: 0,
            functions,
        };
        let java_thread = layout.java_thread(jni, own.get());
        layout.jni_env = (own_env as isize).wrapping_sub(java_thread as isize);
        let native = layout
            .of(jni, own.get())
            .ok_or("the calling thread's JavaThread cannot be read")?;
        let tid = current_tid();
        if native.tid != tid || native.jni_env as usize != own_env {
            return Err(format!(
                "the calling thread's id reads as {} (the kernel's: {tid})",
                native.tid
            ));
        }
        Ok(layout)
    }

    /// `thread`'s JavaThread* (0 once it ended).
    fn java_thread(&self, jni: &JniEnv, thread: LocalThread<'_>) -> jni::jlong {
        self.eetop.read(jni, thread).unwrap_or(0)
    }

    /// The kernel id and JNIEnv of `thread`, while it runs; None once it
    /// ended (or what was read does not hold together: a thread ending
    /// meanwhile). Call [`Self::still_running`] after using them.
    pub fn of(&self, jni: &JniEnv, thread: LocalThread<'_>) -> Option<NativeThread> {
        let java_thread = self.java_thread(jni, thread);
        if java_thread == 0 {
            return None;
        }
        let base = java_thread as usize;
        let osthread: usize = read(base.wrapping_add(self.osthread))?;
        if osthread == 0 {
            return None;
        }
        let tid: libc::pid_t = read(osthread.wrapping_add(self.thread_id))?;
        let jni_env = base.wrapping_add_signed(self.jni_env);
        let functions: usize = read(jni_env)?;
        (tid > 0 && functions == self.functions).then_some(NativeThread {
            tid,
            jni_env: jni_env as *mut c_void,
            java_thread,
        })
    }

    /// True when `thread` has not begun to end since `native` was read
    /// from it: its JavaThread was alive throughout, so `native` is its.
    pub fn still_running(
        &self,
        jni: &JniEnv,
        thread: LocalThread<'_>,
        native: &NativeThread,
    ) -> bool {
        // (The reads before are done before this one.)
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        self.java_thread(jni, thread) == native.java_thread
    }
}

/// The calling thread's kernel id, by the system call: glibc's `gettid()`
/// wrapper is 2.30's, and the release archive's agent loads on glibc 2.17
/// (docs/install.md). Async-signal-safe: the sampling handler calls it.
pub fn current_tid() -> libc::pid_t {
    // SAFETY: gettid takes no arguments, has no preconditions and cannot
    // fail; its result always fits in a pid_t.
    unsafe { libc::syscall(libc::SYS_gettid) as libc::pid_t }
}

/// The `T` at `address` in this process, read by the kernel: None, not a
/// fault, when the address is not mapped (memory a thread that ended
/// meanwhile freed).
fn read<T: Copy + Default>(address: usize) -> Option<T> {
    let mut value = T::default();
    let size = std::mem::size_of::<T>();
    let local = libc::iovec {
        iov_base: (&raw mut value).cast(),
        iov_len: size,
    };
    let remote = libc::iovec {
        iov_base: address as *mut c_void,
        iov_len: size,
    };
    // SAFETY: the kernel writes at most `size` bytes into `value` and
    // reads `address` in this process itself, failing with EFAULT where
    // nothing is mapped; no memory is touched by this thread directly.
    let copied = unsafe { libc::process_vm_readv(libc::getpid(), &local, 1, &remote, 1, 0) };
    (copied == size as isize).then_some(value)
}
