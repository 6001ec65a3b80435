//! The foundation, end to end on real JVMs of every JDK in the matrix: the
//! agent loads every way HPROF could be loaded, takes HPROF's options with
//! HPROF's errors and exit codes, and leaves a complete, parseable file on
//! every exit path.

mod common;
#[path = "support/jvm_hprof_check.rs"]
mod jvm_hprof_check;

use common::{AsciiProfile, Jdk, Spawned, assert_print_accepts};
use hprof_rs::format::binary::{self, RecordBody};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

/// The text file of a default run in `dir`.
fn ascii_file(dir: &Path) -> PathBuf {
    dir.join("java.hprof.txt")
}

/// Runs fixture `main` with `jvm_args` on `jdk` in `dir`.
fn run_fixture(
    jdk: &Jdk,
    dir: &Path,
    jvm_args: &[&std::ffi::OsStr],
    main: &str,
    args: &[&str],
) -> Output {
    let mut cmd = common::java_command(jdk, dir);
    cmd.args(jvm_args).arg(main).args(args);
    common::run(&mut cmd)
}

/// Parses a binary profile, panicking with the offset when it is malformed.
fn parse_binary(path: &Path) -> binary::reader::BinaryFile {
    let bytes = fs::read(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    binary::reader::parse(&bytes).unwrap_or_else(|e| panic!("{} is malformed: {e}", path.display()))
}

/// Checks the first line against
/// `JAVA PROFILE \d.\d.\d, created \w+ \w+ +\d+ \d{2}:\d{2}:\d{2} \d{4}`.
fn assert_header_line(line: &str) {
    let rest = line
        .strip_prefix("JAVA PROFILE ")
        .unwrap_or_else(|| panic!("bad header {line:?}"));
    let (version, created) = rest
        .split_once(", created ")
        .unwrap_or_else(|| panic!("bad header {line:?}"));
    let digits: Vec<&str> = version.split('.').collect();
    assert!(
        digits.len() == 3
            && digits
                .iter()
                .all(|d| d.len() == 1 && d.chars().all(|c| c.is_ascii_digit()))
    );
    let words: Vec<&str> = created.split_whitespace().collect();
    assert_eq!(words.len(), 5, "ctime has five fields: {line:?}");
    assert!(
        words[0].chars().all(char::is_alphanumeric) && words[1].chars().all(char::is_alphanumeric)
    );
    assert!(
        words[2].parse::<u32>().is_ok() && words[4].len() == 4 && words[4].parse::<u32>().is_ok()
    );
    let clock: Vec<&str> = words[3].split(':').collect();
    assert!(
        clock.len() == 3
            && clock
                .iter()
                .all(|p| p.len() == 2 && p.parse::<u32>().is_ok()),
        "{line:?}"
    );
}

/// A default ASCII run wrote a complete profile with `main`'s THREAD START.
fn assert_complete_ascii_with_main(path: &Path) {
    let text =
        fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    assert_header_line(text.lines().next().unwrap_or_default());
    let profile = AsciiProfile::read(path);
    let main_started = profile
        .threads()
        .get(&200_001)
        .is_some_and(|name| name == "main");
    assert!(
        main_started,
        "no THREAD START for main (id = 200001) in {}:\n{text}",
        path.display()
    );
    assert!(
        profile
            .traces()
            .any(|t| t.serial == 300_000 && t.frames.is_empty()),
        "the empty trace 300000 was not printed at the exit dump"
    );
    assert_print_accepts(path, "the ASCII profile");
}

#[test]
fn help_prints_the_option_table_and_exits_0() {
    common::on_each(&common::jdks(), |jdk| {
        let dir = common::scratch_dir(&format!("help-{}", jdk.label));
        let out = run_fixture(
            jdk,
            &dir,
            &[common::agentpath_arg("help").as_os_str()],
            "Hello",
            &[],
        );
        common::assert_exit_code(&out, 0, &format!("help on {}", jdk.label));
        let text = common::stdout_text(&out);
        for row in [
            "heap=dump|sites|all    heap profiling                 all",
            "cpu=samples|times|old  CPU usage                      off",
            "depth=<size>           stack trace depth              4",
            "cutoff=<value>         output cutoff point            0.0001",
        ] {
            assert!(
                text.contains(row),
                "{}: help lacks {row:?}:\n{text}",
                jdk.label
            );
        }
        assert!(
            !text.contains("Hello, hprof"),
            "the program must not run after help"
        );
    });
}

#[test]
fn option_errors_print_hprof_messages_and_exit_1() {
    let cases = [
        (
            "bogus=1",
            "HPROF ERROR: hprof option error: Unknown option: bogus (bogus=1)",
        ),
        (
            "format=b,cpu=times",
            "cpu=times|old is not supported with format=b",
        ),
        (
            "format=b,monitor=y",
            "monitor=y is not supported with format=b",
        ),
    ];
    common::on_each(&common::jdks(), |jdk| {
        let dir = common::scratch_dir(&format!("option-errors-{}", jdk.label));
        for (options, expected) in cases {
            let out = run_fixture(
                jdk,
                &dir,
                &[common::agentpath_arg(options).as_os_str()],
                "Hello",
                &[],
            );
            common::assert_exit_code(&out, 1, &format!("{options} on {}", jdk.label));
            let stderr = common::stderr_text(&out);
            assert!(
                stderr.contains(expected),
                "{}: {options}: expected {expected:?} in:\n{stderr}",
                jdk.label
            );
            assert!(!common::stdout_text(&out).contains("Hello, hprof"));
        }
    });
}

#[test]
fn loads_by_agentpath_agentlib_xrun_and_java_tool_options() {
    common::on_each(&common::jdks(), |jdk| {
        let ways: [(&str, Vec<String>, Option<String>); 6] = [
            (
                "agentpath",
                vec![common::agentpath_arg("").to_string_lossy().into_owned()],
                None,
            ),
            ("agentlib-hprof_rs", vec!["-agentlib:hprof_rs".into()], None),
            ("xrun-hprof_rs", vec!["-Xrunhprof_rs:depth=4".into()], None),
            ("agentlib-hprof", vec!["-agentlib:hprof".into()], None),
            ("xrun-hprof", vec!["-Xrunhprof:depth=4".into()], None),
            (
                "java-tool-options",
                vec![],
                Some(common::agentpath_arg("").to_string_lossy().into_owned()),
            ),
        ];
        for (way, args, tool_options) in ways {
            let dir = common::scratch_dir(&format!("load-{way}-{}", jdk.label));
            let mut cmd = common::java_command(jdk, &dir);
            common::with_agent_on_library_path(&mut cmd);
            if let Some(value) = &tool_options {
                cmd.env("JAVA_TOOL_OPTIONS", value);
            }
            cmd.args(&args).arg("Hello");
            let out = common::run(&mut cmd);
            common::assert_success(&out, &format!("{way} on {}", jdk.label));
            assert!(common::stdout_text(&out).contains("Hello, hprof"));
            assert_complete_ascii_with_main(&ascii_file(&dir));
        }
    });
}

#[test]
fn binary_output_is_parsed_by_our_reader_hprof_slurp_and_print() {
    common::on_each(&common::jdks(), |jdk| {
        let dir = common::scratch_dir(&format!("binary-{}", jdk.label));
        let out = run_fixture(
            jdk,
            &dir,
            &[common::agentpath_arg("format=b").as_os_str()],
            "Threads",
            &[],
        );
        common::assert_success(&out, &format!("format=b on {}", jdk.label));
        let path = dir.join("java.hprof");
        let file = parse_binary(&path);
        // The default is heap=all, and files with heap dumps use 8-byte identifiers.
        assert_eq!(file.header.id_size, 8);
        assert!(matches!(
            file.records.first().map(|r| &r.body),
            Some(RecordBody::ControlSettings { depth: 4, .. })
        ));
        let names: std::collections::HashMap<u64, String> = file
            .records
            .iter()
            .filter_map(|r| match &r.body {
                RecordBody::Utf8 { id, text } => {
                    Some((*id, String::from_utf8_lossy(text).into_owned()))
                }
                _ => None,
            })
            .collect();
        let started: Vec<&str> = file
            .records
            .iter()
            .filter_map(|r| match &r.body {
                RecordBody::StartThread { name_id, .. } => names.get(name_id).map(String::as_str),
                _ => None,
            })
            .collect();
        for name in ["main", "worker-1", "worker-2", "worker-3"] {
            assert!(
                started.contains(&name),
                "{}: no START THREAD for {name}: {started:?}",
                jdk.label
            );
        }
        let loads = file
            .records
            .iter()
            .filter(|r| matches!(r.body, RecordBody::LoadClass { .. }))
            .count();
        assert!(
            loads > 300,
            "{}: only {loads} LOAD CLASS records",
            jdk.label
        );
        assert!(assert_print_accepts(&path, &jdk.label).contains("START THREAD"));
        let bytes = fs::read(&path).unwrap();
        let counts = jvm_hprof_check::parse_hprof_fully(&bytes)
            .unwrap_or_else(|e| panic!("{}: jvm-hprof rejects the file: {e}", jdk.label));
        assert_eq!(counts.id_size, 8);
        assert!(
            counts.label.starts_with("JAVA PROFILE 1.0."),
            "{}",
            counts.label
        );
        assert_eq!(
            counts.records.values().sum::<u64>() as usize,
            file.records.len(),
            "{}: record counts differ",
            jdk.label
        );
        if let Some(slurp) = common::slurp_binary() {
            let out = common::run(Command::new(slurp).arg(&path));
            common::assert_success(&out, &format!("hprof-slurp on {}", jdk.label));
            let summary = common::stdout_text(&out);
            let count = |body: fn(&RecordBody) -> bool| {
                file.records.iter().filter(|r| body(&r.body)).count()
            };
            let expected = [
                (
                    "Start threads",
                    count(|b| matches!(b, RecordBody::StartThread { .. })),
                ),
                (
                    "End threads",
                    count(|b| matches!(b, RecordBody::EndThread { .. })),
                ),
                (
                    "Classes loaded",
                    count(|b| matches!(b, RecordBody::LoadClass { .. })),
                ),
                (
                    "Stack traces",
                    count(|b| matches!(b, RecordBody::Trace { .. })),
                ),
                (
                    "Stack frames",
                    count(|b| matches!(b, RecordBody::Frame { .. })),
                ),
            ];
            for (label, n) in expected {
                let line = format!("{label}: {n}");
                assert!(
                    summary.lines().any(|l| l.trim() == line),
                    "{}: hprof-slurp disagrees, expected {line:?}:\n{summary}",
                    jdk.label
                );
            }
        }
    });
}

#[test]
fn force_n_picks_a_pid_name_when_the_file_exists() {
    common::on_each(&common::jdks(), |jdk| {
        let dir = common::scratch_dir(&format!("force-n-{}", jdk.label));
        fs::write(ascii_file(&dir), "keep me\n").unwrap();
        let mut cmd = common::java_command(jdk, &dir);
        cmd.arg(common::agentpath_arg("force=n")).arg("Hello");
        let child = Spawned::spawn(&mut cmd);
        let pid = child.pid();
        let out = child.wait_timeout(Duration::from_secs(120));
        common::assert_success(&out, &format!("force=n on {}", jdk.label));
        assert_eq!(
            fs::read_to_string(ascii_file(&dir)).unwrap(),
            "keep me\n",
            "the old file was touched"
        );
        assert_complete_ascii_with_main(&dir.join(format!("java.hprof.{pid}.txt")));
    });
}

#[test]
fn unusable_destinations_fail_with_a_message_and_exit_1() {
    let closed_port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    common::on_each(&common::jdks(), |jdk| {
        let dir = common::scratch_dir(&format!("bad-destination-{}", jdk.label));
        let cases = [
            (
                "file=/nonexistent/dir/x".to_owned(),
                "can't create profile file: /nonexistent/dir/x",
            ),
            (
                format!("net=127.0.0.1:{closed_port}"),
                "can't connect to 127.0.0.1",
            ),
        ];
        for (options, expected) in &cases {
            let out = run_fixture(
                jdk,
                &dir,
                &[common::agentpath_arg(options).as_os_str()],
                "Hello",
                &[],
            );
            common::assert_exit_code(&out, 1, &format!("{options} on {}", jdk.label));
            let stderr = common::stderr_text(&out);
            assert!(
                stderr.contains(&format!("HPROF ERROR: {expected}")),
                "{}: {options}:\n{stderr}",
                jdk.label
            );
        }
    });
}

#[test]
fn net_streams_what_the_file_would_get() {
    common::on_each(&common::jdks(), |jdk| {
        let dir = common::scratch_dir(&format!("net-{}", jdk.label));
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let receiver = std::thread::spawn(move || {
            let (mut stream, _) = listener.accept().unwrap();
            let mut bytes = Vec::new();
            std::io::Read::read_to_end(&mut stream, &mut bytes).unwrap();
            bytes
        });
        let options = format!("net=127.0.0.1:{port}");
        let out = run_fixture(
            jdk,
            &dir,
            &[common::agentpath_arg(&options).as_os_str()],
            "Hello",
            &[],
        );
        common::assert_success(&out, &format!("{options} on {}", jdk.label));
        let bytes = receiver.join().unwrap();
        let received = dir.join("received.txt");
        fs::write(&received, &bytes).unwrap();
        assert_complete_ascii_with_main(&received);
        assert!(
            !ascii_file(&dir).exists(),
            "net= must not also write a file"
        );
    });
}

#[test]
fn every_exit_path_leaves_a_complete_file_and_keeps_the_exit_code() {
    common::on_each(&common::jdks(), |jdk| {
        for (main, code) in [("Hello", 0), ("ExitCode", 3), ("Uncaught", 1)] {
            for format in ["a", "b"] {
                let dir = common::scratch_dir(&format!("exit-{main}-{format}-{}", jdk.label));
                let options = format!("format={format}");
                let out = run_fixture(
                    jdk,
                    &dir,
                    &[common::agentpath_arg(&options).as_os_str()],
                    main,
                    &[],
                );
                common::assert_exit_code(&out, code, &format!("{main} {options} on {}", jdk.label));
                if format == "a" {
                    assert_complete_ascii_with_main(&ascii_file(&dir));
                } else {
                    parse_binary(&dir.join("java.hprof"));
                    assert_print_accepts(&dir.join("java.hprof"), &jdk.label);
                }
            }
        }
        // SIGTERM: the JVM exits 143 (128 + 15) as it does without the agent.
        let dir = common::scratch_dir(&format!("exit-sigterm-{}", jdk.label));
        let mut cmd = common::java_command(jdk, &dir);
        cmd.arg(common::agentpath_arg("")).arg("Sleeper").arg("60");
        let mut child = Spawned::spawn(&mut cmd);
        child.wait_for_line("READY", Duration::from_secs(60));
        child.signal(libc::SIGTERM);
        let out = child.wait_timeout(Duration::from_secs(60));
        assert_eq!(
            out.status.code(),
            Some(143),
            "SIGTERM on {}: {}",
            jdk.label,
            common::describe(&out)
        );
        assert_complete_ascii_with_main(&ascii_file(&dir));
    });
}

#[test]
fn sigquit_appends_a_dump_and_the_program_finishes() {
    common::on_each(&common::jdks(), |jdk| {
        let dir = common::scratch_dir(&format!("sigquit-{}", jdk.label));
        let mut cmd = common::java_command(jdk, &dir);
        cmd.arg(common::agentpath_arg("")).arg("Sleeper").arg("3");
        let mut child = Spawned::spawn(&mut cmd);
        child.wait_for_line("READY", Duration::from_secs(60));
        child.signal(libc::SIGQUIT);
        // The dump is flushed before the program goes on: wait for it to show.
        let path = ascii_file(&dir);
        common::wait_until(
            Duration::from_secs(20),
            || format!("{}: no dump after SIGQUIT", jdk.label),
            || {
                fs::read_to_string(&path)
                    .unwrap_or_default()
                    .contains("TRACE 300000:")
            },
        );
        let out = child.wait_timeout(Duration::from_secs(60));
        common::assert_success(&out, &format!("Sleeper with SIGQUIT on {}", jdk.label));
        assert!(
            common::stdout_text(&out).contains("DONE"),
            "the program did not finish"
        );
        assert_complete_ascii_with_main(&path);
    });
}

/// A SIGQUIT heap dump while the program starts and ends threads: each
/// thread's START and END THREAD records come after the dump, never inside
/// its segments (they used to land there and cut them, 3 runs in 3 on JDK 21),
/// and none is lost.
#[test]
fn records_made_during_a_heap_dump_come_after_it() {
    common::on_each(&common::jdks(), |jdk| {
        let dir = common::scratch_dir(&format!("dump-churn-{}", jdk.label));
        let mut cmd = common::java_command(jdk, &dir);
        cmd.arg(common::agentpath_arg("format=b"))
            .args(["BigHeap", "96", "4"]);
        let mut child = Spawned::spawn(&mut cmd);
        child.wait_for_line("held", Duration::from_secs(60));
        std::thread::sleep(Duration::from_millis(500));
        child.signal(libc::SIGQUIT);
        let out = child.wait_timeout(Duration::from_secs(120));
        let what = format!(
            "BigHeap with threads starting during a dump on {}",
            jdk.label
        );
        common::assert_success(&out, &what);
        let started: usize = common::stdout_text(&out)
            .lines()
            .find_map(|l| l.strip_prefix("started="))
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{what}: no started= line"));
        let file = parse_binary(&dir.join("java.hprof"));
        let names: std::collections::HashMap<u64, &[u8]> = file
            .records
            .iter()
            .filter_map(|r| match &r.body {
                RecordBody::Utf8 { id, text } => Some((*id, text.as_slice())),
                _ => None,
            })
            .collect();
        let churn_starts = file
            .records
            .iter()
            .filter(|r| match &r.body {
                RecordBody::StartThread { name_id, .. } => {
                    names.get(name_id).is_some_and(|n| n.starts_with(b"churn-"))
                }
                _ => false,
            })
            .count();
        assert_eq!(churn_starts, started, "{what}: one START THREAD per thread");
        let dumps = file
            .records
            .iter()
            .filter(|r| matches!(r.body, RecordBody::HeapDumpEnd))
            .count();
        assert_eq!(dumps, 2, "{what}: the SIGQUIT dump and the exit dump");
        assert_print_accepts(&dir.join("java.hprof"), &jdk.label);
    });
}

#[test]
fn javac_runs_under_the_agent_like_the_manual_example() {
    let dir = common::scratch_dir("javac-hello");
    fs::write(
        dir.join("Hello.java"),
        "class Hello { public static void main(String[] a) { } }\n",
    )
    .unwrap();
    let mut cmd = Command::new(common::javac());
    cmd.current_dir(&dir)
        .arg(format!("-J{}", common::agentpath_arg("").to_string_lossy()))
        .arg("Hello.java");
    let out = common::run(&mut cmd);
    common::assert_success(&out, "javac -J-agentpath");
    assert!(
        dir.join("Hello.class").is_file(),
        "javac did not compile under the agent"
    );
    assert_complete_ascii_with_main(&ascii_file(&dir));
}

#[test]
fn a_panic_in_a_callback_is_contained_and_reported() {
    common::on_each(&common::jdks(), |jdk| {
        let dir = common::scratch_dir(&format!("panic-{}", jdk.label));
        // X=0x100 is the hidden test switch that panics in every ThreadStart callback.
        let out = run_fixture(
            jdk,
            &dir,
            &[common::agentpath_arg("X=0x100").as_os_str()],
            "Threads",
            &[],
        );
        common::assert_success(
            &out,
            &format!("Threads with a panicking callback on {}", jdk.label),
        );
        let stdout = common::stdout_text(&out);
        assert!(
            stdout.contains("worker-3 result=899997"),
            "{}: the program's results changed:\n{stdout}",
            jdk.label
        );
        let stderr = common::stderr_text(&out);
        assert!(
            stderr.contains("HPROF ERROR: internal error: deliberate panic"),
            "{}:\n{stderr}",
            jdk.label
        );
        assert!(
            stderr.contains("ThreadStart"),
            "{}: the callback is not named:\n{stderr}",
            jdk.label
        );
        // The file is still complete: header, main thread (from VM init), exit dump.
        assert_complete_ascii_with_main(&ascii_file(&dir));
    });
}

#[test]
fn an_out_of_memory_error_still_leaves_a_complete_file() {
    common::on_each(&common::jdks(), |jdk| {
        for format in ["a", "b"] {
            let dir = common::scratch_dir(&format!("oom-{format}-{}", jdk.label));
            let options = format!("format={format}");
            let out = run_fixture(
                jdk,
                &dir,
                &[
                    "-Xmx32m".as_ref(),
                    common::agentpath_arg(&options).as_os_str(),
                ],
                "OutOfMemory",
                &[],
            );
            common::assert_exit_code(&out, 1, &format!("OutOfMemory {options} on {}", jdk.label));
            assert!(common::stderr_text(&out).contains("java.lang.OutOfMemoryError"));
            if format == "a" {
                assert_complete_ascii_with_main(&ascii_file(&dir));
            } else {
                let file = parse_binary(&dir.join("java.hprof"));
                assert!(
                    file.records
                        .iter()
                        .any(|r| matches!(r.body, RecordBody::HeapDumpEnd)),
                    "{}: the exit dump is complete",
                    jdk.label
                );
                assert_print_accepts(&dir.join("java.hprof"), &jdk.label);
            }
        }
    });
}
