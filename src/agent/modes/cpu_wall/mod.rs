//! cpu=wall (an hprof-rs addition): every live Java thread sampled every
//! `interval` ms of wall-clock time, whatever it is doing, with the state
//! it is in (running, in native code, blocked on a monitor, waiting,
//! sleeping). The samples are written as a CPU SAMPLES section marked as
//! wall-clock samples, with each trace's split by state beside it
//! (`hprof_format::wall_states`).
//!
//! The sampler thread does the work, from JVMTI, at each tick:
//!
//! * It looks at no more than [`LOOKS_PER_TICK`] threads, in turns
//!   (`rotation.rs`): each look counts for the ticks since that thread's
//!   previous one, so a tick's cost is bounded whatever the thread count.
//! * A look reads the thread's state and CPU clock. A thread that used no
//!   CPU since its last look and is in the same state is where it was: its
//!   last trace counts again, with no stack walk (an idle thread pool of
//!   thousands costs a state and a clock read per thread per turn).
//! * The others' stacks are taken in one `GetThreadListStackTraces` call
//!   (one pause of the JVM per tick, not one per thread), with the state
//!   each had at that moment.
//! * A look that finds a thread in another state than its last look did
//!   splits the time between them by the CPU the thread used
//!   (`apportion.rs`).

mod apportion;
mod mounted;
mod rotation;
mod states;

use crate::agent::jvm::native_thread::{self, current_tid};
use crate::agent::jvm::{self, GlobalRef, LocalThread, RawFrame, VmHandle, kind};
use crate::agent::run::engine::{Engine, Run};
use crate::agent::run::threads;
use crate::agent::run::threads::mark_agent_thread;
use crate::emit::clock::ctime_now;
use crate::emit::cpu::samples_from;
use crate::format::wall_states::WallStateRow;
use crate::model::Model;
use apportion::{CpuShares, credit, in_samples};
use crossbeam_channel::{Receiver, RecvTimeoutError, Sender, bounded};
use jvmti_bindings::prelude::*;
use parking_lot::Mutex;
use rotation::Rotation;
use states::{State, counted, is_alive};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The most threads one tick looks at. With more live threads they take
/// turns; each look then stands for the ticks since the thread's last.
pub const LOOKS_PER_TICK: usize = 64;

/// Name of the sampler thread.
pub const WALL_SAMPLER_THREAD_NAME: &str = "HPROF wall sampling thread";

/// A thread being sampled.
struct Watched {
    thread: GlobalRef<kind::Thread>,
    serial: u32,
    /// Its kernel id, when known: a carrier's mounted virtual thread is
    /// found by it.
    tid: Option<libc::pid_t>,
    /// Its samples count (a `net=` front end's CONTROL can turn it off).
    sampled: bool,
    /// When it was last looked at (or arrived), in ns of the sampler's
    /// clock: its next look stands for the time since.
    seen_ns: u64,
    /// Its share of a CPU in each state, for splitting a gap in which it
    /// changed state (`apportion.rs`).
    cpu_shares: CpuShares,
    /// What its last stack walk found.
    last: Option<LastLook>,
}

impl Watched {
    /// A look at `now_ns`: the time since the thread's previous look (or
    /// its arrival), which this look stands for.
    fn look_at(&mut self, now_ns: u64) -> u64 {
        let gap_ns = now_ns.saturating_sub(self.seen_ns);
        self.seen_ns = now_ns;
        gap_ns
    }
}

/// A thread's last walked sample.
#[derive(Clone, Copy)]
struct LastLook {
    /// Its CPU clock then, in ns (-1: unknown, never the same as now).
    cpu_ns: i64,
    /// The state it was counted in (`states::counted`).
    state: State,
    trace: u32,
    /// Whether the walk found no Java frame.
    no_java_frames: bool,
}

/// A stack a tick walked.
struct Walked {
    /// Its place in the roster when looked at (a thread that ended since
    /// may have moved another there) and its serial.
    index: usize,
    serial: u32,
    /// The virtual thread walked instead of its carrier (a local
    /// reference of this tick), whose sample it is.
    virtual_thread: Option<jni::jobject>,
    /// The time since its last look.
    gap_ns: u64,
    /// Its last look, and the part of the gap spent as it saw.
    previous: Option<(LastLook, u64)>,
    cpu_ns: i64,
    state: State,
    frames: Vec<RawFrame>,
}

/// The live threads and the rotation over them.
#[derive(Default)]
struct Roster {
    rotation: Rotation,
    threads: Vec<Watched>,
    /// Whether a thread that arrives is sampled.
    new_threads_unsampled: bool,
}

