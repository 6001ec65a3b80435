//! The JVMTI agent: its entry points. The lifecycle of the run is
//! `run::profiler::Profiler`'s (`run/`); each mode is an engine
//! (`run::engine::Engine`) in a folder of its own under `modes/`, whose
//! per-event callbacks are reached from here directly; the JVM boundary is
//! `jvm/`. The map is docs/ARCHITECTURE.md.

mod attach;
mod attach_reply;
mod current;
pub(crate) mod jvm;
pub(crate) mod modes;
pub(crate) mod run;

use crate::options::{self, Parsed};
use crate::output::{OutputWriter, PrivateDir, Sink};
use current::{make_current, profiler};
use jvmti_bindings::prelude::*;
use run::engines::{Allocated, Reported};
use run::profiler::Profiler;
use std::io::Write;

/// The agent type the JVM's entry points dispatch to.
#[derive(Default)]
pub struct HprofAgent;

export_agent!(HprofAgent);

/// Prints an HPROF-style error and ends the process, as the original did for
/// bad options and unusable output (the JVM has not started yet).
fn fail_at_load(message: &str) -> ! {
    eprintln!("HPROF ERROR: {message}");
    std::process::exit(1);
}

impl Agent for HprofAgent {
    fn on_load(&self, context: AgentLoadContext<'_>) -> jni::jint {
        let cmdline = context.options_lossy();
        let env_options = std::env::var("_JAVA_HPROF_OPTIONS").ok();
        let options = match options::parse(cmdline.as_deref(), env_options.as_deref()) {
            Ok(Parsed::Help) => {
                let mut stdout = std::io::stdout();
                let _ = stdout.write_all(options::help_text().as_bytes());
                let _ = stdout.flush();
                std::process::exit(0);
            }
            Ok(Parsed::Options(mut options)) => {
                crate::agent::run::traces::bound_depth(&mut options);
                options
            }
            Err(error) => {
                eprintln!("{}", error.message());
                std::process::exit(1);
            }
        };
        if let Some(first) = profiler() {
            // Nothing was profiled: the first load's file goes (if it made it).
            first.abandon_output();
            fail_at_load(
                "Cannot load this JVM TI agent twice, check your java command line for duplicate hprof options.",
            );
        }
        let jvmti = match context.vm().jvmti() {
            Ok(env) => env,
            Err(code) => fail_at_load(&format!("Unable to access JVMTI (GetEnv returned {code})")),
        };
        let raw_file_name = context.option_bytes().and_then(options::raw_file_value);
        let sink = Sink::open(&options, std::process::id(), raw_file_name)
            .unwrap_or_else(|e| fail_at_load(&e.0));
        let heap_dump_dir = options.heap_dump.then(|| {
            PrivateDir::for_heap_dumps(&options, &sink).unwrap_or_else(|e: String| fail_at_load(&e))
        });
        let writer = OutputWriter::start(sink).unwrap_or_else(|e| {
            fail_at_load(&format!("cannot start the output writer thread: {e}"))
        });
        let engines = crate::agent::run::engines::Engines::new(&options, heap_dump_dir, true);
        if engines
            .allocation_sites
            .as_ref()
            .is_some_and(|sites| sites.wants_thread_field())
            && let Err(why) = crate::agent::jvm::thread_field_env::install(context.vm().raw())
        {
            eprintln!(
                "HPROF ERROR: heap=sites cannot see java.lang.Thread load ({why}); traces stop at the allocating frame"
            );
        }
        if let Err(message) = crate::agent::run::profiler::setup_jvmti(
            &jvmti,
            &engines,
            crate::agent::run::profiler::Phase::OnLoad,
        ) {
            fail_at_load(&message);
        }
        install_panic_report();
        let vm = crate::agent::jvm::VmHandle::new(context.vm().raw());
        if make_current(Profiler::new(options, engines, &jvmti, vm, writer)).is_err() {
            fail_at_load("Cannot load this JVM TI agent twice");
        }
        jni::JNI_OK
    }

