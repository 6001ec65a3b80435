//! `hprof-rs listen` against hostile peers, with real processes:
//! - control: only the user who started `listen` commands it. Another
//!   user's `send` cannot reach the socket (a directory of mode 0700), and
//!   one who reaches it anyway (a hard link in a directory of their own) is
//!   refused by the peer-credential check; a planted socket directory (of
//!   another user, a symbolic link, open to others) makes `listen` exit 2;
//!   a live socket is not taken over, a stale one is; no TCP port is bound
//!   for control, even with `--host 0.0.0.0`;
//! - bounds: a command line of 800 MB without an end costs `listen` no
//!   memory, at most 16 control connections are served, a silent one is
//!   closed after 30 s, and 2,000 connections to the agents' port give 64
//!   JVMs, 64 files and a bounded number of threads and descriptors;
//! - output files are made 0600, and a file or symbolic link another user
//!   put at an output file's name refuses that JVM, untouched.
//!
//! The JVMs are plain TCP connections here (the frames they receive are
//! checked byte for byte); tests/net_protocol.rs runs real ones. These
//! tests run a process as `nobody` with setpriv, so they need root.

mod common;

use common::Spawned;
use common::two_users::{self, NOBODY, TempDir, chown_nobody, mode_of, set_mode};
use std::fs;
use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::thread;
use std::time::{Duration, Instant};

/// Longest wait for a line or a process.
const PATIENCE: Duration = Duration::from_secs(60);

/// The bounds of crates/hprof-cli/src/listen (MAX_AGENTS, MAX_CONTROL_CONNECTIONS,
/// MAX_COMMAND_LINE), as the tests expect them.
const MAX_AGENTS: usize = 64;
const MAX_CONTROL_CONNECTIONS: usize = 16;
const MAX_COMMAND_LINE: usize = 4096;

/// `listen`'s threads at most: one per JVM and per control connection,
/// plus its main, standard input, the two accepting threads and slack.
const MAX_THREADS: u64 = (MAX_AGENTS + MAX_CONTROL_CONNECTIONS + 8) as u64;

/// What `listen` may hold in memory (its peak RSS) whatever is sent: the
/// old front end reached 973 MB on an 800 MB line.
const MAX_RSS_KB: u64 = 64 * 1024;

fn assert_root() {
    two_users::assert_root("tests/listen_security.rs");
}

fn hprof_rs() -> std::path::PathBuf {
    common::hprof_rs_bin()
}

// ---------------------------------------------------------------------------
// Processes
// ---------------------------------------------------------------------------

/// A free local TCP port (also used as a control port, to show no TCP
/// port of that number is bound).
fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a free port");
    listener.local_addr().unwrap().port()
}

/// `cmd` with TMPDIR set to `tmp` and no XDG_RUNTIME_DIR, so that the
/// socket directory is `tmp/hprof-rs-<uid>` whoever runs it.
fn in_tmp<'a>(cmd: &'a mut Command, tmp: &Path) -> &'a mut Command {
    cmd.env("TMPDIR", tmp).env_remove("XDG_RUNTIME_DIR")
}

/// The hprof-rs binary copied where user nobody can run it (target/ may
/// not be reachable for nobody), in a directory of its own.
struct NobodysCopy {
    _dir: TempDir,
    binary: PathBuf,
}

impl NobodysCopy {
    fn new() -> NobodysCopy {
        let dir = TempDir::new("bin");
        let binary = dir.join("hprof-rs");
        fs::copy(hprof_rs(), &binary).expect("copy of hprof-rs");
        set_mode(&binary, 0o755);
        NobodysCopy { _dir: dir, binary }
    }

    /// `program args...` run as nobody (group nogroup, no other groups).
    fn run_as_nobody(program: &Path, args: &[&str], tmp: &Path) -> Output {
        two_users::as_nobody(program, args, |cmd| {
            in_tmp(cmd, tmp);
        })
    }

    /// `hprof-rs send --port PORT COMMAND` as nobody.
    fn send(&self, port: u16, command: &str, tmp: &Path) -> Output {
        let port = port.to_string();
        let mut args = vec!["send", "--port", &port];
        args.extend(command.split_whitespace());
        Self::run_as_nobody(&self.binary, &args, tmp)
    }
}

