//! main()'s thread. By default it is the launcher's, under every mode: the
//! program sees exactly what it saw without the agent (MainIdentity). With
//! `main_stack=y` the modes that rewrite code (cpu=times, heap=sites) run
//! main() on a thread the agent gives it (src/agent/jvm/main_stack.rs):
//! the program sees what it saw without the agent but for the one
//! documented difference, its thread is not the one that ran the main
//! class's static initializer; and the profile shows one main thread.

mod common;

use common::Jdk;
use std::process::Output;

/// The rewriting modes, asked to run main() on a thread of the agent's.
const MODES: [&str; 2] = ["cpu=times,main_stack=y", "heap=sites,main_stack=y"];

/// Every mode and way of counting, none asking for main_stack.
const EVERY_MODE: [&str; 10] = [
    "heap=sites",
    "heap=sites,alloc_count=bytecode",
    "heap=sites,alloc_count=events",
    "heap=sites,alloc_interval=512k",
    "cpu=times",
    "cpu=times,timing=calls",
    "cpu=old",
    "cpu=samples",
    "monitor=y",
    "heap=all",
];

/// The program: main()'s thread is the one that ran the static
/// initializer, holds its thread-local, and has the id it has without the
/// agent, under every mode by default (before, the rewriting modes ran
/// main() on a thread of the agent's: false, null, 12-24).
#[test]
fn main_runs_on_the_launcher_s_thread_under_every_mode() {
    common::on_each(&common::jdks_of(&[11, 17, 21, 25]), |jdk| {
        let identity = |options: Option<&str>| {
            let dir = common::scratch_dir(&format!(
                "main-identity-{}-{}",
                jdk.label,
                options.unwrap_or("none").replace(['=', ','], "-")
            ));
            let mut cmd = common::java_command(jdk, &dir);
            if let Some(options) = options {
                cmd.arg(common::agentpath_arg(&format!("{options},file=out.txt")));
            }
            let out = common::run(cmd.arg("MainIdentity"));
            common::assert_success(&out, &format!("{} {options:?}", jdk.label));
            common::stdout_text(&out)
        };
        let without = identity(None);
        assert_eq!(
            without.lines().take(2).collect::<Vec<_>>(),
            ["true", "from-init"]
        );
        for options in EVERY_MODE {
            assert_eq!(identity(Some(options)), without, "{} {options}", jdk.label);
        }
    });
}

/// What main() does at its end (java-fixtures/MainThread.java) and the exit
/// code the launcher gives.
const ENDINGS: [(&str, i32); 4] = [("", 0), ("throw", 1), ("handler", 1), ("exit", 7)];

fn run(jdk: &Jdk, options: Option<&str>, ending: &str) -> Output {
    let dir = common::scratch_dir(&format!(
        "main-thread-{}-{}-{ending}",
        jdk.label,
        options.unwrap_or("none").replace('=', "-")
    ));
    let mut cmd = common::java_command(jdk, &dir);
    if let Some(options) = options {
        cmd.arg(common::agentpath_arg(&format!("{options},file=out.txt")));
    }
    cmd.arg("MainThread");
    if !ending.is_empty() {
        cmd.arg(ending);
    }
    common::run(&mut cmd)
}

/// The program's own lines of stderr: the agent's (its messages and the
/// "Dumping ... done." around its dump) left out.
fn program_stderr(out: &Output) -> Vec<String> {
    common::stderr_text(out)
        .lines()
        .filter(|l| !l.starts_with("HPROF") && !l.starts_with("Dumping ") && *l != " done.")
        .map(str::to_owned)
        .collect()
}

/// stdout without the `initializer=` line, which is the difference.
fn without_initializer(stdout: &str) -> Vec<&str> {
    stdout
        .lines()
        .filter(|l| !l.starts_with("initializer="))
        .collect()
}

