//! `hprof-rs listen` and `hprof-rs send`: the front end of `net=host:port`.
//!
//! `listen` accepts the agents' connections on `--port` (TCP, on `--host`).
//! Each JVM's output goes to a file of its own, as it comes (ASCII or
//! binary): the first JVM's to `-o FILE`, the next ones' to `FILE.1`,
//! `FILE.2`, ..., each created with mode 0600 (it holds the program's
//! data); a file of another user at that name, or a symbolic link of theirs
//! anywhere on its path, refuses the JVM instead (output_file.rs). Commands (the language of command_text.rs)
//! come one per line from standard input, and from `hprof-rs send` through
//! the control socket (`--control-port N`), which answers each with one
//! line (`ok: ...` or `error: ...`). A command goes to every JVM still
//! connected.
//!
//! The control socket is a Unix domain socket, `control-N.sock` in a
//! directory only its user can enter (`$XDG_RUNTIME_DIR/hprof-rs/`, else
//! `${TMPDIR:-/tmp}/hprof-rs-<uid>/`), and every connection's peer must be
//! that user (control.rs): no one else can command the JVMs, and no TCP
//! port is bound for it, whatever `--host` says.
//!
//! What a peer can make `listen` hold is bounded: [`agents::MAX_AGENTS`]
//! JVMs at once (one thread and one [`agents::COPY_BUFFER`] each),
//! [`control::MAX_CONTROL_CONNECTIONS`] control connections, each line at
//! most [`control::MAX_COMMAND_LINE`] bytes, and a control connection that
//! brings no whole line for [`control::CONTROL_IDLE_TIMEOUT`] is closed.
//!
//! What `listen` prints on standard output, one line each, for scripts:
//! `hprof-rs: control socket <path>` (with `--control-port`),
//! `hprof-rs: listening on HOST:PORT`, `hprof-rs: JVM <n> connected,
//! writing <file>`, `hprof-rs: JVM <n> disconnected, <bytes> bytes in
//! <file>`.

mod agents;
pub(crate) mod control;
pub(crate) mod output_file;
mod support;

use super::command_text;
use crossbeam_channel::{Sender, select, unbounded};
use std::net::{IpAddr, TcpListener};
use std::path::PathBuf;
use support::{Request, say, spawn};

/// Exit status for unusable arguments, a port that cannot be had, a
/// refused command.
const UNUSABLE: i32 = 2;

/// Arguments of `hprof-rs listen`.
#[derive(clap::Args, Debug)]
pub struct ListenArgs {
    /// The TCP port the agents connect to (`net=HOST:PORT`); 0 lets the
    /// system pick a free one, which the `listening on` line gives.
    #[arg(long)]
    pub port: u16,
    /// The first JVM's output file; later JVMs get FILE.1, FILE.2, ...
    /// (created with mode 0600).
    #[arg(short, long)]
    pub output: PathBuf,
    /// The address the agents' port listens on (the control socket is
    /// always local).
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// Take commands from `hprof-rs send --port N`: N names a Unix socket,
    /// `control-N.sock` in a directory private to this user
    /// ($XDG_RUNTIME_DIR/hprof-rs, else ${TMPDIR:-/tmp}/hprof-rs-<uid>);
    /// only this user's commands are taken. Not a TCP port.
    #[arg(long)]
    pub control_port: Option<u16>,
    /// Exit once the first JVM has disconnected.
    #[arg(long)]
    pub once: bool,
}

