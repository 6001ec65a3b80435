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

mod rotation;
mod states;

use crate::agent::jvm::{self, GlobalRef, LocalThread, RawFrame, VmHandle, kind};
use crate::agent::run::engine::{Engine, Run};
use crate::agent::run::threads::mark_agent_thread;
use crate::emit::clock::ctime_now;
use crate::emit::cpu::samples_from;
use crate::format::wall_states::WallStateRow;
use crate::model::Model;
use crossbeam_channel::{Receiver, RecvTimeoutError, Sender, bounded};
use jvmti_bindings::prelude::*;
use parking_lot::Mutex;
use rotation::{Rotation, Turn};
use states::{State, is_alive};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
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
    turn: Turn,
    /// What its last stack walk found.
    last: Option<LastLook>,
}

/// A thread's last walked sample.
#[derive(Clone, Copy)]
struct LastLook {
    /// Its CPU clock then, in ns (-1: unknown, never the same as now).
    cpu_ns: i64,
    state: State,
    trace: u32,
}

/// A stack a tick walked.
struct Walked {
    serial: u32,
    weight: u64,
    cpu_ns: i64,
    state: State,
    frames: Vec<RawFrame>,
}

/// The live threads and the rotation over them.
#[derive(Default)]
struct Roster {
    rotation: Rotation,
    threads: Vec<Watched>,
}

fn turn_of(watched: &mut Watched) -> &mut Turn {
    &mut watched.turn
}

/// State of cpu=wall.
pub struct WallSamples {
    interval: Duration,
    /// The sampler's clock: looks are weighed by the time between them.
    epoch: Instant,
    roster: Mutex<Roster>,
    /// Samples per (trace, state) since the last dump.
    counts: Mutex<HashMap<(u32, State), u64>>,
    stop: AtomicBool,
    wake: (Sender<()>, Receiver<()>),
    sampler: Mutex<Option<JoinHandle<()>>>,
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
        }
    }

    fn watch(&self, jni: Option<&JniEnv>, thread: LocalThread<'_>, serial: u32) {
        let Some(jni) = jni else {
            return;
        };
        let turn = Rotation::arrival(self.now_ns());
        let mut roster = self.roster.lock();
        roster.threads.push(Watched {
            thread: GlobalRef::new(jni, thread),
            serial,
            turn,
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
                    if let Ok(frame) = jni.push_local_frame(16) {
                        self.tick(run, &jni);
                        drop(frame);
                    }
                    next += self.interval;
                    let now = Instant::now();
                    if next < now {
                        next = now + self.interval;
                    }
                }
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
    fn tick(&self, run: &Run, _jni: &JniEnv) {
        if !run.lifecycle.accepting_events() {
            return;
        }
        let env = run.jvmti.env();
        let (again, walked) = self.look(run, &env);
        let mut counted: Vec<(u32, LastLook)> = Vec::with_capacity(walked.len());
        {
            let mut model = run.model.lock();
            let mut counts = self.counts.lock();
            for walk in walked {
                let trace = match walk.frames.is_empty() {
                    true => run.traces.intern_no_java_frames(&mut model, walk.serial),
                    false => run
                        .traces
                        .intern(&env, &mut model, &walk.frames, walk.serial),
                };
                if walk.weight > 0 {
                    *counts.entry((trace, walk.state)).or_default() += walk.weight;
                }
                let last = LastLook {
                    cpu_ns: walk.cpu_ns,
                    state: walk.state,
                    trace,
                };
                counted.push((walk.serial, last));
            }
            for (trace, state, weight) in again.into_iter().filter(|a| a.2 > 0) {
                *counts.entry((trace, state)).or_default() += weight;
            }
        }
        let mut roster = self.roster.lock();
        for (serial, last) in counted {
            if let Some(watched) = roster.threads.iter_mut().find(|w| w.serial == serial) {
                watched.last = Some(last);
            }
        }
    }

    /// The looks of one tick, under the roster's lock: the samples that
    /// repeat a thread's last trace, and the stacks walked for the others.
    fn look(&self, run: &Run, env: &Jvmti) -> (Vec<(u32, State, u64)>, Vec<Walked>) {
        let mut roster = self.roster.lock();
        let roster = &mut *roster;
        let interval_ns = self.interval.as_nanos() as u64;
        let now_ns = self.now_ns();
        let looks = roster.rotation.next_tick(
            &mut roster.threads,
            turn_of,
            LOOKS_PER_TICK,
            now_ns,
            interval_ns,
        );
        let mut again: Vec<(u32, State, u64)> = Vec::new();
        let mut to_walk: Vec<(usize, u64, i64)> = Vec::new();
        for (index, weight) in looks {
            let watched = &roster.threads[index];
            let thread = watched.thread.local();
            let Some(bits) = jvm::thread_state(env, thread).filter(|&b| is_alive(b)) else {
                continue;
            };
            let state = State::of(bits);
            let cpu_ns = jvm::thread_cpu_time(env, thread).unwrap_or(-1);
            match watched.last {
                Some(last) if cpu_ns >= 0 && last.cpu_ns == cpu_ns && last.state == state => {
                    again.push((last.trace, state, weight));
                }
                _ => to_walk.push((index, weight, cpu_ns)),
            }
        }
        if to_walk.is_empty() {
            return (again, Vec::new());
        }
        let threads: Vec<LocalThread<'_>> = to_walk
            .iter()
            .map(|&(index, _, _)| roster.threads[index].thread.local())
            .collect();
        let stacks = jvm::stacks_of(env, &threads, run.traces.depth);
        let walked = to_walk
            .iter()
            .zip(stacks)
            .filter(|(_, stack)| is_alive(stack.state))
            .map(|(&(index, weight, cpu_ns), stack)| Walked {
                serial: roster.threads[index].serial,
                weight,
                cpu_ns,
                state: State::of(stack.state),
                frames: stack.frames,
            })
            .collect();
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
        run: &Run,
        model: &mut Model,
        counts: &HashMap<(u32, State), u64>,
        cutoff: f64,
    ) -> Vec<u8> {
        let mut per_trace: HashMap<u32, u64> = HashMap::new();
        let mut by_state: HashMap<u32, WallStateRow> = HashMap::new();
        for (&(trace, state), &count) in counts {
            *per_trace.entry(trace).or_default() += count;
            let row = by_state.entry(trace).or_insert(WallStateRow {
                trace_serial: trace,
                counts: [0; 5],
            });
            row.counts[state.column()] += count;
        }
        let samples = samples_from(model, &per_trace);
        let states: Vec<WallStateRow> = by_state.into_values().collect();
        run.emitter
            .wall_samples(model, &samples, &states, cutoff, ctime_now())
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
    }

    fn start(&'static self, run: &'static Run, _jni: Option<&JniEnv>) {
        self.start_sampler(run.vm, run);
    }

    fn thread_started(
        &self,
        _run: &Run,
        jni: Option<&JniEnv>,
        thread: LocalThread<'_>,
        serial: u32,
    ) {
        self.watch(jni, thread, serial);
    }

    fn thread_running_at_attach(
        &self,
        _run: &Run,
        jni: Option<&JniEnv>,
        thread: LocalThread<'_>,
        serial: u32,
    ) {
        self.watch(jni, thread, serial);
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

    fn stop(&self, _run: &Run, _jni: Option<&JniEnv>) {
        self.stop_sampler();
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
        out.extend(Self::section(run, model, &counts, run.options.cutoff));
    }
}