    fn on_attach(&self, context: AgentLoadContext<'_>) -> jni::jint {
        attach::on_attach(&context)
    }

    fn callback_panicked(&self, event: &'static str) {
        eprintln!("HPROF ERROR: internal error in the {event} callback; the program continues");
    }

    /// The JVM's start (early, with heap=sites rewriting classes as they
    /// load: before any Java code runs).
    fn vm_start(&self, context: CallbackContext<'_>) {
        if let Some(counting) = allocation_counting()
            && counting.rewrites_early()
        {
            let defined = match context.jni() {
                Some(jni) => counting.define_early_classes(jni),
                None => Err("no JNI environment at the JVM's start".into()),
            };
            // The classes loaded so far call the gate: without it the JVM
            // would fail in its first Java code, with a less clear error.
            if let Err(why) = defined {
                fail_at_load(&format!(
                    "heap=sites cannot define the classes the JDK's first classes call ({why}); alloc_count=events or -Xshare:on runs without them"
                ));
            }
        }
    }

    fn vm_init(&self, context: CallbackContext<'_>, event: ThreadEvent) {
        if let Some(profiler) = profiler() {
            let jni = context.jni().map(|j| &**j);
            // SAFETY: JVMTI guarantees an event's references are live for
            // the duration of the callback.
            let thread = unsafe { event_ref(&context, event.thread()) };
            profiler.vm_init(jni, thread);
        }
    }

    fn thread_start(&self, context: CallbackContext<'_>, event: ThreadEvent) {
        // Before anything else: the thread may be one whose stack size
        // field its starter has yet to write back.
        jvm::thread_stacks::wait_until_sizes_are_written_back();
        if let Some(profiler) = profiler() {
            if profiler.run.options.experiment & options::experiment::PANIC_IN_THREAD_START != 0 {
                panic!("deliberate panic requested by X=0x100");
            }
            // SAFETY: JVMTI guarantees an event's references are live for
            // the duration of the callback.
            let thread = unsafe { event_ref(&context, event.thread()) };
            profiler.thread_started(context.jni().map(|j| &**j), thread);
        }
    }

    fn thread_end(&self, context: CallbackContext<'_>, event: ThreadEvent) {
        if let Some(profiler) = profiler() {
            // SAFETY: JVMTI guarantees an event's references are live for
            // the duration of the callback.
            let thread = unsafe { event_ref(&context, event.thread()) };
            profiler.thread_ended(context.jni().map(|j| &**j), thread);
        }
    }

    fn virtual_thread_end(&self, context: CallbackContext<'_>, event: ThreadEvent) {
        if let Some(profiler) = profiler() {
            // SAFETY: JVMTI guarantees an event's references are live for
            // the duration of the callback.
            let thread = unsafe { event_ref(&context, event.thread()) };
            profiler.virtual_thread_ended(context.jni().map(|j| &**j), thread);
        }
    }

    fn class_load(&self, context: CallbackContext<'_>, event: ClassEvent) {
        if let Some(profiler) = profiler() {
            // SAFETY: JVMTI guarantees an event's references are live for
            // the duration of the callback.
            let (thread, class) = unsafe {
                (
                    event_ref(&context, event.thread()),
                    event_ref(&context, event.class()),
                )
            };
            profiler.class_loaded(thread, class);
        }
    }

    fn class_prepare(&self, context: CallbackContext<'_>, event: ClassEvent) {
        if let Some(samples) = profiler().and_then(|p| p.engines.cpu_samples.as_ref()) {
            // SAFETY: JVMTI guarantees an event's references are live for
            // the duration of the callback.
            let class = unsafe { event_ref(&context, event.class()) };
            samples.class_prepared(context.jvmti(), class);
        }
    }

    fn sampled_object_alloc(&self, context: CallbackContext<'_>, event: ObjectAllocationEvent) {
        object_allocated(&context, &event, Reported::Sampled);
    }

