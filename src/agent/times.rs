//! The cpu=times / cpu=old collector: every class loaded after VM init is
//! rewritten (src/bci) so that each method calls `hprof_rs.Tracker` on entry
//! and before each return; the Tracker's natives keep a per-thread shadow
//! stack and charge each completed call to its trace.
//!
//! The clock is the monotonic wall clock (CLOCK_MONOTONIC, through
//! `Instant`), as HPROF's was on Linux: a method that sleeps or waits is
//! charged for that time, which is what "where did the time go" asks; a
//! per-thread CPU clock would also cost a system call per entry and exit.

use super::jvm;
use super::owned::Owned;
use crate::bci::{self, Injection};
use crate::model::timing::{CallCosts, ThreadTiming};
use jvmti_bindings::prelude::*;
use parking_lot::Mutex;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

/// A method the rewriter instrumented: where it is and what it is called.
#[derive(Debug, Clone)]
pub struct TimedMethod {
    /// Internal class name, e.g. `java/lang/String`.
    pub class_name: String,
    pub method_name: String,
    pub descriptor: String,
}

/// Method key: class number in the high half, method number in the low.
pub fn method_key(class_number: u32, method_number: u32) -> u64 {
    (u64::from(class_number) << 32) | u64::from(method_number)
}

/// One thread's timing, shared with the dump (which takes its costs).
struct TimedThread {
    serial: u32,
    timing: Owned<ThreadTiming>,
}

/// State of the timing collector.
pub struct MethodTiming {
    /// Frames per trace (2 for cpu=old).
    depth: usize,
    injection: Injection,
    /// Methods by class number (index) and method number.
    classes: Mutex<Vec<(String, Vec<bci::MethodInfo>)>>,
    threads: Mutex<Vec<Arc<TimedThread>>>,
    /// jmethodID -> method key, for ExceptionCatch.
    by_method_id: Mutex<HashMap<u64, Option<u64>>>,
}

static TIMING: OnceLock<&'static MethodTiming> = OnceLock::new();

/// This thread's state, in one thread-local (each thread-local access is
/// a function call in a shared library, and this is the hottest path).
struct Local {
    /// Set while this thread is inside the collector, so that Java code the
    /// collector itself runs is not timed (and cannot recurse).
    inside: Cell<bool>,
    current: RefCell<Option<Arc<TimedThread>>>,
}

thread_local! {
    static LOCAL: Local = const { Local { inside: Cell::new(false), current: RefCell::new(None) } };
}

/// Monotonic nanoseconds, read straight from the clock (no Duration math).
fn monotonic_ns() -> u64 {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid out-pointer; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now) };
    now.tv_sec as u64 * 1_000_000_000 + now.tv_nsec as u64
}

impl MethodTiming {
    /// Timing with traces of `depth` frames.
    pub fn new(depth: u32) -> Self {
        Self {
            depth: depth.max(1) as usize,
            injection: Injection::tracker(),
            classes: Mutex::default(),
            threads: Mutex::default(),
            by_method_id: Mutex::default(),
        }
    }

    fn now(&self) -> u64 {
        monotonic_ns()
    }

    /// At load time: puts the Tracker class on the boot class path (a
    /// directory under the temp dir holding `hprof_rs/Tracker.class`).
    pub fn install_tracker(jvmti: &Jvmti) -> Result<std::path::PathBuf, String> {
        let dir = std::env::temp_dir().join(format!("hprof-rs-{}", std::process::id()));
        let package = dir.join("hprof_rs");
        std::fs::create_dir_all(&package)
            .map_err(|e| format!("cannot create {}: {e}", package.display()))?;
        std::fs::write(package.join("Tracker.class"), bci::TRACKER_CLASS_FILE)
            .map_err(|e| format!("cannot write the Tracker class: {e}"))?;
        jvmti
            .add_to_bootstrap_class_loader_search(&dir.to_string_lossy())
            .map_err(|e| format!("cannot add the Tracker to the boot class path ({e:?})"))?;
        Ok(dir)
    }

