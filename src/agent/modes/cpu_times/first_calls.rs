//! The trace each counted method was first called on (`timing=samples`).
//! A method that no CPU sample ever saw has its exact count and no time;
//! its row goes on the trace of its first call: the Tracker reports the
//! first call of each method on each thread (`Tracker.firstCall`, called
//! once the count is 0 before it, so the counting fast path gains one
//! compare), and the first report of each method walks the calling
//! thread's stack. One walk per method of the program, whatever the
//! threads: the walks and the table below are bounded by the number of
//! rewritten methods. A walk keeps its raw frames; they are named (a trace
//! of the model) only at a dump, and only for a method no sample saw:
//! naming every walk as it came (JVMTI name and line lookups for each
//! frame) cost the program's threads 6-9% under cpu=times (H2, log4j).
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
use crate::model::Model;
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
    /// By method key: its first call's stack.
    walked: Mutex<HashMap<u64, Walked>>,
}

/// A first call's stack, as walked or as a trace of the model (on no
/// thread: the frames are what is used).
enum Walked {
    Frames(Vec<RawFrame>),
    Trace(u32),
}

impl FirstCallTraces {
    /// Reports start coming for `run`, whose methods `timing` names (the
    /// Tracker is told to send them).
    pub fn start(&'static self, run: &'static Run, timing: &'static MethodTiming) {
        let _ = self.run.set((run, timing));
    }

    /// The trace serial of method `key`'s first call, made in `model` the
    /// first time it is asked for; None when it was not walked.
    pub fn trace_of(&self, model: &mut Model, key: u64) -> Option<u32> {
        let (run, _) = self.run.get()?;
        let mut walked = self.walked.lock();
        let serial = match walked.get(&key)? {
            Walked::Trace(serial) => return Some(*serial),
            Walked::Frames(frames) => run.traces.intern(&run.jvmti.env(), model, frames, 0),
        };
        walked.insert(key, Walked::Trace(serial));
        Some(serial)
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
        // (Two threads may walk a method's first calls at once: the first
        // kept wins, either is a stack the method was called on.)
        self.walked
            .lock()
            .entry(key)
            .or_insert(Walked::Frames(frames));
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
