//! What the AllocTracker's natives report to heap=sites (the bytecode
//! counting's callbacks: objects the VM made, classes generated, the
//! trust of a site's calling context, walked sites).

use super::counting::BytecodeCounting;
use super::events::{allocating_stack, walked_trace};
use super::state::AllocationSites;
use crate::agent::jvm::alloc_tracker::{AllocEvents, MadeSite};
use crate::agent::jvm::{self, LocalObject, LocalThread};
use crate::agent::run::classes::intern_class;
use crate::model::traces::EMPTY_TRACE_SERIAL;
use jvmti_bindings::prelude::*;

impl AllocEvents for AllocationSites {
    /// Counted at the call's site under the object's class, without a
    /// stack walk: the call posts no VMObjectAlloc on this JVM (tried at
    /// start), and on JDK 17 it makes every capturing lambda (a JVMTI walk
    /// of its stack made javac 1.86x instead of 1.2x).
    fn made(&self, jni: &JniEnv, object: LocalObject<'_>, site: u32, context: u64) {
        let (Some(run), Some(counting)) = (self.run.get(), &self.bytecode) else {
            return;
        };
        if !run.lifecycle.accepting_events() {
            return;
        }
        let Some(class) = jvm::object_class(jni, object) else {
            return;
        };
        let env = run.jvmti.env();
        if let Some(call) = counting.clones.at_site(site)
            && !counting.clones.counted_after(jni, &env, &call, class.get())
        {
            return; // an override ran: its super.clone() counts the copy
        }
        let mut class_tag = jvm::tag_of(&env, class.get());
        if class_tag == 0 {
            let mut guard = run.model.lock();
            let model = &mut *guard;
            match intern_class(
                &env,
                &mut model.classes,
                &model.objects,
                class.get(),
                EMPTY_TRACE_SERIAL,
            ) {
                Some(known) => class_tag = known.object_id,
                None => return,
            }
        }
        let size = jvm::object_size(&env, object).unwrap_or(0);
        counting.count_made(site, context, class_tag, size);
    }

    /// A site of their own for the objects of one class made at one maker
    /// call: the tracker then counts them there, in Java, like any `new`
    /// (one call into the agent per site and class instead of per object:
    /// javac spent 0.9 s of its 3.6 s under heap=sites in `made`).
    fn made_site(&self, jni: &JniEnv, object: LocalObject<'_>, site: u32) -> MadeSite {
        let (Some(run), Some(counting)) = (self.run.get(), &self.bytecode) else {
            return MadeSite::EachByTheAgent;
        };
        if !run.lifecycle.accepting_events() {
            return MadeSite::EachByTheAgent;
        }
        let Some(class) = jvm::object_class(jni, object) else {
            return MadeSite::EachByTheAgent;
        };
        let env = run.jvmti.env();
        if let Some(call) = counting.clones.at_site(site)
            && !counting.clones.counted_after(jni, &env, &call, class.get())
        {
            return MadeSite::NotHere;
        }
        let Some(signature) = jvm::class_signature(&env, class.get()) else {
            return MadeSite::EachByTheAgent;
        };
        match counting.made_site(site, &signature) {
            Some(number) => MadeSite::Counted(number),
            None => MadeSite::EachByTheAgent,
        }
    }

    fn generated(&self, class_file: &[u8]) -> Option<Vec<u8>> {
        self.bytecode.as_ref()?.rewrite(None, class_file)
    }

    /// Checked against this thread's real stack, once per new key: the
    /// chain must hold, and the stack must have exactly the callers the
    /// context names (up to the depth), method by method. A method the VM
    /// entered after the field was cleared reads an empty context, which
    /// looks like a thread's first frame: only the stack tells them apart.
    fn trusted(&self, site: u32, context: u64) -> bool {
        let (Some(run), Some(counting)) = (self.run.get(), &self.bytecode) else {
            return true;
        };
        let Some((callers, held)) = counting.site_callers(site, context) else {
            return true;
        };
        if !held {
            return false;
        }
        let env = run.jvmti.env();
        // (The callers a context can name: depth - 1, 3 at most.)
        let most = (run.traces.depth.saturating_sub(1) as usize).min(crate::bci::WINDOW_CALL_SITES);
        let real: Vec<String> = allocating_stack(&env, 1 + most)
            .into_iter()
            .skip(1)
            .take(most.min(callers.len() + 1))
            .map(|(method, _)| jvm::method_name(&env, method).map_or_else(String::new, |n| n.0))
            .collect();
        real.len() == callers.len()
            && real
                .iter()
                .zip(&callers)
                .all(|(name, caller)| **name == *caller.method_name)
    }

    /// The stack below the tracker's own frames, `depth` frames of it.
    fn walked(&self, site: u32, bytes: u64) {
        if let Some((counting, trace_serial)) = self.walk() {
            counting.count_walked(site, trace_serial, bytes);
        }
    }

    /// Kept once the live sample samples: while it reports every object
    /// it has each site's traces exactly.
    fn walk_for_trace(&self, site: u32, bytes: u64, before: u64) {
        if !self.live.as_ref().is_some_and(|live| live.is_sampling()) {
            return;
        }
        if let Some((counting, trace_serial)) = self.walk() {
            counting.count_trace_walk(site, trace_serial, bytes, before);
        }
    }
}

impl AllocationSites {
    /// The trace of this thread's allocating stack (below the tracker's
    /// frames, `depth` frames, on this thread with `thread=y`), with the
    /// counting to give it to; None before the agent takes events or
    /// without the bytecode counting.
    fn walk(&self) -> Option<(&BytecodeCounting, u32)> {
        let (Some(run), Some(counting)) = (self.run.get(), &self.bytecode) else {
            return None;
        };
        if !run.lifecycle.accepting_events() {
            return None;
        }
        let env = run.jvmti.env();
        let trace_serial = walked_trace(run, &env, LocalThread::null());
        Some((counting, trace_serial))
    }
}
