//! The agent's error line, sent to `hprof-rs attach` itself. The JVM
//! passes back only the number Agent_OnAttach returns; why a profile was
//! refused (a mistyped option, a file that cannot be created) would reach
//! only the JVM's standard error, which the user attaching rarely sees.
//!
//! While Agent_OnAttach runs, HotSpot's attach listener (one thread, one
//! request at a time) holds the client's connection open, accepted on its
//! socket `/tmp/.java_pid<pid>`, and writes its answer there only once the
//! agent returns. So the one connection of this process accepted on that
//! socket is the client's, and a line the agent sends on it comes before
//! the JVM's answer. The client asks for it with the option `reply=text`:
//! other clients (jcmd, `VirtualMachine.loadAgentPath`) read the JVM's
//! answer from the first byte.

use crate::sys;

/// Attach-only option word: send the error line to the client.
pub const REPLY_TEXT: &str = "reply=text";

/// The most descriptors looked at to find the connection.
const MAX_DESCRIPTORS: usize = 100_000;

/// The most bytes of a line sent.
const MAX_LINE: usize = 1024;

/// Sends `line` (one line, cut at [`MAX_LINE`] bytes) to the client of the
/// attach request being served, when exactly one connection is found;
/// never waits for the client.
pub fn send_line(line: &str) {
    let pid = std::process::id();
    // HotSpot binds `<name>.tmp`, then renames it to `<name>`; the
    // socket's own name stays the first.
    let name = format!("/tmp/.java_pid{pid}");
    let bound = format!("{name}.tmp");
    let connections = sys::accepted_unix_connections(&[&name, &bound], MAX_DESCRIPTORS);
    let [connection] = connections[..] else {
        return;
    };
    let mut end = line.len().min(MAX_LINE);
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    let text = format!("{}\n", line[..end].replace('\n', " "));
    let _ = sys::send_now(connection, text.as_bytes());
}
