//! The dump sequence (SIGQUIT, heap exhaustion, VM death): what a verbose
//! dump announces, the order of the sections, and how a failure is told.

use crate::agent::run::engine::Run;
use crate::agent::run::engines::Engines;
use crate::model::Model;
use jvmti_bindings::prelude::*;

/// Writes every engine's section, then flushes. The caller holds the
/// run's dump lock.
pub fn dump(run: &Run, engines: &Engines, jni: Option<&JniEnv>) {
    let parts: Vec<&str> = engines.all().map(|e| e.dump_announcement(run)).collect();
    let announce = run.options.verbose && !parts.is_empty();
    if announce {
        eprint!("Dumping{}", parts.concat());
    }
    // The VM-death callback brings its JNI environment; a SIGQUIT dump
    // runs on the Signal Dispatcher, a Java thread whose own one is used.
    let current_env;
    let jni = match jni {
        Some(jni) => Some(jni),
        None => {
            current_env = run.vm.current_env();
            current_env.as_ref()
        }
    };
    // First what runs Java code or writes on its own (the heap dump), then
    // the sections under one model lock, in HPROF's order; each prints the
    // traces it refers to first.
    let errors: Vec<String> = engines
        .all()
        .filter_map(|e| e.prepare_dump(run, jni).err())
        .collect();
    crate::agent::jvm::class_unloads::post_pending();
    let mut model = run.model.lock();
    retire_unloaded_for_dump(run, &mut model);
    // Each section goes to the writer as soon as it is made, so that a big
    // profile's sections are never all in memory at once.
    run.writer.write(run.emitter.class_loads(&mut model));
    for engine in engines.all() {
        let mut bytes = Vec::new();
        engine.dump_section(run, &mut model, &mut bytes);
        run.writer.write(bytes);
    }
    drop(model);
    run.writer.flush();
    // One failure, one line: when the output itself failed too (a full
    // disk holds both), the writer's line already says the output stops.
    if !run.writer.has_failed() {
        for message in errors {
            let new_line = if run.options.verbose { "\n" } else { "" };
            eprintln!("{new_line}HPROF ERROR: {message}");
        }
    }
    if announce {
        eprintln!(" done.");
    }
}

/// Every class unloaded so far taken out of the tables, their keys gone;
/// with the hidden `X` bit TABLE_SIZES_AT_DUMPS, what the tables hold after it.
fn retire_unloaded_for_dump(run: &Run, model: &mut Model) {
    crate::agent::run::classes::retire_unloaded(model);
    model.frames.settle();
    if run.options.experiment & crate::options::experiment::TABLE_SIZES_AT_DUMPS != 0 {
        eprintln!(
            "HPROF: {} classes unloaded so far, {} loaded; {} frame keys held",
            model.classes.unloaded_from(0).len(),
            model.classes.loaded_len(),
            model.frames.key_count(),
        );
    }
}
