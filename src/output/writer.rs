//! The writer thread: the only place that does output I/O, so collectors and
//! JVM callbacks never block on a slow disk or socket longer than a channel send.
//!
//! An output whose writes can block for ever for want of a reader (a
//! socket, a FIFO, a terminal) is not waited on forever: whoever waits for
//! the writer (a full queue, a flush, the close at exit) gives up once it
//! has made no progress for [`STALL_LIMIT`]. The output is then abandoned:
//! a socket is shut down (which also ends the write it is blocked in), the
//! rest of the profile is dropped and the number of bytes dropped is
//! reported once. A peer that accepts the connection but never reads can
//! therefore delay the JVM's exit by [`STALL_LIMIT`] at most.
//!
//! A regular file (or a block device) is written to the end however long
//! the disk takes (writeback throttled on a busy machine, NFS): waiting
//! there always ends, and the user asked for the whole file. The JVM's
//! exit waits for it as it waits for its own heap dump.

use super::sink::{FileWork, Sink};
use crossbeam_channel::{Receiver, RecvTimeoutError, SendTimeoutError, Sender, bounded};
use parking_lot::Mutex;
use std::io::Write;
use std::net::{Shutdown, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long an output that may stall for ever (a socket, a FIFO) may make
/// no progress before it is abandoned.
pub const STALL_LIMIT: Duration = Duration::from_secs(5);

/// How often a waiter checks for progress.
const POLL: Duration = Duration::from_millis(100);

enum Message {
    /// Bytes to write (kept aside while a stream holds the output).
    Bytes(Vec<u8>),
    /// A block of the stream that holds the output (a heap dump), and where
    /// to send the emptied buffer back.
    StreamBytes(Vec<u8>, Sender<Vec<u8>>),
    /// A stream (a heap dump) starts: until [`Message::Release`], other
    /// bytes are kept aside, so that none lands inside its records.
    Hold,
    /// The stream is done: what was kept aside is written, in order.
    Release,
    /// Flush, then acknowledge.
    Flush(Sender<()>),
    /// Flush, close the sink, acknowledge and stop.
    Close(Sender<()>),
    /// Nothing was profiled: undo the file's creation, acknowledge and stop.
    Abandon(Sender<()>),
    /// Send back the file offset of the next byte (None if the output is
    /// not a regular file).
    Position(Sender<Option<u64>>),
    /// Flush, run the work on the output file, send back its result.
    WorkOnFile(FileWork, Sender<std::io::Result<u64>>),
}

/// Messages queued before a sender waits for the writer to catch up.
const QUEUE_DEPTH: usize = 4096;

/// The most bytes of other records (threads started, classes loaded) kept
/// aside while a heap dump is written; beyond it they are dropped and
/// counted, and the release says so.
pub const HELD_LIMIT: usize = 64 << 20;

/// What the writer thread and its waiters share.
#[derive(Default)]
struct Shared {
    /// Messages the writer thread has finished with (it moves while output flows).
    progress: AtomicU64,
    /// Set when the output was given up for lack of progress.
    abandoned: AtomicBool,
    /// Bytes never written: after a write failure, or after abandoning.
    dropped: AtomicU64,
    /// Set once a write failed (and was reported): output has stopped.
    failed: AtomicBool,
    /// The output was abandoned because the `net=` peer closed the connection.
    peer_closed: AtomicBool,
    /// The output can block for ever (a socket, a FIFO): only then does a
    /// lack of progress give it up.
    may_stall_forever: bool,
    /// The longest time, in ms, a waiter saw the output make no progress.
    longest_stall_ms: AtomicU64,
}

/// Handle to the writer thread.
pub struct OutputWriter {
    queue: Sender<Message>,
    thread: Mutex<Option<JoinHandle<Sink>>>,
    shared: Arc<Shared>,
    /// The socket, when the output is one: shutting it down ends a write
    /// blocked on a peer that does not read.
    socket: Option<TcpStream>,
    /// The destination, for messages.
    name: String,
}

impl OutputWriter {
    /// Starts the writer thread on `sink`.
    pub fn start(sink: Sink) -> std::io::Result<Self> {
        let (queue, inbox) = bounded(QUEUE_DEPTH);
        let shared = Arc::new(Shared {
            may_stall_forever: sink.may_stall_forever(),
            ..Shared::default()
        });
        let socket = sink.socket_handle();
        let name = sink.describe().to_owned();
        let thread = {
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name("hprof-rs writer".into())
                .spawn(move || run(sink, inbox, &shared))?
        };
        Ok(Self {
            queue,
            thread: Mutex::new(Some(thread)),
            shared,
            socket,
            name,
        })
    }

    /// A second handle on the output socket, when the output is one (the
    /// `net=` front end sends its commands on it).
    pub fn socket_handle(&self) -> Option<TcpStream> {
        self.socket.as_ref().and_then(|s| s.try_clone().ok())
    }

    /// Queues bytes for output (after everything queued before them).
    pub fn write(&self, bytes: Vec<u8>) {
        if !bytes.is_empty() {
            self.send(Message::Bytes(bytes));
        }
    }

    /// Starts a stream that must not be interleaved (a heap dump, whose
    /// segments other records would cut): from now until
    /// [`release`](Self::release), what [`write`](Self::write) queues is
    /// kept aside (up to [`HELD_LIMIT`] bytes) and written after it.
    pub fn hold(&self) {
        self.send(Message::Hold);
    }

    /// Ends the stream started by [`hold`](Self::hold): what was kept aside
    /// is written, in the order it came.
    pub fn release(&self) {
        self.send(Message::Release);
    }

    /// Queues a block of the held stream, and once it is written sends the
    /// emptied buffer to `back`, so that a producer of a long stream (a heap
    /// dump) can cycle a few buffers instead of allocating one per block.
    pub fn write_and_return(&self, bytes: Vec<u8>, back: &Sender<Vec<u8>>) {
        self.send(Message::StreamBytes(bytes, back.clone()));
    }

    /// Whether the writer thread still takes output (it stops at close, and
    /// when the output was abandoned).
    pub fn is_open(&self) -> bool {
        self.thread.lock().is_some() && !self.shared.abandoned.load(Ordering::Acquire)
    }

    /// Whether the output has stopped: a write failed (the writer said so
    /// on stderr, once) or the output was abandoned for lack of progress.
    /// After [`flush`](Self::flush), this covers everything queued before.
    pub fn has_failed(&self) -> bool {
        self.shared.failed.load(Ordering::Acquire) || self.shared.abandoned.load(Ordering::Acquire)
    }

    /// Waits until everything queued so far is written and flushed.
    pub fn flush(&self) {
        let (done, wait) = bounded(1);
        if self.send(Message::Flush(done)) {
            self.wait_for(&wait);
        }
    }

    /// The output file's offset of the next byte queued (everything queued
    /// before is counted), when the output is a regular file; None for a
    /// socket, a FIFO or a device, or when the output has stopped.
    pub fn position(&self) -> Option<u64> {
        let (done, wait) = bounded(1);
        if self.send(Message::Position(done)) {
            self.receive(&wait).flatten()
        } else {
            None
        }
    }

    /// Runs `work` on the output file once everything queued before is
    /// written (see [`Sink::work_on_file`]). None when the output has
    /// stopped or stalled.
    pub fn work_on_file(&self, work: FileWork) -> Option<std::io::Result<u64>> {
        let (done, wait) = bounded(1);
        if self.send(Message::WorkOnFile(work, done)) {
            self.receive(&wait)
        } else {
            None
        }
    }

    /// Writes everything queued, closes the destination and stops the thread.
    /// Returns the sink (useful for tests of in-memory output). Later calls
    /// do nothing. Returns at the latest once the output made no progress
    /// for [`STALL_LIMIT`], reporting what was dropped.
    pub fn close(&self) -> Option<Sink> {
        self.finish(Message::Close)
    }

    /// The run is given up before anything was profiled: a file the run
    /// created is removed again.
    pub fn abandon(&self) {
        self.finish(Message::Abandon);
    }

    fn finish(&self, message: fn(Sender<()>) -> Message) -> Option<Sink> {
        let handle = self.thread.lock().take()?;
        let (done, wait) = bounded(1);
        let acknowledged = self.send(message(done)) && self.wait_for(&wait);
        let dropped = self.shared.dropped.load(Ordering::Acquire);
        if self.shared.peer_closed.load(Ordering::Acquire) {
            eprintln!(
                "HPROF ERROR: the front end at {} closed the connection; \
                 {dropped} bytes of profile dropped [writer.rs]",
                self.name
            );
        } else if self.shared.abandoned.load(Ordering::Acquire) {
            eprintln!(
                "HPROF ERROR: output to {} made no progress for {} s; stopped writing it, \
                 {dropped} bytes of profile dropped [writer.rs]",
                self.name,
                STALL_LIMIT.as_secs()
            );
        }
        // A writer stuck in a write that cannot be ended (a FIFO nobody
        // reads) is left behind; the process ends without it.
        if acknowledged {
            handle.join().ok()
        } else {
            None
        }
    }

    /// The longest time the output made no progress while someone waited
    /// for it (a slow disk shows here: a file is waited for to the end).
    pub fn longest_stall(&self) -> Duration {
        Duration::from_millis(self.shared.longest_stall_ms.load(Ordering::Acquire))
    }

    /// Queues a message, waiting while the queue is full as long as the
    /// output makes progress. False when the message was dropped.
    fn send(&self, mut message: Message) -> bool {
        let mut watch = StallWatch::new(&self.shared);
        loop {
            if self.shared.abandoned.load(Ordering::Acquire) {
                self.count_dropped(&message);
                return false;
            }
            match self.queue.send_timeout(message, POLL) {
                Ok(()) => return true,
                Err(SendTimeoutError::Disconnected(_)) => return false,
                Err(SendTimeoutError::Timeout(back)) => message = back,
            }
            if watch.stalled() {
                self.give_up();
            }
        }
    }

    /// Waits for the writer's acknowledgement as long as the output makes
    /// progress. True when it came.
    fn wait_for(&self, acknowledgement: &Receiver<()>) -> bool {
        self.receive(acknowledgement).is_some()
    }

    /// Waits for what the writer thread sends back on `from` (an
    /// acknowledgement, a written buffer) as long as the output makes
    /// progress; `None` once it has stalled or stopped.
    pub fn receive<T>(&self, from: &Receiver<T>) -> Option<T> {
        if self.shared.abandoned.load(Ordering::Acquire) {
            return from.try_recv().ok();
        }
        let mut watch = StallWatch::new(&self.shared);
        let mut deadline_after_giving_up = None;
        loop {
            match from.recv_timeout(POLL) {
                Ok(value) => return Some(value),
                Err(RecvTimeoutError::Disconnected) => return None,
                Err(RecvTimeoutError::Timeout) => {}
            }
            if let Some(deadline) = deadline_after_giving_up {
                // The socket is shut down: its writer returns at once. A
                // writer still busy is stuck in something else.
                if Instant::now() >= deadline {
                    return None;
                }
            } else if watch.stalled() || self.shared.abandoned.load(Ordering::Acquire) {
                self.give_up();
                deadline_after_giving_up = Some(Instant::now() + Duration::from_secs(1));
            }
        }
    }

    /// The `net=` peer closed the connection (its commands ended without
    /// EOF): the output is abandoned like a stalled one, so that nothing
    /// more is written into a connection nobody reads, and the close
    /// reports it once with what was dropped. (A peer that only shut down
    /// its sending side looks the same from here; a front end that wants
    /// the output but sends no more commands sends EOF instead.)
    pub fn peer_closed(&self) {
        if !self.shared.abandoned.load(Ordering::Acquire) && !self.has_failed() {
            self.shared.peer_closed.store(true, Ordering::Release);
            self.give_up();
        }
    }

    /// Abandons the output: later bytes are dropped, a socket is shut down.
    fn give_up(&self) {
        if !self.shared.abandoned.swap(true, Ordering::AcqRel)
            && let Some(socket) = &self.socket
        {
            let _ = socket.shutdown(Shutdown::Both);
        }
    }

    fn count_dropped(&self, message: &Message) {
        if let Message::Bytes(bytes) | Message::StreamBytes(bytes, _) = message {
            self.shared
                .dropped
                .fetch_add(bytes.len() as u64, Ordering::AcqRel);
        }
    }
}

/// Tells when the writer thread has made no progress for [`STALL_LIMIT`]
/// on an output that may stall for ever (never, on a regular file).
struct StallWatch<'a> {
    shared: &'a Shared,
    seen: u64,
    since: Instant,
}

