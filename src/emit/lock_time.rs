//! LOCK TIME, hprof-rs's addition after MONITOR TIME: the time threads
//! spent blocked acquiring java.util.concurrent locks, ranked as MONITOR
//! TIME ranks monitors: rows by blocked time, largest first (then by
//! count, then trace), each with its share of the total time and the
//! running sum, cut at the first one under the cutoff share. Printed
//! whenever a thread blocked on such a lock since the last dump.

use super::Emitter;
use super::contention::{Waited, rank_by_time};
use crate::format::ascii::{MonitorTimeRow, Section, writer};
use crate::model::Model;

/// One (trace of the blocked thread, lock class) pair at dump time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockContention {
    pub trace_serial: u32,
    /// Dotted name of the lock's class, e.g.
    /// `java.util.concurrent.locks.ReentrantLock`.
    pub lock: String,
    /// Time spent blocked since the last dump.
    pub time_ns: u64,
    /// Times a thread blocked, since the run began (MONITOR TIME keeps its
    /// counts so too, as HPROF did).
    pub count: u64,
}

/// The LOCK TIME section for `rows` (any order), cut at `cutoff`, stamped
/// `created`; None when no thread blocked since the last dump.
pub fn lock_time_section(
    rows: Vec<LockContention>,
    cutoff: f64,
    created: String,
) -> Option<Section> {
    let waited = |r: &LockContention| Waited {
        time_ns: r.time_ns,
        count: r.count,
        trace_serial: r.trace_serial,
    };
    let (total_ms, ranked) = rank_by_time(rows, waited, cutoff)?;
    let rows = ranked
        .into_iter()
        .map(|(columns, row)| MonitorTimeRow::from_columns(columns, row.lock))
        .collect();
    Some(Section::LockTime {
        total_ms,
        created,
        rows,
    })
}

impl Emitter {
    /// LOCK TIME: the traces of the listed rows first, then the section;
    /// nothing when no thread blocked since the last dump.
    pub fn lock_time(
        &self,
        model: &mut Model,
        rows: Vec<LockContention>,
        cutoff: f64,
        created: String,
    ) -> Vec<u8> {
        let Some(section) = lock_time_section(rows, cutoff, created) else {
            return Vec::new();
        };
        let listed: Vec<u32> = match &section {
            Section::LockTime { rows, .. } => rows.iter().map(|r| r.trace_serial).collect(),
            _ => Vec::new(),
        };
        let mut out = self.unprinted_traces_of(model, &listed);
        writer::write_section(&section, &mut out);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn contention(trace_serial: u32, lock: &str, time_ms: u64, count: u64) -> LockContention {
        LockContention {
            trace_serial,
            lock: lock.into(),
            time_ns: time_ms * 1_000_000,
            count,
        }
    }

    fn text(section: &Section) -> String {
        let mut out = Vec::new();
        writer::write_section(section, &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn rows_rank_by_time_then_count_and_stop_at_the_cutoff() {
        let rows = vec![
            contention(300_003, "Small", 1, 9),
            contention(300_001, "java.util.concurrent.locks.ReentrantLock", 95, 150),
            contention(300_002, "java.util.concurrent.Semaphore", 4, 7),
        ];
        let section = lock_time_section(rows, 0.02, "Mon Jun  9 20:33:05 2014".into()).unwrap();
        assert_eq!(
            text(&section),
            "LOCK TIME BEGIN (total = 100 ms) Mon Jun  9 20:33:05 2014\n\
             rank   self  accum   count trace lock\n\
             \x20  1 95.00% 95.00%     150 300001 java.util.concurrent.locks.ReentrantLock (Java)\n\
             \x20  2  4.00% 99.00%       7 300002 java.util.concurrent.Semaphore (Java)\n\
             LOCK TIME END\n"
        );
    }

    #[test]
    fn equal_times_rank_by_count_and_no_time_means_no_section() {
        let rows = vec![contention(7, "A", 5, 1), contention(8, "B", 5, 2)];
        let Some(Section::LockTime { rows, total_ms, .. }) =
            lock_time_section(rows, 0.0, String::new())
        else {
            panic!("no section");
        };
        assert_eq!(total_ms, 10);
        let order: Vec<_> = rows.iter().map(|r| r.trace_serial).collect();
        assert_eq!(order, [8, 7]);
        // Counts are kept across dumps, times are not: counts alone print nothing.
        assert_eq!(
            lock_time_section(vec![contention(7, "A", 0, 3)], 0.0, String::new()),
            None
        );
    }

    #[test]
    fn the_section_reads_back() {
        let rows = vec![contention(300_001, "p.MyLock", 3, 2)];
        let section = lock_time_section(rows, 0.0, "Tue Nov 24 08:00:00 2026".into()).unwrap();
        let parsed = crate::format::ascii::reader::parse(text(&section).as_bytes()).unwrap();
        assert_eq!(parsed, [section]);
    }
}
