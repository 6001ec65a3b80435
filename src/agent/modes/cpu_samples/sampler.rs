//! The cpu=samples collector. Each profiled thread has a CPU timer
//! (`modes/cpu_samples/cpu_timers.rs`): every `interval` ms of CPU it burns, the sampling
//! signal comes to the thread itself, whose handler takes the stack that was executing
//! (`modes/cpu_samples/async_trace.rs`, HotSpot's AsyncGetCallTrace). An agent thread drains
//! those stacks every quarter interval and counts one sample per CPU
//! interval at each. Where AsyncGetCallTrace is absent or refuses, the
//! handler only counts, and the agent thread takes the stacks of the
//! threads that ran through JVMTI (at their next safepoint).
//!
//! A thread makes its timer at its ThreadStart. One already running when
//! the agent is attached to a live JVM is given its timer by the attaching
//! thread, with its kernel id and JNIEnv read out of HotSpot
//! (`jvm/native_thread.rs`); one whose id cannot be read (a JVM without
//! HotSpot's tables) or that cannot be given a timer is polled instead
//! (`modes/cpu_samples/polled.rs`).

use crate::agent::jvm::native_thread;
use crate::agent::jvm::{self, GlobalRef, LocalThread, RawFrame, VmHandle, kind};
use crate::agent::modes::cpu_samples::async_trace::{self, Taken, Unwalkable, Walker};
use crate::agent::modes::cpu_samples::cpu_timers::{self, CpuTimer};
use crate::agent::modes::cpu_samples::polled::PolledThreads;
use crate::agent::run::method_cache::MethodCache;
use crate::agent::run::threads::{is_agent_thread, mark_agent_thread};
use crossbeam_channel::{Receiver, RecvTimeoutError, Sender, bounded};
use jvmti_bindings::prelude::*;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

/// Name of the sampler thread, as HPROF named its own.
pub const SAMPLER_THREAD_NAME: &str = "HPROF cpu sampling thread";

/// A profiled thread: a global reference to it and its serial.
#[derive(Clone, Copy)]
struct Timed {
    thread: GlobalRef<kind::Thread>,
    serial: u32,
    /// Looks at its stack through JVMTI still to take, while the handler
    /// has walked none (see [`CpuSampling::look_at_new_threads`]).
    looks_left: u8,
}

/// How many ticks in a row a new thread's stack is looked at through
/// JVMTI until Java frames are seen (a thread caught before its run()
/// began shows none).
const LOOKS_AT_A_NEW_THREAD: u8 = 3;

/// Where a sample's CPU went.
pub enum Stack {
    /// Innermost first.
    Frames(Vec<RawFrame>),
    /// A stack that could not be walked, counted under a pseudo-frame.
    Unwalkable(Unwalkable),
}

/// One thread's CPU since the last tick, at one stack.
pub struct Ran {
    pub serial: u32,
    /// The key of the virtual thread it ran (`cpu_timers::note_mounted`),
    /// 0 for none or not tracked.
    pub mounted: u64,
    /// CPU intervals consumed; 0 for a look at the stack of a thread whose
    /// first sample is due soon (kept for an interval still due when it
    /// ends, see [`Ended`]).
    pub intervals: u32,
    pub stack: Stack,
}

/// A timed thread that ended, with the CPU intervals it used since its
/// last sample was taken (a short thread can end between two looks of the
/// sampler, or with an interval expired that the kernel had not signalled
/// yet): they are the stack's it last had, which is gone now.
pub struct Ended {
    pub serial: u32,
    pub intervals: u32,
}

/// What the sampler found since its last look: the samples, then the
/// threads that ended before it looked (whose samples are all among them).
pub struct Collected {
    pub ran: Vec<Ran>,
    pub ended: Vec<Ended>,
}

impl Stack {
    /// A JVMTI stack: none taken is a thread with no Java frames (or one
    /// that blocked or ended before it was looked at).
    fn from_jvmti(frames: Vec<RawFrame>) -> Self {
        if frames.is_empty() {
            Self::Unwalkable(Unwalkable::NoJavaFrames)
        } else {
            Self::Frames(frames)
        }
    }
}

