//! The monitor=y engine: time threads spend waiting to enter `synchronized`
//! blocks and methods (MonitorContendedEnter to MonitorContendedEntered),
//! per (trace at contended enter, monitor class); `Object.wait` calls as
//! WAIT: / WAITED: lines as they happen; and at each dump MONITOR DUMP
//! (every thread's state and every owned monitor), MONITOR TIME and, as
//! hprof-rs's addition, MONITOR HOLDERS (whose stack held each contended
//! monitor when the contention began).
//!
//! Per-thread state (when the current contention or wait began) is found
//! through the thread's serial, kept in its JVMTI thread-local slot: that
//! slot belongs to the Java thread, virtual ones included, so a virtual
//! thread that blocks on one carrier and resumes on another (JDK 24+,
//! where `synchronized` unmounts instead of pinning) still finds its own
//! state, which an OS-thread-local would not.

pub mod lock_sites;
pub mod lock_waits;
pub mod rows;
pub mod status;
pub mod table;

use crate::agent::jvm::{self, LocalObject, LocalThread, OwnedLocal, kind};
use crate::agent::run::classes::intern_class;
use crate::agent::run::engine::{Engine, Run};
use crate::agent::run::threads;
use crate::emit::clock::ctime_now;
use crate::emit::monitors::{Contention, Holder, monitor_time};
use crate::format::ascii::{self, MonitorInfo, MonitorThread, Section};
use crate::model::Model;
use crate::model::threads::UNKNOWN_THREAD_SERIAL;
use crate::model::traces::EMPTY_TRACE_SERIAL;
use jvmti_bindings::prelude::*;
use parking_lot::Mutex;
use rows::{RowCell, Rows};
use status::status;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Instant;
use table::Table;

/// The agent's own threads are named so; they are left out of MONITOR DUMP,
/// as their events are left out everywhere else.
const AGENT_THREAD_NAME_PREFIX: &str = "HPROF ";

/// What one thread is waiting for now.
#[derive(Default)]
struct ThreadCell {
    /// Clock reading at its contended enter; 0 when not contending.
    contended_since: AtomicU64,
    /// Its contention's row number + 1; 0 for none.
    row: AtomicU32,
    /// Clock reading at its MonitorWait; 0 when not waiting.
    wait_since: AtomicU64,
}

/// State of monitor=y.
pub struct Monitors {
    /// Clock readings are nanoseconds since this, plus 1 (0 means "none").
    epoch: Instant,
    /// By thread serial - 200001.
    threads: Table<ThreadCell>,
    /// Time and count, by row number.
    cells: Table<RowCell>,
    rows: Mutex<Rows>,
}

/// How many times MONITOR DUMP looks at the threads and monitors to get a
/// snapshot where both agree.
const SNAPSHOT_ATTEMPTS: u32 = 3;

/// Each monitor some thread owns, with its class signature and usage.
fn owned_monitors<'j>(
    jni: &'j JniEnv,
    env: &Jvmti,
    threads: &[LocalThread<'_>],
) -> Vec<(String, jvm::MonitorUsage<'j>)> {
    threads
        .iter()
        .flat_map(|&thread| jvm::owned_monitors(jni, env, thread))
        .filter_map(|monitor| {
            let signature = class_signature_of(jni, env, monitor.get())?;
            let usage = jvm::monitor_usage(jni, env, monitor.get())?;
            Some((signature, usage))
        })
        .collect()
}

/// Whether every thread the monitors list as waiting to enter (and not in
/// `Object.wait`) was still blocked entering a monitor when the states
/// were taken.
fn agrees(
    jni: &JniEnv,
    threads: &[LocalThread<'_>],
    stacks: &[jvm::ThreadStack],
    owned: &[(String, jvm::MonitorUsage<'_>)],
) -> bool {
    let blocked = |waiter: LocalThread<'_>| {
        threads
            .iter()
            .zip(stacks)
            .find(|(t, _)| jvm::same_object(jni, **t, waiter))
            .is_none_or(|(_, stack)| {
                stack.state & jvmti::JVMTI_THREAD_STATE_BLOCKED_ON_MONITOR_ENTER != 0
            })
    };
    owned
        .iter()
        .all(|(_, usage)| entering(jni, usage).all(blocked))
}

/// The threads waiting to enter a monitor, without those in `Object.wait`:
/// up to JDK 22, JVMTI lists the threads in Object.wait among those waiting
/// to enter too; MONITOR DUMP lists them once, as waiting to be notified.
fn entering<'u>(
    jni: &'u JniEnv,
    usage: &'u jvm::MonitorUsage<'_>,
) -> impl Iterator<Item = LocalThread<'u>> {
    usage
        .waiting_to_enter
        .iter()
        .map(OwnedLocal::get)
        .filter(|&t| {
            !usage
                .waiting_to_be_notified
                .iter()
                .any(|n| jvm::same_object(jni, t, n.get()))
        })
}

