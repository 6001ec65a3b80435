//! The cpu=samples engine: the sampler (`sampler.rs`, with the per-thread
//! CPU timers of `cpu_timers.rs`) reports which threads used CPU and where;
//! each tick is counted here per trace, and a dump writes the CPU SAMPLES
//! section (counts start over after each dump, as HPROF's did).

use crate::agent::engine::{Engine, Run};
use crate::agent::jvm::LocalThread;
use crate::agent::sampler::CpuSampling;
use crate::format::ascii::time::ctime_now;
use crate::model::Model;
use jvmti_bindings::prelude::*;
use parking_lot::Mutex;
use std::collections::HashMap;

/// State of cpu=samples.
pub struct CpuSamples {
    /// The sampler, when it could be set up (without it the section is
    /// still written, empty).
    sampling: Option<CpuSampling>,
    /// Samples per trace since the last dump.
    counts: Mutex<HashMap<u32, u64>>,
}

impl CpuSamples {
    /// Sampling every `interval_ms` of CPU, `depth` frames deep; installs
    /// the signal handler, or says why sampling cannot run.
    pub fn new(interval_ms: u32, depth: u32) -> Self {
        let sampling = CpuSampling::new(interval_ms, depth)
            .map_err(|why| eprintln!("HPROF ERROR: cpu=samples cannot run: {why}"))
            .ok();
        Self {
            sampling,
            counts: Mutex::default(),
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
        let ran = sampling.collect(&env);
        if ran.is_empty() {
            return;
        }
        let mut model = run.model.lock();
        let traces: Vec<(u32, u32)> = ran
            .iter()
            .map(|r| {
                let trace = if r.frames.is_empty() {
                    run.traces.intern_no_java_frames(&mut model, r.serial)
                } else {
                    run.traces.intern(&env, &mut model, &r.frames, r.serial)
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
    fn start(&'static self, run: &'static Run, _jni: Option<&JniEnv>) {
        if let Some(sampling) = &self.sampling {
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
        if let (Some(_), Some((serial, intervals))) = (serial, unsampled) {
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
        let samples = crate::emit::cpu::samples_from(model, &counts);
        out.extend(
            run.emitter
                .cpu_samples(model, &samples, run.options.cutoff, ctime_now()),
        );
    }
}
