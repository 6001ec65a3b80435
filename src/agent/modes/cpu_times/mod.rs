//! The cpu=times / cpu=old engine: classes are rewritten to report each
//! call to the Tracker (`modes/cpu_times/timing.rs`, which links the agent to it); a dump
//! reads the Tracker's costs and writes the CPU TIME section, or for
//! cpu=old the old "prof" table, naming each timed method.

mod attached;
mod first_calls;
pub mod from_samples;
pub mod timing;
mod traces;

use crate::agent::jvm::thread_stacks;
use crate::agent::run::engine::{Engine, Run};
use crate::emit::clock::ctime_now;
use crate::emit::times::TraceTime;
use crate::model::Model;
use crate::options::{ClassFilter, experiment};
use first_calls::FirstCallTraces;
use from_samples::SampleFeed;
use jvmti_bindings::prelude::*;
use parking_lot::Mutex;
use std::collections::HashMap;
use timing::{CallCosts, MethodTiming, TimedMethod};
use traces::{intern_timed, trace_time};

/// The costs of one trace as the Tracker hands them over: thread serial,
/// method keys innermost first, costs.
type Drained = (u32, Vec<u64>, CallCosts);

/// State of cpu=times and cpu=old.
pub struct MethodTimes {
    /// The link to the Tracker (defined at VM init).
    timing: MethodTiming,
    /// The costs read in the dump's first step, for its section.
    drained: Mutex<Vec<Drained>>,
    /// Attached to a running JVM: the classes loaded before are
    /// retransformed at the start and restored at the stop (attached.rs).
    attached: bool,
    /// `timing=samples`: calls are only counted, times and traces come
    /// from these samples.
    samples: Option<SampleFeed>,
    /// With `samples`: the trace of each method's first call.
    first_calls: FirstCallTraces,
    /// The hidden measuring bits (`options::experiment`).
    experiment: i64,
}

impl MethodTimes {
    /// Timing with traces of `depth` frames of the classes `filter` chooses
    /// (the Tracker class is defined at VM init, see `start`).
    pub fn new(depth: u32, filter: ClassFilter) -> Self {
        Self {
            timing: MethodTiming::new(depth, filter),
            drained: Mutex::default(),
            attached: false,
            samples: None,
            first_calls: FirstCallTraces::default(),
            experiment: 0,
        }
    }

    /// The hidden measuring bits (`TIMES_NO_FIRST_CALLS`, `TIMES_UNPRIMED`,
    /// `TIMES_STACKS_AS_ASKED`).
    pub fn with_experiment(mut self, bits: i64) -> Self {
        self.experiment = bits;
        self.timing = self.timing.primed(bits & experiment::TIMES_UNPRIMED == 0);
        self
    }

    /// `timing=samples`: the rewritten code counts calls on entry (inlined),
    /// and `feed`'s samples give the times and the traces.
    pub fn timed_from_samples(self, feed: SampleFeed) -> Self {
        let mut times = self.counting_calls_only(true);
        times.samples = Some(feed);
        times
    }

    /// Calls are counted on entry and nothing is timed (the hidden
    /// `TIMES_CALL_COUNTS_ONLY` measuring bit; `inlined`: by a method the
    /// JIT may inline, `TIMES_CALL_COUNTS_INLINED`).
    pub fn counting_calls_only(mut self, inlined: bool) -> Self {
        self.timing = self.timing.counting_calls_only(inlined);
        self
    }

    /// The profile starts in a running JVM (`hprof-rs attach`).
    pub fn set_attached(&mut self) {
        self.attached = true;
    }

    /// The Tracker link (for the class-rewriting and exception callbacks).
    pub fn timing(&self) -> &MethodTiming {
        &self.timing
    }
}

/// The timed calls since the last dump, one entry per trace (costs start
/// over after each dump, as HPROF's did). `method` names a method key;
/// with `per_thread` traces are kept per thread serial.
fn method_times(
    model: &mut Model,
    drained: Vec<Drained>,
    method: impl Fn(u64) -> Option<TimedMethod>,
    per_thread: bool,
) -> Vec<TraceTime> {
    let mut by_trace: HashMap<u32, TraceTime> = HashMap::new();
    for (thread_serial, keys, costs) in drained {
        let methods: Vec<_> = keys.iter().map(|&k| method(k)).collect();
        let trace_serial =
            intern_timed(model, &keys, &methods, per_thread.then_some(thread_serial));
        let entry = by_trace
            .entry(trace_serial)
            .or_insert_with(|| trace_time(trace_serial, &methods));
        entry.calls += costs.count;
        entry.self_ns += costs.self_time;
        entry.total_ns += costs.total_time;
    }
    by_trace.into_values().collect()
}

