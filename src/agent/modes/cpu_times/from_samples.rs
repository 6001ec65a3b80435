//! cpu=times with its times taken from samples (`timing=samples`): the
//! rewritten methods only count their calls on entry (one inlined
//! increment in the thread's own table), and a CPU sampler (the cpu=samples
//! machinery, every millisecond of a thread's CPU) says where the time
//! goes. A dump joins the two: each sample is charged to the innermost
//! *counted* method of its stack (time in code that is not rewritten counts
//! as its caller's, as under exact timing), its trace made of the counted
//! frames only; a method's calls are shared among its traces in proportion
//! to their samples (largest remainders, so they add up to the exact count).
//! A method no sample saw gets one row with its exact count and no time, on
//! the trace of its first call (`first_calls.rs`), or of its own frame
//! when that was not walked.

use crate::agent::modes::cpu_times::timing::TimedMethod;
use crate::agent::modes::cpu_times::traces::{intern_timed, trace_time};
use crate::emit::times::TraceTime;
use crate::model::Model;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;

/// Where the samples come from, and what one is worth.
pub struct SampleFeed {
    /// Samples per trace (of raw frames) since the last dump, filled by the
    /// sampler.
    pub counts: Arc<Mutex<HashMap<u32, u64>>>,
    /// The CPU time one sample stands for.
    pub interval_ns: u64,
}

/// A trace of counted frames (method keys innermost first) on a thread
/// (`None` without `thread=y`).
type CountedTrace = (Option<u32>, Vec<u64>);

/// Traces (method keys) and their samples, by (thread, innermost method).
type TracesByTop = HashMap<(Option<u32>, u64), Vec<(Vec<u64>, u64)>>;

/// The rows of a dump: `samples` by trace serial, `calls` by (thread, method
/// key) (thread `None` without `thread=y`), `first_call` the trace serial
/// of a method's first call (made in the model), `key_of` telling a frame's (class
/// signature, method name, descriptor) counted method, `depth` frames per
/// row's trace.
#[allow(clippy::too_many_arguments)]
pub fn rows(
    model: &mut Model,
    samples: &HashMap<u32, u64>,
    calls: &HashMap<(Option<u32>, u64), u64>,
    mut first_call: impl FnMut(&mut Model, u64) -> Option<u32>,
    key_of: impl Fn(&str, &str, &str) -> Option<u64>,
    method: impl Fn(u64) -> Option<TimedMethod>,
    depth: usize,
    interval_ns: u64,
) -> Vec<TraceTime> {
    let mut counted = CountedFrames::new(key_of, depth);
    let by_trace = counted.traces(model, samples);
    // Per (thread, top method): its traces and their samples, in a fixed
    // order so that the shares of equal remainders go the same way each run.
    let mut by_top: TracesByTop = HashMap::new();
    for ((thread, keys), n) in by_trace {
        by_top.entry((thread, keys[0])).or_default().push((keys, n));
    }
    let mut rows = Vec::new();
    // A method called but never seen by a sample still has its exact count
    // printed (the manual's "true count"): a row with no time, on the trace
    // of its first call (its own frame alone if that was not walked).
    let mut unsampled: Vec<(Option<u32>, u64, u64)> = calls
        .iter()
        .filter(|&(key, &count)| count > 0 && !by_top.contains_key(key))
        .map(|(&(thread, key), &count)| (thread, key, count))
        .collect();
    unsampled.sort_unstable();
    for (thread, key, count) in unsampled {
        let keys = first_call(model, key)
            .map(|serial| counted.keys(model, serial))
            .filter(|keys| keys.first() == Some(&key))
            .unwrap_or_else(|| vec![key]);
        let methods: Vec<_> = keys.iter().map(|&k| method(k)).collect();
        let trace_serial = intern_timed(model, &keys, &methods, thread);
        let mut row = trace_time(trace_serial, &methods);
        row.calls = count;
        row.self_ns = 0;
        row.total_ns = 0;
        rows.push(row);
    }
    for ((thread, top), mut traces) in by_top {
        traces.sort();
        let weights: Vec<u64> = traces.iter().map(|(_, n)| *n).collect();
        let shares = share(calls.get(&(thread, top)).copied().unwrap_or(0), &weights);
        for ((keys, n), calls) in traces.into_iter().zip(shares) {
            let methods: Vec<_> = keys.iter().map(|&k| method(k)).collect();
            let trace_serial = intern_timed(model, &keys, &methods, thread);
            let mut row = trace_time(trace_serial, &methods);
            row.calls = calls;
            row.self_ns = n * interval_ns;
            row.total_ns = row.self_ns;
            rows.push(row);
        }
    }
    rows
}

