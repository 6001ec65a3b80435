//! How `alloc_count=bytecode` splits a class's live objects among its rows.
//!
//! The counters in the byte code count every allocation but see no object
//! die, and the walk of the heap at each dump counts each class's live
//! objects exactly but cannot tell which site made them. So objects are
//! tagged as SampledObjectAlloc reports them, with their site, size and
//! weight: every object while the program's first [`EXACT_BYTES`] are
//! allocated, so that a small program's split is exact, then about one
//! per [`SAMPLE_INTERVAL`] bytes, each standing for the objects its size
//! makes it likely to stand for. The same walk of the heap reads the tags
//! of the live ones (no ObjectFree event is needed, nor waited for).

use crate::agent::modes::heap_sites::alloc::{sample_tag, sample_weight};
use parking_lot::Mutex;
use rustc_hash::FxHashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Bytes allocated while every object is tagged.
pub const EXACT_BYTES: u64 = 8 * 1024 * 1024;
/// The mean sampling interval after that, in bytes.
pub const SAMPLE_INTERVAL: u64 = 256 * 1024;

/// What [`LiveSamples::tag`] asks of its caller.
#[derive(Debug, PartialEq)]
pub enum BudgetSpent {
    No,
    /// The budget is spent: the JVM's sampling interval is to be set to this.
    SetInterval(u64),
    /// The budget is spent while the sample is held exact: the hand-over is
    /// to begin, and [`LiveSamples::release`] to follow it.
    WhileHeld,
}

/// The tagging of the live sample.
pub struct LiveSamples {
    exact_bytes: u64,
    interval: u64,
    /// False only for a measuring aid: objects tagged without their site.
    pub finds_sites: bool,
    /// Frames of the traces the sample records when it splits each
    /// site's counts among them (see [`LiveSamples::splits_rows`]); 0: as
    /// many as the counted rows show.
    pub split_frames: usize,
    /// Bytes of the objects tagged while every object is.
    tagged_bytes: AtomicU64,
    /// Set once the budget is spent (and the interval changed).
    sampling: AtomicBool,
    /// While set, a spent budget leaves every object reported until
    /// [`release`](Self::release): what the classes loaded before VM init
    /// allocate is counted from events until their hand-over ends.
    held: AtomicBool,
    /// Per site, the (objects, bytes) its tagged objects stand for: what
    /// the sample saw allocated there. Beside the exact count in the byte
    /// code it tells how much of a site the sample missed (JDK 11 posts no
    /// SampledObjectAlloc for some allocations, even at interval 0). One
    /// entry per site that had a sample, so bounded by the sites.
    /// (Fx: noted for every object while every object is reported.)
    seen: Mutex<FxHashMap<u32, (u64, u64)>>,
    /// The part of `seen` from while every object was reported.
    seen_exact: Mutex<FxHashMap<u32, (u64, u64)>>,
}

impl LiveSamples {
    /// Every object tagged for the first `exact_bytes`, then one per
    /// `interval` bytes.
    pub fn new(exact_bytes: u64, interval: u64) -> Self {
        Self {
            exact_bytes,
            interval,
            finds_sites: true,
            split_frames: 0,
            tagged_bytes: AtomicU64::new(0),
            sampling: AtomicBool::new(false),
            held: AtomicBool::new(false),
            seen: Mutex::default(),
            seen_exact: Mutex::default(),
        }
    }

    /// The sampling interval to set at load time: 0 (every object) while
    /// the budget lasts.
    pub fn first_interval(&self) -> u64 {
        if self.exact_bytes > 0 {
            0
        } else {
            self.interval
        }
    }

    /// Whether the budget of the exact start is spent: one object per
    /// interval is tagged now.
    pub fn is_sampling(&self) -> bool {
        self.sampling.load(Ordering::Relaxed)
    }

    /// Whether each counted site's rows are the traces this sample saw
    /// there, the site's counts shared among them by what it saw.
    pub fn splits_rows(&self) -> bool {
        self.split_frames > 0
    }

    /// Whether every object is reported at first.
    pub fn starts_exact(&self) -> bool {
        self.exact_bytes > 0
    }

    /// The sample stays exact past its budget until [`release`](Self::release).
    pub fn holding_exact(self) -> Self {
        self.held.store(true, Ordering::Relaxed);
        self
    }

