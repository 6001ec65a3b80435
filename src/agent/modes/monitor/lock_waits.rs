//! The monitor=y engine's part for java.util.concurrent locks: the time
//! threads spend blocked acquiring ReentrantLock, ReentrantReadWriteLock
//! and every other lock built on AbstractQueuedSynchronizer (or its long
//! twin), which JVMTI's monitor events never see. A dump writes it as the
//! LOCK TIME section, after the monitor sections.
//!
//! How: such a lock blocks its thread in `LockSupport.park(blocker)` or
//! `parkNanos(blocker, nanos)` with the synchronizer as the blocker, and
//! only when the lock is taken (the uncontended path never parks).
//! `LockSupport` is retransformed so that those two methods call
//! `hprof_rs/LockTracker` (java-tracker/) on entry and before each return;
//! for a synchronizer blocker it calls a native method of the agent, which
//! takes the thread's stack before it blocks and returns the number of the
//! (stack, lock class) site (`modes/monitor/lock_sites.rs`), then times the park and adds
//! the time to that site by number. A dump drops the leading
//! frames of the lock's own code (LockSupport, the synchronizer, the lock
//! class), so that a trace starts at the caller of `lock()`, then keys the
//! rows by (trace, lock class) as MONITOR TIME keys monitors.

use crate::agent::jvm::lock_tracker::{
    LOCK_SUPPORT_CLASS, LockEvents, LockTracker, retransform_lock_support,
};
use crate::agent::jvm::{self, Local, LocalClass, RawFrame};
use crate::agent::modes::monitor::lock_sites::Sites;
use crate::agent::run::engine::{Engine, Run};
use crate::agent::run::method_cache::MethodCache;
use crate::agent::run::threads;
use crate::bci;
use crate::emit::clock::ctime_now;
use crate::emit::lock_time::LockContention;
use crate::model::Model;
use jvmti_bindings::prelude::*;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

/// Frames of the lock's own code a blocked thread's stack may start with
/// (the hooks, LockSupport, the synchronizer's acquire methods, the lock
/// class): asked for beyond the trace depth, then dropped.
const LOCK_FRAMES: u32 = 16;

/// Frames a key holds without a heap buffer.
const INLINE_FRAMES: usize = 48;

/// Where a key's frames start: before them, the lock number and the thread
/// serial.
const KEY_FRAMES_AT: usize = 2;

/// State of the java.util.concurrent part of monitor=y.
pub struct LockWaits {
    /// Frames asked of the JVM per block.
    frames_asked: usize,
    run: OnceLock<&'static Run>,
    tracker: OnceLock<LockTracker>,
    /// Set once the tracker is defined: LockSupport may be rewritten.
    ready: AtomicBool,
    /// Lock class names (dotted, user-visible) by number.
    names: Mutex<Vec<String>>,
    sites: Sites,
    /// Per (method, lock number): is the frame part of the lock's own code?
    lock_code: Mutex<MethodCache<(u64, u64), bool>>,
}

impl LockWaits {
    /// Traces of `depth` frames.
    pub fn new(depth: u32) -> Self {
        Self {
            frames_asked: depth.saturating_add(LOCK_FRAMES) as usize,
            run: OnceLock::new(),
            tracker: OnceLock::new(),
            ready: AtomicBool::new(false),
            names: Mutex::default(),
            sites: Sites::default(),
            lock_code: Mutex::default(),
        }
    }

    /// ClassFileLoadHook: LockSupport with its parks hooked, once the
    /// tracker is defined; None for every other class.
    pub fn rewrite(&self, name: Option<&str>, bytes: &[u8]) -> Option<Vec<u8>> {
        if name != Some(LOCK_SUPPORT_CLASS) || !self.ready.load(Ordering::Acquire) {
            return None;
        }
        let outcome = bci::rewrite_passing_first_argument(
            bytes,
            &bci::Injection::lock_tracker(),
            &bci::PARK_METHODS,
        )
        .ok()?;
        outcome
            .methods
            .iter()
            .any(|m| m.rewritten)
            .then_some(outcome.bytes)
    }

    /// Defines and engages the tracker, then has LockSupport rewritten.
    fn engage(&'static self, run: &Run, jni: &JniEnv) -> Result<(), String> {
        let tracker = LockTracker::define(jni, self)?;
        let _ = self.tracker.set(tracker);
        tracker.set_engaged(jni, true);
        self.ready.store(true, Ordering::Release);
        let env = run.jvmti.env();
        env.enable_events_global(&[jvmti::JVMTI_EVENT_CLASS_FILE_LOAD_HOOK])
            .map_err(|e| format!("events ({e:?})"))?;
        retransform_lock_support(&env, jni)
    }