impl<'a> StallWatch<'a> {
    fn new(shared: &'a Shared) -> Self {
        Self {
            shared,
            seen: shared.progress.load(Ordering::Acquire),
            since: Instant::now(),
        }
    }

    fn stalled(&mut self) -> bool {
        let now = self.shared.progress.load(Ordering::Acquire);
        if now != self.seen {
            self.seen = now;
            self.since = Instant::now();
        }
        let stalled_for = self.since.elapsed();
        self.shared.longest_stall_ms.fetch_max(
            u64::try_from(stalled_for.as_millis()).unwrap_or(u64::MAX),
            Ordering::AcqRel,
        );
        self.shared.may_stall_forever && stalled_for >= STALL_LIMIT
    }
}

fn run(mut sink: Sink, inbox: Receiver<Message>, shared: &Shared) -> Sink {
    // After the first failure, output stops (reported once) but the program
    // goes on: a full disk must not take the profiled application down.
    let mut failed = false;
    let mut held = Held::default();
    for message in inbox {
        let failed_before = failed || shared.abandoned.load(Ordering::Acquire);
        let (result, ack, stop) = match message {
            Message::Bytes(bytes) if held.on => {
                held.keep(bytes);
                (Ok(()), None, false)
            }
            Message::Bytes(bytes) => (
                write_or_drop(&mut sink, &bytes, failed_before, shared),
                None,
                false,
            ),
            Message::StreamBytes(mut bytes, back) => {
                let result = write_or_drop(&mut sink, &bytes, failed_before, shared);
                bytes.clear();
                let _ = back.try_send(bytes);
                (result, None, false)
            }
            Message::Hold => {
                held.on = true;
                (Ok(()), None, false)
            }
            Message::Release => (held.release(&mut sink, failed_before, shared), None, false),
            Message::Flush(done) => (unless(failed_before, || sink.flush()), Some(done), false),
            Message::Close(done) => {
                let result = held
                    .release(&mut sink, failed_before, shared)
                    .and_then(|()| unless(failed_before, || sink.finish()));
                (result, Some(done), true)
            }
            Message::Abandon(done) => {
                sink.abandon();
                (Ok(()), Some(done), true)
            }
            Message::Position(back) => {
                let position = if failed_before { None } else { sink.position() };
                let _ = back.send(position);
                (Ok(()), None, false)
            }
            Message::WorkOnFile(work, back) => {
                // A failure of the work is its caller's to report; the
                // output itself goes on.
                let result = if failed_before {
                    Err(std::io::Error::other("the output has stopped"))
                } else {
                    sink.work_on_file(work, &|| {
                        shared.progress.fetch_add(1, Ordering::AcqRel);
                    })
                };
                let _ = back.send(result);
                (Ok(()), None, false)
            }
        };
        shared.progress.fetch_add(1, Ordering::AcqRel);
        if let Err(error) = result {
            // A socket shut down because it stalled is reported by the
            // waiter that gave up on it, with what was dropped.
            if !shared.abandoned.load(Ordering::Acquire) {
                eprintln!(
                    "HPROF ERROR: System write failed: {error}; no more output to {} [writer.rs]",
                    sink.describe()
                );
            }
            failed = true;
            shared.failed.store(true, Ordering::Release);
        }
        if let Some(done) = ack {
            let _ = done.send(());
        }
        if stop {
            break;
        }
    }
    sink
}

