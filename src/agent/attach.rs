//! The agent loaded into a JVM that is already running (`Agent_OnAttach`,
//! through `hprof-rs attach PID OPTIONS`): a profile from the attach to
//! `hprof-rs attach PID stop`, which loads the agent again with the option
//! `stop`. The stop writes the whole file, as VM death would, then leaves
//! the JVM as it was: the engines' threads and timers end, and the JVMTI
//! environment of the profile is disposed of (its events off, its object
//! tags gone). The library stays loaded (a JVM never unloads an agent), so
//! the next attach starts a new profile with a new environment. What each
//! mode does attached, and why, is docs/attach.md.
//!
//! The JVM passes the agent's return value back to `hprof-rs attach`,
//! which turns it into a message: 0 is success, the others are the
//! `ATTACH_*` codes below (the same numbers are in the tool's attach
//! module). The details go to the JVM's standard error, as HPROF's errors,
//! and, with the option `reply=text`, to the client too (attach_reply.rs).

use super::attach_reply::{self, REPLY_TEXT};
use super::current;
use super::run::engines::Engines;
use super::run::profiler::{Phase, Profiler, jvm_exited_during_end, setup_jvmti};
use crate::agent::jvm::VmHandle;
use crate::model::Model;
use crate::options::{self, Options, Parsed};
use crate::output::{OutputWriter, PrivateDir, Sink};
use jvmti_bindings::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering};

/// The option that stops the running profile.
pub const STOP: &str = "stop";

/// The options cannot be parsed, or ask for nothing a live JVM allows.
pub const ATTACH_BAD_OPTIONS: jni::jint = 2;
/// A profile is already running in this JVM.
pub const ATTACH_ALREADY_RUNNING: jni::jint = 3;
/// `stop`, and no attached profile runs.
pub const ATTACH_NOTHING_TO_STOP: jni::jint = 4;
/// The output or JVMTI could not be set up (see the JVM's standard error).
pub const ATTACH_FAILED: jni::jint = 5;
/// The JVM exited while the profile was being written: the output is cut.
pub const ATTACH_JVM_EXITED: jni::jint = 6;

/// Attach-only option word: a stop (or a heap=dump attach, which ends at
/// once) that succeeds returns `SIZE_BASE` plus the size of the output
/// written, in KiB rounded up, instead of 0. `hprof-rs attach` asks for it
/// when it copies the file out of a container: the file there belongs to
/// the JVM's user, and the tool takes it only at the size the agent wrote.
/// (A load's reply carries only this number back.)
pub const REPLY_SIZE: &str = "reply=size";
/// What a sized reply adds to the KiB: the codes below are the refusals.
pub const SIZE_BASE: jni::jint = 16;

/// The allocation sampling interval of heap=sites attached, when the
/// options give none: the JVM's own default, a cost of 1.0-1.07x.
pub const ATTACH_ALLOC_INTERVAL: u64 = 512 * 1024;

/// Whether the current run was started by an attach (and so may be stopped).
static ATTACHED: AtomicBool = AtomicBool::new(false);

/// `Agent_OnAttach`: start a profile, or stop the one running.
pub fn on_attach(context: &AgentLoadContext<'_>) -> jni::jint {
    let given = context.options_lossy();
    let given = given.as_deref().unwrap_or("").trim();
    let sized = given.split(',').any(|o| o == REPLY_SIZE);
    let refusal = Refusal {
        to_client: given.split(',').any(|o| o == REPLY_TEXT),
    };
    let given: Vec<&str> = given
        .split(',')
        .filter(|o| *o != REPLY_SIZE && *o != REPLY_TEXT)
        .collect();
    let given = given.join(",");
    let vm = VmHandle::new(context.vm().raw());
    let ended = if given == STOP {
        stop(vm, refusal)
    } else {
        start(context, vm, &given, refusal)
    };
    match ended {
        Ended::Running => jni::JNI_OK,
        Ended::Refused(code) => code,
        // (The process is ending: the reply may never leave it.)
        Ended::Written(_) if jvm_exited_during_end() => ATTACH_JVM_EXITED,
        Ended::Written(bytes) if sized => sized_reply(bytes),
        Ended::Written(_) => jni::JNI_OK,
    }
}

