//! The heap=dump collector: asks the JVM to write its own heap dump (the
//! HotSpot dumper behind `jcmd GC.heap_dump`) into a temporary file, which
//! the emitter then carries into our output. The dumper is reached through
//! the JVM's management function table (see `jmm.rs`), so that the dump
//! holds the program's objects only; the HotSpotDiagnostic management bean
//! is the fallback. The JVM's dumper is the fastest way to a complete dump
//! and needs only a few MB of extra memory; see README.md ("heap=dump") for
//! what that choice means for the output.

use super::jmm::{HeapDumper, dump_heap_through_bean};
use super::jvm::{self, LocalString};
use crate::output::OutputWriter;
use crossbeam_channel::{Receiver, Sender, bounded};
use jvmti_bindings::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Writes the JVM's heap dump of live objects to `path` (which must not
/// exist), through the MXBean if `through_bean` or if the management table
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
            if dumper.dump(jni, path_string) {
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
            dump_heap_through_bean(jni, path_string, &failed)
        }
    };
    result.map_err(|reason| {
        format!("cannot dump the heap to {path}: {reason}; no heap dump in this output")
    })
}

/// Where a heap dump's copy sends its blocks: the writer thread, with a
/// few buffers cycling between them (one filled while the others are
/// written, so that on two cores reading and writing overlap and memory
/// stays bounded), and, with verbose=y, progress reports on stderr.
pub struct DumpOutput<'a> {
    writer: &'a OutputWriter,
    give_back: Sender<Vec<u8>>,
    returned: Receiver<Vec<u8>>,
    buffers_made: usize,
    progress: Option<Progress>,
}

/// Buffers cycled through the writer thread (each up to 8 MiB).
const BUFFERS: usize = 3;

/// How often a long dump reports progress.
const PROGRESS_EVERY: Duration = Duration::from_secs(2);

struct Progress {
    started: Instant,
    last_report: Instant,
    total: u64,
    copied: u64,
}

impl<'a> DumpOutput<'a> {
    pub fn new(writer: &'a OutputWriter) -> Self {
        let (give_back, returned) = bounded(BUFFERS);
        Self {
            writer,
            give_back,
            returned,
            buffers_made: 1,
            progress: None,
        }
    }

    /// Starts progress reports for a copy of `total` bytes, after the
    /// JVM's dumper took `dumping`.
    pub fn report_progress(&mut self, total: u64, dumping: Duration) {
        if dumping >= PROGRESS_EVERY {
            eprintln!(
                "\nHPROF: the JVM wrote its heap dump ({} MB) in {:.1} s; copying it",
                total >> 20,
                dumping.as_secs_f64()
            );
        }
        let now = Instant::now();
        self.progress = Some(Progress {
            started: now,
            last_report: now,
            total,
            copied: 0,
        });
    }

    /// Hands `bytes` to the writer and gives back an empty buffer to fill.
    pub fn hand_over(&mut self, bytes: Vec<u8>) -> Vec<u8> {
        if let Some(progress) = &mut self.progress {
            progress.copied(bytes.len() as u64);
        }
        self.writer.write_and_return(bytes, &self.give_back);
        if self.buffers_made < BUFFERS {
            self.buffers_made += 1;
            return Vec::new();
        }
        // A writer that stopped or stalled sends nothing back: the copy
        // goes on into fresh buffers, which the writer drops.
        self.writer.receive(&self.returned).unwrap_or_default()
    }
}

impl Progress {
    fn copied(&mut self, n: u64) {
        self.copied += n;
        let now = Instant::now();
        if now.duration_since(self.last_report) >= PROGRESS_EVERY {
            self.last_report = now;
            eprintln!(
                "HPROF: heap dump: {} of {} MB copied ({:.0}%, {:.1} s)",
                self.copied >> 20,
                self.total >> 20,
                100.0 * self.copied as f64 / self.total.max(1) as f64,
                now.duration_since(self.started).as_secs_f64()
            );
        }
    }
}