/// The index of a thread serial in [`Monitors::threads`].
fn thread_index(serial: u32) -> Option<usize> {
    serial
        .checked_sub(UNKNOWN_THREAD_SERIAL + 1)
        .map(|index| index as usize)
}

/// The JNI environment of an event that counts: between VM init and VM
/// death, on a thread of the program (not the agent's own).
fn counted<'j>(run: &Run, jni: Option<&'j JniEnv>) -> Option<&'j JniEnv> {
    (run.lifecycle.accepting_events() && !threads::is_agent_thread())
        .then_some(jni)
        .flatten()
}

/// The raw JVM signature of `object`'s class (`Ljava/lang/Object;`).
fn class_signature_of(jni: &JniEnv, env: &Jvmti, object: LocalObject<'_>) -> Option<String> {
    let class = jvm::object_class(jni, object)?;
    jvm::class_signature(env, class.get())
}

impl Default for Monitors {
    fn default() -> Self {
        Self::new()
    }
}

impl Monitors {
    pub fn new() -> Self {
        Self {
            epoch: Instant::now(),
            threads: Table::new(),
            cells: Table::new(),
            rows: Mutex::default(),
        }
    }

    /// The clock: nanoseconds since the engine began, plus 1.
    #[inline]
    fn now(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64 + 1
    }

    /// The cell of `thread` (registered now if new), made if new.
    fn thread_cell(
        &self,
        run: &Run,
        env: &Jvmti,
        thread: LocalThread<'_>,
    ) -> (u32, Option<&ThreadCell>) {
        let serial = threads::thread_serial(run, env, &mut run.model.lock(), thread, &[]);
        let cell = thread_index(serial).and_then(|i| self.threads.get_or_make(i));
        (serial, cell)
    }

    /// The cell of `thread` (null: the current thread) if it has one; no
    /// allocation, no lock of the agent's.
    #[inline]
    fn existing_thread_cell(&self, env: &Jvmti, thread: LocalThread<'_>) -> Option<&ThreadCell> {
        let serial = threads::serial_of(env, thread);
        thread_index(serial).and_then(|i| self.threads.get(i))
    }

    /// MonitorContendedEnter, on the thread about to block: its trace, the
    /// monitor's class and the clock; for the first contentions of a row,
    /// the owner's trace too.
    pub fn contended_enter(
        &self,
        run: &Run,
        jni: Option<&JniEnv>,
        thread: LocalThread<'_>,
        object: LocalObject<'_>,
    ) {
        let since = self.now();
        let Some(jni) = counted(run, jni) else {
            return;
        };
        let env = run.jvmti.env();
        let frames = jvm::stack_frames(&env, thread, run.traces.depth);
        let Some(class) = jvm::object_class(jni, object) else {
            return;
        };
        let mut guard = run.model.lock();
        let model = &mut *guard;
        let serial = threads::thread_serial(run, &env, model, thread, &[]);
        let class = intern_class(
            &env,
            &mut model.classes,
            &model.objects,
            class.get(),
            EMPTY_TRACE_SERIAL,
        );
        let trace = run.traces.intern(&env, model, &frames, serial);
        drop(guard);
        let Some(class) = class else {
            return;
        };
        let (row, sample_holder) = self.rows.lock().enter(trace, class.serial);
        let thread_cell = thread_index(serial).and_then(|i| self.threads.get_or_make(i));
        let (Some(thread_cell), Some(_)) = (thread_cell, self.cells.get_or_make(row as usize))
        else {
            return;
        };
        thread_cell.row.store(row + 1, Ordering::Release);
        thread_cell.contended_since.store(since, Ordering::Release);
        if sample_holder {
            self.sample_holder(run, jni, &env, object, row);
        }
    }

    /// Who owns `object`'s monitor, and where: counted for `row`.
    fn sample_holder(
        &self,
        run: &Run,
        jni: &JniEnv,
        env: &Jvmti,
        object: LocalObject<'_>,
        row: u32,
    ) {
        let Some(usage) = jvm::monitor_usage(jni, env, object) else {
            return;
        };
        let owner = usage.owner.get();
        if owner.is_null() {
            // Released already: the sample found no holder.
            return;
        }
        let frames = jvm::stack_frames(env, owner, run.traces.depth);
        let mut model = run.model.lock();
        let owner_serial = threads::thread_serial(run, env, &mut model, owner, &[]);
        let trace = run.traces.intern(env, &mut model, &frames, owner_serial);
        drop(model);
        self.rows.lock().holder_seen(row, trace);
    }