/// How an attach ended.
enum Ended {
    /// The profile runs.
    Running,
    /// Refused, with this code.
    Refused(jni::jint),
    /// The profile was written to its end: this many bytes of file (None
    /// when the output is no regular file).
    Written(Option<u64>),
}

/// Says why an attach is refused: on the JVM's standard error, and to the
/// client when it asked (`reply=text`).
#[derive(Clone, Copy)]
struct Refusal {
    to_client: bool,
}

impl Refusal {
    /// Refused with `code`, for the reason `line` (an `HPROF ERROR:` line).
    fn refuse(self, code: jni::jint, line: &str) -> Ended {
        eprintln!("{line}");
        if self.to_client {
            attach_reply::send_line(line);
        }
        Ended::Refused(code)
    }
}

/// `SIZE_BASE` plus `bytes` in KiB rounded up (up to 2 TiB); 0 for an
/// output that is no regular file (nothing to hand over).
fn sized_reply(bytes: Option<u64>) -> jni::jint {
    match bytes {
        Some(bytes) => {
            let kib = bytes.div_ceil(1024);
            jni::jint::try_from(kib)
                .ok()
                .and_then(|k| k.checked_add(SIZE_BASE))
                .unwrap_or(jni::jint::MAX)
        }
        None => jni::JNI_OK,
    }
}

/// A new profile of this running JVM (written at once for heap=dump alone).
fn start(context: &AgentLoadContext<'_>, vm: VmHandle, given: &str, refusal: Refusal) -> Ended {
    if current::profiler().is_some() {
        let how = if ATTACHED.load(Ordering::Acquire) {
            "attached earlier; stop it first with: hprof-rs attach PID stop"
        } else {
            "started with the JVM (-agentpath); it ends with the JVM"
        };
        let line = format!("HPROF ERROR: a profile is already running in this JVM ({how})");
        return refusal.refuse(ATTACH_ALREADY_RUNNING, &line);
    }
    let options = match options::parse(Some(given), None) {
        Ok(Parsed::Options(options)) => options,
        Ok(Parsed::Help) => {
            let line = "HPROF ERROR: help is not available attached; run: hprof-rs help";
            return refusal.refuse(ATTACH_BAD_OPTIONS, line);
        }
        Err(error) => return refusal.refuse(ATTACH_BAD_OPTIONS, &error.message()),
    };
    let options = match for_live_phase(options) {
        Ok(options) => options,
        Err(why) => return refusal.refuse(ATTACH_BAD_OPTIONS, &format!("HPROF ERROR: {why}")),
    };
    let jvmti = match context.vm().jvmti() {
        Ok(env) => env,
        Err(code) => {
            let line = format!("HPROF ERROR: Unable to access JVMTI (GetEnv returned {code})");
            return refusal.refuse(ATTACH_FAILED, &line);
        }
    };
    let raw_file_name = context.option_bytes().and_then(options::raw_file_value);
    let dump_only =
        options.heap_dump && !(options.heap_sites || options.cpu_samples || options.monitor);
    let profiler = match new_profiler(&jvmti, vm, options, raw_file_name) {
        Ok(profiler) => profiler,
        Err(why) => {
            // SAFETY: no event was enabled and nothing else holds it.
            let _ = unsafe { jvmti.dispose_environment() };
            return refusal.refuse(ATTACH_FAILED, &format!("HPROF ERROR: {why}"));
        }
    };
    let profiler = match current::make_current(profiler) {
        Ok(profiler) => profiler,
        Err(lost) => {
            lost.abandon_output();
            let line = "HPROF ERROR: a profile is already running in this JVM";
            return refusal.refuse(ATTACH_ALREADY_RUNNING, line);
        }
    };
    ATTACHED.store(true, Ordering::Release);
    let jni = vm.current_env();
    profiler.attached(jni.as_ref());
    // heap=dump attached: a dump at once. Alone (no heap=sites, cpu=samples
    // or monitor=y), the profile ends with it
    // (the stop's dump is that one); with other modes, the stop dumps again.
    if dump_only {
        return Ended::Written(end(profiler, jni.as_ref()));
    } else if profiler.engines.heap_dump.is_some() {
        profiler.dump(jni.as_ref());
    }
    Ended::Running
}

