//! The heap=sites engine: every allocation the JVM reports
//! (SampledObjectAlloc) is counted at its site (class and trace) and its
//! object tagged, so that ObjectFree moves it from live to freed (the
//! counts and tags themselves are `modes/heap_sites/alloc.rs`); a dump writes the SITES
//! section.

pub mod alloc;
mod counted_dump;
mod counted_traces;
pub mod counting;
mod events;
pub mod live_samples;
mod live_sharing;
mod net_commands;
pub mod site_cache;
mod tracker_callbacks;

use crate::agent::jvm::alloc_tracker::{self, AllocEvents};
use crate::agent::jvm::libjvm;
use crate::agent::jvm::{self, LocalClass, LocalObject, LocalThread};
use crate::agent::run::classes::intern_class;
use crate::agent::run::engine::{Engine, Run};
use crate::agent::run::threads;
use crate::bci;
use crate::emit::clock::ctime_now;
use crate::emit::sites::SiteSnapshot;
use crate::format::commands::site_flags;
use crate::model::SiteStats;
use crate::model::traces::EMPTY_TRACE_SERIAL;
use crate::model::{Model, SiteKey};
use crate::options::experiment;
use alloc::AllocationCounts;
use counted_dump::CountedDump;
use counted_dump::read_counted;
use counted_traces::{intern_counted, intern_vm_made};
use counting::{BytecodeCounting, CountedRow};
use events::keep_allocations_in_sight;
use jvmti_bindings::prelude::*;
use live_samples::LiveSamples;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

/// In sampled mode, primitive arrays this large are counted without a tag.
/// Why: G1 frees a dead humongous primitive array at the next young GC
/// ("eager reclaim") only if nothing refers to it, and the JVM's tag map
/// does; with tags, Rhino at alloc_interval=512k ran 1.13-1.29x, without
/// 1.01x. (Humongous means at least half a G1 region, 512 KiB or more.)
const LARGE_ARRAY_BYTES: u64 = 256 << 10;

/// `[B`, `[I`, ...: a one-dimensional array of a primitive type.
fn is_primitive_array(signature: &str) -> bool {
    signature.len() == 2 && signature.starts_with('[')
}

/// Frames kept of an object the VM made under `alloc_count=bytecode`.
const VM_MADE_FRAMES: u32 = 3;

/// The second word of a live sample's key in the site cache, where an
/// event's key has its thread serial (never this large).
const LIVE_SAMPLE_KEY: u64 = u64::MAX - 1;
/// The site a measuring aid tags objects with when it skips finding theirs
/// (the highest a tag holds; never interned).
const NO_SITE: u32 = (1 << 30) - 1;

/// Frames an allocation's key holds without a heap buffer.
const INLINE_FRAMES: usize = 64;

thread_local! {
    /// Set while [`prime_exact_sampling`] runs on this thread; the first
    /// reported allocation clears it and is not counted.
    static PRIMING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Makes the JVM report every allocation of the main thread from now on.
///
/// The main thread exists before the agent loads, so its heap sampler
/// already picked its next sample point (about 512 KiB ahead) with the
/// default interval; until it gets there its allocations are not reported.
/// Allocating throw-away arrays until one is reported moves it past that
/// point; from then on the interval of 0 applies to it too. Threads created
/// later start with the interval of 0.
fn prime_exact_sampling(jni: &JniEnv) {
    const CHUNK: i32 = 64 * 1024;
    const MAX_CHUNKS: usize = 1024;
    PRIMING.with(|p| p.set(true));
    for _ in 0..MAX_CHUNKS {
        // Each array's local reference is deleted as soon as it is made.
        match jvm::new_byte_array(jni, CHUNK) {
            Some(array) => drop(array),
            None => {
                jni.exception_clear();
                break;
            }
        }
        if !PRIMING.with(|p| p.get()) {
            return;
        }
    }
    PRIMING.with(|p| p.set(false));
    eprintln!("HPROF ERROR: could not make the JVM report every allocation of the main thread");
}

/// Which event reported an allocation.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Reported {
    /// SampledObjectAlloc: every allocation at interval 0, or a sample.
    Sampled,
    /// VMObjectAlloc: an object the VM made, not seen in the byte code.
    MadeByTheVm,
}

/// An allocation as an event reports it.
pub struct Allocated<'a> {
    pub thread: LocalThread<'a>,
    pub object: LocalObject<'a>,
    pub class: LocalClass<'a>,
    /// Bytes.
    pub size: i64,
    pub how: Reported,
}

