//! `hprof-rs attach PID OPTIONS` and `hprof-rs attach PID stop` on real
//! JVMs (JDK 11, 17, 21, 25): the agent loaded into a running fixture
//! (java-fixtures/AttachTarget.java), stopped a few seconds later, writes a
//! whole profile with the fixture's hot method first and its allocated
//! class in SITES, while the program prints and exits as it does alone;
//! heap=dump attached writes a dump that hprof-slurp and VisualVM's heap
//! library read; cpu=times and cpu=old attached count exactly the calls
//! made while they ran (java-fixtures/AttachTimed.java) and leave no class
//! rewritten; a JVM in its own pid and mount namespace (unshare) is
//! attached by its host pid; the errors leave the target running.
//! cpu=samples attached samples the threads that were running before the
//! attach where their CPU went, as from the start
//! (java-fixtures/PoolService.java).

mod common;

use common::{AsciiProfile, Jdk, Spawned, attach, namespaces};
use hprof_rs::format::ascii::{CpuTitle, Section};
use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

const HOT: &str = "AttachTarget.hot";
const ITEM: &str = "AttachTarget$Item";
/// PoolService's work, which its pool's threads do.
const FIB: &str = "PoolService.fib";
/// How long AttachTarget runs: enough for two attach-stop rounds and an
/// attach it outlives.
const TARGET_SECONDS: &str = "11";
/// How long each attached profile runs.
const PROFILED: Duration = Duration::from_millis(2500);
const READY_WAIT: Duration = Duration::from_secs(60);
const EXIT_WAIT: Duration = Duration::from_secs(120);

/// Attaches with `options`, which must succeed.
fn attach_ok(dir: &Path, pid: i32, options: &str, what: &str) {
    let out = attach(dir, pid, options);
    common::assert_success(&out, &format!("{what}: attach {options}"));
}

/// Attaches with `options`, which must fail with exit code 1 and a message
/// holding `says`.
fn attach_refused(dir: &Path, pid: i32, options: &str, says: &str, what: &str) {
    let out = attach(dir, pid, options);
    common::assert_exit_code(&out, 1, &format!("{what}: attach {options}"));
    let stderr = common::stderr_text(&out);
    assert!(
        stderr.starts_with("hprof-rs: ") && stderr.contains(says) && stderr.lines().count() == 1,
        "{what}: attach {options} should say {says:?} in one line\n{}",
        common::describe(&out)
    );
}

/// The names of the agent's threads in process `pid` (the kernel's 15
/// characters of each).
fn agent_threads(pid: i32) -> Vec<String> {
    let tasks = fs::read_dir(format!("/proc/{pid}/task")).expect("the JVM's threads");
    tasks
        .flatten()
        .filter_map(|task| fs::read_to_string(task.path().join("comm")).ok())
        .map(|name| name.trim_end().to_owned())
        .filter(|name| name.starts_with("HPROF") || name.starts_with("hprof-rs"))
        .collect()
}

/// AttachTarget started on `jdk` in `dir`, once it printed READY.
fn start_target(jdk: &Jdk, dir: &Path, seconds: &str) -> Spawned {
    let mut cmd = common::java_command(jdk, dir);
    cmd.arg("AttachTarget").arg(seconds);
    let mut target = Spawned::spawn(&mut cmd);
    target.wait_for_line("READY", READY_WAIT);
    target
}

/// AttachTarget's output alone (0 seconds: one round, the same values).
fn output_alone(jdk: &Jdk, dir: &Path) -> String {
    let mut cmd = common::java_command(jdk, dir);
    cmd.arg("AttachTarget").arg("0");
    let out = common::run(&mut cmd);
    common::assert_exit_code(&out, 42, "AttachTarget without the agent");
    common::stdout_text(&out)
}

/// The program printed and exited as it does without the agent.
fn assert_unchanged(out: &Output, alone: &str, what: &str) {
    common::assert_exit_code(out, 42, what);
    assert_eq!(common::stdout_text(out), alone, "{what}: stdout changed");
}

/// A whole ASCII profile of cpu=samples: the hot method ranks first, its
/// trace is in the file, and so is the THREAD START of the thread it ran on.
fn assert_hot_first(path: &Path, what: &str) {
    let profile = AsciiProfile::read_whole_file(path);
    let cpu = profile
        .first_cpu(CpuTitle::Samples)
        .unwrap_or_else(|| panic!("{what}: no CPU SAMPLES in {}", path.display()));
    assert!(cpu.total > 0, "{what}: no samples");
    let first = &cpu.rows[0];
    assert_eq!(first.method.as_deref(), Some(HOT), "{what}: {cpu:?}");
    assert_eq!(profile.frames(first.trace_serial)[0], HOT, "{what}");
    assert!(
        profile.threads().values().any(|name| name == "main"),
        "{what}: no THREAD START of main: {:?}",
        profile.threads()
    );
}

/// A whole ASCII profile of heap=sites: the allocated class has a row
/// whose trace goes through `allocate`.
fn assert_items_allocated(path: &Path, what: &str) {
    let profile = AsciiProfile::read_whole_file(path);
    let rows = profile.sites_of_class_via(ITEM, "AttachTarget.allocate");
    assert!(
        rows.iter().any(|r| r.allocated_objects > 0),
        "{what}: no {ITEM} site in {}: {:?}",
        path.display(),
        profile.site_rows()
    );
}

