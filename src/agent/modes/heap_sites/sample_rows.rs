//! `alloc_count=sites`: each allocation site's rows taken from the live
//! sample. The counters count per site (one frame, exact); the sample walks
//! `depth` frames of each object it reports, and at a dump each site's
//! counts are shared among the traces it saw begin at the site.

use super::live_samples::LiveSamples;
use super::live_sharing::share_live_by;
use super::rows::{PrintedFrame, Rows, add_row, printed_frames};
use crate::emit::sites::SiteSnapshot;
use crate::model::{Model, SiteStats};
use std::collections::HashMap;

/// A trace the live sample saw, with the objects and bytes it saw there.
type SeenTrace = (u32, u64, u64);

/// What the sample saw, by allocated class and the trace's first frame:
/// per trace (its serial as `printed` knows it), the objects and bytes.
fn seen_by_first_frame(
    model: &Model,
    live: &LiveSamples,
    printed: &mut HashMap<Vec<PrintedFrame>, u32>,
) -> HashMap<(u32, PrintedFrame), HashMap<u32, (u64, u64)>> {
    let mut seen_from: HashMap<(u32, PrintedFrame), HashMap<u32, (u64, u64)>> = HashMap::new();
    for (site, (objects, bytes)) in live.seen_by_site() {
        let Some(key) = model.sites.key(site) else {
            continue;
        };
        let frames = printed_frames(model, key.trace_serial);
        let Some(first) = frames.first().cloned() else {
            continue;
        };
        let trace = *printed.entry(frames).or_insert(key.trace_serial);
        let seen = seen_from
            .entry((key.class_serial, first))
            .or_default()
            .entry(trace)
            .or_default();
        seen.0 += objects;
        seen.1 += bytes;
    }
    seen_from
}

/// The rows when the live sample gives them their traces: each one-frame
/// row of the counters is shared among the traces the sample saw begin at
/// its frame. While the sample still reports every object, each trace
/// gets what the sample saw there, exactly, and what it did not see (made
/// before it started, on the agent's threads, or missed by the JVM) stays
/// in the one-frame row; once it samples, the whole row is shared, objects
/// by the objects it saw on each trace, bytes by the bytes. A row the sample
/// saw nothing of keeps its one frame.
pub(super) fn split_by_sample(
    model: &Model,
    live: &LiveSamples,
    rows: Rows,
    printed: &mut HashMap<Vec<PrintedFrame>, u32>,
) -> Rows {
    let seen_from = seen_by_first_frame(model, live, printed);
    let mut split: Rows = HashMap::with_capacity(rows.len());
    for ((class_serial, trace_serial), row) in rows {
        let frames = printed_frames(model, trace_serial);
        let traces = match frames.as_slice() {
            [frame] => seen_from.get(&(class_serial, frame.clone())).map(|traces| {
                let mut traces: Vec<SeenTrace> = traces
                    .iter()
                    .map(|(&trace, &(objects, bytes))| (trace, objects, bytes))
                    .collect();
                // (A fixed order: the shares' rounding goes the same way.)
                traces.sort_unstable();
                traces
            }),
            _ => None,
        };
        let Some(traces) = traces.filter(|t| t.iter().any(|&(_, objects, _)| objects > 0)) else {
            add_row(&mut split, row);
            continue;
        };
        let (objects, bytes) = (row.stats.allocated_objects, row.stats.allocated_bytes);
        let by_objects: Vec<u64> = traces.iter().map(|&(_, o, _)| o).collect();
        let by_bytes: Vec<u64> = traces.iter().map(|&(_, _, b)| b).collect();
        let (object_shares, byte_shares) = if live.estimated() {
            (
                share_live_by(objects, &by_objects, &vec![objects; traces.len()]),
                share_live_by(bytes, &by_bytes, &vec![bytes; traces.len()]),
            )
        } else {
            (
                share_live_by(objects, &by_objects, &by_objects),
                share_live_by(bytes, &by_bytes, &by_bytes),
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
