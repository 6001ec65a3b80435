//! The interface every collector ("engine") implements, and the run state
//! they share. An engine owns its JVMTI capabilities, the events it needs
//! once the VM is live, its threads and state, and the dump section it
//! writes; the lifecycle (run/profiler.rs, with the `Lifecycle` flags kept here in `Run`) and the dump sequence (run/dump_sequence.rs)
//! call every engine through this trait, once per event of the run or per
//! dump. An engine's per-event callbacks (allocations, samples, class
//! loads) are plain methods of its own type, reached from the JVMTI entry
//! points (mod.rs) without dynamic dispatch.

use crate::agent::jvm::{JvmtiHandle, LocalThread, VmHandle};
use crate::agent::run::traces::TracePolicy;
use crate::emit::Emitter;
use crate::model::Model;
use crate::options::Options;
use crate::output::OutputWriter;
use jvmti_bindings::prelude::*;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// What every engine of a run shares: the options, the JVM, the model of
/// what was seen, and the output.
pub struct Run {
    pub options: Options,
    pub jvmti: JvmtiHandle,
    pub vm: VmHandle,
    pub traces: TracePolicy,
    pub emitter: Emitter,
    pub model: Mutex<Model>,
    pub writer: OutputWriter,
    pub lifecycle: Lifecycle,
}

/// Where the run is in the JVM's life: events before VM init and after VM
/// death are ignored.
#[derive(Default)]
pub struct Lifecycle {
    /// Set at VM init.
    live: AtomicBool,
    /// Set at VM death.
    dead: AtomicBool,
}

impl Lifecycle {
    /// At VM init.
    pub fn begin(&self) {
        self.live.store(true, Ordering::Release);
    }

    /// Whether VM init has come (VM death may have too).
    pub fn began(&self) -> bool {
        self.live.load(Ordering::Acquire)
    }

    /// At VM death; whether it had already ended.
    pub fn end(&self) -> bool {
        self.dead.swap(true, Ordering::AcqRel)
    }

    /// Whether VM death has come: the JVM is exiting.
    pub fn ended(&self) -> bool {
        self.dead.load(Ordering::Acquire)
    }

    /// Between VM init and VM death.
    pub fn accepting_events(&self) -> bool {
        self.live.load(Ordering::Acquire) && !self.ended()
    }
}

/// One collector. Every method has a default that does nothing, so an
/// engine implements only what it takes part in.
pub trait Engine: Send + Sync {
    /// At load time: the capabilities it needs, of those the JVM can give
    /// (`potential`). Only what is needed is asked for: merely holding some
    /// capabilities slows compiled code.
    fn add_capabilities(
        &self,
        _caps: &mut jvmti::jvmtiCapabilities,
        _potential: &jvmti::jvmtiCapabilities,
    ) {
    }

    /// At load time, once the capabilities are held: set-up that must come
    /// before the first thread exists. An error stops the JVM's start.
    fn on_load(&self, _jvmti: &Jvmti) -> Result<(), String> {
        Ok(())
    }

    /// The events it needs from VM init on (enabled with the lifecycle's).
    fn live_events(&self) -> &'static [jvmti::jvmtiEvent] {
        &[]
    }

    /// After the run's last dump (VM death): remove what it made for itself.
    fn finished(&self) {}

    /// How many times their stack the threads the program starts need while
    /// this engine runs: more than 1 for the engines whose rewritten code
    /// makes frames bigger (`jvm::thread_stacks`).
    fn stack_factor(&self) -> u32 {
        1
    }

    /// At VM init, with the classes loaded so far known and before any
    /// event counts: what it must prepare while the JVM can still make
    /// objects for it.
    fn vm_init(&self, _run: &Run, _jni: Option<&JniEnv>) {}

    /// At VM init, once the live events are enabled and the main thread is
    /// registered: start its threads and its work.
    fn start(&'static self, _run: &'static Run, _jni: Option<&JniEnv>) {}

    /// ThreadStart, on the new thread, once it has serial `serial`;
    /// `thread` is the callback's reference to it.
    fn thread_started(
        &self,
        _run: &Run,
        _jni: Option<&JniEnv>,
        _thread: LocalThread<'_>,
        _serial: u32,
    ) {
    }

    /// When the agent is attached to a live JVM: a thread already running
    /// then (it had no ThreadStart), found on the attaching thread, once
    /// it has serial `serial`.
    fn thread_running_at_attach(
        &self,
        _run: &Run,
        _jni: Option<&JniEnv>,
        _thread: LocalThread<'_>,
        _serial: u32,
    ) {
    }

    /// ThreadEnd, on the ending thread, before its THREAD END is written.
    /// `serial` is None when the thread's events are not counted (before VM
    /// init, after VM death, an agent thread): the engine only lets go of
    /// what it holds for the thread. Some(0) is a thread never registered.
    fn thread_ended(&self, _run: &Run, _jni: Option<&JniEnv>, _serial: Option<u32>) {}

    /// At VM death, before the exit dump: stop its threads and its work.
    fn stop(&self, _run: &Run, _jni: Option<&JniEnv>) {}

    /// When a profile of a live JVM stops (`hprof-rs attach PID stop`),
    /// after its last dump: leave nothing running in the JVM that goes on
    /// (the JVMTI environment, with its events and tags, goes after this).
    fn detach(&self, _run: &Run, _jni: Option<&JniEnv>) {}

    /// What a verbose dump says it dumps (`" allocation sites ..."`).
    fn dump_announcement(&self, run: &Run) -> &'static str;

    /// First step of a dump, before the model is locked: work that runs
    /// Java code or writes on its own. Returns an error to report once the
    /// whole dump is written.
    fn prepare_dump(&self, _run: &Run, _jni: Option<&JniEnv>) -> Result<(), String> {
        Ok(())
    }

    /// Its section of a dump, under the model lock, appended to `out`.
    fn dump_section(&self, _run: &Run, _model: &mut Model, _out: &mut Vec<u8>) {}
}
