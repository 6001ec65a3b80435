//! `hprof-rs attach PID OPTIONS` and `hprof-rs attach PID stop`: load the
//! agent into a running HotSpot JVM through its own attach mechanism
//! (protocol.rs), after checking that the process is a JVM that allows it
//! (target.rs), and turn the agent's answer into a one-line message.
//!
//! The output file is named as the user sees it: a relative `file=` (or
//! the default name) is made absolute against this command's directory.
//! A JVM in a mount namespace of its own (a container) cannot see that
//! path: it writes into its own /tmp, under a random name, and `stop`
//! copies the file out to the path asked for (handover.rs).

mod handover;
mod protocol;
mod root;
mod target;

use handover::{Handover, REPLY_SIZE, SIZE_BASE};
use protocol::LoadReply;
use std::path::{Path, PathBuf};
use std::time::Duration;
use target::Target;

/// The option that stops the running profile.
const STOP: &str = "stop";

/// The agent's return values (src/agent/attach.rs), and what they mean.
/// The agent's own line follows, when it sent one; else the note below.
const REFUSALS: &[(i32, &str)] = &[
    (2, "the agent refused the options"),
    (
        3,
        "a profile is already running in this JVM: stop it first with `hprof-rs attach PID stop`",
    ),
    (
        4,
        "no attached profile is running in this JVM: nothing to stop",
    ),
    (5, "the agent could not start"),
    (
        6,
        "the JVM exited while the profile was being written: its output is incomplete",
    ),
];

/// What a refusal without the agent's line adds.
const SEE_STDERR: &str = " (the JVM's standard error says why; see docs/attach.md)";

/// Attach option word: the agent sends its error line back to us
/// (src/agent/attach_reply.rs).
const REPLY_TEXT: &str = "reply=text";

/// How long a JVM whose attach connection closed without an answer is
/// given to be seen gone.
const EXIT_WAIT: Duration = Duration::from_secs(3);

/// Exit status of every failure.
const FAILED: i32 = 1;

/// Runs `hprof-rs attach`; returns the exit status.
pub fn attach(pid: u32, options: &str, agent: Option<PathBuf>) -> i32 {
    match attach_or_explain(pid, options, agent) {
        Ok(said) => {
            println!("{said}");
            0
        }
        Err(why) => {
            eprintln!("hprof-rs: {why}");
            FAILED
        }
    }
}

fn attach_or_explain(pid: u32, options: &str, agent: Option<PathBuf>) -> Result<String, String> {
    let agent = match agent {
        Some(agent) => agent,
        None => crate::agent_path::find()?,
    };
    let agent = agent
        .canonicalize()
        .map_err(|e| format!("{}: {e}", agent.display()))?;
    let target = Target::find(pid)?;
    check_user(&target)?;
    let stopping = options.trim() == STOP;
    let cwd =
        std::env::current_dir().map_err(|e| format!("cannot read the current directory: {e}"))?;
    // A file the JVM writes inside its container, to bring out at the
    // end: the agent is then asked for the size it wrote (`reply=size`).
    let (agent_options, output, mut handover) = if stopping {
        match Handover::recall(&target)? {
            Some(pending) => (format!("{STOP},{REPLY_SIZE}"), None, Some(pending)),
            None => (STOP.to_owned(), None, None),
        }
    } else {
        let (with_file, output) = with_absolute_file(options, &cwd);
        match &output {
            Some(asked) if handover::needs_handover(&target, asked) => {
                let inside = handover::inside_name(with_file_format(options));
                let mut agent_options = replace_file(options, &inside);
                if handover::is_finished(&agent_options) {
                    agent_options = format!("{REPLY_SIZE},{agent_options}");
                }
                let pending = Handover::new(inside, asked.clone());
                (agent_options, output, Some(pending))
            }
            _ => (with_file, output, None),
        }
    };
    let finished = stopping || handover::is_finished(&agent_options);
    let agent_options = format!("{REPLY_TEXT},{agent_options}");
    let library = handover::library_for(&target, &agent)?;
    let reply = target.as_its_user(|| {
        let stream = protocol::connect(&target)?;
        protocol::load(stream, &library, &agent_options)
    });
    if stopping {
        // Whatever the stop's outcome, the JVM no longer writes that file.
        handover::forget(&target);
    }
    let (code, said) = match reply {
        Ok(LoadReply::Returned { code, said }) => (code, said),
        Ok(LoadReply::Refused(why)) => {
            return Err(format!("the JVM {pid} refused to load the agent: {why}"));
        }
        Ok(LoadReply::Nothing) => return Err(no_answer(&target, finished, output.as_deref())),
        Err(why) => return Err(why),
    };
    // With `reply=size`, success is the size written, in KiB, above SIZE_BASE.
    let sized = agent_options.split(',').any(|o| o == REPLY_SIZE);
    let (code, written_kib) = match code {
        c if sized && c >= SIZE_BASE => (0, Some(u64::from((c - SIZE_BASE) as u32))),
        c => (c, None),
    };
    if code != 0 {
        return Err(format!(
            "JVM {pid}: {}",
            refusal(code, said.as_deref(), pid)
        ));
    }
    if let Some(pending) = &mut handover {
        if finished {
            pending.bring_out(&target, written_kib)?;
            return Ok(format!(
                "profile of JVM {pid} written to {}",
                pending.asked.display()
            ));
        }
        pending
            .note_made(&target)
            .and_then(|()| pending.remember(&target))
            .map_err(|why| {
                format!("the profile of JVM {pid} runs, but its file cannot be handed over: {why}")
            })?;
    }
    if finished {
        return Ok(format!("profile of JVM {pid} stopped and written"));
    }
    Ok(match output {
        Some(path) => format!(
            "profiling JVM {pid} into {}; stop with: hprof-rs attach {pid} stop",
            path.display()
        ),
        None => format!("profiling JVM {pid}; stop with: hprof-rs attach {pid} stop"),
    })
}

