//! Tests of the test harness itself (no agent): the JDK matrix runs the Java
//! fixtures with the expected output and exit codes, and the process helpers
//! (line waiting, signals, timeouts) work.

mod common;

use common::*;
use hprof_rs::format::ascii::{CpuTitle, Section};
use std::collections::BTreeMap;
use std::time::Duration;

fn matrix() -> Vec<Jdk> {
    let jdks = jdks();
    assert!(
        !jdks.is_empty(),
        "no JDK found: install Debian's openjdk-17 or run scripts/setup.sh"
    );
    jdks
}

/// The first JDK of the matrix (11 when the cache is installed).
fn any_jdk() -> Jdk {
    matrix().remove(0)
}

#[test]
fn matrix_has_every_required_jdk() {
    let jdks = matrix();
    let labels: Vec<&str> = jdks.iter().map(|j| j.label.as_str()).collect();
    eprintln!("JDK matrix: {labels:?}");
    if let Some(required) = required_jdks() {
        for major in required {
            assert!(
                jdks.iter().any(|j| j.major == major),
                "JDK {major} missing from {labels:?}"
            );
        }
    }
}

#[test]
fn java_version_matches_the_folder_major() {
    on_each(&matrix(), |jdk| {
        let reported = java_major_version(jdk);
        assert_eq!(
            reported,
            jdk.major,
            "{} ({}) reports major {reported}",
            jdk.label,
            jdk.java.display()
        );
        assert!(
            jdk.home().join("lib").is_dir(),
            "{}: no lib/ in its home",
            jdk.label
        );
    });
}

/// Runs fixture `class` on `jdk` and asserts its exit code.
fn run_fixture(jdk: &Jdk, class: &str, exit_code: i32) -> std::process::Output {
    let dir = scratch_dir(&format!("harness-{class}-{}", jdk.label));
    let out = run(java_command(jdk, &dir).arg(class));
    assert_exit_code(&out, exit_code, &format!("{}: {class}", jdk.label));
    out
}

#[test]
fn hello_prints_on_every_jdk() {
    on_each(&matrix(), |jdk| {
        let label = &jdk.label;
        let out = run_fixture(jdk, "Hello", 0);
        assert_eq!(
            stdout_text(&out),
            "Hello, hprof\n",
            "{label}\n{}",
            describe(&out)
        );
    });
}

#[test]
fn exit_code_is_3_on_every_jdk() {
    on_each(&matrix(), |jdk| {
        let label = &jdk.label;
        let out = run_fixture(jdk, "ExitCode", 3);
        assert_eq!(
            stdout_text(&out),
            "exiting with 3\n",
            "{label}\n{}",
            describe(&out)
        );
    });
}

#[test]
fn uncaught_exception_exits_1_on_every_jdk() {
    on_each(&matrix(), |jdk| {
        let label = &jdk.label;
        let out = run_fixture(jdk, "Uncaught", 1);
        let stderr = stderr_text(&out);
        assert!(
            stderr.contains("java.lang.IllegalStateException: boom")
                && stderr.contains("at Uncaught.main(Uncaught.java:"),
            "{label}: no stack trace with line numbers\n{}",
            describe(&out)
        );
    });
}

#[test]
fn java_command_clears_java_options_from_the_environment() {
    let dir = scratch_dir("harness-clean-env");
    let jdk = any_jdk();
    let mut cmd = java_command(&jdk, &dir);
    // java_command removed these; a test that wants them sets them again.
    let removed: Vec<String> = cmd
        .get_envs()
        .filter(|(_, value)| value.is_none())
        .map(|(key, _)| key.to_string_lossy().into_owned())
        .collect();
    for var in [
        "JAVA_TOOL_OPTIONS",
        "_JAVA_OPTIONS",
        "JDK_JAVA_OPTIONS",
        "_JAVA_HPROF_OPTIONS",
    ] {
        assert!(
            removed.iter().any(|r| r == var),
            "{var} not cleared: {removed:?}"
        );
    }
    cmd.env("JAVA_TOOL_OPTIONS", "-Dharness.probe=1")
        .arg("Hello");
    let out = run(&mut cmd);
    assert_success(&out, "Hello with JAVA_TOOL_OPTIONS");
    assert!(
        stderr_text(&out).contains("Picked up JAVA_TOOL_OPTIONS"),
        "{}",
        describe(&out)
    );
}

