//! Which counts of the bytecode counters a `net=` front end still wants:
//! those made while allocation tracking was on and since its last "clear
//! sites". The counters in Java cannot be switched or reset cheaply (they
//! are fields of the rewritten classes' tracker, bumped by every thread),
//! so they run on, and the window is kept here as snapshots of them taken
//! at each command and taken off at each dump.

use super::counting::{CountedRow, SiteIdentity};
use crate::agent::jvm::alloc_tracker::SiteCount;
use parking_lot::Mutex;
use std::collections::HashMap;

type Counts = HashMap<SiteIdentity, SiteCount>;

/// The counts a front end switched off or cleared away.
#[derive(Default)]
pub(super) struct CountedWindow {
    state: Mutex<Window>,
}

#[derive(Default)]
struct Window {
    /// Per site identity, the counts not to report: all those before the
    /// last clear, and those made while tracking was off.
    excluded: Counts,
    /// The counts when tracking was last switched off; None while it is on.
    off_at: Option<Counts>,
}

impl CountedWindow {
    /// Whether every count is reported (no command narrowed the window).
    pub fn is_whole(&self) -> bool {
        let state = self.state.lock();
        state.excluded.is_empty() && state.off_at.is_none()
    }

    /// "Clear sites": the counts so far, `now`, are no longer reported.
    pub fn clear(&self, now: &[CountedRow]) {
        let now = totals(now);
        let mut state = self.state.lock();
        if state.off_at.is_some() {
            state.off_at = Some(now.clone());
        }
        state.excluded = now;
    }

    /// Tracking switched on or off, the counts standing at `now`. What is
    /// made between an off and the next on is added to the excluded counts
    /// at the on.
    pub fn switch(&self, on: bool, now: &[CountedRow]) {
        let mut state = self.state.lock();
        match (on, state.off_at.take()) {
            (false, None) => state.off_at = Some(totals(now)),
            (false, Some(at)) => state.off_at = Some(at), // already off
            (true, None) => {}                            // already on
            (true, Some(at)) => {
                for (identity, count) in totals(now) {
                    let before = at.get(&identity).copied().unwrap_or_default();
                    let excluded = state.excluded.entry(identity).or_default();
                    excluded.objects += count.objects.saturating_sub(before.objects);
                    excluded.bytes += count.bytes.saturating_sub(before.bytes);
                }
            }
        }
    }

    /// `rows` (the counters as they stand) narrowed to the window: one row
    /// per identity, with what was counted while on and since the last
    /// clear; rows left with nothing are dropped.
    pub fn narrow(&self, rows: Vec<CountedRow>) -> Vec<CountedRow> {
        let state = self.state.lock();
        let mut merged: HashMap<SiteIdentity, CountedRow> = HashMap::with_capacity(rows.len());
        for row in rows {
            match merged.get_mut(&row.identity) {
                Some(first) => {
                    first.count.objects += row.count.objects;
                    first.count.bytes += row.count.bytes;
                }
                None => {
                    merged.insert(row.identity.clone(), row);
                }
            }
        }
        merged
            .into_values()
            .filter_map(|mut row| {
                let standing = match &state.off_at {
                    Some(at) => at.get(&row.identity).copied().unwrap_or_default(),
                    None => row.count,
                };
                let excluded = state
                    .excluded
                    .get(&row.identity)
                    .copied()
                    .unwrap_or_default();
                row.count = SiteCount {
                    objects: standing.objects.saturating_sub(excluded.objects),
                    bytes: standing.bytes.saturating_sub(excluded.bytes),
                };
                (row.count.objects > 0).then_some(row)
            })
            .collect()
    }
}

/// The counts of `rows` summed per identity.
fn totals(rows: &[CountedRow]) -> Counts {
    let mut counts = Counts::with_capacity(rows.len());
    for row in rows {
        let count = counts.entry(row.identity.clone()).or_default();
        count.objects += row.count.objects;
        count.bytes += row.count.bytes;
    }
    counts
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(name: &str, objects: u64) -> CountedRow {
        CountedRow::for_test(
            name,
            SiteCount {
                objects,
                bytes: objects * 16,
            },
        )
    }

    fn objects(window: &CountedWindow, rows: Vec<CountedRow>) -> Vec<(String, u64)> {
        let mut out: Vec<(String, u64)> = window
            .narrow(rows)
            .into_iter()
            .map(|r| (r.identity.class_name.clone(), r.count.objects))
            .collect();
        out.sort();
        out
    }

    #[test]
    fn a_whole_window_reports_every_count_merged_by_identity() {
        let window = CountedWindow::default();
        assert!(window.is_whole());
        let rows = vec![row("A", 3), row("A", 2), row("B", 1)];
        assert_eq!(
            objects(&window, rows),
            vec![("A".into(), 5), ("B".into(), 1)]
        );
    }

    #[test]
    fn a_clear_leaves_only_what_came_after_it() {
        let window = CountedWindow::default();
        window.clear(&[row("A", 10), row("B", 4)]);
        assert!(!window.is_whole());
        // B made nothing since: its row goes.
        let rows = vec![row("A", 13), row("B", 4), row("C", 2)];
        assert_eq!(
            objects(&window, rows),
            vec![("A".into(), 3), ("C".into(), 2)]
        );
    }

    #[test]
    fn what_is_made_while_off_is_never_reported() {
        let window = CountedWindow::default();
        window.switch(false, &[row("A", 10)]);
        // Off: the counts stand where they were switched off.
        assert_eq!(objects(&window, vec![row("A", 50)]), vec![("A".into(), 10)]);
        window.switch(false, &[row("A", 60)]); // a second off changes nothing
        window.switch(true, &[row("A", 70), row("B", 5)]);
        // On again: 60 made while off (and B's 5) are left out.
        assert_eq!(
            objects(&window, vec![row("A", 72), row("B", 6)]),
            vec![("A".into(), 12), ("B".into(), 1)]
        );
    }

    #[test]
    fn a_clear_while_off_reports_nothing_until_on() {
        let window = CountedWindow::default();
        window.switch(false, &[row("A", 10)]);
        window.clear(&[row("A", 20)]);
        assert_eq!(objects(&window, vec![row("A", 30)]), vec![]);
        window.switch(true, &[row("A", 40)]);
        assert_eq!(objects(&window, vec![row("A", 45)]), vec![("A".into(), 5)]);
    }
}