    /// The tag of a reported object of `size` bytes at `site`, and what the
    /// caller is to do now (once, when the budget is spent).
    pub fn tag(&self, site: u32, size: u64) -> (u64, BudgetSpent) {
        let exact = !self.sampling.load(Ordering::Relaxed);
        let tag = sample_tag(site, size, exact);
        if !exact {
            self.note_seen(tag, false);
            return (tag, BudgetSpent::No);
        }
        let before = self.tagged_bytes.fetch_add(size, Ordering::Relaxed);
        // What it saw exactly is what it saw within the budget: a hold
        // past it ends when a thread's work does, which varies between
        // runs, and the rows' split by it would vary too.
        self.note_seen(tag, before < self.exact_bytes);
        let spent = before < self.exact_bytes && before + size >= self.exact_bytes;
        if !spent {
            return (tag, BudgetSpent::No);
        }
        if self.held.load(Ordering::Acquire) {
            return (tag, BudgetSpent::WhileHeld);
        }
        match self.start_sampling() {
            Some(interval) => (tag, BudgetSpent::SetInterval(interval)),
            None => (tag, BudgetSpent::No),
        }
    }

    /// Ends the hold of [`holding_exact`](Self::holding_exact): the
    /// interval to set now when the budget is spent already.
    pub fn release(&self) -> Option<u64> {
        self.held.store(false, Ordering::Release);
        if self.tagged_bytes.load(Ordering::Relaxed) < self.exact_bytes {
            return None; // (the budget's end starts the sampling)
        }
        self.start_sampling()
    }

    fn start_sampling(&self) -> Option<u64> {
        (!self.sampling.swap(true, Ordering::Relaxed)).then_some(self.interval)
    }

    fn note_seen(&self, tag: u64, exact: bool) {
        if let Some((site, bytes, objects)) = self.weigh(tag) {
            for seen in [Some(&self.seen), exact.then_some(&self.seen_exact)]
                .into_iter()
                .flatten()
            {
                let mut seen = seen.lock();
                let entry = seen.entry(site).or_default();
                entry.0 += objects;
                entry.1 += bytes;
            }
        }
    }

    /// What the sample saw while it reported every object, per site.
    pub fn seen_exactly_by_site(&self) -> FxHashMap<u32, (u64, u64)> {
        self.seen_exact.lock().clone()
    }

    /// What the sample saw allocated, (objects, bytes) per site.
    pub fn seen_by_site(&self) -> FxHashMap<u32, (u64, u64)> {
        self.seen.lock().clone()
    }

    /// The site of a live object's tag and the (bytes, objects) it stands
    /// for; None for a tag that is not a sample's.
    pub fn weigh(&self, tag: u64) -> Option<(u32, u64, u64)> {
        sample_weight(tag, self.interval)
    }

    /// What `verbose=y` says of the sample at a dump.
    pub fn describe(&self) -> String {
        let mib = |bytes: u64| bytes as f64 / (1024.0 * 1024.0);
        let tagged = mib(self
            .tagged_bytes
            .load(Ordering::Relaxed)
            .min(self.exact_bytes));
        if self.estimated() {
            format!(
                "live sample: every object of the first {tagged:.1} MiB, then about one per {} KiB",
                self.interval / 1024
            )
        } else {
            format!("live sample: every object so far ({tagged:.1} MiB)")
        }
    }

    /// Whether the sample stopped holding every object (its counts are
    /// estimates from then on).
    pub fn estimated(&self) -> bool {
        self.sampling.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_object_counts_once_until_the_budget_then_samples_weigh_more() {
        let samples = LiveSamples::new(100, 1024); // sizes in 8-byte units
        let (first, none) = samples.tag(1, 64);
        assert_eq!(none, BudgetSpent::No);
        assert!(!samples.estimated());
        let (second, switch) = samples.tag(1, 64);
        assert_eq!(
            switch,
            BudgetSpent::SetInterval(1024),
            "the budget is spent: sample from now on"
        );
        assert!(samples.estimated());
        let (sampled, again) = samples.tag(2, 16);
        assert_eq!(again, BudgetSpent::No, "the interval is changed once");
        assert_eq!(samples.weigh(first), Some((1, 64, 1)));
        assert_eq!(samples.weigh(second), Some((1, 64, 1)));
        let (site, _, objects) = samples.weigh(sampled).unwrap();
        assert!(
            site == 2 && objects > 60,
            "a 16-byte sample at 1 KiB stands for many"
        );
    }

    #[test]
    fn a_held_sample_stays_exact_past_its_budget_until_released() {
        let samples = LiveSamples::new(100, 1024).holding_exact();
        assert_eq!(samples.tag(1, 64).1, BudgetSpent::No);
        assert_eq!(samples.tag(1, 64).1, BudgetSpent::WhileHeld);
        let (still_exact, _) = samples.tag(1, 64);
        assert!(!samples.estimated());
        assert_eq!(samples.weigh(still_exact), Some((1, 64, 1)));
        assert_eq!(
            samples.seen_exactly_by_site()[&1],
            (2, 128),
            "seen exactly: within the budget only"
        );
        assert_eq!(samples.seen_by_site()[&1], (3, 192));
        assert_eq!(samples.release(), Some(1024));
        assert!(samples.estimated());
        assert_eq!(samples.release(), None, "once");
    }
}
