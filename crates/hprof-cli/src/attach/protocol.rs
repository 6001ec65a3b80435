//! HotSpot's dynamic attach protocol on Linux, spoken directly (no jcmd,
//! so a JRE will do). The JVM starts its attach listener when it gets
//! SIGQUIT and finds a file `.attach_pid<pid>` in its working directory
//! (or /tmp); the listener then makes the UNIX socket `/tmp/.java_pid<pid>`.
//! A request is a protocol version and a command with three arguments,
//! each NUL-terminated; the reply is text: the command's status on the
//! first line, then what the command printed (for `load`, the value the
//! agent's Agent_OnAttach returned: `return code: N` in the JDKs tested,
//! the bare number in older updates). `<pid>` is the JVM's pid in its own
//! namespace; the files
//! are reached through `/proc/PID/root` (see target.rs).

use super::target::Target;
use std::fs::OpenOptions;
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How long the JVM is given to start its attach listener after SIGQUIT.
const LISTENER_WAIT: Duration = Duration::from_secs(10);
/// How long one request may take (a `stop` writes the whole profile; a
/// heap=dump attach dumps the heap).
const REPLY_WAIT: Duration = Duration::from_secs(600);
/// HotSpot reads each argument into a buffer of this many bytes.
const MAX_ARG: usize = 1024;

/// The JVM's attach socket, from here.
fn socket_path(target: &Target) -> PathBuf {
    target.path(&format!("/tmp/.java_pid{}", target.ns_pid))
}

/// Connects to the JVM's attach listener, starting it first when its
/// socket is not there yet.
pub fn connect(target: &Target) -> Result<UnixStream, String> {
    let socket = socket_path(target);
    if let Ok(stream) = UnixStream::connect(&socket) {
        return Ok(stream);
    }
    let trigger = make_trigger_file(target)?;
    let signalled = send_quit(target.pid);
    let deadline = Instant::now() + LISTENER_WAIT;
    let connected = loop {
        if let Err(e) = &signalled {
            break Err(e.clone());
        }
        if let Ok(stream) = UnixStream::connect(&socket) {
            break Ok(stream);
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
    if let Some(made) = trigger {
        let _ = std::fs::remove_file(made);
    }
    connected
}

/// The file that tells the JVM a SIGQUIT is an attach request: in its
/// working directory, else in its /tmp. Returns the file made, to remove
/// afterwards; None when one was there already (someone else's, left as
/// it is: the JVM only looks whether it exists).
fn make_trigger_file(target: &Target) -> Result<Option<PathBuf>, String> {
    let name = format!(".attach_pid{}", target.ns_pid);
    let in_cwd = Path::new(&format!("/proc/{}/cwd", target.pid)).join(&name);
    let in_tmp = target.path("/tmp").join(&name);
    let mut last_error = String::new();
    for path in [in_cwd, in_tmp] {
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
        {
            Ok(_) => return Ok(Some(path)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Ok(None),
            Err(e) => last_error = format!("cannot create {}: {e}", path.display()),
        }
    }
    Err(last_error)
}

/// SIGQUIT to `pid` (only ever sent to a process found to be a JVM).
fn send_quit(pid: u32) -> Result<(), String> {
    let pid = rustix::process::Pid::from_raw(pid as i32).ok_or("pid 0")?;
    rustix::process::kill_process(pid, rustix::process::Signal::QUIT)
        .map_err(|e| format!("cannot signal process {pid}: {e}"))
}

/// What the JVM answered to `load`.
pub enum LoadReply {
    /// Agent_OnAttach ran and returned this.
    Returned(i32),
    /// The JVM refused the command: its status and message.
    Refused(String),
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
    let mut reply = String::new();
    stream.read_to_string(&mut reply).map_err(io)?;
    Ok(parse_reply(&reply))
}

/// The reply of a `load`: status line, then the agent's return value.
fn parse_reply(reply: &str) -> LoadReply {
    let mut lines = reply.lines();
    let status = lines.next().unwrap_or("").trim();
    let rest: Vec<&str> = lines.collect();
    if status != "0" {
        let message = rest.join(" ");
        return LoadReply::Refused(format!("status {status}: {}", message.trim()));
    }
    let returned = rest
        .iter()
        .map(|l| l.trim().trim_start_matches("return code:").trim())
        .find_map(|l| l.parse().ok());
    match returned {
        Some(code) => LoadReply::Returned(code),
        // (JDK 21 and later with -XX:-EnableDynamicAgentLoading: status 0
        // and the reason.)
        None if !rest.is_empty() => LoadReply::Refused(rest.join(" ").trim().to_owned()),
        None => LoadReply::Refused(format!("unexpected reply: {}", reply.trim())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn returned(reply: &str) -> Option<i32> {
        match parse_reply(reply) {
            LoadReply::Returned(code) => Some(code),
            LoadReply::Refused(_) => None,
        }
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
            LoadReply::Returned(code) => panic!("returned {code}"),
        }
    }
}
