//! The allocation counts of heap=sites (heap=dump tracks no allocations:
//! its dump comes from the JVM's own dumper): every Java object the
//! program allocates is reported by JVMTI's SampledObjectAlloc event (with a
//! sampling interval of 0 for exact counts, or `alloc_interval` bytes), counted
//! at its site, and tagged so that ObjectFree can move it from live to freed.
//!
//! Object tags: an allocation tag carries the site and the size, so a free
//! needs no lookup, and the count's generation: a `net=` front end's
//! "clear sites" starts a new one, and the free of an object counted before
//! it is not taken off the new counts. Class objects and threads carry small
//! identifiers instead (see `run/classes.rs`), so the top bit tells the two
//! apart.

use crate::agent::jvm::object_tags::{ALLOCATION_TAG, is_allocation_tag};
use crate::model::SiteCounters;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

/// Set in the tag of a sampled object that counts once (it was reported
/// while every allocation was), see [`sample_tag`].
const EXACT_WEIGHT: u64 = 1 << 62;
/// Bits of the site index in an allocation tag (above the 32 size bits):
/// one more than the site table's 2^26 (`MAX_SITES`), so that a measuring
/// aid can tag with a site no table holds.
const SITE_BITS: u32 = 27;
/// Where the generation of the counts sits in an allocation tag (three
/// bits, between the site and [`EXACT_WEIGHT`]).
const GENERATION_SHIFT: u32 = 32 + SITE_BITS;
/// Generations a tag tells apart: an object that outlives 8 clears of the
/// counts is taken for one of the current generation when it is freed.
const GENERATIONS: u64 = 8;

/// The tag of an object of `size` bytes allocated at `site`: the size is
/// kept in 8-byte units (every Java object size is a multiple of 8), up to
/// 32 GiB, which is larger than any array.
pub fn allocation_tag(site: u32, size: u64) -> u64 {
    let units = (size / 8).min(u32::MAX as u64);
    ALLOCATION_TAG | (u64::from(site & ((1 << SITE_BITS) - 1)) << 32) | units
}

/// `tag` marked as counted in `generation` (modulo [`GENERATIONS`]).
fn with_generation(tag: u64, generation: u64) -> u64 {
    tag | (generation % GENERATIONS) << GENERATION_SHIFT
}

/// The generation (modulo [`GENERATIONS`]) an allocation tag was counted in.
fn generation_of(tag: u64) -> u64 {
    (tag >> GENERATION_SHIFT) % GENERATIONS
}

/// The site and size in bytes carried by an allocation tag.
pub fn decode_allocation_tag(tag: u64) -> (u32, u64) {
    (
        ((tag >> 32) as u32) & ((1 << SITE_BITS) - 1),
        (tag & 0xFFFF_FFFF) * 8,
    )
}

/// The tag of a sampled object of `size` bytes at `site`, which counts
/// once (`exact`) or as the objects a sample of its size stands for.
pub fn sample_tag(site: u32, size: u64, exact: bool) -> u64 {
    allocation_tag(site, size) | if exact { EXACT_WEIGHT } else { 0 }
}

/// The site of a sampled object's tag and the (bytes, objects) it stands
/// for with sampling interval `interval`; None for other tags.
pub fn sample_weight(tag: u64, interval: u64) -> Option<(u32, u64, u64)> {
    if !is_allocation_tag(tag) {
        return None;
    }
    let (site, size) = decode_allocation_tag(tag);
    let interval = if tag & EXACT_WEIGHT != 0 { 0 } else { interval };
    let (bytes, objects) = weight(size, interval);
    Some((site, bytes, objects))
}

/// How one sampled object is counted. With exact tracking every object
/// counts once; with a sampling interval of `interval` bytes an object of
/// `size` bytes is sampled with probability `1 - exp(-size/interval)`, so it
/// stands for `1/p` objects and `size/p` bytes (an unbiased estimate).
pub fn weight(size: u64, interval: u64) -> (u64, u64) {
    if interval == 0 || size == 0 {
        return (size, 1);
    }
    let p = -(-(size as f64) / interval as f64).exp_m1();
    let objects = 1.0 / p;
    (
        (size as f64 * objects).round() as u64,
        objects.round().max(1.0) as u64,
    )
}

/// Counts and frees; shared by all threads.
#[derive(Default)]
pub struct AllocationCounts {
    pub sites: SiteCounters,
    /// Sampling interval in bytes; 0 = exact.
    pub interval: u64,
    /// Objects that got an identifier tag instead of an allocation tag
    /// (class objects), with where they were counted: id -> (site, size).
    identified: Mutex<HashMap<u64, (u32, u64)>>,
    /// Large arrays counted without a tag (sampled mode): identity hash ->
    /// (site, size) of each, until a census finds it gone.
    untagged: Mutex<Untagged>,
    /// The array classes (`[B`, `[I`, ...) of those objects: a census
    /// walks only these classes' instances.
    untagged_classes: Mutex<std::collections::BTreeSet<String>>,
    /// How many times the counts were cleared: tags carry it, so that the
    /// frees of objects counted before a clear are left out.
    generation: AtomicU64,
}

