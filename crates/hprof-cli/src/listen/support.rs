//! What the front end's threads share: starting a named thread, a line on
//! standard output, the queue of command lines to the main loop and the
//! wait for an answer, and the pause after a failed accept.

use crossbeam_channel::{Receiver, Sender, bounded};
use std::io::Write;
use std::time::Duration;

/// How long a listener thread pauses after a failed accept (out of file
/// descriptors, say) before it tries again, so that it does not spin.
pub(super) const ACCEPT_ERROR_PAUSE: Duration = Duration::from_millis(100);

/// A command line and where its answer goes (None: standard input's,
/// answered on standard error).
pub(super) type Request = (String, Option<Sender<String>>);

/// Waits for the answer to a request handed to the main loop.
pub(super) fn request_answer(line: String, requests: &Sender<Request>) -> String {
    let (answer, reply) = bounded(1);
    if requests.send((line, Some(answer))).is_err() {
        return STOPPING.into();
    }
    reply_or_gone(&reply)
}

pub(super) const STOPPING: &str = "error: the front end is stopping";

pub(super) fn reply_or_gone(reply: &Receiver<String>) -> String {
    reply.recv().unwrap_or_else(|_| STOPPING.into())
}

/// Starts a named thread (the name shows in /proc and in a debugger).
/// false when the system has no thread left to give.
pub(super) fn spawn(name: &str, body: impl FnOnce() + Send + 'static) -> bool {
    match std::thread::Builder::new()
        .name(format!("listen-{name}"))
        .spawn(body)
    {
        Ok(_) => true,
        Err(e) => {
            eprintln!("hprof-rs: cannot start a thread ({name}): {e}");
            false
        }
    }
}

/// One line on standard output, flushed at once (scripts wait for them).
pub(super) fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "hprof-rs: {line}");
    let _ = out.flush();
}