    /// Objects the byte code does not show (JNI, reflection, clone...),
    /// for heap=sites counted in the byte code.
    fn vm_object_alloc(&self, context: CallbackContext<'_>, event: ObjectAllocationEvent) {
        object_allocated(&context, &event, Reported::MadeByTheVm);
    }

    fn object_free(&self, _context: CallbackContext<'_>, event: ObjectFreeEvent) {
        if let Some(sites) = profiler().and_then(|p| p.engines.allocation_sites.as_ref()) {
            sites.object_freed(event.tag() as u64);
        }
    }

    fn class_file_load_hook<'callback>(
        &self,
        context: CallbackContext<'callback>,
        mut event: ClassFileLoadHookEvent<'callback>,
    ) {
        let lock_waits = profiler().and_then(|p| p.engines.lock_waits.as_ref());
        let counting = allocation_counting();
        let timing = method_timing();
        if lock_waits.is_none() && counting.is_none() && timing.is_none() {
            return;
        }
        let name = event.name_str().ok().flatten();
        let name = name.as_deref();
        let first_load = event.class_being_redefined().is_null();
        let counting =
            counting.filter(|c| !(first_load && name.is_some_and(|n| c.loads_unchanged(n))));
        // LockSupport's parks hooked for monitor=y, then allocations
        // counted for heap=sites, then every method timed for cpu=times
        // (the agent's own classes never are): each works on the one
        // before's output.
        let mut bytes: Option<Vec<u8>> =
            lock_waits.and_then(|l| l.rewrite(name, event.class_data()));
        if let Some(counted) =
            counting.and_then(|c| c.rewrite(name, bytes.as_deref().unwrap_or(event.class_data())))
        {
            bytes = Some(counted);
        }
        if let Some(timed) = timing
            .filter(|_| !name.is_some_and(crate::bci::is_agent_class))
            .and_then(|t| t.rewrite(name, bytes.as_deref().unwrap_or(event.class_data())))
        {
            bytes = Some(timed);
        }
        if let Some(bytes) = bytes {
            // On failure the class simply loads unchanged.
            let _ = event.set_transformed_class(&context, &bytes);
        }
    }

    fn resource_exhausted<'callback>(
        &self,
        context: CallbackContext<'callback>,
        event: ResourceExhaustedEvent<'callback>,
    ) {
        if event.flags() & jvmti::JVMTI_RESOURCE_EXHAUSTED_JAVA_HEAP == 0 {
            return;
        }
        if let Some(profiler) = profiler() {
            profiler.heap_exhausted(context.jni().map(|j| &**j));
        }
    }

    fn monitor_contended_enter(&self, context: CallbackContext<'_>, event: MonitorEvent) {
        if let Some((run, monitors)) = monitors() {
            // SAFETY: JVMTI guarantees an event's references are live for
            // the duration of the callback.
            let (thread, object) = unsafe { event_refs(&context, event.thread(), event.object()) };
            monitors.contended_enter(run, context.jni().map(|j| &**j), thread, object);
        }
    }

    fn monitor_contended_entered(&self, _context: CallbackContext<'_>, _event: MonitorEvent) {
        if let Some((run, monitors)) = monitors() {
            // (The event's thread is the current thread.)
            monitors.contended_entered(run);
        }
    }

    fn monitor_wait(&self, context: CallbackContext<'_>, event: MonitorWaitEvent) {
        if let Some((run, monitors)) = monitors() {
            // SAFETY: JVMTI guarantees an event's references are live for
            // the duration of the callback.
            let (thread, object) = unsafe { event_refs(&context, event.thread(), event.object()) };
            let jni = context.jni().map(|j| &**j);
            monitors.wait(run, jni, thread, object, event.timeout());
        }
    }

    fn monitor_waited(&self, context: CallbackContext<'_>, event: MonitorWaitedEvent) {
        if let Some((run, monitors)) = monitors() {
            // SAFETY: JVMTI guarantees an event's references are live for
            // the duration of the callback.
            let (thread, object) = unsafe { event_refs(&context, event.thread(), event.object()) };
            monitors.waited(run, context.jni().map(|j| &**j), thread, object);
        }
    }

    fn data_dump_request(&self, _context: CallbackContext<'_>) {
        if let Some(profiler) = profiler() {
            profiler.data_dump_request();
        }
    }

    fn vm_death(&self, context: CallbackContext<'_>) {
        if let Some(profiler) = profiler() {
            profiler.vm_death_event(context.jni().map(|j| &**j));
        }
    }
}

