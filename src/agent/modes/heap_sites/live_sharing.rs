//! How a class's live objects, counted exactly by a heap walk, are shared
//! among the rows (sites) that allocated that class: by what the live
//! sample holds of each row, scaled to what each allocated, never above
//! it, the rest by allocation. Pure arithmetic over numbers, tested here.

/// One row taking part in the sharing of a class's live objects: its
/// allocated objects and bytes, and where its shares go.
pub(super) struct Sharer {
    pub objects: u64,
    pub bytes: u64,
    /// (class serial, trace serial) of its row.
    pub key: (u32, u32),
}

/// A sampled row's live (objects, bytes) as the sample holds them
/// (`estimate`), scaled by what the row allocated (`allocated_bytes`, exact
/// from the counters) over what the sample saw allocated there (`seen`):
/// the share of the row's allocations still alive, applied to all of
/// them (the ratio estimate, steadier than the live count alone).
pub(super) fn scaled_to_what_was_allocated(
    estimate: (u64, u64),
    seen: (u64, u64),
    allocated_bytes: u64,
) -> (u64, u64) {
    if seen.1 == 0 || allocated_bytes == 0 {
        return estimate;
    }
    let ratio = allocated_bytes as f64 / seen.1 as f64;
    let scale = |n: u64| (n as f64 * ratio).round() as u64;
    (scale(estimate.0), scale(estimate.1))
}

/// Live objects of each of a class's rows, when the sample holds none of
/// them: the class's live objects shared by what each row allocated.
pub(super) fn shares_by_allocation(sharers: &[Sharer], class_objects: u64) -> Vec<u64> {
    let allocated: Vec<u64> = sharers.iter().map(|s| s.objects).collect();
    share_live_by(class_objects, &allocated, &allocated)
}

/// What the live sample says of a class's rows, row by row.
pub(super) struct Sample<'a> {
    /// Live (objects, bytes) the sample holds.
    pub estimates: &'a [(u64, u64)],
    /// (objects, bytes) the sample saw allocated.
    pub seen: &'a [(u64, u64)],
    /// Whether the sample stopped holding every object.
    pub estimated: bool,
}

/// Live objects of each of a class's rows as the sample says, never above
/// what a row allocated, within the class's live objects and bytes in the
/// heap (`class_live`, exact, less those the sample holds in no row).
/// Estimates are scaled by bytes (objects are sampled by size, so the byte
/// estimate is the steadier one, and a row of large objects, each sampled
/// for sure, keeps its exact count): down when they hold more than the
/// class's live bytes, and up to them when the sample is estimated and
/// every row has samples, so that the rows add up to what the heap holds.
/// The class's live objects the sample leaves unplaced go to the rows that
/// can hold them ([`takers_of_the_rest`]).
pub(super) fn shares_by_sample(
    sharers: &[Sharer],
    sample: &Sample<'_>,
    (class_objects, class_bytes): (u64, u64),
) -> Vec<u64> {
    let estimates = sample.estimates;
    let allocated: Vec<u64> = sharers.iter().map(|s| s.objects).collect();
    let placed_bytes: u64 = estimates
        .iter()
        .zip(sharers)
        .map(|(e, s)| e.1.min(s.bytes))
        .sum();
    let every_row_sampled = estimates.iter().all(|e| e.0 > 0);
    let factor = match placed_bytes {
        0 => 1.0,
        _ if placed_bytes > class_bytes => class_bytes as f64 / placed_bytes as f64,
        _ if sample.estimated && every_row_sampled => class_bytes as f64 / placed_bytes as f64,
        _ => 1.0,
    };
    let mut objects: Vec<u64> = estimates
        .iter()
        .zip(&allocated)
        .map(|(e, &a)| ((e.0 as f64 * factor).round() as u64).min(a))
        .collect();
    let placed: u64 = objects.iter().sum();
    if placed > class_objects {
        return share_live_by(class_objects, &objects, &allocated);
    }
    if factor <= 1.0 {
        let (rows, weights, room) = takers_of_the_rest(sample, &allocated, &objects);
        let shares = share_live_by(class_objects - placed, &weights, &room);
        for (i, share) in rows.into_iter().zip(shares) {
            objects[i] += share;
        }
    }
    objects
}

