//! The contention rows: one per (trace at contended enter, monitor class),
//! HPROF's key for MONITOR TIME. Finding a row takes a lock, which is fine
//! at contended *enter* (the thread is about to block anyway); the time and
//! count it adds at *entered* live in cells of their own (see `table.rs`),
//! reached by the row's number without a lock.
//!
//! Each row also keeps a tally of whose stack held the monitor when its
//! contention began (the owner's trace): only the first
//! [`HOLDER_SAMPLES`] contentions of a row are sampled, because looking at
//! another thread's stack pauses it (a handshake, or on JDK 11 a
//! safepoint), and a lock-heavy program contends thousands of times a
//! second.

use std::collections::HashMap;
use std::sync::atomic::AtomicU64;

/// Contentions of each row whose owner is looked at.
pub const HOLDER_SAMPLES: u32 = 16;

/// What the entered callback adds to, per row.
#[derive(Default)]
pub struct RowCell {
    /// Nanoseconds waited to enter since the last dump.
    pub time_ns: AtomicU64,
    /// Contended entries since the run began.
    pub count: AtomicU64,
}

/// What a row is, and whose stacks held its monitor.
pub struct RowFacts {
    pub trace_serial: u32,
    pub class_serial: u32,
    /// Owner traces, with how many sampled contentions found each, in the
    /// order first seen.
    holders: Vec<(u32, u32)>,
    /// Contentions sampled so far.
    sampled: u32,
}

impl RowFacts {
    /// The owner trace seen most often (the first seen of equals), how
    /// often, and of how many samples.
    pub fn holder(&self) -> Option<(u32, u32, u32)> {
        let mut best: Option<(u32, u32)> = None;
        for &(trace, seen) in &self.holders {
            if best.is_none_or(|(_, most)| seen > most) {
                best = Some((trace, seen));
            }
        }
        best.map(|(trace, seen)| (trace, seen, self.sampled))
    }
}

/// Every row of the run, by key and by number.
#[derive(Default)]
pub struct Rows {
    by_key: HashMap<(u32, u32), u32>,
    facts: Vec<RowFacts>,
}

impl Rows {
    /// The number of the row of (`trace_serial`, `class_serial`), made if
    /// new, and whether this contention's owner is to be sampled (which
    /// counts it as sampled).
    pub fn enter(&mut self, trace_serial: u32, class_serial: u32) -> (u32, bool) {
        let next = self.facts.len() as u32;
        let row = *self
            .by_key
            .entry((trace_serial, class_serial))
            .or_insert(next);
        if row == next {
            self.facts.push(RowFacts {
                trace_serial,
                class_serial,
                holders: Vec::new(),
                sampled: 0,
            });
        }
        let facts = &mut self.facts[row as usize];
        let sample = facts.sampled < HOLDER_SAMPLES;
        if sample {
            facts.sampled += 1;
        }
        (row, sample)
    }

    /// A sampled contention of `row` found the owner at `holder_trace`.
    pub fn holder_seen(&mut self, row: u32, holder_trace: u32) {
        let Some(facts) = self.facts.get_mut(row as usize) else {
            return;
        };
        match facts.holders.iter_mut().find(|(t, _)| *t == holder_trace) {
            Some((_, seen)) => *seen += 1,
            None => facts.holders.push((holder_trace, 1)),
        }
    }

    /// Every row, by number.
    pub fn iter(&self) -> impl Iterator<Item = (u32, &RowFacts)> {
        self.facts.iter().enumerate().map(|(i, f)| (i as u32, f))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_by_key_and_the_most_frequent_holder() {
        let mut rows = Rows::default();
        assert_eq!(rows.enter(300001, 7), (0, true));
        assert_eq!(rows.enter(300002, 7), (1, true));
        assert_eq!(rows.enter(300001, 8), (2, true));
        assert_eq!(rows.enter(300001, 7).0, 0);
        rows.holder_seen(0, 300010);
        rows.holder_seen(0, 300011);
        rows.holder_seen(0, 300011);
        let facts: Vec<_> = rows.iter().map(|(_, f)| f.holder()).collect();
        assert_eq!(facts, [Some((300011, 2, 2)), None, None]);
        // A tie goes to the trace seen first.
        rows.holder_seen(1, 300021);
        rows.holder_seen(1, 300020);
        assert_eq!(rows.iter().nth(1).unwrap().1.holder(), Some((300021, 1, 1)));
        // Only the first HOLDER_SAMPLES contentions of a row are sampled.
        for _ in 2..HOLDER_SAMPLES {
            assert!(rows.enter(300001, 7).1);
        }
        assert_eq!(rows.enter(300001, 7), (0, false));
    }
}