#[test]
fn main_sees_its_thread_output_and_exit_code_as_without_the_agent() {
    common::on_each(&common::jdks_of(&[11, 17, 21, 25]), |jdk| {
        for (ending, code) in ENDINGS {
            let without = run(jdk, None, ending);
            common::assert_exit_code(&without, code, &format!("{ending:?} without the agent"));
            let plain = common::stdout_text(&without);
            assert_eq!(common::printed::<String>(&plain, "initializer"), "true");
            for mode in MODES {
                let what = format!("{} {mode} {ending:?}", jdk.label);
                let with = run(jdk, Some(mode), ending);
                common::assert_exit_code(&with, code, &what);
                let stdout = common::stdout_text(&with);
                assert_eq!(
                    without_initializer(&stdout),
                    without_initializer(&plain),
                    "{what}: stdout"
                );
                assert_eq!(
                    common::printed::<String>(&stdout, "initializer"),
                    "false",
                    "{what}: main() runs on the agent's thread"
                );
                assert_eq!(
                    program_stderr(&with),
                    program_stderr(&without),
                    "{what}: stderr"
                );
            }
        }
        // The handler main() gave its thread was called, once.
        let handled = common::stdout_text(&run(jdk, Some(MODES[1]), "handler"));
        assert_eq!(
            handled.matches("handled on main: boom").count(),
            1,
            "{handled}"
        );
    });
}

#[test]
fn the_profile_has_one_main_thread_with_main_s_time() {
    common::on_each(&common::jdks_of(&[17, 25]), |jdk| {
        let dir = common::scratch_dir(&format!("main-thread-profile-{}", jdk.label));
        let file = common::profile_to_file(
            jdk,
            &dir,
            "cpu=times,timing=calls,thread=y,main_stack=y",
            "out.txt",
            &["MainThread"],
        );
        let text = std::fs::read_to_string(file).expect("the profile");
        let starts: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("THREAD START") && l.contains("name=\"main\""))
            .collect();
        assert_eq!(starts.len(), 1, "{}: {starts:?}", jdk.label);
        let serial = starts[0]
            .split("id = ")
            .nth(1)
            .and_then(|rest| rest.split(',').next())
            .expect("the main thread's id");
        assert_eq!(
            text.matches(&format!("THREAD END (id = {serial})")).count(),
            1,
            "{}",
            jdk.label
        );
        // main()'s trace is the main thread's.
        let trace = text
            .split("\nTRACE ")
            .find(|block| {
                block
                    .lines()
                    .nth(1)
                    .is_some_and(|l| l.contains("MainThread.main"))
            })
            .unwrap_or_else(|| panic!("{}: no trace of MainThread.main", jdk.label));
        assert!(
            trace
                .lines()
                .next()
                .unwrap_or("")
                .contains(&format!("thread={serial}")),
            "{}: {trace}",
            jdk.label
        );
    });
}

/// Under `-Xcheck:jni` HotSpot gives threads its checking function table,
/// which the agent does not replace: main() stays on the launcher's thread
/// (the thread that ran the static initializer) and the program runs as
/// without the agent. And the agent's own JNI use draws none of the
/// checker's warnings (exceptions checked after each call into Java, room
/// for the local references of the loaded classes), in every mode.
#[test]
fn under_checked_jni_main_stays_on_the_launcher_s_thread_and_nothing_is_warned() {
    common::on_each(&common::jdks_of(&[11, 17, 25]), |jdk| {
        for mode in [
            "heap=sites",
            "cpu=times",
            "cpu=samples",
            "monitor=y",
            "heap=dump",
        ] {
            let what = format!("{} {mode} -Xcheck:jni", jdk.label);
            let dir = common::scratch_dir(&format!(
                "main-thread-checked-{}-{}",
                jdk.label,
                mode.replace('=', "-")
            ));
            let mut cmd = common::java_command(jdk, &dir);
            cmd.arg("-Xcheck:jni")
                .arg(common::agentpath_arg(&format!("{mode},file=out.txt")))
                .arg("MainThread");
            let out = common::run(&mut cmd);
            common::assert_success(&out, &what);
            let stdout = common::stdout_text(&out);
            assert_eq!(
                common::printed::<String>(&stdout, "initializer"),
                "true",
                "{what}"
            );
            assert_eq!(common::printed::<String>(&stdout, "name"), "main", "{what}");
            let stderr = common::stderr_text(&out);
            assert!(!stderr.contains("WARNING"), "{what}:\n{stderr}");
        }
    });
}
