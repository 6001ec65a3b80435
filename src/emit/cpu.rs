//! The CPU SAMPLES section (ASCII) and CPU SAMPLES record (binary): ranking,
//! percentages and cutoff as HPROF's hprof_trace.c had them: traces by
//! count, largest first (ties by trace serial), each with its share and the
//! running total, cut at the first one under the cutoff share.

use crate::format::ascii::{CpuRow, CpuSection, CpuTitle};
use crate::format::binary::{CpuSample, RecordBody};
use crate::format::names::signature_to_name;
use crate::model::Model;
use std::collections::HashMap;

/// One trace's count at dump time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceCount {
    pub trace_serial: u32,
    pub count: u64,
    /// `class.method` of the top frame; None for an empty trace.
    pub method: Option<String>,
}

/// The counted traces with their top frame's name, in trace serial order.
pub fn samples_from(model: &Model, counts: &HashMap<u32, u64>) -> Vec<TraceCount> {
    let mut samples: Vec<TraceCount> = counts
        .iter()
        .map(|(&trace_serial, &count)| {
            let top = model
                .traces
                .get(trace_serial)
                .and_then(|t| t.key.frames.first())
                .and_then(|&id| model.frames.get(id));
            let method = top.map(|f| {
                format!(
                    "{}.{}",
                    signature_to_name(&f.class_signature),
                    f.method_name
                )
            });
            TraceCount {
                trace_serial,
                count,
                method,
            }
        })
        .collect();
    samples.sort_by_key(|s| s.trace_serial);
    samples
}

/// Sum of every count (the `total` of the header).
pub fn total(samples: &[TraceCount]) -> u64 {
    samples.iter().map(|s| s.count).sum()
}

/// What a CPU row is ranked by: `cost` (the shares are of the total
/// cost) and `count` (the count column; a trace without one ends the list).
pub(super) struct Ranked<'a> {
    pub cost: u64,
    pub count: u64,
    pub trace_serial: u32,
    pub method: Option<&'a str>,
}

/// Rows by cost, largest first (ties: the larger count first, then trace
/// serial order), leaving out those `shown(item, share of the total cost)`
/// refuses. Shared by CPU SAMPLES (cost = count) and CPU TIME (cost = self
/// time).
pub(super) fn rank_by_cost(
    mut items: Vec<Ranked<'_>>,
    shown: impl Fn(&Ranked<'_>, f64) -> bool,
) -> Vec<CpuRow> {
    let total: u64 = items.iter().map(|r| r.cost).sum();
    items.sort_by_key(|r| {
        (
            std::cmp::Reverse(r.cost),
            std::cmp::Reverse(r.count),
            r.trace_serial,
        )
    });
    let mut accum = 0.0;
    let mut rows = Vec::new();
    for item in items {
        let ratio = if total == 0 {
            0.0
        } else {
            item.cost as f64 / total as f64
        };
        if !shown(&item, ratio) {
            continue;
        }
        accum += ratio;
        rows.push(CpuRow {
            rank: rows.len() as u64 + 1,
            self_percent: ratio * 100.0,
            accum_percent: accum * 100.0,
            count: item.count,
            trace_serial: item.trace_serial,
            method: item.method.map(str::to_owned),
        });
    }
    rows
}

/// Rows by count, largest first (ties in trace serial order), down to the
/// first trace with no count or a share below `cutoff` (HPROF's
/// hprof_trace.c stopped there).
pub fn rank(samples: &[TraceCount], cutoff: f64) -> Vec<CpuRow> {
    let items = samples
        .iter()
        .map(|s| Ranked {
            cost: s.count,
            count: s.count,
            trace_serial: s.trace_serial,
            method: s.method.as_deref(),
        })
        .collect();
    let any_cost = samples.iter().any(|s| s.count != 0);
    rank_by_cost(items, |item, share| {
        item.count != 0 && (!any_cost || share >= cutoff)
    })
}

/// The ASCII CPU SAMPLES section.
pub fn ascii_section(samples: &[TraceCount], cutoff: f64, created: String) -> CpuSection {
    CpuSection {
        title: CpuTitle::Samples,
        total: total(samples),
        created,
        rows: rank(samples, cutoff),
    }
}

/// The binary CPU SAMPLES record (counts saturate at 32 bits).
pub fn binary_record(samples: &[TraceCount], cutoff: f64) -> RecordBody {
    let saturate = |v: u64| u32::try_from(v).unwrap_or(u32::MAX);
    RecordBody::CpuSamples {
        total: saturate(total(samples)),
        samples: rank(samples, cutoff)
            .iter()
            .map(|r| CpuSample {
                count: saturate(r.count),
                trace_serial: r.trace_serial,
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(trace: u32, n: u64) -> TraceCount {
        TraceCount {
            trace_serial: trace,
            count: n,
            method: Some(format!("A.m{trace}")),
        }
    }

    #[test]
    fn ranks_by_count_with_ties_in_serial_order_and_cutoff() {
        let samples = [
            count(300_001, 10),
            count(300_002, 30),
            count(300_003, 10),
            count(300_004, 0),
        ];
        let rows = rank(&samples, 0.0001);
        let order: Vec<u32> = rows.iter().map(|r| r.trace_serial).collect();
        assert_eq!(
            order,
            vec![300_002, 300_001, 300_003],
            "zero counts end the list"
        );
        assert!((rows[0].self_percent - 60.0).abs() < 1e-9);
        assert!((rows[2].accum_percent - 100.0).abs() < 1e-9);
        assert_eq!(rank(&samples, 0.5).len(), 1);
        assert_eq!(total(&samples), 50);
    }

    #[test]
    fn an_empty_profile_has_no_rows() {
        let section = ascii_section(&[], 0.0001, "now".into());
        assert_eq!(section.total, 0);
        assert!(section.rows.is_empty());
        let RecordBody::CpuSamples { total, samples } = binary_record(&[], 0.0001) else {
            panic!()
        };
        assert_eq!((total, samples.len()), (0, 0));
    }
}
