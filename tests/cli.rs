//! The `hprof-rs` tool: `run` starts a JVM command with the agent, `print`
//! decodes what the agent wrote and rejects malformed files with the offset.

mod common;

use common::{AsciiProfile, Spawned};
use hprof_rs::format::ascii::Section;
use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

fn hprof_rs() -> Command {
    let mut cmd = Command::new(common::hprof_rs_bin());
    cmd.env("HPROF_RS_AGENT", common::agent_lib());
    cmd
}

#[test]
fn run_profiles_a_java_command_and_passes_its_exit_code_on() {
    common::on_each(&common::jdks(), |jdk| {
        let dir = common::scratch_dir(&format!("cli-run-{}", jdk.label));
        let classes = common::fixtures_classpath();
        let mut cmd = hprof_rs();
        cmd.current_dir(&dir)
            .env_remove("JAVA_TOOL_OPTIONS")
            .args(["run", "format=b", "--"]);
        cmd.arg(&jdk.java).arg("-cp").arg(&classes).arg("ExitCode");
        let out = common::run(&mut cmd);
        common::assert_exit_code(&out, 3, &format!("hprof-rs run on {}", jdk.label));
        let printed = common::run(hprof_rs().arg("print").arg(dir.join("java.hprof")));
        common::assert_success(&printed, "hprof-rs print of the run's file");
        let text = common::stdout_text(&printed);
        assert!(text.starts_with("JAVA PROFILE 1.0."), "{text}");
        assert!(
            text.contains("START THREAD serial=200001"),
            "{}: no main thread:\n{text}",
            jdk.label
        );
    });
}

/// The processes whose parent is `parent` and that have not exited (a
/// zombie has), from /proc.
fn running_children(parent: i32) -> Vec<i32> {
    fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| {
            // `pid (comm) state ppid ...`: comm may hold spaces and parentheses.
            let stat = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let fields: Vec<&str> = stat
                .rsplit_once(')')
                .map_or(Vec::new(), |(_, rest)| rest.split_whitespace().collect());
            fields.len() > 1 && fields[0] != "Z" && fields[1] == parent.to_string()
        })
        .collect()
}

/// Whether process `pid` is still running (neither gone nor a zombie).
fn is_running(pid: i32) -> bool {
    fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| Some(stat.rsplit_once(')')?.1.split_whitespace().next()? != "Z"))
        .unwrap_or(false)
}

/// Starts `cmd` with TERM, INT, HUP and QUIT at their default action. A
/// shell starts a background job with INT and QUIT ignored, and `hprof-rs
/// run` rightly leaves a signal it was started ignoring ignored (so does
/// the JVM): this test, run in the background, would test nothing else.
fn with_stop_signals_caught(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: signal(2) is async-signal-safe, the one call made between
    // fork and exec; it touches no memory of the parent.
    unsafe {
        cmd.pre_exec(|| {
            for signal in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP, libc::SIGQUIT] {
                libc::signal(signal, libc::SIG_DFL);
            }
            Ok(())
        });
    }
}

/// Waits until the file at `path` holds `text`.
fn wait_for_text(path: &Path, text: &str, what: &str) {
    common::wait_until(
        Duration::from_secs(30),
        || format!("{what}: no {text:?} in {}", path.display()),
        || fs::read_to_string(path).unwrap_or_default().contains(text),
    );
}

#[test]
fn run_passes_stop_signals_on_to_the_jvm_and_exits_with_its_status() {
    common::on_each(&common::jdks(), |jdk| {
        // The JVM ends on TERM, INT and HUP through its shutdown hooks with
        // 128 + the signal's number (143, 130, 129); QUIT makes the agent
        // append a dump and the program goes on.
        for (signal, code) in [
            (libc::SIGTERM, 143),
            (libc::SIGINT, 130),
            (libc::SIGHUP, 129),
        ] {
            let what = format!("{} signal {signal}", jdk.label);
            let dir = common::scratch_dir(&format!("cli-run-signal-{signal}-{}", jdk.label));
            let mut cmd = hprof_rs();
            with_stop_signals_caught(&mut cmd);
            cmd.current_dir(&dir)
                .env_remove("JAVA_TOOL_OPTIONS")
                .args(["run", "heap=sites", "--"]);
            cmd.arg(&jdk.java)
                .arg("-cp")
                .arg(common::fixtures_classpath())
                .args(["Sleeper", "60"]);
            let mut wrapper = Spawned::spawn(&mut cmd);
            wrapper.wait_for_line("READY", Duration::from_secs(60));
            let jvms = running_children(wrapper.pid());
            assert_eq!(jvms.len(), 1, "{what}: the wrapper's children: {jvms:?}");
            let profile = dir.join("java.hprof.txt");
            if signal == libc::SIGTERM {
                wrapper.signal(libc::SIGQUIT);
                wait_for_text(&profile, "SITES END", &format!("{what}: SIGQUIT dump"));
            }
            wrapper.signal(signal);
            let out = wrapper.wait_timeout(Duration::from_secs(60));
            let left_running = is_running(jvms[0]);
            if left_running {
                // SAFETY: kill(2) on the JVM this test started, still running.
                unsafe { libc::kill(jvms[0], libc::SIGKILL) };
            }
            assert!(!left_running, "{what}: the JVM outlived the wrapper");
            common::assert_exit_code(&out, code, &what);
            // The agent wrote its whole file at VM death: it parses and ends
            // with the exit's SITES table and its SITES TOTALS (after the
            // SIGQUIT ones for TERM).
            let sites =
                AsciiProfile::read_whole_file(&profile).count(|s| matches!(s, Section::Sites(_)));
            let expected = if signal == libc::SIGTERM { 2 } else { 1 };
            assert_eq!(sites, expected, "{what}: SITES tables");
            let text = fs::read_to_string(&profile).unwrap();
            assert!(text.ends_with("SITES TOTALS END\n"), "{what}: {text}");
        }
    });
}