/// State of cpu=wall.
pub struct WallSamples {
    interval: Duration,
    /// The sampler's clock: each look counts the time since the last.
    epoch: Instant,
    roster: Mutex<Roster>,
    /// Time per (trace, state) since the last dump, in ns (in samples of
    /// the interval when written, `in_samples`).
    counts: Mutex<HashMap<(u32, State), u64>>,
    stop: AtomicBool,
    wake: (Sender<()>, Receiver<()>),
    sampler: Mutex<Option<JoinHandle<()>>>,
    /// What the sampler did, for verbose=y's line at the end.
    effort: Effort,
    /// The virtual thread each carrier runs, when the JVM has virtual
    /// threads (JDK 21+; set up at start).
    mounted: mounted::Mounted,
    /// Whether `mounted` is kept (the capability and the events are on).
    follows_virtual_threads: AtomicBool,
}

/// The sampler's own counts.
#[derive(Default)]
struct Effort {
    ticks: AtomicU64,
    looks: AtomicU64,
    walks: AtomicU64,
    most_threads: AtomicU64,
    /// The sampler thread's CPU time when it ended, in ns.
    cpu_ns: AtomicU64,
}

impl Effort {
    /// `HPROF: cpu=wall: 812 ticks ...`, what the sampler cost.
    fn line(&self) -> String {
        let ticks = self.ticks.load(Ordering::Relaxed);
        let cpu_ns = self.cpu_ns.load(Ordering::Relaxed);
        format!(
            "HPROF: cpu=wall: {ticks} ticks over at most {} threads, {} looks, {} stacks \
             walked; the sampler used {} ms of CPU ({} us a tick)",
            self.most_threads.load(Ordering::Relaxed),
            self.looks.load(Ordering::Relaxed),
            self.walks.load(Ordering::Relaxed),
            cpu_ns / 1_000_000,
            cpu_ns / 1_000 / ticks.max(1)
        )
    }
}

impl WallSamples {
    pub fn new(interval_ms: u32) -> Self {
        Self {
            interval: Duration::from_millis(u64::from(interval_ms.max(1))),
            epoch: Instant::now(),
            roster: Mutex::new(Roster::default()),
            counts: Mutex::new(HashMap::new()),
            stop: AtomicBool::new(false),
            wake: bounded(1),
            sampler: Mutex::new(None),
            effort: Effort::default(),
            mounted: mounted::Mounted::default(),
            follows_virtual_threads: AtomicBool::new(false),
        }
    }

    fn watch(
        &self,
        jni: Option<&JniEnv>,
        thread: LocalThread<'_>,
        serial: u32,
        tid: Option<libc::pid_t>,
    ) {
        let Some(jni) = jni else {
            return;
        };
        let seen_ns = self.now_ns();
        let mut roster = self.roster.lock();
        let sampled = !roster.new_threads_unsampled;
        roster.threads.push(Watched {
            thread: GlobalRef::new(jni, thread),
            serial,
            tid,
            sampled,
            seen_ns,
            cpu_shares: CpuShares::default(),
            last: None,
        });
    }

