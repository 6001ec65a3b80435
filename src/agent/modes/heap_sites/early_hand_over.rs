//! The hand-over of the classes loaded before VM init to the counters.
//!
//! Those classes are left as they loaded, so that the JVM keeps its
//! class-data-sharing archive and a short program starts as fast as without
//! the agent; while the live sample reports every object (its first 8 MiB),
//! their allocations are counted from the sample's events. When that budget
//! is spent, an agent thread retransforms them so that their code counts,
//! then lets the sample thin out. While it runs, an event of theirs waits for
//! its end and is then counted only if its frame still runs the old code (an
//! obsolete method: JVMTI swaps the code at a safepoint, which a thread in an
//! event callback does not hold up), so that no object is counted twice nor
//! missed. After it, a call of theirs that began before it and never returns
//! (a loop in such a method) has the objects it makes in that call counted
//! only while the sample still reports them.

use super::early_escape_analysis;
use super::state::AllocationSites;
use crate::agent::run::engine::Run;
use crate::agent::run::threads;
use jvmti_bindings::prelude::*;

/// Starts the hand-over on a thread of its own (the event that spent the
/// budget returns at once).
pub(super) fn begin(run: &'static Run, sites: &'static AllocationSites) {
    let spawned = std::thread::Builder::new()
        .name("HPROF heap=sites hand-over".into())
        .spawn(move || {
            threads::mark_agent_thread();
            let Some(jni) = run.vm.attach_daemon("HPROF heap=sites hand-over") else {
                release_sample(&run.jvmti.env(), sites);
                return;
            };
            let env = run.jvmti.env();
            if let Some(counting) = sites.bytecode() {
                counting.hand_over_early_classes(&env, &jni);
            }
            // Their code counts now, whatever the JIT leaves out of it.
            early_escape_analysis::give_back();
            release_sample(&env, sites);
            run.vm.detach();
        });
    if let Err(e) = spawned {
        eprintln!(
            "HPROF ERROR: heap=sites could not start its hand-over thread ({e}); the live sample stays exact"
        );
    }
}

/// The live sample thins out now.
fn release_sample(env: &Jvmti, sites: &AllocationSites) {
    if let Some(interval) = sites.live.as_ref().and_then(|live| live.release()) {
        sites.set_sampling_interval(env, interval);
    }
}