/// The options as the live phase can have them: heap=sites samples
/// allocations (docs/attach.md says why); the stop always writes the file.
/// (cpu=times and cpu=old retransform the classes loaded before the
/// attach: `modes/cpu_times/attached.rs`.)
fn for_live_phase(mut options: Options) -> Result<Options, String> {
    let measuring_bytecode =
        options.experiment & options::experiment::ATTACH_BYTECODE_COUNTING != 0;
    if options.heap_sites && measuring_bytecode {
        options.alloc_count_bytecode = true;
    } else if options.heap_sites {
        if options.alloc_count_given {
            return Err("alloc_count is not available attached: heap=sites samples \
                        allocations (alloc_interval=<bytes>, 512k unless given)"
                .into());
        }
        options.alloc_count_bytecode = false;
        if options.alloc_interval == 0 {
            options.alloc_interval = ATTACH_ALLOC_INTERVAL;
        }
    }
    options.doe = true;
    Ok(options)
}

/// The output, the engines and the JVMTI set-up of a profile starting in
/// the live phase. On an error nothing is left running.
fn new_profiler(
    jvmti: &Jvmti,
    vm: VmHandle,
    options: Options,
    raw_file_name: Option<&[u8]>,
) -> Result<Profiler, String> {
    let sink = Sink::open(&options, std::process::id(), raw_file_name).map_err(|e| e.0)?;
    let heap_dump_dir = match options.heap_dump {
        true => Some(PrivateDir::for_heap_dumps(&options, &sink)?),
        false => None,
    };
    let writer = OutputWriter::start(sink)
        .map_err(|e| format!("cannot start the output writer thread: {e}"))?;
    let mut engines = Engines::new(&options, heap_dump_dir, false);
    if let Some(times) = engines.method_times.as_mut() {
        times.set_attached();
    }
    // Attached, every class is loaded already: none can be rewritten as it loads.
    if let Some(sites) = engines.allocation_sites.as_mut() {
        sites.rewrite_nothing_early();
    }
    if let Err(why) = setup_jvmti(jvmti, &engines, Phase::Live) {
        writer.abandon();
        for engine in engines.all() {
            engine.finished();
        }
        return Err(why);
    }
    Ok(Profiler::new(options, engines, jvmti, vm, writer))
}

/// `stop`: the attached profile writes its file and ends.
fn stop(vm: VmHandle, refusal: Refusal) -> Ended {
    let Some(profiler) = current::profiler().filter(|_| ATTACHED.load(Ordering::Acquire)) else {
        let line = "HPROF ERROR: no attached profile is running in this JVM: nothing to stop";
        return refusal.refuse(ATTACH_NOTHING_TO_STOP, line);
    };
    let jni = vm.current_env();
    Ended::Written(end(profiler, jni.as_ref()))
}

/// Writes the profile to the end and leaves the JVM as it was; the bytes
/// written, when the output is a regular file.
fn end(profiler: &'static Profiler, jni: Option<&JniEnv>) -> Option<u64> {
    let written = profiler.stop_attached(jni);
    current::clear_current(profiler);
    ATTACHED.store(false, Ordering::Release);
    crate::agent::modes::heap_sites::site_cache::new_session();
    // SAFETY: its events were turned off and its threads have ended
    // (stop_attached); a callback still running on another thread sees
    // JVMTI_ERROR_INVALID_ENVIRONMENT from its calls, and no new one
    // finds the run (clear_current).
    let _ = unsafe { profiler.run.jvmti.env().dispose_environment() };
    // The run stays in memory (see current.rs); its tables need not: what
    // a stopped profile keeps is then its fixed-size state, not what it saw.
    let wide = super::run::header::id_size(&profiler.run.options) == 8;
    *profiler.run.model.lock() = Model::new(wide);
    written
}
