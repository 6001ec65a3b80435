//! The heap=sites engine: every allocation the JVM reports
//! (SampledObjectAlloc) is counted at its site (class and trace) and its
//! object tagged, so that ObjectFree moves it from live to freed (the
//! counts and tags themselves are `alloc.rs`); a dump writes the SITES
//! section.

use crate::agent::alloc::AllocationCounts;
use crate::agent::classes::intern_class;
use crate::agent::engine::{Engine, Run};
use crate::agent::jvm::{self, LocalClass, LocalObject, LocalThread};
use crate::agent::site_cache;
use crate::agent::threads;
use crate::emit::sites::SiteSnapshot;
use crate::format::ascii::time::ctime_now;
use crate::model::SiteStats;
use crate::model::traces::EMPTY_TRACE_SERIAL;
use crate::model::{Model, SiteKey};
use crate::options::experiment;
use crate::output::commands::site_flags;
use jvmti_bindings::prelude::*;
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

/// State of heap=sites.
pub struct AllocationSites {
    /// Counts per site, outside the model lock.
    counts: AllocationCounts,
    /// Tag of `java.lang.Class`'s class object: its instances are class objects.
    class_class_tag: AtomicU64,
    /// Each site's counts when sites were last written, by (class serial,
    /// trace serial): what "changed since the last sites dump" compares to.
    last_written: Mutex<HashMap<(u32, u32), SiteStats>>,
}

impl AllocationSites {
    /// Counting every allocation (`interval` 0) or one per `interval` bytes.
    pub fn new(interval: u64) -> Self {
        Self {
            counts: AllocationCounts::new(interval),
            class_class_tag: AtomicU64::new(0),
            last_written: Mutex::default(),
        }
    }

    /// SampledObjectAlloc: count the object at its site and tag it.
    pub fn object_allocated(
        &self,
        run: &Run,
        thread: LocalThread<'_>,
        object: LocalObject<'_>,
        class: LocalClass<'_>,
        size: i64,
    ) {
        if !run.lifecycle.accepting_events()
            || object.is_null()
            || PRIMING.with(|p| p.replace(false))
            || threads::is_agent_thread()
        {
            return;
        }
        if run.options.experiment & experiment::ALLOC_EVENT_ONLY != 0 {
            return;
        }
        let env = run.jvmti.env();
        let depth = run.traces.depth as usize;
        let mut inline = [jvmti::jvmtiFrameInfo::default(); INLINE_FRAMES];
        let mut heap;
        let buffer: &mut [jvmti::jvmtiFrameInfo] = if depth <= INLINE_FRAMES {
            &mut inline[..depth]
        } else {
            heap = vec![jvmti::jvmtiFrameInfo::default(); depth];
            &mut heap
        };
        let count = jvm::stack_frames_into(&env, thread, buffer);
        let frames = &buffer[..count];
        if run.options.experiment & experiment::ALLOC_STACK_ONLY != 0 {
            return;
        }

        let class_tag = jvm::tag_of(&env, class);
        let thread_serial = if run.traces.per_thread {
            u64::from(threads::serial_of(&env, thread))
        } else {
            0
        };
        let mut key = Vec::with_capacity(2 + 2 * frames.len());
        key.extend([class_tag, thread_serial]);
        for frame in frames {
            key.extend([frame.method as u64, frame.location as u64]);
        }
        let site = match site_cache::lookup(&key) {
            Some(site) if class_tag != 0 => site,
            _ => match intern_site(run, &env, thread, class, frames) {
                Some((site, final_class_tag)) => {
                    key[0] = final_class_tag;
                    site_cache::remember(&key, site);
                    site
                }
                None => return,
            },
        };

        let allocations = &self.counts;
        let size = size.max(0) as u64;
        if allocations.interval > 0
            && size >= LARGE_ARRAY_BYTES
            && let Some(signature) = jvm::class_signature(&env, class)
            && is_primitive_array(&signature)
        {
            // Counted without a tag; the census at each dump finds the live ones.
            if let Some(hash) = jvm::identity_hash(&env, object)
                && allocations.allocated_untagged(site, size, hash, &signature)
            {
                return;
            }
        }
        let is_class_object =
            class_tag != 0 && class_tag == self.class_class_tag.load(Ordering::Relaxed);
        let tag = if is_class_object {
            // Class objects need an identifier of their own for the class
            // table; the counts remember where this one was counted.
            let id = run.model.lock().objects.next();
            allocations.allocated_with_id(site, size, id);
            id
        } else {
            allocations.allocated(site, size)
        };
        let _ = jvm::set_tag(&env, object, tag);
    }

    /// ObjectFree: an object tagged by this agent was collected.
    pub fn object_freed(&self, tag: u64) {
        self.counts.freed(tag);
    }

    /// Makes the JVM deliver the ObjectFree events of objects it has already
    /// collected, so a dump right after a GC shows them as freed. (Newer JVMs
    /// post them lazily; a tag-map query posts the pending ones first.)
    fn deliver_pending_frees(&self, run: &Run) {
        let _ = run.jvmti.env().get_objects_with_tags(&[i64::MAX]);
    }

