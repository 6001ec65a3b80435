//! The thread registry: which Java threads the run has seen, their serials
//! and THREAD START/END records, and which threads are the agent's own.
//!
//! Threads are known by a number in their JVMTI thread-local slot, so
//! object tags stay free for allocation accounting.

use crate::agent::jvm::{self, LocalThread, RawFrame};
use crate::agent::run::engine::Run;
use crate::agent::run::header;
use crate::model::Model;
use crate::model::traces::EMPTY_TRACE_SERIAL;
use jvmti_bindings::prelude::*;
use std::cell::Cell;

thread_local! {
    /// Set on the agent's own Java threads, whose events are ignored.
    static AGENT_THREAD: Cell<bool> = const { Cell::new(false) };
}

/// Marks the calling thread as one of the agent's own (its events are ignored).
pub fn mark_agent_thread() {
    AGENT_THREAD.with(|a| a.set(true));
}

/// True on a thread the agent started for itself, or while a program
/// thread runs [`as_agent`].
pub fn is_agent_thread() -> bool {
    AGENT_THREAD.try_with(Cell::get).unwrap_or(false)
}

/// Runs `work` counted as the agent's own (objects it makes are not the
/// program's), on whatever thread this is.
pub fn as_agent<T>(work: impl FnOnce() -> T) -> T {
    let was = AGENT_THREAD.with(|a| a.replace(true));
    let result = work();
    AGENT_THREAD.with(|a| a.set(was));
    result
}

/// The serial of `thread`, 0 for a thread never registered. (A virtual
/// thread not registered yet may hold a key of `virtual_threads` instead.)
pub fn serial_of(env: &Jvmti, thread: LocalThread<'_>) -> u32 {
    jvm::thread_serial(env, thread)
}

/// The serial of `thread`, registering it if new. A thread registered here
/// gets `start_frames` as its THREAD START trace.
pub fn thread_serial(
    run: &Run,
    env: &Jvmti,
    model: &mut Model,
    thread: LocalThread<'_>,
    start_frames: &[RawFrame],
) -> u32 {
    match serial_of(env, thread) {
        0 => register(run, env, model, thread, start_frames),
        stored => stored,
    }
}

/// The thread serial a trace of `thread` is keyed by: with `thread=y` its
/// serial, else 0 (and the thread need not be registered).
pub fn trace_thread_serial(
    run: &Run,
    env: &Jvmti,
    model: &mut Model,
    thread: LocalThread<'_>,
) -> u32 {
    if run.traces.per_thread {
        thread_serial(run, env, model, thread, &[])
    } else {
        0
    }
}

/// Gives `thread` a serial and writes its THREAD START, with the trace of
/// `frames`: every serial a trace or record refers to has its THREAD START
/// in the file, also for threads first seen in an allocation or a sample
/// (those started before VM init, virtual threads).
fn register(
    run: &Run,
    env: &Jvmti,
    model: &mut Model,
    thread: LocalThread<'_>,
    frames: &[RawFrame],
) -> u32 {
    let facts = jvm::thread_facts(env, thread);
    let object_id = model.objects.next();
    let serial = model.threads.add(
        object_id,
        facts.name,
        facts.group,
        facts.parent_group,
        EMPTY_TRACE_SERIAL,
    );
    jvm::set_thread_value(env, thread, u64::from(serial));
    let trace = run.traces.intern(env, model, frames, serial);
    model.threads.set_trace(serial, trace);
    if header::has_header_and_threads(&run.options) {
        run.writer.write(run.emitter.thread_start(model, serial));
    }
    serial
}

/// THREAD END of `serial`, once, for a registered thread.
pub fn end(run: &Run, serial: u32) {
    let mut model = run.model.lock();
    if serial != 0 && model.threads.end(serial) && header::has_header_and_threads(&run.options) {
        let bytes = run.emitter.thread_end(serial);
        drop(model);
        run.writer.write(bytes);
    }
}
