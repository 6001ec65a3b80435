//! Threads already running when the agent is attached to a live JVM
//! (`hprof-rs attach`) that could not be given a CPU timer of their own
//! (`sampler.rs`): their kernel id cannot be read (a JVM without HotSpot's
//! VMStructs tables, see `jvm/native_thread.rs`), or no timer slot is free.
//! The sampler thread samples them instead: at each tick it reads their
//! CPU clocks through JVMTI (GetThreadCpuTime), and a thread that used a
//! whole interval since the last sample counts that many intervals at the
//! stack JVMTI gives it then (taken at a safepoint, as the fallback of
//! `sampler.rs` does). A thread that used its CPU and parked before the
//! tick shows no stack then: its intervals count under `<no Java frames>`.

use crate::agent::jvm::{self, GlobalRef, LocalThread, RawFrame, kind};
use jvmti_bindings::prelude::*;
use parking_lot::Mutex;

/// A thread found running at the attach.
struct Polled {
    thread: GlobalRef<kind::Thread>,
    serial: u32,
    /// The CPU time (ns) up to which its intervals were counted.
    counted_ns: i64,
}

/// The threads found running at the attach, still alive. At most one entry
/// per thread the JVM had then: the list only shrinks.
#[derive(Default)]
pub struct PolledThreads {
    threads: Mutex<Vec<Polled>>,
}

/// One polled thread's CPU since the last tick.
pub struct PolledSample {
    pub serial: u32,
    pub intervals: u32,
    /// Empty when the thread was not runnable when looked at.
    pub frames: Vec<RawFrame>,
}

impl PolledThreads {
    /// Starts polling `thread` (serial `serial`), from its CPU time now
    /// less a random part of an interval (as a timer's first tick is
    /// spread, see `cpu_timers.rs`).
    pub fn add(
        &self,
        jni: &JniEnv,
        env: &Jvmti,
        thread: LocalThread<'_>,
        serial: u32,
        phase_ns: i64,
    ) {
        let Some(now) = jvm::thread_cpu_time(env, thread) else {
            return;
        };
        self.threads.lock().push(Polled {
            thread: GlobalRef::new(jni, thread),
            serial,
            counted_ns: now - phase_ns,
        });
    }

    /// The intervals each polled thread used since the last call, with its
    /// stack now. Threads that ended are let go.
    pub fn collect(
        &self,
        env: &Jvmti,
        jni: &JniEnv,
        interval_ns: i64,
        depth: u32,
    ) -> Vec<PolledSample> {
        let mut threads = self.threads.lock();
        let mut due: Vec<(usize, u32)> = Vec::new();
        let mut index = 0;
        while index < threads.len() {
            let polled = &mut threads[index];
            match jvm::thread_cpu_time(env, polled.thread.local()) {
                Some(now) => {
                    let intervals = (now - polled.counted_ns) / interval_ns.max(1);
                    if intervals > 0 {
                        polled.counted_ns += intervals * interval_ns;
                        due.push((index, intervals.min(i64::from(u32::MAX)) as u32));
                    }
                    index += 1;
                }
                None => {
                    let gone = threads.swap_remove(index);
                    // SAFETY: removed from the list under its lock; no copy
                    // of the reference is kept anywhere else.
                    unsafe { jvm::delete_global(jni, gone.thread) };
                }
            }
        }
        if due.is_empty() {
            return Vec::new();
        }
        let locals: Vec<LocalThread<'_>> = due
            .iter()
            .map(|&(i, _)| threads[i].thread.local())
            .collect();
        let stacks = jvm::runnable_stacks_of(env, &locals, depth);
        due.iter()
            .zip(stacks)
            .map(|(&(i, intervals), frames)| PolledSample {
                serial: threads[i].serial,
                intervals,
                frames,
            })
            .collect()
    }

    /// Lets every thread go (the profile stops).
    pub fn clear(&self, jni: &JniEnv) {
        for gone in self.threads.lock().drain(..) {
            // SAFETY: taken out of the list under its lock; no copy is kept.
            unsafe { jvm::delete_global(jni, gone.thread) };
        }
    }
}
