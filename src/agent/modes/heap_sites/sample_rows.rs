//! `alloc_count=sites`: each allocation site's rows taken from the live
//! sample. The counters count per site (one frame, exact); the sample walks
//! `depth` frames of each object it reports, and at a dump each site's
//! counts are shared among the traces it saw begin at the site (with
//! `thread=y`, a trace per thread: a site's count is split among threads
//! as the sample and the walks saw them). A site the sample saw nothing of
//! is shared among the traces of its first allocations, which the tracker
//! walked (`FIRST_WALKS_PER_STRIPE`).

use super::live_samples::LiveSamples;
use super::live_sharing::share_live_by;
use super::rows::{PrintedFrame, PrintedTrace, Rows, add_row, printed_frames, printed_trace};
use crate::emit::sites::SiteSnapshot;
use crate::model::{Model, SiteStats};
use std::collections::HashMap;

/// A trace the live sample saw, with the objects and bytes it saw there.
type SeenTrace = (u32, u64, u64);

/// Traces seen by allocated class and first frame: per trace serial (as
/// `printed` knows it), the objects and bytes seen on it.
type SeenFrom = HashMap<(u32, PrintedFrame), HashMap<u32, (u64, u64)>>;

/// What the walks saw by a dump: the tracker's (each site's first
/// allocations and those its thinning chose, weighed by what each stands
/// for) and those of objects the VM made (the first each thread saw at a
/// maker call).
pub(super) struct Walks {
    pub tracker: Vec<WalkedTrace>,
    pub vm_made: Vec<WalkedTrace>,
}

/// What one of a site's walks saw: the objects of a class on a trace.
pub(super) struct WalkedTrace {
    pub class_serial: u32,
    pub trace_serial: u32,
    pub objects: u64,
    pub bytes: u64,
}

/// Adds what was seen of `class_serial` on `trace_serial` to `seen_from`.
fn see(
    model: &Model,
    seen_from: &mut SeenFrom,
    printed: &mut HashMap<PrintedTrace, u32>,
    (class_serial, trace_serial): (u32, u32),
    (objects, bytes): (u64, u64),
) {
    let printed_as = printed_trace(model, trace_serial);
    let Some(first) = printed_as.1.first().cloned() else {
        return;
    };
    let trace = *printed.entry(printed_as).or_insert(trace_serial);
    let seen = seen_from
        .entry((class_serial, first))
        .or_default()
        .entry(trace)
        .or_default();
    seen.0 += objects;
    seen.1 += bytes;
}

/// What the sample saw, by allocated class and the trace's first frame:
/// per trace (its serial as `printed` knows it), the objects and bytes.
fn seen_by_first_frame(
    model: &Model,
    seen_by_site: rustc_hash::FxHashMap<u32, (u64, u64)>,
    printed: &mut HashMap<PrintedTrace, u32>,
) -> SeenFrom {
    let mut seen_from = SeenFrom::new();
    for (site, seen) in seen_by_site {
        if let Some(key) = model.sites.key(site) {
            let key = (key.class_serial, key.trace_serial);
            see(model, &mut seen_from, printed, key, seen);
        }
    }
    seen_from
}

/// What the first walks saw, as [`seen_by_first_frame`] the sample.
fn walked_by_first_frame(
    model: &Model,
    walked: &[WalkedTrace],
    printed: &mut HashMap<PrintedTrace, u32>,
) -> SeenFrom {
    let mut seen_from = SeenFrom::new();
    for w in walked {
        let key = (w.class_serial, w.trace_serial);
        see(model, &mut seen_from, printed, key, (w.objects, w.bytes));
    }
    seen_from
}

/// Whether a site was seen reached one way only: every trace the sample
/// saw there, and every one its first walks saw, has the same frames (one
/// trace, or with `thread=y` one per thread). Its whole row is then shared
/// among those traces by what the sample saw on each, the objects the
/// sample missed included (HotSpot's sampler on JDK 11 leaves some objects
/// of C1's code unreported while it should report every one): all of them
/// to the one trace, or, among threads, each thread's exact count when the
/// sample missed none, else the missed ones shared like the seen.
fn one_way(
    model: &Model,
    sampled: &[SeenTrace],
    walked: Option<&HashMap<u32, (u64, u64)>>,
) -> bool {
    let Some(&(first, _, _)) = sampled.first() else {
        return false;
    };
    let frames = printed_frames(model, first);
    let walked = walked.into_iter().flat_map(HashMap::keys);
    sampled
        .iter()
        .map(|&(trace, _, _)| trace)
        .chain(walked.copied())
        .all(|trace| trace == first || printed_frames(model, trace) == frames)
}

/// The traces of `traces` on the thread of the row of `row_trace`: all of
/// them for a counters' row (no thread: the counters count for all threads
/// together), those of its thread for a row an event placed on one (with
/// `thread=y`, an object the VM made, walked one frame deep).
fn of_the_rows_thread(model: &Model, row_trace: u32, traces: Vec<SeenTrace>) -> Vec<SeenTrace> {
    let thread_of = |serial| model.traces.get(serial).and_then(|t| t.key.thread_serial);
    let Some(thread) = thread_of(row_trace) else {
        return traces;
    };
    traces
        .into_iter()
        .filter(|&(trace, _, _)| thread_of(trace) == Some(thread))
        .collect()
}

