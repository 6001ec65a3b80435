//! The cpu=samples engine: the sampler (`sampler.rs`, with the per-thread
//! CPU timers of `cpu_timers.rs`) reports which threads used CPU and where;
//! each tick is counted here per trace, and a dump writes the CPU SAMPLES
//! section (counts start over after each dump, as HPROF's did).

use crate::agent::async_trace::Walker;
use crate::agent::engine::{Engine, Run};
use crate::agent::jvm::{self, LocalClass, LocalThread};
use crate::agent::sampler::{CpuSampling, Stack};
use crate::format::ascii::time::ctime_now;
use crate::model::Model;
use crate::options::{Options, experiment};
use jvmti_bindings::prelude::*;
use parking_lot::Mutex;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};

/// State of cpu=samples.
pub struct CpuSamples {
    /// The sampler, when it could be set up (without it the section is
    /// still written, empty).
    sampling: Option<CpuSampling>,
    /// Samples per trace since the last dump.
    counts: Mutex<HashMap<u32, u64>>,
    /// Which threads are sampled (a `net=` front end's CONTROL).
    sampled: SampledThreads,
    /// CompiledMethodLoad events on, for HotSpot's `DebugNonSafepoints`
    /// (off only for a measurement, X=0x40000).
    debug_non_safepoints: bool,
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
        Self {
            sampling,
            counts: Mutex::default(),
            sampled: SampledThreads::default(),
            debug_non_safepoints: options.experiment
                & experiment::SAMPLES_WITHOUT_COMPILED_METHOD_LOAD
                == 0,
        }
    }

    /// One sampler tick: count the stacks of the threads that ran.
    fn tick(&self, run: &Run) {
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
                let trace = match &r.stack {
                    Stack::Frames(frames) => run.traces.intern(&env, &mut model, frames, r.serial),
                    Stack::Unwalkable(why) => {
                        run.traces
                            .intern_pseudo(&mut model, why.frame_name(), why.code(), r.serial)
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
    /// CompiledMethodLoad, for what turning its events on does in HotSpot:
    /// compiled code then records debug information at every instruction,
    /// not only at safepoints (`DebugNonSafepoints`, see
    /// `code/debugInfoRec.cpp`, `compute_recording_non_safepoints`), so a
    /// stack walked at any instruction names the right method and line.
    fn add_capabilities(
        &self,
        caps: &mut jvmti::jvmtiCapabilities,
        potential: &jvmti::jvmtiCapabilities,
    ) {
        if self.walks_in_handler() {
            caps.set_can_generate_compiled_method_load_events(
                potential.can_generate_compiled_method_load_events(),
            );
        }
    }

    /// CompiledMethodLoad on from the start, before anything is compiled
    /// (its callback does nothing).
    fn on_load(&self, jvmti: &Jvmti) -> Result<(), String> {
        if self.walks_in_handler() && self.debug_non_safepoints {
            let _ = jvmti.enable_events_global(&[jvmti::JVMTI_EVENT_COMPILED_METHOD_LOAD]);
        }
        Ok(())
    }

    /// AsyncGetCallTrace needs ClassLoad events on (it refuses otherwise)
    /// and a jmethodID for every method (made at ClassPrepare).
    fn live_events(&self) -> &'static [jvmti::jvmtiEvent] {
        if self.walks_in_handler() {
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
            sampling.activate();
            sampling.start(run.vm, move |_jni| self.tick(run));
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
