//! Whether the current thread has timed calls in progress, read from the
//! Tracker's state without entering the Tracker's own code: its
//! `CURRENT` (a `ThreadLocal<Tracker>`) and that thread's `top`. Under
//! `include=` / `exclude=`, an exception caught in an untimed method needs a
//! stack search only when something is timed on the thread; most such
//! catches happen where nothing is (JNI calls, part of the JVM boundary
//! with `jvm/mod.rs`).

use crate::agent::jvm::timing_tracker::Tracker;
use crate::agent::jvm::{self, OwnedLocal, kind};
use jvmti_bindings::prelude::*;

/// The identifiers the probe reads through.
#[derive(Clone, Copy)]
pub struct CallsInProgress {
    /// `Tracker.CURRENT`, static, a `ThreadLocal`.
    current: jni::jfieldID,
    /// `ThreadLocal.get()`.
    get: jni::jmethodID,
    /// `Tracker.top`: calls on the thread's shadow stack.
    top: jni::jfieldID,
}

// SAFETY: field and method identifiers stay valid on every thread while
// their class is loaded; the Tracker lives in the boot loader, as does
// ThreadLocal, and neither is ever unloaded.
unsafe impl Send for CallsInProgress {}
// SAFETY: as above; the identifiers are only read.
unsafe impl Sync for CallsInProgress {}

impl CallsInProgress {
    /// Looks up the fields the probe reads; None if the Tracker has no
    /// such fields (then every catch is searched).
    pub fn look_up(jni: &JniEnv, tracker: &Tracker) -> Option<Self> {
        let class = tracker.class();
        let thread_local = jvm::find_class(jni, "java/lang/ThreadLocal")?;
        // SAFETY: `class` is the Tracker's class (a global reference held by
        // `tracker`) and `thread_local` a live local reference to
        // ThreadLocal; a failed lookup leaves an exception, cleared below.
        let found = unsafe {
            (|| {
                Some(CallsInProgress {
                    current: jni.get_static_field_id(
                        class,
                        "CURRENT",
                        "Ljava/lang/ThreadLocal;",
                    )?,
                    get: jni.get_method_id(
                        thread_local.get().raw() as jni::jclass,
                        "get",
                        "()Ljava/lang/Object;",
                    )?,
                    top: jni.get_field_id(class, "top", "I")?,
                })
            })()
        };
        if jni.exception_check() {
            jni.exception_clear();
            return None;
        }
        found
    }

    /// Whether the current thread has timed calls on its shadow stack;
    /// true when it cannot tell.
    pub fn on_current_thread(&self, jni: &JniEnv, tracker: &Tracker) -> bool {
        // SAFETY: `current` is a static field of the Tracker's class, `get`
        // an instance method of ThreadLocal called on a ThreadLocal, `top`
        // an int field of a Tracker (CURRENT holds only Trackers); every
        // local reference made here is owned and deleted, and an exception
        // is cleared.
        unsafe {
            let raw = jni.get_static_object_field(tracker.class(), self.current);
            if raw.is_null() {
                return true;
            }
            let thread_local: OwnedLocal<'_, kind::Object> = OwnedLocal::new(Some(jni), raw);
            let raw = jni.call_object_method(thread_local.get().raw(), self.get, &[]);
            if jni.exception_check() {
                jni.exception_clear();
                return true;
            }
            if raw.is_null() {
                return false;
            }
            let state: OwnedLocal<'_, kind::Object> = OwnedLocal::new(Some(jni), raw);
            jni.get_int_field(state.get().raw(), self.top) > 0
        }
    }
}
