//! The control socket of `hprof-rs listen --control-port N`, and the
//! client side for `hprof-rs send --port N`.
//!
//! Commands end a JVM or make it dump its heap, so only the user who
//! started `listen` may give them. The socket is a Unix domain socket,
//! `control-N.sock`, in a directory that only that user can enter (tmux's
//! rule: a real directory, not a symbolic link, owned by our effective uid,
//! with no permission for group or others), and each connection's peer
//! credentials (SO_PEERCRED) must name that same uid: root, or someone who
//! got the socket file another way, is answered one `error: refused ...`
//! line. No TCP port is ever bound for control.
//!
//! A peer can make the front end hold little: a command line is read with
//! a bound ([`MAX_COMMAND_LINE`]), at most [`MAX_CONTROL_CONNECTIONS`] are
//! served at once, and one that brings no whole line within
//! [`CONTROL_IDLE_TIMEOUT`] is closed.

use super::support::{ACCEPT_ERROR_PAUSE, Request, request_answer, spawn};
use crossbeam_channel::Sender;
use std::ffi::OsString;
use std::fs::{self, DirBuilder};
use std::io::{self, BufRead, BufReader, ErrorKind, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// The longest command line taken, in bytes without its end: a command of
/// the language is a few dozen; `raw` frames for testing stay far below.
/// A longer line is answered [`LINE_TOO_LONG`] and its connection closed,
/// having buffered no more than this.
pub const MAX_COMMAND_LINE: usize = 4096;

/// Control connections served at once (each holds a thread and a line
/// buffer); past them a connection is answered one error line and closed.
pub const MAX_CONTROL_CONNECTIONS: usize = 16;

/// How long a control connection may take to bring a whole command line
/// (the first, or the next after an answer) before it is closed, so that
/// silent peers do not hold the connection slots for ever.
pub const CONTROL_IDLE_TIMEOUT: Duration = Duration::from_secs(30);

/// How long an answer may wait for a peer that does not read them.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(5);

/// The longest answer `send` reads (answers are one short line).
const MAX_ANSWER: u64 = 64 * 1024;

/// The answer to a line longer than [`MAX_COMMAND_LINE`].
pub const LINE_TOO_LONG: &str = "error: command line longer than 4096 bytes";
/// The answer to a line that is not text.
pub const NOT_UTF8: &str = "error: the command line is not UTF-8";

// ---------------------------------------------------------------------------
// Where the socket lives
// ---------------------------------------------------------------------------

fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// The directory for our sockets: `$XDG_RUNTIME_DIR/hprof-rs` when that
/// variable names a directory of ours (a session's private runtime
/// directory), else `${TMPDIR:-/tmp}/hprof-rs-<euid>`.
fn socket_dir() -> PathBuf {
    let me = euid();
    if let Some(runtime) = std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .filter(|dir| dir.is_absolute())
        .filter(|dir| fs::metadata(dir).is_ok_and(|m| m.is_dir() && m.uid() == me))
    {
        return runtime.join("hprof-rs");
    }
    let tmp = std::env::var_os("TMPDIR")
        .filter(|dir| !dir.is_empty())
        .unwrap_or_else(|| OsString::from("/tmp"));
    PathBuf::from(tmp).join(format!("hprof-rs-{me}"))
}

/// The socket of control port `port` in `dir`.
fn socket_in(dir: &Path, port: u16) -> PathBuf {
    dir.join(format!("control-{port}.sock"))
}

/// Why `dir` (looked at without following a symbolic link) will not do
/// for our sockets: anyone but us able to enter it, or to replace what is
/// in it, could reach or fake the socket.
fn check_private(dir: &Path) -> Result<(), String> {
    let meta = fs::symlink_metadata(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let refusing = "refusing it as the control socket's directory";
    let me = euid();
    if meta.file_type().is_symlink() {
        return Err(format!("{} is a symbolic link: {refusing}", dir.display()));
    }
    if !meta.is_dir() {
        return Err(format!("{} is not a directory: {refusing}", dir.display()));
    }
    if meta.uid() != me {
        return Err(format!(
            "{} is owned by uid {}, not by uid {me}: {refusing}",
            dir.display(),
            meta.uid()
        ));
    }
    let mode = meta.permissions().mode() & 0o7777;
    if mode & 0o077 != 0 {
        return Err(format!(
            "{} has mode {mode:04o}, open to group or others: {refusing}",
            dir.display()
        ));
    }
    Ok(())
}

/// Our socket directory, created (mode 0700) when missing, checked when not.
pub(crate) fn make_private_dir() -> Result<PathBuf, String> {
    let dir = socket_dir();
    match DirBuilder::new().mode(0o700).create(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
        Err(e) => return Err(format!("cannot create {}: {e}", dir.display())),
    }
    check_private(&dir)?;
    Ok(dir)
}

/// The socket file of a bound control socket; removed when dropped.
pub struct SocketFile(PathBuf);

impl SocketFile {
    /// Where the socket is.
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for SocketFile {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.0);
    }
}

/// Binds control port `port`'s socket (mode 0600) in our private
/// directory, replacing a stale one that no one answers on.
pub fn bind(port: u16) -> Result<(UnixListener, SocketFile), String> {
    let path = socket_in(&make_private_dir()?, port);
    let cannot = |e: io::Error| format!("cannot listen on {}: {e}", path.display());
    let listener = match UnixListener::bind(&path) {
        Ok(listener) => listener,
        Err(e) if e.kind() == ErrorKind::AddrInUse => {
            remove_stale(&path, port)?;
            UnixListener::bind(&path).map_err(cannot)?
        }
        Err(e) => return Err(cannot(e)),
    };
    let socket = SocketFile(path);
    // (The directory already keeps others out; this is a second fence.)
    fs::set_permissions(socket.path(), fs::Permissions::from_mode(0o600))
        .map_err(|e| format!("cannot restrict {}: {e}", socket.path().display()))?;
    Ok((listener, socket))
}

/// Removes the socket file at `path` if no one listens on it any more (a
/// front end that was killed); one that answers is another `listen`'s.
fn remove_stale(path: &Path, port: u16) -> Result<(), String> {
    match UnixStream::connect(path) {
        Ok(_) => Err(format!(
            "control port {port} is already in use: another hprof-rs listen answers on {}",
            path.display()
        )),
        Err(e) if e.kind() == ErrorKind::ConnectionRefused => fs::remove_file(path)
            .map_err(|e| format!("cannot remove the stale {}: {e}", path.display())),
        Err(e) => Err(format!("cannot listen on {}: {e}", path.display())),
    }
}

// ---------------------------------------------------------------------------
// Serving it
// ---------------------------------------------------------------------------

/// The user id of the process at the other end of `stream`, as the kernel
/// recorded it when the connection was made.
fn peer_uid(stream: &UnixStream) -> io::Result<u32> {
    peer_credentials(stream).map(|(_, uid)| uid)
}

/// The pid and user id of the process at the other end of `stream`, as
/// the kernel recorded them when the connection was made (for a
/// connecting client, those of the process that listens).
pub fn peer_credentials(stream: &UnixStream) -> io::Result<(u32, u32)> {
    let mut credentials = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut length = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: the fd is an open socket that `stream` owns; `credentials`
    // and `length` are valid for writes and `length` holds their size.
    let rc = unsafe {
        libc::getsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&raw mut credentials).cast(),
            &raw mut length,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((credentials.pid as u32, credentials.uid))
}

/// Why a new control connection is not served, if it is not: a peer that
/// is not us, or no slot left.
fn refusal(stream: &UnixStream, open: &AtomicUsize) -> Option<String> {
    let me = euid();
    match peer_uid(stream) {
        Ok(uid) if uid == me => {}
        Ok(uid) => {
            return Some(format!(
                "error: refused: this front end takes commands from uid {me} only, not from uid {uid}"
            ));
        }
        Err(e) => return Some(format!("error: refused: cannot tell who connected: {e}")),
    }
    if open.load(Ordering::Acquire) >= MAX_CONTROL_CONNECTIONS {
        return Some(format!(
            "error: refused: {MAX_CONTROL_CONNECTIONS} control connections are open already"
        ));
    }
    None
}

/// One of the [`MAX_CONTROL_CONNECTIONS`] slots, given back when dropped.
struct Slot(Arc<AtomicUsize>);

impl Slot {
    /// (Only the accepting thread takes slots, so the count it checked can
    /// only have gone down since.)
    fn take(open: &Arc<AtomicUsize>) -> Slot {
        open.fetch_add(1, Ordering::AcqRel);
        Slot(Arc::clone(open))
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Accepts control connections for ever; each served by a thread of its own.
pub fn serve(listener: &UnixListener, requests: &Sender<Request>) {
    let open = Arc::new(AtomicUsize::new(0));
    loop {
        let stream = match listener.accept() {
            Ok((stream, _)) => stream,
            Err(_) => {
                std::thread::sleep(ACCEPT_ERROR_PAUSE);
                continue;
            }
        };
        if let Some(why) = refusal(&stream, &open) {
            // (A fresh socket's buffer takes one line without blocking; the
            // timeout is for the impossible case.)
            let _ = stream.set_write_timeout(Some(ANSWER_TIMEOUT));
            let _ = writeln!(&stream, "{why}");
            continue;
        }
        let slot = Slot::take(&open);
        let requests = requests.clone();
        spawn("control-connection", move || {
            let _slot = slot;
            converse(&stream, &requests);
        });
    }
}

/// Answers the command lines of one connection, one line each, until it
/// ends, sends a line too long, or stays silent too long.
fn converse(stream: &UnixStream, requests: &Sender<Request>) {
    let _ = stream.set_write_timeout(Some(ANSWER_TIMEOUT));
    let mut reader = BufReader::new(Deadline::new(stream));
    let mut line = Vec::with_capacity(MAX_COMMAND_LINE + 1);
    loop {
        reader.get_mut().restart();
        let (answer, go_on) = match read_command_line(&mut reader, &mut line) {
            Ok(CommandLine::Text(text)) => (request_answer(text, requests), true),
            Ok(CommandLine::NotUtf8) => (NOT_UTF8.to_owned(), true),
            Ok(CommandLine::TooLong) => (LINE_TOO_LONG.to_owned(), false),
            Ok(CommandLine::End) => return,
            Err(e) if is_timeout(&e) => (
                format!(
                    "error: no whole command line came in {} s",
                    CONTROL_IDLE_TIMEOUT.as_secs()
                ),
                false,
            ),
            Err(_) => return,
        };
        if writeln!(&*stream, "{answer}").is_err() || !go_on {
            return;
        }
    }
}

fn is_timeout(e: &io::Error) -> bool {
    matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut)
}

/// Reads from a stream with one deadline for a whole line, however many
/// reads it takes (a per-read timeout would let a peer that sends a byte
/// now and then hold its slot for ever).
struct Deadline<'a> {
    stream: &'a UnixStream,
    until: Instant,
}

impl<'a> Deadline<'a> {
    fn new(stream: &'a UnixStream) -> Self {
        Deadline {
            stream,
            until: Instant::now() + CONTROL_IDLE_TIMEOUT,
        }
    }

    fn restart(&mut self) {
        self.until = Instant::now() + CONTROL_IDLE_TIMEOUT;
    }
}

impl Read for Deadline<'_> {
    fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
        let left = self.until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(ErrorKind::TimedOut.into());
        }
        self.stream.set_read_timeout(Some(left))?;
        let mut stream = self.stream;
        stream.read(buffer)
    }
}