    /// At VM init: registers the Tracker's natives and engages it.
    pub fn engage(&'static self, jni: &JniEnv) -> Result<(), String> {
        let _ = TIMING.set(self);
        let class =
            jvm::find_class(jni, bci::TRACKER_CLASS).ok_or("the Tracker class cannot be loaded")?;
        let names: Vec<(std::ffi::CString, std::ffi::CString)> = bci::TRACKER_NATIVES
            .iter()
            .map(|(n, s)| {
                (
                    std::ffi::CString::new(*n).unwrap_or_default(),
                    std::ffi::CString::new(*s).unwrap_or_default(),
                )
            })
            .collect();
        let functions: [*mut std::ffi::c_void; 2] =
            [native_call_site as *mut _, native_return_site as *mut _];
        let methods: Vec<jni::JNINativeMethod> = names
            .iter()
            .zip(functions)
            .map(|((name, signature), function)| jni::JNINativeMethod {
                name: name.as_ptr(),
                signature: signature.as_ptr(),
                fnPtr: function,
            })
            .collect();
        // SAFETY: the natives match the Tracker's declarations
        // (Thread, int, int) -> void; `methods` and its strings outlive the call.
        unsafe { jni.register_natives(class, &methods) }
            .map_err(|e| format!("RegisterNatives failed ({e})"))?;
        set_engaged(jni, class, 0xFFFF)
    }

    /// At VM death: calls stop being timed.
    pub fn disengage(&self, jni: &JniEnv) {
        if let Some(class) = jvm::find_class(jni, bci::TRACKER_CLASS) {
            let _ = set_engaged(jni, class, 0);
        }
    }

    /// ClassFileLoadHook: the rewritten class, or None to load it unchanged.
    pub fn rewrite(&self, name: Option<&str>, bytes: &[u8]) -> Option<Vec<u8>> {
        if name == Some(bci::TRACKER_CLASS) || bytes.is_empty() {
            return None;
        }
        let mut classes = self.classes.lock();
        let class_number = u32::try_from(classes.len()).ok()?;
        let outcome = bci::rewrite_class(bytes, class_number, &self.injection).ok()?;
        if !outcome.methods.iter().any(|m| m.rewritten) {
            return None;
        }
        classes.push((name.unwrap_or("Unknown_class").to_owned(), outcome.methods));
        Some(outcome.bytes)
    }

    /// What method key names.
    pub fn method(&self, key: u64) -> Option<TimedMethod> {
        let classes = self.classes.lock();
        let (class_name, methods) = classes.get((key >> 32) as usize)?;
        let info = methods.get((key & 0xFFFF_FFFF) as usize)?;
        Some(TimedMethod {
            class_name: class_name.clone(),
            method_name: info.name.clone(),
            descriptor: info.descriptor.clone(),
        })
    }

    /// The method key of a JVM method, if it is instrumented (latest
    /// version of its class).
    fn key_of(&self, env: &Jvmti, method: jni::jmethodID) -> Option<u64> {
        if let Some(known) = self.by_method_id.lock().get(&(method as u64)) {
            return *known;
        }
        let (name, descriptor) = jvm::method_name(env, method as u64)?;
        let class = jvm::declaring_class(env, method as u64)?;
        let signature = jvm::class_signature(env, class)?;
        let class_name = signature
            .strip_prefix('L')
            .and_then(|s| s.strip_suffix(';'))
            .unwrap_or(&signature)
            .to_owned();
        let classes = self.classes.lock();
        let key = classes
            .iter()
            .enumerate()
            .rev()
            .find(|(_, (n, _))| *n == class_name)
            .and_then(|(cnum, (_, methods))| {
                methods
                    .iter()
                    .find(|m| m.rewritten && m.name == name && m.descriptor == descriptor)
                    .map(|m| method_key(cnum as u32, u32::from(m.index)))
            });
        drop(classes);
        self.by_method_id.lock().insert(method as u64, key);
        key
    }

