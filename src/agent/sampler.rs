//! The cpu=samples collector: every `interval` ms an agent thread looks at
//! which threads consumed CPU since the last tick (their CPU timers, see
//! `cpu_timers.rs`), takes the stacks of just those threads, and counts one
//! sample per CPU interval each consumed at its stack trace.

use super::cpu_timers::{self, CpuTimer};
use super::jvm::{self, GlobalRef, LocalThread, RawFrame, VmHandle, kind};
use super::threads::{is_agent_thread, mark_agent_thread};
use crossbeam_channel::{Receiver, RecvTimeoutError, Sender, bounded};
use jvmti_bindings::prelude::*;
use parking_lot::Mutex;
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

/// Name of the sampler thread, as HPROF named its own.
pub const SAMPLER_THREAD_NAME: &str = "HPROF cpu sampling thread";

thread_local! {
    /// This thread's CPU timer, started at ThreadStart and stopped at ThreadEnd.
    static TIMER: RefCell<Option<CpuTimer>> = const { RefCell::new(None) };
}

/// A profiled thread: a global reference to it and its serial.
#[derive(Clone, Copy)]
struct Timed {
    thread: GlobalRef<kind::Thread>,
    serial: u32,
}

/// One thread's CPU since the last tick.
pub struct Ran {
    pub serial: u32,
    /// CPU intervals consumed.
    pub intervals: u32,
    pub frames: Vec<RawFrame>,
}

/// State of cpu=samples.
pub struct CpuSampling {
    interval_ms: u32,
    depth: u32,
    /// Timed threads by timer slot.
    timed: Mutex<HashMap<usize, Timed>>,
    /// Set once sampling stops; the sender half wakes the sampler at once.
    stop: AtomicBool,
    wake: (Sender<()>, Receiver<()>),
    sampler: Mutex<Option<JoinHandle<()>>>,
}

impl CpuSampling {
    /// Sampling every `interval_ms` of CPU, `depth` frames deep. Installs
    /// the signal handler; an error says why sampling cannot run.
    pub fn new(interval_ms: u32, depth: u32) -> Result<Self, String> {
        cpu_timers::install_handler()?;
        Ok(Self {
            interval_ms: interval_ms.max(1),
            depth,
            timed: Mutex::default(),
            stop: AtomicBool::new(false),
            wake: bounded(1),
            sampler: Mutex::new(None),
        })
    }

    /// ThreadStart, on the new thread: start its CPU timer.
    pub fn thread_started(&self, jni: Option<&JniEnv>, thread: LocalThread<'_>, serial: u32) {
        let Some(jni) = jni else { return };
        if is_agent_thread() || self.depth == 0 {
            return;
        }
        let Some(timer) = cpu_timers::start_for_current_thread(self.interval_ms) else {
            return;
        };
        let thread = GlobalRef::new(jni, thread);
        self.timed
            .lock()
            .insert(timer.slot, Timed { thread, serial });
        let _ = TIMER.try_with(|t| {
            if let Some(old) = t.replace(Some(timer)) {
                old.stop();
            }
        });
    }

    /// ThreadEnd, on the ending thread: stop its timer. Returns the
    /// thread's serial and the CPU intervals it consumed since the sampler
    /// last looked (a short thread can end between two looks: its samples
    /// still count, with no stack to charge them to).
    pub fn thread_ended(&self, jni: Option<&JniEnv>) -> Option<(u32, u32)> {
        let timer = TIMER.try_with(|t| t.take()).ok().flatten()?;
        // Under the lock the sampler holds while it reads slots and walks
        // stacks: its intervals are counted either there or here, once.
        let mut all = self.timed.lock();
        let timed = all.remove(&timer.slot);
        if let (Some(timed), Some(jni)) = (timed, jni) {
            // SAFETY: removed from `timed` under the lock the sampler holds
            // while it uses the references: no copy is used after this.
            unsafe { jvm::delete_global(jni, timed.thread) };
        }
        let pending = timer.stop();
        drop(all);
        timed.map(|t| (t.serial, pending)).filter(|&(_, n)| n > 0)
    }

    /// The threads that ran since the last call, with their stacks. A
    /// thread whose stack cannot be had (it blocked or ended since its
    /// sample was due) still counts, with no frames: no sample is dropped.
    pub fn collect(&self, env: &Jvmti) -> Vec<Ran> {
        // Held until the walk is done: an ending thread deletes its global
        // reference under this lock, so none is used after it is freed.
        let timed = self.timed.lock();
        let pending = cpu_timers::take_pending();
        if pending.is_empty() {
            return Vec::new();
        }
        let (threads, who): (Vec<LocalThread<'_>>, Vec<(u32, u32)>) = pending
            .iter()
            .filter_map(|(slot, n)| timed.get(slot).map(|t| (t.thread.local(), (t.serial, *n))))
            .unzip();
        if threads.is_empty() {
            return Vec::new();
        }
        // A thread that ran but has blocked since (the CPU was spent before
        // the wait) is not charged to its waiting frame.
        let stacks = jvm::runnable_stacks_of(env, &threads, self.depth);
        drop(timed);
        who.into_iter()
            .zip(stacks)
            .map(|((serial, intervals), frames)| Ran {
                serial,
                intervals,
                frames,
            })
            .collect()
    }

    /// Starts the sampler thread, which calls `tick` every quarter interval
    /// (at least every 1 ms) until stopped. A tick with no thread having
    /// reached a CPU interval only scans the timer slots; looking often
    /// takes a thread's stack soon after its sample is due, while it still
    /// runs the code that used the CPU (a short thread may have ended a
    /// whole interval later).
    pub fn start(&'static self, vm: VmHandle, tick: impl Fn(&JniEnv) + Send + 'static) {
        let interval = Duration::from_millis(u64::from(self.interval_ms));
        let interval = (interval / 4).clamp(Duration::from_millis(1), interval);
        let spawned = std::thread::Builder::new()
            .name(SAMPLER_THREAD_NAME.into())
            .spawn(move || {
                mark_agent_thread();
                let Some(jni) = vm.attach_daemon(SAMPLER_THREAD_NAME) else {
                    eprintln!("HPROF ERROR: cannot attach the cpu sampling thread; no CPU samples");
                    return;
                };
                // Waits one period, or less when stopped: a VM that is
                // ending never waits for the sampler's sleep.
                while let Err(RecvTimeoutError::Timeout) = self.wake.1.recv_timeout(interval) {
                    if self.stop.load(Ordering::Acquire) {
                        break;
                    }
                    // Local references made during a tick are dropped with its frame.
                    if let Ok(frame) = jni.push_local_frame(64) {
                        tick(&jni);
                        drop(frame);
                    }
                }
                vm.detach();
            });
        match spawned {
            Ok(handle) => *self.sampler.lock() = Some(handle),
            Err(error) => eprintln!(
                "HPROF ERROR: cannot start the cpu sampling thread ({error}); no CPU samples"
            ),
        }
    }

    /// Stops the sampler thread and waits for it.
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Release);
        let _ = self.wake.0.try_send(());
        if let Some(handle) = self.sampler.lock().take() {
            let _ = handle.join();
        }
    }
}
