//! The cpu=samples engine: the sampler (`modes/cpu_samples/sampler.rs`, with the per-thread
//! CPU timers of `modes/cpu_samples/cpu_timers.rs`) reports which threads used CPU and where;
//! each tick is counted here per trace, and a dump writes the CPU SAMPLES
//! section (counts start over after each dump, as HPROF's did).

pub mod async_trace;
pub mod cpu_timers;
mod polled;
pub mod sampler;
pub mod virtual_threads;

use crate::agent::jvm::libjvm;
use crate::agent::jvm::{self, LocalClass, LocalThread, RawFrame};
use crate::agent::run::engine::{Engine, Run};
use crate::agent::run::traces::TracePolicy;
use crate::emit::clock::ctime_now;
use crate::model::Model;
use crate::options::{Options, experiment};
use async_trace::Walker;
use jvmti_bindings::prelude::*;
use parking_lot::Mutex;
use sampler::{Collected, CpuSampling, Ran, Stack};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use virtual_threads::VirtualThreads;

/// State of cpu=samples.
pub struct CpuSamples {
    /// The sampler, when it could be set up (without it the section is
    /// still written, empty).
    sampling: Option<CpuSampling>,
    /// Samples per trace since the last dump (shared with cpu=times when
    /// it takes its times from these samples).
    counts: Arc<Mutex<HashMap<u32, u64>>>,
    /// Set when the samples feed cpu=times instead of a CPU SAMPLES
    /// section: how their traces are made (deeper, no line numbers).
    feeding_times: Option<TracePolicy>,
    /// The last stack walked on each live timed thread, by serial: the
    /// stack an interval still due when it ends is charged to.
    last_stacks: Mutex<HashMap<u32, LastStack>>,
    /// Which threads are sampled (a `net=` front end's CONTROL).
    sampled: SampledThreads,
    /// With `thread=y`, the virtual threads the carriers ran, to charge
    /// their samples to them (None when stacks are not walked in the
    /// handler: JVMTI gives the carrier's own stack).
    virtual_threads: Option<VirtualThreads>,
    /// Whether the JVM has virtual threads to name (JDK 21+), known once
    /// capabilities are added.
    names_virtual_threads: AtomicBool,
    /// CompiledMethodLoad events on, for HotSpot's `DebugNonSafepoints`,
    /// when the flag itself could not be set.
    debug_info_through_events: bool,
}

/// The last stack walked on a thread.
enum LastStack {
    /// The trace of its last sample.
    Sampled(u32),
    /// A look before its first sample was due (no trace made for it yet):
    /// the frames, and the virtual thread it ran (0 for none).
    Seen(Vec<RawFrame>, u64),
}

/// Which threads' samples count: every thread unless a front end turned
/// sampling off for some (or all but some).
#[derive(Default)]
struct SampledThreads {
    /// Sampling is off for threads not listed in `exceptions`.
    off_by_default: AtomicBool,
    /// Serials of the threads whose sampling differs from the default.
    exceptions: Mutex<HashSet<u32>>,
}

impl SampledThreads {
    fn is_sampled(&self, serial: u32) -> bool {
        let off = self.off_by_default.load(Ordering::Acquire);
        off == self.exceptions.lock().contains(&serial)
    }

    /// Sampling on or off for the thread `serial`, or for all (`None`).
    fn set(&self, serial: Option<u32>, on: bool) {
        let mut exceptions = self.exceptions.lock();
        match serial {
            None => {
                self.off_by_default.store(!on, Ordering::Release);
                exceptions.clear();
            }
            Some(serial) => {
                let differs = on == self.off_by_default.load(Ordering::Acquire);
                if differs {
                    exceptions.insert(serial);
                } else {
                    exceptions.remove(&serial);
                }
            }
        }
    }
}

