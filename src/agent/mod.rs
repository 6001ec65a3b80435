//! The JVMTI agent: entry points, capabilities, event wiring. The work of
//! each event is done by [`profiler::Profiler`] and the collectors it uses.

mod alloc;
mod classes;
mod cpu_timers;
mod heapdump;
mod jmm;
mod jvm;
mod profiler;
mod sampler;
mod site_cache;
mod times;
mod traces;

use crate::options::{self, Parsed};
use crate::output::{OutputWriter, Sink};
use jvmti_bindings::prelude::*;
use profiler::Profiler;
use std::io::Write;
use std::sync::OnceLock;

/// The one profiling run of this process.
static PROFILER: OnceLock<Profiler> = OnceLock::new();

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
                traces::bound_depth(&mut options);
                options
            }
            Err(error) => {
                eprintln!("{}", error.message());
                std::process::exit(1);
            }
        };
        if let Some(first) = PROFILER.get() {
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
        let sink_name = match &options.destination {
            options::Destination::File(_) if std::path::Path::new(sink.describe()).is_file() => {
                sink.describe().to_owned()
            }
            // Not beside a device or a FIFO (/dev/full, a pipe): in the
            // temporary directory.
            options::Destination::File(_) => std::env::temp_dir()
                .join(options.default_file_name())
                .to_string_lossy()
                .into_owned(),
            options::Destination::Net { .. } => options.default_file_name().to_owned(),
        };
        let writer = OutputWriter::start(sink).unwrap_or_else(|e| {
            fail_at_load(&format!("cannot start the output writer thread: {e}"))
        });
        if let Err(message) = setup_jvmti(&jvmti, &options) {
            fail_at_load(&message);
        }
        install_panic_report();
        let vm = jvm::VmHandle::new(context.vm().raw());
        let _ = PROFILER.set(Profiler::new(
            options,
            &jvmti,
            vm,
            writer,
            heap_dump_temp_path(&sink_name),
        ));
        jni::JNI_OK
    }

    fn on_attach(&self, _context: AgentLoadContext<'_>) -> jni::jint {
        eprintln!(
            "HPROF ERROR: attaching to a running JVM is not supported yet; \
             start the JVM with -agentpath:<path>/libhprof_rs.so=<options> instead"
        );
        jni::JNI_ERR
    }

    fn callback_panicked(&self, event: &'static str) {
        eprintln!("HPROF ERROR: internal error in the {event} callback; the program continues");
    }

    fn vm_init(&self, context: CallbackContext<'_>, event: ThreadEvent) {
        if let Some(profiler) = PROFILER.get() {
            let jni = context.jni().map(|j| &**j);
            profiler.vm_init(jni, event.thread());
        }
    }

    fn thread_start(&self, context: CallbackContext<'_>, event: ThreadEvent) {
        if let Some(profiler) = PROFILER.get() {
            if profiler.options.experiment & options::experiment::PANIC_IN_THREAD_START != 0 {
                panic!("deliberate panic requested by X=0x100");
            }
            profiler.thread_started(context.jni().map(|j| &**j), event.thread());
        }
    }

    fn thread_end(&self, context: CallbackContext<'_>, event: ThreadEvent) {
        if let Some(profiler) = PROFILER.get() {
            profiler.thread_ended(context.jni().map(|j| &**j), event.thread());
        }
    }

    fn class_load(&self, _context: CallbackContext<'_>, event: ClassEvent) {
        if let Some(profiler) = PROFILER.get() {
            profiler.class_loaded(event.thread(), event.class());
        }
    }

    fn sampled_object_alloc(&self, _context: CallbackContext<'_>, event: ObjectAllocationEvent) {
        if let Some(profiler) = PROFILER.get() {
            profiler.object_allocated(event.thread(), event.object(), event.class(), event.size());
        }
    }

    fn object_free(&self, _context: CallbackContext<'_>, event: ObjectFreeEvent) {
        if let Some(profiler) = PROFILER.get() {
            profiler.object_freed(event.tag() as u64);
        }
    }

    fn class_file_load_hook<'callback>(
        &self,
        context: CallbackContext<'callback>,
        mut event: ClassFileLoadHookEvent<'callback>,
    ) {
        let Some(timing) = PROFILER.get().and_then(|p| p.method_timing()) else {
            return;
        };
        let name = event.name_str().ok().flatten();
        if let Some(bytes) = timing.rewrite(name.as_deref(), event.class_data()) {
            // On failure the class simply loads unchanged.
            let _ = event.set_transformed_class(&context, &bytes);
        }
    }

    fn exception_catch(&self, context: CallbackContext<'_>, event: ExceptionCatchEvent) {
        if let Some(timing) = PROFILER.get().and_then(|p| p.method_timing()) {
            timing.exception_caught(context.jvmti(), context.jni().map(|j| &**j), event.method());
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
        if let Some(profiler) = PROFILER.get() {
            profiler.heap_exhausted(context.jni().map(|j| &**j));
        }
    }

    fn data_dump_request(&self, _context: CallbackContext<'_>) {
        if let Some(profiler) = PROFILER.get() {
            profiler.data_dump_request();
        }
    }

    fn vm_death(&self, context: CallbackContext<'_>) {
        if let Some(profiler) = PROFILER.get() {
            profiler.vm_death(context.jni().map(|j| &**j));
        }
    }
}

/// Capabilities and callbacks at load time. Only what the options need is
/// requested: merely holding some capabilities slows compiled code.
fn setup_jvmti(jvmti: &Jvmti, options: &options::Options) -> Result<(), String> {
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
            if options.cpu_times {
                caps.set_can_generate_all_class_hook_events(true);
                caps.set_can_generate_exception_events(true);
            }
            if options.heap_sites {
                caps.set_can_generate_sampled_object_alloc_events(true);
                caps.set_can_generate_object_free_events(true);
            }
        })
        .map_err(|e| format!("Unable to get necessary JVMTI capabilities. ({e:?})"))?;
    if options.heap_sites {
        // Set at load time, before the first thread-local allocation buffer
        // exists: set later, each thread's current buffer would still run to
        // its old sample point (about 512 KiB) before every allocation is
        // reported. 0 reports every allocation; the JVMTI call takes an int.
        let interval = options.alloc_interval.min(i32::MAX as u64) as i32;
        jvmti
            .set_heap_sampling_interval(interval)
            .map_err(|e| format!("Unable to set the allocation sampling interval. ({e:?})"))?;
    }
    jvmti
        .set_default_agent_callbacks()
        .map_err(|e| format!("Unable to set JVMTI event callbacks. ({e:?})"))?;
    jvmti
        .enable_events_global(&[jvmti::JVMTI_EVENT_VM_INIT, jvmti::JVMTI_EVENT_VM_DEATH])
        .map_err(|e| format!("Unable to enable JVMTI events. ({e:?})"))
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

/// Where the JVM writes a heap dump before it is carried into the output:
/// beside the output file (in the temporary directory when the output is
/// a device or a FIFO, in the working directory for `net=`), with
/// the process id so that two JVMs never share one.
fn heap_dump_temp_path(output: &str) -> String {
    // The JVM insists on the .hprof ending.
    format!("{output}.{}.TMP.hprof", std::process::id())
}