/// A running `hprof-rs listen` with its socket directory under a TMPDIR of
/// its own.
struct Front {
    process: Spawned,
    port: u16,
    control: u16,
    tmp: TempDir,
}

impl Front {
    /// `listen --port P --control-port N -o <output> extra...`, once it
    /// printed its `listening on` line.
    fn start(output: &Path, extra: &[&str]) -> Front {
        Self::start_on("127.0.0.1", output, extra)
    }

    fn start_on(host: &str, output: &Path, extra: &[&str]) -> Front {
        let tmp = TempDir::new("front");
        let (port, control) = (free_port(), free_port());
        let mut process = Spawned::spawn(&mut listen_command(
            tmp.path(),
            host,
            port,
            control,
            output,
            extra,
        ));
        process.wait_for_line(&format!("hprof-rs: listening on {host}:{port}"), PATIENCE);
        Front {
            process,
            port,
            control,
            tmp,
        }
    }

    fn socket_dir(&self) -> PathBuf {
        self.tmp.join("hprof-rs-0")
    }

    fn socket(&self) -> PathBuf {
        self.socket_dir()
            .join(format!("control-{}.sock", self.control))
    }

    /// `hprof-rs send --port N COMMAND` as root, the owner.
    fn send(&self, command: &str) -> Output {
        let mut cmd = Command::new(hprof_rs());
        cmd.args(["send", "--port", &self.control.to_string()])
            .args(command.split_whitespace());
        in_tmp(&mut cmd, self.tmp.path());
        common::run(&mut cmd)
    }

    /// A fake JVM: a plain TCP connection, once `listen` said it took it.
    fn connect_jvm(&mut self, number: usize, file: &Path) -> TcpStream {
        let jvm = TcpStream::connect(("127.0.0.1", self.port)).expect("connect to listen");
        self.process.wait_for_line(
            &format!(
                "hprof-rs: JVM {number} connected, writing {}",
                file.display()
            ),
            PATIENCE,
        );
        jvm
    }

    fn pid(&self) -> i32 {
        self.process.pid()
    }

    /// Waits until `listen` printed `line` on standard error.
    fn wait_for_stderr(&self, line: &str) {
        common::wait_until(
            PATIENCE,
            || {
                format!(
                    "no line {line:?} on listen's stderr:\n{}",
                    self.process.output_so_far().1
                )
            },
            || self.process.output_so_far().1.lines().any(|l| l == line),
        );
    }
}

fn listen_command(
    tmp: &Path,
    host: &str,
    port: u16,
    control: u16,
    output: &Path,
    extra: &[&str],
) -> Command {
    let mut cmd = Command::new(hprof_rs());
    cmd.args(["listen", "--host", host, "--port", &port.to_string()])
        .args(["--control-port", &control.to_string(), "-o"])
        .arg(output)
        .args(extra)
        .stdin(Stdio::null());
    in_tmp(&mut cmd, tmp);
    cmd
}

/// The frame of `gc` with `serial`: tag 0x01, u4 serial, u4 length 0.
fn gc_frame(serial: u32) -> Vec<u8> {
    let mut frame = vec![0x01];
    frame.extend(serial.to_be_bytes());
    frame.extend(0u32.to_be_bytes());
    frame
}

/// What the fake JVM received within `wait` (nothing: empty).
fn received(jvm: &mut TcpStream, wait: Duration) -> Vec<u8> {
    jvm.set_read_timeout(Some(wait)).unwrap();
    let mut got = Vec::new();
    let mut buffer = [0u8; 256];
    loop {
        match jvm.read(&mut buffer) {
            Ok(0) => return got,
            Ok(n) => got.extend_from_slice(&buffer[..n]),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return got;
            }
            Err(e) => panic!("fake JVM: {e}"),
        }
    }
}

/// Waits for exactly `expected` to reach the fake JVM.
fn assert_receives(jvm: &mut TcpStream, expected: &[u8]) {
    jvm.set_read_timeout(Some(PATIENCE)).unwrap();
    let mut got = vec![0u8; expected.len()];
    jvm.read_exact(&mut got).expect("the frame");
    assert_eq!(got, expected);
}