/// One of the references an event hands its callback, bound to the
/// callback's lifetime (that of its `context`).
///
/// # Safety
///
/// `raw` is a reference of the event `context` was made for, or null, and
/// `K` is its kind as the event's specification gives it.
#[inline(always)]
unsafe fn event_ref<'cb, K>(
    _context: &CallbackContext<'cb>,
    raw: jni::jobject,
) -> crate::agent::jvm::Local<'cb, K> {
    // SAFETY: JVMTI guarantees an event's references are live for the
    // duration of the callback, on the callback's thread.
    unsafe { crate::agent::jvm::Local::new(raw) }
}

/// Two of an event's references, as [`event_ref`] makes one.
///
/// # Safety
///
/// As for [`event_ref`], for each of `a` and `b`.
#[inline(always)]
unsafe fn event_refs<'cb, A, B>(
    context: &CallbackContext<'cb>,
    a: jni::jobject,
    b: jni::jobject,
) -> (
    crate::agent::jvm::Local<'cb, A>,
    crate::agent::jvm::Local<'cb, B>,
) {
    // SAFETY: the caller's promise, for each.
    unsafe { (event_ref(context, a), event_ref(context, b)) }
}

/// The run and its monitor=y engine, when monitor=y runs.
fn monitors() -> Option<(
    &'static crate::agent::run::engine::Run,
    &'static crate::agent::run::engines::Monitors,
)> {
    let profiler = profiler()?;
    Some((&profiler.run, profiler.engines.monitors.as_ref()?))
}

/// An allocation the JVM reports (SampledObjectAlloc or VMObjectAlloc),
/// counted by heap=sites.
fn object_allocated(context: &CallbackContext<'_>, event: &ObjectAllocationEvent, how: Reported) {
    if let Some(profiler) = profiler()
        && let Some(sites) = &profiler.engines.allocation_sites
    {
        // SAFETY: JVMTI guarantees an event's references are live for
        // the duration of the callback.
        let (thread, object, class) = unsafe {
            (
                event_ref(context, event.thread()),
                event_ref(context, event.object()),
                event_ref(context, event.class()),
            )
        };
        let jni = context.jni().map(|j| &**j);
        let allocated = Allocated {
            thread,
            object,
            class,
            size: event.size(),
            how,
        };
        sites.object_allocated(&profiler.run, jni, allocated);
    }
}

/// The bytecode allocation counting, when heap=sites runs with
/// alloc_count=bytecode.
fn allocation_counting()
-> Option<&'static crate::agent::modes::heap_sites::counting::BytecodeCounting> {
    profiler()
        .and_then(|p| p.engines.allocation_sites.as_ref())
        .and_then(|s| s.bytecode())
}

/// The link to the Tracker, when cpu=times or cpu=old runs.
fn method_timing() -> Option<&'static crate::agent::modes::cpu_times::timing::MethodTiming> {
    profiler()
        .and_then(|p| p.engines.method_times.as_ref())
        .map(|m| m.timing())
}

/// Panics inside the agent are caught at the callback boundary; this makes
/// the report say where it came from, in HPROF's error style.
fn install_panic_report() {
    std::panic::set_hook(Box::new(|info| {
        let location = info
            .location()
            .map(|l| format!(" [{}:{}]", l.file(), l.line()))
            .unwrap_or_default();
        let message = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown cause".into());
        eprintln!("HPROF ERROR: internal error: {message}{location}");
    }));
}