    /// Starts the sampler thread: a tick every interval, on a fixed
    /// schedule; a tick that comes late is not repeated, its looks weigh
    /// the time they missed instead (`rotation.rs`).
    fn start_sampler(&'static self, vm: VmHandle, run: &'static Run) {
        let spawned = std::thread::Builder::new()
            .name(WALL_SAMPLER_THREAD_NAME.into())
            .spawn(move || {
                mark_agent_thread();
                let Some(jni) = vm.attach_daemon(WALL_SAMPLER_THREAD_NAME) else {
                    eprintln!("HPROF ERROR: cannot attach the wall sampling thread; no samples");
                    return;
                };
                let mut next = Instant::now() + self.interval;
                loop {
                    let wait = next.saturating_duration_since(Instant::now());
                    if let Err(RecvTimeoutError::Disconnected) | Ok(()) =
                        self.wake.1.recv_timeout(wait)
                    {
                        break;
                    }
                    if self.stop.load(Ordering::Acquire) {
                        break;
                    }
                    // Local references made during a tick go with its frame.
                    // A panic ends the sampling, said once; the thread still
                    // detaches from the JVM.
                    if let Ok(frame) = jni.push_local_frame(16) {
                        let ticked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                            self.tick(run, &jni)
                        }));
                        drop(frame);
                        if ticked.is_err() {
                            eprintln!(
                                "HPROF ERROR: internal error in the wall sampling thread; \
                                 sampling stops, the program continues"
                            );
                            break;
                        }
                    }
                    next += self.interval;
                    let now = Instant::now();
                    if next < now {
                        next = now + self.interval;
                    }
                }
                let cpu_ns = crate::sys::thread_cpu_ns();
                self.effort.cpu_ns.store(cpu_ns, Ordering::Relaxed);
                vm.detach();
            });
        match spawned {
            Ok(handle) => *self.sampler.lock() = Some(handle),
            Err(error) => eprintln!(
                "HPROF ERROR: cannot start the wall sampling thread ({error}); no samples"
            ),
        }
    }

    /// Nanoseconds of the sampler's clock.
    fn now_ns(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64
    }

    fn stop_sampler(&self) {
        self.stop.store(true, Ordering::Release);
        let _ = self.wake.0.try_send(());
        if let Some(handle) = self.sampler.lock().take() {
            let _ = handle.join();
        }
    }

    /// One tick: look at this tick's threads, count each look. The roster
    /// is not held while the model is locked (a ThreadStart holds the model
    /// when it adds its thread to the roster).
    fn tick(&self, run: &Run, jni: &JniEnv) {
        if !run.lifecycle.accepting_events() {
            return;
        }
        let env = run.jvmti.env();
        let (again, walked) = self.look(run, &env, jni);
        let mut counted: Vec<(usize, u32, LastLook)> = Vec::with_capacity(walked.len());
        {
            let mut model = run.model.lock();
            let mut counts = self.counts.lock();
            for walk in walked {
                let owner = match walk.virtual_thread {
                    // SAFETY: a local reference made this tick, on this
                    // thread; the tick's local frame deletes it after.
                    Some(raw) => {
                        let thread: LocalThread<'_> = unsafe { jvm::Local::new(raw) };
                        threads::thread_serial(run, &env, &mut model, thread, &[])
                    }
                    None => walk.serial,
                };
                let trace = match walk.frames.is_empty() {
                    true => run.traces.intern_no_java_frames(&mut model, owner),
                    false => run.traces.intern(&env, &mut model, &walk.frames, owner),
                };
                let now = (trace, walk.state);
                let before_ns = match walk.previous {
                    Some((last, ns)) if (last.trace, last.state) != now => {
                        credit(&mut counts, (last.trace, last.state), ns);
                        ns
                    }
                    _ => 0,
                };
                credit(&mut counts, now, walk.gap_ns.saturating_sub(before_ns));
                if walk.virtual_thread.is_some() {
                    continue; // (the carrier's own stack is looked at afresh)
                }
                let last = LastLook {
                    cpu_ns: walk.cpu_ns,
                    state: walk.state,
                    trace,
                    no_java_frames: walk.frames.is_empty(),
                };
                counted.push((walk.index, walk.serial, last));
            }
            for (trace, state, gap_ns) in again {
                credit(&mut counts, (trace, state), gap_ns);
            }
        }
        // Each thread is where the look found it unless a thread ended
        // meanwhile: its place is then searched for.
        let mut roster = self.roster.lock();
        for (index, serial, last) in counted {
            let threads = &mut roster.threads;
            let at = match threads.get(index) {
                Some(w) if w.serial == serial => Some(index),
                _ => threads.iter().position(|w| w.serial == serial),
            };
            if let Some(at) = at {
                threads[at].last = Some(last);
            }
        }
    }

    /// The looks of one tick, under the roster's lock: the samples that
    /// repeat a thread's last trace, and the stacks walked for the others.
    fn look(&self, run: &Run, env: &Jvmti, jni: &JniEnv) -> (Vec<(u32, State, u64)>, Vec<Walked>) {
        let mut roster = self.roster.lock();
        let roster = &mut *roster;
        let interval_ns = self.interval.as_nanos() as u64;
        let looks = roster
            .rotation
            .next_tick(roster.threads.len(), LOOKS_PER_TICK);
        let effort = &self.effort;
        effort.ticks.fetch_add(1, Ordering::Relaxed);
        effort
            .looks
            .fetch_add(looks.len() as u64, Ordering::Relaxed);
        effort
            .most_threads
            .fetch_max(roster.threads.len() as u64, Ordering::Relaxed);
        let mut again: Vec<(u32, State, u64)> = Vec::new();
        // (place, the virtual thread it runs)
        let mut to_walk: Vec<(usize, Option<jni::jobject>)> = Vec::new();
        let follows_virtual = self.follows_virtual_threads.load(Ordering::Relaxed);
        for index in looks {
            let watched = &mut roster.threads[index];
            if !watched.sampled {
                watched.look_at(self.now_ns());
                continue; // (its time passes uncounted)
            }
            // A carrier running a virtual thread: the virtual thread's
            // stack and state are the sample (its own CPU clock is not).
            let mounted = watched
                .tid
                .filter(|_| follows_virtual)
                .and_then(|tid| self.mounted.on(jni, tid));
            if let Some(virtual_thread) = mounted {
                to_walk.push((index, Some(virtual_thread)));
                continue;
            }
            let thread = watched.thread.local();
            let Some(bits) = jvm::thread_state(env, thread).filter(|&b| is_alive(b)) else {
                continue;
            };
            let reported = State::of(bits);
            let cpu_ns = jvm::thread_cpu_time(env, thread).unwrap_or(-1);
            match watched.last {
                Some(last)
                    if cpu_ns >= 0
                        && last.cpu_ns == cpu_ns
                        && last.state == counted(reported, last.no_java_frames, true) =>
                {
                    let gap_ns = watched.look_at(self.now_ns());
                    watched.cpu_shares.learn(last.state, gap_ns, 0, interval_ns);
                    again.push((last.trace, last.state, gap_ns));
                }
                _ => to_walk.push((index, None)),
            }
        }
        if to_walk.is_empty() {
            return (again, Vec::new());
        }
        let threads: Vec<LocalThread<'_>> = to_walk
            .iter()
            .map(|&(index, virtual_thread)| match virtual_thread {
                // SAFETY: a live local reference made this tick (`on`).
                Some(raw) => unsafe { jvm::Local::new(raw) },
                None => roster.threads[index].thread.local(),
            })
            .collect();
        let stacks = jvm::stacks_of(env, &threads, run.traces.depth);
        effort
            .walks
            .fetch_add(threads.len() as u64, Ordering::Relaxed);
        // (The references borrow the roster, which the looks now update.)
        drop(threads);
        let mut walked = Vec::with_capacity(stacks.len());
        for (&(index, virtual_thread), stack) in to_walk.iter().zip(stacks) {
            if !is_alive(stack.state) {
                continue;
            }
            let reported = State::of(stack.state);
            let watched = &mut roster.threads[index];
            // The walk saw the thread at a safepoint that ended about when
            // it returned: the look's time and CPU clock are read after it,
            // so that a running thread that changed state while the JVM
            // came to the safepoint has that time counted as running.
            let (cpu_ns, previous) = match virtual_thread {
                Some(_) => (-1, None),
                None => {
                    let thread = watched.thread.local();
                    (
                        jvm::thread_cpu_time(env, thread).unwrap_or(-1),
                        watched.last,
                    )
                }
            };
            let gap_ns = watched.look_at(self.now_ns());
            let cpu_still = previous.is_some_and(|last| cpu_ns >= 0 && last.cpu_ns == cpu_ns);
            let state = counted(reported, stack.frames.is_empty(), cpu_still);
            let previous = previous.map(|last| {
                let cpu_used = (cpu_ns >= 0 && last.cpu_ns >= 0)
                    .then(|| cpu_ns.saturating_sub(last.cpu_ns).max(0) as u64);
                let before_ns =
                    watched
                        .cpu_shares
                        .observe(last.state, state, gap_ns, cpu_used, interval_ns);
                (last, before_ns)
            });
            walked.push(Walked {
                index,
                serial: watched.serial,
                virtual_thread,
                gap_ns,
                previous,
                cpu_ns,
                state,
                frames: stack.frames,
            });
        }
        (again, walked)
    }

    /// Lets go of every thread (the profile stops).
    fn forget_threads(&self, jni: Option<&JniEnv>) {
        let gone: Vec<Watched> = self.roster.lock().threads.drain(..).collect();
        if let Some(jni) = jni {
            for watched in gone {
                // SAFETY: taken out of the roster under its lock, after the
                // sampler stopped; no copy of the reference is kept.
                unsafe { jvm::delete_global(jni, watched.thread) };
            }
        }
    }

    /// The section of `counts`, rows under `cutoff` left out.
    fn section(
        &self,
        run: &Run,
        model: &mut Model,
        counted: &HashMap<(u32, State), u64>,
        cutoff: f64,
    ) -> Vec<u8> {
        let counts = in_samples(counted, self.interval.as_nanos() as u64);
        let mut per_trace: HashMap<u32, u64> = HashMap::new();
        let mut by_state: HashMap<u32, WallStateRow> = HashMap::new();
        for (&(trace, state), &count) in &counts {
            *per_trace.entry(trace).or_default() += count;
            let row = by_state.entry(trace).or_insert(WallStateRow {
                trace_serial: trace,
                counts: [0; 5],
            });
            row.counts[state.column()] += count;
        }
        let samples = samples_from(model, &per_trace);
        run.emitter
            .wall_samples(model, &samples, &by_state, cutoff, ctime_now())
    }
}

