//! The lifecycle of one profiling run: load-time set-up (capabilities and
//! callbacks), VM init (header, classes and threads so far, then the
//! engines start), thread start/end and class loads, dumps (SIGQUIT, heap
//! exhaustion, VM death) and the final flush. What is collected, and how
//! it is dumped, is the engines' (modes/, listed in run/engines.rs) and the dump sequence's
//! (run/dump_sequence.rs); with `net=`, the listener thread (run/listener.rs) started at VM
//! init and stopped at VM death carries out the front end's commands.

use crate::agent::jvm::{self, JvmtiHandle, LocalClass, LocalThread, VmHandle};
use crate::agent::jvm::{class_unloads, main_stack, thread_stacks};
use crate::agent::run::classes::{intern_class, retire_unloaded};
use crate::agent::run::engine::{Lifecycle, Run};
use crate::agent::run::engines::Engines;
use crate::agent::run::header;
use crate::agent::run::listener::Listener;
use crate::agent::run::remote::{Session, Target};
use crate::agent::run::threads;
use crate::agent::run::traces::TracePolicy;
use crate::emit::Emitter;
use crate::model::Model;
use crate::model::traces::EMPTY_TRACE_SERIAL;
use crate::options::{Format, Options};
use crate::output::OutputWriter;
use jvmti_bindings::prelude::*;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// When the agent is set up: at the JVM's start (`-agentpath`), or in a
/// JVM already running (`hprof-rs attach`, JVMTI's live phase).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    OnLoad,
    Live,
}

/// Capabilities and callbacks at load time (or at the attach), for the
/// lifecycle and for each engine. Only what the engines need is requested:
/// merely holding some capabilities slows compiled code.
pub fn setup_jvmti(jvmti: &Jvmti, engines: &Engines, phase: Phase) -> Result<(), String> {
    let potential = jvmti
        .get_potential_capabilities()
        .map_err(|e| format!("{e:?}"))?;
    jvmti
        .add_capabilities_with(|caps| {
            caps.set_can_tag_objects(true);
            caps.set_can_get_source_file_name(potential.can_get_source_file_name());
            caps.set_can_get_line_numbers(potential.can_get_line_numbers());
            caps.set_can_generate_resource_exhaustion_heap_events(
                potential.can_generate_resource_exhaustion_heap_events(),
            );
            for engine in engines.all() {
                engine.add_capabilities(caps, &potential);
            }
        })
        .map_err(|e| format!("Unable to get necessary JVMTI capabilities. ({e:?})"))?;
    for engine in engines.all() {
        engine.on_load(jvmti)?;
    }
    jvmti
        .set_default_agent_callbacks()
        .map_err(|e| format!("Unable to set JVMTI event callbacks. ({e:?})"))?;
    // (In the live phase VM init is past: `Profiler::attached` does its work.)
    let events: &[jvmti::jvmtiEvent] = match phase {
        Phase::OnLoad => &[jvmti::JVMTI_EVENT_VM_INIT, jvmti::JVMTI_EVENT_VM_DEATH],
        Phase::Live => &[jvmti::JVMTI_EVENT_VM_DEATH],
    };
    jvmti
        .enable_events_global(events)
        .map_err(|e| format!("Unable to enable JVMTI events. ({e:?})"))
}

/// An output that made no progress this long while the run waited for it
/// is reported at exit (verbose=y): the disk was slow, and the JVM waited.
const SLOW_OUTPUT: std::time::Duration = std::time::Duration::from_secs(1);

/// One profiling run.
pub struct Profiler {
    pub run: Run,
    pub engines: Engines,
    /// Set at the first exhaustion of the Java heap (its dump is written then).
    heap_exhausted: AtomicBool,
    /// Held while a dump is written; a second request meanwhile is dropped.
    dumping: Mutex<()>,
    /// Reads the `net=` front end's commands.
    pub listener: Listener,
}