// ---------------------------------------------------------------------------
// Command lines
// ---------------------------------------------------------------------------

/// One command line read with the [`MAX_COMMAND_LINE`] bound.
#[derive(Debug, PartialEq, Eq)]
pub enum CommandLine {
    /// A line, without its `\n` (or `\r\n`); the last one may lack it.
    Text(String),
    NotUtf8,
    /// More than [`MAX_COMMAND_LINE`] bytes came without a line end; only
    /// that much more than the limit was read.
    TooLong,
    /// The input ended.
    End,
}

/// Reads one line into `line` (reused between calls, never grown past
/// [`MAX_COMMAND_LINE`] + 1 bytes).
pub fn read_command_line(reader: &mut impl BufRead, line: &mut Vec<u8>) -> io::Result<CommandLine> {
    line.clear();
    reader
        .by_ref()
        .take(MAX_COMMAND_LINE as u64 + 1)
        .read_until(b'\n', line)?;
    if line.last() == Some(&b'\n') {
        line.pop();
        if line.last() == Some(&b'\r') {
            line.pop();
        }
    } else if line.len() > MAX_COMMAND_LINE {
        return Ok(CommandLine::TooLong);
    } else if line.is_empty() {
        return Ok(CommandLine::End);
    }
    Ok(match std::str::from_utf8(line) {
        Ok(text) => CommandLine::Text(text.to_owned()),
        Err(_) => CommandLine::NotUtf8,
    })
}

