//! What a `net=` front end can ask of heap=sites: the sites section on
//! request, counting on and off, counts cleared.

use super::counted_dump::{counted_sites, counters_now};
use super::state::AllocationSites;
use crate::agent::run::engine::{Engine, Run};
use crate::emit::clock::ctime_now;
use crate::emit::sites::SiteSnapshot;
use crate::format::commands::site_flags;
use crate::model::Model;
use jvmti_bindings::prelude::*;

/// What a `net=` front end can ask of heap=sites.
impl AllocationSites {
    /// Whether each dump collects the heap itself (the default counting,
    /// before its heap walk), so that a front end's "collect first" flag
    /// needs no collection of its own.
    pub fn collects_before_each_dump(&self) -> bool {
        self.bytecode.is_some()
    }

    /// The sites section with HPROF's ALLOC SITES `flags` and `cutoff`
    /// (a garbage collection first is the caller's, unless
    /// [`collects_before_each_dump`](Self::collects_before_each_dump)).
    pub fn requested_section(&self, run: &Run, jni: &JniEnv, flags: u16, cutoff: f64) -> Vec<u8> {
        let _ = self.prepare_dump(run, Some(jni));
        let mut model = run.model.lock();
        let mut sites = self.prepared_sites(run, &mut model);
        let changed = self.note_written(&sites);
        if flags & site_flags::CHANGED_ONLY != 0 {
            let mut changed = changed.into_iter();
            sites.retain(|_| changed.next().unwrap_or(true));
        }
        let mut out = Vec::new();
        run.emitter
            .requested_sites(&mut model, &sites, cutoff, flags, ctime_now(), &mut out);
        out
    }

    /// Every site as it stands (for HEAP SUMMARY).
    pub fn current_sites(&self, run: &Run, jni: &JniEnv) -> Vec<SiteSnapshot> {
        let _ = self.prepare_dump(run, Some(jni));
        self.prepared_sites(run, &mut run.model.lock())
    }

    /// The sites as `prepare_dump` left them: the events' sites, with the
    /// bytecode counters' rows when they run.
    pub(super) fn prepared_sites(&self, run: &Run, model: &mut Model) -> Vec<SiteSnapshot> {
        let sites = self.site_snapshot(model);
        match (&self.bytecode, self.counted.lock().take()) {
            (Some(counting), Some(counted)) => {
                let mut sites =
                    counted_sites(run, model, counting, counted, sites, self.live.as_ref());
                if !self.window.is_whole() {
                    // The heap walk finds a class's live objects whenever
                    // they were made: those made outside the window are
                    // shared among its rows too. A row's live objects are
                    // at most the objects it allocated (an estimate).
                    for site in &mut sites {
                        let stats = &mut site.stats;
                        stats.live_objects = stats.live_objects.min(stats.allocated_objects);
                        stats.live_bytes = stats.live_bytes.min(stats.allocated_bytes);
                    }
                }
                sites
            }
            _ => sites,
        }
    }

    /// New allocations are counted, or no longer (frees of objects counted
    /// before still are, so live counts stay right). The bytecode counters
    /// run on: what they count while off is left out of every dump.
    pub fn set_counting(&self, run: &Run, jni: &JniEnv, on: bool) -> Result<(), String> {
        let env = run.jvmti.env();
        let switched: &[jvmti::jvmtiEvent] = if self.bytecode.is_some() {
            // (The objects the VM makes are counted from their events.)
            &[
                jvmti::JVMTI_EVENT_SAMPLED_OBJECT_ALLOC,
                jvmti::JVMTI_EVENT_VM_OBJECT_ALLOC,
            ]
        } else {
            &[jvmti::JVMTI_EVENT_SAMPLED_OBJECT_ALLOC]
        };
        let result = if on {
            env.enable_events_global(switched)
        } else {
            env.disable_events_global(switched)
        };
        if let Some(counting) = &self.bytecode {
            self.window.switch(on, &counters_now(run, counting, jni));
        }
        result.map_err(|e| format!("cannot switch allocation events ({e:?})"))
    }

    /// Every count starts over from zero.
    pub fn clear(&self, run: &Run, jni: &JniEnv) {
        self.counts.clear();
        if let Some(counting) = &self.bytecode {
            self.window.clear(&counters_now(run, counting, jni));
        }
        self.last_written.lock().clear();
    }

    /// Notes `sites` as written; for each, whether its counts changed since
    /// it was last written (a site never written before did).
    pub(super) fn note_written(&self, sites: &[SiteSnapshot]) -> Vec<bool> {
        let mut last = self.last_written.lock();
        sites
            .iter()
            .map(|s| last.insert((s.class_serial, s.trace_serial), s.stats) != Some(s.stats))
            .collect()
    }
}
