//! The heap=dump collector: asks the JVM to write its own heap dump (the
//! HotSpot dumper behind `jcmd GC.heap_dump`) into a temporary file, which
//! the emitter then carries into our output. The dumper is reached through
//! the JVM's management function table (see `jvm/jmm.rs`), so that the dump
//! holds the program's objects only; the HotSpotDiagnostic management bean
//! is the fallback. The JVM's dumper is the fastest way to a complete dump
//! and needs only a few MB of extra memory; see docs/heap-dump.md for
//! what that choice means for the output.

use crate::agent::jvm::jmm::{HeapDumper, dump_heap_through_bean};
use crate::agent::jvm::{self, LocalString};
use jvmti_bindings::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering};

/// Writes the JVM's heap dump to `path` (which must not exist), of the live
/// objects if `live` (the JVM collects first), else of every object in the
/// heap; through the MXBean if `through_bean` or if the management table
/// is out of reach. On failure, the reason in a few words (the message of
/// the JVM's exception, e.g. `No space left on device`), with the JVM's
/// exception cleared and never printed: it is not the program's.
///
/// `prepared` is `path` as a Java string made ahead of time (a global
/// reference), for a dump at an OutOfMemoryError, when no new string can be
/// made; without it one is made here.
pub fn dump_heap(
    jni: &JniEnv,
    path: &str,
    prepared: Option<LocalString<'_>>,
    verbose: bool,
    through_bean: bool,
    live: bool,
) -> Result<(), String> {
    let failed = |what: &str| jvm::take_exception_message(jni).unwrap_or_else(|| what.to_owned());
    // Made here, the string's local reference goes when the dump is done.
    let made;
    let path_string = match prepared {
        Some(string) => string,
        None => {
            made = jvm::new_string(jni, path)
                .ok_or_else(|| failed("cannot make the path a Java string"))?;
            made.get()
        }
    };
    let dumper = if through_bean {
        Err("X=0x8000 asks for it".to_string())
    } else {
        HeapDumper::find(jni)
    };
    let result = match dumper {
        Ok(dumper) => {
            if dumper.dump(jni, path_string, live) {
                Ok(())
            } else {
                Err(failed("the JVM's dumper failed"))
            }
        }
        Err(why) => {
            static SAID: AtomicBool = AtomicBool::new(false);
            if verbose && !SAID.swap(true, Ordering::Relaxed) {
                eprintln!("\nHPROF: {why}; heap dumps go through the HotSpotDiagnostic MXBean");
            }
            dump_heap_through_bean(jni, path_string, live, &failed)
        }
    };
    result.map_err(|reason| {
        format!("cannot dump the heap to {path}: {reason}; no heap dump in this output")
    })
}
