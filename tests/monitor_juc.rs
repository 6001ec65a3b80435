//! monitor=y's LOCK TIME section (hprof-rs's addition after the monitor
//! sections): the time threads spend blocked acquiring java.util.concurrent
//! locks, keyed by (trace of the blocked thread, lock class), against the
//! waiting the program measures itself (`LockContention` sums
//! System.nanoTime() around each lock() call).

mod common;

use common::AsciiProfile;
use hprof_rs::format::ascii::{MonitorTimeRow, Section};
use std::fs;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

const REENTRANT_LOCK: &str = "java.util.concurrent.locks.ReentrantLock";
const READ_WRITE_LOCK: &str = "java.util.concurrent.locks.ReentrantReadWriteLock";

/// One run of `LockContention <mode>` under monitor=y.
struct LockRun {
    path: PathBuf,
    profile: AsciiProfile,
    stdout: String,
    what: String,
}

impl LockRun {
    fn new(jdk: &common::Jdk, mode: &str, options: &str) -> LockRun {
        let dir = common::scratch_dir(&format!("monitor-juc-{mode}-{}", jdk.label));
        let mut cmd = common::java_command(jdk, &dir);
        cmd.arg(common::agentpath_arg(options))
            .args(["LockContention", mode]);
        let out = common::run(&mut cmd);
        let what = format!("LockContention {mode} under {options} on {}", jdk.label);
        common::assert_success(&out, &what);
        let stderr = common::stderr_text(&out);
        assert!(!stderr.contains("HPROF ERROR"), "{what}: {stderr}");
        let path = dir.join("java.hprof.txt");
        LockRun {
            profile: AsciiProfile::read_whole_file(&path),
            path,
            stdout: common::stdout_text(&out),
            what,
        }
    }

    /// The value the program printed as `<name>=<value>`.
    fn printed(&self, name: &str) -> u64 {
        self.stdout
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{name}=")))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("{}: no {name}= in {}", self.what, self.stdout))
    }

    /// Every LOCK TIME section: (total ms, rows).
    fn lock_times(&self) -> Vec<(u64, &[MonitorTimeRow])> {
        self.profile
            .sections
            .iter()
            .filter_map(|s| match s {
                Section::LockTime { total_ms, rows, .. } => Some((*total_ms, rows.as_slice())),
                _ => None,
            })
            .collect()
    }

    /// The only LOCK TIME section (the exit dump's) and its total in ms.
    fn lock_time(&self) -> (u64, &[MonitorTimeRow]) {
        match self.lock_times().as_slice() {
            [one] => *one,
            other => panic!(
                "{}: {} LOCK TIME sections in {}",
                self.what,
                other.len(),
                self.path.display()
            ),
        }
    }

    /// Milliseconds of the rows of lock class `lock` whose trace's top frame
    /// is `method` (`Class.method`), from their shares of the total; and
    /// their blocks.
    fn blocked_in(&self, lock: &str, method: &str) -> (f64, u64) {
        let (total_ms, rows) = self.lock_time();
        rows.iter()
            .filter(|r| r.monitor == lock && self.top_frame(r) == method)
            .fold((0.0, 0), |(ms, count), r| {
                (
                    ms + r.self_percent * total_ms as f64 / 100.0,
                    count + r.count,
                )
            })
    }

    fn top_frame(&self, row: &MonitorTimeRow) -> String {
        self.profile
            .frames(row.trace_serial)
            .first()
            .cloned()
            .unwrap_or_default()
    }
}

/// `measured_ms` within 20% of what the program measured, `expected_ms`.
fn assert_within_20_percent(measured_ms: f64, expected_ms: f64, what: &str) {
    assert!(
        expected_ms > 100.0,
        "{what}: the fixture hardly waited ({expected_ms:.1} ms)"
    );
    assert!(
        (measured_ms - expected_ms).abs() <= 0.2 * expected_ms,
        "{what}: LOCK TIME says {measured_ms:.1} ms, the program waited {expected_ms:.1} ms"
    );
}

#[test]
fn reentrant_lock_waits_are_what_the_program_measured() {
    common::on_each(&common::jdks(), |jdk| {
        let run = LockRun::new(jdk, "reentrant", "monitor=y,cutoff=0");
        assert_eq!(run.printed("acquisitions"), 200, "{}", run.what);
        let waited_ms = run.printed("waited_ns") as f64 / 1e6;
        let (blocked_ms, blocks) = run.blocked_in(REENTRANT_LOCK, "LockContention.takeReentrant");
        assert!(blocks > 0, "{}: no blocks counted", run.what);
        assert_within_20_percent(blocked_ms, waited_ms, &run.what);
        // Nearly all of the section is that lock, charged to the method
        // that called lock().
        let (total_ms, rows) = run.lock_time();
        assert!(
            blocked_ms >= 0.95 * total_ms as f64,
            "{}: {blocked_ms:.1} of {total_ms} ms: {rows:?}",
            run.what
        );
        let printed = common::assert_print_accepts(&run.path, &run.what);
        assert!(printed.contains("LOCK TIME"), "{}: {printed}", run.what);
    });
}

