//! CPU TIME (ms) (cpu=times) and the old "prof" table (cpu=old): ranking
//! and percentages as HPROF's hprof_trace.c had them (traces by self time,
//! largest first; see `cpu::rank_by_cost`). The cutoff differs: HPROF ended
//! the list at the first trace whose time share was below it, so a method
//! called a million times in no measurable time had no row; here a row is
//! left out only when its share of the time and its share of the calls are
//! both below the cutoff.

use super::cpu::{Ranked, rank_by_cost};
use crate::format::ascii::{CpuRow, CpuSection, CpuTitle, OldProfRow};

/// Nanoseconds per millisecond.
const NS_PER_MS: u64 = 1_000_000;

/// The costs of one trace at dump time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceTime {
    pub trace_serial: u32,
    /// `class.method` of the timed method (top frame).
    pub method: String,
    /// `class.method(signature)` of the method and of its caller, for cpu=old.
    pub callee: String,
    pub caller: Option<String>,
    /// Completed calls.
    pub calls: u64,
    /// Nanoseconds in the method itself, and from entry to exit.
    pub self_ns: u64,
    pub total_ns: u64,
}

/// Rows by self time, largest first (ties: the more calls first, then
/// trace serial order), without the traces that have no completed call or
/// whose shares of the time and of the calls are both below `cutoff`. The
/// shares are computed from nanoseconds, so that methods shorter than a
/// millisecond still rank; the columns show milliseconds.
pub fn rank(times: &[TraceTime], cutoff: f64) -> Vec<CpuRow> {
    let items = times
        .iter()
        .map(|t| Ranked {
            cost: t.self_ns,
            count: t.calls,
            trace_serial: t.trace_serial,
            method: Some(t.method.as_str()),
        })
        .collect();
    let any_time = times.iter().any(|t| t.self_ns != 0);
    let all_calls: u64 = times.iter().map(|t| t.calls).sum();
    rank_by_cost(items, |item, time_share| {
        let call_share = item.count as f64 / all_calls.max(1) as f64;
        item.count != 0 && (!any_time || time_share >= cutoff || call_share >= cutoff)
    })
}

/// The `CPU TIME (ms)` section; `total` is the self time of everything, in ms.
pub fn ascii_section(times: &[TraceTime], cutoff: f64, created: String) -> CpuSection {
    let total_ns: u64 = times.iter().map(|t| t.self_ns).sum();
    CpuSection {
        title: CpuTitle::TimeMs,
        total: total_ns / NS_PER_MS,
        created,
        rows: rank(times, cutoff),
    }
}

/// The cpu=old table: most called first, time in ms including callees.
pub fn old_prof_rows(times: &[TraceTime]) -> Vec<OldProfRow> {
    let mut order: Vec<&TraceTime> = times.iter().filter(|t| t.calls > 0).collect();
    order.sort_by_key(|t| (std::cmp::Reverse(t.calls), t.trace_serial));
    order
        .into_iter()
        .map(|t| OldProfRow {
            count: t.calls,
            callee: Some(t.callee.clone()),
            caller: t.caller.clone(),
            time: t.total_ns / NS_PER_MS,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn time(trace: u32, calls: u64, self_ms: u64) -> TraceTime {
        TraceTime {
            trace_serial: trace,
            method: format!("A.m{trace}"),
            callee: format!("A.m{trace}()V"),
            caller: None,
            calls,
            self_ns: self_ms * NS_PER_MS,
            total_ns: 2 * self_ms * NS_PER_MS,
        }
    }

    #[test]
    fn ranks_by_self_time_and_shows_calls() {
        let times = [
            time(300_001, 12345, 30),
            time(300_002, 777, 10),
            time(300_003, 1, 200),
        ];
        let section = ascii_section(&times, 0.0001, "now".into());
        assert_eq!(section.total, 240);
        let order: Vec<(u32, u64)> = section
            .rows
            .iter()
            .map(|r| (r.trace_serial, r.count))
            .collect();
        assert_eq!(order, vec![(300_003, 1), (300_001, 12345), (300_002, 777)]);
        assert!((section.rows[0].self_percent - 200.0 / 240.0 * 100.0).abs() < 1e-9);
    }

    #[test]
    fn a_row_is_left_out_only_when_its_time_and_its_calls_are_both_below_the_cutoff() {
        // 1,000 ms and 10 calls; 1 ms and 10,000 calls; 1 ms and 1 call.
        let times = [
            time(300_001, 10, 1000),
            time(300_002, 10_000, 1),
            time(300_003, 1, 1),
            time(300_004, 0, 500),
        ];
        let rows = rank(&times, 0.01);
        let shown: Vec<(u64, u32)> = rows.iter().map(|r| (r.rank, r.trace_serial)).collect();
        assert_eq!(
            shown,
            [(1, 300_001), (2, 300_002)],
            "the trace of many calls stays, the one of few calls and little time goes, \
             and one with no completed call is never shown"
        );
        assert!((rows[1].accum_percent - 1001.0 / 1502.0 * 100.0).abs() < 1e-9);
        assert_eq!(rank(&times, 0.0).len(), 3);
    }

    #[test]
    fn sub_millisecond_methods_still_rank_and_old_rows_sort_by_calls() {
        let mut fast = time(300_001, 10, 0);
        fast.self_ns = 500;
        let times = [fast, time(300_002, 3, 0)];
        let rows = rank(&times, 0.0001);
        assert_eq!(
            rows.iter().map(|r| r.trace_serial).collect::<Vec<_>>(),
            [300_001, 300_002],
            "no time, but 3 of the 13 calls: above the cutoff"
        );
        assert_eq!(ascii_section(&times, 0.0001, String::new()).total, 0);
        let old = old_prof_rows(&[time(300_001, 5, 1), time(300_002, 9, 1)]);
        assert_eq!(old.iter().map(|r| r.count).collect::<Vec<_>>(), vec![9, 5]);
        assert_eq!(old[0].time, 2);
    }
}