/// Other records kept aside while a stream holds the output.
#[derive(Default)]
struct Held {
    on: bool,
    records: Vec<Vec<u8>>,
    bytes: usize,
    dropped: u64,
}

impl Held {
    fn keep(&mut self, bytes: Vec<u8>) {
        if self.bytes + bytes.len() <= HELD_LIMIT {
            self.bytes += bytes.len();
            self.records.push(bytes);
        } else {
            self.dropped += bytes.len() as u64;
        }
    }

    /// Writes what was kept aside and stops holding.
    fn release(&mut self, sink: &mut Sink, failed: bool, shared: &Shared) -> std::io::Result<()> {
        let held = std::mem::take(self);
        if held.dropped > 0 {
            shared.dropped.fetch_add(held.dropped, Ordering::AcqRel);
            eprintln!(
                "HPROF ERROR: {} bytes of records made during a heap dump dropped \
                 (at most {} MiB are kept aside while it is written) [writer.rs]",
                held.dropped,
                HELD_LIMIT >> 20
            );
        }
        let mut result = Ok(());
        for bytes in held.records {
            let failed = failed || result.is_err();
            if let Err(e) = write_or_drop(sink, &bytes, failed, shared) {
                result = Err(e);
            }
        }
        result
    }
}

/// Writes `bytes` unless output has already failed, when they are only
/// counted as dropped.
fn write_or_drop(
    sink: &mut Sink,
    bytes: &[u8],
    failed: bool,
    shared: &Shared,
) -> std::io::Result<()> {
    if failed {
        shared
            .dropped
            .fetch_add(bytes.len() as u64, Ordering::AcqRel);
        Ok(())
    } else {
        write_counting(sink, bytes, shared)
    }
}