impl Engine for MethodTimes {
    /// Every timed method is rewritten.
    fn stack_factor(&self) -> u32 {
        if self.experiment & experiment::TIMES_STACKS_AS_ASKED != 0 {
            return 1;
        }
        thread_stacks::TIMED_CODE_FACTOR
    }

    fn add_capabilities(
        &self,
        caps: &mut jvmti::jvmtiCapabilities,
        _potential: &jvmti::jvmtiCapabilities,
    ) {
        caps.set_can_generate_all_class_hook_events(true);
        // No exception events: a rewritten method reports its exit by an
        // exception itself (a catch-all handler that rethrows). While an
        // agent holds that capability HotSpot deoptimizes every frame an
        // exception leaves, timed or not.
        if self.attached {
            caps.set_can_retransform_classes(true);
        }
    }

    /// Engages the Tracker and starts its clock; the class-rewriting event
    /// is enabled only once it is engaged.
    fn start(&'static self, run: &'static Run, jni: Option<&JniEnv>) {
        let Some(jni) = jni else {
            return;
        };
        let timing = &self.timing;
        match timing.engage(jni) {
            Ok(()) => {
                // (Counting needs no clock.)
                if self.samples.is_none() {
                    timing.start_clock(run.vm);
                }
                if run.options.experiment & experiment::TIMES_CALLS_ONLY != 0 {
                    timing.stop_timing_calls(jni);
                }
                let env = run.jvmti.env();
                let no_first_calls = self.experiment & experiment::TIMES_NO_FIRST_CALLS != 0;
                if self.samples.is_some() && !no_first_calls {
                    self.first_calls.start(run, timing);
                    if let Err(why) = timing.report_first_calls(&env, jni, &self.first_calls) {
                        // (Methods no sample saw keep a trace of their own frame.)
                        eprintln!("HPROF ERROR: cpu=times: {why}");
                    }
                }
                let events = [jvmti::JVMTI_EVENT_CLASS_FILE_LOAD_HOOK];
                if let Err(error) = env.enable_events_global(&events) {
                    eprintln!("HPROF ERROR: cpu=times cannot run: events ({error:?})");
                } else if self.attached {
                    attached::time_loaded_classes(&env, jni, run.options.verbose);
                }
            }
            Err(why) => eprintln!("HPROF ERROR: cpu=times cannot run: {why}"),
        }
    }

    /// The Tracker folds the thread's counts into its serial's (runs Java
    /// code, whose allocations may call back into the agent: never under
    /// the model lock). Without thread=y all finished threads' traces are
    /// kept together.
    fn thread_ended(&self, run: &Run, jni: Option<&JniEnv>, serial: Option<u32>) {
        if let (Some(jni), Some(serial)) = (jni, serial) {
            self.timing
                .thread_ended(jni, if run.traces.per_thread { serial } else { 0 });
        }
    }

    /// Calls are no longer timed from here on (HPROF disengaged its
    /// Tracker at the start of VM death too).
    fn stop(&self, _run: &Run, jni: Option<&JniEnv>) {
        if let Some(jni) = jni {
            self.timing.disengage(jni);
        }
    }

    /// Attached, at the stop: the rewritten classes get their own byte code
    /// back, and the Tracker lets go of what it kept for this profile.
    fn detach(&self, run: &Run, jni: Option<&JniEnv>) {
        if let (true, Some(jni)) = (self.attached, jni) {
            attached::restore_classes(&self.timing, &run.jvmti.env(), jni, run.options.verbose);
            self.timing.forget_costs(jni);
        }
    }

    fn dump_announcement(&self, run: &Run) -> &'static str {
        if run.options.cpu_old {
            " CPU usage in old prof format ..."
        } else {
            " CPU usage by timing methods ..."
        }
    }

    /// The Tracker's costs are read before the model is locked: reading
    /// runs Java code, whose allocations may call back into the agent.
    fn prepare_dump(&self, run: &Run, jni: Option<&JniEnv>) -> Result<(), String> {
        if let Some(jni) = jni {
            *self.drained.lock() = self.timing.take_costs(&run.jvmti.env(), jni);
        }
        // The agent's own notes, not HPROF's progress line: with debug=y.
        if run.options.debug {
            for line in [self.timing.describe(), self.timing.describe_filter()]
                .into_iter()
                .flatten()
            {
                eprintln!("\nHPROF: {line}");
            }
        }
        Ok(())
    }

    fn dump_section(&self, run: &Run, model: &mut Model, out: &mut Vec<u8>) {
        self.section(run, model, run.options.cutoff, out);
    }
}

