//! The cpu=times / cpu=old collector: every class loaded after VM init is
//! rewritten (src/bci) so that each method calls `hprof_rs.Tracker` on entry
//! and before each return. The Tracker (java-tracker/hprof_rs/Tracker.java)
//! keeps each thread's shadow stack and per-trace costs in Java, so a timed
//! call costs no JNI transition; the agent reads the costs at each dump.
//!
//! The clock is `System.nanoTime()`, the monotonic wall clock, as HPROF's
//! was on Linux: a method that sleeps or waits is charged for that time,
//! which is what "where did the time go" asks; a per-thread CPU clock would
//! also cost a system call per entry and exit.

use crate::agent::jvm;
use crate::agent::jvm::timing_tracker::{Drained, Tracker};
use crate::agent::run::class_reloads::{ClassKey, ClassReloads, FirstNumbers};
use crate::bci::{self, Injection};
use crate::options::ClassFilter;
use jvmti_bindings::prelude::*;
use parking_lot::Mutex;
use std::collections::{HashMap, HashSet};

/// A method the rewriter instrumented: where it is and what it is called.
#[derive(Debug, Clone)]
pub struct TimedMethod {
    /// Internal class name, e.g. `java/lang/String`.
    pub class_name: String,
    pub method_name: String,
    pub descriptor: String,
}

/// The costs of the completed calls of one trace.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CallCosts {
    pub count: u64,
    /// Nanoseconds in the method itself, and from entry to exit.
    pub self_time: u64,
    pub total_time: u64,
}

/// The classes rewritten to time their methods.
#[derive(Default)]
struct TimedClasses {
    /// By class number: the class name and its methods by method number.
    list: Vec<(String, Vec<bci::MethodInfo>)>,
    /// The class number each distinct class file got: the same class
    /// loaded again keeps its number, so its methods keep their keys.
    reloads: ClassReloads,
}

/// How often the clock thread updates the Tracker's clock: HPROF's
/// resolution, 1 ms. Every 0.1 ms, its 10,000 wake-ups a second took
/// about a tenth of the CPU of a 2-core machine from the program (H2: 48.3 s
/// against 42.2 s, medians of 6 alternating runs; docs/decisions.md).
const CLOCK_PERIOD: std::time::Duration = std::time::Duration::from_millis(1);

/// State of the timing collector.
pub struct MethodTiming {
    /// Frames per trace (2 for cpu=old).
    depth: u32,
    injection: Injection,
    /// The injection calls `Tracker.CallCountInlined`: engaging primes it.
    counts_inlined: bool,
    /// Counting inlined without `Tracker.prime()` (measuring only).
    unprimed: bool,
    /// `include=` / `exclude=`: the classes to time.
    filter: ClassFilter,
    /// Classes the filter left as they were loaded.
    left_as_loaded: std::sync::atomic::AtomicU64,
    /// Methods by class number and method number.
    classes: Mutex<TimedClasses>,
    tracker: Mutex<Option<Tracker>>,
    /// The Tracker's trace tree as drained so far: per node, its method key
    /// and its caller node (negative: none).
    nodes: Mutex<Vec<(u64, i64)>>,
    /// Set once the Tracker's first failure has been reported.
    failure_reported: std::sync::atomic::AtomicBool,
    clock_stop: std::sync::atomic::AtomicBool,
    clock_thread: Mutex<Option<std::thread::JoinHandle<()>>>,
    /// Set when an attached profile stops: the hook passes every class
    /// unchanged, so that a retransformed class gets its own byte code back.
    passing_unchanged: std::sync::atomic::AtomicBool,
}

