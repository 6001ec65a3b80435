//! The state of heap=sites: the engine's type, what it counts with, and
//! the constants its event path and its dump share.

use super::alloc::AllocationCounts;
use super::counted_dump::CountedDump;
use super::counted_window::CountedWindow;
use super::counting::BytecodeCounting;
use super::live_samples::LiveSamples;
use crate::agent::jvm::{self, LocalClass, LocalObject, LocalThread};
use crate::agent::run::engine::Run;
use crate::emit::sites::SiteSnapshot;
use crate::model::Model;
use crate::model::SiteStats;
use jvmti_bindings::prelude::*;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::AtomicU64;

/// In sampled mode, primitive arrays this large are counted without a tag.
/// Why: G1 frees a dead humongous primitive array at the next young GC
/// ("eager reclaim") only if nothing refers to it, and the JVM's tag map
/// does; with tags, Rhino at alloc_interval=512k ran 1.13-1.29x, without
/// 1.01x. (Humongous means at least half a G1 region, 512 KiB or more.)
pub(super) const LARGE_ARRAY_BYTES: u64 = 256 << 10;

/// `[B`, `[I`, ...: a one-dimensional array of a primitive type.
pub(super) fn is_primitive_array(signature: &str) -> bool {
    signature.len() == 2 && signature.starts_with('[')
}

/// The second word of a live sample's key in the site cache, where an
/// event's key has its thread serial (never this large).
pub(super) const LIVE_SAMPLE_KEY: u64 = u64::MAX - 1;
/// The site a measuring aid tags objects with when it skips finding theirs
/// (the highest a tag holds; never interned).
pub(super) const NO_SITE: u32 = (1 << 27) - 1;

/// Frames an allocation's key holds without a heap buffer.
pub(super) const INLINE_FRAMES: usize = 64;

thread_local! {
    /// Set while [`prime_exact_sampling`] runs on this thread; the first
    /// reported allocation clears it and is not counted.
    pub(super) static PRIMING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Makes the JVM report every allocation of the main thread from now on.
///
/// The main thread exists before the agent loads, so its heap sampler
/// already picked its next sample point (about 512 KiB ahead) with the
/// default interval; until it gets there its allocations are not reported.
/// Allocating throw-away arrays until one is reported moves it past that
/// point; from then on the interval of 0 applies to it too. Threads created
/// later start with the interval of 0.
pub(super) fn prime_exact_sampling(jni: &JniEnv) {
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
    pub(super) counts: AllocationCounts,
    /// Tag of `java.lang.Class`'s class object: its instances are class objects.
    pub(super) class_class_tag: AtomicU64,
    /// Each site's counts when sites were last written, by (class serial,
    /// trace serial): what "changed since the last sites dump" compares to.
    pub(super) last_written: Mutex<HashMap<(u32, u32), SiteStats>>,
    /// `alloc_count=bytecode`: the counters in the byte code (objects the
    /// byte code does not show come as VMObjectAlloc events, counted like
    /// sampled ones).
    pub(super) bytecode: Option<BytecodeCounting>,
    /// `alloc_count=bytecode`: the tagged sample that splits a class's
    /// live objects among its rows.
    pub(super) live: Option<LiveSamples>,
    /// What the dump's first step read of the counters, for its section.
    pub(super) counted: Mutex<Option<CountedDump>>,
    /// The counters' counts a `net=` front end switched off or cleared.
    pub(super) window: CountedWindow,
    /// The run, for the bytecode tracker's natives (set when it starts).
    pub(super) run: std::sync::OnceLock<&'static Run>,
}

impl AllocationSites {
    /// Counting every allocation (`interval` 0) or one per `interval`
    /// bytes, from JVMTI events or (`bytecode`) from counters in the byte
    /// code, with traces of `depth` frames.
    /// Under `bytecode`, `live` is the sample of live objects.
    /// `early`: classes loaded before VM init are rewritten as they load
    /// (see `BytecodeCounting::early`).
    pub fn new(
        interval: u64,
        bytecode: bool,
        depth: usize,
        live: LiveSamples,
        early: bool,
    ) -> Self {
        Self {
            counts: AllocationCounts::new(interval),
            class_class_tag: AtomicU64::new(0),
            last_written: Mutex::default(),
            bytecode: bytecode.then(|| {
                BytecodeCounting::new(depth)
                    .placing_vm_made_objects_by_call(live.splits_rows())
                    .walking_for_traces(live.splits_rows())
                    .rewriting_early(early)
            }),
            live: bytecode.then_some(live),
            counted: Mutex::default(),
            window: CountedWindow::default(),
            run: std::sync::OnceLock::new(),
        }
    }

    /// The classes loaded before VM init left unchanged and uncounted (the
    /// hidden `EARLY_CLASSES_UNCOUNTED` measuring bit).
    pub fn leaving_early_classes_alone(self) -> Self {
        self.with_counting(BytecodeCounting::leaving_early_classes_alone)
    }

    /// The classes loaded before VM init left as they load, their
    /// allocations counted from the live sample's events until they are
    /// handed over to the counters (the default under `alloc_count=sites`; see
    /// `BytecodeCounting::counting_early_by_events`).
    pub fn counting_early_classes_by_events(self) -> Self {
        self.with_counting(BytecodeCounting::counting_early_by_events)
    }

    /// The bytecode counting, when there is one, as `change` makes it.
    fn with_counting(mut self, change: fn(BytecodeCounting) -> BytecodeCounting) -> Self {
        self.bytecode = self.bytecode.take().map(change);
        self
    }

    /// Attached in the live phase: the classes were loaded before, and are
    /// retransformed.
    pub fn rewrite_nothing_early(&mut self) {
        if let Some(counting) = self.bytecode.as_mut() {
            counting.rewrite_nothing_early();
        }
    }

    /// The bytecode counting, when `alloc_count=bytecode`.
    pub fn bytecode(&self) -> Option<&BytecodeCounting> {
        self.bytecode.as_ref()
    }

    /// The sites as they stand, for a dump.
    pub(super) fn site_snapshot(&self, model: &Model) -> Vec<SiteSnapshot> {
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
