//! The heap=sites engine: every allocation the JVM reports
//! (SampledObjectAlloc) is counted at its site (class and trace) and its
//! object tagged, so that ObjectFree moves it from live to freed (the
//! counts and tags themselves are `modes/heap_sites/alloc.rs`); a dump writes the SITES
//! section.

pub mod alloc;
mod counted_traces;
pub mod counting;
pub mod live_samples;
pub mod site_cache;

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
use counted_traces::{intern_counted, intern_vm_made};
use counting::{BytecodeCounting, CountedRow, share_live_by};
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

/// The bytecode counters as a dump's first step found them.
struct CountedDump {
    rows: Vec<CountedRow>,
    /// Per allocated class signature: its serial and its live objects and
    /// bytes in the heap.
    classes: HashMap<String, (u32, (u64, u64))>,
    /// The live sample in the heap: objects per tag.
    sample_tags: HashMap<u64, u64>,
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

    /// SampledObjectAlloc: count the object at its site and tag it.
    pub fn object_allocated(&self, run: &Run, jni: Option<&JniEnv>, allocated: Allocated<'_>) {
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
        if let (Some(counting), Some(jni)) = (&self.bytecode, jni)
            && let Some(site) = vm_made_site(run, &env, counting, jni, thread, class)
        {
            self.counts.allocated(site, size.max(0) as u64);
            return;
        }
        let depth = if self.bytecode.is_some() {
            // Objects the VM made, beside the counters: their maker (a
            // native such as Object.clone or Array.newArray) and two
            // callers (Array.newInstance's caller is the program). The walk
            // is most of what such an event costs: at the full depth of 4,
            // H2 (millions of clones) ran 2.05x, at 2 frames 1.82x.
            match self.bytecode.as_ref().is_some_and(|c| c.keeps_contexts()) {
                // Contexts give the others their full depth: so does this
                // walk (a context the chain check refused).
                true => run.traces.depth as usize,
                false => run.traces.depth.min(VM_MADE_FRAMES) as usize,
            }
        } else {
            run.traces.depth as usize
        };
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
        let Some(site) = site_of(run, &env, thread, class, [class_tag, thread_serial], frames)
        else {
            return;
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
        &self,
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
        let class_tag = jvm::tag_of(&env, class);
        if class_tag != 0 && class_tag == self.class_class_tag.load(Ordering::Relaxed) {
            return; // class objects carry identifiers of their own
        }
        let site = if live.finds_sites {
            let depth = self.bytecode.as_ref().map_or(1, |c| c.trace_frames());
            let mut buffer = [jvmti::jvmtiFrameInfo::default(); 1 + bci::WINDOW_CALL_SITES];
            let count = jvm::stack_frames_into(&env, thread, &mut buffer[..depth]);
            let frames = &buffer[..count];
            let head = [class_tag, LIVE_SAMPLE_KEY];
            match site_of(run, &env, thread, class, head, frames) {
                Some(site) => site,
                None => return,
            }
        } else {
            NO_SITE
        };
        let (tag, interval) = live.tag(site, size.max(0) as u64);
        let _ = jvm::set_tag(&env, object, tag);
        if let Some(interval) = interval
            && let Err(e) = env.set_heap_sampling_interval(interval.min(i32::MAX as u64) as i32)
        {
            eprintln!("HPROF ERROR: heap=sites could not change the sampling interval ({e:?})");
        }
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

/// The site of an allocation of `class` by `frames`, from this thread's
/// cache under `head` (the class's tag, then a word that tells the kinds of
/// key apart) and the frames, or interned.
fn site_of(
    run: &Run,
    env: &Jvmti,
    thread: LocalThread<'_>,
    class: LocalClass<'_>,
    head: [u64; 2],
    frames: &[jvmti::jvmtiFrameInfo],
) -> Option<u32> {
    let mut key = Vec::with_capacity(2 + 2 * frames.len());
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

/// This thread's stack from the frame that called the allocation tracker
/// on, `depth` frames at most.
fn allocating_stack(env: &Jvmti, depth: usize) -> Vec<jvm::RawFrame> {
    // The tracker's frames (the native, bumpIn, the counting call, a
    // multianewarray's tree) come first.
    const TRACKER_FRAMES: usize = 8;
    let mut buffer = vec![jvmti::jvmtiFrameInfo::default(); depth + TRACKER_FRAMES];
    let count = jvm::stack_frames_into(env, LocalThread::null(), &mut buffer);
    buffer[..count]
        .iter()
        .map(|f| (f.method as u64, f.location))
        .skip_while(|&(method, _)| alloc_tracker::is_tracker_method(method))
        .take(depth)
        .collect()
}

/// Marks the site-cache keys of objects the VM made under calling contexts.
const VM_MADE_KEY: u64 = u64::MAX;
/// Cached for a (class, context) whose objects are walked one by one.
const WALK_EACH: u32 = u32::MAX;

/// The site of an object the VM made, from the thread's calling context
/// (the native that made it was called from a rewritten method, whose call
/// set the context): no stack walk but the first time a thread sees a
/// (class, context), when the maker's frame is taken (one frame) and the
/// context's chain checked against it. `None` when contexts are not kept,
/// or the chain does not hold (a VM-made exception, say, under a context
/// left by an earlier call): the caller walks the stack then, as before.
/// H2, which clones millions of arrays, spent most of its time under
/// alloc_count=bytecode in that walk.
fn vm_made_site(
    run: &Run,
    env: &Jvmti,
    counting: &BytecodeCounting,
    jni: &JniEnv,
    thread: LocalThread<'_>,
    class: LocalClass<'_>,
) -> Option<u32> {
    let context = counting.thread_context(jni, thread)?;
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
const ALLOCATING_INTRINSICS: &str = "_clone,_copyOf,_copyOfRange,_newArray,_allocateInstance,\
     _allocateUninitializedArray,_toBytesStringU";

/// At load time, before the JIT compilers start: the intrinsics that
/// would allocate unseen are turned off (`-XX:DisableIntrinsic`), and so is
/// C2's rewriting of StringBuilder chains, which makes a chain's String
/// without running `toString()` (`-XX:-OptimizeStringConcat`). Said once
/// when the flags cannot be found (counts may then miss those objects).
fn keep_allocations_in_sight() {
    let intrinsics = libjvm::append_to_string_flag(c"DisableIntrinsic", ALLOCATING_INTRINSICS);
    // Absent from a JVM without C2: nothing to turn off then.
    let concat = libjvm::set_bool_flag(c"OptimizeStringConcat", false)
        || libjvm::bool_flag(c"OptimizeStringConcat") == libjvm::BoolFlag::Absent;
    if !(intrinsics && concat) {
        eprintln!(
            "HPROF ERROR: alloc_count=bytecode could not turn off the JIT's allocating intrinsics; \
             objects made by clone(), Arrays.copyOf() and the like may go uncounted once compiled"
        );
    }
}

/// The bytecode counters read, the classes they name found and tagged,
/// and the live objects of those classes counted by a walk of the heap.
fn read_counted(run: &Run, counting: &BytecodeCounting, jni: &JniEnv) -> CountedDump {
    let env = run.jvmti.env();
    let mut rows = counting.counted_rows(&env, jni);
    {
        let model = run.model.lock();
        rows.extend(counting.made_rows(|tag| model.classes.get(tag).map(|c| c.signature.clone())));
    }
    let wanted = BytecodeCounting::wanted_signatures(&rows);
    let found = alloc_tracker::classes_named(&env, jni, &wanted);
    let mut tagged = HashMap::with_capacity(found.len());
    {
        let mut guard = run.model.lock();
        let model = &mut *guard;
        for (signature, class) in found {
            if let Some(known) = intern_class(
                &env,
                &mut model.classes,
                &model.objects,
                class.get(),
                EMPTY_TRACE_SERIAL,
            ) {
                tagged.insert(signature, (class, known.object_id, known.serial));
            }
        }
    }
    let in_heap = alloc_tracker::live_by_class(&env).unwrap_or_else(|e| {
        eprintln!("HPROF ERROR: heap walk failed ({e:?}); live counts of heap=sites are 0");
        alloc_tracker::LiveInHeap::default()
    });
    let live = &in_heap.by_class;
    let by_tag: HashMap<String, (LocalClass<'_>, u64)> = tagged
        .iter()
        .map(|(signature, (class, tag, _))| (signature.clone(), (class.get(), *tag)))
        .collect();
    counting.learn_sizes(&env, jni, &by_tag, live);
    let mut classes: HashMap<String, (u32, (u64, u64))> = tagged
        .into_iter()
        .map(|(signature, (_, tag, serial))| {
            let alive = live.get(&tag).copied().unwrap_or_default();
            (signature, (serial, alive))
        })
        .collect();
    // The classes of the objects VMObjectAlloc reported (tagged when
    // their first object was counted).
    let model = run.model.lock();
    for (_, key) in model.sites.iter() {
        if let Some(class) = model.classes.by_serial(key.class_serial) {
            let alive = live.get(&class.object_id).copied().unwrap_or_default();
            classes
                .entry(class.signature.clone())
                .or_insert((class.serial, alive));
        }
    }
    drop(model);
    CountedDump {
        rows,
        classes,
        sample_tags: in_heap.sample_tags,
    }
}

/// What a frame prints: class, method, signature, line.
type PrintedFrame = (String, String, String, i32);

/// The frames of trace `serial` as they print.
fn printed_frames(model: &Model, serial: u32) -> Vec<PrintedFrame> {
    let Some(trace) = model.traces.get(serial) else {
        return Vec::new();
    };
    trace
        .key
        .frames
        .iter()
        .filter_map(|&id| model.frames.get(id))
        .map(|f| {
            let (class, method) = (f.class_signature.clone(), f.method_name.clone());
            (class, method, f.method_signature.clone(), f.line)
        })
        .collect()
}

/// One row taking part in the sharing of a class's live objects: its
/// allocated objects and bytes, and where its shares go.
struct Sharer {
    objects: u64,
    bytes: u64,
    /// (class serial, trace serial) of its row.
    key: (u32, u32),
}

/// The SITES rows of `alloc_count=bytecode`: one per (allocated class,
/// site frame) of the counters, and `event_sites` (the objects VMObjectAlloc
/// reported, untagged); each class's live objects, found by the heap walk,
/// shared among all its rows as the `live` sample says (by what each
/// allocated where the sample holds none of the class).
fn counted_sites(
    run: &Run,
    model: &mut Model,
    counting: &BytecodeCounting,
    counted: CountedDump,
    event_sites: Vec<SiteSnapshot>,
    live: Option<&LiveSamples>,
) -> Vec<SiteSnapshot> {
    let mut rows: HashMap<(u32, u32), SiteSnapshot> = HashMap::new();
    let mut sharers: HashMap<u32, Vec<Sharer>> = HashMap::new();
    // Trace serials by what their frames print.
    let mut printed: HashMap<Vec<PrintedFrame>, u32> = HashMap::new();
    let mut live_of: HashMap<u32, (u64, u64)> = HashMap::new();
    for &(serial, live) in counted.classes.values() {
        live_of.insert(serial, live);
    }
    for row in &counted.rows {
        let signature = row.identity.allocated.as_str();
        let Some(&(class_serial, _)) = counted.classes.get(signature) else {
            continue; // the class is gone (unloaded): nothing to name it by
        };
        let bytes = if row.instance {
            row.count.objects * counting.instance_size(signature).unwrap_or(0)
        } else {
            row.count.bytes
        };
        let trace_serial = row.identity.walked.unwrap_or_else(|| {
            intern_counted(&run.traces, model, row, |class, method| {
                counting.method_key(class, method)
            })
        });
        let trace_serial = *printed
            .entry(printed_frames(model, trace_serial))
            .or_insert(trace_serial);
        let key = (class_serial, trace_serial);
        let site = rows.entry(key).or_insert_with(|| SiteSnapshot {
            class_serial,
            trace_serial,
            class_signature: signature.to_owned(),
            stats: SiteStats::default(),
        });
        site.stats.allocated_objects += row.count.objects;
        site.stats.allocated_bytes += bytes;
        sharers.entry(class_serial).or_default().push(Sharer {
            objects: row.count.objects,
            bytes,
            key,
        });
    }
    for mut site in event_sites {
        if site.stats.allocated_objects == 0 {
            continue; // a site of the live sample only
        }
        // A stack walked for an object the VM made prints like the frames
        // a calling context names (the first call through a class being
        // loaded is walked): one row for both.
        site.trace_serial = *printed
            .entry(printed_frames(model, site.trace_serial))
            .or_insert(site.trace_serial);
        let key = (site.class_serial, site.trace_serial);
        sharers.entry(site.class_serial).or_default().push(Sharer {
            objects: site.stats.allocated_objects,
            bytes: site.stats.allocated_bytes,
            key,
        });
        site.stats.live_objects = 0;
        site.stats.live_bytes = 0;
        match rows.get_mut(&key) {
            Some(row) => {
                row.stats.allocated_objects += site.stats.allocated_objects;
                row.stats.allocated_bytes += site.stats.allocated_bytes;
            }
            None => {
                rows.insert(key, site);
            }
        }
    }
    let sampled = live.map(|live| sampled_live(model, live, &counted.sample_tags, &printed));
    for (class_serial, sharers) in sharers {
        let sharers = merged_by_key(sharers);
        let class_live = live_of.get(&class_serial).copied().unwrap_or_default();
        let seen: Vec<(u64, u64)> = sharers
            .iter()
            .map(|s| {
                let seen = sampled.as_ref().and_then(|m| m.seen.get(&s.key));
                seen.copied().unwrap_or_default()
            })
            .collect();
        let estimates: Vec<(u64, u64)> = sharers
            .iter()
            .zip(&seen)
            .map(|(s, &seen)| match &sampled {
                Some(sampled) => {
                    let estimate = sampled.rows.get(&s.key).copied().unwrap_or_default();
                    if sampled.estimated {
                        scaled_to_what_was_allocated(estimate, seen, s.bytes)
                    } else {
                        estimate
                    }
                }
                None => (0, 0),
            })
            .collect();
        let objects = match &sampled {
            Some(sampled) if estimates.iter().any(|&(objects, _)| objects > 0) => {
                let elsewhere = sampled.elsewhere.get(&class_serial).copied();
                let (objects, bytes) = class_live;
                let (other_objects, other_bytes) = elsewhere.unwrap_or_default();
                // Once estimated, a few small samples can stand for more
                // objects than the class has: only their bytes, the steadier
                // estimate, are taken off then.
                let other_objects = if sampled.estimated { 0 } else { other_objects };
                let class_live = (
                    objects.saturating_sub(other_objects),
                    bytes.saturating_sub(other_bytes),
                );
                let sample = Sample {
                    estimates: &estimates,
                    seen: &seen,
                    estimated: sampled.estimated,
                };
                shares_by_sample(&sharers, &sample, class_live)
            }
            _ => shares_by_allocation(&sharers, class_live.0),
        };
        let shares = with_bytes(&sharers, objects);
        for (sharer, (objects, bytes)) in sharers.iter().zip(shares) {
            if let Some(site) = rows.get_mut(&sharer.key) {
                site.stats.live_objects += objects;
                site.stats.live_bytes += bytes;
            }
        }
    }
    let mut sites: Vec<SiteSnapshot> = rows.into_values().collect();
    sites.sort_by_key(|s| (s.class_serial, s.trace_serial));
    sites
}

/// A sampled row's live (objects, bytes) as the sample holds them
/// (`estimate`), scaled by what the row allocated (`allocated_bytes`, exact
/// from the counters) over what the sample saw allocated there (`seen`):
/// the share of the row's allocations still alive, applied to all of
/// them (the ratio estimate, steadier than the live count alone).
fn scaled_to_what_was_allocated(
    estimate: (u64, u64),
    seen: (u64, u64),
    allocated_bytes: u64,
) -> (u64, u64) {
    if seen.1 == 0 || allocated_bytes == 0 {
        return estimate;
    }
    let ratio = allocated_bytes as f64 / seen.1 as f64;
    let scale = |n: u64| (n as f64 * ratio).round() as u64;
    (scale(estimate.0), scale(estimate.1))
}

/// Live objects of each of a class's rows, when the sample holds none of
/// them: the class's live objects shared by what each row allocated.
fn shares_by_allocation(sharers: &[Sharer], class_objects: u64) -> Vec<u64> {
    let allocated: Vec<u64> = sharers.iter().map(|s| s.objects).collect();
    share_live_by(class_objects, &allocated, &allocated)
}

/// What the live sample says of a class's rows, row by row.
struct Sample<'a> {
    /// Live (objects, bytes) the sample holds.
    estimates: &'a [(u64, u64)],
    /// (objects, bytes) the sample saw allocated.
    seen: &'a [(u64, u64)],
    /// Whether the sample stopped holding every object.
    estimated: bool,
}

/// Live objects of each of a class's rows as the sample says, never above
/// what a row allocated, within the class's live objects and bytes in the
/// heap (`class_live`, exact, less those the sample holds in no row).
/// Estimates are scaled by bytes (objects are sampled by size, so the byte
/// estimate is the steadier one, and a row of large objects, each sampled
/// for sure, keeps its exact count): down when they hold more than the
/// class's live bytes, and up to them when the sample is estimated and
/// every row has samples, so that the rows add up to what the heap holds.
/// The class's live objects the sample leaves unplaced go to the rows that
/// can hold them ([`takers_of_the_rest`]).
fn shares_by_sample(
    sharers: &[Sharer],
    sample: &Sample<'_>,
    (class_objects, class_bytes): (u64, u64),
) -> Vec<u64> {
    let estimates = sample.estimates;
    let allocated: Vec<u64> = sharers.iter().map(|s| s.objects).collect();
    let placed_bytes: u64 = estimates
        .iter()
        .zip(sharers)
        .map(|(e, s)| e.1.min(s.bytes))
        .sum();
    let every_row_sampled = estimates.iter().all(|e| e.0 > 0);
    let factor = match placed_bytes {
        0 => 1.0,
        _ if placed_bytes > class_bytes => class_bytes as f64 / placed_bytes as f64,
        _ if sample.estimated && every_row_sampled => class_bytes as f64 / placed_bytes as f64,
        _ => 1.0,
    };
    let mut objects: Vec<u64> = estimates
        .iter()
        .zip(&allocated)
        .map(|(e, &a)| ((e.0 as f64 * factor).round() as u64).min(a))
        .collect();
    let placed: u64 = objects.iter().sum();
    if placed > class_objects {
        return share_live_by(class_objects, &objects, &allocated);
    }
    if factor <= 1.0 {
        let (rows, weights, room) = takers_of_the_rest(sample, &allocated, &objects);
        let shares = share_live_by(class_objects - placed, &weights, &room);
        for (i, share) in rows.into_iter().zip(shares) {
            objects[i] += share;
        }
    }
    objects
}

/// The rows that take the class's live objects the sample left unplaced
/// (`placed`: each row's share so far), with their weights and room. Rows
/// the sample holds nothing live of take them by what each allocated
/// (objects whose sample the JVM does not report or keep: clone()'s on JDK
/// 21 and later are seen made and never found live). While the sample
/// should hold every object, rows it saw only in part take them too, by
/// the live objects they likely hold among their allocations it missed: JDK 11 posts no
/// SampledObjectAlloc for some allocations in C1's tier-2 code, which it
/// uses when C2's queue is long, so under load (AllocLive's 9,000 kept
/// Nodes came out 7,744 in one run of four with `-XX:TieredStopAtLevel=2`
/// before this).
fn takers_of_the_rest(
    sample: &Sample<'_>,
    allocated: &[u64],
    placed: &[u64],
) -> (Vec<usize>, Vec<u64>, Vec<u64>) {
    let mut takers = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..allocated.len() {
        let (live, (seen, _)) = (sample.estimates[i].0, sample.seen[i]);
        let room = allocated[i] - placed[i];
        let (weight, room) = if live == 0 {
            (allocated[i], room)
        } else if !sample.estimated && seen > 0 && seen < allocated[i] {
            let missed = allocated[i] - seen;
            let likely_live = (u128::from(missed) * u128::from(live)).div_ceil(u128::from(seen));
            (likely_live as u64, missed.min(room))
        } else {
            continue;
        };
        if weight > 0 && room > 0 {
            takers.0.push(i);
            takers.1.push(weight);
            takers.2.push(room);
        }
    }
    takers
}

/// Live (objects, bytes) of each row from its live objects: each weighs
/// what the row's allocations weighed on average (exact for instances and
/// fixed-length arrays).
fn with_bytes(sharers: &[Sharer], objects: Vec<u64>) -> Vec<(u64, u64)> {
    sharers
        .iter()
        .zip(objects)
        .map(|(sharer, live)| {
            let weight = u128::from(live) * u128::from(sharer.bytes);
            (live, (weight / u128::from(sharer.objects.max(1))) as u64)
        })
        .collect()
}

/// Sharers of one row as one.
fn merged_by_key(sharers: Vec<Sharer>) -> Vec<Sharer> {
    let mut merged: Vec<Sharer> = Vec::with_capacity(sharers.len());
    for sharer in sharers {
        match merged.iter_mut().find(|m| m.key == sharer.key) {
            Some(m) => {
                m.objects += sharer.objects;
                m.bytes += sharer.bytes;
            }
            None => merged.push(sharer),
        }
    }
    merged
}

/// The live objects the sample holds.
#[derive(Default)]
struct SampledLive {
    /// (objects, bytes) by (class serial, trace serial) of the counted row
    /// that prints as the sample's trace.
    rows: HashMap<(u32, u32), (u64, u64)>,
    /// (objects, bytes) by class serial of those of no row: made by the VM
    /// with no Java frame (while a class loads or links), or by the agent's
    /// tracker.
    elsewhere: HashMap<u32, (u64, u64)>,
    /// (objects, bytes) the sample saw allocated, by row as `rows`.
    seen: HashMap<(u32, u32), (u64, u64)>,
    /// Whether the sample stopped holding every object.
    estimated: bool,
}

/// The live objects the sample holds (`sample_tags`: the live objects of
/// each tag), placed by the rows of `printed`.
fn sampled_live(
    model: &Model,
    live: &LiveSamples,
    sample_tags: &HashMap<u64, u64>,
    printed: &HashMap<Vec<PrintedFrame>, u32>,
) -> SampledLive {
    let mut by_site: HashMap<u32, (u64, u64)> = HashMap::new();
    for (&tag, &count) in sample_tags {
        if let Some((site, bytes, objects)) = live.weigh(tag) {
            let entry = by_site.entry(site).or_default();
            entry.0 += objects * count;
            entry.1 += bytes * count;
        }
    }
    let mut sampled = SampledLive {
        estimated: live.estimated(),
        ..SampledLive::default()
    };
    // A site's class and the trace serial of the counted row it prints
    // as (None: no row).
    let row_of = |site: u32| {
        let key = model.sites.key(site)?;
        let row = printed.get(&printed_frames(model, key.trace_serial));
        Some((key.class_serial, row.copied()))
    };
    for (site, (objects, bytes)) in live.seen_by_site() {
        if let Some((class_serial, Some(trace_serial))) = row_of(site) {
            let row = sampled
                .seen
                .entry((class_serial, trace_serial))
                .or_default();
            row.0 += objects;
            row.1 += bytes;
        }
    }
    for (site, (objects, bytes)) in by_site {
        let held = match row_of(site) {
            Some((class_serial, Some(trace_serial))) => sampled
                .rows
                .entry((class_serial, trace_serial))
                .or_default(),
            Some((class_serial, None)) => sampled.elsewhere.entry(class_serial).or_default(),
            None => continue,
        };
        held.0 += objects;
        held.1 += bytes;
    }
    sampled
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

/// What the bytecode tracker's natives report.
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
        let real: Vec<String> = allocating_stack(&env, run.traces.depth as usize)
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
        let (Some(run), Some(counting)) = (self.run.get(), &self.bytecode) else {
            return;
        };
        if !run.lifecycle.accepting_events() {
            return;
        }
        let env = run.jvmti.env();
        let raw = allocating_stack(&env, run.traces.depth as usize);
        let mut guard = run.model.lock();
        let trace_serial = run.traces.intern(&env, &mut guard, &raw, 0);
        drop(guard);
        counting.count_walked(site, trace_serial, bytes);
    }
}

/// What a `net=` front end can ask of heap=sites.
impl AllocationSites {
    /// The sites section with HPROF's ALLOC SITES `flags` and `cutoff`
    /// (a garbage collection first is the caller's).
    pub fn requested_section(&self, run: &Run, jni: &JniEnv, flags: u16, cutoff: f64) -> Vec<u8> {
        let _ = self.prepare_dump(run, Some(jni));
        let mut model = run.model.lock();
        let mut sites = self.prepared_sites(run, &mut model);
        let changed = self.note_written(&sites);
        if flags & site_flags::CHANGED_ONLY != 0 {
            let mut changed = changed.into_iter();
            sites.retain(|_| changed.next().unwrap_or(true));
        }
        run.emitter
            .requested_sites(&mut model, &sites, cutoff, flags, ctime_now())
    }

    /// Every site as it stands (for HEAP SUMMARY).
    pub fn current_sites(&self, run: &Run, jni: &JniEnv) -> Vec<SiteSnapshot> {
        let _ = self.prepare_dump(run, Some(jni));
        self.prepared_sites(run, &mut run.model.lock())
    }

    /// The sites as `prepare_dump` left them: the events' sites, with the
    /// bytecode counters' rows when they run.
    fn prepared_sites(&self, run: &Run, model: &mut Model) -> Vec<SiteSnapshot> {
        let sites = self.site_snapshot(model);
        match (&self.bytecode, self.counted.lock().take()) {
            (Some(counting), Some(counted)) => {
                counted_sites(run, model, counting, counted, sites, self.live.as_ref())
            }
            _ => sites,
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// `shares_by_sample` of a sample that should hold every object.
    fn shares_while_exact(
        sharers: &[Sharer],
        estimates: &[(u64, u64)],
        seen: &[(u64, u64)],
        class_live: (u64, u64),
    ) -> Vec<u64> {
        let sample = Sample {
            estimates,
            seen,
            estimated: false,
        };
        shares_by_sample(sharers, &sample, class_live)
    }

    #[test]
    fn a_row_the_sample_saw_in_part_is_scaled_to_all_it_allocated() {
        // 10,000 Nodes of 24 bytes made, 9,000 kept; the JVM reported 8,600
        // of the allocations, 7,740 of them kept.
        let seen = (8_600, 8_600 * 24);
        let estimate = (7_740, 7_740 * 24);
        assert_eq!(
            scaled_to_what_was_allocated(estimate, seen, 240_000),
            (9_000, 216_000)
        );
        // Seen whole: unchanged; never seen: unchanged (the caller shares
        // what is left of the class among such rows).
        assert_eq!(
            scaled_to_what_was_allocated((900, 21_600), (1_000, 24_000), 24_000),
            (900, 21_600)
        );
        assert_eq!(scaled_to_what_was_allocated((0, 0), (0, 0), 24_000), (0, 0));
    }

    #[test]
    fn rows_sampled_exactly_keep_their_counts_and_unsampled_rows_take_the_rest() {
        let sharer = |objects, key| Sharer {
            objects,
            bytes: objects * 24,
            key: (1, key),
        };
        let sharers = [sharer(10_000, 1), sharer(10_000, 2), sharer(1_000, 3)];
        // The third row (clone()'s, say) posts no sample.
        let estimates = [(9_000, 216_000), (1_000, 24_000), (0, 0)];
        let seen = [(10_000, 240_000), (10_000, 240_000), (0, 0)];
        let class_live = (10_500, 10_500 * 24);
        assert_eq!(
            shares_while_exact(&sharers, &estimates, &seen, class_live),
            [9_000, 1_000, 500]
        );
    }

    #[test]
    fn live_objects_the_sample_missed_go_where_it_missed_allocations() {
        let sharer = |objects, key| Sharer {
            objects,
            bytes: objects * 24,
            key: (1, key),
        };
        let sharers = [sharer(10_000, 1), sharer(10_000, 2)];
        // The JVM did not report 1,400 of the first row's allocations
        // (1,260 of them kept), nor 10 of the second's (1 kept).
        let estimates = [(7_740, 7_740 * 24), (999, 999 * 24)];
        let seen = [(8_600, 8_600 * 24), (9_990, 9_990 * 24)];
        assert_eq!(
            shares_while_exact(&sharers, &estimates, &seen, (10_000, 240_000)),
            [9_000, 1_000]
        );
        // All kept objects seen, some dead ones missed: nothing to add.
        let estimates = [(4_000, 4_000 * 80)];
        let seen = [(9_985, 9_985 * 80)];
        let ints = [Sharer {
            objects: 10_000,
            bytes: 800_000,
            key: (2, 1),
        }];
        assert_eq!(
            shares_while_exact(&ints, &estimates, &seen, (4_000, 320_000)),
            [4_000]
        );
    }
}
