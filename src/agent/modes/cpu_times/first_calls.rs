//! The trace each counted method was first called on (`timing=samples`).
//! A method that no CPU sample ever saw has its exact count and no time;
//! its row goes on the trace of its first call: the Tracker reports the
//! first call of each method on each thread (`Tracker.firstCall`, called
//! once the count is 0 before it, so the counting fast path gains one
//! compare), and the first report of each method walks the calling
//! thread's stack. One walk per method of the program, whatever the
//! threads: the walks and the table below are bounded by the number of
//! rewritten methods.
//!
//! Methods of the classes whose code runs while a carrier thread mounts or
//! unmounts a virtual thread (JDK 21+) are never walked: JVMTI's
//! GetStackTrace first waits for every such transition to end, its own
//! thread's included, and waited for good (a recursion on a virtual thread
//! under `-Xint` on JDK 21 hung at its first mount). Their rows keep a
//! trace of their own frame.

use crate::agent::jvm::{self, RawFrame, timing_tracker};
use crate::agent::modes::cpu_times::timing::MethodTiming;
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
    run: OnceLock<(&'static Run, &'static MethodTiming)>,
    /// By method key: the trace serial of its first call's stack (on no
    /// thread: the frames are what is used).
    walked: Mutex<HashMap<u64, u32>>,
}

impl FirstCallTraces {
    /// Reports start coming for `run`, whose methods `timing` names (the
    /// Tracker is told to send them).
    pub fn start(&'static self, run: &'static Run, timing: &'static MethodTiming) {
        let _ = self.run.set((run, timing));
    }

    /// The trace serial of each method's first call walked so far.
    pub fn traces(&self) -> HashMap<u64, u32> {
        self.walked.lock().clone()
    }
}

impl timing_tracker::FirstCalls for FirstCallTraces {
    fn first_call(&self, key: u64) {
        let Some(&(run, timing)) = self.run.get() else {
            return;
        };
        if !run.lifecycle.accepting_events() || self.walked.lock().contains_key(&key) {
            return;
        }
        if timing
            .method(key)
            .is_none_or(|m| runs_in_mount_transitions(&m.class_name))
        {
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

/// Whether code of `class` (an internal name) may run inside a virtual
/// thread's mount or unmount: VirtualThread's own, Thread's (its interrupt
/// state is carried over) and the continuations'.
fn runs_in_mount_transitions(class: &str) -> bool {
    [
        "java/lang/VirtualThread",
        "java/lang/Thread",
        "jdk/internal/vm/",
    ]
    .iter()
    .any(|prefix| class.starts_with(prefix))
}
