//! cpu=times timed from samples (its default, `timing=samples`) on real
//! JVMs: every call counted exactly per method, a method's calls shared
//! among its traces by their samples, times from samples of each thread's
//! CPU, traces made of the counted frames, and the program computing what
//! it computes without the agent.

mod common;

use common::AsciiProfile;
use hprof_rs::format::ascii::CpuTitle;

/// The fixture's result with or without the agent.
const RESULT_LINE: &str = "ticks=1000000 done true";

#[test]
fn every_call_is_counted_and_each_trace_gets_its_share_of_the_samples() {
    common::on_each(&common::jdks_of(&[11, 17, 21, 25]), |jdk| {
        let label = &jdk.label;
        let dir = common::scratch_dir(&format!("cpu-times-sampled-{label}"));
        let mut cmd = common::java_command(jdk, &dir);
        cmd.arg(common::agentpath_arg("cpu=times,cutoff=0"))
            .arg("SampledCalls");
        let out = common::run(&mut cmd);
        common::assert_success(&out, &format!("SampledCalls under cpu=times on {label}"));
        let stderr = common::stderr_text(&out);
        assert!(!stderr.contains("HPROF ERROR"), "{label}: {stderr}");
        assert!(
            common::stdout_text(&out).contains(RESULT_LINE),
            "{label}: the program's result changed"
        );
        let profile = AsciiProfile::read(&dir.join("java.hprof.txt"));
        let section = profile
            .first_cpu(CpuTitle::TimeMs)
            .unwrap_or_else(|| panic!("{label}: no CPU TIME (ms) block"))
            .clone();
        let rows_of = |method: &str| -> Vec<_> {
            section
                .rows
                .iter()
                .filter(|r| r.method.as_deref() == Some(method))
                .collect()
        };

        // work(): 300 calls, on two traces that show its counted callers.
        let work = rows_of("SampledCalls.work");
        assert_eq!(
            work.len(),
            2,
            "{label}: work()'s traces: {:?}",
            section.rows
        );
        let calls: u64 = work.iter().map(|r| r.count).sum();
        assert_eq!(calls, 300, "{label}: work()'s calls, every one counted");
        let from = |caller: &str| {
            work.iter()
                .find(|r| profile.frames(r.trace_serial)[1] == caller)
                .unwrap_or_else(|| panic!("{label}: no work() row called by {caller}"))
        };
        let (left, right) = (from("SampledCalls.left"), from("SampledCalls.right"));
        for row in [left, right] {
            assert_eq!(
                profile.frames(row.trace_serial)[2],
                "SampledCalls.main",
                "{label}: {row:?}"
            );
        }
        // Every call does the same work: the samples split them 2:1 (the
        // share is an estimate, within a tenth of the calls).
        assert!(
            left.count.abs_diff(200) <= 30 && right.count.abs_diff(100) <= 30,
            "{label}: work() from left {} and from right {} of 200 and 100",
            left.count,
            right.count
        );
        let work_share: f64 = work.iter().map(|r| r.self_percent).sum();
        assert!(
            work_share >= 70.0,
            "{label}: work() has {work_share}% of the time"
        );
        assert!(
            left.self_percent > right.self_percent,
            "{label}: {left:?} {right:?}"
        );

        // main(): one call; tick(), when sampled at all, its million.
        for (method, expected) in [("SampledCalls.main", 1), ("SampledCalls.tick", 1_000_000)] {
            for row in rows_of(method) {
                assert_eq!(row.count, expected, "{label}: {method}: {row:?}");
            }
        }
        // Header total: the samples' CPU time, at least work()'s rounds.
        assert!(section.total >= 100, "{label}: total {} ms", section.total);
        // No frame of a trace is the tracker's.
        for row in &section.rows {
            let frames = profile.frames(row.trace_serial);
            assert!(
                frames.iter().all(|f| !f.starts_with("hprof_rs.")),
                "{label}: {frames:?}"
            );
        }
    });
}

