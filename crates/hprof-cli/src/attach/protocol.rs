//! HotSpot's dynamic attach protocol on Linux, spoken directly (no jcmd,
//! so a JRE will do). The JVM starts its attach listener when it gets
//! SIGQUIT and finds a file `.attach_pid<pid>` in its working directory
//! (or /tmp); the listener then makes the UNIX socket `/tmp/.java_pid<pid>`.
//! A request is a protocol version and a command with three arguments,
//! each NUL-terminated; the reply is text: the command's status on the
//! first line, then what the command printed (for `load`, the value the
//! agent's Agent_OnAttach returned: `return code: N` in the JDKs tested,
//! the bare number in older updates). Asked with `reply=text`, our agent
//! sends its error lines (`HPROF ERROR: ...`) on the same connection
//! before the JVM's answer. `<pid>` is the JVM's pid in its own
//! namespace; the files are reached inside its root (see root.rs).
//!
//! Both files are in places other users may write to: the socket and the
//! trigger file are checked before anything is sent (see [`connect`] and
//! [`Trigger`]), and the reply is shown escaped ([`shown`]).

use super::root::Dir;
use super::target::Target;
use std::fs::Metadata;
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::{Duration, Instant};

/// How long the JVM is given to start its attach listener after SIGQUIT.
const LISTENER_WAIT: Duration = Duration::from_secs(10);
/// How long one request may take (a `stop` writes the whole profile; a
/// heap=dump attach dumps the heap).
const REPLY_WAIT: Duration = Duration::from_secs(600);
/// HotSpot reads each argument into a buffer of this many bytes.
const MAX_ARG: usize = 1024;
/// The most of a reply read: a `load` answers with two short lines.
const MAX_REPLY: u64 = 64 << 10;
/// The most of a reply's text shown.
const SHOWN_REPLY: usize = 300;
/// How the lines our agent sends before the JVM's answer start.
const AGENT_LINE: &str = "HPROF ";

