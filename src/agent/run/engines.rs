//! The collectors of a run, one module each, and the list that decides
//! which run and in which order their sections are dumped.

pub use crate::agent::modes::cpu_samples::CpuSamples;
pub use crate::agent::modes::cpu_times::MethodTimes;
pub use crate::agent::modes::cpu_wall::WallSamples;
pub use crate::agent::modes::heap_dump::HeapDump;
pub use crate::agent::modes::heap_sites::{Allocated, AllocationSites, Reported};
pub use crate::agent::modes::monitor::Monitors;
pub use crate::agent::modes::monitor::lock_waits::LockWaits;

use crate::agent::modes::cpu_times::from_samples::SampleFeed;
use crate::agent::modes::heap_sites::live_samples::{self, LiveSamples};
use crate::agent::run::engine::Engine;
use crate::agent::run::traces::MAX_TRACE_DEPTH;
use crate::options::{Options, experiment};
use crate::output::PrivateDir;

/// The engines the options select. Each is a field of its own type, so
/// that the JVMTI entry points reach an engine's per-event callbacks
/// (allocations, frees, class rewriting) without dynamic dispatch.
pub struct Engines {
    pub monitors: Option<Monitors>,
    pub heap_dump: Option<HeapDump>,
    pub allocation_sites: Option<AllocationSites>,
    pub cpu_samples: Option<CpuSamples>,
    pub wall_samples: Option<WallSamples>,
    pub method_times: Option<MethodTimes>,
    pub lock_waits: Option<LockWaits>,
}

/// Whether heap=sites leaves the classes loaded before VM init as they load
/// and counts their allocations from events until it hands them over to
/// the counters (`heap_sites/early_hand_over.rs`): the default under
/// `alloc_count=sites` when loaded with the JVM (not when attached, where
/// every class is loaded already and retransformed).
fn early_classes_by_events(options: &Options, loaded_with_jvm: bool) -> bool {
    let bits = options.experiment;
    let earlier_designs = experiment::EARLY_CLASSES_UNCOUNTED
        | experiment::RETRANSFORM_AT_VM_INIT
        | experiment::EARLY_HOOK_KEPT;
    bits & experiment::EARLY_CLASSES_BY_EVENTS != 0
        || (options.alloc_count_sites && loaded_with_jvm && bits & earlier_designs == 0)
}

/// How often cpu=times timed from samples samples a thread: every
/// millisecond of its CPU, HPROF's clock resolution.
const TIMES_SAMPLE_INTERVAL_MS: u32 = 1;

/// Frames a sample for cpu=times keeps beyond the trace depth: its trace is
/// made of the counted frames, and the frames above the innermost counted
/// one (code loaded before VM init) are passed over.
const SAMPLED_EXTRA_FRAMES: u32 = 16;

/// The live sample of `alloc_count=bytecode`: the default, or what the
/// hidden measuring bits of `X=` ask; `held`: exact past its budget until
/// the hand-over has ended.
fn live_sample(options: &Options, held: bool) -> LiveSamples {
    let experiment_bits = options.experiment;
    let exact_bytes = if experiment_bits & experiment::LIVE_SAMPLE_EVERY_OBJECT != 0 {
        u64::MAX
    } else if experiment_bits & experiment::LIVE_SAMPLE_OFF != 0 {
        0
    } else {
        live_samples::EXACT_BYTES
    };
    let interval = if experiment_bits & experiment::LIVE_SAMPLE_OFF != 0 {
        i32::MAX as u64
    } else {
        live_samples::SAMPLE_INTERVAL
    };
    let mut live = LiveSamples::new(exact_bytes, interval);
    if held {
        live = live.holding_exact();
    }
    live.finds_sites = experiment_bits & experiment::LIVE_SAMPLE_WITHOUT_SITES == 0;
    if options.alloc_count_sites {
        live.split_frames = (options.depth as usize).max(1);
    }
    live
}

/// Frames of the counted rows' traces: `depth` with calling contexts, one
/// under `alloc_count=sites`, where the live sample gives each site's rows
/// their traces.
fn counted_frames(options: &Options) -> usize {
    match options.alloc_count_sites {
        true => 1,
        false => options.depth as usize,
    }
}

/// Frames a calling context of `alloc_count=bytecode` names: the site's
/// and 3 callers'.
const CONTEXT_FRAMES: u32 = 1 + crate::bci::WINDOW_CALL_SITES as u32;