#[test]
fn cpu_samples_then_heap_sites_attached_and_stopped_leave_the_program_unchanged() {
    common::on_each(&common::jdks_of(&[11, 17, 21, 25]), |jdk| {
        let what = format!("attach on {}", jdk.label);
        let dir = common::scratch_dir(&format!("attach-{}", jdk.label));
        let alone = output_alone(jdk, &dir);
        let target = start_target(jdk, &dir, TARGET_SECONDS);
        let pid = target.pid();

        attach_ok(&dir, pid, "cpu=samples,file=cpu.txt", &what);
        attach_refused(&dir, pid, "heap=sites", "already running", &what);
        let running = agent_threads(pid);
        assert!(
            running.iter().any(|n| n.starts_with("HPROF cpu")),
            "{what}: no sampler thread while attached: {running:?}"
        );
        std::thread::sleep(PROFILED);
        attach_ok(&dir, pid, "stop", &what);
        assert_eq!(
            agent_threads(pid),
            Vec::<String>::new(),
            "{what}: after stop"
        );
        attach_refused(&dir, pid, "stop", "nothing to stop", &what);

        // A second profile in the same JVM, relative file name.
        attach_ok(&dir, pid, "heap=sites,file=sites.txt", &what);
        std::thread::sleep(PROFILED);
        attach_ok(&dir, pid, "stop", &what);
        // A third, never stopped: written when the program exits.
        attach_ok(
            &dir,
            pid,
            "cpu=samples,heap=sites,file=to-the-end.txt",
            &what,
        );

        let out = target.wait_timeout(EXIT_WAIT);
        assert_unchanged(&out, &alone, &what);
        assert_hot_first(&dir.join("cpu.txt"), &what);
        assert_items_allocated(&dir.join("sites.txt"), &what);
        assert_items_allocated(&dir.join("to-the-end.txt"), &what);
    });
}

