//! The agent's JNI calls into the Tracker class (`hprof_rs/Tracker`, the
//! Java side of cpu=times, see `modes/cpu_times/timing.rs`). Part of the JVM boundary with
//! `jvm/mod.rs`: the unsafe JNI calls live here, behind safe methods whose
//! handles are valid by construction.

use crate::agent::jvm::{self, GlobalRef, OwnedLocal, kind};
use crate::bci;
use jvmti_bindings::prelude::*;
use parking_lot::Mutex;
use std::collections::HashSet;
use std::sync::OnceLock;

/// Told the first call of a method on a thread, on that thread, by the
/// Tracker's `firstCall` native (counting calls only, `timing=samples`).
pub trait FirstCalls: Sync {
    /// `key` is the method key (class number << 32 | method number).
    fn first_call(&self, key: u64);
}

/// Where `firstCall` reports go: the engine of the profile running. A
/// profile attached later replaces its predecessor's.
static FIRST_CALLS: Mutex<Option<&'static dyn FirstCalls>> = Mutex::new(None);

/// The Tracker's own methods (jmethodIDs), which head the stacks its
/// native sees. The class is defined once per JVM, so they never change.
static TRACKER_METHODS: OnceLock<HashSet<u64>> = OnceLock::new();

/// Whether `method` is one of the Tracker's own.
pub fn is_tracker_method(method: u64) -> bool {
    TRACKER_METHODS.get().is_some_and(|m| m.contains(&method))
}

/// `Tracker.firstCall(int, int)`: a panic stays here.
extern "system" fn first_call_native(
    _env: *mut jni::JNIEnv,
    _tracker: jni::jclass,
    cnum: jni::jint,
    mnum: jni::jint,
) {
    let _ = std::panic::catch_unwind(|| {
        // (The lock is let go before the report: it walks a stack.)
        let told = *FIRST_CALLS.lock();
        if let Some(told) = told {
            told.first_call(((cnum as u32 as u64) << 32) | u64::from(mnum as u32));
        }
    });
}

/// The engaged Tracker: its class and the identifiers of the fields and
/// methods the agent uses, valid on any thread.
#[derive(Clone, Copy)]
pub struct Tracker {
    class: GlobalRef<kind::Class>,
    engaged: jni::jfieldID,
    clock: jni::jfieldID,
    drain: jni::jmethodID,
    ended: jni::jmethodID,
    reset: jni::jmethodID,
    prime: jni::jmethodID,
}

// SAFETY: field and method identifiers stay valid on every thread while
// their class is loaded; the Tracker is defined in the boot loader, whose
// classes are never unloaded, and `class` is a global reference to it.
unsafe impl Send for Tracker {}
// SAFETY: as above; the identifiers are only read.
unsafe impl Sync for Tracker {}

/// What one `drain()` hands over: per thread index its serial, the new
/// trace nodes, the cost records and the first failure, if any.
pub struct Drained {
    pub thread_serials: Vec<u32>,
    pub new_nodes: Vec<i64>,
    pub data: Vec<i64>,
    pub failure: Option<String>,
}

impl Tracker {
    /// Defines the Tracker class in the boot loader from the embedded bytes,
    /// sets its trace depth and looks up what the agent uses of it. Once
    /// per run. A profile attached after another one stopped finds the
    /// class that one defined (a class is defined once) and resets it.
    pub fn define(jni: &JniEnv, depth: u32) -> Result<Self, String> {
        // (The bytes are a class file of this very name: bci/tracker.rs.)
        let (class, defined_before) = match jvm::define_boot_class(
            jni,
            bci::TRACKER_CLASS,
            bci::TRACKER_CLASS_FILE,
            "Tracker",
        ) {
            Ok(class) => (class, false),
            Err(why) => jvm::find_class(jni, bci::TRACKER_CLASS)
                .map(|found| (GlobalRef::new(jni, found.get()), true))
                .ok_or(why)?,
        };
        let raw = class.raw() as jni::jclass;
        let missing = |what: &str| format!("the Tracker has no {what}");
        // SAFETY: names and signatures are those of Tracker.java (checked by
        // a unit test against the embedded class); `raw` is its class, held
        // by a global reference.
        unsafe {
            let field =
                |(name, signature): (&str, &str)| jni.get_static_field_id(raw, name, signature);
            let method =
                |(name, signature): (&str, &str)| jni.get_static_method_id(raw, name, signature);
            let depth_field =
                field(bci::TRACKER_DEPTH_FIELD).ok_or_else(|| missing("depth field"))?;
            let tracker = Tracker {
                class,
                engaged: field(bci::TRACKER_ENGAGED_FIELD)
                    .ok_or_else(|| missing("engaged field"))?,
                clock: field(bci::TRACKER_CLOCK_FIELD).ok_or_else(|| missing("clock field"))?,
                drain: method(bci::TRACKER_DRAIN).ok_or_else(|| missing("drain method"))?,
                ended: method(bci::TRACKER_ENDED).ok_or_else(|| missing("ended method"))?,
                reset: method(bci::TRACKER_RESET).ok_or_else(|| missing("reset method"))?,
                prime: method(bci::TRACKER_PRIME).ok_or_else(|| missing("prime method"))?,
            };
            if defined_before && !tracker.reset(jni) {
                return Err("the Tracker left by an earlier profile cannot be reset".into());
            }
            jni.set_static_int_field(raw, depth_field, depth.min(i32::MAX as u32) as i32);
            Ok(tracker)
        }
    }