#[test]
fn thread_y_and_depth_apply_to_lock_traces() {
    common::on_each(&common::jdks(), |jdk| {
        let run = LockRun::new(jdk, "reentrant", "monitor=y,thread=y,depth=2,cutoff=0");
        let (_, rows) = run.lock_time();
        let lockers: std::collections::BTreeSet<u32> = run
            .profile
            .threads()
            .into_iter()
            .filter(|(_, name)| name.starts_with("locker-"))
            .map(|(serial, _)| serial)
            .collect();
        let mut blocked_threads = std::collections::BTreeSet::new();
        for row in rows.iter().filter(|r| r.monitor == REENTRANT_LOCK) {
            let trace = run.profile.trace(row.trace_serial);
            let frames = run.profile.frames(row.trace_serial);
            assert_eq!(frames.len(), 2, "{}: depth=2: {frames:?}", run.what);
            assert_eq!(frames[0], "LockContention.takeReentrant", "{}", run.what);
            let thread = trace
                .thread_serial
                .expect("thread=y: a thread in every trace");
            assert!(lockers.contains(&thread), "{}: thread {thread}", run.what);
            blocked_threads.insert(thread);
        }
        // Rows are kept apart per thread. (Not all four need to have waited:
        // a thread that unlocks takes the lock back before the woken one
        // runs, and the first one may never block.)
        assert!(blocked_threads.len() >= 2, "{}: {rows:?}", run.what);
    });
}

#[test]
fn a_dump_restarts_the_times_and_keeps_the_counts() {
    common::on_each(&common::jdks(), |jdk| {
        let dir = common::scratch_dir(&format!("monitor-juc-dumped-{}", jdk.label));
        let path = dir.join("java.hprof.txt");
        let mut cmd = common::java_command(jdk, &dir);
        cmd.arg(common::agentpath_arg("monitor=y,cutoff=0"))
            .args(["LockContention", "dumped"])
            .arg(&path);
        let mut child = common::Spawned::spawn(&mut cmd);
        child.wait_for_line("PHASE1", Duration::from_secs(60));
        child.signal(libc::SIGQUIT);
        let out = child.wait_timeout(Duration::from_secs(120));
        let what = format!("LockContention dumped on {}", jdk.label);
        common::assert_success(&out, &what);
        let stdout = common::stdout_text(&out);
        let printed = |name: &str| {
            stdout
                .lines()
                .find_map(|l| l.strip_prefix(&format!("{name}=")))
                .and_then(|v| v.trim().parse::<u64>().ok())
                .unwrap_or_else(|| panic!("{what}: no {name}= in {stdout}"))
        };
        let profile = AsciiProfile::read_whole_file(&path);
        let dumps: Vec<(u64, Vec<MonitorTimeRow>)> = profile
            .sections
            .iter()
            .filter_map(|s| match s {
                Section::LockTime { total_ms, rows, .. } => Some((*total_ms, rows.clone())),
                _ => None,
            })
            .collect();
        assert_eq!(dumps.len(), 2, "{what}: one LOCK TIME per dump");
        // Times start over: each dump holds its own phase's waiting.
        for ((total_ms, _), waited) in dumps.iter().zip(["waited1_ns", "waited2_ns"]) {
            assert_within_20_percent(*total_ms as f64, printed(waited) as f64 / 1e6, &what);
        }
        // Counts do not: a trace's count at the exit is at least its count
        // at the SIGQUIT, and the blocks of both phases add up.
        let count = |rows: &[MonitorTimeRow], trace: u32| {
            rows.iter()
                .filter(|r| r.trace_serial == trace)
                .map(|r| r.count)
                .sum::<u64>()
        };
        let (first, last) = (&dumps[0].1, &dumps[1].1);
        for row in first {
            assert!(
                count(last, row.trace_serial) >= row.count,
                "{what}: trace {} counted {} then {}",
                row.trace_serial,
                row.count,
                count(last, row.trace_serial)
            );
        }
        let total = |rows: &[MonitorTimeRow]| rows.iter().map(|r| r.count).sum::<u64>();
        assert!(
            total(last) > total(first),
            "{what}: {first:?} then {last:?}"
        );
    });
}