impl Profiler {
    /// A run with parsed options, its engines, its JVMTI environment and
    /// its open output.
    pub fn new(
        options: Options,
        engines: Engines,
        jvmti: &Jvmti,
        vm: VmHandle,
        writer: OutputWriter,
    ) -> Self {
        let traces = TracePolicy {
            depth: options.depth,
            per_thread: options.thread,
            line_numbers: options.lineno,
        };
        let id_bytes = header::id_size(&options);
        let format = options.format;
        Self {
            run: Run {
                options,
                jvmti: JvmtiHandle::new(jvmti),
                vm,
                traces,
                emitter: Emitter::new(format, id_bytes),
                model: Mutex::new(Model::new(id_bytes == 8)),
                writer,
                lifecycle: Lifecycle::default(),
            },
            engines,
            heap_exhausted: AtomicBool::new(false),
            dumping: Mutex::new(()),
            listener: Listener::default(),
        }
    }

    /// The agent refuses to start after all: nothing is written, and an
    /// output file this run created is removed.
    pub fn abandon_output(&self) {
        self.run.writer.abandon();
    }

    fn accepting_events(&self) -> bool {
        self.run.lifecycle.accepting_events()
    }

    /// VM init: the file header, the classes loaded so far, the main
    /// thread; then the engines start.
    pub fn vm_init(&'static self, jni: Option<&JniEnv>, main_thread: LocalThread<'_>) {
        let run = &self.run;
        let env = run.jvmti.env();
        self.collect_before_collectors_stop(&env, jni);
        self.begin(&env, jni);
        self.thread_started(jni, main_thread);
        self.run_main_on_larger_stack(&env, main_thread);
        run.writer.flush();
        self.enable_live_events(&env);
        self.start_engines(jni);
    }

    /// Under a collector that cannot collect at VM death, the exit dump's
    /// collection runs in the JVM's last shutdown hook (before the header,
    /// whose prelude says which).
    fn collect_before_collectors_stop(&self, env: &Jvmti, jni: Option<&JniEnv>) {
        let options = &self.run.options;
        if !header::exit_dump_has_live_figures(options)
            || jvm::collector::Collector::of_this_jvm().collects_after_vm_death()
        {
            return;
        }
        if let Some(jni) = jni
            && let Err(why) = jvm::exit_collection::install(jni, env)
            && options.verbose
        {
            eprintln!("HPROF: the exit dump forces no collection ({why})");
        }
    }

    /// With `main_stack=y`, under the engines that rewrite code, main()
    /// will run on a thread with the stack that code takes (the launcher
    /// sized this one before the agent loaded). Never by default: the
    /// program would see another thread than the one that ran its static
    /// initializers, and what the program sees is not traded for depth.
    fn run_main_on_larger_stack(&self, env: &Jvmti, main_thread: LocalThread<'_>) {
        if !self.run.options.main_stack {
            return;
        }
        let factor = self.stack_factor();
        let serial = threads::serial_of(env, main_thread);
        if let (Some(factor @ 2..), 1..) = (factor, serial)
            && let Err(why) = main_stack::run_main_on_larger_stack(env, self.run.vm, factor, serial)
            && self.run.options.verbose
        {
            eprintln!("HPROF: main() keeps the launcher's stack ({why})");
        }
    }

    /// What a profile's start writes and does, from VM init or an attach:
    /// the file header and the classes loaded so far, each engine's own
    /// start, then events are taken.
    fn begin(&self, env: &Jvmti, jni: Option<&JniEnv>) {
        if let Err(why) = class_unloads::install(self.run.vm.raw()) {
            // Only memory is at stake: the tables keep unloaded classes.
            if self.run.options.verbose {
                eprintln!("HPROF: class unloading not watched ({why})");
            }
        }
        self.write_start(env, jni);
        for engine in self.engines.all() {
            engine.vm_init(&self.run, jni);
        }
        self.enlarge_thread_stacks(jni);
        self.run.lifecycle.begin();
    }

    /// How many times its stack a thread needs under the engines' rewritten
    /// code (the largest engine's factor).
    fn stack_factor(&self) -> Option<u32> {
        self.engines.all().map(|e| e.stack_factor()).max()
    }