    /// `reset()`, while it is not engaged: every thread's timing, the trace
    /// tree and the folded totals start over (and their memory is let go).
    /// False if it threw.
    pub fn reset(&self, jni: &JniEnv) -> bool {
        // SAFETY: `reset` is Tracker.reset(), a static void method of the
        // Tracker class.
        unsafe { jni.call_static_void_method(self.class(), self.reset, &[]) };
        !jvm::clear_exception(jni)
    }

    /// `prime()`, once engaged to count calls inlined: the fast path's ways
    /// out all enter the count's profile (see Tracker.java). False if it
    /// threw.
    pub fn prime(&self, jni: &JniEnv) -> bool {
        // SAFETY: `prime` is Tracker.prime(), a static void method of the
        // Tracker class.
        unsafe { jni.call_static_void_method(self.class(), self.prime, &[]) };
        !jvm::clear_exception(jni)
    }

    pub(crate) fn class(&self) -> jni::jclass {
        self.class.raw() as jni::jclass
    }

    /// Registers `firstCall` and sets `reportsFirstCalls`: from then on
    /// the first call of each method on each thread is told to `to`.
    pub fn report_first_calls(
        &self,
        env: &Jvmti,
        jni: &JniEnv,
        to: &'static dyn FirstCalls,
    ) -> Result<(), String> {
        *FIRST_CALLS.lock() = Some(to);
        TRACKER_METHODS.get_or_init(|| {
            jvm::method_ids(env, self.class.local())
                .into_iter()
                .collect()
        });
        let (name, signature) = bci::TRACKER_FIRST_CALL_NATIVE;
        let c_string = |text: &str| std::ffi::CString::new(text).map_err(|e| e.to_string());
        let (name, signature) = (c_string(name)?, c_string(signature)?);
        let native = jni::JNINativeMethod {
            name: name.as_ptr() as *mut _,
            signature: signature.as_ptr() as *mut _,
            fnPtr: first_call_native as *mut std::ffi::c_void,
        };
        // SAFETY: the class is the Tracker, held by a global reference;
        // `firstCall(II)V` is its native method and `first_call_native` has
        // the matching JNI signature; the names outlive the call.
        let registered = unsafe { jni.register_natives(self.class(), &[native]) };
        if registered.is_err() || jvm::clear_exception(jni) {
            return Err("the Tracker's firstCall native cannot be registered".into());
        }
        let (name, signature) = bci::TRACKER_REPORTS_FIRST_CALLS_FIELD;
        // SAFETY: the Tracker's static boolean field of that name.
        unsafe {
            let field = jni
                .get_static_field_id(self.class(), name, signature)
                .ok_or("the Tracker has no reportsFirstCalls field")?;
            jni.set_static_boolean_field(self.class(), field, true);
        }
        Ok(())
    }

    /// Sets `engaged`: non-zero makes the Tracker time calls.
    pub fn set_engaged(&self, jni: &JniEnv, value: i32) {
        // SAFETY: `engaged` is the Tracker's static int field.
        unsafe { jni.set_static_int_field(self.class(), self.engaged, value) };
    }

    /// Sets the Tracker's clock (`now`, monotonic nanoseconds).
    pub fn set_clock(&self, jni: &JniEnv, nanoseconds: i64) {
        // SAFETY: `clock` is the Tracker's static long field.
        unsafe { jni.set_static_long_field(self.class(), self.clock, nanoseconds) };
    }

    /// `ended(serial)`, on the ending thread: its counts go to `serial`.
    pub fn ended(&self, jni: &JniEnv, serial: u32) {
        // SAFETY: `ended` is Tracker.ended(int), a static void method of the
        // Tracker class.
        unsafe {
            jni.call_static_void_method(
                self.class(),
                self.ended,
                &[jni::jvalue {
                    i: serial.min(i32::MAX as u32) as i32,
                }],
            );
        }
        jvm::clear_exception(jni);
    }

    /// `drain()`: what the Tracker collected since the last call, or None
    /// if it could not be read.
    pub fn drain(&self, env: &Jvmti, jni: &JniEnv) -> Option<Drained> {
        // SAFETY: `drain` is Tracker.drain(), returning {Thread[], long[],
        // long[], String}; every reference read below is checked for null,
        // and exceptions are cleared.
        unsafe {
            let result = jni.call_static_object_method(self.class(), self.drain, &[]);
            if result.is_null() || jvm::clear_exception(jni) {
                return None;
            }
            let threads = jni.get_object_array_element(result, 0);
            let new_nodes = jni.get_object_array_element(result, 1);
            let longs = jni.get_object_array_element(result, 2);
            let failure = jni.get_object_array_element(result, 3);
            if threads.is_null() || new_nodes.is_null() || longs.is_null() {
                return None;
            }
            let read_longs = |array: jni::jobject| {
                let mut values = vec![0i64; jni.get_array_length(array).max(0) as usize];
                jni.get_long_array_region(array, 0, values.len() as i32, &mut values);
                values
            };
            let count = jni.get_array_length(threads).max(0);
            let thread_serials: Vec<u32> = (0..count)
                .map(|i| {
                    let raw = jni.get_object_array_element(threads, i);
                    // SAFETY: a local reference GetObjectArrayElement just
                    // made on this thread, deleted only by its owner.
                    let thread: OwnedLocal<'_, kind::Thread> = OwnedLocal::new(Some(jni), raw);
                    jvm::thread_serial(env, thread.get())
                })
                .collect();
            let failure = (!failure.is_null())
                .then(|| jni.get_string_utf(failure))
                .flatten();
            Some(Drained {
                thread_serials,
                new_nodes: read_longs(new_nodes),
                data: read_longs(longs),
                failure,
            })
        }
    }
}
