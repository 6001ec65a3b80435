//! What a look's time is counted as, and how the counted time becomes
//! samples.
//!
//! A look stands for the time since the thread's previous look. When both
//! saw the thread in the same state (and trace) the time is theirs. When
//! the thread changed state in between, the change is somewhere in that
//! gap; splitting it in halves (the trapezoid rule) is right on average
//! only if the looks come at times that do not depend on what the thread
//! does, and they do: a thread that wakes up takes a CPU, and on a busy
//! machine the sampler's next tick comes late. Measured on WallStates
//! (docs/decisions.md): the tick after the worker's socket read returned
//! came 3.9 half-intervals after the previous one where the others came
//! 2, and halving those gaps gave 1.5 to 3 points of the worker's running
//! time to the states around it.
//!
//! So the gap is split by the thread's CPU clock where it can tell: each
//! thread's share of a CPU in each state is learnt from the looks that
//! found it in the same state twice (a sleeping, blocked or waiting thread
//! starts at none), and when the two states' shares differ enough, the CPU
//! the thread used in the gap says how long it was in each. Otherwise
//! (states that both use the CPU or both do not, a virtual thread whose
//! own CPU clock JVMTI does not give, a share not learnt yet) the gap is
//! split in halves.

use super::states::State;
use std::collections::HashMap;

/// Below this difference between two states' CPU shares, the CPU used
/// in a gap says too little about the split: halves.
const SHARES_APART: f64 = 0.3;

/// A gap shorter than this part of an interval teaches no share (a look
/// right after another: its CPU clock and wall clock are read at slightly
/// different times, which a short gap magnifies).
const SHORTEST_LESSON: f64 = 0.25;

/// A thread's share of a CPU while in each state (a column per state),
/// learnt from its looks. `None`: not known yet.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CpuShares([Option<f64>; 5]);

impl Default for CpuShares {
    /// A thread sleeping, blocked or waiting runs no code, so starts at
    /// none; running and native code are learnt.
    fn default() -> Self {
        let mut shares = [None; 5];
        for state in [State::Blocked, State::Waiting, State::Sleeping] {
            shares[state.column()] = Some(0.0);
        }
        CpuShares(shares)
    }
}

impl CpuShares {
    /// Two looks a gap of `gap_ns` apart both found the thread in `state`,
    /// and it used `cpu_ns` of CPU: that state's share moves halfway to
    /// what this gap shows.
    pub fn learn(&mut self, state: State, gap_ns: u64, cpu_ns: u64, interval_ns: u64) {
        if (gap_ns as f64) < SHORTEST_LESSON * interval_ns as f64 {
            return;
        }
        let seen = (cpu_ns as f64 / gap_ns as f64).clamp(0.0, 1.0);
        let share = &mut self.0[state.column()];
        *share = Some(match *share {
            Some(known) => (known + seen) / 2.0,
            None => seen,
        });
    }

    /// A look that found the thread in `now` after its previous look found
    /// it in `before`, `gap_ns` ago, and that it used `cpu_ns` of CPU in
    /// between (`None`: unknown): the share of an unchanged state is
    /// learnt, and the part of the gap spent in `before` is returned.
    pub fn observe(
        &mut self,
        before: State,
        now: State,
        gap_ns: u64,
        cpu_ns: Option<u64>,
        interval_ns: u64,
    ) -> u64 {
        if before == now
            && let Some(cpu_ns) = cpu_ns
        {
            self.learn(now, gap_ns, cpu_ns, interval_ns);
        }
        self.time_before(before, now, gap_ns, cpu_ns)
    }

    fn of(&self, state: State) -> Option<f64> {
        self.0[state.column()]
    }

    /// Of a gap of `gap_ns` in which the thread went from `before` to
    /// `now` and used `cpu_ns` of CPU (`None`: unknown), the part spent
    /// in `before`.
    pub fn time_before(&self, before: State, now: State, gap_ns: u64, cpu_ns: Option<u64>) -> u64 {
        let halves = gap_ns / 2;
        let (Some(cpu_ns), Some(share_before), Some(share_now)) =
            (cpu_ns, self.of(before), self.of(now))
        else {
            return halves;
        };
        if (share_before - share_now).abs() < SHARES_APART {
            return halves;
        }
        // cpu = share_before * t + share_now * (gap - t), solved for t.
        let gap = gap_ns as f64;
        let t = (cpu_ns as f64 - share_now * gap) / (share_before - share_now);
        t.clamp(0.0, gap) as u64
    }
}

/// Adds `ns` to what (trace, state) was seen doing.
pub fn credit(counts: &mut HashMap<(u32, State), u64>, seen: (u32, State), ns: u64) {
    if ns > 0 {
        *counts.entry(seen).or_default() += ns;
    }
}

