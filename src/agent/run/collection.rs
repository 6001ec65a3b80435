//! Whether a dump may force a garbage collection first: always while the
//! program runs, and at VM death only under a collector that can still
//! collect then (`jvm::collector`); otherwise the collection would wait
//! forever for a thread the exiting JVM has stopped.

use crate::agent::jvm::collector::Collector;
use crate::agent::run::engine::Run;

/// Whether a collection forced now completes.
pub fn may_force_collection(run: &Run) -> bool {
    !run.lifecycle.ended() || Collector::of_this_jvm().collects_after_vm_death()
}