    /// Whether `method` is code of lock number `lock` itself: the hooks,
    /// java.util.concurrent.locks (LockSupport, the synchronizers, their
    /// locks), or the lock's class and its nested classes.
    fn is_lock_code(&self, env: &Jvmti, method: u64, lock: u64, lock_name: &str) -> bool {
        if let Some(known) = self.lock_code.lock().get(&(method, lock)) {
            return known;
        }
        let class = jvm::declaring_class(env, method)
            .and_then(|class| jvm::class_signature(env, class))
            .unwrap_or_default();
        let internal = class
            .strip_prefix('L')
            .and_then(|c| c.strip_suffix(';'))
            .unwrap_or(&class);
        let lock_class = lock_name.replace('.', "/");
        let own = internal.starts_with("hprof_rs/")
            || internal.starts_with("java/util/concurrent/locks/")
            || internal == lock_class
            || internal
                .strip_prefix(lock_class.as_str())
                .is_some_and(|nested| nested.starts_with('$'));
        self.lock_code.lock().insert((method, lock), own);
        own
    }

    /// The rows of a dump: blocks by (trace, lock class).
    fn rows(&self, run: &Run, model: &mut Model) -> Vec<LockContention> {
        let env = run.jvmti.env();
        let names = self.names.lock().clone();
        let mut rows: HashMap<(u32, u64), LockContention> = HashMap::new();
        for (key, tally) in self.sites.take() {
            let (lock, serial) = (key[0], key[1] as u32);
            let Some(name) = names.get(lock as usize) else {
                continue;
            };
            let frames: Vec<RawFrame> = key[KEY_FRAMES_AT..]
                .chunks_exact(2)
                .map(|pair| (pair[0], pair[1] as i64))
                .collect();
            let own = frames
                .iter()
                .take_while(|&&(method, _)| self.is_lock_code(&env, method, lock, name))
                .count();
            let trace = run.traces.intern(&env, model, &frames[own..], serial);
            let row = rows.entry((trace, lock)).or_insert_with(|| LockContention {
                trace_serial: trace,
                lock: name.clone(),
                time_ns: 0,
                count: 0,
            });
            row.time_ns += tally.nanos;
            row.count += tally.count;
        }
        rows.into_values().collect()
    }
}

/// The name a lock class is shown by: dotted, and for a synchronizer
/// nested in its lock (`ReentrantLock$NonfairSync`,
/// `ReentrantReadWriteLock$FairSync`, `Semaphore$Sync`, a user's
/// `MyLock$Sync`) the lock's class, which is what the program names.
fn lock_name(signature: &str) -> String {
    let internal = signature
        .strip_prefix('L')
        .and_then(|c| c.strip_suffix(';'))
        .unwrap_or(signature);
    let visible = match internal.rsplit_once('$') {
        Some((outer, nested)) if nested.ends_with("Sync") => outer,
        _ => internal,
    };
    visible.replace('/', ".")
}

impl LockEvents for LockWaits {
    fn register(&self, class: LocalClass<'_>) -> i32 {
        let Some(run) = self.run.get() else {
            return -1;
        };
        let Some(signature) = jvm::class_signature(&run.jvmti.env(), class) else {
            return -1;
        };
        let name = lock_name(&signature);
        let mut names = self.names.lock();
        let number = match names.iter().position(|n| *n == name) {
            Some(known) => known,
            None => {
                names.push(name);
                names.len() - 1
            }
        };
        i32::try_from(number).unwrap_or(-1)
    }

