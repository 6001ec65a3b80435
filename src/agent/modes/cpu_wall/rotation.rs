//! Which threads a wall-clock tick looks at.
//!
//! A tick looks at no more than `budget` threads, going round the list from
//! where the last tick stopped. With no more threads than the budget every
//! thread is looked at every tick; with more, each is looked at every
//! `ceil(threads / budget)` ticks. Each look stands for the time since the
//! thread's previous look (since its arrival, for its first), whatever the
//! thread count and the sampler's delays (`apportion.rs`), so no time is
//! lost or counted twice, and a tick costs at most `budget` looks.

/// The rotation's position.
#[derive(Debug, Default)]
pub struct Rotation {
    cursor: usize,
}

impl Rotation {
    /// The places, among `count` live threads, that this tick looks at: at
    /// most `budget` of them, going on from where the last tick stopped.
    pub fn next_tick(&mut self, count: usize, budget: usize) -> Vec<usize> {
        if count == 0 {
            return Vec::new();
        }
        let take = count.min(budget.max(1));
        let start = self.cursor % count;
        self.cursor = (start + take) % count;
        (0..take).map(|k| (start + k) % count).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Under the budget every thread is looked at every tick.
    #[test]
    fn few_threads_are_each_looked_at_every_tick() {
        let mut rotation = Rotation::default();
        for _ in 0..5 {
            assert_eq!(rotation.next_tick(3, 8), vec![0, 1, 2]);
        }
    }

    /// Over the budget the looks go round: each of 10 threads is looked at
    /// 12 times in 30 ticks of 4.
    #[test]
    fn many_threads_take_turns() {
        let mut rotation = Rotation::default();
        let mut looks_of = [0; 10];
        for _ in 0..30 {
            let looks = rotation.next_tick(10, 4);
            assert_eq!(looks.len(), 4);
            for index in looks {
                looks_of[index] += 1;
            }
        }
        assert_eq!(looks_of, [12; 10]);
    }

    /// When the roster shrinks the cursor stays inside it.
    #[test]
    fn the_rotation_follows_a_roster_that_shrinks() {
        let mut rotation = Rotation::default();
        assert_eq!(rotation.next_tick(10, 4), vec![0, 1, 2, 3]);
        assert_eq!(rotation.next_tick(10, 4), vec![4, 5, 6, 7]);
        assert_eq!(rotation.next_tick(5, 4), vec![3, 4, 0, 1]);
        assert!(rotation.next_tick(0, 4).is_empty());
    }
}