/// State of cpu=samples.
pub struct CpuSampling {
    interval_ms: u32,
    depth: u32,
    verbose: bool,
    /// Why AsyncGetCallTrace cannot be used (said once, with `verbose=y`).
    async_error: Mutex<Option<String>>,
    /// Set once AsyncGetCallTrace refused a sample (said once).
    refused: AtomicBool,
    /// Whether each method seen in a walked stack is the carrier's entry
    /// into a virtual thread (see [`cut_carrier_frames`]); one entry per
    /// distinct method sampled since classes last unloaded, so bounded by
    /// the methods loaded.
    carrier_entry: Mutex<MethodCache<u64, bool>>,
    /// Timed threads by timer slot.
    timed: Mutex<HashMap<usize, Timed>>,
    /// The timed threads still to be looked at (slot and serial), so that
    /// a tick goes through these only, not every thread (taken after
    /// `timed` when both are held).
    unseen: Mutex<Vec<(usize, u32)>>,
    /// Threads ended since the sampler last looked.
    ended: Mutex<Vec<Ended>>,
    /// Set once sampling stops; the sender half wakes the sampler at once.
    stop: AtomicBool,
    wake: (Sender<()>, Receiver<()>),
    sampler: Mutex<Option<JoinHandle<()>>>,
    /// Threads found running when the agent was attached to a live JVM
    /// that could not be given a timer.
    polled: PolledThreads,
    /// Set once the reason threads running at the attach are polled was
    /// said (with `verbose=y`).
    said_polled: AtomicBool,
}

impl CpuSampling {
    /// Sampling every `interval_ms` of CPU, `depth` frames deep, the
    /// stacks walked by `walker` (None: through JVMTI). Installs the signal
    /// handler; an error says why sampling cannot run.
    pub fn new(
        interval_ms: u32,
        depth: u32,
        walker: Option<Walker>,
        verbose: bool,
    ) -> Result<Self, String> {
        cpu_timers::install_handler()?;
        let async_error = match walker {
            Some(walker) => async_trace::prepare(depth, walker).err(),
            None => Some("asked for by X=0x10000".to_owned()),
        };
        Ok(Self {
            interval_ms: interval_ms.max(1),
            depth,
            verbose,
            async_error: Mutex::new(async_error),
            refused: AtomicBool::new(false),
            carrier_entry: Mutex::default(),
            timed: Mutex::default(),
            unseen: Mutex::default(),
            ended: Mutex::default(),
            stop: AtomicBool::new(false),
            wake: bounded(1),
            sampler: Mutex::new(None),
            polled: PolledThreads::default(),
            said_polled: AtomicBool::new(false),
        })
    }

    /// ThreadStart, on the new thread: start its CPU timer.
    pub fn thread_started(&self, jni: Option<&JniEnv>, thread: LocalThread<'_>, serial: u32) {
        let Some(jni) = jni else { return };
        if is_agent_thread() || self.depth == 0 {
            return;
        }
        if let Some(timer) =
            cpu_timers::start_for_current_thread(self.interval_ms, jni.raw().cast(), serial)
        {
            self.track(jni, thread, serial, timer);
        }
    }

    /// A thread found running when the agent was attached to a live JVM
    /// (it passed its ThreadStart before): the attaching thread starts its
    /// CPU timer for it, which then works as the thread's own. A thread
    /// that cannot be given one is polled (see `polled.rs`).
    ///
    /// The thread may end meanwhile. Its kernel id is read while its
    /// `eetop` shows it running, and checked again once the timers are
    /// made (`NativeThreads::still_running`): timers made for an id read
    /// from a thread that has ended since are deleted unarmed. A thread
    /// whose ThreadEnd came before its timer was kept here (ThreadEnd is
    /// posted before `eetop` is cleared) keeps its timer, which never fires
    /// (its thread is gone), and its slot until its id is reused by another
    /// thread, and the profile keeps its reference: a leak of one entry per
    /// thread that ends during the attach, at most.
    pub fn thread_running_at_attach(
        &self,
        jni: &JniEnv,
        env: &Jvmti,
        thread: LocalThread<'_>,
        serial: u32,
    ) {
        if is_agent_thread() || self.depth == 0 {
            return;
        }
        let timer = match native_thread::native_threads(jni, env) {
            Ok(natives) => natives.of(jni, thread).and_then(|native| {
                cpu_timers::start_for_thread(
                    native.tid,
                    self.interval_ms,
                    native.jni_env,
                    serial,
                    || natives.still_running(jni, thread, &native),
                )
            }),
            Err(why) => {
                if self.verbose && !self.said_polled.swap(true, Ordering::Relaxed) {
                    eprintln!(
                        "HPROF: the threads running at the attach are polled \
                         through their CPU clocks ({why})"
                    );
                }
                None
            }
        };
        match timer {
            Some(timer) => self.track(jni, thread, serial, timer),
            None => {
                let period_ns = u64::from(self.interval_ms) * 1_000_000;
                let phase = cpu_timers::random_below(period_ns) as i64;
                self.polled.add(jni, env, thread, serial, phase);
            }
        }
    }