impl CpuSamples {
    /// Sampling every `interval` of CPU, `depth` frames deep; installs
    /// the signal handler, or says why sampling cannot run.
    pub fn new(options: &Options) -> Self {
        let walker = match options.experiment {
            x if x & experiment::SAMPLES_THROUGH_JVMTI != 0 => None,
            x if x & experiment::FAULTING_STACK_WALK != 0 => Some(Walker::Faulting),
            _ => Some(Walker::AsyncGetCallTrace),
        };
        let sampling =
            CpuSampling::new(options.interval_ms, options.depth, walker, options.verbose)
                .map_err(|why| eprintln!("HPROF ERROR: cpu=samples cannot run: {why}"))
                .ok();
        let walks_in_handler = sampling
            .as_ref()
            .is_some_and(CpuSampling::can_walk_in_handler);
        let wants_debug_info = walks_in_handler
            && options.experiment & experiment::SAMPLES_WITHOUT_DEBUG_NON_SAFEPOINTS == 0;
        let debug_info_through_events =
            wants_debug_info && !libjvm::set_bool_flag(c"DebugNonSafepoints", true);
        if options.verbose && debug_info_through_events {
            eprintln!(
                "HPROF: DebugNonSafepoints not found in the JVM's flags; \
                 turned on through CompiledMethodLoad events"
            );
        }
        Self {
            sampling,
            counts: Arc::default(),
            feeding_times: None,
            last_stacks: Mutex::default(),
            sampled: SampledThreads::default(),
            virtual_threads: (walks_in_handler && options.thread).then(VirtualThreads::default),
            names_virtual_threads: AtomicBool::new(false),
            debug_info_through_events,
        }
    }

    /// Samples for cpu=times (`timing=samples`): every `interval_ms` of
    /// CPU, stacks of `frames` frames without line numbers; no CPU SAMPLES
    /// section, the counts go to cpu=times through [`Self::shared_counts`].
    pub fn feeding_times(options: &Options, interval_ms: u32, frames: u32) -> Self {
        let mut sampled = options.clone();
        sampled.interval_ms = interval_ms;
        sampled.depth = frames;
        let mut samples = Self::new(&sampled);
        samples.feeding_times = Some(TracePolicy {
            depth: frames,
            per_thread: options.thread,
            line_numbers: false,
        });
        samples
    }

    /// The samples per trace, shared.
    pub fn shared_counts(&self) -> Arc<Mutex<HashMap<u32, u64>>> {
        Arc::clone(&self.counts)
    }

    /// How a sample's trace is made: as the run's traces, or as cpu=times
    /// wants them when fed.
    fn trace_policy<'a>(&'a self, run: &'a Run) -> &'a TracePolicy {
        self.feeding_times.as_ref().unwrap_or(&run.traces)
    }

    /// One sampler tick: count the stacks of the threads that ran.
    fn tick(&self, run: &Run, jni: &JniEnv) {
        if run.lifecycle.accepting_events() {
            self.count_collected(run, jni);
        }
    }

    /// Counts what the sampler collected: each sample at its stack, and the
    /// intervals an ended thread used after its last sample at the last
    /// stack it had.
    fn count_collected(&self, run: &Run, jni: &JniEnv) {
        let Some(sampling) = &self.sampling else {
            return;
        };
        let env = run.jvmti.env();
        let Collected { mut ran, ended } = sampling.collect(&env);
        ran.extend(sampling.collect_polled(&env, jni));
        if ran.is_empty() && ended.is_empty() {
            return;
        }
        let mut counted: Vec<(u32, u32)> = Vec::new();
        let mut last_stacks = self.last_stacks.lock();
        let mut model = run.model.lock();
        for r in ran {
            let Ran {
                serial,
                mounted,
                intervals,
                stack,
            } = r;
            match (stack, intervals) {
                (Stack::Frames(frames), 0) => {
                    last_stacks.insert(serial, LastStack::Seen(frames, mounted));
                }
                (Stack::Unwalkable(_), 0) => {}
                _ if !self.sampled.is_sampled(serial) => {}
                (Stack::Frames(frames), _) => {
                    let owner = self.owner(run, &env, jni, &mut model, serial, mounted);
                    let trace = self
                        .trace_policy(run)
                        .intern(&env, &mut model, &frames, owner);
                    last_stacks.insert(serial, LastStack::Sampled(trace));
                    counted.push((trace, intervals));
                }
                (Stack::Unwalkable(why), _) => {
                    let owner = self.owner(run, &env, jni, &mut model, serial, mounted);
                    let trace =
                        run.traces
                            .intern_pseudo(&mut model, why.frame_name(), why.code(), owner);
                    counted.push((trace, intervals));
                }
            }
        }
        for end in ended {
            let last = last_stacks.remove(&end.serial);
            if end.intervals == 0 || !self.sampled.is_sampled(end.serial) {
                continue;
            }
            let trace = match last {
                Some(LastStack::Sampled(trace)) => trace,
                Some(LastStack::Seen(frames, mounted)) => {
                    let owner = self.owner(run, &env, jni, &mut model, end.serial, mounted);
                    self.trace_policy(run)
                        .intern(&env, &mut model, &frames, owner)
                }
                None => run.traces.intern_no_java_frames(&mut model, end.serial),
            };
            counted.push((trace, end.intervals));
        }
        drop(model);
        drop(last_stacks);
        let mut counts = self.counts.lock();
        for (trace, intervals) in counted {
            *counts.entry(trace).or_default() += u64::from(intervals);
        }
    }