    /// Threads the program starts from now on get the stack the engines'
    /// rewritten code needs.
    fn enlarge_thread_stacks(&self, jni: Option<&JniEnv>) {
        if let (Some(jni), Some(factor @ 2..)) = (jni, self.stack_factor())
            && let Err(why) = thread_stacks::enlarge_new_threads(jni, factor)
            && self.run.options.verbose
        {
            eprintln!("HPROF: threads keep the stack they ask for ({why})");
        }
    }

    /// Attached to a running JVM (`hprof-rs attach`): what VM init does,
    /// with every thread already running found instead of the main thread.
    /// A thread that starts meanwhile is seen by its ThreadStart (the live
    /// events are on before the others are looked for), once.
    pub fn attached(&'static self, jni: Option<&JniEnv>) {
        let run = &self.run;
        let env = run.jvmti.env();
        self.begin(&env, jni);
        self.enable_live_events(&env);
        if let Some(jni) = jni {
            for thread in jvm::all_threads(jni, &env) {
                let thread = thread.get();
                if threads::serial_of(&env, thread) != 0 {
                    continue;
                }
                let frames = jvm::stack_frames(&env, thread, run.traces.depth);
                let mut model = run.model.lock();
                let serial = threads::thread_serial(run, &env, &mut model, thread, &frames);
                drop(model);
                for engine in self.engines.all() {
                    engine.thread_running_at_attach(run, Some(jni), thread, serial);
                }
            }
        }
        run.writer.flush();
        self.start_engines(jni);
    }

    /// The profile of a running JVM stops (`hprof-rs attach PID stop`): its
    /// file is written to the end as at VM death, then the engines leave
    /// nothing running (the caller disposes of the JVMTI environment,
    /// which turns its events off and drops its tags).
    ///
    /// VM death stays enabled while the file is written: a JVM that exits
    /// meanwhile (System.exit during an attached heap dump) then finds the
    /// end under way and removes its temporary files (see
    /// [`Profiler::vm_death_event`]). Returns the bytes written, when the
    /// output is a regular file.
    pub fn stop_attached(&self, jni: Option<&JniEnv>) -> Option<u64> {
        let written = self.vm_death(jni);
        let _ = self
            .run
            .jvmti
            .env()
            .disable_events_global(&[jvmti::JVMTI_EVENT_VM_DEATH]);
        for engine in self.engines.all() {
            engine.detach(&self.run, jni);
        }
        if let Some(jni) = jni {
            thread_stacks::restore_new_threads(jni);
        }
        class_unloads::uninstall();
        written
    }

    /// The engines start, then the `net=` listener.
    fn start_engines(&'static self, jni: Option<&JniEnv>) {
        let run = &self.run;
        for engine in self.engines.all() {
            engine.start(run, jni);
        }
        if let Some(socket) = run.writer.socket_handle() {
            let target = Target {
                run,
                engines: &self.engines,
                dump_lock: &self.dumping,
            };
            let mut session = Session::default();
            self.listener.start(run, socket, move |jni, command| {
                session.execute(&target, jni, command)
            });
        }
    }

    /// The file header and the classes loaded so far.
    fn write_start(&self, env: &Jvmti, jni: Option<&JniEnv>) {
        let run = &self.run;
        if header::has_header_and_threads(&run.options) {
            let facts = header::facts(
                &run.options,
                jni.and_then(jvm::max_heap_bytes),
                jvm::collector::Collector::of_this_jvm(),
                jvm::exit_collection::installed(),
            );
            let header = run.emitter.file_header(&facts, &mut run.model.lock());
            run.writer.write(header);
        }

        let classes = jvm::loaded_classes(env, jni);
        let mut guard = run.model.lock();
        let model = &mut *guard;
        // Each class's local reference is deleted as it is dropped, once interned.
        for class in classes {
            intern_class(
                env,
                &mut model.classes,
                &model.objects,
                class.get(),
                EMPTY_TRACE_SERIAL,
            );
        }
        run.writer.write(run.emitter.class_loads(model));
    }

