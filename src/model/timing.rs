//! Method timing for cpu=times / cpu=old: a per-thread shadow stack of the
//! instrumented methods being run, and per-trace costs of completed calls.
//!
//! A method is an opaque `u64` key here (the agent numbers the methods it
//! instruments). Times are in nanoseconds of whatever clock the caller uses.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A multiply-rotate hasher for trace keys (a few small integers): every
/// call exit hashes one, so SipHash's cost would show.
#[derive(Default)]
pub struct FastHasher(u64);

impl Hasher for FastHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
    }

    fn write_u64(&mut self, value: u64) {
        self.0 = (self.0.rotate_left(5) ^ value).wrapping_mul(0x517c_c1b7_2722_0a95);
    }

    fn write_usize(&mut self, value: usize) {
        self.write_u64(value as u64);
    }
}

/// Costs by trace (method keys, innermost first).
pub type CostTable = HashMap<Box<[u64]>, CallCosts, BuildHasherDefault<FastHasher>>;

/// One method call in progress.
#[derive(Debug, Clone, Copy)]
struct Active {
    method: u64,
    /// Index of this call's trace in [`ThreadTiming::traces`].
    trace: u32,
    start: u64,
    /// Time spent in instrumented callees so far.
    in_callees: u64,
}

/// The costs of every completed call with the same trace.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CallCosts {
    /// Completed calls.
    pub count: u64,
    /// Time in the method itself, callees excluded.
    pub self_time: u64,
    /// Time from entry to exit, callees included.
    pub total_time: u64,
}

/// Trace of a call with no instrumented caller.
const NO_CALLER: u32 = u32::MAX;

/// One thread's shadow stack and the costs it has collected.
///
/// Each call's trace (its method and up to `depth - 1` callers) is found
/// once, on entry, from its caller's trace and its method through a small
/// memo table; an exit then only adds to that trace's costs. The trace keys
/// themselves are hashed only the first time a (caller trace, method) pair
/// is seen.
#[derive(Debug)]
pub struct ThreadTiming {
    depth: usize,
    stack: Vec<Active>,
    /// Method keys of each trace, innermost first.
    traces: Vec<Box<[u64]>>,
    costs: Vec<CallCosts>,
    by_key: CostIndex,
    /// (caller's trace, method) -> trace.
    memo: HashMap<(u32, u64), u32, BuildHasherDefault<FastHasher>>,
}

/// Trace index by method keys.
type CostIndex = HashMap<Box<[u64]>, u32, BuildHasherDefault<FastHasher>>;

impl Default for ThreadTiming {
    fn default() -> Self {
        Self::new(4)
    }
}

impl ThreadTiming {
    /// Timing with traces of `depth` frames (at least 1).
    pub fn new(depth: usize) -> Self {
        Self {
            depth: depth.max(1),
            stack: Vec::new(),
            traces: Vec::new(),
            costs: Vec::new(),
            by_key: CostIndex::default(),
            memo: HashMap::default(),
        }
    }

    /// A method was entered at `now`.
    pub fn enter(&mut self, method: u64, now: u64) {
        let caller = self.stack.last().map_or(NO_CALLER, |a| a.trace);
        let trace = match self.memo.get(&(caller, method)) {
            Some(&trace) => trace,
            None => {
                let trace = self.trace_for(caller, method);
                self.memo.insert((caller, method), trace);
                trace
            }
        };
        self.stack.push(Active {
            method,
            trace,
            start: now,
            in_callees: 0,
        });
    }

    /// The trace of `method` called from a call with trace `caller`.
    fn trace_for(&mut self, caller: u32, method: u64) -> u32 {
        let mut key = Vec::with_capacity(self.depth);
        key.push(method);
        if let Some(outer) = self.traces.get(caller as usize) {
            key.extend(outer.iter().take(self.depth - 1));
        }
        if let Some(&trace) = self.by_key.get(key.as_slice()) {
            return trace;
        }
        let trace = self.traces.len() as u32;
        let key = key.into_boxed_slice();
        self.traces.push(key.clone());
        self.costs.push(CallCosts::default());
        self.by_key.insert(key, trace);
        trace
    }

