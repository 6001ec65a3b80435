//! Which virtual thread each carrier runs (JDK 21 and later), so that a
//! carrier's wall-clock sample is taken of the virtual thread's own stack
//! and charged to it. JVMTI shows a carrier's own frames when asked for
//! its stack (its pool's loop and `Continuation.run`), and lists no
//! virtual thread; HotSpot's VirtualThreadMount and VirtualThreadUnmount
//! extension events come on the carrier as a virtual thread goes on and
//! off it. Each mount keeps a weak reference to the virtual thread under
//! the carrier's kernel id; its unmount lets it go. What is kept: one
//! entry per carrier running a virtual thread now.

use crate::agent::jvm::native_thread::current_tid;
use crate::agent::modes::cpu_samples::virtual_threads::{self, MountCallback};
use crate::agent::run::engine::Run;
use jvmti_bindings::prelude::*;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

/// A JNI weak global reference to a virtual thread.
struct Weak(jni::jweak);
// SAFETY: a weak global reference may be used from any attached thread; it
// is only dereferenced through JNI, and deleted once, under the map's lock.
unsafe impl Send for Weak {}

/// The virtual thread mounted on each carrier, by the carrier's kernel id.
#[derive(Default)]
pub struct Mounted {
    by_carrier: Mutex<HashMap<libc::pid_t, Weak>>,
}

/// The run and the map the events' callbacks reach (they have no other
/// way to them), set once when the events are turned on.
static ACTIVE: OnceLock<(&'static Run, &'static Mounted)> = OnceLock::new();

/// Runs a callback's body; a panic stops at this boundary, said once.
fn contained(event: &str, body: impl FnOnce(&'static Mounted)) {
    let Some(&(run, mounted)) = ACTIVE.get() else {
        return;
    };
    if !run.lifecycle.accepting_events() {
        return;
    }
    if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| body(mounted))).is_err() {
        static SAID: AtomicBool = AtomicBool::new(false);
        if !SAID.swap(true, Ordering::Relaxed) {
            eprintln!("HPROF ERROR: internal error in the {event} callback; the program continues");
        }
    }
}

/// VirtualThreadMount, on the carrier.
unsafe extern "C" fn on_mount(
    _: *mut jvmti::jvmtiEnv,
    jni: *mut jni::JNIEnv,
    thread: jni::jthread,
) {
    contained("VirtualThreadMount", |mounted| {
        if jni.is_null() || thread.is_null() {
            return;
        }
        // SAFETY: the JNIEnv of the calling thread, live for the callback.
        let jni = unsafe { JniEnv::from_raw(jni) };
        // SAFETY: `thread` is the event's live reference.
        let weak = unsafe { jni.new_weak_global_ref(thread) };
        if weak.is_null() {
            return;
        }
        let old = mounted.by_carrier.lock().insert(current_tid(), Weak(weak));
        if let Some(old) = old {
            // SAFETY: taken out of the map under its lock, deleted once.
            unsafe { jni.delete_weak_global_ref(old.0) };
        }
    });
}

/// VirtualThreadUnmount, on the carrier.
unsafe extern "C" fn on_unmount(_: *mut jvmti::jvmtiEnv, jni: *mut jni::JNIEnv, _: jni::jthread) {
    contained("VirtualThreadUnmount", |mounted| {
        let gone = mounted.by_carrier.lock().remove(&current_tid());
        if let (Some(gone), false) = (gone, jni.is_null()) {
            // SAFETY: the JNIEnv of the calling thread; the reference was
            // taken out of the map under its lock and is deleted once.
            unsafe { JniEnv::from_raw(jni).delete_weak_global_ref(gone.0) };
        }
    });
}

impl Mounted {
    /// Turns the events on for `self`. False when the JVM has none (before
    /// JDK 21) or they are on already.
    pub fn enable(&'static self, run: &'static Run) -> bool {
        let env = run.jvmti.env();
        if !virtual_threads::has_mount_events(&env) || ACTIVE.set((run, self)).is_err() {
            return false;
        }
        let (mount, unmount): (MountCallback, MountCallback) = (on_mount, on_unmount);
        virtual_threads::enable_mount_events(&env, mount, unmount)
    }

    /// A local reference to the virtual thread the carrier `tid` runs now,
    /// if any (null-free; the caller's local frame deletes it).
    pub fn on(&self, jni: &JniEnv, tid: libc::pid_t) -> Option<jni::jobject> {
        let by_carrier = self.by_carrier.lock();
        let weak = by_carrier.get(&tid)?;
        // SAFETY: a live weak reference (deleted only under this lock); the
        // result is null once the thread is collected.
        let local = unsafe { jni.new_local_ref(weak.0) };
        (!local.is_null()).then_some(local)
    }
}