/// Writes `bytes`, counting what could not be written when a write fails.
fn write_counting(sink: &mut Sink, bytes: &[u8], shared: &Shared) -> std::io::Result<()> {
    // In pieces, so that a slow reader shows progress between them.
    const PIECE: usize = 64 * 1024;
    let mut rest = bytes;
    while !rest.is_empty() {
        match sink.write(&rest[..rest.len().min(PIECE)]) {
            Ok(0) => {
                shared
                    .dropped
                    .fetch_add(rest.len() as u64, Ordering::AcqRel);
                return Err(std::io::ErrorKind::WriteZero.into());
            }
            Ok(n) => {
                rest = &rest[n..];
                shared.progress.fetch_add(1, Ordering::AcqRel);
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                shared
                    .dropped
                    .fetch_add(rest.len() as u64, Ordering::AcqRel);
                return Err(e);
            }
        }
    }
    Ok(())
}

/// Runs `io` unless output has already failed.
fn unless(failed: bool, io: impl FnOnce() -> std::io::Result<()>) -> std::io::Result<()> {
    if failed { Ok(()) } else { io() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_buffers_come_back_empty_with_their_capacity() {
        let writer = OutputWriter::start(Sink::Memory(Vec::new())).unwrap();
        let (back, returned) = bounded(2);
        let mut block = Vec::with_capacity(1000);
        block.extend_from_slice(b"JAVA PROFILE");
        writer.write_and_return(block, &back);
        let again = returned.recv().unwrap();
        assert!(again.is_empty() && again.capacity() >= 1000);
        let Some(Sink::Memory(bytes)) = writer.close() else {
            panic!("no sink back")
        };
        assert_eq!(bytes, b"JAVA PROFILE");
    }

    #[test]
    fn other_bytes_wait_until_the_held_stream_is_released() {
        let writer = OutputWriter::start(Sink::Memory(Vec::new())).unwrap();
        let (back, _returned) = bounded(4);
        writer.write(b"<header>".to_vec());
        writer.hold();
        writer.write_and_return(b"<dump ".to_vec(), &back);
        writer.write(b"<thread start>".to_vec());
        writer.flush();
        writer.write_and_return(b"segment>".to_vec(), &back);
        writer.release();
        writer.write(b"<sites>".to_vec());
        writer.hold();
        writer.write(b"<class load>".to_vec());
        let Some(Sink::Memory(bytes)) = writer.close() else {
            panic!("no sink back")
        };
        assert_eq!(
            String::from_utf8(bytes).unwrap(),
            "<header><dump segment><thread start><sites><class load>"
        );
    }

    #[test]
    fn bytes_arrive_in_order_and_close_returns_the_sink() {
        let writer = OutputWriter::start(Sink::Memory(Vec::new())).unwrap();
        writer.write(b"JAVA ".to_vec());
        writer.flush();
        writer.write(b"PROFILE".to_vec());
        let Some(Sink::Memory(bytes)) = writer.close() else {
            panic!("no sink back")
        };
        assert_eq!(bytes, b"JAVA PROFILE");
        assert!(writer.close().is_none(), "second close does nothing");
        assert!(!writer.is_open());
        writer.write(b"late".to_vec()); // must not panic after close
        writer.flush(); // must not hang after close
    }
}