/// State of heap=sites.
pub struct AllocationSites {
    /// Counts per site, outside the model lock.
    counts: AllocationCounts,
    /// Tag of `java.lang.Class`'s class object: its instances are class objects.
    class_class_tag: AtomicU64,
    /// Each site's counts when sites were last written, by (class serial,
    /// trace serial): what "changed since the last sites dump" compares to.
    last_written: Mutex<HashMap<(u32, u32), SiteStats>>,
    /// `alloc_count=bytecode`: the counters in the byte code (objects the
    /// byte code does not show come as VMObjectAlloc events, counted like
    /// sampled ones).
    bytecode: Option<BytecodeCounting>,
    /// `alloc_count=bytecode`: the tagged sample that splits a class's
    /// live objects among its rows.
    live: Option<LiveSamples>,
    /// What the dump's first step read of the counters, for its section.
    counted: Mutex<Option<CountedDump>>,
    /// The run, for the bytecode tracker's natives (set when it starts).
    run: std::sync::OnceLock<&'static Run>,
}

impl AllocationSites {
    /// Counting every allocation (`interval` 0) or one per `interval`
    /// bytes, from JVMTI events or (`bytecode`) from counters in the byte
    /// code, with traces of `depth` frames.
    /// Under `bytecode`, `live` is the sample of live objects.
    pub fn new(interval: u64, bytecode: bool, depth: usize, live: LiveSamples) -> Self {
        Self {
            counts: AllocationCounts::new(interval),
            class_class_tag: AtomicU64::new(0),
            last_written: Mutex::default(),
            bytecode: bytecode.then(|| BytecodeCounting::new(depth)),
            live: bytecode.then_some(live),
            counted: Mutex::default(),
            run: std::sync::OnceLock::new(),
        }
    }

    /// The bytecode counting, when `alloc_count=bytecode`.
    pub fn bytecode(&self) -> Option<&BytecodeCounting> {
        self.bytecode.as_ref()
    }

    /// The sites as they stand, for a dump.
    fn site_snapshot(&self, model: &Model) -> Vec<SiteSnapshot> {
        model
            .sites
            .iter()
            .map(|(index, key)| SiteSnapshot {
                class_serial: key.class_serial,
                trace_serial: key.trace_serial,
                class_signature: model
                    .classes
                    .by_serial(key.class_serial)
                    .map(|c| c.signature.clone())
                    .unwrap_or_default(),
                stats: self.counts.sites.stats(index),
            })
            .collect()
    }
}

impl Engine for AllocationSites {
    fn add_capabilities(
        &self,
        caps: &mut jvmti::jvmtiCapabilities,
        _potential: &jvmti::jvmtiCapabilities,
    ) {
        caps.set_can_generate_object_free_events(true);
        caps.set_can_generate_sampled_object_alloc_events(true);
        if let Some(counting) = &self.bytecode {
            caps.set_can_generate_vm_object_alloc_events(true);
            caps.set_can_generate_all_class_hook_events(true);
            caps.set_can_retransform_classes(true);
            // java.lang.Thread gets the calling-context field as the JVM
            // first loads it, in the primordial phase.
            caps.set_can_generate_early_class_hook_events(counting.wants_contexts());
        }
    }

    /// The sampling interval is set at load time, before the first
    /// thread-local allocation buffer exists: set later, each thread's
    /// current buffer would still run to its old sample point (about 512
    /// KiB) before every allocation is reported. 0 reports every
    /// allocation; the JVMTI call takes an int.
    fn on_load(&self, jvmti: &Jvmti) -> Result<(), String> {
        if let Some(counting) = &self.bytecode {
            keep_allocations_in_sight();
            if counting.wants_contexts() {
                let hook = [jvmti::JVMTI_EVENT_CLASS_FILE_LOAD_HOOK];
                if let Err(e) = jvmti.enable_events_global(&hook) {
                    eprintln!(
                        "HPROF ERROR: heap=sites cannot see java.lang.Thread load ({e:?}); traces stop at the allocating frame"
                    );
                }
            }
        }
        // Under alloc_count=bytecode every object is reported at first too,
        // for the sample of live objects (see modes/heap_sites/live_samples.rs).
        let interval = match &self.live {
            Some(live) => live.first_interval(),
            None => self.counts.interval,
        };
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
            *self.counted.lock() = Some(read_counted(run, counting, jni));
        }
        if let (Some(live), true) = (&self.live, run.options.verbose) {
            eprintln!("\nHPROF: {}", live.describe());
        }
        Ok(())
    }

    fn dump_section(&self, run: &Run, model: &mut Model, out: &mut Vec<u8>) {
        let sites = self.prepared_sites(run, model);
        self.note_written(&sites);
        out.extend(
            run.emitter
                .sites(model, &sites, run.options.cutoff, ctime_now()),
        );
    }
}