    /// ExceptionCatch: calls above the catching method ended by the exception.
    pub fn exception_caught(&self, env: &Jvmti, method: jni::jmethodID) {
        let Some(key) = self.key_of(env, method) else {
            return;
        };
        let now = self.now();
        let _ = LOCAL.try_with(|local| {
            if let Some(thread) = local.current.borrow().as_ref() {
                thread.timing.update(|t| t.caught_in(key, now));
            }
        });
    }

    /// Every thread's costs since the last dump: (thread serial, method
    /// keys of the trace, costs). Threads that have ended are dropped after.
    pub fn take_costs(&self) -> Vec<(u32, Box<[u64]>, CallCosts)> {
        let mut threads = self.threads.lock();
        let mut all = Vec::new();
        let timings: Vec<&Owned<ThreadTiming>> = threads.iter().map(|t| &t.timing).collect();
        let mut index = 0;
        super::owned::collect(&timings, |timing| {
            let serial = threads[index].serial;
            index += 1;
            all.extend(
                timing
                    .take_costs()
                    .into_iter()
                    .map(|(trace, costs)| (serial, trace, costs)),
            );
        });
        // The thread's own handle is gone once it ended.
        threads.retain(|t| Arc::strong_count(t) > 1);
        all
    }

    /// The calling thread's timing, registering it on first use.
    fn with_thread(
        &self,
        local: &Local,
        thread: jni::jthread,
        body: impl FnOnce(&mut ThreadTiming),
    ) {
        {
            let mut current = local.current.borrow_mut();
            if current.is_none() {
                let serial = super::PROFILER
                    .get()
                    .map_or(0, |p| jvm::thread_value(&p.jvmti_env(), thread) as u32);
                let timed = Arc::new(TimedThread {
                    serial,
                    timing: Owned::new(ThreadTiming::new(self.depth)),
                });
                self.threads.lock().push(timed.clone());
                *current = Some(timed);
            }
        }
        if let Some(timed) = local.current.borrow().as_ref() {
            timed.timing.update(body);
        }
    }
}

fn set_engaged(jni: &JniEnv, class: jni::jclass, value: i32) -> Result<(), String> {
    let (name, signature) = bci::TRACKER_ENGAGED_FIELD;
    // SAFETY: `class` is the Tracker class, whose static int field this is.
    unsafe {
        let field = jni
            .get_static_field_id(class, name, signature)
            .ok_or("the Tracker has no engaged field")?;
        jni.set_static_int_field(class, field, value);
    }
    Ok(())
}

/// Runs `body` unless this thread is already inside the collector; a
/// panic is contained here, never unwound into Java.
fn guarded(body: impl FnOnce(&'static MethodTiming, &Local)) {
    let Some(timing) = TIMING.get().copied() else {
        return;
    };
    let _ = LOCAL.try_with(|local| {
        if local.inside.replace(true) {
            return;
        }
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| body(timing, local)));
        local.inside.set(false);
    });
}

/// `Tracker.nativeCallSite(Thread, int, int)`.
extern "system" fn native_call_site(
    _env: *mut jni::JNIEnv,
    _class: jni::jclass,
    thread: jni::jobject,
    cnum: jni::jint,
    mnum: jni::jint,
) {
    guarded(|timing, local| {
        let now = timing.now();
        timing.with_thread(local, thread, |t| {
            t.enter(method_key(cnum as u32, mnum as u32), now)
        });
    });
}

/// `Tracker.nativeReturnSite(Thread, int, int)`.
extern "system" fn native_return_site(
    _env: *mut jni::JNIEnv,
    _class: jni::jclass,
    thread: jni::jobject,
    cnum: jni::jint,
    mnum: jni::jint,
) {
    guarded(|timing, local| {
        let now = timing.now();
        timing.with_thread(local, thread, |t| {
            t.exit(method_key(cnum as u32, mnum as u32), now)
        });
    });
}
