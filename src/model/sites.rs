//! Allocation sites: one per (class, allocation trace). The keys live in the
//! model (under its lock); the counters live in [`SiteCounters`], lock-free,
//! because every allocation and every freed object touches them.

use std::collections::HashMap;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// What a site is: the class allocated and the trace that allocated it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SiteKey {
    pub class_serial: u32,
    pub trace_serial: u32,
}

/// Site keys by index, in creation order (index 0 is never used, so that a
/// site index is never 0 inside an object tag).
#[derive(Debug)]
pub struct SiteTable {
    keys: Vec<SiteKey>,
    by_key: HashMap<SiteKey, u32>,
}

impl Default for SiteTable {
    fn default() -> Self {
        let unused = SiteKey {
            class_serial: 0,
            trace_serial: 0,
        };
        Self {
            keys: vec![unused],
            by_key: HashMap::new(),
        }
    }
}

impl SiteTable {
    /// The index of the site for `key`, creating it if new. None when the
    /// table is full ([`MAX_SITES`]).
    pub fn intern(&mut self, key: SiteKey) -> Option<u32> {
        if let Some(&index) = self.by_key.get(&key) {
            return Some(index);
        }
        let index = u32::try_from(self.keys.len())
            .ok()
            .filter(|&i| (i as usize) < MAX_SITES)?;
        self.keys.push(key);
        self.by_key.insert(key, index);
        Some(index)
    }

    /// The key of site `index`, if there is one.
    pub fn key(&self, index: u32) -> Option<SiteKey> {
        self.keys
            .get(index as usize)
            .filter(|_| index != 0)
            .copied()
    }

    /// All sites as (index, key), in creation order.
    pub fn iter(&self) -> impl Iterator<Item = (u32, SiteKey)> + '_ {
        self.keys
            .iter()
            .enumerate()
            .skip(1)
            .map(|(i, k)| (i as u32, *k))
    }
}

/// Live and allocated totals of one site.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SiteStats {
    pub live_bytes: u64,
    pub live_objects: u64,
    pub allocated_bytes: u64,
    pub allocated_objects: u64,
}

#[derive(Default)]
struct Counters {
    live_bytes: AtomicU64,
    live_objects: AtomicU64,
    allocated_bytes: AtomicU64,
    allocated_objects: AtomicU64,
}

/// Sites per chunk of counters; chunks are allocated on first use and never move.
const CHUNK: usize = 1 << 16;
/// Chunks at most.
const CHUNKS: usize = 1 << 10;
/// Largest number of sites (about 67 million).
pub const MAX_SITES: usize = CHUNK * CHUNKS;

/// Per-site counters, updated with atomics from any thread without a lock.
pub struct SiteCounters {
    chunks: Box<[OnceLock<Box<[Counters]>>]>,
}

impl Default for SiteCounters {
    fn default() -> Self {
        Self {
            chunks: (0..CHUNKS).map(|_| OnceLock::new()).collect(),
        }
    }
}

impl SiteCounters {
    fn counters(&self, site: u32) -> Option<&Counters> {
        let site = site as usize;
        let chunk = self.chunks.get(site / CHUNK)?;
        let chunk = chunk.get_or_init(|| (0..CHUNK).map(|_| Counters::default()).collect());
        Some(&chunk[site % CHUNK])
    }

    /// Counts `objects` objects of `bytes` in total allocated at `site`, and live.
    pub fn allocated(&self, site: u32, bytes: u64, objects: u64) {
        if let Some(c) = self.counters(site) {
            c.allocated_bytes.fetch_add(bytes, Ordering::Relaxed);
            c.allocated_objects.fetch_add(objects, Ordering::Relaxed);
            c.live_bytes.fetch_add(bytes, Ordering::Relaxed);
            c.live_objects.fetch_add(objects, Ordering::Relaxed);
        }
    }

    /// Moves `objects` objects of `bytes` from live to freed at `site`.
    pub fn freed(&self, site: u32, bytes: u64, objects: u64) {
        if let Some(c) = self.counters(site) {
            // Saturating: a free can never make a count negative, even if
            // an allocation was missed.
            let _ = c
                .live_bytes
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| {
                    Some(v.saturating_sub(bytes))
                });
            let _ = c
                .live_objects
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| {
                    Some(v.saturating_sub(objects))
                });
        }
    }

    /// Every count back to zero (a `net=` front end's "clear sites").
    pub fn clear(&self) {
        for chunk in self.chunks.iter().filter_map(OnceLock::get) {
            for c in chunk.iter() {
                for counter in [
                    &c.live_bytes,
                    &c.live_objects,
                    &c.allocated_bytes,
                    &c.allocated_objects,
                ] {
                    counter.store(0, Ordering::Relaxed);
                }
            }
        }
    }

    /// The current totals of `site`.
    pub fn stats(&self, site: u32) -> SiteStats {
        match self.counters(site) {
            Some(c) => SiteStats {
                live_bytes: c.live_bytes.load(Ordering::Relaxed),
                live_objects: c.live_objects.load(Ordering::Relaxed),
                allocated_bytes: c.allocated_bytes.load(Ordering::Relaxed),
                allocated_objects: c.allocated_objects.load(Ordering::Relaxed),
            },
            None => SiteStats::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sites_are_numbered_from_1_by_key() {
        let mut sites = SiteTable::default();
        let a = SiteKey {
            class_serial: 100_001,
            trace_serial: 300_002,
        };
        let b = SiteKey {
            class_serial: 100_001,
            trace_serial: 300_003,
        };
        assert_eq!(sites.intern(a), Some(1));
        assert_eq!(sites.intern(b), Some(2));
        assert_eq!(sites.intern(a), Some(1));
        assert_eq!(sites.iter().collect::<Vec<_>>(), vec![(1, a), (2, b)]);
    }

    #[test]
    fn counters_track_live_and_allocated() {
        let counters = SiteCounters::default();
        counters.allocated(7, 16, 1);
        counters.allocated(7, 16, 1);
        counters.freed(7, 16, 1);
        let far = (CHUNK * 3 + 5) as u32;
        counters.allocated(far, 24, 1);
        assert_eq!(
            counters.stats(7),
            SiteStats {
                live_bytes: 16,
                live_objects: 1,
                allocated_bytes: 32,
                allocated_objects: 2
            }
        );
        assert_eq!(counters.stats(far).allocated_bytes, 24);
        counters.freed(8, 100, 1);
        assert_eq!(
            counters.stats(8),
            SiteStats::default(),
            "frees never go below zero"
        );
    }
}