/// What a `net=` front end can ask of cpu=wall.
impl WallSamples {
    /// The section so far, with `cutoff`; the counts go on.
    pub fn requested_section(&self, run: &Run, model: &mut Model, cutoff: f64) -> Vec<u8> {
        let counts = self.counts.lock().clone();
        self.section(run, model, &counts, cutoff)
    }

    /// The counts start over.
    pub fn clear(&self) {
        self.counts.lock().clear();
    }

    /// Samples of the thread `serial` (or of every thread: `None`, and
    /// the threads that start from now on) count from now on, or no longer.
    pub fn set_sampling(&self, serial: Option<u32>, on: bool) {
        let mut roster = self.roster.lock();
        if serial.is_none() {
            roster.new_threads_unsampled = !on;
        }
        for watched in &mut roster.threads {
            if serial.is_none_or(|s| s == watched.serial) {
                watched.sampled = on;
            }
        }
    }
}

impl Engine for WallSamples {
    /// Each look reads the thread's CPU clock.
    fn add_capabilities(
        &self,
        caps: &mut jvmti::jvmtiCapabilities,
        potential: &jvmti::jvmtiCapabilities,
    ) {
        caps.set_can_get_thread_cpu_time(potential.can_get_thread_cpu_time());
        // (JVMTI takes a virtual thread's reference only with it: JDK 21+.)
        if potential.can_support_virtual_threads() {
            caps.set_can_support_virtual_threads(true);
            self.follows_virtual_threads.store(true, Ordering::Relaxed);
        }
    }