/// The one answer line on a control connection, which must then be closed
/// (a reset counts: the front end closed with bytes of ours unread).
fn answer_then_closed(stream: &UnixStream) -> String {
    stream.set_read_timeout(Some(PATIENCE)).unwrap();
    let mut reader = BufReader::new(stream);
    let mut answer = String::new();
    reader.read_line(&mut answer).expect("an answer line");
    let mut more = Vec::new();
    match reader.read_to_end(&mut more) {
        Ok(_) => assert_eq!(more, b"", "more after the answer {answer:?}"),
        Err(e) => assert_eq!(e.kind(), ErrorKind::ConnectionReset, "{e}"),
    }
    answer
}

fn assert_answer(out: &Output, code: i32, stdout: &str, stderr: &str, what: &str) {
    common::assert_exit_code(out, code, what);
    assert_eq!(common::stdout_text(out), stdout, "{what}");
    assert_eq!(common::stderr_text(out), stderr, "{what}");
}

/// `Name:   value kB` of /proc/<pid>/status, as a number.
fn status_field(pid: i32, name: &str) -> u64 {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    status
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{name}:")))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in /proc/{pid}/status"))
}

fn open_fds(pid: i32) -> usize {
    fs::read_dir(format!("/proc/{pid}/fd")).expect("fd").count()
}

/// The local ports in state LISTEN in /proc/net/tcp and tcp6.
fn tcp_listening_ports() -> Vec<u16> {
    let mut ports = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = fs::read_to_string(table) else {
            continue;
        };
        for line in text.lines().skip(1) {
            let fields: Vec<&str> = line.split_whitespace().collect();
            // local_address is ADDR:PORT in hex; st 0A is LISTEN.
            if fields.get(3) == Some(&"0A") {
                let port = fields[1].rsplit(':').next().unwrap();
                ports.push(u16::from_str_radix(port, 16).unwrap());
            }
        }
    }
    ports
}

// ---------------------------------------------------------------------------
// Control: only the owner
// ---------------------------------------------------------------------------

#[test]
fn another_users_send_is_refused_and_the_owners_is_taken() {
    assert_root();
    let files = TempDir::new("files");
    let output = files.join("out");
    let mut front = Front::start(&output, &[]);
    let mut jvm = front.connect_jvm(1, &output);
    let nobody = NobodysCopy::new();

    // nobody's send looks in nobody's own directory: nothing there.
    let out = nobody.send(front.control, "exit", front.tmp.path());
    let nobodys_socket = front
        .tmp
        .join(&format!("hprof-rs-{NOBODY}"))
        .join(format!("control-{}.sock", front.control));
    common::assert_exit_code(&out, 2, "send as nobody");
    assert!(
        common::stderr_text(&out).starts_with(&format!(
            "hprof-rs: cannot reach the front end at {}: ",
            nobodys_socket.display()
        )),
        "{}",
        common::describe(&out)
    );
    // Nor can nobody so much as see the owner's socket: its directory is 0700.
    let out = NobodysCopy::run_as_nobody(
        Path::new("/usr/bin/stat"),
        &["-c", "%F", front.socket().to_str().unwrap()],
        front.tmp.path(),
    );
    assert_ne!(out.status.code(), Some(0), "{}", common::describe(&out));
    assert!(
        common::stderr_text(&out).contains("Permission denied"),
        "{}",
        common::describe(&out)
    );
    assert_eq!(received(&mut jvm, Duration::from_millis(300)), b"");

    let out = front.send("gc");
    assert_answer(&out, 0, "ok: gc sent to JVM 1\n", "", "the owner's send gc");
    assert_receives(&mut jvm, &gc_frame(1));
    assert_eq!(front.process.output_so_far().1, "", "listen's stderr");
}