/// Counted time to samples of `interval_ns`: the total is the total time
/// in intervals, rounded; each count gets its whole intervals, and the
/// samples left over go to the largest remainders (then by trace and
/// state, so the file is the same for the same counts).
pub fn in_samples(
    counts: &HashMap<(u32, State), u64>,
    interval_ns: u64,
) -> HashMap<(u32, State), u64> {
    let interval_ns = interval_ns.max(1);
    let total: u64 = counts.values().sum();
    let whole_total = (total + interval_ns / 2) / interval_ns;
    let mut samples: HashMap<(u32, State), u64> = counts
        .iter()
        .map(|(&key, &ns)| (key, ns / interval_ns))
        .collect();
    let mut remainders: Vec<((u32, State), u64)> = counts
        .iter()
        .map(|(&key, &ns)| (key, ns % interval_ns))
        .filter(|&(_, rest)| rest > 0)
        .collect();
    remainders
        .sort_by_key(|&((trace, state), rest)| (std::cmp::Reverse(rest), trace, state.column()));
    let left = whole_total.saturating_sub(samples.values().sum::<u64>());
    for (key, _) in remainders.into_iter().take(left as usize) {
        *samples.entry(key).or_default() += 1;
    }
    samples.retain(|_, n| *n > 0);
    samples
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    /// The worker's socket read returns and it computes; the tick after
    /// comes 8 ms after the last one, 7 ms of which it ran.
    #[test]
    fn a_gap_is_split_by_the_cpu_the_thread_used() {
        let mut shares = CpuShares::default();
        // Blocked in the read, no CPU: native learns none.
        shares.learn(State::Native, 2 * MS, 0, 2 * MS);
        // Computing, a whole CPU.
        shares.learn(State::Running, 2 * MS, 2 * MS, 2 * MS);
        let before = shares.time_before(State::Native, State::Running, 8 * MS, Some(7 * MS));
        assert_eq!(before, MS);
        // On a loaded machine it gets half a CPU: 3.5 ms of CPU is 7 ms.
        shares.learn(State::Running, 4 * MS, MS, 2 * MS);
        assert_eq!(shares.of(State::Running), Some(0.625));
        let before = shares.time_before(State::Running, State::Sleeping, 8 * MS, Some(2_500_000));
        assert_eq!(before, 4 * MS);
    }

    #[test]
    fn without_what_tells_the_states_apart_a_gap_is_halved() {
        let mut shares = CpuShares::default();
        // Running's share not learnt yet.
        assert_eq!(
            shares.time_before(State::Running, State::Sleeping, 8 * MS, Some(MS)),
            4 * MS
        );
        shares.learn(State::Running, 2 * MS, 2 * MS, 2 * MS);
        // No CPU clock (a virtual thread).
        assert_eq!(
            shares.time_before(State::Running, State::Sleeping, 8 * MS, None),
            4 * MS
        );
        // Both states off a CPU.
        assert_eq!(
            shares.time_before(State::Blocked, State::Sleeping, 8 * MS, Some(0)),
            4 * MS
        );
        // Native code that computes as much as Java code.
        shares.learn(State::Native, 2 * MS, 2 * MS, 2 * MS);
        assert_eq!(
            shares.time_before(State::Native, State::Running, 8 * MS, Some(8 * MS)),
            4 * MS
        );
        // A short gap teaches nothing.
        shares.learn(State::Sleeping, MS / 10, MS / 10, 2 * MS);
        assert_eq!(shares.of(State::Sleeping), Some(0.0));
    }

    #[test]
    fn more_cpu_than_the_gap_gives_the_whole_gap_to_the_running_state() {
        let mut shares = CpuShares::default();
        shares.learn(State::Running, 2 * MS, 2 * MS, 2 * MS);
        assert_eq!(
            shares.time_before(State::Running, State::Blocked, 4 * MS, Some(5 * MS)),
            4 * MS
        );
        assert_eq!(
            shares.time_before(State::Blocked, State::Running, 4 * MS, Some(5 * MS)),
            0
        );
    }

    #[test]
    fn counted_time_becomes_samples_that_add_up_to_it() {
        let counts = HashMap::from([
            ((1, State::Running), 9 * MS),
            ((1, State::Blocked), 3 * MS),
            ((2, State::Waiting), 4 * MS),
        ]);
        // 16 ms at 2 ms: 8 samples; the odd 1 ms of the 9 and of the 3
        // make one more, which the tie gives to the first trace.
        let samples = in_samples(&counts, 2 * MS);
        assert_eq!(samples.values().sum::<u64>(), 8);
        assert_eq!(samples[&(1, State::Running)], 5);
        assert_eq!(samples[&(1, State::Blocked)], 1);
        assert_eq!(samples[&(2, State::Waiting)], 2);
        // Less than half an interval in all makes no sample.
        let little = HashMap::from([((1, State::Running), MS / 4)]);
        assert!(in_samples(&little, 2 * MS).is_empty());
    }
}