/// thread=y: the rows and their counts are per thread; a method run on
/// two threads has a row on each with that thread's calls.
#[test]
fn with_thread_y_each_thread_has_its_own_rows_and_counts() {
    common::on_each(&common::jdks_of(&[17, 25]), |jdk| {
        let label = &jdk.label;
        let dir = common::scratch_dir(&format!("cpu-times-sampled-threads-{label}"));
        let text = common::profile_to_file(
            jdk,
            &dir,
            "cpu=times,thread=y,cutoff=0",
            "out.txt",
            &["CpuHot", "2"],
        );
        let profile = AsciiProfile::read(&text);
        let section = profile
            .first_cpu(CpuTitle::TimeMs)
            .unwrap_or_else(|| panic!("{label}: no CPU TIME (ms) block"))
            .clone();
        // hotA (3 units of work) and hotB (1 unit) run once each, each on
        // a thread of its own. (The JDK's own rewritten code at start-up
        // takes about a third of the time on JDK 25: hotA has 49.8-51.6%.)
        let mut shares = Vec::new();
        for (method, least) in [("CpuHot.hotA", 40.0), ("CpuHot.hotB", 12.0)] {
            let rows: Vec<_> = section
                .rows
                .iter()
                .filter(|r| r.method.as_deref() == Some(method))
                .collect();
            assert_eq!(rows.len(), 1, "{label}: {method}: {:?}", section.rows);
            assert_eq!(rows[0].count, 1, "{label}: {method}: {:?}", rows[0]);
            assert!(
                rows[0].self_percent >= least,
                "{label}: {method}: {:?}",
                rows[0]
            );
            assert!(
                profile.trace(rows[0].trace_serial).thread_serial.is_some(),
                "{label}: {method}: trace without its thread"
            );
            shares.push(rows[0].self_percent);
        }
        // Three times the work, three times the time (2.86-3.02 measured).
        let ratio = shares[0] / shares[1];
        assert!(
            (2.4..=3.6).contains(&ratio),
            "{label}: hotA has {ratio:.2} times hotB's time: {shares:?}"
        );
    });
}

/// cpu=times' default counts every call of a rewritten method (the manual's
/// "true count of the times this method was entered"), with no time when no
/// sample saw the method, on the trace of its first call: TimedCalls' a()
/// (12,345 calls of a few instructions), b() (777), recurse() (345) and
/// nap() (4 sleeps) under `cutoff=0`, each first called by main() (the
/// rows of the methods no sample saw that run, one at least, are checked).
/// Under the default cutoff a row is left out only when its share of the
/// time and of the calls are both below it: b()'s 777 calls in a few
/// microseconds stay. Before, a method without a sample had no row at all.
#[test]
fn methods_no_sample_saw_keep_their_exact_counts() {
    common::on_each(&common::jdks_of(&[11, 17, 21, 25]), |jdk| {
        let label = &jdk.label;
        for options in ["cpu=times,cutoff=0", "cpu=times"] {
            let dir = common::scratch_dir(&format!("cpu-times-unsampled-{options}-{label}"));
            let mut cmd = common::java_command(jdk, &dir);
            cmd.arg(common::agentpath_arg(options)).arg("TimedCalls");
            let out = common::run(&mut cmd);
            common::assert_success(&out, &format!("TimedCalls under {options} on {label}"));
            let profile = AsciiProfile::read(&dir.join("java.hprof.txt"));
            let section = profile
                .first_cpu(CpuTitle::TimeMs)
                .unwrap_or_else(|| panic!("{label}: no CPU TIME (ms) block"));
            let methods: &[(&str, u64)] = if options.contains("cutoff=0") {
                &[
                    ("TimedCalls.a", 12_345),
                    ("TimedCalls.b", 777),
                    ("TimedCalls.recurse", 345),
                    ("TimedCalls.nap", 4),
                ]
            } else {
                &[("TimedCalls.b", 777)]
            };
            let mut unsampled_rows = 0;
            for &(method, calls) in methods {
                assert_eq!(
                    common::cpu_count_in(section, method),
                    calls,
                    "{label}, {options}: {method}'s calls: {:?}",
                    section.rows
                );
                // A row no sample saw sits on the trace of the method's
                // first call, made by main().
                for row in section
                    .rows
                    .iter()
                    .filter(|r| r.method.as_deref() == Some(method) && r.self_percent == 0.0)
                {
                    unsampled_rows += 1;
                    let frames = profile.frames(row.trace_serial);
                    assert_eq!(
                        frames.get(..2),
                        Some(&[method.to_string(), "TimedCalls.main".to_string()][..]),
                        "{label}, {options}: {method}'s unsampled row is on the trace of \
                         its first call"
                    );
                }
            }
            if options.contains("cutoff=0") {
                assert!(
                    unsampled_rows > 0,
                    "{label}: every one of a(), b(), recurse() and nap() was sampled: {:?}",
                    section.rows
                );
            }
        }
    });
}
