//! cpu=samples on real JVMs: only threads that consume CPU are sampled, in
//! proportion to the CPU they use; blocked threads get nothing.

mod common;

use common::{AsciiProfile, cpu_count_in};
use hprof_rs::format::ascii::{CpuSection, CpuTitle};
use hprof_rs::format::binary::{self, RecordBody};
use std::collections::HashSet;
use std::fs;
use std::process::Command;

/// The last CPU block of a cpu=samples run, which must be CPU SAMPLES.
fn samples_block(profile: &AsciiProfile) -> &CpuSection {
    let section = profile
        .last_cpu()
        .unwrap_or_else(|| panic!("no CPU SAMPLES block in {}", profile.what));
    assert_eq!(section.title, CpuTitle::Samples);
    section
}

#[test]
fn samples_land_where_the_cpu_goes_and_never_on_blocked_threads() {
    common::on_each(&common::jdks(), |jdk| {
        let label = &jdk.label;
        let dir = common::scratch_dir(&format!("cpu-samples-{label}"));
        let mut cmd = common::java_command(jdk, &dir);
        cmd.arg(common::agentpath_arg("cpu=samples,thread=y,cutoff=0"))
            .arg("CpuHot");
        let out = common::run(&mut cmd);
        common::assert_success(&out, &format!("CpuHot on {label}"));
        let profile = AsciiProfile::read(&dir.join("java.hprof.txt"));
        let section = samples_block(&profile);

        let total = section.total;
        let rows_total: u64 = section.rows.iter().map(|r| r.count).sum();
        assert_eq!(
            rows_total, total,
            "{label}: with cutoff=0 the rows add up to the total"
        );
        let (a, b) = (
            cpu_count_in(section, "CpuHot.hotA"),
            cpu_count_in(section, "CpuHot.hotB"),
        );
        assert!(
            total >= 100,
            "{label}: only {total} samples for about 2 s of CPU"
        );
        assert!(
            (a + b) * 100 >= total * 95,
            "{label}: hotA {a} + hotB {b} is under 95% of {total}"
        );
        let share = a as f64 / (a + b) as f64;
        assert!(
            (0.65..=0.85).contains(&share),
            "{label}: hotA's share is {share:.3}, true share 0.75"
        );

        let blocked: HashSet<u32> = profile
            .threads()
            .iter()
            .filter(|(_, name)| {
                ["accept-", "sleep-", "wait-"]
                    .iter()
                    .any(|p| name.starts_with(p))
            })
            .map(|(serial, _)| *serial)
            .collect();
        assert_eq!(
            blocked.len(),
            20,
            "{label}: THREAD START lines for the 20 blocked threads"
        );
        for row in &section.rows {
            let trace = profile.trace(row.trace_serial);
            let thread = trace
                .thread_serial
                .expect("thread=y traces name their thread");
            assert!(
                !blocked.contains(&thread),
                "{label}: blocked thread {thread} got {} samples",
                row.count
            );
        }
    });
}

#[test]
fn ascii_output_converts_to_collapsed_stacks() {
    let Some(stackcollapse) = common::stackcollapse_hprof() else {
        return;
    };
    let jdk = common::jdks().into_iter().next().expect("a JDK");
    let dir = common::scratch_dir("cpu-samples-collapse");
    let mut cmd = common::java_command(&jdk, &dir);
    cmd.arg(common::agentpath_arg("cpu=samples"))
        .arg("CpuHot")
        .arg("5");
    common::assert_success(&common::run(&mut cmd), "CpuHot");
    let out = common::run(Command::new(stackcollapse).arg(dir.join("java.hprof.txt")));
    common::assert_success(&out, "stackcollapse-hprof");
    let collapsed = common::stdout_text(&out);
    let hot_a: u64 = collapsed
        .lines()
        .filter(|l| l.contains("CpuHot.hotA"))
        .map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap())
        .sum();
    assert!(hot_a > 0, "no collapsed stack with hotA:\n{collapsed}");
}