#[test]
fn threads_and_busy_fixtures_are_deterministic() {
    let dir = scratch_dir("harness-threads-busy");
    let jdk = any_jdk();
    let out = run(java_command(&jdk, &dir).arg("Threads"));
    assert_success(&out, "Threads");
    assert_eq!(
        stdout_text(&out),
        "worker-1 result=299995\nworker-2 result=599994\nworker-3 result=899997\n",
        "{}",
        describe(&out)
    );
    let out = run(java_command(&jdk, &dir).args(["Busy", "200"]));
    assert_success(&out, "Busy 200");
    let stdout = stdout_text(&out);
    let mut lines = stdout.lines();
    assert_eq!(
        lines.next(),
        Some("checksum=7084100374204060903"),
        "{}",
        describe(&out)
    );
    let calls: u64 = lines
        .next()
        .and_then(|l| l.strip_prefix("calls="))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no calls=<n> line\n{}", describe(&out)));
    assert!(calls > 0);
}

#[test]
fn sleeper_prints_ready_then_done() {
    let dir = scratch_dir("harness-sleeper-done");
    let jdk = any_jdk();
    let mut java = Spawned::spawn(java_command(&jdk, &dir).args(["Sleeper", "1"]));
    java.wait_for_line("READY", Duration::from_secs(60));
    let out = java.wait_timeout(Duration::from_secs(60));
    assert_success(&out, "Sleeper 1");
    assert_eq!(stdout_text(&out), "READY\nDONE\n", "{}", describe(&out));
}

#[test]
fn sigterm_stops_the_sleeper_with_143() {
    let dir = scratch_dir("harness-sleeper-sigterm");
    let jdk = any_jdk();
    let mut java = Spawned::spawn(java_command(&jdk, &dir).args(["Sleeper", "60"]));
    java.wait_for_line("READY", Duration::from_secs(60));
    java.signal(libc::SIGTERM);
    let out = java.wait_timeout(Duration::from_secs(30));
    // The JVM runs its shutdown hooks and exits with 128 + SIGTERM.
    assert_exit_code(&out, 143, "Sleeper after SIGTERM");
    assert!(!stdout_text(&out).contains("DONE"), "{}", describe(&out));
}

#[test]
fn sigquit_prints_a_thread_dump_and_the_sleeper_goes_on() {
    let dir = scratch_dir("harness-sleeper-sigquit");
    let jdk = any_jdk();
    let mut java = Spawned::spawn(java_command(&jdk, &dir).args(["Sleeper", "2"]));
    java.wait_for_line("READY", Duration::from_secs(60));
    java.signal(libc::SIGQUIT);
    let out = java.wait_timeout(Duration::from_secs(60));
    assert_success(&out, "Sleeper after SIGQUIT");
    assert!(
        stdout_text(&out).contains("Sleeper.main"),
        "{}",
        describe(&out)
    );
    assert!(stdout_text(&out).ends_with("DONE\n"), "{}", describe(&out));
}

#[test]
#[should_panic(expected = "timed out after")]
fn a_hung_jvm_fails_instead_of_hanging() {
    let dir = scratch_dir("harness-timeout");
    let jdk = any_jdk();
    run_timeout(
        java_command(&jdk, &dir).args(["Sleeper", "60"]),
        Duration::from_secs(3),
    );
}

#[test]
fn scratch_dir_is_fresh_and_empty() {
    let dir = scratch_dir("harness-scratch");
    std::fs::write(dir.join("leftover"), b"x").unwrap();
    let again = scratch_dir("harness-scratch");
    assert_eq!(dir, again);
    assert_eq!(std::fs::read_dir(&again).unwrap().count(), 0);
}

