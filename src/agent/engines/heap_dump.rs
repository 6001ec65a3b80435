//! The heap=dump engine: at each dump the JVM writes its own heap dump to
//! a temporary file (see `heapdump.rs`), which is carried into the output
//! (binary) or converted to HPROF's text (ASCII), then removed.

use crate::agent::engine::{Engine, Run};
use crate::agent::heapdump;
use crate::agent::jvm::{self, GlobalRef, kind};
use crate::emit::heap::DumpMemory;
use crate::format::ascii::time::ctime_now;
use crate::options::{Format, experiment};
use crate::output::DumpOutput;
use jvmti_bindings::prelude::*;
use parking_lot::Mutex;

/// State of heap=dump.
pub struct HeapDump {
    /// Where the JVM writes its heap dump before it is carried over.
    path: String,
    /// That path as a Java string, made at VM init: at an OutOfMemoryError
    /// no string can be made for the dump. (Never deleted: it lives as
    /// long as the run.)
    path_string: Mutex<Option<GlobalRef<kind::String>>>,
    /// What carrying heap dumps over remembers from one dump to the next.
    memory: Mutex<DumpMemory>,
}

impl HeapDump {
    /// Dumps through a temporary file at `path`.
    pub fn new(path: String) -> Self {
        Self {
            path,
            path_string: Mutex::new(None),
            memory: Mutex::default(),
        }
    }

    /// The JVM dumps its heap to the temporary file, which is carried into
    /// the output and removed. On failure, what to tell the user.
    fn dump_heap(&self, run: &Run, jni: Option<&JniEnv>) -> Result<(), String> {
        let Some(jni) = jni else {
            return Err("no JNI environment on this thread; heap dump skipped".into());
        };
        let path = &self.path;
        let _ = std::fs::remove_file(path);
        let mut output = DumpOutput::new(&run.writer);
        let started = std::time::Instant::now();
        let prepared = *self.path_string.lock();
        let result = heapdump::dump_heap(
            jni,
            path,
            prepared.as_ref().map(GlobalRef::local),
            run.options.verbose,
            run.options.experiment & experiment::HEAP_DUMP_THROUGH_BEAN != 0,
        )
        .and_then(|()| {
            let malformed = |e| format!("the JVM's heap dump {path} is malformed: {e}");
            let mut dump = std::fs::File::open(path)
                .map_err(|e| crate::format::ParseError {
                    offset: 0,
                    message: format!("cannot open {path}: {e}"),
                })
                .map_err(malformed)?;
            // (Progress is in bytes of the JVM's dump, which the binary copy
            // follows one to one; the ASCII conversion does not.)
            if run.options.verbose && run.options.format == Format::Binary {
                let size = dump.metadata().map_or(0, |m| m.len());
                output.report_progress(size, started.elapsed());
            }
            let mut out = |bytes: Vec<u8>| output.hand_over(bytes);
            match run.options.format {
                Format::Binary => {
                    let mut memory = self.memory.lock();
                    run.emitter
                        .carry_heap_dump(&mut dump, &run.model, &mut memory, &mut out)
                        .map(|_| ())
                        .map_err(malformed)
                }
                // The JVM's dumper of JDK 11 to 17 lists a class's fields
                // last-declared first; HPROF's ASCII lists them in declaration
                // order. (The property is read now: it is not set at load time.)
                Format::Ascii => run
                    .emitter
                    .ascii_heap_dump(
                        &mut dump,
                        &run.model,
                        &ctime_now(),
                        jvm::java_feature_version(&run.jvmti.env()).is_some_and(|v| v < 21),
                        &mut out,
                    )
                    .map_err(malformed),
            }
        });
        let _ = std::fs::remove_file(path);
        result
    }
}

impl Engine for HeapDump {
    fn vm_init(&self, _run: &Run, jni: Option<&JniEnv>) {
        if let Some(jni) = jni {
            *self.path_string.lock() = jvm::new_global_string(jni, &self.path);
        }
    }

    fn dump_announcement(&self, _run: &Run) -> &'static str {
        " Java heap ..."
    }

    /// The heap dump comes first, after the classes and traces its records
    /// refer to, and is written as it is copied.
    fn prepare_dump(&self, run: &Run, jni: Option<&JniEnv>) -> Result<(), String> {
        let mut model = run.model.lock();
        let mut bytes = run.emitter.class_loads(&mut model);
        bytes.extend(run.emitter.unprinted_traces(&mut model));
        drop(model);
        run.writer.write(bytes);
        self.dump_heap(run, jni)
    }
}