/// Connects to the JVM's attach listener, starting it first when its
/// socket is not there yet. The socket must be the JVM's: a socket file
/// of the JVM's user, and at the other end of the connection the JVM
/// itself (SO_PEERCRED gives the pid of the process that listens). A
/// socket someone else put at that name is refused before a byte is sent.
pub fn connect(target: &Target) -> Result<UnixStream, String> {
    if let Some(stream) = connect_checked(target)? {
        return Ok(stream);
    }
    let trigger = Trigger::make(target)?;
    let signalled = send_quit(target.pid);
    let deadline = Instant::now() + LISTENER_WAIT;
    let connected = loop {
        if let Err(e) = &signalled {
            break Err(e.clone());
        }
        match connect_checked(target) {
            Ok(Some(stream)) => break Ok(stream),
            Ok(None) => {}
            Err(e) => break Err(e),
        }
        if !target.alive() {
            break Err(exited(target));
        }
        if Instant::now() >= deadline {
            break Err(format!(
                "the JVM {} did not start its attach listener within {} s \
                 (started with -XX:+DisableAttachMechanism, or too busy?)",
                target.pid,
                LISTENER_WAIT.as_secs()
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    trigger.remove();
    connected
}

/// What the tool says of a JVM that ended while it was attached to.
pub fn exited(target: &Target) -> String {
    format!("the JVM {} exited during the attach", target.pid)
}

/// A connection to the socket at `/tmp/.java_pid<pid>` inside the JVM's
/// root, after checking that it is the JVM's; None when no one listens
/// there (no socket yet, or an old one of the JVM's).
fn connect_checked(target: &Target) -> Result<Option<UnixStream>, String> {
    let inside = format!("/tmp/.java_pid{}", target.ns_pid);
    let socket = match target.root.open(&inside, libc::O_PATH | libc::O_NOFOLLOW) {
        Ok(socket) => socket,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(format!(
                "the JVM {}'s attach socket {inside}: {e}",
                target.pid
            ));
        }
    };
    let found = socket
        .metadata()
        .map_err(|e| format!("the JVM {}'s attach socket {inside}: {e}", target.pid))?;
    if !found.file_type().is_socket() || found.uid() != target.uid {
        return Err(format!(
            "{inside} is not the attach socket of the JVM {} ({}, of uid {}, not a socket of \
             uid {}): refusing to talk to it",
            target.pid,
            kind(&found),
            found.uid(),
            target.uid
        ));
    }
    // (Connecting through the descriptor reaches the very inode checked,
    // resolved inside the JVM's root.)
    let stream = match UnixStream::connect(format!("/proc/self/fd/{}", socket.as_raw_fd())) {
        Ok(stream) => stream,
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => return Ok(None),
        Err(e) => {
            return Err(format!(
                "the JVM {}'s attach socket {inside}: {e}",
                target.pid
            ));
        }
    };
    let (pid, uid) = crate::listen::control::peer_credentials(&stream)
        .map_err(|e| format!("the JVM {}'s attach socket {inside}: {e}", target.pid))?;
    if pid != target.pid {
        return Err(format!(
            "{inside} is not the attach socket of the JVM {}: process {pid} (uid {uid}) \
             listens there; refusing to talk to it",
            target.pid
        ));
    }
    Ok(Some(stream))
}

/// A file's kind, in words.
fn kind(meta: &Metadata) -> &'static str {
    let t = meta.file_type();
    if t.is_file() {
        "a file"
    } else if t.is_dir() {
        "a directory"
    } else if t.is_symlink() {
        "a symbolic link"
    } else if t.is_socket() {
        "a socket"
    } else {
        "a special file"
    }
}

/// The file `.attach_pid<pid>` that tells the JVM a SIGQUIT is an attach
/// request: the JVM looks in its working directory, then in its /tmp,
/// and takes the first it finds only if it belongs to its user or root
/// (else the SIGQUIT prints a thread dump into the program's output).
/// So the first place where one is decides: one already there must be a
/// plain file of the JVM's user, root or us, and is left as it is; else
/// we make one, and remove it whatever happens.
struct Trigger {
    made: Option<(Dir, String)>,
}

impl Trigger {
    fn make(target: &Target) -> Result<Trigger, String> {
        let name = format!(".attach_pid{}", target.ns_pid);
        let places = [
            (format!("/proc/{}/cwd", target.pid), "its working directory"),
            ("/tmp".to_owned(), "its /tmp"),
        ];
        let mut last_error = String::new();
        for (i, (path, said)) in places.iter().enumerate() {
            let dir = if i == 0 {
                Dir::at(Path::new(path))
            } else {
                target.root.dir(path)
            };
            let dir = match dir {
                Ok(dir) => dir,
                Err(e) => {
                    last_error = format!("cannot open the JVM's {said}: {e}");
                    continue;
                }
            };
            // SAFETY: geteuid has no preconditions and cannot fail.
            let me = unsafe { libc::geteuid() };
            match dir.look(&name) {
                Ok(Some(there))
                    if there.is_file() && [target.uid, 0, me].contains(&there.uid()) =>
                {
                    return Ok(Trigger { made: None });
                }
                Ok(Some(there)) => {
                    return Err(format!(
                        "{name} in the JVM {}'s {said} is {} of uid {}, not a file of its user: \
                         someone else put it there; remove it to attach",
                        target.pid,
                        kind(&there),
                        there.uid()
                    ));
                }
                Ok(None) => {}
                Err(e) => {
                    last_error = format!("cannot look at {name} in the JVM's {said}: {e}");
                    continue;
                }
            }
            match dir.open(&name, libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL, 0o600) {
                Ok(_) => {
                    return Ok(Trigger {
                        made: Some((dir, name)),
                    });
                }
                Err(e) => last_error = format!("cannot create {name} in the JVM's {said}: {e}"),
            }
        }
        Err(last_error)
    }

    /// Removes the file made (through its directory's descriptor: still
    /// there when the JVM has gone).
    fn remove(self) {
        if let Some((dir, name)) = self.made {
            let _ = dir.remove(&name);
        }
    }
}

/// SIGQUIT to `pid` (only ever sent to a process found to be a JVM).
fn send_quit(pid: u32) -> Result<(), String> {
    let pid = rustix::process::Pid::from_raw(pid as i32).ok_or("pid 0")?;
    rustix::process::kill_process(pid, rustix::process::Signal::QUIT)
        .map_err(|e| format!("cannot signal process {pid}: {e}"))
}

/// What the JVM answered to `load`.
pub enum LoadReply {
    /// Agent_OnAttach ran and returned `code`; the lines our agent sent
    /// before the JVM's answer (escaped), if any.
    Returned { code: i32, said: Option<String> },
    /// The JVM refused the command: its status and message (escaped).
    Refused(String),
    /// The connection closed before a whole status line: the JVM went.
    Nothing,
}

/// Asks the JVM to load the agent `library` (an absolute path as the JVM
/// sees it) with `options`.
pub fn load(mut stream: UnixStream, library: &str, options: &str) -> Result<LoadReply, String> {
    for arg in [library, options] {
        if arg.len() >= MAX_ARG || arg.contains('\0') {
            return Err(format!(
                "an attach argument must be shorter than {MAX_ARG} bytes, without NUL: {arg}"
            ));
        }
    }
    let mut request = Vec::new();
    for part in ["1", "load", library, "true", options] {
        request.extend_from_slice(part.as_bytes());
        request.push(0);
    }
    let io = |e: std::io::Error| format!("attach socket: {e}");
    stream.set_read_timeout(Some(REPLY_WAIT)).map_err(io)?;
    stream.write_all(&request).map_err(io)?;
    let mut reply = Vec::new();
    match (&mut stream).take(MAX_REPLY).read_to_end(&mut reply) {
        Ok(_) => {}
        // A JVM that exits mid-reply may reset the connection.
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {}
        Err(e) => return Err(io(e)),
    }
    Ok(parse_reply(&String::from_utf8_lossy(&reply)))
}

/// The reply of a `load`: our agent's lines, if any, the status line,
/// then the agent's return value.
fn parse_reply(reply: &str) -> LoadReply {
    if !reply.contains('\n') && reply.trim().is_empty() {
        return LoadReply::Nothing;
    }
    let mut lines = reply.lines().peekable();
    let mut agent_lines = Vec::new();
    while let Some(line) = lines.next_if(|l| l.starts_with(AGENT_LINE)) {
        agent_lines.push(line);
    }
    let said = (!agent_lines.is_empty()).then(|| shown(&agent_lines.join(" ")));
    let status = lines.next().unwrap_or("").trim();
    let rest: Vec<&str> = lines.collect();
    if status != "0" {
        let message = rest.join(" ");
        return LoadReply::Refused(shown(&format!("status {status}: {}", message.trim())));
    }
    let returned = rest
        .iter()
        .map(|l| l.trim().trim_start_matches("return code:").trim())
        .find_map(|l| l.parse().ok());
    match returned {
        Some(code) => LoadReply::Returned { code, said },
        // (JDK 21 and later with -XX:-EnableDynamicAgentLoading: status 0
        // and the reason.)
        None if !rest.is_empty() => LoadReply::Refused(shown(rest.join(" ").trim())),
        None => LoadReply::Refused(shown(&format!("unexpected reply: {}", reply.trim()))),
    }
}

/// Text from the other end, fit for a terminal: control characters
/// (escape sequences, carriage returns) and the marks that reorder text
/// shown as `\xNN` or `\u{NNNN}`, and at most [`SHOWN_REPLY`] characters.
pub fn shown(text: &str) -> String {
    let mut out = String::new();
    for (i, c) in text.chars().enumerate() {
        if i == SHOWN_REPLY {
            out.push_str("...");
            break;
        }
        let reorders = matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
        if c.is_control() && (c as u32) < 0x100 {
            out.push_str(&format!("\\x{:02x}", c as u32));
        } else if c.is_control() || reorders {
            out.push_str(&format!("\\u{{{:04x}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn returned(reply: &str) -> Option<i32> {
        match parse_reply(reply) {
            LoadReply::Returned { code, .. } => Some(code),
            LoadReply::Refused(_) | LoadReply::Nothing => None,
        }
    }

    #[test]
    fn the_agents_lines_come_before_the_jvms_answer() {
        let reply = "HPROF ERROR: hprof option error: cpu=sample \x1b[0m\n0\nreturn code: 2\n";
        match parse_reply(reply) {
            LoadReply::Returned { code, said } => {
                assert_eq!(code, 2);
                assert_eq!(
                    said.as_deref(),
                    Some("HPROF ERROR: hprof option error: cpu=sample \\x1b[0m")
                );
            }
            _ => panic!("not returned"),
        }
        assert!(matches!(
            parse_reply("0\nreturn code: 0\n"),
            LoadReply::Returned {
                code: 0,
                said: None
            }
        ));
    }

    #[test]
    fn replies_of_old_and_new_jdks() {
        assert_eq!(returned("0\n0\n"), Some(0));
        assert_eq!(returned("0\nreturn code: 3\n"), Some(3));
        assert_eq!(returned("0\nreturn code: -1\n"), Some(-1));
        assert_eq!(returned("101\nProtocol mismatch\n"), None);
        assert_eq!(returned("0\n"), None);
        match parse_reply("0\nDynamic agent loading is not enabled.\n") {
            LoadReply::Refused(why) => assert_eq!(why, "Dynamic agent loading is not enabled."),
            _ => panic!("not refused"),
        }
        assert!(matches!(parse_reply(""), LoadReply::Nothing));
    }

    #[test]
    fn reply_text_is_shown_escaped_and_bounded() {
        assert_eq!(shown("ok: \x1b[31mred\x07\r"), "ok: \\x1b[31mred\\x07\\x0d");
        assert_eq!(shown("a\u{202e}b\u{9b}"), "a\\u{202e}b\\x9b");
        let long = shown(&"x".repeat(5000));
        assert_eq!(long.len(), SHOWN_REPLY + 3);
        match parse_reply("1\n\x1b]0;owned\x07\n") {
            LoadReply::Refused(why) => assert_eq!(why, "status 1: \\x1b]0;owned\\x07"),
            _ => panic!("not refused"),
        }
    }
}
