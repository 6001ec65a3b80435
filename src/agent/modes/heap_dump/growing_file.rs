//! Reading the JVM's heap dump while the JVM writes it.
//!
//! HotSpot's dumper (heapDumper.cpp) creates its file with
//! `os::create_binary_file(path, false)`, that is `O_CREAT|O_EXCL`: nothing
//! may be at the path beforehand, so no FIFO can be handed to it. It then
//! writes the file from start to end (JDK 17+: each HEAP DUMP SEGMENT is
//! whole in the dumper's buffer, its length filled in, before it is
//! written; JDK 11 writes a segment's length last, seeking back, so JDK 11
//! dumps are not followed). JDK 22+ write the heap's objects to segment
//! files `<path>.p<N>` during the safepoint and append them to `<path>`
//! afterwards (with sendfile): the file still grows from start to end, its
//! objects arriving in the merge.
//!
//! [`GrowingFile`] reads such a file as it grows: at its current end it
//! waits (polling every millisecond or so) until more comes or the dump is
//! over. Behind the reader it punches holes
//! (`fallocate(FALLOC_FL_PUNCH_HOLE)`), so that the file never holds on
//! disk more than what was written and not yet read: a dump of a heap
//! larger than the free space left by the output itself still completes.

use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::io::AsRawFd;
use std::path::Path;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;

/// How far the JVM's dump has got, as the dumping thread tells it.
#[derive(Default)]
pub struct DumpState(AtomicU8);

const RUNNING: u8 = 0;
const DONE: u8 = 1;
const FAILED: u8 = 2;

impl DumpState {
    /// The JVM's dumper has returned, successfully or not.
    pub fn finish(&self, ok: bool) {
        self.0
            .store(if ok { DONE } else { FAILED }, Ordering::Release);
    }

    fn get(&self) -> u8 {
        self.0.load(Ordering::Acquire)
    }
}

/// How long the reader sleeps when it has caught up with the JVM.
const WAIT: Duration = Duration::from_millis(1);

/// Bytes read before the read part is released from the disk.
const PUNCH_EVERY: u64 = 16 << 20;

/// A file being written by the JVM's dumper, read as it grows.
pub struct GrowingFile<'a> {
    file: File,
    state: &'a DumpState,
    /// Bytes read so far.
    read: u64,
    /// Bytes released from the disk so far.
    punched: u64,
    /// Punching holes works on this file system.
    can_punch: bool,
}

impl<'a> GrowingFile<'a> {
    /// Waits for the JVM to create `path`, then opens it; None if the dump
    /// ended (or failed) without it, or it is not the JVM's file.
    ///
    /// The file must be the one the JVM's dumper made (holes are punched in
    /// it): the dumper creates it with `O_EXCL` and keeps it open while it
    /// writes, so while the dump runs this process holds a second descriptor
    /// on the same file. Without one, the file is taken only once the JVM
    /// says its dump succeeded (then the file at the path is the one it
    /// wrote); a file someone else put there makes the JVM fail instead.
    pub fn open_when_created(path: &Path, state: &'a DumpState) -> Option<GrowingFile<'a>> {
        loop {
            let finished = state.get() != RUNNING;
            // Read and write: punching holes needs a file open for writing.
            // (The file is ours: the JVM made it for this dump, mode 0600.)
            match OpenOptions::new().read(true).write(true).open(path) {
                Ok(file) if file.metadata().is_ok_and(|m| m.is_file()) => {
                    if !held_elsewhere_in_this_process(&file) {
                        while state.get() == RUNNING {
                            std::thread::sleep(WAIT);
                        }
                        if state.get() != DONE {
                            return None;
                        }
                    }
                    return Some(GrowingFile {
                        file,
                        state,
                        read: 0,
                        punched: 0,
                        can_punch: true,
                    });
                }
                Ok(_) => return None,
                Err(_) if finished => return None,
                Err(_) => std::thread::sleep(WAIT),
            }
        }
    }

    /// Releases the disk space of what has been read, in whole blocks.
    fn release_read_part(&mut self) {
        let upto = self.read & !((1 << 20) - 1);
        if !self.can_punch || upto < self.punched + PUNCH_EVERY {
            return;
        }
        // The range lies wholly behind what was read and will not be read
        // again.
        let done = crate::sys::punch_hole(&self.file, self.punched, upto - self.punched);
        if done {
            self.punched = upto;
        } else {
            // A file system without hole punching: the file keeps its size.
            self.can_punch = false;
        }
    }
}

/// Whether another descriptor of this process is open on `file`'s file
/// (found through /proc/self/fd).
fn held_elsewhere_in_this_process(file: &File) -> bool {
    use std::os::unix::fs::MetadataExt;
    let Ok(ours) = file.metadata() else {
        return false;
    };
    let own_fd = file.as_raw_fd().to_string();
    let Ok(entries) = std::fs::read_dir("/proc/self/fd") else {
        return false;
    };
    entries.flatten().any(|entry| {
        entry.file_name().to_str() != Some(own_fd.as_str())
            && std::fs::metadata(entry.path())
                .is_ok_and(|m| m.dev() == ours.dev() && m.ino() == ours.ino())
    })
}

impl Read for GrowingFile<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            // The state is read before the file: bytes written before the
            // dumper returned are seen by the read that follows.
            let state = self.state.get();
            let n = self.file.read(buf)?;
            if n > 0 {
                self.read += n as u64;
                self.release_read_part();
                return Ok(n);
            }
            match state {
                RUNNING => std::thread::sleep(WAIT),
                DONE => return Ok(0),
                _ => {
                    return Err(io::Error::other("the JVM's dump stopped"));
                }
            }
        }
    }
}
