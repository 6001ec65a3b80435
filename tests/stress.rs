//! The stress suite: the workloads and exit paths that once hurt the agent,
//! under every mode, on JDK 17 and 25. Every run checks the same four things:
//! - no crash: the JVM left no `hs_err_pid*.log`;
//! - no hang: the run ends within its time bound;
//! - the program is unchanged: the same exit code and the same stdout as
//!   the program run without the agent;
//! - the profile is complete: `hprof-rs print` accepts the file.

mod common;

use common::{Jdk, Spawned, assert_print_accepts};
use std::ffi::OsString;
use std::fs;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

/// Every mode, as a user would pick it.
const MODES: &[&str] = &[
    "heap=sites",
    "heap=dump",
    "cpu=samples",
    "cpu=times",
    "cpu=old",
    "heap=all,cpu=samples,format=b",
    "monitor=y",
    "cpu=wall,thread=y",
];

/// Bound on one run: far above what any of them needs.
const RUN_LIMIT: Duration = Duration::from_secs(120);

/// Whether `line` is one of the JVM's own log lines (`[1.023s][info][jfr,startup] ...`):
/// they carry times and process ids that differ from run to run. Among them
/// is the one line the agent adds to a program's output, HotSpot's
/// `[error][jvmti] Posting Resource Exhausted event` when it posts the
/// event of the dump at an OutOfMemoryError (docs/reliability.md).
fn is_jvm_log_line(line: &str) -> bool {
    line.starts_with('[') && line.contains("s][") && line.contains("][")
}

fn stress_jdks() -> Vec<Jdk> {
    common::jdks_of(&[17, 25])
}

/// Runs `check` on JDK 17 and 25, reporting every failure.
fn on_each(check: impl Fn(&Jdk)) {
    common::on_each(&stress_jdks(), check)
}

/// The profile file of `mode` in `dir`.
fn profile_path(dir: &Path, index: usize, mode: &str) -> PathBuf {
    let binary = mode.contains("format=b");
    dir.join(format!(
        "mode-{index}.{}",
        if binary { "hprof" } else { "txt" }
    ))
}

/// What a run must keep: its exit code and stdout, minus lines that differ
/// between any two runs (the jdwp port, the JVM's log lines).
fn comparable(out: &Output) -> (Option<i32>, Vec<String>) {
    let lines = common::stdout_text(out)
        .lines()
        .filter(|l| !l.starts_with("Listening for transport dt_socket"))
        .filter(|l| !is_jvm_log_line(l))
        .map(str::to_owned)
        .collect();
    (out.status.code(), lines)
}

/// No `hs_err_pid*.log` in `dir`.
fn assert_no_crash_log(dir: &Path, what: &str) {
    let crashes: Vec<_> = fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("hs_err_pid"))
        .collect();
    assert!(crashes.is_empty(), "{what}: the JVM crashed: {crashes:?}");
}

/// One scenario: the program alone, then under each mode, with `extra`
/// JVM options in every run. `profile_readable` is false where the
/// destination is not a file (a device, a socket).
struct Scenario<'a> {
    name: &'a str,
    jvm: Vec<OsString>,
    main: &'a str,
    args: &'a [&'a str],
    /// Added to each mode's options (after it), e.g. `,file=/dev/full`.
    destination: Option<String>,
}

impl Scenario<'_> {
    fn java(&self, jdk: &Jdk, dir: &Path, agent: Option<OsString>) -> Command {
        let mut cmd = common::java_command(jdk, dir);
        cmd.args(&self.jvm);
        if let Some(agent) = agent {
            cmd.arg(agent);
        }
        cmd.arg(self.main).args(self.args);
        cmd
    }

    fn run_all(&self, jdk: &Jdk, modes: &[&str]) {
        let dir = common::scratch_dir(&format!("stress-{}-{}", self.name, jdk.label));
        let alone = common::run_timeout(&mut self.java(jdk, &dir, None), RUN_LIMIT);
        let expected = comparable(&alone);
        for (index, mode) in modes.iter().enumerate() {
            let what = format!("{} under {mode}", self.name);
            let file = profile_path(&dir, index, mode);
            let options = match &self.destination {
                Some(destination) => format!("{mode},{destination}"),
                None => format!("{mode},file={}", file.display()),
            };
            let mut cmd = self.java(jdk, &dir, Some(common::agentpath_arg(&options)));
            let out = common::run_timeout(&mut cmd, RUN_LIMIT);
            assert_no_crash_log(&dir, &what);
            assert_eq!(
                comparable(&out),
                expected,
                "{what}: the program's exit code or output changed\n{}",
                common::describe(&out)
            );
            if self.destination.is_none() {
                assert_print_accepts(&file, &what);
            }
        }
    }
}

#[test]
fn two_thousand_threads_churning() {
    on_each(|jdk| {
        Scenario {
            name: "churn",
            jvm: vec![],
            main: "Stress",
            args: &["churn", "2000"],
            destination: None,
        }
        .run_all(jdk, MODES)
    });
}

#[test]
fn deep_recursion_and_a_caught_stack_overflow() {
    on_each(|jdk| {
        Scenario {
            name: "deep",
            // Room for 10,000 frames also when cpu=times makes them larger.
            jvm: vec!["-Xss16m".into()],
            main: "Stress",
            args: &["deep", "10000"],
            destination: None,
        }
        .run_all(jdk, MODES)
    });
}

#[test]
fn five_hundred_classes_unloaded() {
    on_each(|jdk| {
        Scenario {
            name: "unload",
            jvm: vec![],
            main: "Stress",
            args: &["unload", "500"],
            destination: None,
        }
        .run_all(jdk, MODES)
    });
}