impl MethodTiming {
    /// Timing with traces of `depth` frames, of the classes `filter`
    /// chooses.
    pub fn new(depth: u32, filter: ClassFilter) -> Self {
        Self {
            depth: depth.max(1),
            injection: Injection::tracker(),
            counts_inlined: false,
            unprimed: false,
            filter,
            left_as_loaded: std::sync::atomic::AtomicU64::new(0),
            classes: Mutex::default(),
            tracker: Mutex::new(None),
            nodes: Mutex::default(),
            failure_reported: std::sync::atomic::AtomicBool::new(false),
            clock_stop: std::sync::atomic::AtomicBool::new(false),
            clock_thread: Mutex::new(None),
            passing_unchanged: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Whether `engage` primes an inlined count (the hidden `TIMES_UNPRIMED`
    /// measuring bit says no).
    pub fn primed(mut self, primed: bool) -> Self {
        self.unprimed = !primed;
        self
    }

    /// The rewritten code only counts calls on entry (the hidden
    /// `TIMES_CALL_COUNTS_ONLY` and `TIMES_CALL_COUNTS_INLINED` measuring
    /// bits).
    pub fn counting_calls_only(mut self, inlined: bool) -> Self {
        self.counts_inlined = inlined;
        self.injection = if inlined {
            Injection::inlined_call_counts()
        } else {
            Injection::call_counts()
        };
        self
    }

    /// At VM init, before any class is rewritten to call it: defines the
    /// Tracker in the boot loader from the bytes embedded in the agent
    /// (JNI `DefineClass`; no file is written, so there is nothing another
    /// user could plant or swap), sets the trace depth and engages it.
    /// Counting calls inlined, it then primes the count (`Tracker.prime()`:
    /// every way out of its fast path enters its profile, so C2 compiles
    /// them rather than deoptimizing the program's code the first time a
    /// thread takes one). A priming that threw (an error of the VM's own)
    /// costs only that: the counts stay exact.
    pub fn engage(&self, jni: &JniEnv) -> Result<(), String> {
        let tracker = Tracker::define(jni, self.depth)?;
        *self.tracker.lock() = Some(tracker);
        tracker.set_engaged(jni, 0xFFFF);
        if self.counts_inlined && !self.unprimed {
            let _ = tracker.prime(jni);
        }
        Ok(())
    }

    /// Starts the thread that keeps the Tracker's clock current: reading a
    /// field costs a timed call far less than two System.nanoTime() calls;
    /// the price is a resolution of about 1 ms, as HPROF's clock had.
    pub fn start_clock(&'static self, vm: jvm::VmHandle) {
        let Some(tracker) = self.tracker() else {
            return;
        };
        let spawned = std::thread::Builder::new()
            .name("HPROF tracker clock".into())
            .spawn(move || {
                crate::agent::run::threads::mark_agent_thread();
                let Some(jni) = vm.attach_daemon("HPROF tracker clock") else {
                    return;
                };
                while !self.clock_stop.load(std::sync::atomic::Ordering::Acquire) {
                    tracker.set_clock(&jni, crate::sys::monotonic_ns() as i64);
                    std::thread::sleep(CLOCK_PERIOD);
                }
                vm.detach();
            });
        if let Ok(handle) = spawned {
            *self.clock_thread.lock() = Some(handle);
        }
    }

    /// An attached profile stopped, its costs read: the Tracker lets go of
    /// the trace tree and the threads' tables it kept for them.
    pub fn forget_costs(&self, jni: &JniEnv) {
        if let Some(tracker) = self.tracker() {
            tracker.reset(jni);
        }
    }

    /// The Tracker's hooks return at once from now on; the clock goes on
    /// (alone: the hidden `TIMES_CALLS_ONLY` measuring bit).
    pub fn stop_timing_calls(&self, jni: &JniEnv) {
        if let Some(tracker) = self.tracker() {
            tracker.set_engaged(jni, 0);
        }
    }

    /// At VM death: calls stop being timed and the clock thread ends.
    pub fn disengage(&self, jni: &JniEnv) {
        self.stop_timing_calls(jni);
        self.clock_stop
            .store(true, std::sync::atomic::Ordering::Release);
        if let Some(handle) = self.clock_thread.lock().take() {
            let _ = handle.join();
        }
    }

    /// ClassFileLoadHook: the rewritten class, or None to load it unchanged.
    pub fn rewrite(&self, name: Option<&str>, bytes: &[u8]) -> Option<Vec<u8>> {
        if name == Some(bci::TRACKER_CLASS)
            || bytes.is_empty()
            || name.is_some_and(is_tracker_dependency)
            || name.is_some_and(jvm::is_module_reads_path)
        {
            return None;
        }
        // A class the filter leaves out gets no new class file at all (and
        // one the JVM names no name cannot match a filter).
        if self.filter.is_active() && !name.is_some_and(|n| self.filter.times(n)) {
            self.left_as_loaded
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            return None;
        }
        let mut classes = self.classes.lock();
        // (Read under the lock: a class is either listed before the stop
        // takes the names, or passed unchanged.)
        if self.passing_unchanged() {
            return None;
        }
        let key = name.map(|name| ClassKey::of(name, bytes));
        if let Some(again) = name
            .zip(key.as_ref())
            .and_then(|(name, key)| self.rewrite_again(&classes, name, key, bytes))
        {
            classes.reloads.note_reused();
            return Some(again);
        }
        let class_number = u32::try_from(classes.list.len()).ok()?;
        let outcome = bci::rewrite_class(bytes, class_number, &self.injection).ok()?;
        if !outcome.methods.iter().any(|m| m.rewritten) {
            return None;
        }
        if let Some(key) = key {
            let numbers = FirstNumbers {
                first: class_number,
                first_call_site: None,
                taken: (outcome.methods.len() as u32, 0),
            };
            classes.reloads.insert(key, numbers);
        }
        classes
            .list
            .push((name.unwrap_or("Unknown_class").to_owned(), outcome.methods));
        Some(outcome.bytes)
    }

    /// A class file rewritten before (the same bytes under the same name),
    /// rewritten again with the class number it got then, so that its
    /// methods keep their keys; None when not seen or the rewrite differs.
    fn rewrite_again(
        &self,
        classes: &TimedClasses,
        name: &str,
        key: &ClassKey,
        bytes: &[u8],
    ) -> Option<Vec<u8>> {
        let before = classes.reloads.get(key)?;
        let outcome = bci::rewrite_class(bytes, before.first, &self.injection).ok()?;
        let (class_name, methods) = classes.list.get(before.first as usize)?;
        let same = class_name == name
            && methods.len() == outcome.methods.len()
            && methods.iter().zip(&outcome.methods).all(|(a, b)| {
                (&a.name, &a.descriptor, a.rewritten) == (&b.name, &b.descriptor, b.rewritten)
            });
        same.then_some(outcome.bytes)
    }

    /// From now on the hook passes every class unchanged (an attached
    /// profile stops); the names of the classes it rewrote so far.
    pub fn pass_unchanged(&self) -> HashSet<String> {
        let classes = self.classes.lock();
        self.passing_unchanged
            .store(true, std::sync::atomic::Ordering::Release);
        classes.list.iter().map(|(name, _)| name.clone()).collect()
    }

    fn passing_unchanged(&self) -> bool {
        self.passing_unchanged
            .load(std::sync::atomic::Ordering::Acquire)
    }

    /// What `verbose=y` says at a dump of the rewriting once a class was
    /// defined again.
    pub fn describe(&self) -> Option<String> {
        let classes = self.classes.lock();
        let reloads = classes.reloads.describe()?;
        let methods: usize = classes.list.iter().map(|(_, m)| m.len()).sum();
        Some(format!("cpu=times: {reloads}, {methods} methods numbered"))
    }

    /// What `verbose=y` says at a dump under `include=` / `exclude=`: how
    /// many classes were rewritten and how many left as they were loaded.
    pub fn describe_filter(&self) -> Option<String> {
        if !self.filter.is_active() {
            return None;
        }
        let timed = self.classes.lock().list.len();
        let left = self
            .left_as_loaded
            .load(std::sync::atomic::Ordering::Relaxed);
        Some(format!(
            "cpu=times: include/exclude: {timed} classes rewritten, {left} left as loaded"
        ))
    }

    /// What method key names.
    pub fn method(&self, key: u64) -> Option<TimedMethod> {
        let classes = self.classes.lock();
        let (class_name, methods) = classes.list.get((key >> 32) as usize)?;
        let info = methods.get((key & 0xFFFF_FFFF) as usize)?;
        Some(TimedMethod {
            class_name: class_name.clone(),
            method_name: info.name.clone(),
            descriptor: info.descriptor.clone(),
        })
    }

    /// The key of every rewritten method, by (internal class name, method
    /// name, descriptor): how a sampled frame is found to be a counted
    /// method. A class defined again with other bytes under the same name
    /// gives its methods the key of its first definition here.
    pub fn keys_by_name(&self) -> HashMap<(String, String, String), u64> {
        let classes = self.classes.lock();
        let mut keys = HashMap::new();
        for (class_number, (class_name, methods)) in classes.list.iter().enumerate() {
            for (method_number, info) in methods.iter().enumerate() {
                if info.rewritten {
                    let key = ((class_number as u64) << 32) | method_number as u64;
                    keys.entry((
                        class_name.clone(),
                        info.name.clone(),
                        info.descriptor.clone(),
                    ))
                    .or_insert(key);
                }
            }
        }
        keys
    }

    /// ThreadEnd, on the ending thread: the Tracker folds the thread's
    /// counts into the totals of `serial` and drops its state.
    pub fn thread_ended(&self, jni: &JniEnv, serial: u32) {
        if let Some(tracker) = self.tracker() {
            tracker.ended(jni, serial);
        }
    }

    /// The Tracker, copied out of its lock. Never call into the Tracker
    /// with the lock held: its Java code may call back into the agent on
    /// this very thread (an allocation event; an ExceptionCatch callback
    /// that took the lock again once wedged an ending thread).
    fn tracker(&self) -> Option<Tracker> {
        *self.tracker.lock()
    }

    /// Counting calls only: the first call of each method on each thread
    /// is told to `to` from now on.
    pub fn report_first_calls(
        &self,
        env: &Jvmti,
        jni: &JniEnv,
        to: &'static dyn crate::agent::jvm::timing_tracker::FirstCalls,
    ) -> Result<(), String> {
        match self.tracker() {
            Some(tracker) => tracker.report_first_calls(env, jni, to),
            None => Err("the Tracker is not defined".into()),
        }
    }

    /// Every thread's costs since the last call, read from the Tracker:
    /// (thread serial, method keys of the trace innermost first, costs).
    pub fn take_costs(&self, env: &Jvmti, jni: &JniEnv) -> Vec<(u32, Vec<u64>, CallCosts)> {
        let Some(tracker) = self.tracker() else {
            return Vec::new();
        };
        let Some(drained) = tracker.drain(env, jni) else {
            eprintln!(
                "HPROF: cpu=times could not read the timing tables at this dump (busy, or the dump came from inside them); the next dump has these calls"
            );
            return Vec::new();
        };
        let Drained {
            thread_serials: serials,
            new_nodes,
            data,
            failure,
        } = drained;
        if let Some(why) = failure {
            if !self
                .failure_reported
                .swap(true, std::sync::atomic::Ordering::Relaxed)
            {
                eprintln!(
                    "HPROF ERROR: cpu=times stopped timing a thread after an error in the profiler's \
                     Tracker ({why}); the program continues, that thread's later calls are not counted"
                );
            }
        }
        let mut nodes = self.nodes.lock();
        add_nodes(&mut nodes, &new_nodes);
        parse_costs(&serials, &nodes, self.depth, &data)
    }
}

/// Appends the Tracker's new trace nodes (first node number, then method
/// key and caller node per node) to `nodes`; ignored unless they continue
/// it.
fn add_nodes(nodes: &mut Vec<(u64, i64)>, new_nodes: &[i64]) {
    let Some((&first, pairs)) = new_nodes.split_first() else {
        return;
    };
    if first != nodes.len() as i64 {
        return;
    }
    nodes.extend(pairs.chunks_exact(2).map(|p| (p[0] as u64, p[1])));
}

/// The method keys of node `node`'s trace, innermost first (at most
/// `depth`: a malformed caller chain cannot loop).
fn trace_keys(nodes: &[(u64, i64)], node: i64, depth: u32) -> Vec<u64> {
    let mut keys = Vec::new();
    let mut at = node;
    while let Some(&(key, caller)) = usize::try_from(at).ok().and_then(|i| nodes.get(i)) {
        if keys.len() >= depth as usize {
            break;
        }
        keys.push(key);
        at = caller;
    }
    keys
}

/// Classes the Tracker's own code runs (thread-locals, arrays, the clock):
/// timing them would make every timed call call itself.
fn is_tracker_dependency(name: &str) -> bool {
    const PREFIXES: [&str; 6] = [
        "java/lang/ThreadLocal",
        "java/lang/ref/",
        "java/util/Arrays",
        "java/lang/Math",
        "java/lang/System",
        "java/lang/Thread",
    ];
    PREFIXES.iter().any(|prefix| name.starts_with(prefix))
}

/// Decodes the Tracker's drain() data: per trace, owner (a thread index,
/// or -serial-1 for the folded totals of a finished thread), tree node,
/// calls, self ns, total ns.
fn parse_costs(
    thread_serials: &[u32],
    nodes: &[(u64, i64)],
    depth: u32,
    data: &[i64],
) -> Vec<(u32, Vec<u64>, CallCosts)> {
    data.chunks_exact(5)
        .map(|record| {
            let owner = record[0];
            let serial = if owner < 0 {
                u32::try_from(-(owner + 1)).unwrap_or(0)
            } else {
                usize::try_from(owner)
                    .ok()
                    .and_then(|i| thread_serials.get(i))
                    .copied()
                    .unwrap_or(0)
            };
            let costs = CallCosts {
                count: record[2] as u64,
                self_time: record[3] as u64,
                total_time: record[4] as u64,
            };
            (serial, trace_keys(nodes, record[1], depth), costs)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_class_outside_the_filter_gets_no_new_class_file() {
        let mut filter = ClassFilter::default();
        let parsed = crate::options::parse(Some("cpu=times,include=com.acme.*"), None);
        if let Ok(crate::options::Parsed::Options(options)) = parsed {
            filter = options.class_filter;
        }
        let timing = MethodTiming::new(4, filter);
        // Any real class file will do (not the Tracker's, which is never
        // rewritten): LockTracker's, under other names.
        let bytes = bci::LOCK_TRACKER_CLASS_FILE;
        assert!(timing.rewrite(Some("org/other/Bar"), bytes).is_none());
        assert!(timing.rewrite(Some("com/acme/deep/Bar"), bytes).is_none());
        assert!(timing.rewrite(None, bytes).is_none(), "no name, no match");
        assert!(timing.rewrite(Some("com/acme/Foo"), bytes).is_some());
        assert_eq!(
            timing.describe_filter().as_deref(),
            Some("cpu=times: include/exclude: 1 classes rewritten, 3 left as loaded")
        );
        let unfiltered = MethodTiming::new(4, ClassFilter::default());
        assert!(unfiltered.rewrite(Some("org/other/Bar"), bytes).is_some());
        assert_eq!(unfiltered.describe_filter(), None);
    }

    #[test]
    fn drained_data_decodes_per_trace() {
        // Nodes: 0 = key 9 (outermost), 1 = key 7 called from 0, 2 = key 8.
        let mut nodes = Vec::new();
        add_nodes(&mut nodes, &[0, 9, -1, 7, 0]);
        add_nodes(&mut nodes, &[5, 1, -1]);
        assert_eq!(
            nodes.len(),
            2,
            "nodes that do not continue the tree are ignored"
        );
        add_nodes(&mut nodes, &[2, 8, -1]);
        let data = [0, 1, 5, 100, 300, -200_003, 2, 1, 10, 10];
        let costs = parse_costs(&[200_001, 200_002], &nodes, 4, &data);
        assert_eq!(costs.len(), 2);
        assert_eq!(
            costs[0],
            (
                200_001,
                vec![7, 9],
                CallCosts {
                    count: 5,
                    self_time: 100,
                    total_time: 300
                }
            )
        );
        assert_eq!(
            costs[1],
            (
                200_002,
                vec![8],
                CallCosts {
                    count: 1,
                    self_time: 10,
                    total_time: 10
                }
            )
        );
        assert!(
            parse_costs(&[], &nodes, 4, &[0, 5, 1]).is_empty(),
            "truncated data is ignored"
        );
        assert_eq!(trace_keys(&nodes, 1, 1), vec![7], "at most depth frames");
    }
}
