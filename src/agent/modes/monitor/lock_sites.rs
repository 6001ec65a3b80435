//! The sites of monitor=y's java.util.concurrent part: one per (lock
//! class, thread serial, stack) that a thread blocked at, each with its
//! count of blocks and its blocked time. A site is found (or made) before
//! the thread blocks, under one of several striped locks; the time is added
//! after it wakes, by number, with atomic additions and no lock, so that the
//! thread that is to take the lock next is not held up.

use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// Stripes of the table of sites: threads spread over them, so that two
/// threads about to block seldom take the same stripe's lock at once.
const STRIPES: usize = 16;

/// Sites in the first segment; segment `k` holds `FIRST << k`.
const FIRST: usize = 64;

/// Segments: room for `FIRST * (2^SEGMENTS - 1)` sites, about 270 million.
const SEGMENTS: usize = 22;

/// What a site counted.
#[derive(Default)]
struct Site {
    count: AtomicU64,
    nanos: AtomicU64,
}

/// Blocks and blocked time of one site as a dump takes them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    pub count: u64,
    pub nanos: u64,
}

/// A site's key: lock class number, thread serial (0 without thread=y),
/// then (method, location) per frame, innermost first.
pub type SiteKey = Box<[u64]>;

/// Every site: keys by stripe, counters by number in segments that are
/// never moved or freed, so a number handed out stays valid.
pub struct Sites {
    stripes: [Mutex<HashMap<SiteKey, usize>>; STRIPES],
    next: AtomicUsize,
    segments: [OnceLock<Box<[Site]>>; SEGMENTS],
}

thread_local! {
    /// The stripe of this OS thread.
    static STRIPE: usize = {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        NEXT.fetch_add(1, Ordering::Relaxed) % STRIPES
    };
}

/// The segment of site `number`, and its place in it.
fn locate(number: usize) -> (usize, usize) {
    let n = number / FIRST + 1;
    let segment = (usize::BITS - 1 - n.leading_zeros()) as usize;
    (segment, number - FIRST * ((1 << segment) - 1))
}

impl Default for Sites {
    fn default() -> Self {
        Self {
            stripes: std::array::from_fn(|_| Mutex::default()),
            next: AtomicUsize::new(0),
            segments: std::array::from_fn(|_| OnceLock::new()),
        }
    }
}

impl Sites {
    /// The number of the site of `key`, found or made; None once the table
    /// is full.
    pub fn site_of(&self, key: &[u64]) -> Option<usize> {
        let stripe = STRIPE.with(|s| *s);
        let mut keys = self.stripes[stripe].lock();
        if let Some(&known) = keys.get(key) {
            return Some(known);
        }
        let number = self.next.fetch_add(1, Ordering::Relaxed);
        let (segment, _) = locate(number);
        self.segments
            .get(segment)?
            .get_or_init(|| (0..FIRST << segment).map(|_| Site::default()).collect());
        keys.insert(key.into(), number);
        Some(number)
    }

    /// A block of `nanos` at site `number`.
    pub fn add(&self, number: usize, nanos: u64) {
        let (segment, at) = locate(number);
        if let Some(site) = self
            .segments
            .get(segment)
            .and_then(OnceLock::get)
            .and_then(|sites| sites.get(at))
        {
            site.count.fetch_add(1, Ordering::Relaxed);
            site.nanos.fetch_add(nanos, Ordering::Relaxed);
        }
    }

    /// Every site's key with its blocks, and its blocked time since the
    /// last call, which starts over (the counts do not, as MONITOR TIME's).
    pub fn take(&self) -> Vec<(SiteKey, Tally)> {
        let mut taken = Vec::new();
        for stripe in &self.stripes {
            for (key, &number) in stripe.lock().iter() {
                let (segment, at) = locate(number);
                let Some(site) = self.segments[segment].get().and_then(|s| s.get(at)) else {
                    continue;
                };
                let tally = Tally {
                    count: site.count.load(Ordering::Relaxed),
                    nanos: site.nanos.swap(0, Ordering::Relaxed),
                };
                if tally.count > 0 {
                    taken.push((key.clone(), tally));
                }
            }
        }
        taken
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_fill_the_segments_in_order() {
        assert_eq!(locate(0), (0, 0));
        assert_eq!(locate(63), (0, 63));
        assert_eq!(locate(64), (1, 0));
        assert_eq!(locate(191), (1, 127));
        assert_eq!(locate(192), (2, 0));
        let last = FIRST * ((1 << SEGMENTS) - 1) - 1;
        assert_eq!(locate(last), (SEGMENTS - 1, (FIRST << (SEGMENTS - 1)) - 1));
    }

    #[test]
    fn a_key_keeps_its_site_and_a_take_restarts_the_times_only() {
        let sites = Sites::default();
        let a = sites.site_of(&[0, 0, 7, 1]).unwrap();
        let b = sites.site_of(&[1, 0, 7, 1]).unwrap();
        assert_ne!(a, b);
        assert_eq!(sites.site_of(&[0, 0, 7, 1]), Some(a));
        sites.add(a, 300);
        sites.add(a, 200);
        let taken = sites.take();
        assert_eq!(
            taken,
            [(
                vec![0, 0, 7, 1].into_boxed_slice(),
                Tally {
                    count: 2,
                    nanos: 500
                }
            )],
            "a site that never blocked is left out"
        );
        assert_eq!(sites.take()[0].1, Tally { count: 2, nanos: 0 });
        // A number never handed out is ignored.
        sites.add(1 << 40, 5);
    }
}