/// What AttachTimed is told, in order, and where a profile is attached
/// (`Attach(options)`) or stopped: 300 calls of `AttachTarget.hot` in the first
/// cpu=times profile, made inside a `serve` frame entered then and left in
/// the second one, which gets 200 + 1 + 100 calls (the one from `fail()`,
/// which ends by an exception caught in a frame running since before the
/// attach); 40 under cpu=old. (`cutoff=0`: one call can take no tick of the
/// Tracker's clock on a loaded machine, and its row none of the total.) `probe`
/// reads the byte code offset of a call in `probe()`: before, while
/// attached, after the first stop and after the last one.
enum Step {
    Send(&'static str, &'static str),
    Attach(&'static str),
    Stop,
}

const TIMED_SESSION: &[Step] = &[
    Step::Send("probe", "probe="),
    Step::Attach("cpu=times,timing=calls,cutoff=0,file=times-1.txt"),
    Step::Send("probe", "probe="),
    Step::Send("enter", "entered"),
    Step::Send("work 300", "worked 300"),
    Step::Stop,
    Step::Send("probe", "probe="),
    Step::Attach("cpu=times,timing=calls,cutoff=0,file=times-2.txt"),
    Step::Send("work 200", "worked 200"),
    Step::Send("leave", "left"),
    Step::Send("fail", "failed"),
    Step::Send("work 100", "worked 100"),
    Step::Stop,
    Step::Attach("cpu=old,file=old.txt"),
    Step::Send("work 40", "worked 40"),
    Step::Stop,
    Step::Send("probe", "probe="),
    Step::Send("exit", ""),
];

/// AttachTimed run through TIMED_SESSION, attached to (`attached`) or not:
/// its output and the probe offsets it printed.
fn timed_session(jdk: &Jdk, dir: &Path, attached: bool) -> (Output, Vec<u32>) {
    let mut cmd = common::java_command(jdk, dir);
    cmd.arg("AttachTimed").stdin(std::process::Stdio::piped());
    let mut target = Spawned::spawn(&mut cmd);
    target.wait_for_line("READY", READY_WAIT);
    let pid = target.pid();
    let mut probes = Vec::new();
    for step in TIMED_SESSION {
        match step {
            Step::Send(command, answer) => {
                target.send_line(command);
                if !answer.is_empty() {
                    let line = target.wait_for_line_starting(answer, READY_WAIT);
                    if let Some(offset) = line.strip_prefix("probe=") {
                        probes.push(offset.parse().expect("a byte code offset"));
                    }
                }
            }
            Step::Attach(options) if attached => attach_ok(dir, pid, options, "AttachTimed"),
            Step::Stop if attached => attach_ok(dir, pid, "stop", "AttachTimed"),
            _ => {}
        }
    }
    (target.wait_timeout(EXIT_WAIT), probes)
}

/// The calls of `method` in the CPU TIME block of `path`, all traces
/// together; the block's first row must be `method`'s.
fn calls_ranked_first(path: &Path, method: &str, what: &str) -> u64 {
    let profile = AsciiProfile::read_whole_file(path);
    let cpu = profile
        .first_cpu(CpuTitle::TimeMs)
        .unwrap_or_else(|| panic!("{what}: no CPU TIME in {}", path.display()));
    assert_eq!(
        cpu.rows[0].method.as_deref(),
        Some(method),
        "{what}: {}: {cpu:?}",
        path.display()
    );
    let of = |name: &str| {
        cpu.rows
            .iter()
            .filter(|r| r.method.as_deref() == Some(name))
            .map(|r| r.count)
            .sum::<u64>()
    };
    assert_eq!(
        of("AttachTimed.serve"),
        0,
        "{what}: serve() never ends within a profile that saw it begin"
    );
    of(method)
}

#[test]
fn cpu_times_attached_counts_the_calls_made_meanwhile_and_gives_the_classes_back() {
    common::on_each(&common::jdks_of(&[11, 17, 21, 25]), |jdk| {
        let what = format!("cpu=times attached on {}", jdk.label);
        let dir = common::scratch_dir(&format!("attach-times-{}", jdk.label));
        let (alone, alone_probes) = timed_session(jdk, &dir, false);
        common::assert_exit_code(&alone, 42, &format!("{what}: without the agent"));
        let (out, probes) = timed_session(jdk, &dir, true);
        common::assert_exit_code(&out, 42, &what);

        // The second probe ran while AttachTimed was rewritten: an injected
        // call comes first. Before the attach, after a stop and after the
        // last one, probe() runs its own byte code.
        let original = alone_probes[0];
        assert!(alone_probes.iter().all(|&p| p == original), "{what}");
        assert!(probes[1] > original, "{what}: not rewritten: {probes:?}");
        assert_eq!(
            [probes[0], probes[2], probes[3]],
            [original; 3],
            "{what}: a class still rewritten after a stop"
        );
        // Everything else the program printed is what it prints alone.
        let stdout = common::stdout_text(&out).replace(
            &format!("probe={}\n", probes[1]),
            &format!("probe={original}\n"),
        );
        assert_eq!(
            stdout,
            common::stdout_text(&alone),
            "{what}: stdout changed"
        );

        // Exactly the calls made while each profile ran.
        let calls = |file: &str| calls_ranked_first(&dir.join(file), HOT, &what);
        assert_eq!(calls("times-1.txt"), 300, "{what}: first profile");
        assert_eq!(calls("times-2.txt"), 301, "{what}: second profile");
        let old = AsciiProfile::read(&dir.join("old.txt"));
        let hot_from_run = old.old_prof_rows().into_iter().find(|r| {
            r.callee.as_deref() == Some("AttachTarget.hot()J")
                && r.caller.as_deref() == Some("AttachTimed.run(I)V")
        });
        assert_eq!(
            hot_from_run.map(|r| r.count),
            Some(40),
            "{what}: cpu=old: {:?}",
            old.old_prof_rows()
        );

        // Each attach retransformed the loaded classes and each stop gave
        // them back, with no error.
        let stderr = common::stderr_text(&out);
        assert!(!stderr.contains("HPROF ERROR"), "{what}: {stderr}");
        let said = |start: &str| stderr.lines().filter(|l| l.starts_with(start)).count();
        assert_eq!(said("HPROF: cpu=times attached: "), 3, "{what}: {stderr}");
        assert_eq!(said("HPROF: cpu=times stopped: "), 3, "{what}: {stderr}");
    });
}

#[test]
fn heap_dump_attached_is_written_at_once_and_read_by_slurp_and_visualvm() {
    common::on_each(&common::jdks_of(&[11, 17, 21, 25]), |jdk| {
        let what = format!("heap=dump attached on {}", jdk.label);
        let dir = common::scratch_dir(&format!("attach-dump-{}", jdk.label));
        let mut cmd = common::java_command(jdk, &dir);
        cmd.arg("HeapGraph").arg("30");
        let mut target = Spawned::spawn(&mut cmd);
        target.wait_for_line("READY", READY_WAIT);
        attach_ok(
            &dir,
            target.pid(),
            "heap=dump,format=b,file=dump.hprof",
            &what,
        );
        // The profile ended with its dump: nothing left to stop.
        attach_refused(&dir, target.pid(), "stop", "nothing to stop", &what);
        let path = dir.join("dump.hprof");
        let slurp = common::slurp_binary();
        assert!(
            slurp.is_some() || !common::strict(),
            "{what}: no hprof-slurp"
        );
        if let Some(slurp) = slurp {
            let out = common::run(Command::new(slurp).arg(&path));
            common::assert_success(&out, &format!("{what}: hprof-slurp"));
            let summary = common::stdout_text(&out);
            assert!(
                summary.contains("HeapGraph$Leaf"),
                "{what}: hprof-slurp does not list HeapGraph$Leaf:\n{summary}"
            );
        }
        let read = common::visualvm::visualvm_check(&path, &what);
        assert!(
            read || !common::strict(),
            "{what}: no VisualVM heap library"
        );
        target.signal(libc::SIGTERM);
        let _ = target.wait_timeout(EXIT_WAIT);
    });
}

#[test]
fn monitor_and_lock_contention_attached_are_counted_from_the_attach_on() {
    common::on_each(&common::jdks_of(&[11, 17, 21, 25]), |jdk| {
        let what = format!("monitor=y attached on {}", jdk.label);
        let dir = common::scratch_dir(&format!("attach-monitor-{}", jdk.label));
        let mut cmd = common::java_command(jdk, &dir);
        cmd.arg("Contention").arg("300");
        let mut target = Spawned::spawn(&mut cmd);
        target.wait_for_line("READY", READY_WAIT);
        attach_ok(&dir, target.pid(), "monitor=y,file=monitor.txt", &what);
        std::thread::sleep(Duration::from_millis(1500));
        attach_ok(&dir, target.pid(), "stop", &what);
        let out = target.wait_timeout(EXIT_WAIT);
        common::assert_success(&out, &what);
        assert_eq!(
            common::printed::<u64>(&common::stdout_text(&out), "entries"),
            1200
        );
        let profile = AsciiProfile::read_whole_file(&dir.join("monitor.txt"));
        let contended = profile.sections.iter().any(|s| match s {
            Section::MonitorTime { rows, .. } => rows
                .iter()
                .any(|r| r.monitor == "Contention" && r.count > 0),
            _ => false,
        });
        assert!(contended, "{what}: no MONITOR TIME row of Contention");

        // java.util.concurrent: LockSupport rewritten at each attach and
        // restored at each stop; a second profile counts as the first.
        let mut cmd = common::java_command(jdk, &dir);
        cmd.arg("LockContention").arg("long").arg("300");
        let mut target = Spawned::spawn(&mut cmd);
        target.wait_for_line("READY", READY_WAIT);
        for file in ["locks-1.txt", "locks-2.txt"] {
            attach_ok(&dir, target.pid(), &format!("monitor=y,file={file}"), &what);
            std::thread::sleep(Duration::from_millis(1200));
            attach_ok(&dir, target.pid(), "stop", &what);
        }
        let out = target.wait_timeout(EXIT_WAIT);
        common::assert_success(&out, &what);
        assert_eq!(
            common::printed::<u64>(&common::stdout_text(&out), "acquisitions"),
            1200
        );
        for file in ["locks-1.txt", "locks-2.txt"] {
            let profile = AsciiProfile::read_whole_file(&dir.join(file));
            let timed = profile.sections.iter().any(|s| match s {
                Section::LockTime { rows, .. } => rows.iter().any(|r| {
                    r.monitor == "java.util.concurrent.locks.ReentrantLock" && r.count > 0
                }),
                _ => false,
            });
            assert!(timed, "{what}: no LOCK TIME row of ReentrantLock in {file}");
        }
    });
}

#[test]
fn root_attaches_to_another_users_jvm_as_that_user() {
    if !is_root() {
        eprintln!("skipped: needs root");
        return;
    }
    if !Path::new("/usr/bin/setpriv").exists() {
        assert!(!common::strict(), "needs setpriv (util-linux)");
        eprintln!("skipped: needs setpriv");
        return;
    }
    let jdk = common::jdk_preferring(21);
    let what = format!("root attaching to nobody's JVM on {}", jdk.label);
    let dir = common::scratch_dir("attach-other-user");
    // The JVM (nobody) writes the file into this directory.
    fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o777)).expect("chmod");
    let java = common::java_command(&jdk, &dir);
    let mut cmd = Command::new("/usr/bin/setpriv");
    cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(&jdk.java)
        .args(java.get_args())
        .args(["AttachTarget", "5"])
        .current_dir(&dir);
    common::clean_java_env(&mut cmd);
    let mut target = Spawned::spawn(&mut cmd);
    target.wait_for_line("READY", READY_WAIT);
    attach_ok(&dir, target.pid(), "cpu=samples,file=nobody.txt", &what);
    std::thread::sleep(Duration::from_millis(1500));
    attach_ok(&dir, target.pid(), "stop", &what);
    let out = target.wait_timeout(EXIT_WAIT);
    common::assert_exit_code(&out, 42, &what);
    let path = dir.join("nobody.txt");
    let owner = std::os::unix::fs::MetadataExt::uid(&fs::metadata(&path).expect("the profile"));
    assert_eq!(owner, 65534, "{what}: the JVM's user writes the file");
    assert_hot_first(&path, &what);
}

