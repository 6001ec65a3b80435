//! Which threads a wall-clock tick looks at, and what each look stands for.
//!
//! A tick looks at no more than `budget` threads, going round the list from
//! where the last tick stopped. Each look is given the time since that
//! thread's previous look (since its arrival, for its first), in whole
//! half-intervals, the remainder carried to its next look: its weight (the
//! engine shares it between the state seen at the previous look and the
//! one seen now, see `mod.rs`). With no
//! more threads than the budget every thread is looked at every tick
//! (weight 1 while ticks come on time); with more, each is looked at every
//! `ceil(threads / budget)` ticks and its weight makes up for the time
//! between. A tick that comes late (the sampler was not scheduled, a pause
//! of the JVM) is made up for the same way. So a thread's samples add up
//! to the intervals it lived, whatever the thread count and the sampler's
//! delays, and a tick costs at most `budget` looks.

/// A thread's place in the rotation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Turn {
    /// When it was last looked at (or arrived), in ns of the sampler's clock.
    pub last_ns: u64,
    /// The part of an interval its last look left uncounted.
    pub carry_ns: u64,
}

/// The rotation's position.
#[derive(Debug, Default)]
pub struct Rotation {
    cursor: usize,
}

impl Rotation {
    /// A thread arriving at `now_ns`: its first look counts from then.
    pub fn arrival(now_ns: u64) -> Turn {
        Turn {
            last_ns: now_ns,
            carry_ns: 0,
        }
    }

    /// A tick at `now_ns` over `items` (one per live thread, each with its
    /// turn): the indexes to look at and each one's weight in halves of
    /// `interval_ns`, at most `budget` of them. Each chosen turn moves to
    /// now.
    pub fn next_tick<T>(
        &mut self,
        items: &mut [T],
        turn_of: fn(&mut T) -> &mut Turn,
        budget: usize,
        now_ns: u64,
        interval_ns: u64,
    ) -> Vec<(usize, u64)> {
        let count = items.len();
        if count == 0 {
            return Vec::new();
        }
        let half_ns = (interval_ns / 2).max(1);
        let take = count.min(budget.max(1));
        let start = self.cursor % count;
        self.cursor = (start + take) % count;
        (0..take)
            .map(|k| {
                let index = (start + k) % count;
                let turn = turn_of(&mut items[index]);
                let owed = now_ns.saturating_sub(turn.last_ns) + turn.carry_ns;
                turn.last_ns = now_ns;
                turn.carry_ns = owed % half_ns;
                (index, owed / half_ns)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn itself(turn: &mut Turn) -> &mut Turn {
        turn
    }

    const MS: u64 = 1_000_000;

    /// Under the budget every thread is looked at every tick, weight one
    /// interval (two halves).
    #[test]
    fn few_threads_are_each_looked_at_every_tick() {
        let mut rotation = Rotation::default();
        let mut turns = vec![Rotation::arrival(0); 3];
        for tick in 1..=5 {
            let looks = rotation.next_tick(&mut turns, itself, 8, tick * 10 * MS, 10 * MS);
            assert_eq!(looks, vec![(0, 2), (1, 2), (2, 2)]);
        }
    }

    /// Over the budget the looks go round, and each thread's weights add
    /// up to the intervals up to its last look.
    #[test]
    fn many_threads_take_turns_and_weigh_the_time_between() {
        let mut rotation = Rotation::default();
        let mut turns = vec![Rotation::arrival(0); 10];
        let mut weight_of = [0u64; 10];
        for tick in 1..=30 {
            let looks = rotation.next_tick(&mut turns, itself, 4, tick * 10 * MS, 10 * MS);
            assert_eq!(looks.len(), 4);
            for (index, weight) in looks {
                weight_of[index] += weight;
            }
        }
        for (index, turn) in turns.iter().enumerate() {
            assert_eq!(weight_of[index] * 5 * MS, turn.last_ns);
            assert!(turn.last_ns >= 28 * 10 * MS, "{turns:?}");
        }
    }

    /// A late tick counts the intervals it missed; early and late ticks
    /// carry their remainders, so no time is lost or counted twice.
    #[test]
    fn late_and_uneven_ticks_lose_no_time() {
        let mut rotation = Rotation::default();
        let mut turns = vec![Rotation::arrival(0)];
        let mut total = 0;
        for now_ms in [9, 21, 30, 75, 79, 100] {
            let looks = rotation.next_tick(&mut turns, itself, 8, now_ms * MS, 10 * MS);
            total += looks[0].1;
        }
        assert_eq!(total, 20);
        assert_eq!(turns[0].carry_ns, 0);
    }

    /// A thread arriving late counts from its arrival.
    #[test]
    fn a_late_thread_counts_from_its_arrival() {
        let mut rotation = Rotation::default();
        let mut turns = vec![Rotation::arrival(0), Rotation::arrival(45 * MS)];
        let looks = rotation.next_tick(&mut turns, itself, 8, 50 * MS, 10 * MS);
        assert_eq!(looks, vec![(0, 10), (1, 1)]);
        let looks = rotation.next_tick(&mut turns, itself, 8, 60 * MS, 10 * MS);
        assert_eq!(looks, vec![(0, 2), (1, 2)]);
    }
}