#[test]
fn run_without_the_command_after_dashes_says_where_it_goes() {
    let hint = "tip: put the command after --, e.g. hprof-rs run cpu=samples -- java -jar app.jar";
    for args in [
        &["run", "cpu=samples", "java", "-jar", "app.jar"][..],
        &["run", "cpu=samples"],
        &["run"],
    ] {
        let out = common::run(hprof_rs().args(args));
        common::assert_exit_code(&out, 2, &format!("hprof-rs {args:?}"));
        let stderr = common::stderr_text(&out);
        assert!(stderr.contains(hint), "{args:?}: {stderr}");
        assert!(
            stderr.contains("Usage: hprof-rs run ")
                && stderr.contains("AGENT_OPTIONS")
                && stderr.contains(" -- <COMMAND>..."),
            "{args:?}: {stderr}"
        );
        assert!(
            !stderr.contains("[OPTIONS] [OPTIONS]"),
            "{args:?}: {stderr}"
        );
    }
    // Help is not a mistake: no tip, exit 0.
    let out = common::run(hprof_rs().args(["run", "--help"]));
    common::assert_success(&out, "hprof-rs run --help");
    assert!(!common::stdout_text(&out).contains("tip:"));
    assert!(common::stdout_text(&out).contains("[AGENT_OPTIONS]"));
}

/// The allocated int[64] of AllocGrowth in a profile: 20000 x (100 + its
/// argument) / 100.
fn grown_arrays(path: &Path) -> u64 {
    let profile = AsciiProfile::read_whole_file(path);
    profile
        .sites_of_class_via("int[]", "AllocGrowth.makeArray")
        .iter()
        .map(|row| row.allocated_objects)
        .sum()
}

#[test]
fn several_jvms_under_one_run_write_a_file_each_and_say_so() {
    let jdk = common::jdk_preferring(21);
    let dir = common::scratch_dir("cli-run-several-jvms");
    // The last run's file: overwritten by the first JVM, as with force=y.
    let stale = dir.join("java.hprof.txt");
    fs::write(&stale, "the last run's profile\n").unwrap();
    let an_hour_ago = std::time::SystemTime::now() - Duration::from_secs(3600);
    fs::File::options()
        .write(true)
        .open(&stale)
        .and_then(|f| f.set_modified(an_hour_ago))
        .unwrap();
    // A launcher that starts two JVMs one after the other, each of them
    // with the run's options and so the same file name.
    let java = |argument: &str| {
        format!(
            "'{}' -Xshare:auto -cp '{}' AllocGrowth {argument}",
            jdk.java.display(),
            common::fixtures_classpath().display()
        )
    };
    let mut cmd = hprof_rs();
    common::clean_java_env(&mut cmd);
    cmd.current_dir(&dir).args([
        "run",
        "heap=sites,cutoff=0",
        "--",
        "sh",
        "-c",
        &format!("{} && {}", java("0"), java("30")),
    ]);
    let out = common::run(&mut cmd);
    common::assert_success(&out, "hprof-rs run of two JVMs");
    let stderr = common::stderr_text(&out);
    let said: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("HPROF: another JVM of this hprof-rs run writes java.hprof.txt"))
        .collect();
    assert_eq!(said.len(), 1, "the second JVM says so once:\n{stderr}");
    let pid: u32 = said[0]
        .split("(pid ")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .and_then(|pid| pid.parse().ok())
        .unwrap_or_else(|| panic!("no pid in {:?}", said[0]));
    let own = format!("java.hprof.{pid}.txt");
    assert!(
        said[0].ends_with(&format!("this one (pid {pid}) writes {own}")),
        "{}",
        said[0]
    );
    // Each JVM's whole profile in its own file: 20,000 arrays, then 26,000.
    assert_eq!(grown_arrays(&stale), 20_000, "the first JVM's file");
    assert_eq!(
        grown_arrays(&dir.join(&own)),
        26_000,
        "the second JVM's file"
    );
}

