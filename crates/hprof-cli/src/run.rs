//! `hprof-rs run`: start a command with the agent loaded through
//! JAVA_TOOL_OPTIONS, so any launcher that starts a JVM picks it up.
//!
//! Two things differ from loading the agent by hand. Traces keep
//! [`RUN_DEPTH`] frames unless the options say `depth=` (the agent's own
//! default stays HPROF's 4, for the scripts that load it as HPROF). And the
//! command gets [`RUN_STARTED`]: a JVM that finds its output file written
//! since then by another JVM of the run (a launcher that forks JVMs) writes
//! `<name>.<pid>.txt` instead, and says so (src/output/naming.rs).

use super::agent_path;
use super::child_signals::run_forwarding;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

/// The trace depth under `run` when the options give none. HPROF's 4
/// frames show the hot method and 3 callers, seldom the program's own code
/// under a framework or the JDK: javac's CPU samples were 27 frames deep
/// at the median (16 kept 23% of them whole, and every one's 15 nearest
/// callers). Under heap=sites 16 cost what 4 does on H2 and Rhino and
/// 1.15-1.3x more on FOP and Clojure, where 64 cost Rhino 1.5x and a 178 MB
/// file (docs/decisions.md).
pub const RUN_DEPTH: u32 = 16;

/// The variable that tells the agent when the run started (read by
/// src/output/naming.rs).
pub const RUN_STARTED: &str = "HPROF_RS_RUN_STARTED";

/// Runs `command` with the agent, passing TERM, INT, HUP and QUIT on to it;
/// returns its exit code.
pub fn run(options: &str, agent: Option<PathBuf>, command: &[String]) -> i32 {
    let agent = match agent.map_or_else(agent_path::find, Ok) {
        Ok(agent) => agent,
        Err(message) => {
            eprintln!("hprof-rs: {message} (or --agent)");
            return 2;
        }
    };
    let Some((program, args)) = command.split_first() else {
        eprintln!("hprof-rs: no command given after --");
        return 2;
    };
    let tool_options = java_tool_options(
        &agent,
        &with_run_depth(options),
        std::env::var("JAVA_TOOL_OPTIONS").ok().as_deref(),
    );
    let started = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since_1970| since_1970.as_nanos());
    let mut child = Command::new(program);
    child
        .args(args)
        .env("JAVA_TOOL_OPTIONS", tool_options)
        .env(RUN_STARTED, started.to_string());
    match run_forwarding(&mut child) {
        Ok(status) => exit_code(status),
        Err(error) => {
            eprintln!("hprof-rs: cannot run {program}: {error}");
            127
        }
    }
}

/// The exit code to pass on: the child's, or 128 + signal like a shell.
fn exit_code(status: std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status
        .code()
        .unwrap_or_else(|| 128 + status.signal().unwrap_or(0))
}

/// The options with `depth=`[`RUN_DEPTH`] added when they give no depth.
fn with_run_depth(options: &str) -> String {
    let has_depth = options
        .split(',')
        .any(|option| option.split('=').next() == Some("depth"));
    match (has_depth, options.is_empty()) {
        (true, _) => options.to_owned(),
        (false, true) => format!("depth={RUN_DEPTH}"),
        (false, false) => format!("{options},depth={RUN_DEPTH}"),
    }
}

/// JAVA_TOOL_OPTIONS with our `-agentpath` added in front of what was there.
/// The JVM splits this variable at white space unless quoted, so a path or
/// option string with spaces is put in double quotes.
fn java_tool_options(agent: &Path, options: &str, existing: Option<&str>) -> String {
    let mut flag = format!("-agentpath:{}", agent.display());
    if !options.is_empty() {
        flag.push('=');
        flag.push_str(options);
    }
    if flag.contains(char::is_whitespace) {
        flag = format!("\"{flag}\"");
    }
    match existing {
        Some(existing) if !existing.trim().is_empty() => format!("{flag} {existing}"),
        _ => flag,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_run_depth_is_added_unless_a_depth_is_given() {
        assert_eq!(with_run_depth(""), "depth=16");
        assert_eq!(
            with_run_depth("cpu=samples,file=a.txt"),
            "cpu=samples,file=a.txt,depth=16"
        );
        assert_eq!(with_run_depth("depth=4,cpu=samples"), "depth=4,cpu=samples");
        assert_eq!(with_run_depth("heap=sites,depth=64"), "heap=sites,depth=64");
        assert_eq!(
            with_run_depth("file=depth=2.txt"),
            "file=depth=2.txt,depth=16",
            "a value is not a key"
        );
    }

    #[test]
    fn agent_flag_goes_first_and_is_quoted_when_needed() {
        let agent = Path::new("/opt/hprof/libhprof_rs.so");
        assert_eq!(
            java_tool_options(agent, "", None),
            "-agentpath:/opt/hprof/libhprof_rs.so"
        );
        assert_eq!(
            java_tool_options(agent, "cpu=samples", Some("-Xmx1g")),
            "-agentpath:/opt/hprof/libhprof_rs.so=cpu=samples -Xmx1g"
        );
        assert_eq!(
            java_tool_options(Path::new("/my dir/libhprof_rs.so"), "heap=sites", None),
            "\"-agentpath:/my dir/libhprof_rs.so=heap=sites\""
        );
    }
}
