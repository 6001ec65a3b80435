//! `hprof-rs listen` and `hprof-rs send`: the front end of `net=host:port`.
//!
//! `listen` accepts the agents' connections on `--port`. Each JVM's output
//! goes to a file of its own, as it comes (ASCII or binary): the first
//! JVM's to `-o FILE`, the next ones' to `FILE.1`, `FILE.2`, ... Commands
//! (the language of command_text.rs) come one per line from standard
//! input, and from `hprof-rs send` through the control port
//! (`--control-port`), which answers each with one line (`ok: ...` or
//! `error: ...`). A command goes to every JVM still connected.
//!
//! What `listen` prints on standard output, one line each, for scripts:
//! `hprof-rs: listening on HOST:PORT`, `hprof-rs: JVM <n> connected,
//! writing <file>`, `hprof-rs: JVM <n> disconnected, <bytes> bytes in
//! <file>`.

use super::command_text;
use crossbeam_channel::{Receiver, Sender, select, unbounded};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Exit status for unusable arguments, a port that cannot be had, a
/// refused command.
const UNUSABLE: i32 = 2;

/// How long a command may take to be handed to one JVM: one that stopped
/// reading does not hold up the others.
const SEND_TIMEOUT: Duration = Duration::from_secs(5);

/// Arguments of `hprof-rs listen`.
#[derive(clap::Args, Debug)]
pub struct ListenArgs {
    /// The port the agents connect to (`net=HOST:PORT`).
    #[arg(long)]
    pub port: u16,
    /// The first JVM's output file; later JVMs get FILE.1, FILE.2, ...
    #[arg(short, long)]
    pub output: PathBuf,
    /// The address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// A port for `hprof-rs send` to bring commands to (none by default).
    #[arg(long)]
    pub control_port: Option<u16>,
    /// Exit once the first JVM has disconnected.
    #[arg(long)]
    pub once: bool,
}

/// A JVM connected to the front end.
struct Agent {
    number: usize,
    /// The write side, for commands; None once it disconnected.
    commands: Option<TcpStream>,
}

/// A command line and where its answer goes (None: standard input's,
/// answered on standard error).
type Request = (String, Option<Sender<String>>);

/// `hprof-rs listen ...`: runs until killed, or with `--once` until the
/// first JVM has gone.
pub fn listen(args: ListenArgs) -> i32 {
    let address = format!("{}:{}", args.host, args.port);
    let agents_port = match TcpListener::bind(&address) {
        Ok(listener) => listener,
        Err(e) => return fail(format!("cannot listen on {address}: {e}")),
    };
    let (requests, incoming) = unbounded::<Request>();
    if let Some(port) = args.control_port {
        let control = format!("{}:{port}", args.host);
        match TcpListener::bind(&control) {
            Ok(listener) => {
                let requests = requests.clone();
                spawn(move || serve_control(listener, requests));
            }
            Err(e) => return fail(format!("cannot listen on {control}: {e}")),
        }
    }
    {
        // (The original senders stay here: the channels never disconnect,
        // so the loop below never spins on one that did.)
        let requests = requests.clone();
        spawn(move || read_stdin(requests));
    }
    say(&format!("listening on {address}"));
    let agents: Arc<Mutex<Vec<Agent>>> = Arc::default();
    let (gone, disconnected) = unbounded::<usize>();
    {
        let agents = Arc::clone(&agents);
        let output = args.output.clone();
        let gone = gone.clone();
        spawn(move || accept(agents_port, &output, &agents, &gone));
    }
    let mut serial = 0u32;
    loop {
        select! {
            recv(incoming) -> request => {
                let Ok((line, answer)) = request else { continue };
                serial = serial.wrapping_add(1);
                let reply = execute(&line, serial, &agents);
                match answer {
                    Some(answer) => { let _ = answer.send(reply); }
                    None => eprintln!("hprof-rs: {reply}"),
                }
            }
            recv(disconnected) -> number => {
                if args.once && number == Ok(1) {
                    return 0;
                }
            }
        }
    }
}