    /// A thread timed from now on by `timer`, until its ThreadEnd.
    fn track(&self, jni: &JniEnv, thread: LocalThread<'_>, serial: u32, timer: CpuTimer) {
        let slot = timer.slot;
        let thread = GlobalRef::new(jni, thread);
        // (Before the timer is kept: from then on its end finds it.)
        self.timed.lock().insert(
            slot,
            Timed {
                thread,
                serial,
                looks_left: LOOKS_AT_A_NEW_THREAD,
            },
        );
        self.unseen.lock().push((slot, serial));
        if let Some(old) = cpu_timers::keep(timer) {
            self.stop_timer(Some(jni), old, true);
        }
    }

    /// The CPU the threads found running at the attach used since the
    /// last call, at their stacks now.
    pub fn collect_polled(&self, env: &Jvmti, jni: &JniEnv) -> Vec<Ran> {
        let interval_ns = i64::from(self.interval_ms) * 1_000_000;
        self.polled
            .collect(env, jni, interval_ns, self.depth)
            .into_iter()
            .map(|sample| Ran {
                serial: sample.serial,
                mounted: 0,
                intervals: sample.intervals,
                stack: Stack::from_jvmti(sample.frames),
            })
            .collect()
    }

    /// The profile stops while the JVM runs on: no thread is sent a
    /// sampling signal any more, and the polled threads are let go. (Each
    /// timer is deleted when its thread ends, as always.)
    pub fn disarm(&self, jni: Option<&JniEnv>) {
        let timed = self.timed.lock();
        for &slot in timed.keys() {
            cpu_timers::disarm(slot);
        }
        drop(timed);
        if let Some(jni) = jni {
            self.polled.clear(jni);
        }
    }

    /// ThreadEnd, on the ending thread: stop its timer. The CPU intervals
    /// it consumed since its last sample was taken are counted at the
    /// sampler's next look (as [`Ended`]), when the stacks its handler
    /// took are all drained; `counted` is false when the run no longer
    /// counts (the VM is ending).
    pub fn thread_ended(&self, jni: Option<&JniEnv>, counted: bool) {
        if let Some(timer) = cpu_timers::take_current() {
            self.stop_timer(jni, timer, counted);
        }
    }

    /// Stops `timer`; its thread is no longer timed (by this profile: the
    /// timer may be one an earlier profile left).
    fn stop_timer(&self, jni: Option<&JniEnv>, timer: CpuTimer, counted: bool) {
        // Under the lock the sampler holds while it reads slots and walks
        // stacks: its intervals are counted either there or here, once.
        let mut all = self.timed.lock();
        let timed = all.remove(&timer.slot);
        if let (Some(timed), Some(jni)) = (timed, jni) {
            // SAFETY: removed from `timed` under the lock the sampler holds
            // while it uses the references: no copy is used after this.
            unsafe { jvm::delete_global(jni, timed.thread) };
        }
        let intervals = timer.stop();
        drop(all);
        if let (Some(timed), true) = (timed, counted) {
            self.ended.lock().push(Ended {
                serial: timed.serial,
                intervals,
            });
        }
    }

    /// True when AsyncGetCallTrace was found (at load time).
    pub fn can_walk_in_handler(&self) -> bool {
        self.async_error.lock().is_none()
    }

    /// At VM init: stacks are taken in the signal handler from now on, or
    /// (saying why once, with `verbose=y`) through JVMTI.
    pub fn activate(&self) {
        let mut error = self.async_error.lock();
        if error.is_none()
            && let Err(why) = async_trace::activate()
        {
            *error = Some(why);
        }
        if let (Some(why), true) = (error.as_ref(), self.verbose) {
            eprintln!("HPROF: cpu=samples takes stacks through JVMTI, at safepoints ({why})");
        }
    }

    /// The samples since the last call with their stacks: those taken in
    /// the signal handler, then those counted only, whose stacks are taken
    /// now through JVMTI; and the threads that ended. A thread whose stack
    /// cannot be had (it blocked since its sample was due) still counts,
    /// under a pseudo-frame: no sample is dropped.
    pub fn collect(&self, env: &Jvmti) -> Collected {
        // Taken before the records are drained: an ended thread's records
        // were all written before it ended, so they are drained below.
        let ended = std::mem::take(&mut *self.ended.lock());
        let mut ran = Vec::new();
        let mut pending = Vec::new();
        for sample in async_trace::drain() {
            let stack = match sample.taken {
                Taken::Frames(frames) => match self.cut_carrier_frames(env, frames) {
                    // (A carrier caught entering a virtual thread.)
                    frames if frames.is_empty() => Stack::Unwalkable(Unwalkable::NoJavaFrames),
                    frames => Stack::Frames(frames),
                },
                Taken::Unwalkable(why) => Stack::Unwalkable(why),
                Taken::Refused => {
                    self.say_refused();
                    if sample.weight > 0 {
                        pending.push((sample.slot, sample.weight));
                    }
                    continue;
                }
            };
            ran.push(Ran {
                serial: sample.serial,
                mounted: sample.mounted,
                intervals: sample.weight,
                stack,
            });
        }
        ran.extend(self.collect_through_jvmti(env, pending));
        ran.extend(self.look_at_new_threads(env));
        Collected { ran, ended }
    }

