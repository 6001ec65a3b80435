//! MONITOR TIME (and hprof-rs's MONITOR HOLDERS after it): ranking,
//! percentages and cutoff as HPROF's hprof_monitor.c had them: rows by
//! contended time, largest first (then by count), each with its share of
//! the total time and the running sum, cut at the first one under the
//! cutoff share.
//!
//! One difference, on purpose: HPROF divided its total of milliseconds by
//! 1,000,000 before asking whether there was anything to print, so the
//! section almost never appeared. Here it is printed whenever threads
//! waited to enter a monitor since the last dump, with the total in ms.

use super::contention::{Waited, rank_by_time};
use crate::format::ascii::{MonitorHolderRow, MonitorTimeRow, Section};
use crate::format::names::signature_to_name;

/// The owner's trace seen most often when a row's contention began.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Holder {
    pub trace_serial: u32,
    /// Of the `sampled` contentions, how many found this trace.
    pub seen: u32,
    pub sampled: u32,
}

/// One (trace at contended enter, monitor class) pair at dump time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Contention {
    pub trace_serial: u32,
    /// Raw JVM signature of the monitor's class (`LContention;`).
    pub signature: String,
    /// Time spent waiting to enter since the last dump.
    pub time_ns: u64,
    /// Contended entries since the run began (HPROF never reset them).
    pub count: u64,
    pub holder: Option<Holder>,
}

/// The sections of one dump: MONITOR TIME, then MONITOR HOLDERS when any
/// listed row has a holder; and the traces they refer to (to be printed
/// before them). None when no thread waited since the last dump.
pub struct MonitorTime {
    pub sections: Vec<Section>,
    pub traces: Vec<u32>,
}

/// MONITOR TIME for `rows` (any order), cut at `cutoff`, stamped `created`.
pub fn monitor_time(rows: Vec<Contention>, cutoff: f64, created: String) -> Option<MonitorTime> {
    let waited = |r: &Contention| Waited {
        time_ns: r.time_ns,
        count: r.count,
        trace_serial: r.trace_serial,
    };
    let (total_ms, ranked) = rank_by_time(rows, waited, cutoff)?;
    let mut time_rows = Vec::new();
    let mut holder_rows = Vec::new();
    let mut traces = Vec::new();
    for (columns, row) in ranked {
        let monitor = signature_to_name(&row.signature);
        traces.push(row.trace_serial);
        if let Some(holder) = row.holder {
            traces.push(holder.trace_serial);
            holder_rows.push(MonitorHolderRow {
                rank: columns.rank,
                trace_serial: row.trace_serial,
                holder_trace_serial: holder.trace_serial,
                seen: holder.seen,
                sampled: holder.sampled,
                monitor: monitor.clone(),
            });
        }
        time_rows.push(MonitorTimeRow::from_columns(columns, monitor));
    }
    let mut sections = vec![Section::MonitorTime {
        total_ms,
        created,
        rows: time_rows,
    }];
    if !holder_rows.is_empty() {
        sections.push(Section::MonitorHolders(holder_rows));
    }
    Some(MonitorTime { sections, traces })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(trace: u32, signature: &str, ms: u64, count: u64) -> Contention {
        Contention {
            trace_serial: trace,
            signature: signature.into(),
            time_ns: ms * 1_000_000,
            count,
            holder: None,
        }
    }

    #[test]
    fn rows_by_time_then_count_cut_at_the_cutoff() {
        let mut rows = vec![
            row(300001, "LA;", 10, 1),
            row(300002, "Ljava/lang/Object;", 880, 40),
            row(300003, "LB;", 10, 5),
            row(300004, "LC;", 100, 2),
        ];
        rows[1].holder = Some(Holder {
            trace_serial: 300009,
            seen: 3,
            sampled: 4,
        });
        let made = monitor_time(rows, 0.01, "now".into()).expect("there was contention");
        let [
            Section::MonitorTime {
                total_ms,
                rows: time,
                ..
            },
            Section::MonitorHolders(holders),
        ] = &made.sections[..]
        else {
            panic!("{:?}", made.sections);
        };
        assert_eq!(*total_ms, 1000);
        let order: Vec<(u32, &str, u64)> = time
            .iter()
            .map(|r| (r.trace_serial, r.monitor.as_str(), r.count))
            .collect();
        // 10 ms each for A and B: B first, by count. All are >= 1%.
        assert_eq!(
            order,
            [
                (300002, "java.lang.Object", 40),
                (300004, "C", 2),
                (300003, "B", 5),
                (300001, "A", 1)
            ]
        );
        assert!((time[1].accum_percent - 98.0).abs() < 1e-9);
        assert_eq!(holders.len(), 1);
        assert_eq!(
            (holders[0].rank, holders[0].holder_trace_serial),
            (1, 300009)
        );
        assert_eq!(made.traces, [300002, 300009, 300004, 300003, 300001]);

        // A cutoff of 5% keeps only the row above it.
        let rows = vec![
            row(1, "LA;", 95, 1),
            row(2, "LB;", 4, 1),
            row(3, "LC;", 1, 1),
        ];
        let made = monitor_time(rows, 0.05, "now".into()).unwrap();
        let Section::MonitorTime { rows, .. } = &made.sections[0] else {
            panic!()
        };
        assert_eq!(rows.len(), 1);
    }

    /// HPROF's bug is not kept: 5 ms of contention is printed.
    #[test]
    fn any_contention_is_printed_and_none_is_not() {
        let made = monitor_time(vec![row(1, "LA;", 5, 2)], 0.0001, "t".into()).unwrap();
        assert!(matches!(
            made.sections[..],
            [Section::MonitorTime { total_ms: 5, .. }]
        ));
        assert!(monitor_time(vec![row(1, "LA;", 0, 2)], 0.0001, "t".into()).is_none());
        assert!(monitor_time(Vec::new(), 0.0001, "t".into()).is_none());
    }
}