#[test]
fn another_user_who_reaches_the_socket_is_refused_by_its_credentials() {
    assert_root();
    let files = TempDir::new("files");
    let output = files.join("out");
    let mut front = Front::start(&output, &[]);
    let mut jvm = front.connect_jvm(1, &output);
    let nobody = NobodysCopy::new();

    // A way to the owner's socket for nobody: a hard link to it in a
    // private directory of nobody's own, the socket file made writable to
    // all (the 0700 directory and the 0600 socket are what normally keep
    // nobody out; here only the credential check is left).
    let nobodys_tmp = TempDir::new("nobody");
    let nobodys_dir = nobodys_tmp.join(&format!("hprof-rs-{NOBODY}"));
    fs::create_dir(&nobodys_dir).unwrap();
    set_mode(&nobodys_dir, 0o700);
    chown_nobody(&nobodys_dir);
    let link = nobodys_dir.join(format!("control-{}.sock", front.control));
    fs::hard_link(front.socket(), &link).expect("hard link to the socket");
    set_mode(&link, 0o666);

    let out = nobody.send(front.control, "exit", nobodys_tmp.path());
    assert_answer(
        &out,
        2,
        "",
        &format!(
            "hprof-rs: error: refused: this front end takes commands from uid 0 only, \
             not from uid {NOBODY}\n"
        ),
        "send as nobody through the link",
    );
    assert_eq!(received(&mut jvm, Duration::from_millis(300)), b"");

    let out = front.send("gc");
    assert_answer(&out, 0, "ok: gc sent to JVM 1\n", "", "the owner's send gc");
    assert_receives(&mut jvm, &gc_frame(1));
    assert_eq!(front.process.output_so_far().1, "", "listen's stderr");
}

#[test]
fn the_socket_directory_is_private_and_a_planted_one_is_refused() {
    assert_root();
    let files = TempDir::new("files");
    let front = Front::start(&files.join("out"), &[]);
    let dir = fs::symlink_metadata(front.socket_dir()).unwrap();
    assert!(dir.is_dir());
    assert_eq!((dir.uid(), mode_of(&front.socket_dir())), (0, 0o700));
    let socket = fs::symlink_metadata(front.socket()).unwrap();
    assert!(socket.file_type().is_socket());
    assert_eq!((socket.uid(), mode_of(&front.socket())), (0, 0o600));

    let refusing = "refusing it as the control socket's directory";
    // Another user's directory at our directory's name.
    let tmp = TempDir::new("planted");
    let planted = tmp.join("hprof-rs-0");
    fs::create_dir(&planted).unwrap();
    set_mode(&planted, 0o700);
    chown_nobody(&planted);
    let message = format!(
        "{} is owned by uid {NOBODY}, not by uid 0: {refusing}",
        planted.display()
    );
    assert_listen_refuses(tmp.path(), &message);

    // A symbolic link to a good directory of ours.
    let tmp = TempDir::new("planted");
    let good = tmp.join("good");
    fs::create_dir(&good).unwrap();
    set_mode(&good, 0o700);
    std::os::unix::fs::symlink(&good, tmp.join("hprof-rs-0")).unwrap();
    let message = format!(
        "{} is a symbolic link: {refusing}",
        tmp.join("hprof-rs-0").display()
    );
    assert_listen_refuses(tmp.path(), &message);

    // Our own directory, open to others.
    let tmp = TempDir::new("planted");
    fs::create_dir(tmp.join("hprof-rs-0")).unwrap();
    set_mode(&tmp.join("hprof-rs-0"), 0o755);
    let message = format!(
        "{} has mode 0755, open to group or others: {refusing}",
        tmp.join("hprof-rs-0").display()
    );
    assert_listen_refuses(tmp.path(), &message);
}

/// `listen` with TMPDIR `tmp` exits 2 with `message` and says nothing else.
fn assert_listen_refuses(tmp: &Path, message: &str) {
    let output = tmp.join("out");
    let mut cmd = listen_command(tmp, "127.0.0.1", free_port(), free_port(), &output, &[]);
    let out = common::run(&mut cmd);
    assert_answer(&out, 2, "", &format!("hprof-rs: {message}\n"), message);
    assert!(!output.exists());
}