/// Traces cut to their counted frames: each trace's frames that are
/// counted methods, innermost first, `depth` of them.
struct CountedFrames<F> {
    key_of: F,
    depth: usize,
    /// Each frame's counted method, looked up once.
    key_by_frame: HashMap<u64, Option<u64>>,
}

impl<F: Fn(&str, &str, &str) -> Option<u64>> CountedFrames<F> {
    fn new(key_of: F, depth: usize) -> Self {
        Self {
            key_of,
            depth: depth.max(1),
            key_by_frame: HashMap::new(),
        }
    }

    /// The samples by trace of counted frames: each sampled trace cut above
    /// its innermost counted frame and to `depth` counted frames; samples
    /// with no counted frame are left out (as time outside every timed call
    /// is).
    fn traces(&mut self, model: &Model, samples: &HashMap<u32, u64>) -> HashMap<CountedTrace, u64> {
        let mut by_trace: HashMap<CountedTrace, u64> = HashMap::new();
        for (&serial, &n) in samples {
            let Some(thread) = model.traces.get(serial).map(|t| t.key.thread_serial) else {
                continue;
            };
            let keys = self.keys(model, serial);
            if !keys.is_empty() {
                *by_trace.entry((thread, keys)).or_default() += n;
            }
        }
        by_trace
    }

    /// The counted methods of trace `serial`'s frames (none for an unknown
    /// trace).
    fn keys(&mut self, model: &Model, serial: u32) -> Vec<u64> {
        let Some(trace) = model.traces.get(serial) else {
            return Vec::new();
        };
        let key_of = &self.key_of;
        trace
            .key
            .frames
            .iter()
            .filter_map(|&id| {
                *self.key_by_frame.entry(id).or_insert_with(|| {
                    let frame = model.frames.get(id)?;
                    let class = frame
                        .class_signature
                        .strip_prefix('L')
                        .and_then(|c| c.strip_suffix(';'))?;
                    key_of(class, &frame.method_name, &frame.method_signature)
                })
            })
            .take(self.depth)
            .collect()
    }
}

/// `total` split in proportion to `weights` (largest remainders, the
/// earlier first on a tie): the parts add up to `total` whenever a weight
/// is not zero.
fn share(total: u64, weights: &[u64]) -> Vec<u64> {
    let sum: u128 = weights.iter().map(|&w| u128::from(w)).sum();
    if sum == 0 {
        return vec![0; weights.len()];
    }
    let exact: Vec<(u64, u128)> = weights
        .iter()
        .map(|&w| {
            let product = u128::from(total) * u128::from(w);
            ((product / sum) as u64, product % sum)
        })
        .collect();
    let mut parts: Vec<u64> = exact.iter().map(|(whole, _)| *whole).collect();
    let left = total - parts.iter().sum::<u64>();
    let mut order: Vec<usize> = (0..weights.len()).collect();
    order.sort_by_key(|&i| (std::cmp::Reverse(exact[i].1), i));
    for &i in order.iter().take(left as usize) {
        parts[i] += 1;
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_add_up_to_the_exact_count_and_follow_the_samples() {
        assert_eq!(share(10, &[1, 1]), [5, 5]);
        assert_eq!(share(10, &[1, 2]), [3, 7]);
        assert_eq!(share(7, &[3]), [7]);
        assert_eq!(share(2, &[1, 1, 1]), [1, 1, 0]);
        assert_eq!(share(0, &[4, 5]), [0, 0]);
        assert_eq!(share(5, &[0, 0]), [0, 0]);
        let big = share(u64::MAX, &[u64::MAX, 1]);
        assert_eq!(
            big.iter().map(|&p| u128::from(p)).sum::<u128>(),
            u128::from(u64::MAX)
        );
    }
}