/// `hprof-rs listen ...`: runs until killed, or with `--once` until the
/// first JVM has gone.
pub fn listen(args: ListenArgs) -> i32 {
    let address = format!("{}:{}", args.host, args.port);
    let agents_port = match TcpListener::bind(&address) {
        Ok(listener) => listener,
        Err(e) => return fail(format!("cannot listen on {address}: {e}")),
    };
    let (requests, incoming) = unbounded::<Request>();
    // Held to the end: dropping it removes the socket file (the --once exit).
    let _control_socket = match args
        .control_port
        .map(|port| start_control(port, &requests))
        .transpose()
    {
        Ok(socket) => socket,
        Err(message) => return fail(message),
    };
    {
        // (The original senders stay here: the channels never disconnect,
        // so the loop below never spins on one that did.)
        let requests = requests.clone();
        spawn("stdin", move || read_stdin(&requests));
    }
    // With --port 0 the system picks the port: the one printed is the one
    // the agents must be given.
    let port = agents_port
        .local_addr()
        .map_or(args.port, |bound| bound.port());
    say(&format!("listening on {}:{port}", args.host));
    let agents = agents::Agents::default();
    let (gone, disconnected) = unbounded::<usize>();
    {
        let agents = agents.clone();
        let output = args.output.clone();
        let gone = gone.clone();
        let accepting = spawn("accept", move || {
            agents::accept(&agents_port, &output, &agents, &gone);
        });
        if !accepting {
            return UNUSABLE;
        }
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

/// Binds the control socket of `port` and serves it on a thread of its own.
fn start_control(port: u16, requests: &Sender<Request>) -> Result<control::SocketFile, String> {
    let (listener, socket) = control::bind(port)?;
    say(&format!("control socket {}", socket.path().display()));
    let requests = requests.clone();
    if !spawn("control", move || control::serve(&listener, &requests)) {
        return Err("cannot serve the control socket".into());
    }
    Ok(socket)
}

/// Hands the frame of `line` to every connected JVM; the answer line.
fn execute(line: &str, serial: u32, agents: &agents::Agents) -> String {
    let frame = match command_text::frame(line, serial) {
        Ok(frame) => frame,
        Err(e) => return format!("error: {e}"),
    };
    let sent = agents.hand_over(&frame);
    if sent.is_empty() {
        return "error: no JVM is connected".into();
    }
    let numbers: Vec<String> = sent.iter().map(usize::to_string).collect();
    format!("ok: {} sent to JVM {}", line.trim(), numbers.join(", "))
}

/// Command lines typed on standard input (the owner's own terminal or
/// pipe), read with the control socket's line limit all the same.
fn read_stdin(requests: &Sender<Request>) {
    let mut input = std::io::stdin().lock();
    let mut line = Vec::new();
    loop {
        let text = match control::read_command_line(&mut input, &mut line) {
            Ok(control::CommandLine::Text(text)) => text,
            Ok(control::CommandLine::End) | Err(_) => break,
            Ok(control::CommandLine::TooLong) => {
                eprintln!("hprof-rs: {}", control::LINE_TOO_LONG);
                if control::skip_rest_of_line(&mut input).is_err() {
                    break;
                }
                continue;
            }
            Ok(control::CommandLine::NotUtf8) => {
                eprintln!("hprof-rs: {}", control::NOT_UTF8);
                continue;
            }
        };
        if !text.trim().is_empty() && requests.send((text, None)).is_err() {
            break;
        }
    }
}

/// `hprof-rs send --port N COMMAND...`: 0 when the front end took it, 2 if not.
pub fn send(host: &str, port: u16, command: &[String]) -> i32 {
    if !is_local(host) {
        return fail(format!(
            "--host {host}: control is local only; `send` talks to the control socket of \
             a `hprof-rs listen` of this user on this machine (--host may only be 127.0.0.1, \
             ::1 or localhost)"
        ));
    }
    let line = command.join(" ");
    if let Err(e) = command_text::frame(&line, 0) {
        return fail(e);
    }
    match control::ask(port, &line) {
        Ok(answer) if answer.starts_with("ok") => {
            println!("{answer}");
            0
        }
        Ok(answer) if answer.is_empty() => fail("the front end closed without answering"),
        Ok(answer) => fail(answer),
        Err(message) => fail(message),
    }
}

/// A loopback address or `localhost`: the only `--host` values `send`
/// still takes, for the scripts that give one.
fn is_local(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost")
        || host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

fn fail(message: impl std::fmt::Display) -> i32 {
    eprintln!("hprof-rs: {message}");
    UNUSABLE
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_hosts_are_local() {
        for host in [
            "127.0.0.1",
            "localhost",
            "LOCALHOST",
            "::1",
            "[::1]",
            "127.1.2.3",
        ] {
            assert!(is_local(host), "{host}");
        }
        for host in ["0.0.0.0", "192.168.1.5", "example.com", "::", ""] {
            assert!(!is_local(host), "{host}");
        }
    }
}