    /// Events wanted once the VM is live: the lifecycle's and the engines'.
    fn enable_live_events(&self, env: &Jvmti) {
        let mut events = vec![
            jvmti::JVMTI_EVENT_THREAD_START,
            jvmti::JVMTI_EVENT_THREAD_END,
            jvmti::JVMTI_EVENT_DATA_DUMP_REQUEST,
            jvmti::JVMTI_EVENT_RESOURCE_EXHAUSTED,
        ];
        if self.run.options.format == Format::Binary {
            events.push(jvmti::JVMTI_EVENT_CLASS_LOAD);
        }
        for engine in self.engines.all() {
            events.extend_from_slice(engine.live_events());
        }
        if let Err(error) = env.enable_events_global(&events) {
            eprintln!(
                "HPROF ERROR: Unable to enable JVMTI events ({error:?}); some output may be missing"
            );
        }
    }

    /// ThreadStart (and the main thread at VM init), on the thread itself:
    /// THREAD START once per thread, then the engines see it.
    pub fn thread_started(&self, jni: Option<&JniEnv>, thread: LocalThread<'_>) {
        if !self.accepting_events() || threads::is_agent_thread() {
            return;
        }
        let run = &self.run;
        let env = run.jvmti.env();
        // The thread running main() for the launcher's is one thread with
        // it in the profile: no THREAD START of its own.
        let stand_in = main_stack::stand_in_serial();
        let frames = match stand_in {
            Some(_) => Vec::new(),
            None => jvm::stack_frames(&env, thread, run.traces.depth),
        };
        let mut model = run.model.lock();
        let serial = match stand_in {
            Some(serial) => {
                jvm::set_thread_value(&env, thread, u64::from(serial));
                serial
            }
            None => threads::thread_serial(run, &env, &mut model, thread, &frames),
        };
        for engine in self.engines.all() {
            engine.thread_started(run, jni, thread, serial);
        }
    }

    /// ThreadEnd, on the ending thread: the engines let go of it, then
    /// THREAD END.
    pub fn thread_ended(&self, jni: Option<&JniEnv>, thread: LocalThread<'_>) {
        let run = &self.run;
        let counted = self.accepting_events() && !threads::is_agent_thread();
        // A thread never registered had no THREAD START: no THREAD END either.
        let serial = counted.then(|| threads::serial_of(&run.jvmti.env(), thread));
        for engine in self.engines.all() {
            engine.thread_ended(run, jni, serial);
        }
        // The launcher's thread ends the serial the stand-in for it shared.
        if let (Some(serial), None) = (serial, main_stack::stand_in_serial()) {
            threads::end(run, serial);
        }
    }

    /// VirtualThreadEnd (on only while virtual threads are named).
    pub fn virtual_thread_ended(&self, jni: Option<&JniEnv>, thread: LocalThread<'_>) {
        if let (Some(samples), Some(jni)) = (&self.engines.cpu_samples, jni)
            && self.accepting_events()
        {
            samples.virtual_thread_ended(&self.run, jni, thread);
        }
    }

    /// ClassLoad: the class gets a serial, and in binary a LOAD CLASS record
    /// with the loading thread's trace.
    pub fn class_loaded(&self, thread: LocalThread<'_>, class: LocalClass<'_>) {
        let run = &self.run;
        if !self.accepting_events() || run.options.format != Format::Binary {
            return;
        }
        let env = run.jvmti.env();
        let frames = jvm::stack_frames(&env, thread, run.traces.depth);
        let mut guard = run.model.lock();
        let model = &mut *guard;
        let thread_serial = threads::trace_thread_serial(run, &env, model, thread);
        let trace = run.traces.intern(&env, model, &frames, thread_serial);
        intern_class(&env, &mut model.classes, &model.objects, class, trace);
        retire_unloaded(model);
        let bytes = run.emitter.class_loads(model);
        drop(guard);
        run.writer.write(bytes);
    }

