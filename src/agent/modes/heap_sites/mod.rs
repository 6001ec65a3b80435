//! The heap=sites engine: every allocation the JVM reports
//! (SampledObjectAlloc) is counted at its site (class and trace) and its
//! object tagged, so that ObjectFree moves it from live to freed (the
//! counts and tags themselves are `modes/heap_sites/alloc.rs`); a dump writes the SITES
//! section.

pub mod alloc;
pub mod counted_clones;
mod counted_dump;
mod counted_traces;
mod counted_window;
pub mod counting;
mod early_escape_analysis;
mod early_hand_over;
mod events;
pub mod live_samples;
mod live_sharing;
mod net_commands;
mod outside_tlab;
mod rows;
mod sample_rows;
pub mod site_cache;
mod state;
mod tracker_callbacks;

use crate::agent::jvm::{self, thread_stacks};
use crate::agent::run::classes::intern_class;
use crate::agent::run::engine::{Engine, Run};
use crate::emit::clock::ctime_now;
use crate::model::Model;
use crate::model::traces::EMPTY_TRACE_SERIAL;
use counted_dump::read_counted;
use events::{keep_allocations_in_sight, make_every_object_asked_for};
use jvmti_bindings::prelude::*;
use state::prime_exact_sampling;
pub use state::{Allocated, AllocationSites, Reported};
use std::sync::atomic::Ordering;

impl AllocationSites {
    /// Whether java.lang.Thread needs the calling-context field from the
    /// moment the JVM loads it (`thread_field_env::install` at load time).
    pub fn wants_thread_field(&self) -> bool {
        self.bytecode
            .as_ref()
            .is_some_and(|c| c.wants_thread_field())
    }
}

impl Engine for AllocationSites {
    /// The counting rewrites code; sampling and events do not.
    fn stack_factor(&self) -> u32 {
        if self.bytecode.is_some() {
            thread_stacks::REWRITTEN_CODE_FACTOR
        } else {
            1
        }
    }

    fn add_capabilities(
        &self,
        caps: &mut jvmti::jvmtiCapabilities,
        potential: &jvmti::jvmtiCapabilities,
    ) {
        caps.set_can_generate_object_free_events(true);
        caps.set_can_generate_sampled_object_alloc_events(true);
        if self.bytecode.is_some() {
            caps.set_can_generate_vm_object_alloc_events(true);
            caps.set_can_generate_all_class_hook_events(true);
            caps.set_can_retransform_classes(true);
            // (Which classes loaded before VM init generate classes:
            // counting.rs, `EarlyClasses::loaded`.)
            caps.set_can_get_constant_pool(potential.can_get_constant_pool());
            // (java.lang.Thread's calling-context field is added by an
            // environment of its own: jvm/thread_field_env.rs.)
            if self.bytecode.as_ref().is_some_and(|c| c.rewrites_early()) {
                caps.set_can_generate_early_class_hook_events(true);
                caps.set_can_generate_early_vmstart(true);
                // (To open the gate for good: alloc_tracker.rs.)
                caps.set_can_redefine_classes(true);
            }
        }
    }

    /// The sampling interval is set at load time, before the first
    /// thread-local allocation buffer exists: set later, each thread's
    /// current buffer would still run to its old sample point (about 512
    /// KiB) before every allocation is reported. 0 reports every
    /// allocation; the JVMTI call takes an int.
    fn on_load(&self, jvmti: &Jvmti) -> Result<(), String> {
        if let Some(counting) = &self.bytecode {
            // (Copies are counted after their clone() calls from VM init
            // on, when the rewrite can: counted_clones.rs.)
            let clone_held =
                counting.counts_early_by_events() && counted_clones::hold_off_object_copy();
            keep_allocations_in_sight(clone_held);
            if counting.counts_early_by_events() {
                // (Until the hand-over: objects C2 would leave out of the
                // early classes' code are reported by no event.)
                early_escape_analysis::hold_off();
            }
            if counting.rewrites_early() {
                // The classes are rewritten from the first one the JVM
                // loads; the gate they call is defined at its start.
                jvmti
                    .enable_events_global(&[
                        jvmti::JVMTI_EVENT_CLASS_FILE_LOAD_HOOK,
                        jvmti::JVMTI_EVENT_VM_START,
                    ])
                    .map_err(|e| format!("heap=sites cannot see classes load ({e:?})"))?;
            }
            if let Some(why) = counting.contexts_refused() {
                eprintln!("HPROF: {why}");
            }
        } else if self.counts.interval == 0 {
            make_every_object_asked_for(jvm::java_feature_version(jvmti));
        }
        // Under alloc_count=bytecode every object is reported at first too,
        // for the sample of live objects (see modes/heap_sites/live_samples.rs).
        let interval = match &self.live {
            Some(live) => live.first_interval(),
            None => self.counts.interval,
        };
        if interval == 0 {
            outside_tlab::hold(jvm::java_feature_version(jvmti));
        }
        let interval = interval.min(i32::MAX as u64) as i32;
        jvmti
            .set_heap_sampling_interval(interval)
            .map_err(|e| format!("Unable to set the allocation sampling interval. ({e:?})"))
    }

