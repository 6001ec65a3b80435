//! The agents' side of `hprof-rs listen`: accepts the JVMs' connections
//! on the TCP port, copies each one's output into its file, and hands
//! them the commands.
//!
//! Anyone who can reach the port can connect, so what connections can
//! make the front end hold is bounded: at most [`MAX_AGENTS`] JVMs are
//! served at once (a thread, a [`COPY_BUFFER`], a socket and a file each);
//! one more is closed at once, without a file, and a burst of them is
//! reported in two lines on standard error, not one per connection.

use super::output_file;
use super::support::{ACCEPT_ERROR_PAUSE, say, spawn};
use crossbeam_channel::Sender;
use std::fs::File;
use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// JVMs served at once. A real deployment has a handful; the bound keeps
/// a flood of connections from taking a thread and a file each.
pub const MAX_AGENTS: usize = 64;

/// The buffer each JVM's output is copied through (its whole memory).
pub const COPY_BUFFER: usize = 64 * 1024;

/// How long a command may take to be handed to one JVM: one that stopped
/// reading does not hold up the others.
const SEND_TIMEOUT: Duration = Duration::from_secs(5);

/// A connected JVM.
struct Agent {
    number: usize,
    /// Shared with the thread that reads its output (one descriptor for
    /// both directions).
    stream: Arc<TcpStream>,
    /// False once a command could not be written to it.
    takes_commands: bool,
}

/// The JVMs connected now (a JVM leaves when it disconnects, so this
/// never holds more than [`MAX_AGENTS`]).
#[derive(Clone, Default)]
pub struct Agents(Arc<Mutex<Vec<Agent>>>);

impl Agents {
    fn lock(&self) -> MutexGuard<'_, Vec<Agent>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn connected(&self) -> usize {
        self.lock().len()
    }

    fn add(&self, number: usize, stream: Arc<TcpStream>) {
        self.lock().push(Agent {
            number,
            stream,
            takes_commands: true,
        });
    }

    fn remove(&self, number: usize) {
        self.lock().retain(|agent| agent.number != number);
    }

    /// Writes `frame` to every JVM that takes commands; the numbers of
    /// those it was written to.
    pub fn hand_over(&self, frame: &[u8]) -> Vec<usize> {
        let mut sent = Vec::new();
        for agent in self.lock().iter_mut().filter(|a| a.takes_commands) {
            let mut stream = &*agent.stream;
            if stream
                .write_all(frame)
                .and_then(|()| stream.flush())
                .is_ok()
            {
                sent.push(agent.number);
            } else {
                agent.takes_commands = false;
            }
        }
        sent
    }
}

/// Connections refused because [`MAX_AGENTS`] JVMs were connected, since
/// the last one accepted: the first is reported, the count when the burst
/// is over.
#[derive(Default)]
struct Refusals(u64);

impl Refusals {
    fn refuse(&mut self, stream: TcpStream) {
        drop(stream);
        if self.0 == 0 {
            eprintln!("hprof-rs: JVM refused: {MAX_AGENTS} JVMs are connected already");
        }
        self.0 += 1;
    }

    /// A JVM is accepted again: how many were refused before it.
    fn burst_over(&mut self) {
        if self.0 > 0 {
            eprintln!(
                "hprof-rs: {} JVMs refused while {MAX_AGENTS} were connected",
                self.0
            );
            self.0 = 0;
        }
    }
}

/// Accepts JVMs for ever; each gets a thread that copies what it sends
/// into its file, and says on `gone` when it disconnected.
pub fn accept(listener: &TcpListener, output: &Path, agents: &Agents, gone: &Sender<usize>) {
    let mut refusals = Refusals::default();
    let mut index = 0;
    loop {
        let stream = match listener.accept() {
            Ok((stream, _)) => stream,
            Err(_) => {
                std::thread::sleep(ACCEPT_ERROR_PAUSE);
                continue;
            }
        };
        // (Only this thread adds JVMs: the count can only go down before
        // the new one is added.)
        if agents.connected() >= MAX_AGENTS {
            refusals.refuse(stream);
            continue;
        }
        refusals.burst_over();
        let number = index + 1;
        let path = numbered(output, index);
        index += 1;
        match output_file::create(&path) {
            Ok(file) => serve(stream, file, number, path, agents, gone),
            Err(e) => {
                eprintln!(
                    "hprof-rs: cannot create {}: {e}; JVM {number} refused",
                    path.display()
                );
                let _ = stream.shutdown(Shutdown::Both);
            }
        }
    }
}

/// Registers JVM `number` and starts copying its output into `file`.
fn serve(
    stream: TcpStream,
    file: File,
    number: usize,
    path: PathBuf,
    agents: &Agents,
    gone: &Sender<usize>,
) {
    let _ = stream.set_write_timeout(Some(SEND_TIMEOUT));
    let stream = Arc::new(stream);
    agents.add(number, Arc::clone(&stream));
    say(&format!(
        "JVM {number} connected, writing {}",
        path.display()
    ));
    let started = {
        let agents = agents.clone();
        let gone = gone.clone();
        spawn("jvm", move || {
            let bytes = copy(&stream, file);
            agents.remove(number);
            say(&format!(
                "JVM {number} disconnected, {bytes} bytes in {}",
                path.display()
            ));
            let _ = gone.send(number);
        })
    };
    if !started {
        agents.remove(number);
        eprintln!("hprof-rs: JVM {number} dropped");
        let _ = gone.send(number);
    }
}

/// FILE for the first JVM, FILE.1, FILE.2, ... for the next ones.
fn numbered(output: &Path, index: usize) -> PathBuf {
    if index == 0 {
        return output.to_owned();
    }
    let mut name = output.as_os_str().to_owned();
    name.push(format!(".{index}"));
    name.into()
}

/// Copies the JVM's output into `file` as it comes (unbuffered, so that
/// the file always holds everything received); returns the byte count.
fn copy(mut stream: &TcpStream, mut file: File) -> u64 {
    let mut buffer = vec![0u8; COPY_BUFFER];
    let mut total = 0u64;
    loop {
        match stream.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => {
                if let Err(e) = file.write_all(&buffer[..n]) {
                    eprintln!("hprof-rs: cannot write the output file: {e}");
                    break;
                }
                total += n as u64;
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    total
}