    /// Finds which of the large arrays counted without a tag are still
    /// alive, and counts the others as freed.
    fn census_large_arrays(&self, run: &Run, jni: Option<&JniEnv>) {
        let Some(jni) = jni else {
            return;
        };
        let env = run.jvmti.env();
        let mut live = Vec::new();
        for signature in self.counts.untagged_classes() {
            // A primitive array class is always there to find; should it not
            // be, the walk covers every class instead.
            let class = jvm::find_class(jni, &signature);
            let census = jvm::census_large_arrays(
                &env,
                jni,
                class.as_ref().map_or(LocalClass::null(), |c| c.get()),
                LARGE_ARRAY_BYTES,
            );
            drop(class);
            match census {
                Ok(found) => live.extend(found),
                Err(e) => {
                    eprintln!(
                        "HPROF ERROR: large-array census failed ({e:?}); live counts of large arrays may be high"
                    );
                    return;
                }
            }
        }
        self.counts.census(&live);
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

/// The site of an allocation not in this thread's cache, and the tag of
/// the allocated class. Kept out of line: it is the cold path of
/// `object_allocated` (a cache miss), which stays small without it.
#[inline(never)]
fn intern_site(
    run: &Run,
    env: &Jvmti,
    thread: LocalThread<'_>,
    class: LocalClass<'_>,
    frames: &[jvmti::jvmtiFrameInfo],
) -> Option<(u32, u64)> {
    let raw: Vec<jvm::RawFrame> = frames
        .iter()
        .map(|f| (f.method as u64, f.location))
        .collect();
    let mut guard = run.model.lock();
    let model = &mut *guard;
    let thread_serial = threads::trace_thread_serial(run, env, model, thread);
    let known = intern_class(
        env,
        &mut model.classes,
        &model.objects,
        class,
        EMPTY_TRACE_SERIAL,
    )?;
    let trace_serial = run.traces.intern(env, model, &raw, thread_serial);
    let site = model.sites.intern(SiteKey {
        class_serial: known.serial,
        trace_serial,
    })?;
    Some((site, known.object_id))
}

impl Engine for AllocationSites {
    fn add_capabilities(
        &self,
        caps: &mut jvmti::jvmtiCapabilities,
        _potential: &jvmti::jvmtiCapabilities,
    ) {
        caps.set_can_generate_sampled_object_alloc_events(true);
        caps.set_can_generate_object_free_events(true);
    }

    /// The sampling interval is set at load time, before the first
    /// thread-local allocation buffer exists: set later, each thread's
    /// current buffer would still run to its old sample point (about 512
    /// KiB) before every allocation is reported. 0 reports every
    /// allocation; the JVMTI call takes an int.
    fn on_load(&self, jvmti: &Jvmti) -> Result<(), String> {
        let interval = self.counts.interval.min(i32::MAX as u64) as i32;
        jvmti
            .set_heap_sampling_interval(interval)
            .map_err(|e| format!("Unable to set the allocation sampling interval. ({e:?})"))
    }

    fn live_events(&self) -> &'static [jvmti::jvmtiEvent] {
        &[
            jvmti::JVMTI_EVENT_OBJECT_FREE,
            jvmti::JVMTI_EVENT_SAMPLED_OBJECT_ALLOC,
        ]
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

    fn start(&'static self, _run: &'static Run, jni: Option<&JniEnv>) {
        if let (Some(jni), 0) = (jni, self.counts.interval) {
            prime_exact_sampling(jni);
        }
    }

    fn dump_announcement(&self, _run: &Run) -> &'static str {
        " allocation sites ..."
    }

    fn prepare_dump(&self, run: &Run, jni: Option<&JniEnv>) -> Result<(), String> {
        self.deliver_pending_frees(run);
        self.census_large_arrays(run, jni);
        Ok(())
    }

    fn dump_section(&self, run: &Run, model: &mut Model, out: &mut Vec<u8>) {
        let sites = self.site_snapshot(model);
        self.note_written(&sites);
        out.extend(
            run.emitter
                .sites(model, &sites, run.options.cutoff, ctime_now()),
        );
    }
}

/// What a `net=` front end can ask of heap=sites.
impl AllocationSites {
    /// The sites section with HPROF's ALLOC SITES `flags` and `cutoff`
    /// (a garbage collection first is the caller's).
    pub fn requested_section(&self, run: &Run, jni: &JniEnv, flags: u16, cutoff: f64) -> Vec<u8> {
        let _ = self.prepare_dump(run, Some(jni));
        let mut model = run.model.lock();
        let mut sites = self.site_snapshot(&model);
        let changed = self.note_written(&sites);
        if flags & site_flags::CHANGED_ONLY != 0 {
            let mut changed = changed.into_iter();
            sites.retain(|_| changed.next().unwrap_or(true));
        }
        run.emitter
            .requested_sites(&mut model, &sites, cutoff, flags, ctime_now())
    }

    /// Every site as it stands (for HEAP SUMMARY).
    pub fn current_sites(&self, run: &Run, model: &Model) -> Vec<SiteSnapshot> {
        self.deliver_pending_frees(run);
        self.site_snapshot(model)
    }

    /// New allocations are counted, or no longer (frees of objects counted
    /// before still are, so live counts stay right).
    pub fn set_counting(&self, run: &Run, on: bool) -> Result<(), String> {
        let env = run.jvmti.env();
        let events = [jvmti::JVMTI_EVENT_SAMPLED_OBJECT_ALLOC];
        let result = if on {
            env.enable_events_global(&events)
        } else {
            env.disable_events_global(&events)
        };
        result.map_err(|e| format!("cannot switch allocation events ({e:?})"))
    }

    /// Every count starts over from zero.
    pub fn clear(&self) {
        self.counts.sites.clear();
        self.last_written.lock().clear();
    }

    /// Notes `sites` as written; for each, whether its counts changed since
    /// it was last written (a site never written before did).
    fn note_written(&self, sites: &[SiteSnapshot]) -> Vec<bool> {
        let mut last = self.last_written.lock();
        sites
            .iter()
            .map(|s| last.insert((s.class_serial, s.trace_serial), s.stats) != Some(s.stats))
            .collect()
    }
}
