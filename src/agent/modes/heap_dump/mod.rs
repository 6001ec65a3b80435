//! The heap=dump engine: at each dump the JVM writes its own heap dump to
//! a temporary file (see `modes/heap_dump/jvm_dumper.rs`) in a private directory of the run,
//! which is carried into the output (binary) or converted to HPROF's text
//! (ASCII), then removed.

pub mod growing_file;
pub mod jvm_dumper;

use crate::agent::jvm::libjvm::{self, BoolFlag};
use crate::agent::jvm::{self, GlobalRef, kind};
use crate::agent::run::collection::may_force_collection;
use crate::agent::run::engine::{Engine, Run};
use crate::emit::clock::ctime_now;
use crate::emit::heap_dump_copy::DumpMemory;
use crate::emit::heap_dump_refs::OnePassOutcome;
use crate::format::binary::object_layout::ObjectLayout;
use crate::options::{Format, experiment};
use crate::output::sink::FileWork;
use crate::output::{HeapDumpOutput, PrivateDir};
use growing_file::{DumpState, GrowingFile};
use jvmti_bindings::prelude::*;
use parking_lot::Mutex;
use std::os::unix::fs::FileExt;

/// The copy thread's stack: its deepest path is a few frames of the heap
/// walk over buffers on the heap.
const COPY_STACK: usize = 512 << 10;

/// State of heap=dump.
pub struct HeapDump {
    /// The run's private directory (mode 0700, a random name) that holds
    /// the temporary file: no other user can plant or read anything there.
    dir: PrivateDir,
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
    /// Dumps through a temporary file in `dir`, which it removes once the
    /// run's last dump is done.
    pub fn new(dir: PrivateDir) -> Self {
        // (The JVM insists on the .hprof ending.)
        let path = dir.path().join("heap.hprof").to_string_lossy().into_owned();
        Self {
            dir,
            path,
            path_string: Mutex::new(None),
            memory: Mutex::default(),
        }
    }