/// Why the agent refused, from its return value and the line it sent back
/// (`said`), if any.
fn refusal(code: i32, said: Option<&str>, pid: u32) -> String {
    let meaning = REFUSALS
        .iter()
        .find(|(c, _)| *c == code)
        .map_or("the agent failed to start", |(_, m)| m)
        .replace("PID", &pid.to_string());
    match (said, code) {
        // The agent's own line says it all, and which profile runs.
        (Some(line), 3 | 4) => line.to_owned(),
        (Some(line), _) => format!("{meaning}: {line}"),
        (None, 3 | 4 | 6) => meaning,
        (None, _) => format!("{meaning}{SEE_STDERR}"),
    }
}

/// What to say when the JVM closed the attach connection without an
/// answer: most likely it exited meanwhile (`System.exit` during a heap
/// dump), which is said as such, with the state of the file it was
/// writing (`output`, when it ends with this attach).
fn no_answer(target: &Target, finished: bool, output: Option<&Path>) -> String {
    let pid = target.pid;
    if !target.exits_within(EXIT_WAIT) {
        return format!("the JVM {pid} closed the attach connection without an answer");
    }
    match output {
        Some(path) if finished && path.exists() => format!(
            "the JVM {pid} exited during the attach, before the profile was written: \
             {} is incomplete",
            path.display()
        ),
        _ => protocol::exited(target),
    }
}

/// A user other than root may attach only to its own JVMs (the JVM checks
/// too, but says nothing to us).
fn check_user(target: &Target) -> Result<(), String> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    if me != 0 && me != target.uid {
        return Err(format!(
            "the JVM {} runs as uid {}, not as uid {me}: attach as its user or as root",
            target.pid, target.uid
        ));
    }
    Ok(())
}

/// The options' `file=` value, if given (the last one wins).
fn file_value(options: &str) -> Option<&str> {
    options
        .split(',')
        .filter_map(|o| o.strip_prefix("file="))
        .next_back()
}

/// Whether the options ask for binary output (its default name differs).
fn with_file_format(options: &str) -> bool {
    options.split(',').any(|o| o == "format=b")
}

/// The options with `file=` made absolute against `cwd` (the default name
/// when none is given), and the output path; `net=` has no file.
fn with_absolute_file(options: &str, cwd: &Path) -> (String, Option<PathBuf>) {
    if options.split(',').any(|o| o.starts_with("net=")) {
        return (options.to_owned(), None);
    }
    let default_name = if with_file_format(options) {
        "java.hprof"
    } else {
        "java.hprof.txt"
    };
    let path = cwd.join(file_value(options).unwrap_or(default_name));
    let absolute = replace_file(options, &path.to_string_lossy());
    (absolute, Some(path))
}

/// The options with every `file=` left out and `file=<path>` added.
fn replace_file(options: &str, path: &str) -> String {
    let mut kept: Vec<&str> = options
        .split(',')
        .filter(|o| !o.is_empty() && !o.starts_with("file="))
        .collect();
    let file = format!("file={path}");
    kept.push(&file);
    kept.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_says_the_agents_line_when_it_sent_one() {
        let line = "HPROF ERROR: can't create profile file: /x (Permission denied)";
        assert_eq!(
            refusal(5, Some(line), 7),
            format!("the agent could not start: {line}")
        );
        assert_eq!(
            refusal(5, None, 7),
            format!("the agent could not start{SEE_STDERR}")
        );
        let running =
            "HPROF ERROR: a profile is already running in this JVM (started with the JVM)";
        assert_eq!(refusal(3, Some(running), 7), running);
        assert!(refusal(3, None, 7).contains("hprof-rs attach 7 stop"));
        assert_eq!(
            refusal(-1, None, 7),
            format!("the agent failed to start{SEE_STDERR}")
        );
    }

    #[test]
    fn a_relative_file_is_made_absolute_against_the_directory() {
        let cwd = Path::new("/home/me/work");
        assert_eq!(
            with_absolute_file("cpu=samples,file=out.txt", cwd),
            (
                "cpu=samples,file=/home/me/work/out.txt".to_owned(),
                Some(PathBuf::from("/home/me/work/out.txt"))
            )
        );
        assert_eq!(
            with_absolute_file("heap=sites", cwd).0,
            "heap=sites,file=/home/me/work/java.hprof.txt"
        );
        assert_eq!(
            with_absolute_file("format=b", cwd).0,
            "format=b,file=/home/me/work/java.hprof"
        );
        assert_eq!(
            with_absolute_file("file=/abs/p,cpu=samples", cwd).0,
            "cpu=samples,file=/abs/p"
        );
        assert_eq!(
            with_absolute_file("net=h:9", cwd),
            ("net=h:9".to_owned(), None)
        );
        assert_eq!(
            with_absolute_file("", cwd).0,
            "file=/home/me/work/java.hprof.txt"
        );
    }
}