/// Reads past the end of the current line (after [`CommandLine::TooLong`]
/// on an input that goes on), holding no more than the reader's buffer.
pub fn skip_rest_of_line(reader: &mut impl BufRead) -> io::Result<()> {
    loop {
        let buffer = reader.fill_buf()?;
        if buffer.is_empty() {
            return Ok(());
        }
        if let Some(end) = buffer.iter().position(|&b| b == b'\n') {
            reader.consume(end + 1);
            return Ok(());
        }
        let all = buffer.len();
        reader.consume(all);
    }
}

// ---------------------------------------------------------------------------
// The client: hprof-rs send
// ---------------------------------------------------------------------------

/// Hands `line` to the front end of control port `port`; its answer line.
pub fn ask(port: u16, line: &str) -> Result<String, String> {
    let dir = socket_dir();
    let path = socket_in(&dir, port);
    let unreachable = |why: String| {
        format!(
            "cannot reach the front end at {}: {why} (is `hprof-rs listen --control-port {port}` \
             running as this user?)",
            path.display()
        )
    };
    // Our commands go only to a socket in a directory of ours, so no one
    // else can stand in for the front end.
    if let Err(why) = check_private(&dir) {
        return Err(unreachable(why));
    }
    let exchange = || -> io::Result<String> {
        let mut stream = UnixStream::connect(&path)?;
        // A front end that refuses us answers and closes at once, maybe
        // before our line is written: its answer is still there to read.
        let sent =
            writeln!(stream, "{line}").and_then(|()| stream.shutdown(std::net::Shutdown::Write));
        let mut answer = String::new();
        let read = BufReader::new((&stream).take(MAX_ANSWER)).read_line(&mut answer);
        match (sent, read) {
            (_, Ok(n)) if n > 0 => Ok(answer.trim_end().to_owned()),
            (Err(e), _) | (Ok(()), Err(e)) => Err(e),
            (Ok(()), Ok(_)) => Ok(String::new()),
        }
    };
    exchange().map_err(|e| unreachable(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(input: &[u8]) -> Vec<CommandLine> {
        let mut reader = BufReader::with_capacity(64, input);
        let mut line = Vec::new();
        let mut found = Vec::new();
        loop {
            let next = read_command_line(&mut reader, &mut line).unwrap();
            assert!(line.capacity() <= 2 * (MAX_COMMAND_LINE + 1));
            if next == CommandLine::End {
                return found;
            }
            let too_long = next == CommandLine::TooLong;
            found.push(next);
            if too_long {
                skip_rest_of_line(&mut reader).unwrap();
            }
        }
    }

    fn text(s: &str) -> CommandLine {
        CommandLine::Text(s.to_owned())
    }

    #[test]
    fn lines_end_with_a_newline_or_the_input() {
        assert_eq!(
            lines(b"gc\r\nsites --changed\n\ncpu"),
            [text("gc"), text("sites --changed"), text(""), text("cpu")]
        );
    }

    #[test]
    fn a_line_of_the_limit_is_taken_one_byte_more_is_not() {
        let longest = "a".repeat(MAX_COMMAND_LINE);
        let input = format!("{longest}\n{longest}b\ngc\n");
        assert_eq!(
            lines(input.as_bytes()),
            [text(&longest), CommandLine::TooLong, text("gc")]
        );
    }

    #[test]
    fn a_long_line_without_an_end_reads_only_past_the_limit() {
        let endless = vec![b'x'; 10 * MAX_COMMAND_LINE];
        let mut reader = &endless[..];
        let mut line = Vec::new();
        assert_eq!(
            read_command_line(&mut reader, &mut line).unwrap(),
            CommandLine::TooLong
        );
        assert_eq!(line.len(), MAX_COMMAND_LINE + 1);
        assert_eq!(reader.len(), endless.len() - MAX_COMMAND_LINE - 1);
    }

    #[test]
    fn bytes_that_are_not_utf8_are_a_line_of_their_own() {
        assert_eq!(lines(b"\xff\xfe\ngc\n"), [CommandLine::NotUtf8, text("gc")]);
    }

    #[test]
    fn the_peer_of_a_socket_pair_is_ourselves() {
        let (a, _b) = UnixStream::pair().unwrap();
        assert_eq!(peer_uid(&a).unwrap(), euid());
        let open = AtomicUsize::new(0);
        assert_eq!(refusal(&a, &open), None);
        open.store(MAX_CONTROL_CONNECTIONS, Ordering::Release);
        assert_eq!(
            refusal(&a, &open).as_deref(),
            Some("error: refused: 16 control connections are open already")
        );
    }
}