#[test]
fn read_write_lock_waits_are_charged_to_the_read_write_lock() {
    common::on_each(&common::jdks(), |jdk| {
        let run = LockRun::new(jdk, "readwrite", "monitor=y,cutoff=0");
        assert_eq!(run.printed("acquisitions"), 120, "{}", run.what);
        let waited_ms = run.printed("waited_ns") as f64 / 1e6;
        let (write_ms, _) = run.blocked_in(READ_WRITE_LOCK, "LockContention.takeWrite");
        let (read_ms, _) = run.blocked_in(READ_WRITE_LOCK, "LockContention.takeRead");
        assert!(write_ms > 0.0 && read_ms > 0.0, "{}", run.what);
        assert_within_20_percent(write_ms + read_ms, waited_ms, &run.what);
    });
}

#[test]
fn condition_awaits_are_not_lock_contention() {
    common::on_each(&common::jdks(), |jdk| {
        let run = LockRun::new(jdk, "condition", "monitor=y,cutoff=0");
        let awaited_ms = run.printed("awaited_ns") as f64 / 1e6;
        assert!(awaited_ms >= 550.0, "{}: awaited {awaited_ms} ms", run.what);
        // The lock itself may be busy for an instant when a signalled
        // thread takes it back, never for a meaningful part of the awaits.
        let blocked_ms: u64 = run.lock_times().iter().map(|(ms, _)| ms).sum();
        assert!(
            (blocked_ms as f64) < 0.05 * awaited_ms,
            "{}: {blocked_ms} ms of LOCK TIME for {awaited_ms:.0} ms of awaits: {:?}",
            run.what,
            run.lock_times()
        );
    });
}

#[test]
fn an_uncontended_lock_adds_no_rows() {
    common::on_each(&common::jdks(), |jdk| {
        let run = LockRun::new(jdk, "uncontended", "monitor=y,cutoff=0");
        assert_eq!(run.printed("acquisitions"), 100_000, "{}", run.what);
        for (_, rows) in run.lock_times() {
            for row in rows {
                assert!(
                    !run.profile
                        .frames(row.trace_serial)
                        .iter()
                        .any(|f| f.starts_with("LockContention.")),
                    "{}: a row for the fixture's uncontended lock: {row:?}",
                    run.what
                );
            }
        }
    });
}

#[test]
fn every_park_on_a_synchronizer_counts_once_and_no_other_park_does() {
    common::on_each(&common::jdks(), |jdk| {
        let run = LockRun::new(jdk, "parks", "monitor=y,cutoff=0");
        let (_, rows) = run.lock_time();
        let gate: Vec<_> = rows
            .iter()
            .filter(|r| run.top_frame(r) == "LockContention.parkOnGate")
            .map(|r| (r.monitor.as_str(), r.count))
            .collect();
        // The program's own synchronizer is named as it is (it is not a
        // `Sync` nested in a lock).
        assert_eq!(
            gate,
            [("LockContention$Gate", 1000)],
            "{}: {rows:?}",
            run.what
        );
    });
}

#[test]
fn virtual_threads_are_charged_in_their_own_frames() {
    common::on_each(&common::jdks_of(&[21, 25]), |jdk| {
        let run = LockRun::new(jdk, "virtual", "monitor=y,cutoff=0");
        assert_eq!(run.printed("acquisitions"), 200, "{}", run.what);
        let waited_ms = run.printed("waited_ns") as f64 / 1e6;
        let (blocked_ms, _) = run.blocked_in(REENTRANT_LOCK, "LockContention.takeReentrant");
        assert_within_20_percent(blocked_ms, waited_ms, &run.what);
        let (_, rows) = run.lock_time();
        for row in rows.iter().filter(|r| r.monitor == REENTRANT_LOCK) {
            let frames = run.profile.frames(row.trace_serial);
            assert!(
                !frames.iter().any(|f| f.contains("ForkJoin")),
                "{}: carrier frames in {frames:?}",
                run.what
            );
        }
    });
}

#[test]
fn the_embedded_lock_tracker_class_is_built_from_its_source() {
    let dir = common::scratch_dir("monitor-juc-lock-tracker-source");
    let mut cmd = Command::new(common::javac());
    cmd.args(["--release", "11", "-encoding", "UTF-8", "-d"])
        .arg(&dir)
        .arg(common::repo_root().join("java-tracker/hprof_rs/LockTracker.java"));
    common::assert_success(&common::run(&mut cmd), "javac LockTracker.java");
    let fresh = fs::read(dir.join(format!("{}.class", hprof_rs::bci::LOCK_TRACKER_CLASS))).unwrap();
    assert!(
        fresh == hprof_rs::bci::LOCK_TRACKER_CLASS_FILE,
        "java-tracker/hprof_rs/LockTracker.class is stale (or {} is not the javac that built it): \
         run java-tracker/build.sh",
        common::javac().display()
    );
}
