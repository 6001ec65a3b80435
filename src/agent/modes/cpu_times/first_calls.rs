//! The trace each counted method was first called on (`timing=samples`).
//! A method that no CPU sample ever saw has its exact count and no time;
//! its row goes on the trace of its first call: the Tracker reports the
//! first call of each method on each thread (`Tracker.firstCall`, called
//! once the count is 0 before it, so the counting fast path gains one
//! compare), and the first report of each method walks the calling
//! thread's stack. One walk per method of the program, whatever the
//! threads: the walks and the table below are bounded by the number of
//! rewritten methods.

use crate::agent::jvm::{self, RawFrame, timing_tracker};
use crate::agent::run::engine::Run;
use jvmti_bindings::prelude::*;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::OnceLock;

/// Frames the Tracker puts above the counted method's: the native, the
/// counting and its caller (an inlined one shows as a frame of its own).
const TRACKER_FRAMES: usize = 4;

/// The first-call traces of one profile.
#[derive(Default)]
pub struct FirstCallTraces {
    run: OnceLock<&'static Run>,
    /// By method key: the trace serial of its first call's stack (on no
    /// thread: the frames are what is used).
    walked: Mutex<HashMap<u64, u32>>,
}

impl FirstCallTraces {
    /// Reports start coming for `run` (the Tracker is told to send them).
    pub fn start(&'static self, run: &'static Run) {
        let _ = self.run.set(run);
    }

    /// The trace serial of each method's first call walked so far.
    pub fn traces(&self) -> HashMap<u64, u32> {
        self.walked.lock().clone()
    }
}

impl timing_tracker::FirstCalls for FirstCallTraces {
    fn first_call(&self, key: u64) {
        let Some(run) = self.run.get() else {
            return;
        };
        if !run.lifecycle.accepting_events() || self.walked.lock().contains_key(&key) {
            return;
        }
        let env = run.jvmti.env();
        let frames = calling_stack(&env, run.traces.depth as usize);
        let serial = run.traces.intern(&env, &mut run.model.lock(), &frames, 0);
        // (Two threads may walk a method's first calls at once: the first
        // kept wins, either is a stack the method was called on.)
        self.walked.lock().entry(key).or_insert(serial);
    }
}

/// The calling thread's stack below the Tracker's frames, `depth` frames
/// (the counted method's first).
fn calling_stack(env: &Jvmti, depth: usize) -> Vec<RawFrame> {
    jvm::stack_below_tracker(
        env,
        depth,
        TRACKER_FRAMES,
        timing_tracker::is_tracker_method,
    )
}