#[test]
fn the_runtime_directory_is_used_only_when_it_is_ours() {
    assert_root();
    for (owner, expected) in [(0, "hprof-rs"), (NOBODY, "hprof-rs-0")] {
        let tmp = TempDir::new("xdg");
        let runtime = tmp.join("runtime");
        fs::create_dir(&runtime).unwrap();
        set_mode(&runtime, 0o700);
        if owner == NOBODY {
            chown_nobody(&runtime);
        }
        let control = free_port();
        let mut cmd = listen_command(
            tmp.path(),
            "127.0.0.1",
            free_port(),
            control,
            &tmp.join("out"),
            &[],
        );
        cmd.env("XDG_RUNTIME_DIR", &runtime);
        let mut front = Spawned::spawn(&mut cmd);
        let dir = if owner == 0 { &runtime } else { tmp.path() };
        let socket = dir.join(expected).join(format!("control-{control}.sock"));
        front.wait_for_line(
            &format!("hprof-rs: control socket {}", socket.display()),
            PATIENCE,
        );
        assert!(
            fs::symlink_metadata(&socket)
                .unwrap()
                .file_type()
                .is_socket()
        );
    }
}

#[test]
fn a_live_control_socket_is_kept_a_stale_one_replaced_and_removed_at_the_end() {
    assert_root();
    let files = TempDir::new("files");
    let first = Front::start(&files.join("out"), &[]);
    let port = first.control;
    let tmp = first.tmp.path().to_owned();

    let mut cmd = listen_command(&tmp, "127.0.0.1", free_port(), port, &files.join("o2"), &[]);
    let out = common::run(&mut cmd);
    let message = format!(
        "hprof-rs: control port {port} is already in use: another hprof-rs listen answers on {}\n",
        first.socket().display()
    );
    assert_answer(&out, 2, "", &message, "a second listen on the same socket");
    assert_answer(
        &first.send("gc"),
        2,
        "",
        "hprof-rs: error: no JVM is connected\n",
        "the first listen still answers",
    );

    // Killed, it leaves its socket file behind: the next one replaces it.
    first.process.signal(libc::SIGKILL);
    let socket = first.socket();
    let Front { process, tmp, .. } = first;
    let _ = process.wait_timeout(PATIENCE);
    assert!(socket.exists(), "a killed listen leaves its socket");
    let output = files.join("o3");
    let agents_port = free_port();
    let mut cmd = listen_command(
        tmp.path(),
        "127.0.0.1",
        agents_port,
        port,
        &output,
        &["--once"],
    );
    let mut next = Spawned::spawn(&mut cmd);
    next.wait_for_line(
        &format!("hprof-rs: listening on 127.0.0.1:{agents_port}"),
        PATIENCE,
    );
    let mut send = Command::new(hprof_rs());
    send.args(["send", "--port", &port.to_string(), "gc"]);
    in_tmp(&mut send, tmp.path());
    assert_answer(
        &common::run(&mut send),
        2,
        "",
        "hprof-rs: error: no JVM is connected\n",
        "the listen that replaced the stale socket answers",
    );

    // --once: the first JVM goes, listen exits 0 and removes its socket.
    let jvm = TcpStream::connect(("127.0.0.1", agents_port)).unwrap();
    next.wait_for_line(
        &format!("hprof-rs: JVM 1 connected, writing {}", output.display()),
        PATIENCE,
    );
    drop(jvm);
    common::assert_success(&next.wait_timeout(PATIENCE), "listen --once");
    assert!(
        !socket.exists(),
        "listen --once removed {}",
        socket.display()
    );
}

