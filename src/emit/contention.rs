//! The ranking MONITOR TIME and LOCK TIME share, as HPROF's
//! hprof_monitor.c ranked monitors: rows by waiting time, largest first,
//! then by count, then by trace serial; each with its share of the total
//! time and the running sum of shares, cut at the first row whose share is
//! under the cutoff.

use crate::format::ascii::RankColumns;
use std::cmp::Reverse;

/// What a row is ranked by.
pub struct Waited {
    /// Time spent waiting since the last dump.
    pub time_ns: u64,
    /// Times a thread waited, since the run began.
    pub count: u64,
    pub trace_serial: u32,
}

/// `rows` in rank order with their columns, cut at `cutoff`, and the total
/// in milliseconds (to the nearest); None when nothing waited since the
/// last dump (counts alone print nothing).
pub fn rank_by_time<T>(
    mut rows: Vec<T>,
    waited: impl Fn(&T) -> Waited,
    cutoff: f64,
) -> Option<(u64, Vec<(RankColumns, T)>)> {
    let total_ns: u64 = rows.iter().map(|r| waited(r).time_ns).sum();
    if total_ns == 0 {
        return None;
    }
    rows.sort_by_key(|r| {
        let w = waited(r);
        (Reverse(w.time_ns), Reverse(w.count), w.trace_serial)
    });
    let mut accum = 0.0;
    let mut ranked = Vec::new();
    for (i, row) in rows.into_iter().enumerate() {
        let w = waited(&row);
        let ratio = w.time_ns as f64 / total_ns as f64;
        if ratio < cutoff {
            break;
        }
        accum += ratio;
        let columns = RankColumns {
            rank: i as u64 + 1,
            self_percent: ratio * 100.0,
            accum_percent: accum * 100.0,
            count: w.count,
            trace_serial: w.trace_serial,
        };
        ranked.push((columns, row));
    }
    Some(((total_ns + 500_000) / 1_000_000, ranked))
}
