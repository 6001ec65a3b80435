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
mod target;

use protocol::LoadReply;
use std::path::{Path, PathBuf};
use target::Target;

/// The option that stops the running profile.
const STOP: &str = "stop";

/// The agent's return values (src/agent/attach.rs), and what they mean.
const REFUSALS: &[(i32, &str)] = &[
    (
        2,
        "the agent refused the options (the JVM's standard error says why; see docs/attach.md)",
    ),
    (
        3,
        "a profile is already running in this JVM: stop it first with `hprof-rs attach PID stop`",
    ),
    (
        4,
        "no attached profile is running in this JVM: nothing to stop",
    ),
    (
        5,
        "the agent could not start (the JVM's standard error says why)",
    ),
];

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
    let (agent_options, output) = if stopping {
        (STOP.to_owned(), None)
    } else {
        let (with_file, output) = with_absolute_file(options, &cwd);
        match &output {
            Some(asked) if handover::needs_handover(&target, asked) => {
                let inside = handover::inside_name(with_file_format(options));
                handover::remember(&target, &inside, asked)?;
                (replace_file(options, &inside), Some(asked.clone()))
            }
            _ => (with_file, output),
        }
    };
    let library = handover::library_for(&target, &agent)?;
    let reply = as_target_user(&target, || {
        let stream = protocol::connect(&target)?;
        protocol::load(stream, &library, &agent_options)
    });
    let code = match reply {
        Ok(LoadReply::Returned(code)) => code,
        Ok(LoadReply::Refused(why)) => {
            handover::forget(&target);
            return Err(format!("the JVM {pid} refused to load the agent: {why}"));
        }
        Err(why) => {
            handover::forget(&target);
            return Err(why);
        }
    };
    if code != 0 {
        if !stopping {
            handover::forget(&target);
        }
        let meaning = REFUSALS.iter().find(|(c, _)| *c == code).map_or(
            "the agent failed to start (the JVM's standard error says why)",
            |(_, m)| m,
        );
        return Err(format!(
            "JVM {pid}: {}",
            meaning.replace("PID", &pid.to_string())
        ));
    }
    if stopping || handover::is_finished(&agent_options) {
        let written = handover::bring_out(&target)?;
        return Ok(match written {
            Some(path) => format!("profile of JVM {pid} written to {}", path.display()),
            None => format!("profile of JVM {pid} stopped and written"),
        });
    }
    Ok(match output {
        Some(path) => format!(
            "profiling JVM {pid} into {}; stop with: hprof-rs attach {pid} stop",
            path.display()
        ),
        None => format!("profiling JVM {pid}; stop with: hprof-rs attach {pid} stop"),
    })
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

/// Runs `work` with the target's effective user and group when we are
/// root (the files we make for it are then its own, as the JVM expects),
/// and as ourselves otherwise.
fn as_target_user<T>(
    target: &Target,
    work: impl FnOnce() -> Result<T, String>,
) -> Result<T, String> {
    // SAFETY: plain id calls; the ids are set back before returning.
    let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
    let switch = uid == 0 && target.uid != 0;
    if switch {
        // SAFETY: as root, setegid/seteuid to another id succeed or fail
        // without other effect; this tool runs no other thread now.
        let switched = unsafe { libc::setegid(target.gid) == 0 && libc::seteuid(target.uid) == 0 };
        if !switched {
            // SAFETY: back to root, as above.
            unsafe {
                libc::seteuid(uid);
                libc::setegid(gid);
            }
            return Err(format!("cannot take the user of JVM {}", target.pid));
        }
    }
    let result = work();
    if switch {
        // SAFETY: back to the saved root ids.
        unsafe {
            libc::seteuid(uid);
            libc::setegid(gid);
        }
    }
    result
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