    /// The serial a sample of the thread `serial` is charged to: the
    /// virtual thread it ran (`mounted`), when those are named, else its own.
    fn owner(
        &self,
        run: &Run,
        env: &Jvmti,
        jni: &JniEnv,
        model: &mut Model,
        serial: u32,
        mounted: u64,
    ) -> u32 {
        self.virtual_threads
            .as_ref()
            .filter(|_| mounted != 0)
            .and_then(|names| names.serial_of(run, env, jni, model, mounted))
            .unwrap_or(serial)
    }
}

impl Engine for CpuSamples {
    /// Line numbers at any instruction: compiled code must record debug
    /// information at every instruction, not only at safepoints. HotSpot
    /// does so when its diagnostic flag `DebugNonSafepoints` is on, or when
    /// CompiledMethodLoad events are on (`code/debugInfoRec.cpp`,
    /// `compute_recording_non_safepoints`). The flag is set directly (see
    /// `new`); the events, whose posting costs up to 5% on a program that
    /// compiles much (javac), are the fallback.
    fn add_capabilities(
        &self,
        caps: &mut jvmti::jvmtiCapabilities,
        potential: &jvmti::jvmtiCapabilities,
    ) {
        if self.virtual_threads.is_some() && potential.can_support_virtual_threads() {
            caps.set_can_support_virtual_threads(true);
            self.names_virtual_threads.store(true, Ordering::Relaxed);
        }
        // (Read for the threads already running when attached to a live JVM.)
        caps.set_can_get_thread_cpu_time(potential.can_get_thread_cpu_time());
        if self.debug_info_through_events {
            caps.set_can_generate_compiled_method_load_events(
                potential.can_generate_compiled_method_load_events(),
            );
        }
    }

    /// CompiledMethodLoad on from the start, before anything is compiled
    /// (its callback does nothing).
    fn on_load(&self, jvmti: &Jvmti) -> Result<(), String> {
        if self.debug_info_through_events {
            let _ = jvmti.enable_events_global(&[jvmti::JVMTI_EVENT_COMPILED_METHOD_LOAD]);
        }
        Ok(())
    }