#[test]
fn the_control_side_binds_no_tcp_port_even_on_every_interface() {
    assert_root();
    let files = TempDir::new("files");
    let output = files.join("out");
    let mut front = Front::start_on("0.0.0.0", &output, &[]);
    let listening = tcp_listening_ports();
    assert!(listening.contains(&front.port), "the agents' port listens");
    assert!(
        !listening.contains(&front.control),
        "control port {} listens on TCP: {listening:?}",
        front.control
    );
    let err = TcpStream::connect(("127.0.0.1", front.control)).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ConnectionRefused);

    let mut jvm = front.connect_jvm(1, &output);
    let mut cmd = Command::new(hprof_rs());
    cmd.args([
        "send",
        "--host",
        "0.0.0.0",
        "--port",
        &front.control.to_string(),
        "gc",
    ]);
    in_tmp(&mut cmd, front.tmp.path());
    assert_answer(
        &common::run(&mut cmd),
        2,
        "",
        "hprof-rs: --host 0.0.0.0: control is local only; `send` talks to the control socket \
         of a `hprof-rs listen` of this user on this machine (--host may only be 127.0.0.1, \
         ::1 or localhost)\n",
        "send --host 0.0.0.0",
    );
    let mut cmd = Command::new(hprof_rs());
    cmd.args([
        "send",
        "--host",
        "localhost",
        "--port",
        &front.control.to_string(),
        "gc",
    ]);
    in_tmp(&mut cmd, front.tmp.path());
    assert_answer(
        &common::run(&mut cmd),
        0,
        "ok: gc sent to JVM 1\n",
        "",
        "--host localhost",
    );
    assert_receives(&mut jvm, &gc_frame(1));
}

// ---------------------------------------------------------------------------
// Bounds
// ---------------------------------------------------------------------------

/// Writes up to `total` bytes of one line that never ends to the control
/// socket at `socket`, until the front end closes it; how many bytes it
/// took, and its answer.
fn write_until_closed(socket: &Path, total: usize) -> (usize, String) {
    let mut stream = UnixStream::connect(socket).expect("connect to the control socket");
    let chunk = vec![b'x'; 1 << 20];
    let mut written = 0;
    while written < total {
        match stream.write(&chunk[..chunk.len().min(total - written)]) {
            Ok(n) => written += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    (written, answer_then_closed(&stream))
}

/// One command line over the control socket; its answer line.
fn ask(socket: &Path, line: &[u8]) -> String {
    let mut stream = UnixStream::connect(socket).expect("connect to the control socket");
    // (A refused connection may be closed before the line is written: its
    // answer is read all the same.)
    let _ = stream.write_all(line);
    let _ = stream.shutdown(Shutdown::Write);
    answer_then_closed(&stream)
}

#[test]
fn a_line_without_an_end_is_cut_at_the_limit_and_memory_stays_bounded() {
    assert_root();
    let files = TempDir::new("files");
    let output = files.join("out");
    let mut front = Front::start(&output, &[]);
    let mut jvm = front.connect_jvm(1, &output);

    // The longest line is taken (gc and spaces), one byte more is not.
    let mut longest = b"gc".to_vec();
    longest.resize(MAX_COMMAND_LINE, b' ');
    longest.push(b'\n');
    assert_eq!(ask(&front.socket(), &longest), "ok: gc sent to JVM 1\n");
    assert_receives(&mut jvm, &gc_frame(1));
    longest.insert(0, b' ');
    assert_eq!(
        ask(&front.socket(), &longest),
        "error: command line longer than 4096 bytes\n"
    );

    let (written, answer) = write_until_closed(&front.socket(), 800 << 20);
    assert_eq!(answer, "error: command line longer than 4096 bytes\n");
    let peak = status_field(front.pid(), "VmHWM");
    let now = status_field(front.pid(), "VmRSS");
    eprintln!(
        "800 MB line: {written} bytes taken before listen closed; listen's VmHWM {peak} kB, VmRSS {now} kB"
    );
    assert!(peak < MAX_RSS_KB, "listen's peak RSS {peak} kB");
    assert!(written < 800 << 20, "listen read the whole line");

    let out = front.send("gc");
    assert_answer(
        &out,
        0,
        "ok: gc sent to JVM 1\n",
        "",
        "send after the long line",
    );
    assert_receives(&mut jvm, &gc_frame(2));
}

#[test]
fn at_most_16_control_connections_are_served_and_a_silent_one_is_closed() {
    assert_root();
    let files = TempDir::new("files");
    let output = files.join("out");
    let mut front = Front::start(&output, &[]);
    let mut jvm = front.connect_jvm(1, &output);

    let started = Instant::now();
    let mut silent: Vec<UnixStream> = (0..MAX_CONTROL_CONNECTIONS)
        .map(|_| UnixStream::connect(front.socket()).unwrap())
        .collect();
    assert_eq!(
        ask(&front.socket(), b"gc\n"),
        "error: refused: 16 control connections are open already\n"
    );
    let threads = status_field(front.pid(), "Threads");
    eprintln!("16 control connections: listen has {threads} threads");
    assert!(threads <= MAX_THREADS, "{threads} threads");

    // One goes: its slot serves the next connection.
    drop(silent.pop());
    let deadline = Instant::now() + PATIENCE;
    loop {
        let answer = ask(&front.socket(), b"gc\n");
        if answer == "ok: gc sent to JVM 1\n" {
            break;
        }
        assert_eq!(
            answer, "error: refused: 16 control connections are open already\n",
            "while the slot is given back"
        );
        assert!(Instant::now() < deadline, "the slot was not given back");
        thread::sleep(Duration::from_millis(20));
    }
    assert_receives(&mut jvm, &gc_frame(1));

    // The silent ones (half a line, or nothing) are closed after 30 s.
    silent[0].write_all(b"g").unwrap();
    for stream in &silent {
        assert_eq!(
            answer_then_closed(stream),
            "error: no whole command line came in 30 s\n"
        );
    }
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_secs(30) && waited < Duration::from_secs(45),
        "closed after {waited:?}"
    );
    assert_answer(
        &front.send("gc"),
        0,
        "ok: gc sent to JVM 1\n",
        "",
        "send after",
    );
}

/// Raises this process's open-file soft limit to its hard limit; the limit.
fn raise_open_files_limit() -> u64 {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit with a valid rlimit for this process.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit), 0);
        limit.rlim_cur = limit.rlim_max;
        assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &limit), 0);
    }
    limit.rlim_cur
}

