//! cpu=wall on real JVMs: every thread sampled by the clock, whatever it
//! does, with its state; each state's share of a thread's samples is the
//! share of its time it spent so.

mod common;

use common::{AsciiProfile, Spawned};
use hprof_rs::format::ascii::{CpuTitle, Section};
use hprof_rs::format::settings::RunSettings;
use hprof_rs::format::wall_states::{STATES, WallStateRow};
use std::collections::HashSet;
use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// The shares WallStates measured of its worker's life, in STATES' order.
fn measured_shares(stdout: &str) -> [f64; 5] {
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("WallStates shares:"))
        .unwrap_or_else(|| panic!("no shares line in {stdout:?}"));
    let mut shares = [f64::NAN; 5];
    for word in line.split_whitespace() {
        let (name, value) = word.split_once('=').expect("name=value");
        let column = STATES.iter().position(|s| *s == name).expect("a state");
        shares[column] = value.parse().expect("a number");
    }
    assert!(shares.iter().all(|s| s.is_finite()), "{line}");
    shares
}

/// The worker thread's samples by state, from the last WALL STATES block
/// (traces carry their thread with thread=y).
fn worker_samples(profile: &AsciiProfile) -> [u64; 5] {
    let threads = profile.threads();
    let worker = threads
        .iter()
        .find(|(_, name)| name.as_str() == "wall-worker")
        .map(|(serial, _)| *serial)
        .unwrap_or_else(|| panic!("no THREAD START for wall-worker in {}", profile.what));
    let traces: HashSet<u32> = profile
        .traces()
        .filter(|t| t.thread_serial == Some(worker))
        .map(|t| t.serial)
        .collect();
    let rows: &Vec<WallStateRow> = profile
        .sections
        .iter()
        .rev()
        .find_map(|s| match s {
            Section::WallStates(rows) => Some(rows),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no WALL STATES block in {}", profile.what));
    let mut samples = [0u64; 5];
    for row in rows.iter().filter(|r| traces.contains(&r.trace_serial)) {
        for (sum, count) in samples.iter_mut().zip(row.counts) {
            *sum += count;
        }
    }
    samples
}

/// Each state's share of the worker's samples is within 3 points of the
/// share of its time the worker measured in it.
fn assert_shares_match(label: &str, samples: [u64; 5], measured: [f64; 5]) {
    let total: u64 = samples.iter().sum();
    assert!(total >= 1000, "{label}: only {total} samples of the worker");
    let shares: Vec<String> = samples
        .iter()
        .map(|&n| format!("{:.1}", 100.0 * n as f64 / total as f64))
        .collect();
    println!("{label}: sampled {shares:?} of {total}, measured {measured:?}");
    for (column, name) in STATES.iter().enumerate() {
        let share = 100.0 * samples[column] as f64 / total as f64;
        assert!(
            (share - measured[column]).abs() <= 3.0,
            "{label}: {name} is {share:.1}% of the worker's {total} samples, measured \
             {:.1}% (samples {samples:?}, measured {measured:?})",
            measured[column]
        );
    }
}

/// The worker's samples and the shares it measured, from the profile at
/// `path` and the program's standard output.
fn check_profile(label: &str, path: &Path, stdout: &str) {
    let text = fs::read_to_string(path).expect("the profile");
    assert!(
        RunSettings::find_in(&text).is_some_and(|s| s.is_wall_clock()),
        "{label}: the settings line says wall_clock=1"
    );
    let profile = AsciiProfile::read_whole_file(path);
    let section = profile
        .last_cpu()
        .unwrap_or_else(|| panic!("{label}: no CPU SAMPLES block"));
    assert_eq!(section.title, CpuTitle::Samples);
    assert!(section.is_wall_clock(), "{label}: {}", section.created);
    let rows_total: u64 = section.rows.iter().map(|r| r.count).sum();
    assert_eq!(
        rows_total, section.total,
        "{label}: cutoff=0 lists every trace"
    );
    assert_shares_match(label, worker_samples(&profile), measured_shares(stdout));
    assert_idle_jvm_threads_are_not_running(label, &profile);
}

/// A thread JVMTI calls runnable that has no Java frame and uses no CPU
/// waits inside the JVM (JDK 17 and later's Notification Thread, all of
/// its life): it is counted as waiting. Its first look, which has no
/// earlier CPU clock to compare with, counts as running, and so do the
/// looks after the rare moments it works (2 to 5 samples of about 2,070
/// in the runs so far, against all 2,070 before): at most 3 and 1% of
/// its samples.
fn assert_idle_jvm_threads_are_not_running(label: &str, profile: &AsciiProfile) {
    let frameless: HashSet<u32> = profile
        .traces()
        .filter(|t| {
            t.frames
                .first()
                .is_some_and(|f| f.class_name == "<no Java frames>")
        })
        .map(|t| t.serial)
        .collect();
    let Some(rows) = profile.sections.iter().rev().find_map(|s| match s {
        Section::WallStates(rows) => Some(rows),
        _ => None,
    }) else {
        panic!("{label}: no WALL STATES block");
    };
    let column = |name: &str| STATES.iter().position(|s| *s == name).expect("a state");
    let (running, waiting) = (column("running"), column("waiting"));
    for row in rows.iter().filter(|r| frameless.contains(&r.trace_serial)) {
        let total: u64 = row.counts.iter().sum();
        let running = row.counts[running];
        assert!(
            running <= 3 + total / 100 && (total < 100 || row.counts[waiting] * 10 >= total * 9),
            "{label}: TRACE {} (no Java frames) counts {running} running of {total} samples: {:?}",
            row.trace_serial,
            row.counts
        );
    }
}

/// The options the tests profile with: 2 ms ticks give the worker about
/// 2,000 samples in its 4 s.
const OPTIONS: &str = "cpu=wall,thread=y,interval=2,cutoff=0";

/// Held by each test while its JVMs run: the shares are checked with one
/// JVM at a time. On 2 cores shared by three JVMs the sampler thread waits
/// for a core, its ticks come late and the running share came out up to
/// 4 points low (the running thread's stack walk is what delays it).
static ONE_JVM_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_jvm_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_JVM_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[test]
fn each_states_share_of_a_threads_samples_is_the_share_of_its_time() {
    let _alone = one_jvm_at_a_time();
    common::on_each(&common::jdks(), |jdk| {
        let label = &jdk.label;
        let dir = common::scratch_dir(&format!("cpu-wall-{label}"));
        let mut cmd = common::java_command(jdk, &dir);
        cmd.arg(common::agentpath_arg(OPTIONS))
            .args(["WallStates", "40"]);
        let out = common::run(&mut cmd);
        common::assert_success(&out, &format!("WallStates on {label}"));
        let stdout = common::stdout_text(&out);
        check_profile(label, &dir.join("java.hprof.txt"), &stdout);
    });
}

/// The same, with the profile attached to the running JVM before the
/// worker starts (`hprof-rs attach PID cpu=wall,...`); the exit dump is
/// written when the program ends.
#[test]
fn attached_each_states_share_is_the_share_of_its_time() {
    let _alone = one_jvm_at_a_time();
    common::on_each(&common::jdks_of(&[11, 17, 21, 25]), |jdk| {
        let label = &format!("{} attached", jdk.label);
        let dir = common::scratch_dir(&format!("cpu-wall-attached-{}", jdk.label));
        let mut cmd = common::java_command(jdk, &dir);
        cmd.args(["WallStates", "40", "go"])
            .stdin(std::process::Stdio::piped());
        let mut target = Spawned::spawn(&mut cmd);
        target.wait_for_line("READY", Duration::from_secs(60));
        let options = format!("{OPTIONS},file=wall.txt");
        let attached = common::attach(&dir, target.pid(), &options);
        common::assert_success(&attached, &format!("{label}: attach"));
        target.send_line("go");
        let out = target.wait_timeout(Duration::from_secs(120));
        common::assert_success(&out, label);
        check_profile(label, &dir.join("wall.txt"), &common::stdout_text(&out));
    });
}

/// `hprof-rs` with `args`, its output.
fn tool(args: &[&str]) -> std::process::Output {
    common::run(Command::new(common::hprof_rs_bin()).args(args))
}

/// `go tool pprof ARGS FILE`'s standard output.
fn go_pprof(args: &[&str], file: &Path) -> String {
    let out = common::run(
        Command::new("go")
            .args(["tool", "pprof"])
            .args(args)
            .arg(file),
    );
    common::assert_success(&out, &format!("go tool pprof {args:?}"));
    common::stdout_text(&out)
}

/// The tools read the states: top's table by state, folded stacks with the
/// state as their leaf, pprof's `state` label and wall nanoseconds, from
/// ASCII and binary files; and a diff gate on the time blocked in a method
/// fails when the fixture holds its monitor twice as long.
#[test]
fn the_tools_show_the_states_and_gate_on_them() {
    let _alone = one_jvm_at_a_time();
    let jdk = common::jdk_preferring(17);
    let dir = common::scratch_dir("cpu-wall-tools");
    let profile = |file: &str, blocked_ms: &str| -> std::path::PathBuf {
        let mut cmd = common::java_command(&jdk, &dir);
        cmd.arg(common::agentpath_arg(&format!("{OPTIONS},{file}")))
            .args(["WallStates", "20", "now", blocked_ms]);
        common::assert_success(&common::run(&mut cmd), file);
        dir.join(file.rsplit('=').next().expect("file=NAME"))
    };
    let base = profile("file=base.txt", "20");
    let new = profile("file=new.txt", "40");
    let binary = profile("format=b,file=wall.hprof", "20");
    let path = |p: &Path| p.to_str().expect("UTF-8 path").to_owned();

    for file in [&base, &binary] {
        let out = tool(&["top", &path(file)]);
        common::assert_success(&out, "top");
        let text = common::stdout_text(&out);
        assert!(
            text.contains("Samples by thread state (cpu=wall):"),
            "{text}"
        );
        for state in STATES {
            assert!(text.contains(&format!("[{state}]")), "{state}: {text}");
        }
    }

    // hprof2flamegraph, which knows CPU SAMPLES only, reads every sample.
    if let Some(theirs) = common::stackcollapse_hprof() {
        let out = common::run(Command::new(theirs).arg(&base));
        common::assert_success(&out, "stackcollapse-hprof");
        let sum: u64 = common::stdout_text(&out)
            .lines()
            .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
            .sum();
        let total = AsciiProfile::read_whole_file(&base)
            .last_cpu()
            .expect("CPU SAMPLES")
            .total;
        assert_eq!(sum, total, "stackcollapse-hprof's counts");
    }

    let out = tool(&["collapse", &path(&base)]);
    common::assert_success(&out, "collapse");
    let folded = common::stdout_text(&out);
    let blocked_in_work = folded
        .lines()
        .any(|l| l.contains("WallStates.work;") && l.contains(";[blocked] "));
    assert!(blocked_in_work, "{folded}");

    let pb = dir.join("base.pb.gz");
    let out = tool(&["convert", &path(&base), "--to", "pprof", "-o", &path(&pb)]);
    common::assert_success(&out, "convert");
    let top = go_pprof(&["-top", "-sample_index=wall"], &pb);
    for state in STATES {
        assert!(top.contains(&format!("[{state}]")), "{state}: {top}");
    }
    let tags = go_pprof(&["-tags"], &pb);
    assert!(tags.contains("state") && tags.contains("blocked"), "{tags}");

    let gate =
        |expression: &str| tool(&["diff", "--fail-if", expression, &path(&base), &path(&new)]);
    let out = gate("state blocked in WallStates.work > +10%");
    common::assert_exit_code(&out, 1, "twice the time blocked fails the gate");
    let out = gate("state sleeping in WallStates.work > +50%");
    common::assert_success(&out, "the same time asleep passes the gate");
}

/// A carrier running a virtual thread is sampled as that virtual thread:
/// its own frames (`VirtualSpin.spin` over `VirtualThread.run`, no carrier
/// frames below), charged to it by name, running, about one sample per
/// interval of the time it ran (JDK 21 and 25).
#[test]
fn a_mounted_virtual_thread_is_sampled_with_its_own_stack() {
    let _alone = one_jvm_at_a_time();
    common::on_each(&common::jdks_of(&[21, 25]), |jdk| {
        let label = &jdk.label;
        let dir = common::scratch_dir(&format!("cpu-wall-virtual-{label}"));
        let mut cmd = common::java_command(jdk, &dir);
        cmd.arg(common::agentpath_arg(
            "cpu=wall,thread=y,depth=64,interval=5,cutoff=0",
        ))
        .args(["VirtualSpin", "8", "400"]);
        let out = common::run(&mut cmd);
        common::assert_success(&out, &format!("VirtualSpin on {label}"));
        let spin_ms = common::printed::<f64>(&common::stdout_text(&out), "spin_ms");
        let path = dir.join("java.hprof.txt");
        let profile = AsciiProfile::read_whole_file(&path);
        let threads = profile.threads();
        let rows = profile
            .sections
            .iter()
            .rev()
            .find_map(|s| match s {
                Section::WallStates(rows) => Some(rows.clone()),
                _ => None,
            })
            .expect("a WALL STATES block");
        let mut in_spin = 0;
        for row in &rows {
            let frames = profile.frames(row.trace_serial);
            if frames.first().is_none_or(|f| f != "VirtualSpin.spin") {
                continue;
            }
            let trace = profile.trace(row.trace_serial);
            let name = trace
                .thread_serial
                .and_then(|serial| threads.get(&serial))
                .cloned()
                .unwrap_or_default();
            assert!(
                name.starts_with("spinner-"),
                "{label}: spin() charged to {name:?}, not its virtual thread"
            );
            assert!(
                frames.iter().any(|f| f == "java.lang.VirtualThread.run")
                    && !frames.iter().any(|f| f.contains("ForkJoinWorkerThread")),
                "{label}: not the virtual thread's own stack: {frames:?}"
            );
            assert_eq!(row.total(), row.counts[0], "{label}: spin() only runs");
            in_spin += row.total();
        }
        // spin_ms is the wall time the eight spin()s ran, summed.
        let expected = spin_ms / 5.0;
        println!("{label}: spin() got {in_spin} samples for {spin_ms} ms");
        assert!(
            (0.7 * expected..=1.1 * expected + 5.0).contains(&(in_spin as f64)),
            "{label}: spin() got {in_spin} samples for {spin_ms} ms at 5 ms"
        );
    });
}

/// An attached cpu=wall profile stopped while the program runs: the file
/// is complete, the sampler thread is gone, the program goes on to its end.
#[test]
fn attached_and_stopped_the_sampler_goes_and_the_program_goes_on() {
    let _alone = one_jvm_at_a_time();
    let jdk = common::jdk_preferring(21);
    let dir = common::scratch_dir("cpu-wall-attach-stop");
    let mut cmd = common::java_command(&jdk, &dir);
    cmd.args(["WallStates", "30", "go"])
        .stdin(std::process::Stdio::piped());
    let mut target = Spawned::spawn(&mut cmd);
    target.wait_for_line("READY", Duration::from_secs(60));
    let pid = target.pid();
    let attach = |options: &str| {
        let out = common::attach(&dir, pid, options);
        common::assert_success(&out, &format!("attach {options}"));
    };
    attach("cpu=wall,file=stopped.txt");
    target.send_line("go");
    std::thread::sleep(Duration::from_millis(1000));
    attach("stop");
    let samplers = fs::read_dir(format!("/proc/{pid}/task"))
        .expect("the JVM's threads")
        .flatten()
        .filter_map(|t| fs::read_to_string(t.path().join("comm")).ok())
        .filter(|name| name.starts_with("HPROF wall"))
        .count();
    assert_eq!(samplers, 0, "the sampler thread is gone after the stop");
    let out = target.wait_timeout(Duration::from_secs(120));
    common::assert_success(&out, "WallStates goes on to its end");
    assert!(common::stdout_text(&out).contains("WallStates shares:"));
    let profile = AsciiProfile::read_whole_file(&dir.join("stopped.txt"));
    let section = profile.last_cpu().expect("CPU SAMPLES");
    assert!(section.is_wall_clock() && section.total > 0, "{section:?}");
}