    /// A full dump (SIGQUIT or heap exhaustion). A request during a dump
    /// is dropped.
    pub fn dump(&self, jni: Option<&JniEnv>) {
        let Some(_guard) = self.dumping.try_lock() else {
            return;
        };
        crate::agent::run::dump_sequence::dump(&self.run, &self.engines, jni);
    }

    /// ResourceExhausted for the Java heap: the first time, a full dump is
    /// written at once. A program that dies of an OutOfMemoryError with its
    /// heap still full ends without a VM death event (the JVM's shutdown
    /// needs memory it no longer has), so the exit dump would never come;
    /// this one holds everything up to the error, like the JVM's
    /// -XX:+HeapDumpOnOutOfMemoryError.
    pub fn heap_exhausted(&self, jni: Option<&JniEnv>) {
        if !self.accepting_events() || self.heap_exhausted.swap(true, Ordering::AcqRel) {
            return;
        }
        // HotSpot logs each posting of this event on stdout ("[error][jvmti]
        // Posting Resource Exhausted event"): one such line is the price of
        // the dump, more would only add noise to the program's output.
        let _ = self
            .run
            .jvmti
            .env()
            .disable_events_global(&[jvmti::JVMTI_EVENT_RESOURCE_EXHAUSTED]);
        if self.run.options.verbose {
            eprintln!(
                "HPROF: the Java heap is exhausted (OutOfMemoryError); dumping the profile now"
            );
        }
        self.dump(jni);
    }

    /// SIGQUIT / DataDumpRequest.
    pub fn data_dump_request(&self) {
        if self.accepting_events() {
            self.dump(None);
        }
    }

    /// The VM death event. When another thread is already writing the
    /// profile to its end (an attached stop, a heap=dump attach), the
    /// process is about to end under it: what it would have removed at
    /// the end, the heap dump's temporary file and private directory, goes
    /// now, without waiting for it (the JVM's exit is not delayed).
    pub fn vm_death_event(&self, jni: Option<&JniEnv>) {
        if self.run.lifecycle.end() {
            EXIT_DURING_END.store(true, Ordering::Release);
            if let Some(dump) = &self.engines.heap_dump {
                dump.remove_temporary();
            }
            return;
        }
        self.write_to_the_end(jni);
    }

    /// VM death: the engines stop, the exit dump (`doe=y`) is written, then
    /// everything is flushed and closed. Returns the bytes written, when
    /// the output is a regular file.
    pub fn vm_death(&self, jni: Option<&JniEnv>) -> Option<u64> {
        if self.run.lifecycle.end() {
            return None;
        }
        self.write_to_the_end(jni)
    }

    /// What VM death does, once.
    fn write_to_the_end(&self, jni: Option<&JniEnv>) -> Option<u64> {
        let run = &self.run;
        self.listener.stop();
        for engine in self.engines.all() {
            engine.stop(run, jni);
        }
        // A SIGQUIT dump still being written is waited for, then the exit
        // dump follows it: what happened since that dump is not lost.
        let _guard = self.dumping.lock();
        if run.options.doe && run.lifecycle.began() {
            crate::agent::run::dump_sequence::dump(run, &self.engines, jni);
        }
        for engine in self.engines.all() {
            engine.finished();
        }
        let written = run.writer.close().and_then(|sink| sink.position());
        let stall = run.writer.longest_stall();
        if run.options.verbose && stall >= SLOW_OUTPUT && !run.writer.has_failed() {
            eprintln!(
                "HPROF: the output made no progress for up to {:.1} s; \
                 the run waited for it and wrote it to the end",
                stall.as_secs_f64()
            );
        }
        written
    }
}

/// Set when VM death came while another thread wrote a profile to its end:
/// the process ends under that thread, and its output is cut.
static EXIT_DURING_END: AtomicBool = AtomicBool::new(false);

/// Whether the JVM began to exit while a profile was being written to its
/// end (an attach that then still answers says so).
pub fn jvm_exited_during_end() -> bool {
    EXIT_DURING_END.load(Ordering::Acquire)
}