#[test]
fn fixtures_are_compiled_for_java_11() {
    let classes = fixtures_classpath();
    for name in [
        "Hello", "ExitCode", "Uncaught", "Sleeper", "Threads", "Busy",
    ] {
        let class = classes.join(format!("{name}.class"));
        let bytes = std::fs::read(&class).unwrap_or_else(|e| panic!("{}: {e}", class.display()));
        assert_eq!(&bytes[..4], &[0xCA, 0xFE, 0xBA, 0xBE], "{name}.class magic");
        let major = u16::from_be_bytes([bytes[6], bytes[7]]);
        assert_eq!(
            major, 55,
            "{name}.class is not Java 11 (class file major 55)"
        );
    }
}

#[test]
fn independent_readers_run() {
    if let Some(slurp) = slurp_binary() {
        let out = run(std::process::Command::new(slurp).arg("--version"));
        assert_success(&out, "hprof-slurp --version");
        assert!(
            stdout_text(&out).starts_with("hprof-slurp "),
            "{}",
            describe(&out)
        );
    }
    if let Some(collapse) = stackcollapse_hprof() {
        let out = run(std::process::Command::new(collapse).arg("--help"));
        assert_success(&out, "stackcollapse-hprof --help");
        assert!(stdout_text(&out).contains("FILE"), "{}", describe(&out));
    }
}

// ---------------------------------------------------------------------------
// The parsed-ASCII-profile helper (common::profile)
// ---------------------------------------------------------------------------

/// Two threads, two traces, one SITES block and two CPU SAMPLES dumps.
const PROFILE: &str = "\
THREAD START (obj=50000001, id = 200001, name=\"main\", group=\"main\")
THREAD START (obj=50000002, id = 200002, name=\"worker-0\", group=\"main\")
TRACE 300001:
\tHot.spin(Hot.java:10)
\tHot.main(Hot.java:20)
TRACE 300002:
\t<empty>
SITES BEGIN (ordered by live bytes) Sat Mar 27 10:51:58 2021
          percent          live          alloc'ed  stack class
 rank   self  accum     bytes objs     bytes  objs trace name
    1 75.00% 75.00%        48    2        72     3 300001 Item
SITES END
CPU SAMPLES BEGIN (total = 7) Sat Mar 27 10:51:58 2021
rank   self  accum   count trace method
   1 71.43% 71.43%       5 300001 Hot.spin
   2 28.57% 100.00%       2 300002 <empty trace>
CPU SAMPLES END
CPU SAMPLES BEGIN (total = 3) Sat Mar 27 10:51:59 2021
rank   self  accum   count trace method
   1 100.00% 100.00%       3 300001 Hot.spin
CPU SAMPLES END
";

#[test]
fn ascii_profile_indexes_traces_threads_sites_and_cpu_blocks() {
    let profile = AsciiProfile::parse(PROFILE.as_bytes(), "the sample profile");
    assert_eq!(profile.frames(300001), ["Hot.spin", "Hot.main"]);
    assert!(profile.frames(300002).is_empty());
    assert_eq!(profile.traces().count(), 2);
    assert_eq!(
        profile.threads(),
        BTreeMap::from([(200001, "main".into()), (200002, "worker-0".into())])
    );
    let row = &profile.site_rows()[0];
    assert_eq!(
        (row.live_objects, row.allocated_objects, row.trace_serial),
        (2, 3, 300001)
    );
    assert_eq!(profile.cpu_blocks().count(), 2);
    let first = profile.first_cpu(CpuTitle::Samples).unwrap();
    assert_eq!((first.total, cpu_count_in(first, "Hot.spin")), (7, 5));
    assert_eq!(profile.last_cpu().unwrap().total, 3);
    assert!(profile.first_cpu(CpuTitle::TimeMs).is_none());
    assert!(profile.old_prof_rows().is_empty());
    assert_eq!(profile.count(|s| matches!(s, Section::Sites(_))), 1);
}

#[test]
#[should_panic(expected = "TRACE 300009 was not printed")]
fn ascii_profile_names_a_missing_trace() {
    AsciiProfile::parse(PROFILE.as_bytes(), "the sample profile").frames(300009);
}

#[test]
#[should_panic(expected = "the broken profile is malformed")]
fn ascii_profile_names_a_malformed_file() {
    AsciiProfile::parse(b"TRACE 30000x:\n", "the broken profile");
}