    /// The mount events go on (JDK 21+), then the sampler starts.
    fn start(&'static self, run: &'static Run, _jni: Option<&JniEnv>) {
        if self.follows_virtual_threads.load(Ordering::Relaxed) && !self.mounted.enable(run) {
            self.follows_virtual_threads.store(false, Ordering::Relaxed);
        }
        self.start_sampler(run.vm, run);
    }

    fn thread_started(
        &self,
        _run: &Run,
        jni: Option<&JniEnv>,
        thread: LocalThread<'_>,
        serial: u32,
    ) {
        // (On the new thread itself.)
        self.watch(jni, thread, serial, Some(current_tid()));
    }

    /// A thread running at the attach: its kernel id read out of HotSpot,
    /// when it can be (`jvm/native_thread.rs`).
    fn thread_running_at_attach(
        &self,
        run: &Run,
        jni: Option<&JniEnv>,
        thread: LocalThread<'_>,
        serial: u32,
    ) {
        let tid = jni.and_then(|jni| {
            let natives = native_thread::native_threads(jni, &run.jvmti.env()).ok()?;
            natives.of(jni, thread).map(|n| n.tid)
        });
        self.watch(jni, thread, serial, tid);
    }

    /// The thread leaves the roster (the sampler holds the roster's lock
    /// for a whole tick, so its reference is never in use when deleted).
    fn thread_ended(&self, _run: &Run, jni: Option<&JniEnv>, serial: Option<u32>) {
        let (Some(serial), Some(jni)) = (serial, jni) else {
            return;
        };
        let mut roster = self.roster.lock();
        if let Some(index) = roster.threads.iter().position(|w| w.serial == serial) {
            let gone = roster.threads.swap_remove(index);
            // SAFETY: removed from the roster under its lock; no copy of
            // the reference is kept anywhere else.
            unsafe { jvm::delete_global(jni, gone.thread) };
        }
    }

    /// The sampler stops; verbose=y says what it cost.
    fn stop(&self, run: &Run, _jni: Option<&JniEnv>) {
        self.stop_sampler();
        if run.options.verbose {
            eprintln!("{}", self.effort.line());
        }
    }

    fn detach(&self, _run: &Run, jni: Option<&JniEnv>) {
        self.stop_sampler();
        self.forget_threads(jni);
    }

    fn dump_announcement(&self, _run: &Run) -> &'static str {
        " wall-clock samples of every thread ..."
    }

    fn dump_section(&self, run: &Run, model: &mut Model, out: &mut Vec<u8>) {
        // Counts start over after each dump, as CPU SAMPLES' do.
        let counts = std::mem::take(&mut *self.counts.lock());
        out.extend(self.section(run, model, &counts, run.options.cutoff));
    }
}
