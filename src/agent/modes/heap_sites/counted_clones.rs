//! The `clone()` calls the rewritten code counts after they return.
//!
//! C2 copies an object for `Object.clone` without entering the VM, so
//! without a VMObjectAlloc event; with that copy turned off every clone took
//! a call into the VM and an event (a loop of clones ran 20 to 60 times
//! slower). So each `clone()` call of rewritten code is followed by the
//! tracker's `made`, which counts the copy at the call when the call ran
//! `Object.clone`: decided once per (call, class) here, since an override's
//! `super.clone()` is a call of its own. Where the VM still copies (the
//! interpreter, C1), its event for a copy the call counts is passed over.
//! The classes loaded before VM init, counted from the live sample's events
//! until their hand-over, are reported every copy by that sample (C2's too:
//! an allocation at a sampling interval of 0 enters the VM).

use crate::agent::jvm::libjvm::{self, BoolFlag};
use crate::agent::jvm::{self, LocalClass, clone_target};
use crate::bci::{self, CloneCall};
use jvmti_bindings::prelude::*;
use parking_lot::Mutex;
use rustc_hash::FxHashMap;
use std::ffi::CStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Answers kept per (call, class) before the table starts over (bounds its
/// memory; an answer is asked again after that).
const MAX_ANSWERS: usize = 1 << 16;

/// The clone calls of the rewritten classes, and what each ran per class.
#[derive(Default)]
pub struct CountedClones {
    /// By the site number of the count after the call.
    by_site: Mutex<FxHashMap<u32, Arc<CloneCall>>>,
    /// By the call's number in the thread's field (set while it runs).
    by_call_site: Mutex<FxHashMap<u32, Arc<CloneCall>>>,
    /// Whether the call ran Object.clone, by (call, class tag).
    answers: Mutex<FxHashMap<(usize, u64), bool>>,
}

impl CountedClones {
    /// Notes the clone calls among a rewrite's sites.
    pub fn note(&self, sites: &[bci::AllocationSite]) {
        for site in sites {
            if let bci::Allocated::Cloned(call) = &site.allocated {
                let call = Arc::new(call.clone());
                if let Some(number) = call.call_site {
                    self.by_call_site.lock().insert(number, call.clone());
                }
                self.by_site.lock().insert(site.number, call);
            }
        }
    }

    /// The clone call counted at site `site`, if it is one.
    pub fn at_site(&self, site: u32) -> Option<Arc<CloneCall>> {
        self.by_site.lock().get(&site).cloned()
    }

    /// The clone call numbered `call_site` in the thread's field, if it is one.
    pub fn at_call_site(&self, call_site: u32) -> Option<Arc<CloneCall>> {
        self.by_call_site.lock().get(&call_site).cloned()
    }

    /// Whether `call` ran Object.clone for an object of `class` (then the
    /// code after it counts the copy).
    pub fn counted_after(
        &self,
        jni: &JniEnv,
        env: &Jvmti,
        call: &Arc<CloneCall>,
        class: LocalClass<'_>,
    ) -> bool {
        let class_tag = jvm::tag_of(env, class);
        let key = (Arc::as_ptr(call) as usize, class_tag);
        if class_tag != 0
            && let Some(&known) = self.answers.lock().get(&key)
        {
            return known;
        }
        let answer = clone_target::runs_object_clone(jni, env, class, &call.owner, call.special);
        if class_tag != 0 {
            let mut answers = self.answers.lock();
            if answers.len() >= MAX_ANSWERS {
                answers.clear();
            }
            answers.insert(key, answer);
        }
        answer
    }
}

/// C2's copy of `Object.clone` (and of `Arrays.copyOf`, which stays off
/// through `DisableIntrinsic`), read at each compilation.
const OBJECT_COPY: &CStr = c"InlineObjectCopy";

/// Whether this agent turned [`OBJECT_COPY`] off.
static OBJECT_COPY_HELD: AtomicBool = AtomicBool::new(false);

/// At load time: C2's copy held off until VM init tells whether the
/// rewritten code can count copies after their calls. True when the flag
/// is off now (held, or off on the command line); false when this JVM has
/// no such flag (the intrinsic then stays off for good, through
/// `DisableIntrinsic`).
pub fn hold_off_object_copy() -> bool {
    match libjvm::bool_flag(OBJECT_COPY) {
        BoolFlag::Value(false) => true,
        BoolFlag::Value(true) if libjvm::set_bool_flag(OBJECT_COPY, false) => {
            OBJECT_COPY_HELD.store(true, Ordering::Relaxed);
            true
        }
        _ => false,
    }
}

/// At VM init, when the rewritten code counts the copies after their
/// `clone()` calls: C2 copies again.
pub fn give_back_object_copy() {
    if OBJECT_COPY_HELD.swap(false, Ordering::Relaxed) {
        libjvm::set_bool_flag(OBJECT_COPY, true);
    }
}
