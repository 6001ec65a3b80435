//! The SITES rows of the bytecode counting, keyed by (class serial, trace
//! serial), and what a trace prints (its thread and frames), by which rows
//! of traces made apart (counted, walked, sampled) are merged.

use crate::emit::sites::SiteSnapshot;
use crate::model::Model;
use std::collections::HashMap;

/// A frame as it prints: its [`FrameEntry::printed`] number, shared by
/// the frames that print the same.
///
/// [`FrameEntry::printed`]: crate::model::frames::FrameEntry::printed
pub(super) type PrintedFrame = u32;

/// The frames of trace `serial` as they print.
pub(super) fn printed_frames(model: &Model, serial: u32) -> Vec<PrintedFrame> {
    let Some(trace) = model.traces.get(serial) else {
        return Vec::new();
    };
    trace
        .key
        .frames
        .iter()
        .filter_map(|&id| model.frames.get(id))
        .map(|f| f.printed)
        .collect()
}

/// What a trace prints: its thread's serial (with `thread=y`) and its
/// frames. Traces that print the same are one row's.
pub(super) type PrintedTrace = (Option<u32>, Vec<PrintedFrame>);

/// What trace `serial` prints (see [`PrintedTrace`]).
pub(super) fn printed_trace(model: &Model, serial: u32) -> PrintedTrace {
    let thread = model.traces.get(serial).and_then(|t| t.key.thread_serial);
    (thread, printed_frames(model, serial))
}

/// Rows by (class serial, trace serial).
pub(super) type Rows = HashMap<(u32, u32), SiteSnapshot>;

/// Adds `row` to `rows`, to the allocations of its key's row if there is one.
pub(super) fn add_row(rows: &mut Rows, row: SiteSnapshot) {
    let key = (row.class_serial, row.trace_serial);
    match rows.get_mut(&key) {
        Some(known) => {
            known.stats.allocated_objects += row.stats.allocated_objects;
            known.stats.allocated_bytes += row.stats.allocated_bytes;
        }
        None => {
            rows.insert(key, row);
        }
    }
}