/// What `a` and `b` saw, trace by trace.
fn both(
    a: Option<&HashMap<u32, (u64, u64)>>,
    b: &HashMap<u32, (u64, u64)>,
) -> HashMap<u32, (u64, u64)> {
    let mut sum = a.cloned().unwrap_or_default();
    for (&trace, &(objects, bytes)) in b {
        let entry = sum.entry(trace).or_default();
        entry.0 += objects;
        entry.1 += bytes;
    }
    sum
}

/// The traces in `seen` with something seen on them, in a fixed order (the
/// shares' rounding then goes the same way each time).
fn seen_traces(seen: &HashMap<u32, (u64, u64)>) -> Option<Vec<SeenTrace>> {
    let mut traces: Vec<SeenTrace> = seen
        .iter()
        .map(|(&trace, &(objects, bytes))| (trace, objects, bytes))
        .collect();
    traces.sort_unstable();
    traces
        .iter()
        .any(|&(_, objects, _)| objects > 0)
        .then_some(traces)
}

/// The rows when the live sample gives them their traces: each one-frame
/// row of the counters is shared among the traces seen begin at its frame.
/// While the sample still reports every object, each trace gets what the
/// sample saw there, exactly, and what it did not see (made before it
/// started, on the agent's threads, or missed by the JVM) stays in the
/// one-frame row; a site seen reached one way only ([`one_way`]) gives
/// that trace (those of its threads) its whole row. Once it samples, the whole row is shared, objects by
/// the objects seen on each trace, bytes by the bytes: what the sample saw
/// while it reported every object and what the tracker's walks saw after
/// (each weighed by what it stands for), or, for a site the tracker walked
/// nothing of, what the sample saw while it reported every object, else
/// what it saw at all; a row with none of these is shared among the
/// traces the VM-made objects' walks saw, and keeps its one frame without.
pub(super) fn split_by_sample(
    model: &Model,
    live: &LiveSamples,
    walks: &Walks,
    rows: Rows,
    printed: &mut HashMap<PrintedTrace, u32>,
) -> Rows {
    let seen_from = seen_by_first_frame(model, live.seen_by_site(), printed);
    let seen_exactly_from = seen_by_first_frame(model, live.seen_exactly_by_site(), printed);
    let tracker_from = walked_by_first_frame(model, &walks.tracker, printed);
    let vm_made_from = walked_by_first_frame(model, &walks.vm_made, printed);
    let mut split: Rows = HashMap::with_capacity(rows.len());
    for ((class_serial, trace_serial), row) in rows {
        let frames = printed_frames(model, trace_serial);
        let [frame] = frames.as_slice() else {
            add_row(&mut split, row);
            continue;
        };
        let key = (class_serial, *frame);
        let sampled = seen_from.get(&key).and_then(seen_traces);
        let vm_made = vm_made_from.get(&key);
        let chosen = match (live.estimated(), tracker_from.get(&key)) {
            (false, _) => sampled.map(|traces| {
                let exact = !one_way(model, &traces, vm_made);
                (traces, exact)
            }),
            (true, Some(walked)) => {
                seen_traces(&both(seen_exactly_from.get(&key), walked)).map(|t| (t, false))
            }
            // (What it saw while it reported every object first: the same
            // in every run of a deterministic program, unlike its samples.)
            (true, None) => seen_exactly_from
                .get(&key)
                .and_then(seen_traces)
                .or(sampled)
                .map(|traces| (traces, false)),
        };
        let chosen = chosen.or_else(|| vm_made.and_then(seen_traces).map(|t| (t, false)));
        let Some((traces, exact)) = chosen.and_then(|(traces, exact)| {
            let traces = of_the_rows_thread(model, trace_serial, traces);
            (!traces.is_empty()).then_some((traces, exact))
        }) else {
            add_row(&mut split, row);
            continue;
        };
        let (objects, bytes) = (row.stats.allocated_objects, row.stats.allocated_bytes);
        let by_objects: Vec<u64> = traces.iter().map(|&(_, o, _)| o).collect();
        let by_bytes: Vec<u64> = traces.iter().map(|&(_, _, b)| b).collect();
        let (object_shares, byte_shares) = if exact {
            (
                share_live_by(objects, &by_objects, &by_objects),
                share_live_by(bytes, &by_bytes, &by_bytes),
            )
        } else {
            (
                share_live_by(objects, &by_objects, &vec![objects; traces.len()]),
                share_live_by(bytes, &by_bytes, &vec![bytes; traces.len()]),
            )
        };
        let unseen = (
            objects.saturating_sub(object_shares.iter().sum()),
            bytes.saturating_sub(byte_shares.iter().sum()),
        );
        if unseen != (0, 0) {
            add_row(
                &mut split,
                SiteSnapshot {
                    stats: SiteStats {
                        allocated_objects: unseen.0,
                        allocated_bytes: unseen.1,
                        ..SiteStats::default()
                    },
                    ..row.clone()
                },
            );
        }
        for (i, &(trace, _, _)) in traces.iter().enumerate() {
            if object_shares[i] == 0 && byte_shares[i] == 0 {
                continue;
            }
            add_row(
                &mut split,
                SiteSnapshot {
                    class_serial,
                    trace_serial: trace,
                    class_signature: row.class_signature.clone(),
                    stats: SiteStats {
                        allocated_objects: object_shares[i],
                        allocated_bytes: byte_shares[i],
                        ..SiteStats::default()
                    },
                },
            );
        }
    }
    split
}
