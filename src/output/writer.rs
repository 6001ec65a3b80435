//! The writer thread: the only place that does output I/O, so collectors and
//! JVM callbacks never block on a slow disk or socket longer than a channel send.

use super::sink::Sink;
use crossbeam_channel::{Receiver, Sender, bounded};
use parking_lot::Mutex;
use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

enum Message {
    /// Bytes to write, and where to send the emptied buffer back, if anywhere.
    Bytes(Vec<u8>, Option<Sender<Vec<u8>>>),
    /// Flush, then acknowledge.
    Flush(Sender<()>),
    /// Flush, close the sink, acknowledge and stop.
    Close(Sender<()>),
}

/// Messages queued before a sender waits for the writer to catch up.
const QUEUE_DEPTH: usize = 4096;

/// Handle to the writer thread.
pub struct OutputWriter {
    queue: Sender<Message>,
    thread: Mutex<Option<JoinHandle<Sink>>>,
    /// Set once a write failed (and was reported): output has stopped.
    failed: Arc<AtomicBool>,
}

impl OutputWriter {
    /// Starts the writer thread on `sink`.
    pub fn start(sink: Sink) -> std::io::Result<Self> {
        let (queue, inbox) = bounded(QUEUE_DEPTH);
        let failed = Arc::new(AtomicBool::new(false));
        let failed_in_thread = Arc::clone(&failed);
        let thread = std::thread::Builder::new()
            .name("hprof-rs writer".into())
            .spawn(move || run(sink, inbox, &failed_in_thread))?;
        Ok(Self {
            queue,
            thread: Mutex::new(Some(thread)),
            failed,
        })
    }

    /// Queues bytes for output (after everything queued before them).
    pub fn write(&self, bytes: Vec<u8>) {
        if !bytes.is_empty() {
            let _ = self.queue.send(Message::Bytes(bytes, None));
        }
    }

    /// Queues bytes for output like [`write`](Self::write), and once they
    /// are written sends the emptied buffer to `back`, so that a producer
    /// of a long stream (a heap dump) can cycle a few buffers instead of
    /// allocating one per block.
    pub fn write_and_return(&self, bytes: Vec<u8>, back: &Sender<Vec<u8>>) {
        let _ = self.queue.send(Message::Bytes(bytes, Some(back.clone())));
    }

    /// Whether the writer thread still takes output (it stops at close).
    pub fn is_open(&self) -> bool {
        self.thread.lock().is_some()
    }

    /// Whether a write has failed (the writer said so on stderr, once);
    /// after [`flush`](Self::flush), this covers everything queued before.
    pub fn has_failed(&self) -> bool {
        self.failed.load(Ordering::Acquire)
    }

    /// Waits until everything queued so far is written and flushed.
    pub fn flush(&self) {
        let (done, wait) = bounded(1);
        if self.queue.send(Message::Flush(done)).is_ok() {
            let _ = wait.recv();
        }
    }

    /// Writes everything queued, closes the destination and stops the thread.
    /// Returns the sink (useful for tests of in-memory output). Later calls do nothing.
    pub fn close(&self) -> Option<Sink> {
        let handle = self.thread.lock().take()?;
        let (done, wait) = bounded(1);
        if self.queue.send(Message::Close(done)).is_ok() {
            let _ = wait.recv();
        }
        handle.join().ok()
    }
}

fn run(mut sink: Sink, inbox: Receiver<Message>, has_failed: &AtomicBool) -> Sink {
    // After the first failure, output stops (reported once) but the program
    // goes on: a full disk must not take the profiled application down.
    let mut failed = false;
    for message in inbox {
        let (result, ack, stop) = match message {
            Message::Bytes(mut bytes, back) => {
                let result = unless(failed, || sink.write_all(&bytes));
                if let Some(back) = back {
                    bytes.clear();
                    let _ = back.try_send(bytes);
                }
                (result, None, false)
            }
            Message::Flush(done) => (unless(failed, || sink.flush()), Some(done), false),
            Message::Close(done) => (unless(failed, || sink.finish()), Some(done), true),
        };
        if let Err(error) = result {
            eprintln!(
                "HPROF ERROR: System write failed: {error}; no more output to {} [writer.rs]",
                sink.describe()
            );
            failed = true;
            has_failed.store(true, Ordering::Release);
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