    fn site(&self, lock: i32) -> i64 {
        let Some(run) = self.run.get() else {
            return 0;
        };
        if lock < 0 || !run.lifecycle.accepting_events() || threads::is_agent_thread() {
            return 0;
        }
        let env = run.jvmti.env();
        let current = Local::null();
        let thread_serial = if run.traces.per_thread {
            match threads::serial_of(&env, current) {
                0 => threads::thread_serial(run, &env, &mut run.model.lock(), current, &[]),
                known => known,
            }
        } else {
            0
        };
        let mut inline = [jvmti::jvmtiFrameInfo::default(); INLINE_FRAMES];
        let mut inline_key = [0u64; KEY_FRAMES_AT + 2 * INLINE_FRAMES];
        let (mut heap, mut heap_key);
        let (buffer, key): (&mut [jvmti::jvmtiFrameInfo], &mut [u64]) =
            if self.frames_asked <= INLINE_FRAMES {
                (&mut inline[..self.frames_asked], &mut inline_key[..])
            } else {
                heap = vec![jvmti::jvmtiFrameInfo::default(); self.frames_asked];
                heap_key = vec![0u64; KEY_FRAMES_AT + 2 * self.frames_asked];
                (&mut heap[..], &mut heap_key[..])
            };
        let count = jvm::stack_frames_into(&env, current, buffer);
        key[0] = lock as u64;
        key[1] = u64::from(thread_serial);
        for (i, frame) in buffer[..count].iter().enumerate() {
            key[KEY_FRAMES_AT + 2 * i] = frame.method as u64;
            key[KEY_FRAMES_AT + 2 * i + 1] = frame.location as u64;
        }
        // Java sees site n as n + 1: 0 stands for none.
        self.sites
            .site_of(&key[..KEY_FRAMES_AT + 2 * count])
            .map_or(0, |n| n as i64 + 1)
    }

    fn blocked(&self, site: i64, nanos: i64) {
        if let (Ok(n @ 1..), Ok(nanos)) = (usize::try_from(site), u64::try_from(nanos)) {
            self.sites.add(n - 1, nanos);
        }
    }
}

impl Engine for LockWaits {
    fn add_capabilities(
        &self,
        caps: &mut jvmti::jvmtiCapabilities,
        potential: &jvmti::jvmtiCapabilities,
    ) {
        caps.set_can_retransform_classes(potential.can_retransform_classes());
    }

    fn start(&'static self, run: &'static Run, jni: Option<&JniEnv>) {
        let _ = self.run.set(run);
        let Some(jni) = jni else {
            return;
        };
        if let Err(why) = self.engage(run, jni) {
            eprintln!("HPROF ERROR: monitor=y cannot time java.util.concurrent locks: {why}");
        }
    }

    /// Parks are no longer timed from here on.
    fn stop(&self, _run: &Run, jni: Option<&JniEnv>) {
        if let (Some(tracker), Some(jni)) = (self.tracker.get(), jni) {
            tracker.set_engaged(jni, false);
        }
    }

    /// LockSupport goes back to its own byte code: retransformed with the
    /// hook passing it unchanged, the JVM takes the original class file.
    fn detach(&self, run: &Run, jni: Option<&JniEnv>) {
        if !self.ready.swap(false, Ordering::AcqRel) {
            return;
        }
        if let Some(jni) = jni
            && let Err(why) = retransform_lock_support(&run.jvmti.env(), jni)
        {
            eprintln!("HPROF ERROR: monitor=y could not restore LockSupport: {why}");
        }
    }

    fn dump_announcement(&self, _run: &Run) -> &'static str {
        " java.util.concurrent lock contention ..."
    }

    fn dump_section(&self, run: &Run, model: &mut Model, out: &mut Vec<u8>) {
        let rows = self.rows(run, model);
        out.extend(
            run.emitter
                .lock_time(model, rows, run.options.cutoff, ctime_now()),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_synchronizer_is_named_by_its_lock() {
        for (signature, name) in [
            (
                "Ljava/util/concurrent/locks/ReentrantLock$NonfairSync;",
                "java.util.concurrent.locks.ReentrantLock",
            ),
            (
                "Ljava/util/concurrent/locks/ReentrantReadWriteLock$FairSync;",
                "java.util.concurrent.locks.ReentrantReadWriteLock",
            ),
            (
                "Ljava/util/concurrent/Semaphore$NonfairSync;",
                "java.util.concurrent.Semaphore",
            ),
            (
                "Ljava/util/concurrent/CountDownLatch$Sync;",
                "java.util.concurrent.CountDownLatch",
            ),
            ("Lcom/example/MyLock$Sync;", "com.example.MyLock"),
            // Not a nested synchronizer: named as it is.
            (
                "Ljava/util/concurrent/ThreadPoolExecutor$Worker;",
                "java.util.concurrent.ThreadPoolExecutor$Worker",
            ),
            ("Lcom/example/Mutex;", "com.example.Mutex"),
        ] {
            assert_eq!(lock_name(signature), name, "{signature}");
        }
    }
}