#[test]
fn a_jvm_in_its_own_pid_and_mount_namespace_is_attached_by_its_host_pid() {
    if !is_root() {
        eprintln!("skipped: unshare --pid --mount needs root");
        return;
    }
    if !namespaces::can_unshare() {
        assert!(
            !common::strict(),
            "unshare --pid --mount fails (util-linux?)"
        );
        eprintln!("skipped: unshare --pid --mount fails");
        return;
    }
    common::on_each(&common::jdks_of(&[11, 17, 21, 25]), |jdk| {
        let what = format!("attach into a namespace on {}", jdk.label);
        let dir = common::scratch_dir(&format!("attach-ns-{}", jdk.label));
        let alone = output_alone(jdk, &dir);
        // Its own /tmp: the attach socket is only in there.
        let java = common::java_command(jdk, &dir);
        let mut script = namespaces::own_tmp_keeping_the_checkout();
        script.push_str(&format!(" && cd '{}' && exec", dir.display()));
        script.push_str(&format!(" '{}'", jdk.java.display()));
        for arg in java.get_args() {
            script.push_str(&format!(" '{}'", arg.to_string_lossy()));
        }
        script.push_str(&format!(" AttachTarget {TARGET_SECONDS}"));
        let mut cmd = Command::new("unshare");
        cmd.args([
            "--fork",
            "--pid",
            "--mount",
            "--mount-proc",
            "sh",
            "-c",
            &script,
        ])
        .current_dir(&dir)
        .stdin(std::process::Stdio::null());
        common::clean_java_env(&mut cmd);
        let mut target = Spawned::spawn(&mut cmd);
        target.wait_for_line("READY", READY_WAIT);
        let pid = namespaces::forked_child(target.pid());
        let status = fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        assert!(
            status
                .lines()
                .any(|l| l.starts_with("NSpid:") && l.ends_with("\t1")),
            "{what}: the JVM should be pid 1 of its namespace:\n{status}"
        );

        // Into the scratch directory, which the JVM sees as we do. (A finer
        // sampling interval than the 512k default: at 512k a loaded machine
        // took six samples in the profiled time, too few to be sure that
        // one lands on the Items, which are 80% of the bytes.)
        attach_ok(
            &dir,
            pid,
            "cpu=samples,heap=sites,alloc_interval=16k,file=both.txt",
            &what,
        );
        std::thread::sleep(PROFILED);
        attach_ok(&dir, pid, "stop", &what);
        // Into our /tmp, which the JVM does not see: handed over at the stop.
        let host_tmp = tempdir_in_tmp(&what);
        let handed = host_tmp.join("handed.txt");
        attach_ok(
            &dir,
            pid,
            &format!("cpu=samples,file={}", handed.display()),
            &what,
        );
        std::thread::sleep(PROFILED);
        attach_ok(&dir, pid, "stop", &what);

        let out = target.wait_timeout(EXIT_WAIT);
        assert_unchanged(&out, &alone, &what);
        assert_hot_first(&dir.join("both.txt"), &what);
        assert_items_allocated(&dir.join("both.txt"), &what);
        assert_hot_first(&handed, &what);
        let _ = fs::remove_dir_all(&host_tmp);
    });
}