impl MethodTimes {
    /// The CPU TIME section (or cpu=old table) of the costs read by
    /// `prepare_dump`, rows under `cutoff` left out.
    pub fn section(&self, run: &Run, model: &mut Model, cutoff: f64, out: &mut Vec<u8>) {
        let timing = &self.timing;
        let drained = std::mem::take(&mut *self.drained.lock());
        let per_thread = run.traces.per_thread;
        let times = match &self.samples {
            None => method_times(model, drained, |k| timing.method(k), per_thread),
            Some(feed) => {
                let samples = std::mem::take(&mut *feed.counts.lock());
                let mut calls: HashMap<(Option<u32>, u64), u64> = HashMap::new();
                for (serial, keys, costs) in drained {
                    if let Some(&key) = keys.first() {
                        let thread = per_thread.then_some(serial);
                        *calls.entry((thread, key)).or_default() += costs.count;
                    }
                }
                let keys = timing.keys_by_name();
                let key_of = |class: &str, name: &str, descriptor: &str| {
                    keys.get(&(class.to_owned(), name.to_owned(), descriptor.to_owned()))
                        .copied()
                };
                from_samples::rows(
                    model,
                    &samples,
                    &calls,
                    |model, key| self.first_calls.trace_of(model, key),
                    key_of,
                    |k| timing.method(k),
                    run.options.prof_trace_depth as usize,
                    feed.interval_ns,
                )
            }
        };
        out.extend(if run.options.cpu_old {
            run.emitter.old_prof(&times)
        } else {
            run.emitter.cpu_times(model, &times, cutoff, ctime_now())
        });
    }

    /// The costs so far are dropped: counting starts over (a `net=` front
    /// end's CONTROL "clear CPU costs").
    pub fn clear_costs(&self, run: &Run, jni: &JniEnv) {
        let _ = self.prepare_dump(run, Some(jni));
        self.drained.lock().clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn method(class_name: &str, method_name: &str, descriptor: &str) -> TimedMethod {
        TimedMethod {
            class_name: class_name.into(),
            method_name: method_name.into(),
            descriptor: descriptor.into(),
        }
    }

    #[test]
    fn a_row_names_the_method_dotted_and_its_caller_with_descriptors() {
        let methods = [
            Some(method("java/lang/String", "indexOf", "(I)I")),
            Some(method("com/example/Main$Inner", "run", "()V")),
            Some(method("com/example/Main", "main", "([Ljava/lang/String;)V")),
        ];
        let row = trace_time(7, &methods);
        assert_eq!(row.trace_serial, 7);
        assert_eq!(row.method, "java.lang.String.indexOf");
        assert_eq!(row.callee, "java.lang.String.indexOf(I)I");
        assert_eq!(row.caller.as_deref(), Some("com.example.Main$Inner.run()V"));
        assert_eq!((row.calls, row.self_ns, row.total_ns), (0, 0, 0));
    }

    #[test]
    fn unknown_methods_and_missing_callers_have_hprofs_names() {
        let row = trace_time(1, &[None, Some(method("A", "b", "()V"))]);
        assert_eq!(row.method, "<Unknown Method>");
        assert_eq!(row.callee, "<unknown callee>");
        assert_eq!(row.caller.as_deref(), Some("A.b()V"));
        let alone = trace_time(2, &[Some(method("p/Q", "r", "(J)V"))]);
        assert_eq!((alone.method.as_str(), alone.caller), ("p.Q.r", None));
        let empty = trace_time(3, &[]);
        assert_eq!(
            (empty.method.as_str(), empty.callee.as_str(), empty.caller),
            ("<Unknown Method>", "<unknown callee>", None)
        );
        let unknown_caller = trace_time(4, &[Some(method("p/Q", "r", "(J)V")), None]);
        assert_eq!(unknown_caller.caller, None);
    }

    #[test]
    fn costs_of_one_trace_add_up_and_threads_split_only_with_thread_y() {
        let costs = |count, self_time, total_time| CallCosts {
            count,
            self_time,
            total_time,
        };
        let drained = || {
            vec![
                (1, vec![10, 20], costs(2, 100, 300)),
                (2, vec![10, 20], costs(3, 50, 60)),
                (1, vec![20], costs(1, 5, 5)),
            ]
        };
        let name = |key: u64| Some(method("C", &format!("m{key}"), "()V"));
        let mut model = Model::new(false);
        let mut shared = method_times(&mut model, drained(), name, false);
        shared.sort_by_key(|t| t.trace_serial);
        let rows: Vec<_> = shared
            .iter()
            .map(|t| (t.method.as_str(), t.calls, t.self_ns, t.total_ns))
            .collect();
        assert_eq!(rows, [("C.m10", 5, 150, 360), ("C.m20", 1, 5, 5)]);
        assert_eq!(shared[0].caller.as_deref(), Some("C.m20()V"));

        let mut model = Model::new(false);
        let per_thread = method_times(&mut model, drained(), name, true);
        assert_eq!(per_thread.len(), 3, "one row per thread and trace");
    }
}
