//! How `alloc_count=bytecode` splits a class's live objects among its rows.
//!
//! The counters in the byte code count every allocation but see no object
//! die, and the walk of the heap at each dump counts each class's live
//! objects exactly but cannot tell which site made them. When a class is
//! allocated at several sites, its live objects are split among them in
//! proportion to a sample of tagged objects (SampledObjectAlloc; ObjectFree
//! takes a freed one back): every object while the program's first
//! [`EXACT_BYTES`] are allocated, so that a small program's split is
//! exact, then about one per [`SAMPLE_INTERVAL`] bytes, each weighted by the
//! objects it stands for (an estimate, within the class's exact total).

use super::alloc::AllocationCounts;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Bytes allocated while every object is tagged.
pub const EXACT_BYTES: u64 = 8 * 1024 * 1024;
/// The mean sampling interval after that, in bytes.
pub const SAMPLE_INTERVAL: u64 = 256 * 1024;

/// The tagged sample of live objects, counted by site.
pub struct LiveSamples {
    counts: AllocationCounts,
    exact_bytes: u64,
    /// Bytes of the objects tagged while every object is.
    tagged_bytes: AtomicU64,
    /// Set once the budget is spent (and the interval changed).
    sampling: AtomicBool,
}

impl LiveSamples {
    /// Every object tagged for the first `exact_bytes`, then one per
    /// `interval` bytes.
    pub fn new(exact_bytes: u64, interval: u64) -> Self {
        Self {
            counts: AllocationCounts::new(interval),
            exact_bytes,
            tagged_bytes: AtomicU64::new(0),
            sampling: AtomicBool::new(false),
        }
    }

    /// The sampling interval to set now that every object is no longer
    /// reported (`Some` once: the caller sets it in the JVM).
    pub fn counted(&self, site: u32, size: u64) -> (u64, Option<u64>) {
        if self.sampling.load(Ordering::Relaxed) {
            return (self.counts.allocated(site, size), None);
        }
        let tag = self.counts.allocated_exactly(site, size);
        let before = self.tagged_bytes.fetch_add(size, Ordering::Relaxed);
        let spent = before < self.exact_bytes && before + size >= self.exact_bytes;
        if spent && !self.sampling.swap(true, Ordering::Relaxed) {
            return (tag, Some(self.counts.interval));
        }
        (tag, None)
    }

    /// ObjectFree of a tagged object.
    pub fn freed(&self, tag: u64) {
        self.counts.freed(tag);
    }

    /// The live objects `site`'s sample stands for.
    pub fn live_objects(&self, site: u32) -> u64 {
        self.counts.sites.stats(site).live_objects
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_object_counts_once_until_the_budget_then_samples_weigh_more() {
        let samples = LiveSamples::new(100, 1024);
        assert_eq!(samples.counted(1, 60).1, None);
        let (tag, switch) = samples.counted(1, 60);
        assert_eq!(
            switch,
            Some(1024),
            "the budget is spent: sample from now on"
        );
        assert_eq!(samples.live_objects(1), 2);
        let (sampled, again) = samples.counted(2, 16);
        assert_eq!(again, None, "the interval is changed once");
        assert!(
            samples.live_objects(2) > 60,
            "a 16-byte sample at 1 KiB stands for many"
        );
        samples.freed(tag);
        samples.freed(sampled);
        assert_eq!((samples.live_objects(1), samples.live_objects(2)), (1, 0));
    }
}