    fn live_events(&self) -> &'static [jvmti::jvmtiEvent] {
        if self.bytecode.is_some() {
            // (No ObjectFree: the walk of the heap at each dump finds the
            // live ones of the sample.)
            &[
                jvmti::JVMTI_EVENT_VM_OBJECT_ALLOC,
                jvmti::JVMTI_EVENT_SAMPLED_OBJECT_ALLOC,
            ]
        } else {
            &[
                jvmti::JVMTI_EVENT_OBJECT_FREE,
                jvmti::JVMTI_EVENT_SAMPLED_OBJECT_ALLOC,
            ]
        }
    }

    /// Instances of `java.lang.Class` are told apart by their class's tag.
    fn vm_init(&self, run: &Run, jni: Option<&JniEnv>) {
        let Some(class_class) = jni.and_then(|jni| jvm::find_class(jni, "java/lang/Class")) else {
            return;
        };
        let env = run.jvmti.env();
        let mut guard = run.model.lock();
        let model = &mut *guard;
        if let Some(known) = intern_class(
            &env,
            &mut model.classes,
            &model.objects,
            class_class.get(),
            EMPTY_TRACE_SERIAL,
        ) {
            self.class_class_tag
                .store(known.object_id, Ordering::Relaxed);
        }
    }

    /// Exact sampling is primed; or the bytecode counting starts: classes
    /// loaded from now on are rewritten, and those loaded before are
    /// retransformed.
    fn start(&'static self, run: &'static Run, jni: Option<&JniEnv>) {
        let Some(jni) = jni else {
            return;
        };
        let _ = self.run.set(run);
        if let Some(counting) = &self.bytecode
            && let Err(why) = counting.define_tracker(&run.jvmti.env(), jni, self)
        {
            eprintln!("HPROF ERROR: alloc_count=bytecode cannot run: {why}");
        }
        if self
            .bytecode
            .as_ref()
            .is_some_and(|c| c.counts_clones_after_calls())
        {
            counted_clones::give_back_object_copy();
        }
        match &self.bytecode {
            Some(counting) if counting.ready() => {
                let env = run.jvmti.env();
                let hook = [jvmti::JVMTI_EVENT_CLASS_FILE_LOAD_HOOK];
                match env.enable_events_global(&hook) {
                    Ok(()) => counting.retransform_loaded(
                        &env,
                        jni,
                        self.class_class_tag.load(Ordering::Relaxed),
                    ),
                    Err(e) => {
                        eprintln!("HPROF ERROR: alloc_count=bytecode cannot run: events ({e:?})")
                    }
                }
            }
            Some(_) | None => {}
        }
        let exact_at_first = match &self.live {
            Some(live) => live.starts_exact(),
            None => self.counts.interval == 0,
        };
        if exact_at_first {
            prime_exact_sampling(jni);
        }
    }

    fn dump_announcement(&self, _run: &Run) -> &'static str {
        " allocation sites ..."
    }

    fn prepare_dump(&self, run: &Run, jni: Option<&JniEnv>) -> Result<(), String> {
        self.deliver_pending_frees(run);
        self.census_large_arrays(run, jni);
        if let (Some(counting), Some(jni)) = (&self.bytecode, jni) {
            *self.counted.lock() = Some(read_counted(run, counting, &self.window, jni));
        }
        // The agent's own notes, not HPROF's progress line: with debug=y.
        if let (Some(live), true) = (&self.live, run.options.debug) {
            eprintln!("\nHPROF: {}", live.describe());
        }
        if let (Some(counting), true) = (&self.bytecode, run.options.debug) {
            if let Some(reloads) = counting.describe() {
                eprintln!("HPROF: {reloads}");
            }
        }
        if let Some(counting) = &self.bytecode
            && run.options.experiment & crate::options::experiment::TABLE_SIZES_AT_DUMPS != 0
        {
            // (After verbose's "Dumping ..." on a line of its own.)
            let new_line = if run.options.verbose { "\n" } else { "" };
            eprintln!(
                "{new_line}HPROF: heap=sites walked the stacks of {} allocations (calling context not trusted)",
                counting.walked_allocations()
            );
            let (walks, sites) = counting.trace_walks_made();
            eprintln!(
                "HPROF: heap=sites walked {walks} allocations of {sites} sites for their traces"
            );
        }
        Ok(())
    }

    fn dump_section(&self, run: &Run, model: &mut Model, out: &mut Vec<u8>) {
        let sites = self.prepared_sites(run, model);
        self.note_written(&sites);
        run.emitter
            .sites(model, &sites, run.options.cutoff, ctime_now(), out);
    }
}