#[test]
fn two_thousand_connections_to_the_agents_port_give_64_jvms_and_bounded_resources() {
    assert_root();
    // 2,000 connections, and room for the test's own files; with a hard
    // limit below that, as many as it allows.
    let limit = raise_open_files_limit();
    let connections = 2000.min(usize::try_from(limit).unwrap_or(2000).saturating_sub(100));
    assert!(
        connections > MAX_AGENTS + 100,
        "RLIMIT_NOFILE {limit} is too low"
    );
    let files = TempDir::new("files");
    let output = files.join("out");
    let mut front = Front::start(&output, &[]);
    let pid = front.pid();

    let mut max_threads = 0;
    let mut jvms = Vec::with_capacity(connections);
    for i in 0..connections {
        jvms.push(TcpStream::connect(("127.0.0.1", front.port)).expect("connect"));
        if i % 50 == 0 {
            max_threads = max_threads.max(status_field(pid, "Threads"));
        }
    }
    front.process.wait_for_line(
        &format!(
            "hprof-rs: JVM {MAX_AGENTS} connected, writing {}.63",
            output.display()
        ),
        PATIENCE,
    );
    // Connections are accepted in order: once the last is closed, every
    // one was seen.
    let last = jvms.last_mut().unwrap();
    last.set_read_timeout(Some(PATIENCE)).unwrap();
    let mut byte = [0u8; 1];
    assert_eq!(
        last.read(&mut byte).unwrap_or(0),
        0,
        "the last one is closed"
    );

    let threads = status_field(pid, "Threads");
    max_threads = max_threads.max(threads);
    let fds = open_fds(pid);
    let peak = status_field(pid, "VmHWM");
    let outputs = fs::read_dir(files.path()).unwrap().count();
    eprintln!(
        "{connections} connections: listen has {threads} threads (most seen {max_threads}), \
         {fds} open files, VmHWM {peak} kB; {outputs} output files"
    );
    assert!(max_threads <= MAX_THREADS, "{max_threads} threads");
    assert!(fds < 200, "{fds} open files");
    assert!(peak < MAX_RSS_KB, "peak RSS {peak} kB");
    assert_eq!(outputs, MAX_AGENTS, "one output file per JVM taken");
    let refused = format!("hprof-rs: JVM refused: {MAX_AGENTS} JVMs are connected already");
    assert_eq!(front.process.output_so_far().1, format!("{refused}\n"));

    // Still works: a command reaches the 64.
    let numbers: Vec<String> = (1..=MAX_AGENTS).map(|n| n.to_string()).collect();
    let answer = format!("ok: gc sent to JVM {}\n", numbers.join(", "));
    assert_answer(&front.send("gc"), 0, &answer, "", "send to 64 JVMs");
    for jvm in &mut jvms[..MAX_AGENTS] {
        assert_receives(jvm, &gc_frame(1));
    }

    // Once they are gone, a new JVM is taken, and the burst is counted.
    drop(jvms);
    common::wait_until(
        PATIENCE,
        || "the 64 did not all disconnect".into(),
        || {
            front
                .process
                .output_so_far()
                .0
                .matches(" disconnected, 0 bytes in ")
                .count()
                >= MAX_AGENTS
        },
    );
    let next = format!("{}.{MAX_AGENTS}", output.display());
    let _jvm = front.connect_jvm(MAX_AGENTS + 1, Path::new(&next));
    front.wait_for_stderr(&format!(
        "hprof-rs: {} JVMs refused while {MAX_AGENTS} were connected",
        connections - MAX_AGENTS
    ));
    assert_eq!(front.process.output_so_far().1.matches(&refused).count(), 1);
}