#[test]
fn run_leaves_a_signal_ignored_at_its_start_ignored_for_the_command() {
    // Started with SIGHUP ignored, as under nohup; the command is a plain
    // `sleep` (no JVM needed).
    let script = format!(
        "trap '' HUP; exec '{}' run -- sh -c 'echo READY; exec sleep 60'",
        common::hprof_rs_bin().display()
    );
    let mut cmd = Command::new("sh");
    cmd.args(["-c", &script])
        .env("HPROF_RS_AGENT", common::agent_lib())
        .env_remove("JAVA_TOOL_OPTIONS");
    let mut wrapper = Spawned::spawn(&mut cmd);
    wrapper.wait_for_line("READY", Duration::from_secs(30));
    // HUP comes first (lower signals are delivered first): had it been
    // caught and passed on, the command would have died of it (129).
    wrapper.signal(libc::SIGHUP);
    wrapper.signal(libc::SIGTERM);
    let out = wrapper.wait_timeout(Duration::from_secs(30));
    common::assert_exit_code(&out, 143, "HUP ignored, then TERM");
}

#[test]
fn print_reports_the_byte_offset_of_malformed_input() {
    let jdk = common::jdks().into_iter().next().expect("at least one JDK");
    let dir = common::scratch_dir("cli-print-malformed");
    let mut cmd = common::java_command(&jdk, &dir);
    cmd.arg(common::agentpath_arg("format=b")).arg("Hello");
    common::assert_success(&common::run(&mut cmd), "format=b run");
    let good = fs::read(dir.join("java.hprof")).unwrap();

    // Cut the file in the middle of its third record: the error names that record's offset.
    let header_len = 19 + 4 + 8;
    let first_len =
        u32::from_be_bytes(good[header_len + 5..header_len + 9].try_into().unwrap()) as usize;
    let second = header_len + 9 + first_len;
    let second_len = u32::from_be_bytes(good[second + 5..second + 9].try_into().unwrap()) as usize;
    let third = second + 9 + second_len;
    let cut = dir.join("cut.hprof");
    fs::write(&cut, &good[..third + 12]).unwrap();
    let out = common::run(hprof_rs().arg("print").arg(&cut));
    common::assert_exit_code(&out, 2, "print of a truncated binary file");
    let stderr = common::stderr_text(&out);
    assert!(
        stderr.contains(&format!("malformed at byte offset {third}")),
        "{stderr}"
    );

    // An ASCII file whose header has no end line.
    let text = dir.join("bad.txt");
    fs::write(
        &text,
        "JAVA PROFILE 1.0.1, created Sun Nov 22 00:45:31 2026\n\nno separator\n",
    )
    .unwrap();
    let out = common::run(hprof_rs().arg("print").arg(&text));
    common::assert_exit_code(&out, 2, "print of a malformed ASCII file");
    assert!(
        common::stderr_text(&out).contains("malformed at byte offset"),
        "{}",
        common::describe(&out)
    );

    // A SITES block cut short.
    let good_text = "JAVA PROFILE 1.0.1, created Sun Nov 22 00:45:31 2026\n\nprelude\n--------\n\n";
    let sites =
        format!("{good_text}SITES BEGIN (ordered by live bytes) Sun Nov 22 00:45:31 2026\n");
    fs::write(&text, &sites).unwrap();
    let out = common::run(hprof_rs().arg("print").arg(&text));
    common::assert_exit_code(&out, 2, "print of an unterminated SITES block");
}

#[test]
fn print_rejects_empty_and_headerless_files() {
    let dir = common::scratch_dir("cli-print-headerless");
    let header = "JAVA PROFILE 1.0.1, created Sun Nov 22 00:45:31 2026\n\nprelude\n--------\n\n";
    let thread_end = "THREAD END (id = 200001)\n";
    let cases = [
        ("empty.txt", String::new(), "empty file"),
        ("blank.txt", "\n\n".to_owned(), "does not start with"),
        (
            "headerless.txt",
            thread_end.to_owned(),
            "does not start with",
        ),
        (
            "late-header.txt",
            format!("{thread_end}{header}"),
            "does not start with",
        ),
    ];
    for (name, text, reason) in cases {
        let path = dir.join(name);
        fs::write(&path, &text).unwrap();
        let out = common::run(hprof_rs().arg("print").arg(&path));
        common::assert_exit_code(&out, 2, &format!("print of {name}"));
        let stderr = common::stderr_text(&out);
        assert!(
            stderr.contains("malformed at byte offset 0: ") && stderr.contains(reason),
            "{name}: {stderr}"
        );
        assert!(common::stdout_text(&out).is_empty(), "{name}");
    }

    // The same lines behind the header make a valid profile.
    let path = dir.join("valid.txt");
    fs::write(&path, format!("{header}{thread_end}")).unwrap();
    let out = common::run(hprof_rs().arg("print").arg(&path));
    common::assert_success(&out, "print of a valid ASCII profile");
    let stdout = common::stdout_text(&out);
    assert!(
        stdout.contains("valid ASCII profile, 2 sections: 1 HEADER, 1 THREAD END"),
        "{stdout}"
    );
}