#[test]
fn binary_cpu_samples_agree_with_hprof_slurp() {
    common::on_each(&common::jdks(), |jdk| {
        let label = &jdk.label;
        let dir = common::scratch_dir(&format!("cpu-samples-binary-{label}"));
        let mut cmd = common::java_command(jdk, &dir);
        cmd.arg(common::agentpath_arg("cpu=samples,format=b,cutoff=0"))
            .arg("CpuHot")
            .arg("5");
        common::assert_success(&common::run(&mut cmd), &format!("format=b on {label}"));
        let path = dir.join("java.hprof");
        let file = binary::reader::parse(&fs::read(&path).unwrap()).expect("parses");
        let samples: Vec<_> = file
            .records
            .iter()
            .filter_map(|r| match &r.body {
                RecordBody::CpuSamples { total, samples } => Some((*total, samples.clone())),
                _ => None,
            })
            .collect();
        assert_eq!(samples.len(), 1, "{label}: one CPU SAMPLES record at exit");
        let (total, rows) = &samples[0];
        assert!(*total >= 20, "{label}: {total} samples");
        assert_eq!(
            rows.iter().map(|r| u64::from(r.count)).sum::<u64>(),
            u64::from(*total),
            "{label}"
        );
        let traces: HashSet<u32> = file
            .records
            .iter()
            .filter_map(|r| match &r.body {
                RecordBody::Trace { trace_serial, .. } => Some(*trace_serial),
                _ => None,
            })
            .collect();
        assert!(
            rows.iter().all(|r| traces.contains(&r.trace_serial)),
            "{label}: a row's TRACE is missing"
        );
        if let Some(slurp) = common::slurp_binary() {
            let out = common::run(Command::new(slurp).arg(&path));
            common::assert_success(&out, "hprof-slurp");
            let summary = common::stdout_text(&out);
            let expected = [("CPU samples", 1), ("Stack traces", traces.len())];
            for (what, n) in expected {
                let line = format!("{what}: {n}");
                assert!(
                    summary.lines().any(|l| l.trim() == line),
                    "{label}: hprof-slurp, expected {line:?}:\n{summary}"
                );
            }
        }
    });
}

#[test]
fn depth_0_collects_nothing_and_counts_reset_after_a_dump() {
    let jdk = common::jdks().into_iter().next().expect("a JDK");
    let dir = common::scratch_dir("cpu-samples-depth-0");
    let mut cmd = common::java_command(&jdk, &dir);
    cmd.arg(common::agentpath_arg("cpu=samples,depth=0"))
        .arg("CpuHot")
        .arg("2");
    common::assert_success(&common::run(&mut cmd), "depth=0");
    let profile = AsciiProfile::read(&dir.join("java.hprof.txt"));
    let section = samples_block(&profile);
    assert_eq!(
        (section.total, section.rows.len()),
        (0, 0),
        "depth=0 samples nothing"
    );

    // Two dumps: SIGQUIT while busy, then the exit dump; the second counts only what came after.
    let dir = common::scratch_dir("cpu-samples-two-dumps");
    let mut cmd = common::java_command(&jdk, &dir);
    cmd.arg(common::agentpath_arg("cpu=samples"))
        .arg("Sleeper")
        .arg("2");
    let mut child = common::Spawned::spawn(&mut cmd);
    child.wait_for_line("READY", std::time::Duration::from_secs(60));
    child.signal(libc::SIGQUIT);
    let out = child.wait_timeout(std::time::Duration::from_secs(60));
    common::assert_success(&out, "Sleeper with SIGQUIT");
    let profile = AsciiProfile::read(&dir.join("java.hprof.txt"));
    let blocks: Vec<&CpuSection> = profile.cpu_blocks().collect();
    assert_eq!(blocks.len(), 2, "one CPU SAMPLES block per dump");
    // Sleeper naps: almost no CPU after the first dump.
    assert!(
        blocks[1].total <= 10,
        "the exit dump repeated earlier samples: {}",
        blocks[1].total
    );
}