// ---------------------------------------------------------------------------
// Output files
// ---------------------------------------------------------------------------

#[test]
fn output_files_are_private_and_other_users_files_are_left_alone() {
    assert_root();
    // A directory anyone may write to, as /tmp.
    let files = TempDir::new("files");
    set_mode(files.path(), 0o1777);
    let output = files.join("out");
    // out: new. out.1: an old file of ours, 0644. out.2: nobody's file.
    // out.3: nobody's symbolic link to a file of ours. out.4: new.
    let numbered = |n: usize| PathBuf::from(format!("{}.{n}", output.display()));
    fs::write(numbered(1), b"old").unwrap();
    set_mode(&numbered(1), 0o644);
    fs::write(numbered(2), b"nobody's").unwrap();
    chown_nobody(&numbered(2));
    let victim = files.join("victim");
    fs::write(&victim, b"ours").unwrap();
    set_mode(&victim, 0o644);
    std::os::unix::fs::symlink(&victim, numbered(3)).unwrap();
    chown_nobody(&numbered(3));

    let mut front = Front::start(&output, &[]);
    for (number, file) in [(1, output.clone()), (2, numbered(1))] {
        let mut jvm = front.connect_jvm(number, &file);
        jvm.write_all(b"JAVA PROFILE").unwrap();
        drop(jvm);
        front.process.wait_for_line(
            &format!(
                "hprof-rs: JVM {number} disconnected, 12 bytes in {}",
                file.display()
            ),
            PATIENCE,
        );
        assert_eq!(mode_of(&file), 0o600, "{}", file.display());
        assert_eq!(fs::read(&file).unwrap(), b"JAVA PROFILE");
    }

    let refusals = [
        format!(
            "hprof-rs: cannot create {}: refused: it belongs to another user; JVM 3 refused",
            numbered(2).display()
        ),
        format!(
            "hprof-rs: cannot create {0}: refused: {0} is a symbolic link owned by another user; \
             JVM 4 refused",
            numbered(3).display()
        ),
    ];
    for refusal in &refusals {
        let mut jvm = TcpStream::connect(("127.0.0.1", front.port)).unwrap();
        front.wait_for_stderr(refusal);
        assert_eq!(received(&mut jvm, PATIENCE), b"", "closed at once");
    }
    assert_eq!(fs::read(numbered(2)).unwrap(), b"nobody's");
    assert_eq!(fs::read(&victim).unwrap(), b"ours");
    assert_eq!(mode_of(&victim), 0o644);
    let _jvm = front.connect_jvm(5, &numbered(4));
    assert_eq!(mode_of(&numbered(4)), 0o600);
    assert_eq!(
        front.process.output_so_far().1,
        format!("{}\n{}\n", refusals[0], refusals[1])
    );
}