    /// Stacks of the new threads the handler has not walked yet, taken
    /// through JVMTI in one call, as looks (no interval counted). A thread
    /// of a few ms may end before the kernel signals any of its CPU timers
    /// (it does so at its scheduler tick, and a busy machine's ticks come
    /// late), with an interval due: its look is then the only stack it was
    /// seen to have. Each thread is looked at a few ticks at most, until
    /// Java frames are seen, whatever it does after: a thread that never
    /// runs costs no more.
    fn look_at_new_threads(&self, env: &Jvmti) -> Vec<Ran> {
        // Held until the walk is done, as in `collect_through_jvmti`.
        let mut timed = self.timed.lock();
        let mut unseen = self.unseen.lock();
        // (An entry whose thread ended, or was seen, goes.)
        unseen.retain(|&(slot, serial)| {
            timed.get_mut(&slot).is_some_and(|t| {
                if t.serial != serial || async_trace::has_walked(slot) {
                    return false;
                }
                t.looks_left = t.looks_left.saturating_sub(1);
                true
            })
        });
        if unseen.is_empty() {
            return Vec::new();
        }
        let threads: Vec<LocalThread<'_>> = unseen
            .iter()
            .filter_map(|(slot, _)| timed.get(slot).map(|t| t.thread.local()))
            .collect();
        let mut stacks = jvm::runnable_stacks_of(env, &threads, self.depth).into_iter();
        let mut looks = Vec::new();
        unseen.retain(|&(slot, serial)| {
            let frames = stacks.next().unwrap_or_default();
            let looks_left = timed.get(&slot).map_or(0, |t| t.looks_left);
            if frames.is_empty() {
                return looks_left > 0;
            }
            looks.push(Ran {
                serial,
                mounted: 0,
                intervals: 0,
                stack: Stack::Frames(frames),
            });
            false
        });
        looks
    }

    /// A virtual thread's frames, when it is mounted, are on its carrier's
    /// stack, above the carrier's own: the walk goes on through
    /// `jdk.internal.vm.Continuation.enterSpecial` (HotSpot's entry frame of
    /// a continuation, `runtime/continuationEntry.hpp`) into the carrier's
    /// `Continuation.run`, `VirtualThread.runContinuation` and the
    /// ForkJoinPool worker. The sample is the virtual thread's: its stack
    /// ends with `Continuation.enter`, as the virtual thread's own stack
    /// trace does, and the carrier's frames are cut.
    fn cut_carrier_frames(&self, env: &Jvmti, mut frames: Vec<RawFrame>) -> Vec<RawFrame> {
        let mut known = self.carrier_entry.lock();
        let entry = frames.iter().position(|&(method, _)| {
            known.get_or_learn(method, || {
                jvm::method_name(env, method).is_some_and(|(name, _)| name == "enterSpecial")
                    && jvm::declaring_class(env, method)
                        .and_then(|class| jvm::class_signature(env, class))
                        .is_some_and(|sig| sig == "Ljdk/internal/vm/Continuation;")
            })
        });
        if let Some(entry) = entry {
            frames.truncate(entry);
        }
        frames
    }

    fn say_refused(&self) {
        if self.verbose && !self.refused.swap(true, Ordering::Relaxed) {
            eprintln!(
                "HPROF: AsyncGetCallTrace refused a sample; its stack is taken through JVMTI"
            );
        }
    }

    /// The threads counted by the signal handler without a stack (plus
    /// `pending`), with their stacks taken through JVMTI.
    fn collect_through_jvmti(&self, env: &Jvmti, mut pending: Vec<(usize, u32)>) -> Vec<Ran> {
        // Held until the walk is done: an ending thread deletes its global
        // reference under this lock, so none is used after it is freed.
        let timed = self.timed.lock();
        pending.extend(cpu_timers::take_pending());
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
                mounted: 0,
                intervals,
                stack: Stack::from_jvmti(frames),
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