/// Hands the frame of `line` to every connected JVM; the answer line.
fn execute(line: &str, serial: u32, agents: &Mutex<Vec<Agent>>) -> String {
    let frame = match command_text::frame(line, serial) {
        Ok(frame) => frame,
        Err(e) => return format!("error: {e}"),
    };
    let mut agents = agents.lock().unwrap_or_else(|e| e.into_inner());
    let mut sent = Vec::new();
    for agent in agents.iter_mut() {
        if let Some(stream) = &mut agent.commands {
            if stream
                .write_all(&frame)
                .and_then(|()| stream.flush())
                .is_ok()
            {
                sent.push(agent.number.to_string());
            } else {
                agent.commands = None;
            }
        }
    }
    if sent.is_empty() {
        "error: no JVM is connected".into()
    } else {
        format!("ok: {} sent to JVM {}", line.trim(), sent.join(", "))
    }
}

/// Accepts JVMs; each gets a thread that copies what it sends into its file.
fn accept(
    listener: TcpListener,
    output: &Path,
    agents: &Arc<Mutex<Vec<Agent>>>,
    gone: &Sender<usize>,
) {
    for (index, stream) in listener.incoming().flatten().enumerate() {
        let number = index + 1;
        let path = numbered(output, index);
        let file = match std::fs::File::create(&path) {
            Ok(file) => file,
            Err(e) => {
                eprintln!(
                    "hprof-rs: cannot create {}: {e}; JVM {number} refused",
                    path.display()
                );
                let _ = stream.shutdown(Shutdown::Both);
                continue;
            }
        };
        let commands = stream.try_clone().ok();
        if let Some(commands) = &commands {
            let _ = commands.set_write_timeout(Some(SEND_TIMEOUT));
        }
        agents
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(Agent { number, commands });
        say(&format!(
            "JVM {number} connected, writing {}",
            path.display()
        ));
        let agents = Arc::clone(agents);
        let gone = gone.clone();
        spawn(move || {
            let bytes = copy(stream, file);
            if let Some(agent) = agents
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .iter_mut()
                .find(|a| a.number == number)
            {
                agent.commands = None;
            }
            say(&format!(
                "JVM {number} disconnected, {bytes} bytes in {}",
                path.display()
            ));
            let _ = gone.send(number);
        });
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
fn copy(mut stream: TcpStream, mut file: std::fs::File) -> u64 {
    let mut buffer = vec![0u8; 64 * 1024];
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
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    total
}

fn read_stdin(requests: Sender<Request>) {
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        if !line.trim().is_empty() && requests.send((line, None)).is_err() {
            break;
        }
    }
}

/// Each control connection brings command lines; each gets its answer line.
fn serve_control(listener: TcpListener, requests: Sender<Request>) {
    for stream in listener.incoming().flatten() {
        let requests = requests.clone();
        spawn(move || {
            let Ok(mut answers) = stream.try_clone() else {
                return;
            };
            for line in BufReader::new(stream).lines() {
                let Ok(line) = line else { break };
                let (answer, reply) = unbounded();
                if requests.send((line, Some(answer))).is_err() {
                    break;
                }
                let reply = reply_or_gone(&reply);
                if writeln!(answers, "{reply}").is_err() {
                    break;
                }
            }
        });
    }
}

fn reply_or_gone(reply: &Receiver<String>) -> String {
    reply
        .recv()
        .unwrap_or_else(|_| "error: the front end is stopping".into())
}

/// `hprof-rs send --port M COMMAND...`: 0 when the front end took it, 2 if not.
pub fn send(host: &str, port: u16, command: &[String]) -> i32 {
    let line = command.join(" ");
    if let Err(e) = command_text::frame(&line, 0) {
        return fail(e);
    }
    let answer = (|| -> std::io::Result<String> {
        let mut stream = TcpStream::connect((host, port))?;
        writeln!(stream, "{line}")?;
        stream.shutdown(Shutdown::Write)?;
        let mut answer = String::new();
        BufReader::new(stream).read_line(&mut answer)?;
        Ok(answer.trim_end().to_owned())
    })();
    match answer {
        Ok(answer) if answer.starts_with("ok") => {
            println!("{answer}");
            0
        }
        Ok(answer) if answer.is_empty() => fail("the front end closed without answering"),
        Ok(answer) => fail(answer),
        Err(e) => fail(format!("cannot reach the front end at {host}:{port}: {e}")),
    }
}

fn spawn(body: impl FnOnce() + Send + 'static) {
    std::thread::spawn(body);
}

/// One line on standard output, flushed at once (scripts wait for them).
fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "hprof-rs: {line}");
    let _ = out.flush();
}

fn fail(message: impl std::fmt::Display) -> i32 {
    eprintln!("hprof-rs: {message}");
    UNUSABLE
}