/// At most this many objects are counted without a tag between two
/// censuses (about 10 MB of bookkeeping); beyond it large arrays are tagged
/// like any object, so memory stays bounded in a long run without dumps.
const UNTAGGED_LIMIT: usize = 250_000;

/// The objects counted without a tag.
#[derive(Default)]
struct Untagged {
    /// identity hash -> (site, size) of each object with that hash.
    by_hash: HashMap<i32, Vec<(u32, u64)>>,
    /// How many objects `by_hash` holds.
    len: usize,
}

impl AllocationCounts {
    /// Counting with sampling interval `interval` (0 = every allocation).
    pub fn new(interval: u64) -> Self {
        Self {
            interval,
            ..Self::default()
        }
    }

    /// Counts an object of `size` bytes at `site`; returns its tag.
    pub fn allocated(&self, site: u32, size: u64) -> u64 {
        // (Read before counting: an object counted across a clear is then
        // at worst counted live for good, never taken off twice.)
        let generation = self.generation.load(Ordering::Acquire);
        let (bytes, objects) = weight(size, self.interval);
        self.sites.allocated(site, bytes, objects);
        with_generation(allocation_tag(site, size), generation)
    }

    /// Every count starts over: the objects counted so far are forgotten,
    /// so that their frees no longer change the counts.
    pub fn clear(&self) {
        self.generation.fetch_add(1, Ordering::AcqRel);
        self.sites.clear();
        self.identified.lock().clear();
        *self.untagged.lock() = Untagged::default();
        self.untagged_classes.lock().clear();
    }

    /// Counts an object that carries identifier `object_id` instead of an
    /// allocation tag (so that its free can still be counted).
    pub fn allocated_with_id(&self, site: u32, size: u64, object_id: u64) {
        let (bytes, objects) = weight(size, self.interval);
        self.sites.allocated(site, bytes, objects);
        self.identified.lock().insert(object_id, (site, size));
    }

    /// Counts an object that carries no tag, known by its identity hash
    /// until a [`census`](Self::census) finds it gone. Returns false, and
    /// counts nothing, when too many are waiting for a census already (the
    /// object is then to be tagged and counted with [`allocated`](Self::allocated)).
    pub fn allocated_untagged(
        &self,
        site: u32,
        size: u64,
        hash: i32,
        class_signature: &str,
    ) -> bool {
        let mut untagged = self.untagged.lock();
        if untagged.len >= UNTAGGED_LIMIT {
            return false;
        }
        untagged.by_hash.entry(hash).or_default().push((site, size));
        untagged.len += 1;
        drop(untagged);
        let mut classes = self.untagged_classes.lock();
        if !classes.contains(class_signature) {
            classes.insert(class_signature.to_owned());
        }
        drop(classes);
        let (bytes, objects) = weight(size, self.interval);
        self.sites.allocated(site, bytes, objects);
        true
    }

    /// The classes of the objects counted without a tag that no census
    /// has yet found gone (none when there are no such objects).
    pub fn untagged_classes(&self) -> Vec<String> {
        if self.untagged.lock().len == 0 {
            return Vec::new();
        }
        self.untagged_classes.lock().iter().cloned().collect()
    }

    /// The untagged objects alive now, as (identity hash, size): every
    /// other one counted without a tag is moved from live to freed. (Two
    /// objects with the same hash and size are told apart by count only.)
    pub fn census(&self, alive: &[(i32, u64)]) {
        let mut wanted: HashMap<(i32, u64), usize> = HashMap::new();
        for &key in alive {
            *wanted.entry(key).or_default() += 1;
        }
        let mut untagged = self.untagged.lock();
        let mut freed = 0;
        untagged.by_hash.retain(|&hash, objects| {
            objects.retain(|&(site, size)| {
                let still = wanted.get_mut(&(hash, size)).filter(|n| **n > 0);
                match still {
                    Some(n) => {
                        *n -= 1;
                        true
                    }
                    None => {
                        let (bytes, count) = weight(size, self.interval);
                        self.sites.freed(site, bytes, count);
                        freed += 1;
                        false
                    }
                }
            });
            !objects.is_empty()
        });
        untagged.len -= freed;
    }