    /// AsyncGetCallTrace needs ClassLoad events on (it refuses otherwise)
    /// and a jmethodID for every method (made at ClassPrepare); virtual
    /// threads, when named, are let go at their end.
    fn live_events(&self) -> &'static [jvmti::jvmtiEvent] {
        if self.names_virtual_threads.load(Ordering::Relaxed) {
            &[
                jvmti::JVMTI_EVENT_CLASS_LOAD,
                jvmti::JVMTI_EVENT_CLASS_PREPARE,
                jvmti::JVMTI_EVENT_VIRTUAL_THREAD_END,
            ]
        } else if self.walks_in_handler() {
            &[
                jvmti::JVMTI_EVENT_CLASS_LOAD,
                jvmti::JVMTI_EVENT_CLASS_PREPARE,
            ]
        } else {
            &[]
        }
    }

    /// The classes loaded so far get their jmethodIDs (those prepared from
    /// now on get them at ClassPrepare, whose events are on already), then
    /// the signal handler walks stacks and the sampler thread starts.
    fn start(&'static self, run: &'static Run, jni: Option<&JniEnv>) {
        if let Some(sampling) = &self.sampling {
            if self.walks_in_handler() {
                let env = run.jvmti.env();
                for class in jvm::loaded_classes(&env, jni) {
                    jvm::create_method_ids(&env, class.get());
                }
            }
            // A JVM without virtual threads (before JDK 19) has none to
            // name, and nothing to say about it; one with virtual threads
            // and without their mount events (JDK 19, 20) leaves them
            // unnamed, which is said.
            if let Some(names) = &self.virtual_threads
                && self.names_virtual_threads.load(Ordering::Relaxed)
                && !names.enable(run)
                && run.options.verbose
            {
                eprintln!("HPROF: this JVM has no virtual thread mount events; none named");
            }
            sampling.activate();
            sampling.start(run.vm, move |jni| self.tick(run, jni));
        }
    }

    /// It gets its CPU timer as a thread does at its ThreadStart (see
    /// `sampler.rs`), or its CPU clock is read at each tick (`polled.rs`).
    fn thread_running_at_attach(
        &self,
        run: &Run,
        jni: Option<&JniEnv>,
        thread: LocalThread<'_>,
        serial: u32,
    ) {
        if let (Some(sampling), Some(jni)) = (&self.sampling, jni) {
            sampling.thread_running_at_attach(jni, &run.jvmti.env(), thread, serial);
        }
    }

    /// No thread is signalled any more.
    fn detach(&self, _run: &Run, jni: Option<&JniEnv>) {
        if let Some(sampling) = &self.sampling {
            sampling.disarm(jni);
        }
    }

    /// Its CPU timer starts.
    fn thread_started(
        &self,
        _run: &Run,
        jni: Option<&JniEnv>,
        thread: LocalThread<'_>,
        serial: u32,
    ) {
        if let Some(sampling) = &self.sampling {
            sampling.thread_started(jni, thread, serial);
        }
    }

    /// Its CPU timers stop; the CPU it used since its last sample counts
    /// at the sampler's next look, at the last stack it had (its Java
    /// frames are gone: ThreadEnd comes after run() returned).
    fn thread_ended(&self, _run: &Run, jni: Option<&JniEnv>, serial: Option<u32>) {
        if let Some(sampling) = &self.sampling {
            sampling.thread_ended(jni, serial.is_some());
        }
    }

    /// The sampler stops, and what it had not looked at yet is counted.
    fn stop(&self, run: &Run, jni: Option<&JniEnv>) {
        if let Some(sampling) = &self.sampling {
            sampling.stop();
            // (Its local references go with the frame.)
            if let Some(jni) = jni
                && let Ok(frame) = jni.push_local_frame(64)
            {
                self.count_collected(run, jni);
                drop(frame);
            }
        }
    }

    fn dump_announcement(&self, _run: &Run) -> &'static str {
        match self.feeding_times {
            None => " CPU usage by sampling running threads ...",
            Some(_) => "",
        }
    }

    fn dump_section(&self, run: &Run, model: &mut Model, out: &mut Vec<u8>) {
        if self.feeding_times.is_some() {
            return;
        }
        // Counts start over after each dump, as HPROF's did.
        let counts = std::mem::take(&mut *self.counts.lock());
        out.extend(section(run, model, &counts, run.options.cutoff));
    }
}

/// The CPU SAMPLES section of `counts`, rows under `cutoff` left out.
fn section(run: &Run, model: &mut Model, counts: &HashMap<u32, u64>, cutoff: f64) -> Vec<u8> {
    let samples = crate::emit::cpu::samples_from(model, counts);
    run.emitter
        .cpu_samples(model, &samples, cutoff, ctime_now())
}

impl CpuSamples {
    /// True when stacks are to be walked in the signal handler.
    fn walks_in_handler(&self) -> bool {
        self.sampling
            .as_ref()
            .is_some_and(CpuSampling::can_walk_in_handler)
    }

    /// VirtualThreadEnd: a named virtual thread gets its THREAD END.
    pub fn virtual_thread_ended(&self, run: &Run, jni: &JniEnv, thread: LocalThread<'_>) {
        if let Some(names) = &self.virtual_threads {
            names.ended(run, &run.jvmti.env(), jni, thread);
        }
    }

    /// ClassPrepare: the class's methods get their jmethodIDs.
    pub fn class_prepared(&self, env: &Jvmti, class: LocalClass<'_>) {
        if self.walks_in_handler() {
            jvm::create_method_ids(env, class);
        }
    }
}

/// What a `net=` front end can ask of cpu=samples.
impl CpuSamples {
    /// The CPU SAMPLES section so far, with `cutoff`; the counts go on (as
    /// HPROF's did for this command).
    pub fn requested_section(&self, run: &Run, model: &mut Model, cutoff: f64) -> Vec<u8> {
        if self.feeding_times.is_some() {
            return Vec::new();
        }
        let counts = self.counts.lock().clone();
        section(run, model, &counts, cutoff)
    }

    /// Samples of the thread `serial` (or of every thread: `None`) count
    /// from now on, or no longer.
    pub fn set_sampling(&self, serial: Option<u32>, on: bool) {
        self.sampled.set(serial, on);
    }

    /// The counts start over.
    pub fn clear(&self) {
        self.counts.lock().clear();
    }
}