/// The rows that take the class's live objects the sample left unplaced
/// (`placed`: each row's share so far), with their weights and room. Rows
/// the sample holds nothing live of take them by what each allocated
/// (objects whose sample the JVM does not report or keep: clone()'s on JDK
/// 21 and later are seen made and never found live). While the sample
/// should hold every object, rows it saw only in part take them too, by
/// the live objects they likely hold among their allocations it missed: JDK 11 posts no
/// SampledObjectAlloc for some allocations in C1's tier-2 code, which it
/// uses when C2's queue is long, so under load (AllocLive's 9,000 kept
/// Nodes came out 7,744 in one run of four with `-XX:TieredStopAtLevel=2`
/// before this).
fn takers_of_the_rest(
    sample: &Sample<'_>,
    allocated: &[u64],
    placed: &[u64],
) -> (Vec<usize>, Vec<u64>, Vec<u64>) {
    let mut takers = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..allocated.len() {
        let (live, (seen, _)) = (sample.estimates[i].0, sample.seen[i]);
        let room = allocated[i] - placed[i];
        let (weight, room) = if !sample.estimated && seen > 0 && seen < allocated[i] {
            // Its missed allocations are likely alive as its seen ones are:
            // none when none of those is.
            let missed = allocated[i] - seen;
            let likely_live = (u128::from(missed) * u128::from(live)).div_ceil(u128::from(seen));
            (likely_live as u64, missed.min(room))
        } else if live == 0 && (sample.estimated || seen == 0) {
            // (While the sample holds every object, a row it saw make
            // every object it allocated, none of them live, holds none: 40,000
            // `new int[7]` used once got 112 of their class's unplaced live
            // objects before.)
            (allocated[i], room)
        } else {
            continue;
        };
        if weight > 0 && room > 0 {
            takers.0.push(i);
            takers.1.push(weight);
            takers.2.push(room);
        }
    }
    takers
}

/// Live (objects, bytes) of each row from its live objects: each weighs
/// what the row's allocations weighed on average (exact for instances and
/// fixed-length arrays).
pub(super) fn with_bytes(sharers: &[Sharer], objects: Vec<u64>) -> Vec<(u64, u64)> {
    sharers
        .iter()
        .zip(objects)
        .map(|(sharer, live)| {
            let weight = u128::from(live) * u128::from(sharer.bytes);
            (live, (weight / u128::from(sharer.objects.max(1))) as u64)
        })
        .collect()
}

/// Sharers of one row as one.
pub(super) fn merged_by_key(sharers: Vec<Sharer>) -> Vec<Sharer> {
    let mut merged: Vec<Sharer> = Vec::with_capacity(sharers.len());
    for sharer in sharers {
        match merged.iter_mut().find(|m| m.key == sharer.key) {
            Some(m) => {
                m.objects += sharer.objects;
                m.bytes += sharer.bytes;
            }
            None => merged.push(sharer),
        }
    }
    merged
}

/// Shares `live` objects of one class among sites in proportion to
/// `weights[i]` (what a sample of live objects says each holds, or what
/// each allocated), never more than a site allocated (`allocated[i]`);
/// what a capped share cannot take goes to the others, the heaviest first
/// (what cannot be placed is dropped: objects made before counting began).
pub(super) fn share_live_by(live: u64, weights: &[u64], allocated: &[u64]) -> Vec<u64> {
    let total: u64 = weights.iter().sum();
    let room: u64 = allocated.iter().sum();
    if total == 0 || live == 0 {
        return vec![0; allocated.len()];
    }
    if live >= room {
        return allocated.to_vec();
    }
    let mut shares: Vec<u64> = weights
        .iter()
        .zip(allocated)
        .map(|(&w, &a)| ((u128::from(live) * u128::from(w) / u128::from(total)) as u64).min(a))
        .collect();
    let mut left = live - shares.iter().sum::<u64>();
    let mut order: Vec<usize> = (0..allocated.len()).collect();
    order.sort_by_key(|&i| {
        (
            std::cmp::Reverse(weights[i]),
            std::cmp::Reverse(allocated[i]),
        )
    });
    for i in order {
        if left == 0 {
            break;
        }
        let give = (allocated[i] - shares[i]).min(left);
        shares[i] += give;
        left -= give;
    }
    shares
}

#[cfg(test)]
mod tests {
    use super::*;

    fn share_live(live: u64, allocated: &[u64]) -> Vec<u64> {
        share_live_by(live, allocated, allocated)
    }

    #[test]
    fn live_objects_are_shared_in_proportion_and_never_above_what_was_allocated() {
        assert_eq!(share_live(4000, &[10000]), [4000]);
        assert_eq!(share_live(50, &[100, 100]), [25, 25]);
        assert_eq!(share_live(10, &[3, 1]), [3, 1], "more live than allocated");
        assert_eq!(share_live(3, &[2, 2, 2]), [1, 1, 1]);
        let shares = share_live(5, &[4, 3, 1]);
        assert_eq!(shares.iter().sum::<u64>(), 5);
        assert!(shares.iter().zip([4, 3, 1]).all(|(s, a)| *s <= a));
        assert_eq!(share_live(0, &[5]), [0]);
        assert_eq!(share_live(7, &[]), Vec::<u64>::new());
    }

