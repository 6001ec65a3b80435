//! The heap dump copy's side of the output: the blocks of a JVM heap dump,
//! copied or converted by the emitter, go to the writer thread through a
//! few buffers that cycle between the two, with progress reports for a
//! long copy.

use super::writer::OutputWriter;
use crossbeam_channel::{Receiver, Sender, bounded};
use std::time::{Duration, Instant};

/// Where a heap dump's copy sends its blocks: the writer thread, with a
/// few buffers cycling between them (one filled while the others are
/// written, so that on two cores reading and writing overlap and memory
/// stays bounded), and, with verbose=y, progress reports on stderr.
pub struct HeapDumpOutput<'a> {
    writer: &'a OutputWriter,
    give_back: Sender<Vec<u8>>,
    returned: Receiver<Vec<u8>>,
    buffers_made: usize,
    progress: Option<Progress>,
}

/// Buffers cycled through the writer thread (each up to 2 MiB for a heap dump copy).
const BUFFERS: usize = 3;

/// How often a long dump reports progress.
const PROGRESS_EVERY: Duration = Duration::from_secs(2);

struct Progress {
    started: Instant,
    last_report: Instant,
    total: u64,
    copied: u64,
}

impl<'a> HeapDumpOutput<'a> {
    /// Holds the output for the dump: records other threads make meanwhile
    /// (threads started, classes loaded) are written after it, not inside
    /// its segments.
    pub fn new(writer: &'a OutputWriter) -> Self {
        writer.hold();
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

    /// The output file's offset of the next byte handed over, when the
    /// output is a regular file (see [`OutputWriter::position`]).
    pub fn position(&self) -> Option<u64> {
        self.writer.position()
    }

    /// Starts progress reports for a copy that follows the JVM's dump as
    /// it is written (its size is not known yet).
    pub fn report_progress_as_written(&mut self) {
        let now = Instant::now();
        self.progress = Some(Progress {
            started: now,
            last_report: now,
            total: 0,
            copied: 0,
        });
    }

    /// Says how long a followed dump took, once it is copied, and how
    /// long of that the JVM's own dump took.
    pub fn report_done(&self, took: Duration, jvm_took: Duration) {
        if let Some(progress) = &self.progress
            && took >= PROGRESS_EVERY
        {
            eprintln!(
                "\nHPROF: the JVM's heap dump ({} MB) copied as it was written, in {:.1} s \
                 (the JVM's dump {:.1} s)",
                progress.copied >> 20,
                took.as_secs_f64(),
                jvm_took.as_secs_f64()
            );
        }
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

impl Drop for HeapDumpOutput<'_> {
    fn drop(&mut self) {
        self.writer.release();
    }
}

impl Progress {
    fn copied(&mut self, n: u64) {
        self.copied += n;
        let now = Instant::now();
        if now.duration_since(self.last_report) >= PROGRESS_EVERY {
            self.last_report = now;
            let seconds = now.duration_since(self.started).as_secs_f64();
            if self.total == 0 {
                eprintln!(
                    "HPROF: heap dump: {} MB copied as the JVM writes it ({seconds:.1} s)",
                    self.copied >> 20
                );
            } else {
                eprintln!(
                    "HPROF: heap dump: {} of {} MB copied ({:.0}%, {seconds:.1} s)",
                    self.copied >> 20,
                    self.total >> 20,
                    100.0 * self.copied as f64 / self.total.max(1) as f64,
                );
            }
        }
    }
}