    /// The JVM exits while another thread dumps (an attached heap=dump): the
    /// temporary files and the private directory go now, since that thread
    /// will not finish. A file still open (the JVM's dumper writing it, the
    /// copy reading it) is freed when closed, at exit at the latest. The
    /// directory is ours alone (mode 0700): whatever is in it is the
    /// dumper's (JDK 21's parallel dump writes parts beside the file).
    /// A file made between the listing and the removal is tried again.
    pub fn remove_temporary(&self) {
        for _ in 0..5 {
            if let Ok(entries) = std::fs::read_dir(self.dir.path()) {
                for entry in entries.flatten() {
                    let _ = std::fs::remove_file(entry.path());
                }
            }
            match std::fs::remove_dir(self.dir.path()) {
                Err(e) if e.kind() == std::io::ErrorKind::DirectoryNotEmpty => continue,
                _ => return,
            }
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
        let mut output = HeapDumpOutput::new(&run.writer);
        // A binary dump into a regular output file is copied as the JVM
        // writes it (JDK 17+; see `modes/heap_dump/growing_file.rs`); the rest is copied
        // once the JVM is done.
        let follow = run.options.format == Format::Binary
            && jvm::java_feature_version(&run.jvmti.env()).is_some_and(|v| v >= 17)
            && std::fs::symlink_metadata(path).is_err();
        if follow && let Some(base) = output.position() {
            let result = self.dump_following(run, jni, &mut output, base);
            let _ = std::fs::remove_file(path);
            return result;
        }
        let started = std::time::Instant::now();
        let result = self.ask_the_jvm(run, jni).and_then(|()| {
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
                        &object_layout(run).unwrap_or(USUAL_LAYOUT),
                        &mut out,
                    )
                    .map_err(malformed),
            }
        });
        let _ = std::fs::remove_file(path);
        result
    }

    /// Asks the JVM to write its heap dump to the temporary file.
    fn ask_the_jvm(&self, run: &Run, jni: &JniEnv) -> Result<(), String> {
        let prepared = *self.path_string.lock();
        jvm_dumper::dump_heap(
            jni,
            &self.path,
            prepared.as_ref().map(GlobalRef::local),
            run.options.verbose,
            run.options.experiment & experiment::HEAP_DUMP_THROUGH_BEAN != 0,
            // The JVM's dumper collects before a dump of live objects: at
            // the exit dump of a collector that can no longer collect, it
            // would wait forever (the prelude says the dump holds garbage).
            may_force_collection(run),
        )
    }

    /// The JVM writes its dump on this thread while another copies it into
    /// the output as it grows, in one pass; references to objects the dump
    /// lacks are then nulled in the output file, whose carried dump starts
    /// at `base`.
    fn dump_following(
        &self,
        run: &Run,
        jni: &JniEnv,
        output: &mut HeapDumpOutput,
        base: u64,
    ) -> Result<(), String> {
        let path = std::path::Path::new(&self.path);
        let state = DumpState::default();
        let started = std::time::Instant::now();
        let (asked, copied, jvm_took) = std::thread::scope(|scope| {
            let copy = std::thread::Builder::new()
                .name("hprof-rs heap dump copy".into())
                .stack_size(COPY_STACK)
                .spawn_scoped(scope, || {
                    let input = GrowingFile::open_when_created(path, &state)?;
                    if run.options.verbose {
                        output.report_progress_as_written();
                    }
                    let mut memory = self.memory.lock();
                    let mut out = |bytes: Vec<u8>| output.hand_over(bytes);
                    Some(run.emitter.carry_heap_dump_one_pass(
                        input,
                        object_layout(run).unwrap_or(ObjectLayout::SMALLEST),
                        &run.model,
                        &mut memory,
                        &mut out,
                    ))
                });
            let asked = self.ask_the_jvm(run, jni);
            let jvm_took = started.elapsed();
            state.finish(asked.is_ok());
            let copied = match copy {
                Ok(handle) => handle.join().unwrap_or(None),
                Err(_) => None,
            };
            (asked, copied, jvm_took)
        });
        if run.options.verbose {
            output.report_done(started.elapsed(), jvm_took);
        }
        let Some(outcome) = copied else {
            // Nothing was copied: the JVM made no file, or the copy could
            // not run (then the dump, if any, is left out).
            return asked.and(Err(format!(
                "cannot copy the JVM's heap dump {}; no heap dump in this output",
                self.path
            )));
        };
        let mut outcome = outcome;
        // The agent's own notes, not HPROF's progress line: with debug=y.
        if run.options.debug {
            eprintln!("HPROF: the copy's notes: {}", outcome.notes);
        }
        let patched = self.patch_output(run, &mut outcome, base);
        match (asked, outcome.error) {
            (Err(message), _) if outcome.incomplete => Err(message.replace(
                "; no heap dump in this output",
                "; the heap dump in this output is cut short",
            )),
            (Err(message), _) => Err(message),
            (Ok(()), Some(e)) => Err(format!(
                "the JVM's heap dump {} is malformed: {e}",
                self.path
            )),
            (Ok(()), None) => patched,
        }
    }

    /// Nulls the dangling references and fixes a cut segment's length in
    /// the output file.
    fn patch_output(
        &self,
        run: &Run,
        outcome: &mut OnePassOutcome,
        base: u64,
    ) -> Result<(), String> {
        let fixes = outcome.fixes.clone();
        // The patch runs on the writer thread, which owns the file; it
        // takes what it needs.
        let patch = outcome.dangling.take();
        if fixes.is_empty() && patch.is_none() {
            return Ok(());
        }
        let blocks = patch.as_ref().map_or(0, |d| d.blocks());
        let work: FileWork = Box::new(move |read, write, progress| {
            let mut dropped = 0;
            if let Some(patch) = &patch {
                dropped = patch.apply(read, write, base, progress)?;
            }
            for (at, bytes) in &fixes {
                write.write_all_at(bytes, base + at)?;
            }
            Ok(dropped)
        });
        match run.writer.work_on_file(work) {
            Some(Ok(dropped)) => {
                if run.options.debug {
                    eprintln!(
                        "HPROF: {dropped} references to objects the JVM's dump lacks set to null \
                         ({blocks} blocks of the output read back)"
                    );
                }
                Ok(())
            }
            Some(Err(e)) => Err(format!(
                "cannot patch the heap dump in the output: {e}; some references in it may dangle"
            )),
            // The output stopped: its own line says so.
            None => Ok(()),
        }
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

    /// No dump comes after the last one: the private directory goes.
    fn finished(&self) {
        let _ = std::fs::remove_file(&self.path);
        self.dir.remove();
    }

    /// The heap dump comes first, after the classes and traces its records
    /// refer to, and is written as it is copied.
    fn prepare_dump(&self, run: &Run, jni: Option<&JniEnv>) -> Result<(), String> {
        let mut model = run.model.lock();
        let mut bytes = run.emitter.class_loads(&mut model);
        if let Some(layout) = object_layout(run) {
            run.emitter
                .object_layout_note(&mut model, &layout, &mut bytes);
        }
        run.emitter.unprinted_traces(&mut model, &mut bytes);
        drop(model);
        run.writer.write(bytes);
        self.dump_heap(run, jni)
    }
}

/// The layout ASCII dumps are sized for when the JVM's flags cannot be
/// read: HotSpot's default on 64 bits.
const USUAL_LAYOUT: ObjectLayout = ObjectLayout::hotspot(false, true, true);

/// The JVM's object layout, from its flags and version: written into a
/// binary file for readers to size objects as the JVM does, used for the
/// sizes of an ASCII dump and, by the one-pass copy, to bound object sizes
/// from below. None when a flag cannot be read (the copy then takes the
/// smallest layout HotSpot has, still right, less compact).
fn object_layout(run: &Run) -> Option<ObjectLayout> {
    let compact = match libjvm::bool_flag(c"UseCompactObjectHeaders") {
        BoolFlag::Value(on) => Some(on),
        // JDK 11 to 23 have no compact headers.
        BoolFlag::Absent => Some(false),
        BoolFlag::Unreadable => None,
    };
    let flag = |name| match libjvm::bool_flag(name) {
        BoolFlag::Value(on) => Some(on),
        BoolFlag::Absent | BoolFlag::Unreadable => None,
    };
    let (Some(compact), Some(class_pointers), Some(oops)) = (
        compact,
        flag(c"UseCompressedClassPointers"),
        flag(c"UseCompressedOops"),
    ) else {
        return None;
    };
    let mut layout = ObjectLayout::hotspot(compact, class_pointers, oops);
    if let Some(version) = jvm::java_feature_version(&run.jvmti.env()) {
        layout = layout.of_jdk(version);
    }
    if let Some(alignment) = libjvm::int_flag(c"ObjectAlignmentInBytes") {
        layout = layout.aligned_to(alignment.try_into().unwrap_or(0));
    }
    Some(layout)
}