/// A fresh directory under the host's /tmp.
fn tempdir_in_tmp(what: &str) -> PathBuf {
    let dir = PathBuf::from(format!("/tmp/hprof-rs-attach-test-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir(&dir).unwrap_or_else(|e| panic!("{what}: {}: {e}", dir.display()));
    dir
}

#[test]
fn refusals_exit_1_and_leave_the_target_running() {
    let jdk = common::jdk_preferring(21);
    let what = format!("attach refusals on {}", jdk.label);
    let dir = common::scratch_dir("attach-refusals");

    // Not a JVM: never signalled (SIGQUIT would end it).
    let mut sleeper = Command::new("sleep");
    sleeper.arg("60");
    let sleeper = Spawned::spawn(&mut sleeper);
    attach_refused(
        &dir,
        sleeper.pid(),
        "cpu=samples",
        "not a Java virtual machine",
        &what,
    );
    assert!(
        Path::new(&format!("/proc/{}", sleeper.pid())).exists(),
        "{what}: the process that is not a JVM was ended"
    );
    attach_refused(&dir, 0x3fff_fff0, "cpu=samples", "no process", &what);

    // A JVM that refuses attaching: nothing sent to it (no thread dump).
    let mut cmd = common::java_command(&jdk, &dir);
    cmd.arg("-XX:+DisableAttachMechanism")
        .arg("Sleeper")
        .arg("30");
    let mut closed = Spawned::spawn(&mut cmd);
    closed.wait_for_line("READY", READY_WAIT);
    attach_refused(
        &dir,
        closed.pid(),
        "cpu=samples",
        "DisableAttachMechanism",
        &what,
    );
    let (out, _) = closed.output_so_far();
    assert!(
        !out.contains("Full thread dump"),
        "{what}: SIGQUIT was sent:\n{out}"
    );
    closed.signal(libc::SIGTERM);
    drop(closed);

    // JDK 21 and later: a JVM that refuses agents loaded while it runs.
    if jdk.major >= 21 {
        let mut cmd = common::java_command(&jdk, &dir);
        cmd.arg("-XX:-EnableDynamicAgentLoading")
            .arg("Sleeper")
            .arg("30");
        let mut no_agents = Spawned::spawn(&mut cmd);
        no_agents.wait_for_line("READY", READY_WAIT);
        let says = "Dynamic agent loading is not enabled";
        attach_refused(&dir, no_agents.pid(), "cpu=samples", says, &what);
        no_agents.signal(libc::SIGTERM);
        drop(no_agents);
    }

    // A JVM started with the agent profiles to its end.
    let mut cmd = common::java_command(&jdk, &dir);
    cmd.arg(common::agentpath_arg("cpu=samples,file=from-start.txt"))
        .arg("Sleeper")
        .arg("30");
    let mut from_start = Spawned::spawn(&mut cmd);
    from_start.wait_for_line("READY", READY_WAIT);
    attach_refused(
        &dir,
        from_start.pid(),
        "heap=sites",
        "already running",
        &what,
    );
    attach_refused(&dir, from_start.pid(), "stop", "nothing to stop", &what);
    from_start.signal(libc::SIGTERM);
    drop(from_start);

    // Options the live phase cannot have, stop with nothing running, a
    // bad option: the JVM runs on and prints what it prints alone.
    let alone = output_alone(&jdk, &dir);
    let target = start_target(&jdk, &dir, "6");
    let pid = target.pid();
    attach_refused(&dir, pid, "stop", "nothing to stop", &what);
    attach_refused(&dir, pid, "depth=banana", "refused the options", &what);
    // Another user's JVM (we are root: run the tool as nobody).
    if is_root() && Path::new("/usr/bin/setpriv").exists() {
        let mut cmd = Command::new("/usr/bin/setpriv");
        cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(common::hprof_rs_bin())
            .args(["attach", &pid.to_string(), "cpu=samples"])
            .current_dir("/");
        let out = common::run(&mut cmd);
        common::assert_exit_code(&out, 1, &format!("{what}: attach as nobody"));
        let stderr = common::stderr_text(&out);
        assert!(
            stderr.contains("attach as its user or as root"),
            "{what}: {stderr}"
        );
    }
    assert!(
        !dir.join("java.hprof.txt").exists(),
        "{what}: a refused attach left a file"
    );
    // After the refusals, which unload the library again on JDK 16 and
    // later, an attach works.
    attach_ok(&dir, pid, "cpu=samples,file=after.txt", &what);
    std::thread::sleep(Duration::from_millis(1500));
    attach_ok(&dir, pid, "stop", &what);
    let out = target.wait_timeout(EXIT_WAIT);
    assert_unchanged(&out, &alone, &what);
    assert_hot_first(&dir.join("after.txt"), &what);
}

/// An attach the agent refuses says why in the agent's own words: the
/// `HPROF ERROR:` line it prints on the JVM's standard error (a mistyped
/// mode, a file it cannot create) comes back over the attach connection
/// and `attach` prints it, in one line, exit status 1; the JVM runs on.
#[test]
fn a_refused_attach_prints_the_agents_own_error_line() {
    common::on_each(&common::jdks_of(&[11, 17, 21, 25]), |jdk| {
        let what = format!("refused attach on {}", jdk.label);
        let dir = common::scratch_dir(&format!("attach-agent-line-{}", jdk.label));
        let mut cmd = common::java_command(jdk, &dir);
        cmd.arg("Sleeper").arg("30");
        let mut target = Spawned::spawn(&mut cmd);
        target.wait_for_line("READY", READY_WAIT);
        let missing = dir.join("no-such-directory/out.txt");
        let cases = [
            ("cpu=sample".to_owned(), "cpu option value must be"),
            (
                format!("cpu=samples,file={}", missing.display()),
                "can't create profile file",
            ),
        ];
        for (options, says) in &cases {
            let out = attach(&dir, target.pid(), options);
            common::assert_exit_code(&out, 1, &format!("{what}: attach {options}"));
            let jvm_line = || {
                let (_, stderr) = target.output_so_far();
                stderr
                    .lines()
                    .find(|l| l.starts_with("HPROF ERROR: ") && l.contains(says))
                    .map(str::to_owned)
            };
            common::wait_until(
                Duration::from_secs(10),
                || format!("{what}: the JVM printed no HPROF ERROR line with {says:?}"),
                || jvm_line().is_some(),
            );
            let line = jvm_line().expect("waited for");
            let stderr = common::stderr_text(&out);
            assert!(
                stderr.starts_with("hprof-rs: ")
                    && stderr.lines().count() == 1
                    && stderr.trim_end().ends_with(&line),
                "{what}: attach {options} should end its one line with the agent's {line:?}\n{}",
                common::describe(&out)
            );
        }
        assert!(
            Path::new(&format!("/proc/{}", target.pid())).exists(),
            "{what}: the JVM ended"
        );
        target.signal(libc::SIGTERM);
    });
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// `net=` attached: the profile goes to `hprof-rs listen`, which can ask for
/// a section mid-run (`hprof-rs send cpu`); the stop writes the last dump
/// down the socket and closes it, which ends `listen --once`; the program
/// prints and exits as alone. One JDK: the socket and its protocol do not
/// depend on it (tests/net_protocol.rs runs them from start on every JDK).
#[test]
fn net_attached_sends_the_profile_to_the_listener_until_the_stop() {
    common::on_each(&common::jdks_of(&[21]), |jdk| {
        let what = format!("attach net= on {}", jdk.label);
        let dir = common::scratch_dir(&format!("attach-net-{}", jdk.label));
        let alone = output_alone(jdk, &dir);
        let held = [
            std::net::TcpListener::bind("127.0.0.1:0").expect("a free port"),
            std::net::TcpListener::bind("127.0.0.1:0").expect("a free port"),
        ];
        let [port, control] = held.map(|l| l.local_addr().unwrap().port());
        let received = dir.join("received.txt");
        let mut listen = Command::new(common::hprof_rs_bin());
        listen
            .args(["listen", "--once", "--port", &port.to_string()])
            .args(["--control-port", &control.to_string(), "-o"])
            .arg(&received)
            .stdin(std::process::Stdio::null());
        let mut front = Spawned::spawn(&mut listen);
        front.wait_for_line(
            &format!("hprof-rs: listening on 127.0.0.1:{port}"),
            READY_WAIT,
        );
        let target = start_target(jdk, &dir, TARGET_SECONDS);
        let pid = target.pid();

        attach_ok(
            &dir,
            pid,
            &format!("cpu=samples,net=127.0.0.1:{port}"),
            &what,
        );
        front.wait_for_line(
            &format!("hprof-rs: JVM 1 connected, writing {}", received.display()),
            READY_WAIT,
        );
        std::thread::sleep(PROFILED);
        let mut send = Command::new(common::hprof_rs_bin());
        send.args(["send", "--port", &control.to_string(), "cpu"]);
        common::assert_success(&common::run(&mut send), &format!("{what}: send cpu"));
        std::thread::sleep(PROFILED);
        attach_ok(&dir, pid, "stop", &what);
        common::assert_success(&front.wait_timeout(EXIT_WAIT), &format!("{what}: listen"));
        assert_eq!(
            agent_threads(pid),
            Vec::<String>::new(),
            "{what}: after stop"
        );

        let out = target.wait_timeout(EXIT_WAIT);
        assert_unchanged(&out, &alone, &what);
        // The section sent mid-run, then the stop's: both rank the hot
        // method first, the second with more samples.
        let profile = AsciiProfile::read_whole_file(&received);
        let totals: Vec<u64> = profile
            .sections
            .iter()
            .filter_map(|s| match s {
                Section::Cpu(cpu) if cpu.title == CpuTitle::Samples => {
                    assert_eq!(cpu.rows[0].method.as_deref(), Some(HOT), "{what}: {cpu:?}");
                    Some(cpu.total)
                }
                _ => None,
            })
            .collect();
        assert_eq!(totals.len(), 2, "{what}: CPU SAMPLES sections {totals:?}");
        assert!(0 < totals[0] && totals[0] < totals[1], "{what}: {totals:?}");
    });
}

/// heap=sites attached to a service whose pool threads were all made before
/// the attach (java-fixtures/OrderService.java: two threads take turns making
/// 10,000 `OrderService$Order` per task): alone, with `alloc_interval=64k`
/// and together with cpu=samples, each stopped after a few seconds, on JDK
/// 11, 17, 21 and 25. SITES has the orders' row through `take()`, and the
/// sampled estimates agree with each other: about 10,000 orders per
/// `Order[]` batch (between 5,000 and 20,000). `cutoff=0`: SITES cuts at
/// the first row under the cutoff share of the *live* bytes, and an `Order[]`
/// batch is live at the stop only when the sampled one is the last kept, so
/// under the default cutoff its row showed or not from run to run.
#[test]
fn heap_sites_attached_to_a_running_pool_has_its_rows() {
    const ORDER: &str = "OrderService$Order";
    const BATCH: &str = "OrderService$Order[]";
    common::on_each(&common::jdks_of(&[11, 17, 21, 25]), |jdk| {
        let dir = common::scratch_dir(&format!("attach-pool-sites-{}", jdk.label));
        let mut cmd = common::java_command(jdk, &dir);
        cmd.arg("OrderService").arg("14");
        let mut target = Spawned::spawn(&mut cmd);
        target.wait_for_line("READY", READY_WAIT);
        let pid = target.pid();
        let runs = [
            ("heap=sites,cutoff=0", "sites.txt"),
            ("heap=sites,cutoff=0,alloc_interval=64k", "sites-64k.txt"),
            ("heap=sites,cutoff=0,cpu=samples", "sites-cpu.txt"),
        ];
        for (options, file) in runs {
            let what = format!("{options} attached on {}", jdk.label);
            attach_ok(&dir, pid, &format!("{options},file={file}"), &what);
            std::thread::sleep(PROFILED);
            attach_ok(&dir, pid, "stop", &what);
        }
        let out = target.wait_timeout(EXIT_WAIT);
        common::assert_success(&out, &format!("OrderService on {}", jdk.label));
        assert!(
            common::stdout_text(&out).ends_with("orders=479604\n"),
            "{}: OrderService's output changed\n{}",
            jdk.label,
            common::describe(&out)
        );
        for (options, file) in runs {
            let what = format!("{options} attached on {}", jdk.label);
            let profile = AsciiProfile::read_whole_file(&dir.join(file));
            let objects = |class: &str| -> u64 {
                profile
                    .sites_of_class_via(class, "OrderService.take")
                    .iter()
                    .map(|r| r.allocated_objects)
                    .sum()
            };
            let (orders, batches) = (objects(ORDER), objects(BATCH));
            assert!(
                orders > 0 && batches > 0,
                "{what}: no rows of the orders: {:?}",
                profile.site_rows()
            );
            let per_batch = orders / batches;
            assert!(
                (5_000..=20_000).contains(&per_batch),
                "{what}: {orders} orders in {batches} batches"
            );
        }
    });
}

/// How long PoolService runs, how long its attached profile lasts, and
/// how long it runs when profiled from the start.
const POOL_SECONDS: &str = "8";
const POOL_PROFILED: Duration = Duration::from_secs(4);
const POOL_FROM_START_SECONDS: &str = "4";

/// What one cpu=samples profile of PoolService (`thread=y`) shows.
struct PoolProfile {
    total: u64,
    /// Samples whose top frame is `<no Java frames>`.
    no_java_frames: u64,
    /// Samples whose top frame is any pseudo-frame (`<no Java frames>`,
    /// `<not walkable: Java>`, `<GC>`...): CPU the profile could not
    /// attribute to Java code.
    unattributed: u64,
    /// Samples of the pool's threads, and of those in fib().
    pool: u64,
    pool_in_fib: u64,
    /// Samples with a `park` method in their trace (`LockSupport.park`,
    /// `Unsafe.park`).
    park: u64,
    /// The method most samples were in (at the top of their traces, all
    /// traces together: per thread and line, fib()'s samples are spread
    /// over many traces).
    first: Option<String>,
}

impl PoolProfile {
    fn read(path: &Path, what: &str) -> PoolProfile {
        let profile = AsciiProfile::read_whole_file(path);
        let cpu = profile
            .first_cpu(CpuTitle::Samples)
            .unwrap_or_else(|| panic!("{what}: no CPU SAMPLES in {}", path.display()));
        assert!(cpu.total > 0, "{what}: no samples in {}", path.display());
        let names = profile.threads();
        let mut read = PoolProfile {
            first: None,
            total: cpu.total,
            no_java_frames: 0,
            unattributed: 0,
            pool: 0,
            pool_in_fib: 0,
            park: 0,
        };
        let mut by_method: HashMap<&str, u64> = HashMap::new();
        for row in &cpu.rows {
            if let Some(method) = row.method.as_deref() {
                *by_method.entry(method).or_default() += row.count;
            }
            let frames = profile.frames(row.trace_serial);
            if frames.first().is_some_and(|f| f.starts_with('<')) {
                read.unattributed += row.count;
            }
            if frames
                .first()
                .is_some_and(|f| f.starts_with("<no Java frames>"))
            {
                read.no_java_frames += row.count;
            }
            if frames.iter().any(|f| f.ends_with(".park")) {
                read.park += row.count;
            }
            let owner = profile.trace(row.trace_serial).thread_serial;
            if owner
                .and_then(|serial| names.get(&serial))
                .is_some_and(|name| name.starts_with("pool-worker-"))
            {
                read.pool += row.count;
                if frames.first().is_some_and(|f| f == FIB) {
                    read.pool_in_fib += row.count;
                }
            }
        }
        read.first = by_method
            .into_iter()
            .max_by_key(|&(method, count)| (count, method))
            .map(|(method, _)| method.to_owned());
        read
    }

    fn percent(&self, samples: u64) -> f64 {
        100.0 * samples as f64 / self.total as f64
    }
}

/// PoolService's two pool threads start before the attach, so they never
/// pass ThreadStart; they alternate between computing fib() and parking.
/// Attached, their samples are taken where their CPU went, as from the
/// start: the share of samples under `<no Java frames>` is within 5 points
/// of a run profiled from the start (it was 24-48 points above on JDK 11
/// to 25 when those threads were polled from the sampler thread), park()
/// has samples (it had none), fib() ranks first, and the pool threads
/// carry most of the samples, in fib(). (The share under any pseudo-frame
/// is printed, not asserted: most of it is `<not walkable: Java>` in the
/// pool's threads, as from the start, and it moves with the machine's load
/// by more than 5 points from one run to the next.)
#[test]
fn cpu_samples_attached_samples_the_threads_running_before_the_attach_as_from_the_start() {
    common::on_each(&common::jdks_of(&[11, 17, 21, 25]), |jdk| {
        let what = format!("pool attached on {}", jdk.label);
        let dir = common::scratch_dir(&format!("attach-pool-{}", jdk.label));
        // (Every 5 ms: twice the samples, for shares to compare.)
        let options = "cpu=samples,interval=5,thread=y,cutoff=0";

        let mut cmd = common::java_command(jdk, &dir);
        cmd.arg("PoolService").arg(POOL_SECONDS);
        let mut target = Spawned::spawn(&mut cmd);
        target.wait_for_line("READY", READY_WAIT);
        let pid = target.pid();
        attach_ok(&dir, pid, &format!("{options},file=attached.txt"), &what);
        std::thread::sleep(POOL_PROFILED);
        attach_ok(&dir, pid, "stop", &what);
        common::assert_success(&target.wait_timeout(EXIT_WAIT), &what);

        let mut cmd = common::java_command(jdk, &dir);
        cmd.arg(common::agentpath_arg(&format!("{options},file=start.txt")))
            .arg("PoolService")
            .arg(POOL_FROM_START_SECONDS);
        common::assert_success(&common::run(&mut cmd), &format!("{what}: from the start"));

        let attached = PoolProfile::read(&dir.join("attached.txt"), &what);
        let start = PoolProfile::read(&dir.join("start.txt"), &what);
        eprintln!(
            "{what}: of {} samples attached and {} from the start, <no Java frames> \
             {:.1}% and {:.1}%, any pseudo-frame {:.1}% and {:.1}%, park() {:.1}% and {:.1}%; \
             pool threads {} ({} in fib) and {} ({} in fib)",
            attached.total,
            start.total,
            attached.percent(attached.no_java_frames),
            start.percent(start.no_java_frames),
            attached.percent(attached.unattributed),
            start.percent(start.unattributed),
            attached.percent(attached.park),
            start.percent(start.park),
            attached.pool,
            attached.pool_in_fib,
            start.pool,
            start.pool_in_fib,
        );
        assert!(
            (attached.percent(attached.no_java_frames) - start.percent(start.no_java_frames)).abs()
                <= 5.0,
            "{what}: {:.1}% under <no Java frames> attached, {:.1}% from the start",
            attached.percent(attached.no_java_frames),
            start.percent(start.no_java_frames)
        );
        for (profile, how) in [(&attached, "attached"), (&start, "from the start")] {
            assert_eq!(profile.first.as_deref(), Some(FIB), "{what}: {how}");
            // The pool's threads park between requests, which costs CPU
            // (8-20% of the samples from the start).
            assert!(
                profile.percent(profile.park) >= 1.0,
                "{what}: {how}: {} of {} samples in park()",
                profile.park,
                profile.total
            );
            assert!(
                2 * profile.pool > profile.total && 2 * profile.pool_in_fib > profile.pool,
                "{what}: {how}: {} of {} samples in the pool's threads, {} of them in fib()",
                profile.pool,
                profile.total,
                profile.pool_in_fib
            );
        }
    });
}
