//! A per-OS-thread cache from what an allocation looks like to the JVM
//! (class tag, thread, raw frames) to its site index, so that the common case
//! of an allocation at a known site takes no lock.

use rustc_hash::FxHashMap;
use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};

/// Entries per thread before the cache starts over (bounds its memory).
const MAX_ENTRIES: usize = 1 << 16;

/// Full keys that share a hash, each with its site.
type Bucket = Vec<(Box<[u64]>, u32)>;

#[derive(Default)]
struct SiteCache {
    /// Key words (class tag, thread serial, then method and location of each
    /// frame) hashed; a bucket holds the full keys that share a hash. (The
    /// key is a hash already: Fx, not the standard SipHash, which cost H2
    /// about a fifth of each VM-made object's lookup.)
    buckets: FxHashMap<u64, Bucket>,
    entries: usize,
    /// The profile its entries belong to ([`new_session`]).
    session: u64,
}

/// Numbers the profiles of this process: a profile attached to a running
/// JVM after another one stopped has sites of its own, so each thread's
/// cache starts over when it sees a new number.
static SESSION: AtomicU64 = AtomicU64::new(0);

/// A profile ended: every thread's cache is stale.
pub fn new_session() {
    SESSION.fetch_add(1, Ordering::AcqRel);
}

thread_local! {
    static CACHE: RefCell<SiteCache> = RefCell::new(SiteCache::default());
}

/// A cheap mixing hash over the key words (the keys are pointers and small
/// numbers, so a multiply-rotate is enough).
fn hash(words: &[u64]) -> u64 {
    words.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &w| {
        (h.rotate_left(5) ^ w).wrapping_mul(0x517c_c1b7_2722_0a95)
    })
}

/// The cached site of `key`, if this thread has seen it.
pub fn lookup(key: &[u64]) -> Option<u32> {
    let h = hash(key);
    CACHE
        .try_with(|cache| {
            let cache = cache.try_borrow().ok()?;
            if cache.session != SESSION.load(Ordering::Acquire) {
                return None;
            }
            let bucket = cache.buckets.get(&h)?;
            bucket
                .iter()
                .find(|(k, _)| &k[..] == key)
                .map(|(_, site)| *site)
        })
        .ok()
        .flatten()
}

/// Remembers that `key` is site `site` on this thread.
pub fn remember(key: &[u64], site: u32) {
    let h = hash(key);
    let _ = CACHE.try_with(|cache| {
        if let Ok(mut cache) = cache.try_borrow_mut() {
            let session = SESSION.load(Ordering::Acquire);
            if cache.entries >= MAX_ENTRIES || cache.session != session {
                *cache = SiteCache {
                    session,
                    ..SiteCache::default()
                };
            }
            cache.entries += 1;
            cache.buckets.entry(h).or_default().push((key.into(), site));
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembers_sites_by_full_key() {
        assert_eq!(lookup(&[1, 2, 3]), None);
        remember(&[1, 2, 3], 7);
        remember(&[1, 2, 4], 8);
        assert_eq!(lookup(&[1, 2, 3]), Some(7));
        assert_eq!(lookup(&[1, 2, 4]), Some(8));
        assert_eq!(lookup(&[1, 2]), None);
    }
}
