//! The event path of heap=sites: each allocation the JVM reports
//! (SampledObjectAlloc, VMObjectAlloc) is found its site (class and trace,
//! through the thread's site cache) and counted there, its object tagged
//! so that a free moves it from live to freed.

use super::counted_traces::intern_vm_made;
use super::counting::{self, BytecodeCounting, EarlyPhase};
use super::early_hand_over;
use super::live_samples::{BudgetSpent, LiveSamples};
use super::outside_tlab;
use super::site_cache;
use super::state::{
    Allocated, AllocationSites, INLINE_FRAMES, LARGE_ARRAY_BYTES, LIVE_SAMPLE_KEY, NO_SITE,
    PRIMING, Reported, is_primitive_array,
};
use crate::agent::jvm::alloc_tracker;
use crate::agent::jvm::libjvm;
use crate::agent::jvm::{self, LocalClass, LocalObject, LocalThread};
use crate::agent::run::classes::intern_class;
use crate::agent::run::engine::Run;
use crate::agent::run::threads;
use crate::model::traces::EMPTY_TRACE_SERIAL;
use crate::model::{Model, SiteKey};
use crate::options::experiment;
use jvmti_bindings::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering};

impl AllocationSites {
    /// SampledObjectAlloc: count the object at its site and tag it.
    pub fn object_allocated(
        &'static self,
        run: &Run,
        jni: Option<&JniEnv>,
        allocated: Allocated<'_>,
    ) {
        let Allocated {
            thread,
            object,
            class,
            size,
            how,
        } = allocated;
        if let (Some(live), Reported::Sampled) = (&self.live, how) {
            self.live_sampled(run, live, thread, object, class, size);
            return;
        }
        if (self.bytecode.is_some() && counting::probing_noted())
            || !run.lifecycle.accepting_events()
            || object.is_null()
            // The priming arrays: the sampled one ends the priming.
            || PRIMING.with(|p| match how {
                Reported::Sampled => p.replace(false),
                Reported::MadeByTheVm => p.get(),
            })
            || threads::is_agent_thread()
        {
            return;
        }
        if run.options.experiment & experiment::ALLOC_EVENT_ONLY != 0 {
            return;
        }
        let env = run.jvmti.env();
        // The thread's calling context (or maker call), read once for both.
        if let (Some(counting), Some(jni)) = (&self.bytecode, jni)
            && let Some(context) = counting.thread_context(&env, jni, thread)
        {
            if counted_after_its_call(&env, counting, jni, context, class) {
                return; // the code after the clone() call counts it
            }
            if let Some(site) = vm_made_site(run, &env, counting, (thread, class), context, size) {
                self.counts.allocated(site, size.max(0) as u64);
                return;
            }
        }
        let depth = if self.bytecode.is_some() {
            // Objects the VM made that no calling context placed (the
            // walk is most of what such an event costs).
            match self.bytecode.as_ref().is_some_and(|c| c.keeps_contexts()) {
                // Contexts give the others their full depth: so does this
                // walk (a context the chain check refused).
                true => run.traces.depth as usize,
                // Without contexts (-Xshare:on) every counted trace stops
                // at its site, and so does the live sample's: this one too,
                // or the sample's live objects would match no row.
                false => 1,
            }
        } else {
            run.traces.depth as usize
        };
        let found = with_top_frames(&env, thread, 0, depth, |frames| {
            if run.options.experiment & experiment::ALLOC_STACK_ONLY != 0 {
                return None;
            }
            let class_tag = jvm::tag_of(&env, class);
            let head = [class_tag, thread_key(run, &env, thread)];
            Some((site_of(run, &env, thread, class, &head, frames)?, class_tag))
        });
        let Some((site, class_tag)) = found else {
            return;
        };

        let allocations = &self.counts;
        let size = size.max(0) as u64;
        if allocations.interval > 0
            && let Some(signature) = large_primitive_array(&env, class, size)
        {
            // Counted without a tag; the census at each dump finds the live ones.
            if let Some(hash) = jvm::identity_hash(&env, object)
                && allocations.allocated_untagged(site, size, hash, &signature)
            {
                return;
            }
        }
        if self.bytecode.is_some() {
            // Counted without a tag: the heap walk of each dump finds the
            // live ones, as for the objects the byte code counts (a tag per
            // object made H2, which clones millions of arrays, 3.5x).
            allocations.allocated(site, size);
            return;
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

    /// SampledObjectAlloc under `alloc_count=bytecode`: the object is
    /// already counted in the byte code (or by VMObjectAlloc); it is tagged
    /// at its trace as it prints, so that the sample of the live ones
    /// splits its class's live objects among the class's rows.
    fn live_sampled(
        &'static self,
        run: &Run,
        live: &LiveSamples,
        thread: LocalThread<'_>,
        object: LocalObject<'_>,
        class: LocalClass<'_>,
        size: i64,
    ) {
        if counting::probing()
            || !self.bytecode.as_ref().is_some_and(|c| c.ready())
            || !run.lifecycle.accepting_events()
            || object.is_null()
            || PRIMING.with(|p| p.replace(false))
            || threads::is_agent_thread()
        {
            return;
        }
        let env = run.jvmti.env();
        if live.is_sampling() && large_primitive_array(&env, class, size.max(0) as u64).is_some() {
            // Left out of the sample once it samples: a tag on a dead
            // humongous array keeps G1 from freeing it at the next young GC
            // (see LARGE_ARRAY_BYTES); Rhino's heap filled with them, and 20
            // concurrent cycles ran that never ran without the tags. The
            // walk still counts the live ones with their class, which goes
            // to the class's rows without samples, by allocation.
            return;
        }
        // While every object is reported, those the classes loaded before
        // VM init make are counted from their events.
        let counting_early = self
            .bytecode
            .as_ref()
            .filter(|c| c.counts_early_by_events() && !live.is_sampling());
        // (`depth` frames under alloc_count=sites, whose rows are these
        // traces; those of the counted rows under calling contexts.)
        let live_depth = match (live.finds_sites, live.split_frames) {
            (false, _) => 0,
            (true, 0) => self.bytecode.as_ref().map_or(1, |c| c.trace_frames()),
            (true, frames) => frames,
        };
        // One walk serves both: the early count's frames start at most one
        // below the top (below a VM maker's native frame).
        let early_depth = counting_early.map_or(0, |_| 1 + (run.traces.depth as usize).max(1));
        let mut class_tag = jvm::tag_of(&env, class);
        let found = with_top_frames(&env, thread, 0, live_depth.max(early_depth), |frames| {
            if let Some(counting) = counting_early {
                let early = EarlyEvent {
                    thread,
                    class,
                    class_tag,
                    size,
                };
                self.count_early_by_event(run, &env, counting, &early, frames);
                if class_tag == 0 {
                    class_tag = jvm::tag_of(&env, class); // (tagged by its count)
                }
            }
            if class_tag != 0 && class_tag == self.class_class_tag.load(Ordering::Relaxed) {
                return None; // class objects carry identifiers of their own
            }
            if !live.finds_sites {
                return Some(NO_SITE);
            }
            let head = [class_tag, LIVE_SAMPLE_KEY, thread_key(run, &env, thread)];
            let frames = &frames[..live_depth.min(frames.len())];
            site_of(run, &env, thread, class, &head, frames)
        });
        let Some(site) = found else {
            return;
        };
        let (tag, spent) = live.tag(site, size.max(0) as u64);
        let _ = jvm::set_tag(&env, object, tag);
        match spent {
            BudgetSpent::No => {}
            BudgetSpent::SetInterval(interval) => self.set_sampling_interval(&env, interval),
            BudgetSpent::WhileHeld => {
                if let Some(run) = self.run.get() {
                    early_hand_over::begin(run, self);
                }
            }
        }
    }

    /// The JVM's heap sampling interval set to `interval` bytes (and JDK
    /// 11's TLABs as they were once it is larger than 0: `outside_tlab.rs`).
    pub(super) fn set_sampling_interval(&self, env: &Jvmti, interval: u64) {
        if let Err(e) = env.set_heap_sampling_interval(interval.min(i32::MAX as u64) as i32) {
            eprintln!("HPROF ERROR: heap=sites could not change the sampling interval ({e:?})");
        }
        if interval > 0 {
            outside_tlab::give_back();
        }
    }

    /// Counts the reported object at its trace when the frame that made
    /// it is in a class the counters leave alone (see
    /// `BytecodeCounting::counts_by_event`).
    fn count_early_by_event(
        &self,
        run: &Run,
        env: &Jvmti,
        counting: &BytecodeCounting,
        early: &EarlyEvent<'_>,
        frames: &[jvmti::jvmtiFrameInfo],
    ) {
        let Some(skipped) = early_frame_of(env, counting, frames) else {
            return;
        };
        let thread = early.thread;
        let depth = (run.traces.depth as usize).max(1);
        let head = [
            early.class_tag,
            EARLY_EVENT_KEY,
            thread_key(run, env, thread),
        ];
        let found = match counting.early_phase() {
            None | Some(EarlyPhase::ByEvents) => {
                let end = (skipped + depth).min(frames.len());
                let frames = &frames[skipped.min(end)..end];
                site_of(run, env, thread, early.class, &head, frames)
            }
            Some(phase) => {
                if phase == EarlyPhase::HandingOver && !counting.wait_for_hand_over() {
                    if !HAND_OVER_LATE.swap(true, Ordering::Relaxed) {
                        eprintln!(
                            "HPROF ERROR: heap=sites: the retransformation of the classes loaded before VM init outlasted an allocation's wait; such allocations may be counted twice"
                        );
                    }
                    let end = (skipped + depth).min(frames.len());
                    let frames = &frames[skipped.min(end)..end];
                    site_of(run, env, thread, early.class, &head, frames)
                } else {
                    // Counted here only when its frame runs the old code
                    // (the stack is walked again: the wait may have ended
                    // with new code under it).
                    let Some(now) = early_frame(env, counting, thread) else {
                        return;
                    };
                    let mut top = [jvmti::jvmtiFrameInfo::default(); 2];
                    let count = jvm::stack_frames_into(env, thread, &mut top);
                    if now >= count || !jvm::is_method_obsolete(env, top[now].method as u64) {
                        return;
                    }
                    with_top_frames(env, thread, now, depth, |frames| {
                        site_of(run, env, thread, early.class, &head, frames)
                    })
                }
            }
        };
        if let Some(site) = found {
            self.counts.allocated(site, early.size.max(0) as u64);
        }
    }

    /// ObjectFree: an object tagged by this agent was collected.
    pub fn object_freed(&self, tag: u64) {
        self.counts.freed(tag);
    }

    /// Makes the JVM deliver the ObjectFree events of objects it has already
    /// collected, so a dump right after a GC shows them as freed. (Newer JVMs
    /// post them lazily; a tag-map query posts the pending ones first.)
    pub(super) fn deliver_pending_frees(&self, run: &Run) {
        let _ = run.jvmti.env().get_objects_with_tags(&[i64::MAX]);
    }

    /// Finds which of the large arrays counted without a tag are still
    /// alive, and counts the others as freed.
    pub(super) fn census_large_arrays(&self, run: &Run, jni: Option<&JniEnv>) {
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
}

/// Set once an allocation's event waited for the hand-over in vain.
static HAND_OVER_LATE: AtomicBool = AtomicBool::new(false);

/// How many top frames to leave out of the trace of an allocation counted
/// from its event (see `BytecodeCounting::counts_by_event`), or None when
/// it is not.
fn early_frame(env: &Jvmti, counting: &BytecodeCounting, thread: LocalThread<'_>) -> Option<usize> {
    let mut top = [jvmti::jvmtiFrameInfo::default(); 2];
    let count = jvm::stack_frames_into(env, thread, &mut top);
    early_frame_of(env, counting, &top[..count])
}

/// As [`early_frame`], from the top `frames` of the stack already walked.
fn early_frame_of(
    env: &Jvmti,
    counting: &BytecodeCounting,
    frames: &[jvmti::jvmtiFrameInfo],
) -> Option<usize> {
    let top = frames.first()?;
    let caller = frames.get(1).map(|f| f.method as u64);
    counting.counts_by_event(env, top.method as u64, caller)
}

/// An object reported while the classes loaded before VM init are counted
/// from events: who made it, of which class (and its tag, 0 if none yet),
/// and its size.
struct EarlyEvent<'a> {
    thread: LocalThread<'a>,
    class: LocalClass<'a>,
    class_tag: u64,
    size: i64,
}

/// `depth` frames of `thread`'s stack below its top `skipped`, given to
/// `use_them`: in a buffer on this thread's stack when they fit in
/// [`INLINE_FRAMES`], else on the heap (a walk that deep costs more than
/// the allocation).
fn with_top_frames<R>(
    env: &Jvmti,
    thread: LocalThread<'_>,
    skipped: usize,
    depth: usize,
    use_them: impl FnOnce(&[jvmti::jvmtiFrameInfo]) -> R,
) -> R {
    let wanted = skipped + depth;
    let mut inline = [jvmti::jvmtiFrameInfo::default(); INLINE_FRAMES];
    let mut heap;
    let buffer: &mut [jvmti::jvmtiFrameInfo] = if wanted <= INLINE_FRAMES {
        &mut inline[..wanted]
    } else {
        heap = vec![jvmti::jvmtiFrameInfo::default(); wanted];
        &mut heap
    };
    let count = jvm::stack_frames_into(env, thread, buffer);
    use_them(&buffer[skipped.min(count)..count])
}

/// The word of a site-cache key that names `thread` under `thread=y` (0
/// without): the cache is per OS thread, and the virtual threads a carrier
/// runs are threads of their own in a trace.
fn thread_key(run: &Run, env: &Jvmti, thread: LocalThread<'_>) -> u64 {
    match run.traces.per_thread {
        true => u64::from(threads::serial_of(env, thread)),
        false => 0,
    }
}

/// The site of an allocation of `class` by `frames`, from this thread's
/// cache under `head` (the class's tag, then words that tell the kinds of
/// key and, with `thread=y`, the threads apart) and the frames, or interned.
fn site_of(
    run: &Run,
    env: &Jvmti,
    thread: LocalThread<'_>,
    class: LocalClass<'_>,
    head: &[u64],
    frames: &[jvmti::jvmtiFrameInfo],
) -> Option<u32> {
    let mut key = Vec::with_capacity(head.len() + 2 * frames.len());
    key.extend(head);
    for frame in frames {
        key.extend([frame.method as u64, frame.location as u64]);
    }
    match site_cache::lookup(&key) {
        Some(site) if head[0] != 0 => Some(site),
        _ => {
            let (site, final_class_tag) = intern_site(run, env, thread, class, frames)?;
            key[0] = final_class_tag;
            site_cache::remember(&key, site);
            Some(site)
        }
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
    let known = intern_class_in(env, model, class)?;
    let trace_serial = run.traces.intern(env, model, &raw, thread_serial);
    let site = model.sites.intern(SiteKey {
        class_serial: known.serial,
        trace_serial,
    })?;
    Some((site, known.object_id))
}

/// `class` in the model's class table (tagged if new).
fn intern_class_in(
    env: &Jvmti,
    model: &mut Model,
    class: LocalClass<'_>,
) -> Option<crate::agent::run::classes::KnownClass> {
    intern_class(
        env,
        &mut model.classes,
        &model.objects,
        class,
        EMPTY_TRACE_SERIAL,
    )
}

/// The trace of this thread's allocating stack (below the tracker's
/// frames, `depth` frames), on `thread` (this thread, or null for it) with
/// `thread=y`.
pub(super) fn walked_trace(run: &Run, env: &Jvmti, thread: LocalThread<'_>) -> u32 {
    let raw = allocating_stack(env, run.traces.depth as usize);
    let mut guard = run.model.lock();
    let model = &mut *guard;
    let thread_serial = threads::trace_thread_serial(run, env, model, thread);
    run.traces.intern(env, model, &raw, thread_serial)
}

/// This thread's stack from the frame that called the allocation tracker
/// on, `depth` frames at most.
pub(super) fn allocating_stack(env: &Jvmti, depth: usize) -> Vec<jvm::RawFrame> {
    // The tracker's frames (the native, bumpIn, the counting call, a
    // multianewarray's tree) come first.
    const TRACKER_FRAMES: usize = 8;
    jvm::stack_below_tracker(env, depth, TRACKER_FRAMES, alloc_tracker::is_tracker_method)
}

/// The signature of `class` when an object of it of `size` bytes is a
/// primitive array of [`LARGE_ARRAY_BYTES`] or more, which is never tagged
/// once allocations are sampled (a tag keeps G1 from freeing it early).
fn large_primitive_array(env: &Jvmti, class: LocalClass<'_>, size: u64) -> Option<String> {
    if size < LARGE_ARRAY_BYTES {
        return None;
    }
    jvm::class_signature(env, class).filter(|signature| is_primitive_array(signature))
}

/// Marks the site-cache keys of objects the VM made under calling contexts.
const VM_MADE_KEY: u64 = u64::MAX;
/// The second word of the key of an object counted from its event because
/// its frame is in a class loaded before VM init and left unchanged.
const EARLY_EVENT_KEY: u64 = u64::MAX - 2;
/// Cached for a (class, context) whose objects are walked one by one.
const WALK_EACH: u32 = u32::MAX;

/// Whether the object the VM just made is the copy of a `clone()` call of
/// rewritten code that ran Object.clone (`context`, the thread's field,
/// names the call): the code after the call counts it (`counted_clones.rs`).
fn counted_after_its_call(
    env: &Jvmti,
    counting: &BytecodeCounting,
    jni: &JniEnv,
    context: u64,
    class: LocalClass<'_>,
) -> bool {
    let call_site = crate::bci::window_call_sites(context)[0];
    counting
        .clones
        .at_call_site(call_site)
        .is_some_and(|call| counting.clones.counted_after(jni, env, &call, class))
}

/// The site of an object the VM made, from the thread's calling context
/// (the native that made it was called from a rewritten method, whose call
/// set the context): no stack walk but the first time a thread sees a
/// (class, context), when the maker's frame is taken (one frame) and the
/// context's chain checked against it. `None` when contexts are not kept,
/// or the chain does not hold (a VM-made exception, say, under a context
/// left by an earlier call): the caller walks the stack then, as before.
/// H2, which clones millions of arrays, spent most of its time under
/// alloc_count=bytecode in that walk.
/// Without contexts (rows from the live sample), the miss also walks the
/// stack for the site's traces, as the tracker does for a site's first
/// allocations: the objects' row has only the VM's frame to go by.
fn vm_made_site(
    run: &Run,
    env: &Jvmti,
    counting: &BytecodeCounting,
    (thread, class): (LocalThread<'_>, LocalClass<'_>),
    context: u64,
    size: i64,
) -> Option<u32> {
    let class_tag = jvm::tag_of(env, class);
    let key = [VM_MADE_KEY, class_tag, context];
    if class_tag != 0
        && let Some(site) = site_cache::lookup(&key)
    {
        return (site != WALK_EACH).then_some(site);
    }
    let mut top = [jvmti::jvmtiFrameInfo::default(); 1];
    if jvm::stack_frames_into(env, thread, &mut top) != 1 {
        return None;
    }
    let top = (top[0].method as u64, top[0].location);
    let (name, descriptor) = jvm::method_name(env, top.0)?;
    let (callers, held) = counting.callers_of(context, (&name, &descriptor));
    let mut guard = run.model.lock();
    let model = &mut *guard;
    let known = intern_class_in(env, model, class)?;
    let site = if held {
        let trace_serial = intern_vm_made(&run.traces, env, model, top, &callers, |c, m| {
            counting.method_key(c, m)
        });
        model.sites.intern(SiteKey {
            class_serial: known.serial,
            trace_serial,
        })
    } else {
        None
    };
    drop(guard);
    if site.is_some() && counting.walks_for_traces() {
        let trace_serial = walked_trace(run, env, thread);
        counting.count_vm_made_walk(known.serial, trace_serial, size.max(0) as u64);
    }
    site_cache::remember(
        &[VM_MADE_KEY, known.object_id, context],
        site.unwrap_or(WALK_EACH),
    );
    site
}

/// The JIT intrinsics that allocate without running the byte code they
/// stand for (HotSpot's names): `Object.clone`, `Arrays.copyOf` and
/// `copyOfRange` of object arrays, `Array.newInstance`'s native,
/// `Unsafe.allocateInstance` and `allocateUninitializedArray`,
/// `StringUTF16.toBytes`. Without them each allocation runs the byte code
/// (counted there) or a VM entry that posts VMObjectAlloc.
const ALLOCATING_INTRINSICS: &str = "_copyOf,_copyOfRange,_newArray,_allocateInstance,\
     _allocateUninitializedArray,_toBytesStringU";

/// `Object.clone`'s intrinsic, among [`ALLOCATING_INTRINSICS`] for good
/// unless it is held off until the hand-over (`early_escape_analysis.rs`).
const CLONE_INTRINSIC: &str = "_clone";

/// At load time, before the JIT compilers start: the intrinsics that
/// would allocate unseen are turned off (`-XX:DisableIntrinsic`), and so is
/// C2's rewriting of StringBuilder chains, which makes a chain's String
/// without running `toString()` (`-XX:-OptimizeStringConcat`). Said once
/// when the flags cannot be found (counts may then miss those objects).
pub(super) fn keep_allocations_in_sight(clone_held_until_hand_over: bool) {
    let list = if clone_held_until_hand_over {
        ALLOCATING_INTRINSICS.to_owned()
    } else {
        format!("{CLONE_INTRINSIC},{ALLOCATING_INTRINSICS}")
    };
    let intrinsics = libjvm::append_to_string_flag(c"DisableIntrinsic", &list);
    let concat = turn_off_c2_flag(c"OptimizeStringConcat");
    if !(intrinsics && concat) {
        eprintln!(
            "HPROF ERROR: alloc_count=bytecode could not turn off the JIT's allocating intrinsics; \
             objects made by clone(), Arrays.copyOf() and the like may go uncounted once compiled"
        );
    }
}

/// At load time under `alloc_count=events` counting every object: no
/// event can report an object that is never made, and C2 leaves out of
/// compiled code objects that do not escape their method (escape
/// analysis), boxes only unboxed, the builders of a StringBuilder chain
/// (its fusion), and, from JDK 15 on, an allocation whose result it never
/// reads once it has answered the reads from the initialising stores
/// (`int[] p = {i, 1}; s += p[1];`). Turned off here as the `-XX` options
/// would: escape analysis and the fusion (`-XX:-DoEscapeAnalysis
/// -XX:-OptimizeStringConcat`), and C2's allocation without a call into
/// the VM, the only place where it drops an unread allocation: on JDK 20
/// and later through `-XX:-UseTLAB` (every allocation then goes into the
/// VM, as each already does at a sampling interval of 0), before through
/// `-XX:+DTraceAllocProbes` (there `-XX:-UseTLAB` would leave Serial and
/// Parallel GC's inline allocation, which no sampler sees). A loop making
/// 2,000,000 of each kind reported 102,399 to 110,751 of them before
/// (those made before C2 compiled it). Said once when a flag cannot be set.
pub(super) fn make_every_object_asked_for(feature_version: Option<u32>) {
    // The unboxing that rests on escape analysis: the JVM turns it off
    // with it when `-XX:-DoEscapeAnalysis` is on the command line.
    let escape_analysis =
        turn_off_c2_flag(c"DoEscapeAnalysis") && turn_off_c2_flag(c"AggressiveUnboxing");
    let concat = turn_off_c2_flag(c"OptimizeStringConcat");
    let through_the_vm = match feature_version {
        Some(feature) if feature >= 20 => libjvm::set_bool_flag(c"UseTLAB", false),
        _ => libjvm::set_bool_flag(c"DTraceAllocProbes", true),
    };
    if !(escape_analysis && concat && through_the_vm) {
        eprintln!(
            "HPROF ERROR: heap=sites could not keep the JIT from leaving objects out of \
             compiled code; objects it leaves out go uncounted"
        );
    }
}

/// Sets the C2 flag `flag` off; true when done, or when the JVM has no C2
/// (the flag is absent: nothing to turn off).
fn turn_off_c2_flag(flag: &std::ffi::CStr) -> bool {
    libjvm::set_bool_flag(flag, false) || libjvm::bool_flag(flag) == libjvm::BoolFlag::Absent
}