    #[test]
    fn live_objects_follow_the_sample_within_what_each_site_allocated() {
        // 4000 live objects, all from the second site by the sample.
        assert_eq!(share_live_by(4000, &[0, 4000], &[10000, 10000]), [0, 4000]);
        assert_eq!(share_live_by(300, &[1, 2], &[1000, 1000]), [100, 200]);
        // The sample says 90% at a site that allocated only 50: the rest
        // goes to the other.
        assert_eq!(share_live_by(100, &[90, 10], &[50, 1000]), [50, 50]);
        assert_eq!(
            share_live_by(10, &[0, 0], &[5, 5]),
            [0, 0],
            "no sample: none"
        );
    }

    /// A row of `objects` objects of `size` bytes each.
    fn sharer_of(size: u64, objects: u64, key: (u32, u32)) -> Sharer {
        Sharer {
            objects,
            bytes: objects * size,
            key,
        }
    }

    /// `shares_by_sample` of a sample that should hold every object.
    fn shares_while_exact(
        sharers: &[Sharer],
        estimates: &[(u64, u64)],
        seen: &[(u64, u64)],
        class_live: (u64, u64),
    ) -> Vec<u64> {
        let sample = Sample {
            estimates,
            seen,
            estimated: false,
        };
        shares_by_sample(sharers, &sample, class_live)
    }

    #[test]
    fn a_row_the_sample_saw_in_part_is_scaled_to_all_it_allocated() {
        // 10,000 Nodes of 24 bytes made, 9,000 kept; the JVM reported 8,600
        // of the allocations, 7,740 of them kept.
        let seen = (8_600, 8_600 * 24);
        let estimate = (7_740, 7_740 * 24);
        assert_eq!(
            scaled_to_what_was_allocated(estimate, seen, 240_000),
            (9_000, 216_000)
        );
        // Seen whole: unchanged; never seen: unchanged (the caller shares
        // what is left of the class among such rows).
        assert_eq!(
            scaled_to_what_was_allocated((900, 21_600), (1_000, 24_000), 24_000),
            (900, 21_600)
        );
        assert_eq!(scaled_to_what_was_allocated((0, 0), (0, 0), 24_000), (0, 0));
    }

    #[test]
    fn rows_sampled_exactly_keep_their_counts_and_unsampled_rows_take_the_rest() {
        let sharer = |objects, key| sharer_of(24, objects, (1, key));
        let sharers = [sharer(10_000, 1), sharer(10_000, 2), sharer(1_000, 3)];
        // The third row (clone()'s, say) posts no sample.
        let estimates = [(9_000, 216_000), (1_000, 24_000), (0, 0)];
        let seen = [(10_000, 240_000), (10_000, 240_000), (0, 0)];
        let class_live = (10_500, 10_500 * 24);
        assert_eq!(
            shares_while_exact(&sharers, &estimates, &seen, class_live),
            [9_000, 1_000, 500]
        );
    }

    #[test]
    fn live_objects_the_sample_missed_go_where_it_missed_allocations() {
        let sharer = |objects, key| sharer_of(24, objects, (1, key));
        let sharers = [sharer(10_000, 1), sharer(10_000, 2)];
        // The JVM did not report 1,400 of the first row's allocations
        // (1,260 of them kept), nor 10 of the second's (1 kept).
        let estimates = [(7_740, 7_740 * 24), (999, 999 * 24)];
        let seen = [(8_600, 8_600 * 24), (9_990, 9_990 * 24)];
        assert_eq!(
            shares_while_exact(&sharers, &estimates, &seen, (10_000, 240_000)),
            [9_000, 1_000]
        );
        // All kept objects seen, some dead ones missed: nothing to add.
        let estimates = [(4_000, 4_000 * 80)];
        let seen = [(9_985, 9_985 * 80)];
        let ints = [Sharer {
            objects: 10_000,
            bytes: 800_000,
            key: (2, 1),
        }];
        assert_eq!(
            shares_while_exact(&ints, &estimates, &seen, (4_000, 320_000)),
            [4_000]
        );
    }

    #[test]
    fn a_row_whose_seen_objects_all_died_takes_none_of_the_rest_while_exact() {
        let sharer = |objects, key| sharer_of(48, objects, (3, key));
        // 40,000 int[7] counted and seen made, none kept; 112 live int[]
        // of the class that no row's sample placed: not this row's.
        let sharers = [sharer(40_000, 1), sharer(100, 2)];
        let estimates = [(0, 0), (100, 4_800)];
        let seen = [(40_000, 1_920_000), (100, 4_800)];
        assert_eq!(
            shares_while_exact(&sharers, &estimates, &seen, (212, 212 * 48)),
            [0, 100]
        );
        // Seen in part (the JIT removed the rest), none kept: none either.
        let seen = [(2_000, 96_000), (100, 4_800)];
        assert_eq!(
            shares_while_exact(&sharers, &estimates, &seen, (212, 212 * 48)),
            [0, 100]
        );
        // A row the sample never saw still takes them (clone()'s).
        let seen = [(0, 0), (100, 4_800)];
        assert_eq!(
            shares_while_exact(&sharers, &estimates, &seen, (212, 212 * 48)),
            [112, 100]
        );
    }
}