/// Says at start what `alloc_count=bytecode` (calling contexts kept in the
/// code, asked for by name) cannot give of the options: traces deeper than
/// a context, rows per thread. `alloc_count=sites` walks the stacks for
/// both.
fn say_what_contexts_leave_out(options: &Options) {
    if !options.heap_sites || !options.alloc_count_bytecode || options.alloc_count_sites {
        return;
    }
    if options.depth > CONTEXT_FRAMES {
        eprintln!(
            "HPROF: alloc_count=bytecode keeps calling contexts of {CONTEXT_FRAMES} frames: \
             its traces stop there (depth={}); alloc_count=sites walks them",
            options.depth
        );
    }
    if options.thread {
        eprintln!(
            "HPROF: alloc_count=bytecode counts a site for all threads together: \
             thread=y does not split its rows (alloc_count=sites does)"
        );
    }
}

impl Engines {
    /// At load time, the engines `options` select (`heap_dump_dir`: where
    /// the JVM writes a heap dump before it is carried into the output,
    /// made when heap dumps are asked for; `loaded_with_jvm`: false when
    /// attached to a running JVM).
    pub fn new(
        options: &Options,
        heap_dump_dir: Option<PrivateDir>,
        loaded_with_jvm: bool,
    ) -> Self {
        let by_events = early_classes_by_events(options, loaded_with_jvm);
        // (Set only with cpu=times, never with cpu=old or a filter: options.rs.)
        let times_from_samples = options.timing_by_samples;
        let cpu_samples = if options.cpu_samples {
            Some(CpuSamples::new(options))
        } else if times_from_samples {
            let frames = (options.prof_trace_depth + SAMPLED_EXTRA_FRAMES).min(MAX_TRACE_DEPTH);
            Some(CpuSamples::feeding_times(
                options,
                TIMES_SAMPLE_INTERVAL_MS,
                frames,
            ))
        } else {
            None
        };
        let method_times = options.cpu_times.then(|| {
            let bits = options.experiment;
            let times = MethodTimes::new(options.prof_trace_depth, options.class_filter.clone())
                .with_experiment(bits);
            if let Some(samples) = cpu_samples.as_ref().filter(|_| times_from_samples) {
                times.timed_from_samples(SampleFeed {
                    counts: samples.shared_counts(),
                    interval_ns: u64::from(TIMES_SAMPLE_INTERVAL_MS) * 1_000_000,
                })
            } else if bits & experiment::TIMES_CALL_COUNTS_INLINED != 0 {
                times.counting_calls_only(true)
            } else if bits & experiment::TIMES_CALL_COUNTS_ONLY != 0 {
                times.counting_calls_only(false)
            } else {
                times
            }
        });
        say_what_contexts_leave_out(options);
        Self {
            monitors: options.monitor.then(Monitors::new),
            heap_dump: heap_dump_dir.map(HeapDump::new),
            allocation_sites: options.heap_sites.then(|| {
                let sites = AllocationSites::new(
                    options.alloc_interval,
                    options.alloc_count_bytecode,
                    counted_frames(options),
                    live_sample(options, by_events),
                    // (Not with cpu=times, whose rewrite needs its tracker
                    // from the first class it changes.)
                    options.experiment & experiment::RETRANSFORM_AT_VM_INIT == 0
                        && method_times.is_none(),
                );
                if by_events {
                    sites.counting_early_classes_by_events()
                } else if options.experiment & experiment::EARLY_CLASSES_UNCOUNTED != 0 {
                    sites.leaving_early_classes_alone()
                } else {
                    sites
                }
            }),
            cpu_samples,
            wall_samples: options
                .cpu_wall
                .then(|| WallSamples::new(options.interval_ms)),
            method_times,
            lock_waits: options.monitor.then(|| LockWaits::new(options.depth)),
        }
    }

    /// Every engine of the run, in HPROF's section order (each section
    /// prints the traces it refers to first): the order in which they
    /// start, see threads come and go, and dump.
    pub fn all(&self) -> impl Iterator<Item = &dyn Engine> {
        let all: [Option<&dyn Engine>; 7] = [
            self.monitors.as_ref().map(|e| e as &dyn Engine),
            self.heap_dump.as_ref().map(|e| e as &dyn Engine),
            self.allocation_sites.as_ref().map(|e| e as &dyn Engine),
            self.cpu_samples.as_ref().map(|e| e as &dyn Engine),
            self.wall_samples.as_ref().map(|e| e as &dyn Engine),
            self.method_times.as_ref().map(|e| e as &dyn Engine),
            self.lock_waits.as_ref().map(|e| e as &dyn Engine),
        ];
        all.into_iter().flatten()
    }
}
