//! The cpu=samples engine: the sampler (`modes/cpu_samples/sampler.rs`, with the per-thread
//! CPU timers of `modes/cpu_samples/cpu_timers.rs`) reports which threads used CPU and where;
//! each tick is counted here per trace, and a dump writes the CPU SAMPLES
//! section (counts start over after each dump, as HPROF's did).

pub mod async_trace;
pub mod cpu_timers;
pub mod sampler;
pub mod virtual_threads;

use crate::agent::jvm::libjvm;
use crate::agent::jvm::{self, LocalClass, LocalThread};
use crate::agent::run::engine::{Engine, Run};
use crate::emit::clock::ctime_now;
use crate::model::Model;
use crate::options::{Options, experiment};
use async_trace::Walker;
use jvmti_bindings::prelude::*;
use parking_lot::Mutex;
use sampler::{CpuSampling, Stack};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use virtual_threads::VirtualThreads;

/// State of cpu=samples.
pub struct CpuSamples {
    /// The sampler, when it could be set up (without it the section is
    /// still written, empty).
    sampling: Option<CpuSampling>,
    /// Samples per trace since the last dump.
    counts: Mutex<HashMap<u32, u64>>,
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
            counts: Mutex::default(),
            sampled: SampledThreads::default(),
            virtual_threads: (walks_in_handler && options.thread).then(VirtualThreads::default),
            names_virtual_threads: AtomicBool::new(false),
            debug_info_through_events,
        }
    }

    /// One sampler tick: count the stacks of the threads that ran.
    fn tick(&self, run: &Run, jni: &JniEnv) {
        let Some(sampling) = &self.sampling else {
            return;
        };
        if !run.lifecycle.accepting_events() {
            return;
        }
        let env = run.jvmti.env();
        let mut ran = sampling.collect(&env);
        ran.retain(|r| self.sampled.is_sampled(r.serial));
        if ran.is_empty() {
            return;
        }
        let mut model = run.model.lock();
        let traces: Vec<(u32, u32)> = ran
            .iter()
            .map(|r| {
                let serial = self
                    .virtual_threads
                    .as_ref()
                    .filter(|_| r.mounted != 0)
                    .and_then(|names| names.serial_of(run, &env, jni, &mut model, r.mounted))
                    .unwrap_or(r.serial);
                let trace = match &r.stack {
                    Stack::Frames(frames) => run.traces.intern(&env, &mut model, frames, serial),
                    Stack::Unwalkable(why) => {
                        run.traces
                            .intern_pseudo(&mut model, why.frame_name(), why.code(), serial)
                    }
                };
                (trace, r.intervals)
            })
            .collect();
        drop(model);
        let mut counts = self.counts.lock();
        for (trace, intervals) in traces {
            *counts.entry(trace).or_default() += u64::from(intervals);
        }
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
            if let Some(names) = &self.virtual_threads
                && !(self.names_virtual_threads.load(Ordering::Relaxed) && names.enable(run))
                && run.options.verbose
            {
                eprintln!("HPROF: this JVM has no virtual thread mount events; none named");
            }
            sampling.activate();
            sampling.start(run.vm, move |jni| self.tick(run, jni));
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

    /// Its CPU timer stops; the CPU it used since the sampler last looked
    /// counts with no Java frames (they are gone: ThreadEnd comes after
    /// run() returned).
    fn thread_ended(&self, run: &Run, jni: Option<&JniEnv>, serial: Option<u32>) {
        let Some(sampling) = &self.sampling else {
            return;
        };
        let unsampled = sampling.thread_ended(jni);
        if let (Some(_), Some((serial, intervals))) = (serial, unsampled)
            && self.sampled.is_sampled(serial)
        {
            let trace = run
                .traces
                .intern_no_java_frames(&mut run.model.lock(), serial);
            *self.counts.lock().entry(trace).or_default() += u64::from(intervals);
        }
    }

    fn stop(&self, _run: &Run, _jni: Option<&JniEnv>) {
        if let Some(sampling) = &self.sampling {
            sampling.stop();
        }
    }

    fn dump_announcement(&self, _run: &Run) -> &'static str {
        " CPU usage by sampling running threads ..."
    }

    fn dump_section(&self, run: &Run, model: &mut Model, out: &mut Vec<u8>) {
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
