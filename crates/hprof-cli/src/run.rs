//! `hprof-rs run`: start a command with the agent loaded through
//! JAVA_TOOL_OPTIONS, so any launcher that starts a JVM picks it up.

use super::agent_path;
use super::child_signals::run_forwarding;
use std::path::{Path, PathBuf};
use std::process::Command;

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
        options,
        std::env::var("JAVA_TOOL_OPTIONS").ok().as_deref(),
    );
    let mut child = Command::new(program);
    child.args(args).env("JAVA_TOOL_OPTIONS", tool_options);
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
