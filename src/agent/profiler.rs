//! The state of one profiling run and what happens at each lifecycle event:
//! VM init (header, threads and classes so far), thread start/end, class
//! load, allocations and frees, dumps (SIGQUIT or VM death) and the final
//! flush.

use super::alloc::AllocationCounts;
use super::classes::intern_class;
use super::jvm::{self, JvmtiHandle, VmHandle};
use super::sampler::{self, CpuSampling};
use super::site_cache;
use super::times::MethodTiming;
use super::traces::TracePolicy;
use crate::emit::sites::SiteSnapshot;
use crate::emit::{Emitter, HeaderFacts, Style};
use crate::format::ascii::time::ctime_now;
use crate::format::binary::Version;
use crate::model::traces::EMPTY_TRACE_SERIAL;
use crate::model::{Model, SiteKey};
use crate::options::{Format, Options};
use crate::output::OutputWriter;
use jvmti_bindings::prelude::*;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

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

/// Max heap size from which binary files are 1.0.2 (segmented heap dumps),
/// as in the original agent.
const SEGMENTED_HEAP_THRESHOLD: i64 = 2_000_000_000;

/// Binary identifiers are 4 bytes, like the original agent's, except in
/// files with heap dumps: those carry the JVM's own dump, whose object
/// identifiers are 8-byte addresses (and with which VisualVM computes
/// instance sizes for a 64-bit JVM).
fn id_size(options: &Options) -> u32 {
    if options.heap_dump { 8 } else { 4 }
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
        match jni.new_byte_array(CHUNK) {
            Some(array) => jvm::delete_local(Some(jni), array),
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

/// One profiling run.
pub struct Profiler {
    pub options: Options,
    jvmti: JvmtiHandle,
    traces: TracePolicy,
    emitter: Emitter,
    model: Mutex<Model>,
    writer: OutputWriter,
    /// Allocation counts (heap=sites/dump), outside the model lock.
    allocations: Option<AllocationCounts>,
    /// CPU sampling (cpu=samples), when it could be set up.
    cpu: Option<CpuSampling>,
    /// Method timing (cpu=times, cpu=old), when it could be set up.
    timing: Option<MethodTiming>,
    /// Samples per trace since the last dump.
    cpu_counts: Mutex<HashMap<u32, u64>>,
    vm: VmHandle,
    /// Where the JVM writes its heap dump before it is carried over.
    heap_dump_path: String,
    /// That path as a Java string (a global reference), made at VM init:
    /// at an OutOfMemoryError no string can be made for the dump.
    heap_dump_path_string: Mutex<Option<usize>>,
    /// What carrying heap dumps over remembers from one dump to the next.
    dump_memory: Mutex<crate::emit::heap::DumpMemory>,
    /// Tag of `java.lang.Class`'s class object: its instances are class objects.
    class_class_tag: AtomicU64,
    /// Set at VM init; events before it are ignored.
    live: AtomicBool,
    /// Set at VM death; events after it are ignored.
    dead: AtomicBool,
    /// Set at the first exhaustion of the Java heap (its dump is written then).
    heap_exhausted: AtomicBool,
    /// Held while a dump is written; a second request meanwhile is dropped.
    dumping: Mutex<()>,
}

impl Profiler {
    /// A run with parsed options, its JVMTI environment and its open output.
    pub fn new(
        options: Options,
        jvmti: &Jvmti,
        vm: VmHandle,
        writer: OutputWriter,
        heap_dump_path: String,
    ) -> Self {
        let style = match options.format {
            Format::Ascii => Style::Ascii,
            Format::Binary => Style::Binary,
        };
        let traces = TracePolicy {
            depth: options.depth,
            per_thread: options.thread,
            line_numbers: options.lineno,
        };
        // Allocations are tracked for SITES only: heap dumps come from the
        // JVM's own dumper, which has no per-object allocation traces to use.
        let allocations = options
            .heap_sites
            .then(|| AllocationCounts::new(options.alloc_interval));
        let id_bytes = id_size(&options);
        let timing = if options.cpu_times {
            MethodTiming::install_tracker(jvmti)
                .map(|_| MethodTiming::new(options.prof_trace_depth))
                .map_err(|why| eprintln!("HPROF ERROR: cpu=times cannot run: {why}"))
                .ok()
        } else {
            None
        };
        let cpu = if options.cpu_samples {
            CpuSampling::new(options.interval_ms, options.depth)
                .map_err(|why| eprintln!("HPROF ERROR: cpu=samples cannot run: {why}"))
                .ok()
        } else {
            None
        };
        Self {
            options,
            jvmti: JvmtiHandle::new(jvmti),
            traces,
            emitter: Emitter::new(style, id_bytes),
            model: Mutex::new(Model::new(id_bytes == 8)),
            writer,
            allocations,
            cpu,
            timing,
            cpu_counts: Mutex::default(),
            vm,
            heap_dump_path,
            heap_dump_path_string: Mutex::new(None),
            dump_memory: Mutex::default(),
            class_class_tag: AtomicU64::new(0),
            live: AtomicBool::new(false),
            dead: AtomicBool::new(false),
            heap_exhausted: AtomicBool::new(false),
            dumping: Mutex::new(()),
        }
    }

    /// The agent refuses to start after all: nothing is written, and an
    /// output file this run created is removed.
    pub fn abandon_output(&self) {
        self.writer.abandon();
    }

    /// Method timing, when on.
    pub fn method_timing(&self) -> Option<&MethodTiming> {
        self.timing.as_ref()
    }

    fn accepting_events(&self) -> bool {
        self.live.load(Ordering::Acquire) && !self.dead.load(Ordering::Acquire)
    }

    /// VM init: the file header, the main thread, the classes loaded so far.
    pub fn vm_init(&'static self, jni: Option<&JniEnv>, main_thread: jni::jthread) {
        let env = self.jvmti.env();
        let version = match (self.emitter.style(), jni.and_then(jvm::max_heap_bytes)) {
            (Style::Binary, _) if self.options.heap_dump => Version::V102,
            (Style::Binary, Some(max)) if max >= SEGMENTED_HEAP_THRESHOLD => Version::V102,
            _ => Version::V101,
        };
        let mut control_flags = 0;
        if self.allocations.is_some() {
            control_flags |= 0x1;
        }
        if self.options.cpu_samples {
            control_flags |= 0x2;
        }
        let facts = HeaderFacts {
            version,
            created: ctime_now(),
            timestamp_ms: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as u64),
            control_flags,
            depth: self.options.depth.min(u16::MAX as u32) as u16,
        };
        // cpu=old files are just the old "prof" table: no header (HPROF's rule).
        if !self.options.cpu_old {
            self.writer.write(self.emitter.file_header(&facts));
        }

        let classes = jvm::loaded_classes(&env);
        let mut guard = self.model.lock();
        let model = &mut *guard;
        for &class in &classes {
            intern_class(
                &env,
                &mut model.classes,
                &model.objects,
                class,
                EMPTY_TRACE_SERIAL,
            );
            jvm::delete_local(jni, class);
        }
        if let Some(class_class) = jni.and_then(|jni| jvm::find_class(jni, "java/lang/Class")) {
            if let Some(known) = intern_class(
                &env,
                &mut model.classes,
                &model.objects,
                class_class,
                EMPTY_TRACE_SERIAL,
            ) {
                self.class_class_tag
                    .store(known.object_id, Ordering::Relaxed);
            }
        }
        self.writer.write(self.emitter.class_loads(model));
        drop(guard);

        if let (true, Some(jni)) = (self.options.heap_dump, jni)
            && let Some(path) = jni.new_string_utf(&self.heap_dump_path)
        {
            *self.heap_dump_path_string.lock() = Some(jvm::global_ref(jni, path) as usize);
            jvm::delete_local(Some(jni), path);
        }
        self.live.store(true, Ordering::Release);
        self.thread_started(jni, main_thread);
        self.writer.flush();
        self.enable_live_events(&env);
        if let (Some(jni), Some(0)) = (jni, self.allocations.as_ref().map(|a| a.interval)) {
            prime_exact_sampling(jni);
        }
        if let Some(cpu) = &self.cpu {
            cpu.start(self.vm, move |_jni| self.cpu_tick());
        }
        if let (Some(timing), Some(jni)) = (&self.timing, jni) {
            match timing.engage(jni) {
                Ok(()) => {
                    timing.start_clock(self.vm);
                    let events = [
                        jvmti::JVMTI_EVENT_CLASS_FILE_LOAD_HOOK,
                        jvmti::JVMTI_EVENT_EXCEPTION_CATCH,
                    ];
                    if let Err(error) = env.enable_events_global(&events) {
                        eprintln!("HPROF ERROR: cpu=times cannot run: events ({error:?})");
                    }
                }
                Err(why) => eprintln!("HPROF ERROR: cpu=times cannot run: {why}"),
            }
        }
    }

    /// One sampler tick: count the stacks of the threads that ran.
    fn cpu_tick(&self) {
        let Some(cpu) = &self.cpu else { return };
        if !self.accepting_events() {
            return;
        }
        let env = self.jvmti.env();
        let ran = cpu.collect(&env);
        if ran.is_empty() {
            return;
        }
        let mut model = self.model.lock();
        let traces: Vec<(u32, u32)> = ran
            .iter()
            .map(|r| {
                let trace = if r.frames.is_empty() {
                    self.traces.intern_no_java_frames(&mut model, r.serial)
                } else {
                    self.traces.intern(&env, &mut model, &r.frames, r.serial)
                };
                (trace, r.intervals)
            })
            .collect();
        drop(model);
        let mut counts = self.cpu_counts.lock();
        for (trace, intervals) in traces {
            *counts.entry(trace).or_default() += u64::from(intervals);
        }
    }

    /// Events wanted once the VM is live: only those the options need.
    fn enable_live_events(&self, env: &Jvmti) {
        let mut events = vec![
            jvmti::JVMTI_EVENT_THREAD_START,
            jvmti::JVMTI_EVENT_THREAD_END,
            jvmti::JVMTI_EVENT_DATA_DUMP_REQUEST,
            jvmti::JVMTI_EVENT_RESOURCE_EXHAUSTED,
        ];
        if self.emitter.style() == Style::Binary {
            events.push(jvmti::JVMTI_EVENT_CLASS_LOAD);
        }
        if self.allocations.is_some() {
            // The sampling interval was set at load time (see setup_jvmti).
            events.push(jvmti::JVMTI_EVENT_OBJECT_FREE);
            events.push(jvmti::JVMTI_EVENT_SAMPLED_OBJECT_ALLOC);
        }
        if let Err(error) = env.enable_events_global(&events) {
            eprintln!(
                "HPROF ERROR: Unable to enable JVMTI events ({error:?}); some output may be missing"
            );
        }
    }

    /// The serial of `thread`, registering it if new. Threads are known by
    /// a number in their JVMTI thread-local slot, so object tags stay free
    /// for allocation accounting.
    /// A thread registered here gets `start_frames` as its THREAD START trace.
    fn thread_serial(
        &self,
        env: &Jvmti,
        model: &mut Model,
        thread: jni::jthread,
        start_frames: &[jvm::RawFrame],
    ) -> u32 {
        match jvm::thread_value(env, thread) {
            0 => self.register_thread(env, model, thread, start_frames),
            stored => stored as u32,
        }
    }

    /// Gives `thread` a serial and writes its THREAD START, with the trace
    /// of `frames`: every serial a trace or record refers to has its THREAD
    /// START in the file, also for threads first seen in an allocation or
    /// a sample (those started before VM init, virtual threads).
    fn register_thread(
        &self,
        env: &Jvmti,
        model: &mut Model,
        thread: jni::jthread,
        frames: &[jvm::RawFrame],
    ) -> u32 {
        let facts = jvm::thread_facts(env, thread);
        let object_id = model.objects.next();
        let serial = model.threads.add(
            object_id,
            facts.name,
            facts.group,
            facts.parent_group,
            EMPTY_TRACE_SERIAL,
        );
        jvm::set_thread_value(env, thread, u64::from(serial));
        let trace = self.traces.intern(env, model, frames, serial);
        model.threads.set_trace(serial, trace);
        // cpu=old files have no THREAD lines (HPROF's rule).
        if !self.options.cpu_old {
            self.writer.write(self.emitter.thread_start(model, serial));
        }
        serial
    }

    /// The thread serial a trace of `thread` is keyed by: with `thread=y`
    /// its serial, else 0 (and the thread need not be registered).
    fn trace_thread_serial(&self, env: &Jvmti, model: &mut Model, thread: jni::jthread) -> u32 {
        if self.traces.per_thread {
            self.thread_serial(env, model, thread, &[])
        } else {
            0
        }
    }

    /// ThreadStart (and the main thread at VM init), on the thread itself:
    /// THREAD START once per thread, and its CPU timer for cpu=samples.
    pub fn thread_started(&self, jni: Option<&JniEnv>, thread: jni::jthread) {
        if !self.accepting_events() || sampler::is_agent_thread() {
            return;
        }
        let env = self.jvmti.env();
        let frames = jvm::stack_frames(&env, thread, self.traces.depth);
        let mut model = self.model.lock();
        let serial = self.thread_serial(&env, &mut model, thread, &frames);
        if let Some(cpu) = &self.cpu {
            cpu.thread_started(jni, thread, serial);
        }
    }

    /// ThreadEnd, on the ending thread: THREAD END, and its CPU timer stops.
    pub fn thread_ended(&self, jni: Option<&JniEnv>, thread: jni::jthread) {
        let unsampled = self.cpu.as_ref().and_then(|cpu| cpu.thread_ended(jni));
        if !self.accepting_events() || sampler::is_agent_thread() {
            return;
        }
        let env = self.jvmti.env();
        let mut model = self.model.lock();
        if let Some((serial, intervals)) = unsampled {
            // Its Java frames are gone (ThreadEnd comes after run() returned).
            let trace = self.traces.intern_no_java_frames(&mut model, serial);
            *self.cpu_counts.lock().entry(trace).or_default() += u64::from(intervals);
        }
        // A thread never registered had no THREAD START: no THREAD END either.
        let serial = jvm::thread_value(&env, thread) as u32;
        if let (Some(timing), Some(jni)) = (&self.timing, jni) {
            // Runs Java code (whose allocations may call back into the
            // agent): not under the model lock. Without thread=y all
            // finished threads' traces are kept together.
            drop(model);
            timing.thread_ended(jni, if self.traces.per_thread { serial } else { 0 });
            model = self.model.lock();
        }
        if serial != 0 && model.threads.end(serial) && !self.options.cpu_old {
            let bytes = self.emitter.thread_end(serial);
            drop(model);
            self.writer.write(bytes);
        }
    }

    /// ClassLoad: the class gets a serial, and in binary a LOAD CLASS record
    /// with the loading thread's trace.
    pub fn class_loaded(&self, thread: jni::jthread, class: jni::jclass) {
        if !self.accepting_events() || self.emitter.style() != Style::Binary {
            return;
        }
        let env = self.jvmti.env();
        let frames = jvm::stack_frames(&env, thread, self.traces.depth);
        let mut guard = self.model.lock();
        let model = &mut *guard;
        let thread_serial = self.trace_thread_serial(&env, model, thread);
        let trace = self.traces.intern(&env, model, &frames, thread_serial);
        intern_class(&env, &mut model.classes, &model.objects, class, trace);
        let bytes = self.emitter.class_loads(model);
        drop(guard);
        self.writer.write(bytes);
    }

    /// SampledObjectAlloc: count the object at its site and tag it.
    pub fn object_allocated(
        &self,
        thread: jni::jthread,
        object: jni::jobject,
        class: jni::jclass,
        size: i64,
    ) {
        let Some(allocations) = &self.allocations else {
            return;
        };
        if !self.accepting_events()
            || object.is_null()
            || PRIMING.with(|p| p.replace(false))
            || sampler::is_agent_thread()
        {
            return;
        }
        if self.options.experiment & super::X_ALLOC_EVENT_ONLY != 0 {
            return;
        }
        let env = self.jvmti.env();
        let depth = self.traces.depth as usize;
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
        if self.options.experiment & super::X_ALLOC_STACK_ONLY != 0 {
            return;
        }

        let class_tag = jvm::tag_of(&env, class);
        let thread_serial = if self.traces.per_thread {
            jvm::thread_value(&env, thread)
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
            _ => match self.intern_site(&env, thread, class, frames) {
                Some((site, final_class_tag)) => {
                    key[0] = final_class_tag;
                    site_cache::remember(&key, site);
                    site
                }
                None => return,
            },
        };

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
            let id = self.model.lock().objects.next();
            allocations.allocated_with_id(site, size, id);
            id
        } else {
            allocations.allocated(site, size)
        };
        let _ = jvm::set_tag(&env, object, tag);
    }

    /// The site of an allocation not in this thread's cache, and the tag of
    /// the allocated class.
    fn intern_site(
        &self,
        env: &Jvmti,
        thread: jni::jthread,
        class: jni::jclass,
        frames: &[jvmti::jvmtiFrameInfo],
    ) -> Option<(u32, u64)> {
        let raw: Vec<jvm::RawFrame> = frames
            .iter()
            .map(|f| (f.method as u64, f.location))
            .collect();
        let mut guard = self.model.lock();
        let model = &mut *guard;
        let thread_serial = self.trace_thread_serial(env, model, thread);
        let known = intern_class(
            env,
            &mut model.classes,
            &model.objects,
            class,
            EMPTY_TRACE_SERIAL,
        )?;
        let trace_serial = self.traces.intern(env, model, &raw, thread_serial);
        let site = model.sites.intern(SiteKey {
            class_serial: known.serial,
            trace_serial,
        })?;
        Some((site, known.object_id))
    }

    /// ObjectFree: an object tagged by this agent was collected.
    pub fn object_freed(&self, tag: u64) {
        if let Some(allocations) = &self.allocations {
            allocations.freed(tag);
        }
    }

    /// Makes the JVM deliver the ObjectFree events of objects it has already
    /// collected, so a dump right after a GC shows them as freed. (Newer JVMs
    /// post them lazily; a tag-map query posts the pending ones first.)
    fn deliver_pending_frees(&self) {
        if self.allocations.is_some() {
            let env = self.jvmti.env();
            let _ = env.get_objects_with_tags(&[i64::MAX]);
        }
    }

    /// Finds which of the large arrays counted without a tag are still
    /// alive, and counts the others as freed.
    fn census_large_arrays(&self, jni: Option<&JniEnv>) {
        let (Some(allocations), Some(jni)) = (&self.allocations, jni) else {
            return;
        };
        let env = self.jvmti.env();
        let mut live = Vec::new();
        for signature in allocations.untagged_classes() {
            // A primitive array class is always there to find; should it not
            // be, the walk covers every class instead.
            let class = jvm::find_class(jni, &signature).unwrap_or(std::ptr::null_mut());
            let census = jvm::census_large_arrays(&env, jni, class, LARGE_ARRAY_BYTES);
            jvm::delete_local(Some(jni), class);
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
        allocations.census(&live);
    }

    /// The sites as they stand, for a dump.
    fn site_snapshot(&self, model: &Model) -> Vec<SiteSnapshot> {
        let Some(allocations) = &self.allocations else {
            return Vec::new();
        };
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
                stats: allocations.sites.stats(index),
            })
            .collect()
    }

    /// A full dump (SIGQUIT or VM death): every section the enabled
    /// collectors have, then a flush. A request during a dump is dropped.
    pub fn dump(&self, jni: Option<&JniEnv>) {
        let Some(_guard) = self.dumping.try_lock() else {
            return;
        };
        self.dump_now(jni);
    }

    /// The dump itself; the caller holds `dumping`.
    fn dump_now(&self, jni: Option<&JniEnv>) {
        let mut parts = Vec::new();
        if self.options.heap_dump {
            parts.push(" Java heap ...");
        }
        if self.options.heap_sites {
            parts.push(" allocation sites ...");
        }
        if self.options.cpu_samples {
            parts.push(" CPU usage by sampling running threads ...");
        }
        if self.options.cpu_times {
            parts.push(if self.options.cpu_old {
                " CPU usage in old prof format ..."
            } else {
                " CPU usage by timing methods ..."
            });
        }
        if self.options.verbose && !parts.is_empty() {
            eprint!("Dumping{}", parts.concat());
        }
        // The VM-death callback brings its JNI environment; a SIGQUIT dump
        // runs on the Signal Dispatcher, a Java thread whose own one is used.
        let current_env;
        let jni = match jni {
            Some(jni) => Some(jni),
            None => {
                current_env = self.vm.current_env();
                current_env.as_ref()
            }
        };
        // Sections in HPROF's order; each prints the traces it refers to first.
        let mut heap_dump_error = None;
        if self.options.heap_dump {
            let mut model = self.model.lock();
            let mut bytes = self.emitter.class_loads(&mut model);
            bytes.extend(self.emitter.unprinted_traces(&mut model));
            drop(model);
            self.writer.write(bytes);
            heap_dump_error = self.heap_dump(jni).err();
        }
        self.deliver_pending_frees();
        self.census_large_arrays(jni);
        // The Tracker's costs are read before the model is locked: reading
        // runs Java code, whose allocations may call back into the agent.
        let drained = match (&self.timing, jni) {
            (Some(timing), Some(jni)) => timing.take_costs(&self.jvmti.env(), jni),
            _ => Vec::new(),
        };
        let mut model = self.model.lock();
        let mut bytes = self.emitter.class_loads(&mut model);
        if self.options.heap_sites {
            let sites = self.site_snapshot(&model);
            bytes.extend(
                self.emitter
                    .sites(&mut model, &sites, self.options.cutoff, ctime_now()),
            );
        }
        if self.options.cpu_samples {
            // Counts start over after each dump, as HPROF's did.
            let counts = std::mem::take(&mut *self.cpu_counts.lock());
            let samples = crate::emit::cpu::samples_from(&model, &counts);
            bytes.extend(self.emitter.cpu_samples(
                &mut model,
                &samples,
                self.options.cutoff,
                ctime_now(),
            ));
        }
        if let Some(timing) = &self.timing {
            let times = self.method_times(timing, &mut model, drained);
            bytes.extend(if self.options.cpu_old {
                self.emitter.old_prof(&times)
            } else {
                self.emitter
                    .cpu_times(&mut model, &times, self.options.cutoff, ctime_now())
            });
        }
        drop(model);
        self.writer.write(bytes);
        self.writer.flush();
        // One failure, one line: when the output itself failed too (a full
        // disk holds both), the writer's line already says the output stops.
        if let Some(message) = heap_dump_error.filter(|_| !self.writer.has_failed()) {
            let new_line = if self.options.verbose { "\n" } else { "" };
            eprintln!("{new_line}HPROF ERROR: {message}");
        }
        if self.options.verbose && !parts.is_empty() {
            eprintln!(" done.");
        }
    }

    /// The heap dump section: the JVM dumps its heap to a temporary file,
    /// which is carried into the output and removed. On failure, what to
    /// tell the user (once the rest of the dump is written).
    fn heap_dump(&self, jni: Option<&JniEnv>) -> Result<(), String> {
        let Some(jni) = jni else {
            return Err("no JNI environment on this thread; heap dump skipped".into());
        };
        let path = &self.heap_dump_path;
        let _ = std::fs::remove_file(path);
        let mut output = crate::output::DumpOutput::new(&self.writer);
        let started = std::time::Instant::now();
        let prepared = *self.heap_dump_path_string.lock();
        let result = super::heapdump::dump_heap(
            jni,
            path,
            prepared.map(|global| global as jni::jstring),
            self.options.verbose,
            self.options.experiment & super::X_HEAP_DUMP_THROUGH_BEAN != 0,
        )
        .and_then(|()| {
            // (Progress is in bytes of the JVM's dump, which the binary copy
            // follows one to one; the ASCII conversion does not.)
            if self.options.verbose && self.emitter.style() == Style::Binary {
                let size = std::fs::metadata(path).map_or(0, |m| m.len());
                output.report_progress(size, started.elapsed());
            }
            let mut out = |bytes: Vec<u8>| output.hand_over(bytes);
            let malformed = |e| format!("the JVM's heap dump {path} is malformed: {e}");
            let mut dump = std::fs::File::open(path)
                .map_err(|e| crate::format::ParseError {
                    offset: 0,
                    message: format!("cannot open {path}: {e}"),
                })
                .map_err(malformed)?;
            match self.emitter.style() {
                Style::Binary => {
                    let mut memory = self.dump_memory.lock();
                    self.emitter
                        .carry_heap_dump(&mut dump, &self.model, &mut memory, &mut out)
                        .map(|_| ())
                        .map_err(malformed)
                }
                // The JVM's dumper of JDK 11 to 17 lists a class's fields
                // last-declared first; HPROF's ASCII lists them in declaration
                // order. (The property is read now: it is not set at load time.)
                Style::Ascii => self
                    .emitter
                    .ascii_heap_dump(
                        &mut dump,
                        &self.model,
                        &ctime_now(),
                        jvm::java_feature_version(&self.jvmti.env()).is_some_and(|v| v < 21),
                        &mut out,
                    )
                    .map_err(malformed),
            }
        });
        let _ = std::fs::remove_file(path);
        result
    }

    /// The timed calls since the last dump, one entry per trace (costs start
    /// over after each dump, as HPROF's did).
    fn method_times(
        &self,
        timing: &MethodTiming,
        model: &mut Model,
        drained: Vec<(u32, Vec<u64>, super::times::CallCosts)>,
    ) -> Vec<crate::emit::times::TraceTime> {
        let mut by_trace: HashMap<u32, crate::emit::times::TraceTime> = HashMap::new();
        for (thread_serial, keys, costs) in drained {
            let methods: Vec<_> = keys.iter().map(|&k| timing.method(k)).collect();
            let trace_serial = super::traces::intern_timed(
                model,
                &keys,
                &methods,
                self.traces.per_thread.then_some(thread_serial),
            );
            let name = |i: usize, with_descriptor: bool| {
                methods.get(i).and_then(|m| m.as_ref()).map(|m| {
                    let class = m.class_name.replace('/', ".");
                    if with_descriptor {
                        format!("{class}.{}{}", m.method_name, m.descriptor)
                    } else {
                        format!("{class}.{}", m.method_name)
                    }
                })
            };
            let entry =
                by_trace
                    .entry(trace_serial)
                    .or_insert_with(|| crate::emit::times::TraceTime {
                        trace_serial,
                        method: name(0, false).unwrap_or_else(|| "<Unknown Method>".into()),
                        callee: name(0, true).unwrap_or_else(|| "<unknown callee>".into()),
                        caller: name(1, true),
                        calls: 0,
                        self_ns: 0,
                        total_ns: 0,
                    });
            entry.calls += costs.count;
            entry.self_ns += costs.self_time;
            entry.total_ns += costs.total_time;
        }
        by_trace.into_values().collect()
    }

    /// ResourceExhausted for the Java heap: the first time, a full dump is
    /// written at once. A program that dies of an OutOfMemoryError with its
    /// heap still full ends without a VM death event (the JVM's shutdown
    /// needs memory it no longer has), so the exit dump would never come;
    /// this one holds everything up to the error, like the JVM's
    /// -XX:+HeapDumpOnOutOfMemoryError.
    pub fn heap_exhausted(&self, jni: Option<&JniEnv>) {
        if !self.accepting_events() || self.heap_exhausted.swap(true, Ordering::AcqRel) {
            return;
        }
        // HotSpot logs each posting of this event on stdout ("[error][jvmti]
        // Posting Resource Exhausted event"): one such line is the price of
        // the dump, more would only add noise to the program's output.
        let _ = self
            .jvmti
            .env()
            .disable_events_global(&[jvmti::JVMTI_EVENT_RESOURCE_EXHAUSTED]);
        if self.options.verbose {
            eprintln!(
                "HPROF: the Java heap is exhausted (OutOfMemoryError); dumping the profile now"
            );
        }
        self.dump(jni);
    }

    /// SIGQUIT / DataDumpRequest.
    pub fn data_dump_request(&self) {
        if self.accepting_events() {
            self.dump(None);
        }
    }

    /// VM death: the exit dump (`doe=y`), then everything is flushed and closed.
    pub fn vm_death(&self, jni: Option<&JniEnv>) {
        if self.dead.swap(true, Ordering::AcqRel) {
            return;
        }
        if let Some(cpu) = &self.cpu {
            cpu.stop();
        }
        // Calls are no longer timed from here on (HPROF disengaged its
        // Tracker at the start of VM death too).
        if let (Some(timing), Some(jni)) = (&self.timing, jni) {
            timing.disengage(jni);
        }
        // A SIGQUIT dump still being written is waited for, then the exit
        // dump follows it: what happened since that dump is not lost.
        let _guard = self.dumping.lock();
        if self.options.doe && self.live.load(Ordering::Acquire) {
            self.dump_now(jni);
        }
        self.writer.close();
    }
}