#[test]
fn system_exit_from_eight_threads() {
    on_each(|jdk| {
        Scenario {
            name: "exit8",
            jvm: vec![],
            main: "Stress",
            args: &["exit8"],
            destination: None,
        }
        .run_all(jdk, MODES)
    });
}

#[test]
fn out_of_memory_with_the_heap_full() {
    on_each(|jdk| {
        Scenario {
            name: "heap-full",
            jvm: vec!["-Xmx32m".into()],
            main: "HeapFull",
            args: &[],
            destination: None,
        }
        .run_all(jdk, MODES)
    });
}

#[test]
fn a_full_disk() {
    on_each(|jdk| {
        let out = Scenario {
            name: "disk-full",
            jvm: vec![],
            main: "Stress",
            args: &["churn", "50"],
            destination: Some("file=/dev/full".into()),
        };
        out.run_all(jdk, MODES);
    });
}

#[test]
fn flight_recorder_alongside_every_mode() {
    on_each(|jdk| {
        let dir = common::scratch_dir(&format!("stress-jfr-recording-{}", jdk.label));
        let recording = format!(
            "-XX:StartFlightRecording=filename={}",
            dir.join("rec.jfr").display()
        );
        Scenario {
            name: "jfr",
            jvm: vec![recording.into()],
            main: "Stress",
            args: &["churn", "200"],
            destination: None,
        }
        .run_all(jdk, MODES)
    });
}

#[test]
fn jdwp_alongside_every_mode() {
    on_each(|jdk| {
        Scenario {
            name: "jdwp",
            jvm: vec![
                "-agentlib:jdwp=transport=dt_socket,server=y,suspend=n,address=127.0.0.1:0".into(),
            ],
            main: "Stress",
            args: &["churn", "200"],
            destination: None,
        }
        .run_all(jdk, MODES)
    });
}

/// A socket peer that closes the connection at once, and one that accepts
/// but never reads (the exit then waits the writer's stall limit, 5 s).
#[test]
fn socket_peers_that_close_or_never_read() {
    on_each(|jdk| {
        for never_reads in [false, true] {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let port = listener.local_addr().unwrap().port();
            let peer = std::thread::spawn(move || {
                let (conn, _) = listener.accept().unwrap();
                if never_reads {
                    std::thread::sleep(Duration::from_secs(60));
                }
                drop(conn);
            });
            // One connection per run: the program alone connects nowhere.
            let modes: &[&str] = if never_reads {
                &["heap=dump,format=b"]
            } else {
                &["heap=sites"]
            };
            Scenario {
                name: if never_reads {
                    "peer-never-reads"
                } else {
                    "peer-closes"
                },
                jvm: vec!["-Xmx256m".into()],
                main: "BigHeap",
                args: &["64"],
                destination: Some(format!("net=127.0.0.1:{port}")),
            }
            .run_all(jdk, modes);
            drop(peer);
        }
    });
}

/// Ten SIGQUITs in a row, then the program's normal end: eleven dumps
/// (ten asked for, one at exit), each complete.
#[test]
fn ten_sigquits_in_a_row() {
    on_each(|jdk| {
        let dir = common::scratch_dir(&format!("stress-sigquit-{}", jdk.label));
        for (index, mode) in MODES.iter().enumerate() {
            let file = profile_path(&dir, index, mode);
            let mut cmd = common::java_command(jdk, &dir);
            cmd.arg(common::agentpath_arg(&format!(
                "{mode},file={}",
                file.display()
            )))
            .args(["Stress", "ready", "4"]);
            let mut run = Spawned::spawn(&mut cmd);
            run.wait_for_line("READY", Duration::from_secs(30));
            for i in 0..10u64 {
                run.signal(libc::SIGQUIT);
                std::thread::sleep(Duration::from_millis(i * 20));
            }
            let out = run.wait_timeout(RUN_LIMIT);
            let what = format!("10 SIGQUITs under {mode}");
            assert_no_crash_log(&dir, &what);
            common::assert_success(&out, &what);
            // The JVM prints a thread dump on stdout at each SIGQUIT,
            // between the program's own two lines.
            let stdout = common::stdout_text(&out);
            assert!(
                stdout.starts_with("READY\n") && stdout.ends_with("\nDONE\n"),
                "{what}: {stdout:.300}"
            );
            assert_print_accepts(&file, &what);
        }
    });
}

/// SIGTERM and SIGINT while a dump is being written: the JVM ends with the
/// signal's exit code, and the file is complete.
#[test]
fn sigterm_and_sigint_during_a_dump() {
    on_each(|jdk| {
        let dir = common::scratch_dir(&format!("stress-term-{}", jdk.label));
        let modes = [
            "heap=dump",
            "heap=dump,format=b",
            "heap=sites",
            "cpu=times",
            "cpu=wall",
        ];
        for (signal, code) in [(libc::SIGTERM, 143), (libc::SIGINT, 130)] {
            for (index, mode) in modes.iter().enumerate() {
                let file = profile_path(&dir, index, mode);
                let mut cmd = common::java_command(jdk, &dir);
                cmd.arg(common::agentpath_arg(&format!(
                    "{mode},file={}",
                    file.display()
                )))
                .args(["Stress", "ready", "30"]);
                let mut run = Spawned::spawn(&mut cmd);
                run.wait_for_line("READY", Duration::from_secs(30));
                run.signal(libc::SIGQUIT);
                std::thread::sleep(Duration::from_millis(30));
                run.signal(signal);
                let out = run.wait_timeout(RUN_LIMIT);
                let what = format!("signal {signal} during a dump under {mode}");
                assert_no_crash_log(&dir, &what);
                common::assert_exit_code(&out, code, &what);
                assert_print_accepts(&file, &what);
            }
        }
    });
}