    /// ObjectFree: moves the object from live to freed at its site.
    pub fn freed(&self, tag: u64) {
        let (site, size) = if is_allocation_tag(tag) {
            let current = self.generation.load(Ordering::Acquire) % GENERATIONS;
            if generation_of(tag) != current {
                return;
            }
            decode_allocation_tag(tag)
        } else {
            match self.identified.lock().remove(&tag) {
                Some(found) => found,
                None => return,
            }
        };
        let (bytes, objects) = weight(size, self.interval);
        self.sites.freed(site, bytes, objects);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_carry_site_and_size() {
        let tag = allocation_tag(12345, 40);
        assert!(is_allocation_tag(tag));
        assert_eq!(decode_allocation_tag(tag), (12345, 40));
        assert!(!is_allocation_tag(0x5000_0001));
        let big = allocation_tag((1 << 26) - 1, 16 * 1024 * 1024 * 1024);
        assert_eq!(
            decode_allocation_tag(big),
            ((1 << 26) - 1, 16 * 1024 * 1024 * 1024)
        );
    }

    #[test]
    fn sample_tags_carry_their_weight() {
        let exact = sample_tag(5, 32, true);
        assert_eq!(decode_allocation_tag(exact), (5, 32));
        assert_eq!(sample_weight(exact, 512 * 1024), Some((5, 32, 1)));
        let sampled = sample_tag((1 << 26) - 1, 32, false);
        let (bytes, objects) = weight(32, 512 * 1024);
        assert_eq!(
            sample_weight(sampled, 512 * 1024),
            Some(((1 << 26) - 1, bytes, objects))
        );
        assert_eq!(sample_weight(0x5000_0001, 512 * 1024), None);
    }

    #[test]
    fn exact_weights_count_once_and_sampled_weights_scale_up() {
        assert_eq!(weight(24, 0), (24, 1));
        // A small object sampled at 512 KiB stands for many like it.
        let (bytes, objects) = weight(16, 512 * 1024);
        // 1/p for p = 1 - e^(-16/524288) is 32768.5.
        assert_eq!(objects, 32769);
        assert!((bytes as f64 - 16.0 * 32768.0).abs() < 16.0 * 2.0);
        // An object much larger than the interval is always sampled: weight 1.
        assert_eq!(weight(64 * 1024 * 1024, 512 * 1024), (64 * 1024 * 1024, 1));
    }

    #[test]
    fn a_census_frees_the_untagged_objects_it_does_not_find() {
        let counts = AllocationCounts::new(512 * 1024);
        let mb = 1 << 20;
        counts.allocated_untagged(1, 8 * mb, 11, "[B");
        counts.allocated_untagged(1, 8 * mb, 12, "[B");
        counts.allocated_untagged(2, 8 * mb, 11, "[B"); // same hash, other site
        counts.allocated_untagged(2, 4 * mb, 13, "[B");
        // Alive: hash 11 once with 8 MiB, and 13; an unknown object too.
        counts.census(&[(11, 8 * mb), (13, 4 * mb), (99, mb)]);
        let live = |site| counts.sites.stats(site).live_objects;
        // Hash 11 at 8 MiB matches once: the first counted (site 1) stays.
        assert_eq!((live(1), live(2)), (1, 1));
        assert_eq!(
            counts.sites.stats(2).live_bytes,
            weight(4 * mb, 512 * 1024).0
        );
        // A second census with nothing alive frees the rest, once.
        counts.census(&[]);
        assert_eq!((live(1), live(2)), (0, 0));
        assert!(counts.untagged_classes().is_empty());
        counts.census(&[]);
        assert_eq!(counts.sites.stats(1).allocated_objects, 2);
    }

    #[test]
    fn untagged_bookkeeping_is_bounded_and_a_census_makes_room() {
        let counts = AllocationCounts::new(512 * 1024);
        for i in 0..UNTAGGED_LIMIT {
            assert!(counts.allocated_untagged(1, 1 << 20, i as i32, "[I"));
        }
        assert!(!counts.allocated_untagged(1, 1 << 20, -1, "[I"), "full");
        assert_eq!(
            counts.sites.stats(1).allocated_objects,
            UNTAGGED_LIMIT as u64,
            "a refused object is not counted here"
        );
        counts.census(&[(7, 1 << 20)]);
        assert_eq!(counts.sites.stats(1).live_objects, 1);
        assert!(
            counts.allocated_untagged(1, 1 << 20, -1, "[I"),
            "room again"
        );
    }

    #[test]
    fn frees_undo_allocations_by_tag_or_identifier() {
        let counts = AllocationCounts::new(0);
        let tag = counts.allocated(3, 48);
        counts.allocated_with_id(3, 16, 0x5000_0009);
        counts.freed(tag);
        counts.freed(0x5000_0009);
        counts.freed(0x5000_0009); // a second free of the same id is ignored
        let stats = counts.sites.stats(3);
        assert_eq!((stats.live_bytes, stats.live_objects), (0, 0));
        assert_eq!((stats.allocated_bytes, stats.allocated_objects), (64, 2));
    }

    #[test]
    fn frees_of_objects_counted_before_a_clear_leave_the_new_counts_alone() {
        let counts = AllocationCounts::new(0);
        let before = counts.allocated(3, 48);
        counts.allocated_with_id(3, 16, 0x5000_0009);
        counts.clear();
        let after = counts.allocated(3, 48);
        let kept = counts.allocated(3, 48);
        counts.freed(before);
        counts.freed(0x5000_0009);
        counts.freed(after);
        let stats = counts.sites.stats(3);
        assert_eq!((stats.live_bytes, stats.live_objects), (48, 1));
        assert_eq!((stats.allocated_bytes, stats.allocated_objects), (96, 2));
        assert_eq!(decode_allocation_tag(kept), (3, 48));
        for _ in 0..GENERATIONS {
            counts.clear();
        }
        counts.allocated(3, 48);
        counts.freed(kept); // 8 clears later: taken for the current generation
        assert_eq!(counts.sites.stats(3).live_objects, 0);
    }
}