    /// `method` returns at `now`. Calls above it on the shadow stack were
    /// left by an exception and are accounted first; a return of a method
    /// that is not on the stack (entered before timing began) is ignored.
    pub fn exit(&mut self, method: u64, now: u64) {
        if self.stack.last().is_some_and(|a| a.method == method) {
            self.pop(now);
            return;
        }
        let Some(position) = self.stack.iter().rposition(|a| a.method == method) else {
            return;
        };
        while self.stack.len() > position {
            self.pop(now);
        }
    }

    /// An exception was caught in `method` at `now`: the calls above its
    /// innermost activation ended. Nothing happens if it is not on the stack.
    pub fn caught_in(&mut self, method: u64, now: u64) {
        let Some(position) = self.stack.iter().rposition(|a| a.method == method) else {
            return;
        };
        while self.stack.len() > position + 1 {
            self.pop(now);
        }
    }

    fn pop(&mut self, now: u64) {
        let Some(call) = self.stack.pop() else { return };
        let total = now.saturating_sub(call.start);
        if let Some(caller) = self.stack.last_mut() {
            caller.in_callees += total;
        }
        let costs = &mut self.costs[call.trace as usize];
        costs.count += 1;
        costs.self_time += total.saturating_sub(call.in_callees);
        costs.total_time += total;
    }

    /// Takes the costs collected so far, by trace (they start over).
    pub fn take_costs(&mut self) -> CostTable {
        let mut out = CostTable::default();
        for (trace, costs) in self.traces.iter().zip(self.costs.iter_mut()) {
            if costs.count > 0 {
                out.insert(trace.clone(), std::mem::take(costs));
            }
        }
        out
    }

    /// Calls in progress.
    pub fn depth(&self) -> usize {
        self.stack.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn costs_of(timing: &mut ThreadTiming) -> HashMap<Vec<u64>, CallCosts> {
        timing
            .take_costs()
            .into_iter()
            .map(|(k, v)| (k.into_vec(), v))
            .collect()
    }

    #[test]
    fn self_time_excludes_callees_and_counts_completed_calls() {
        let mut t = ThreadTiming::default();
        t.enter(1, 0);
        t.enter(2, 10);
        t.exit(2, 40);
        t.enter(2, 50);
        t.exit(2, 60);
        t.exit(1, 100);
        let costs = costs_of(&mut t);
        assert_eq!(
            costs[&vec![2, 1]],
            CallCosts {
                count: 2,
                self_time: 40,
                total_time: 40
            }
        );
        assert_eq!(
            costs[&vec![1]],
            CallCosts {
                count: 1,
                self_time: 60,
                total_time: 100
            }
        );
        assert_eq!(t.depth(), 0);
    }

    #[test]
    fn exits_by_exception_are_accounted_when_a_caller_returns_or_catches() {
        let mut t = ThreadTiming::default();
        t.enter(1, 0);
        t.enter(2, 10);
        t.enter(3, 20);
        // 3 and 2 are left by an exception caught in 1.
        t.caught_in(1, 50);
        assert_eq!(t.depth(), 1);
        t.exit(1, 60);
        let costs = costs_of(&mut t);
        assert_eq!(costs[&vec![3, 2, 1]].count, 1);
        assert_eq!(
            costs[&vec![2, 1]],
            CallCosts {
                count: 1,
                self_time: 10,
                total_time: 40
            }
        );
        assert_eq!(costs[&vec![1]].count, 1);

        // A return skipping frames accounts for them too.
        t.enter(5, 0);
        t.enter(6, 5);
        t.exit(5, 10);
        let costs = costs_of(&mut t);
        assert_eq!(costs[&vec![6, 5]].count, 1);
        assert_eq!(costs[&vec![5]].count, 1);
    }

    #[test]
    fn depth_limits_the_trace_and_recursion_is_counted_per_call() {
        let mut t = ThreadTiming::new(2);
        for i in 0..5 {
            t.enter(9, i);
        }
        for i in 0..5 {
            t.exit(9, 10 + i);
        }
        t.exit(42, 99); // never entered: ignored
        let costs = costs_of(&mut t);
        assert_eq!(costs[&vec![9, 9]].count, 4);
        assert_eq!(costs[&vec![9]].count, 1);
    }
}
