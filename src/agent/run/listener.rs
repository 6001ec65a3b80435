//! The `HPROF listener thread`: with `net=host:port`, the front end at the
//! other end of the output socket sends commands back on it (framing in
//! crates/hprof-format/src/commands.rs); this agent thread reads them and has each
//! executed (run/remote.rs) while the program runs.
//!
//! Unlike HPROF's, the thread ends when the peer closes the connection or
//! sends a frame cut short (HPROF's spun on the closed socket for the rest
//! of the run), and at VM death, whose callback shuts the socket's read
//! side down so that the blocked read returns at once.

use crate::agent::run::engine::Run;
use crate::agent::run::threads::mark_agent_thread;
use crate::format::commands::{self, Command};
use crossbeam_channel::{Receiver, bounded};
use jvmti_bindings::prelude::JniEnv;
use parking_lot::Mutex;
use std::io::BufReader;
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::ThreadId;
use std::time::Duration;

/// The thread's name, as HPROF named its own.
pub const LISTENER_THREAD_NAME: &str = "HPROF listener thread";

/// How long VM death waits for a command still being carried out (a heap
/// dump in progress is waited for anyway, by the dump lock).
const STOP_WAIT: Duration = Duration::from_secs(1);

/// The listener of a `net=` run (idle otherwise).
#[derive(Default)]
pub struct Listener {
    running: Mutex<Option<Running>>,
    /// Set at VM death: no command is carried out from then on.
    stopping: AtomicBool,
}

/// The running thread.
struct Running {
    /// Shut down for reading to end the thread's read.
    socket: TcpStream,
    /// Receives once the thread has detached from the JVM.
    finished: Receiver<()>,
    thread: ThreadId,
}

impl Listener {
    /// Starts the thread, reading commands from `socket` and handing each
    /// to `execute` (false: read no more).
    pub fn start(
        &'static self,
        run: &'static Run,
        socket: TcpStream,
        execute: impl FnMut(&JniEnv, Command) -> bool + Send + 'static,
    ) {
        let Ok(input) = socket.try_clone() else {
            eprintln!("HPROF ERROR: cannot read commands from the front end (socket)");
            return;
        };
        let (finish, finished) = bounded(1);
        let spawned = std::thread::Builder::new()
            .name(LISTENER_THREAD_NAME.into())
            .spawn(move || {
                mark_agent_thread();
                let vm = run.vm;
                match vm.attach_daemon(LISTENER_THREAD_NAME) {
                    Some(jni) => {
                        self.listen(run, &jni, input, execute);
                        vm.detach();
                    }
                    None => eprintln!(
                        "HPROF ERROR: cannot attach the listener thread; commands from the front end are not read"
                    ),
                }
                let _ = finish.send(());
            });
        match spawned {
            Ok(handle) => {
                *self.running.lock() = Some(Running {
                    socket,
                    finished,
                    thread: handle.thread().id(),
                })
            }
            Err(error) => eprintln!(
                "HPROF ERROR: cannot start the listener thread ({error}); commands from the front end are not read"
            ),
        }
    }

    /// At VM death: no more commands; the thread's read ends at once, and
    /// unless VM death runs on the listener thread itself (its EXIT
    /// command), the thread is given [`STOP_WAIT`] to finish.
    pub fn stop(&self) {
        self.stopping.store(true, Ordering::Release);
        let Some(running) = self.running.lock().take() else {
            return;
        };
        let _ = running.socket.shutdown(Shutdown::Read);
        if std::thread::current().id() != running.thread {
            let _ = running.finished.recv_timeout(STOP_WAIT);
        }
    }

    fn stopping(&self) -> bool {
        self.stopping.load(Ordering::Acquire)
    }
}

/// Reads and carries out commands until the peer closes, sends EOF or
/// EXIT, or the run ends. A peer that closed (or sent a frame cut short,
/// or reset the connection) gets no more output either: the writer drops
/// the rest and says so once, at the end.
impl Listener {
    fn listen(
        &self,
        run: &Run,
        jni: &JniEnv,
        socket: TcpStream,
        mut execute: impl FnMut(&JniEnv, Command) -> bool,
    ) {
        let mut input = BufReader::with_capacity(512, socket);
        loop {
            let Ok(Some(command)) = commands::read_command(&mut input) else {
                // Our own shutdown at VM death, or the output's abandonment,
                // ends the read too: only the peer's doing is told.
                if !self.stopping() {
                    run.writer.peer_closed();
                }
                break;
            };
            if self.stopping() || !run.lifecycle.accepting_events() {
                break;
            }
            // Local references made by a command are dropped with its frame.
            let Ok(frame) = jni.push_local_frame(64) else {
                break;
            };
            let go_on = execute(jni, command);
            drop(frame);
            if !go_on {
                break;
            }
        }
    }
}