    /// MonitorContendedEntered, posted on the thread that got the monitor,
    /// while it holds it (so it lengthens the critical section): a clock
    /// read and two atomic adds to the row's cell; no allocation, no lock.
    /// Its slot is asked for as the current thread's: HotSpot then reads it
    /// without a transition into the VM, where naming a virtual thread
    /// takes a lock that every virtual thread's mounting shares.
    #[inline]
    pub fn contended_entered(&self, run: &Run) {
        let now = self.now();
        let Some(cell) = self.existing_thread_cell(&run.jvmti.env(), LocalThread::null()) else {
            return;
        };
        let since = cell.contended_since.swap(0, Ordering::AcqRel);
        let row = cell.row.load(Ordering::Acquire);
        if since == 0 || row == 0 {
            return;
        }
        if let Some(counts) = self.cells.get(row as usize - 1) {
            counts
                .time_ns
                .fetch_add(now.saturating_sub(since), Ordering::Relaxed);
            counts.count.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// MonitorWait: `WAIT: MONITOR <class>, timeout=<ms>, thread <serial>`.
    pub fn wait(
        &self,
        run: &Run,
        jni: Option<&JniEnv>,
        thread: LocalThread<'_>,
        object: LocalObject<'_>,
        timeout_ms: i64,
    ) {
        let since = self.now();
        let Some(jni) = counted(run, jni) else {
            return;
        };
        let env = run.jvmti.env();
        let Some(signature) = class_signature_of(jni, &env, object) else {
            return;
        };
        let (thread_serial, Some(cell)) = self.thread_cell(run, &env, thread) else {
            return;
        };
        cell.wait_since.store(since, Ordering::Release);
        write_line(
            run,
            &Section::MonitorWait {
                signature,
                timeout_ms,
                thread_serial,
            },
        );
    }

    /// MonitorWaited: `WAITED: MONITOR <class>, time_waited=<ms>, thread
    /// <serial>`; as in HPROF, a WAITED without its WAIT is not written.
    pub fn waited(
        &self,
        run: &Run,
        jni: Option<&JniEnv>,
        thread: LocalThread<'_>,
        object: LocalObject<'_>,
    ) {
        let now = self.now();
        let Some(jni) = counted(run, jni) else {
            return;
        };
        let env = run.jvmti.env();
        let Some(cell) = self.existing_thread_cell(&env, thread) else {
            return;
        };
        let since = cell.wait_since.swap(0, Ordering::AcqRel);
        if since == 0 {
            return;
        }
        let Some(signature) = class_signature_of(jni, &env, object) else {
            return;
        };
        let waited_ms = (now.saturating_sub(since) / 1_000_000) as i64;
        let thread_serial = threads::serial_of(&env, thread);
        write_line(
            run,
            &Section::MonitorWaited {
                signature,
                waited_ms,
                thread_serial,
            },
        );
    }

    /// MONITOR DUMP: each live thread with its current trace and status,
    /// then each monitor a thread owns, with who waits for it; the traces
    /// it names are printed first.
    fn monitor_dump(&self, run: &Run, jni: &JniEnv, env: &Jvmti, out: &mut Vec<u8>) {
        let live: Vec<OwnedLocal<'_, kind::Thread>> = jvm::all_threads(jni, env)
            .into_iter()
            .filter(|t| {
                !jvm::thread_facts(env, t.get())
                    .name
                    .starts_with(AGENT_THREAD_NAME_PREFIX)
            })
            .collect();
        let locals: Vec<LocalThread<'_>> = live.iter().map(OwnedLocal::get).collect();
        // A snapshot: the threads are paused while their monitors and
        // states are looked at (one JVMTI call per thread, so without the
        // pause a monitor handed over between two calls is missed or shows a
        // waiter that is already running). A paused thread may hold any of
        // the agent's locks, so only JVMTI and JNI are called until they
        // resume, before the model lock. Should the pause fail, a snapshot
        // that disagrees is taken again, a bounded number of times (the last
        // one is written as it is).
        let (mut stacks, owned, paused_by_us) = {
            let paused = jvm::pause(jni, env, &locals);
            let mut attempt = 1;
            loop {
                let owned = owned_monitors(jni, env, &locals);
                let stacks = jvm::stacks_of(env, &locals, run.traces.depth);
                if attempt == SNAPSHOT_ATTEMPTS || agrees(jni, &locals, &stacks, &owned) {
                    break (stacks, owned, paused.by_us.clone());
                }
                attempt += 1;
            }
        };
        // The pause is the agent's, not the program's: not shown as `S|`.
        for (stack, by_us) in stacks.iter_mut().zip(paused_by_us) {
            if by_us {
                stack.state &= !jvmti::JVMTI_THREAD_STATE_SUSPENDED;
            }
        }

        let mut guard = run.model.lock();
        let model = &mut *guard;
        let serial_of =
            |model: &mut Model, t: LocalThread<'_>| threads::thread_serial(run, env, model, t, &[]);
        let mut traces = Vec::new();
        let mut thread_lines = Vec::new();
        for (&thread, stack) in locals.iter().zip(&stacks) {
            let thread_serial = serial_of(model, thread);
            let trace_serial = run.traces.intern(env, model, &stack.frames, thread_serial);
            traces.push(trace_serial);
            thread_lines.push(MonitorThread {
                thread_serial,
                trace_serial,
                status: status(stack.state),
            });
        }
        let mut monitors = Vec::new();
        for (signature, usage) in &owned {
            let owner = usage.owner.get();
            let owner_thread_serial = if owner.is_null() {
                0
            } else {
                serial_of(model, owner)
            };
            let notified = &usage.waiting_to_be_notified;
            let waiting_to_enter = entering(jni, usage).map(|t| serial_of(model, t)).collect();
            let waiting_to_be_notified =
                notified.iter().map(|t| serial_of(model, t.get())).collect();
            monitors.push(MonitorInfo {
                signature: signature.clone(),
                owner_thread_serial,
                entry_count: usage.entry_count.max(0) as u32,
                waiting_to_enter,
                waiting_to_be_notified,
            });
        }
        out.extend(run.emitter.unprinted_traces_of(model, &traces));
        let section = Section::MonitorDump {
            threads: thread_lines,
            monitors,
        };
        ascii::writer::write_section(&section, out);
    }

    /// MONITOR TIME and MONITOR HOLDERS, when a thread waited to enter a
    /// monitor since the last dump; contended times start over after each
    /// dump, counts do not (as in HPROF).
    fn monitor_time(&self, run: &Run, model: &mut Model, out: &mut Vec<u8>) {
        let rows = self.rows.lock();
        let contentions: Vec<Contention> = rows
            .iter()
            .filter_map(|(row, facts)| {
                let cell = self.cells.get(row as usize)?;
                let time_ns = cell.time_ns.swap(0, Ordering::Relaxed);
                let count = cell.count.load(Ordering::Relaxed);
                let signature = model
                    .classes
                    .by_serial(facts.class_serial)?
                    .signature
                    .clone();
                let holder = facts.holder().map(|(trace_serial, seen, sampled)| Holder {
                    trace_serial,
                    seen,
                    sampled,
                });
                Some(Contention {
                    trace_serial: facts.trace_serial,
                    signature,
                    time_ns,
                    count,
                    holder,
                })
            })
            .collect();
        drop(rows);
        let Some(made) = monitor_time(contentions, run.options.cutoff, ctime_now()) else {
            return;
        };
        out.extend(run.emitter.unprinted_traces_of(model, &made.traces));
        for section in &made.sections {
            ascii::writer::write_section(section, out);
        }
    }
}

/// One WAIT: / WAITED: line, written as it happens.
fn write_line(run: &Run, section: &Section) {
    let mut bytes = Vec::new();
    ascii::writer::write_section(section, &mut bytes);
    run.writer.write(bytes);
}

impl Engine for Monitors {
    fn add_capabilities(
        &self,
        caps: &mut jvmti::jvmtiCapabilities,
        potential: &jvmti::jvmtiCapabilities,
    ) {
        caps.set_can_generate_monitor_events(potential.can_generate_monitor_events());
        caps.set_can_get_owned_monitor_info(potential.can_get_owned_monitor_info());
        caps.set_can_get_monitor_info(potential.can_get_monitor_info());
        // MONITOR DUMP pauses the threads to look at them all at once.
        caps.set_can_suspend(potential.can_suspend());
        // JDK 21+: the monitor events of virtual threads reach only agents
        // that say they handle virtual threads.
        caps.set_can_support_virtual_threads(potential.can_support_virtual_threads());
    }

    fn live_events(&self) -> &'static [jvmti::jvmtiEvent] {
        &[
            jvmti::JVMTI_EVENT_MONITOR_CONTENDED_ENTER,
            jvmti::JVMTI_EVENT_MONITOR_CONTENDED_ENTERED,
            jvmti::JVMTI_EVENT_MONITOR_WAIT,
            jvmti::JVMTI_EVENT_MONITOR_WAITED,
        ]
    }

    fn dump_announcement(&self, _run: &Run) -> &'static str {
        " contended monitor usage ..."
    }

    /// The monitor sections come first in a dump, before a heap dump
    /// (written on its own in its `prepare_dump`), so they are written here.
    fn prepare_dump(&self, run: &Run, jni: Option<&JniEnv>) -> Result<(), String> {
        let Some(jni) = jni else {
            return Err("no JNI environment on this thread; monitor dump skipped".into());
        };
        let env = run.jvmti.env();
        let mut bytes = Vec::new();
        self.monitor_dump(run, jni, &env, &mut bytes);
        self.monitor_time(run, &mut run.model.lock(), &mut bytes);
        run.writer.write(bytes);
        Ok(())
    }
}
