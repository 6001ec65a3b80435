//! Class churn: the same class defined again and again in fresh class
//! loaders (a plugin host, a script engine). The modes that number what
//! they find in a class (heap=sites' allocation sites, cpu=times' methods)
//! reuse the numbers a class file got the first time, so their tables grow
//! with the distinct classes, not with the definitions, and a reloaded
//! method is one row with every call, as HPROF names it: by class, method
//! and line, never by loader.

mod common;

use common::{AsciiProfile, site_totals};
use hprof_rs::format::ascii::CpuTitle;
use hprof_rs::format::binary::{self, RecordBody};
use std::collections::HashSet;
use std::path::PathBuf;

/// Runs `ClassChurn reload <copies>` under `options` (plus `verbose=y` and a
/// file in a fresh scratch dir); checks the program's own output and no
/// error, and returns the profile and stderr.
fn churn(jdk: &common::Jdk, scratch: &str, options: &str, copies: u64) -> (AsciiProfile, String) {
    churn_run(jdk, scratch, options, "reload", copies)
}

/// [`churn`] with ClassChurn's `how`: `reload` (the same class each time)
/// or `distinct` (each copy under a fresh name, `Churn<6 hex digits>`).
fn churn_run(
    jdk: &common::Jdk,
    scratch: &str,
    options: &str,
    how: &str,
    copies: u64,
) -> (AsciiProfile, String) {
    let dir = common::scratch_dir(scratch);
    let file = dir.join("churn.txt");
    let options = format!("{options},verbose=y,debug=y,file={}", file.display());
    let mut cmd = common::java_command(jdk, &dir);
    cmd.arg(common::agentpath_arg(&options))
        .args(["ClassChurn", how, &copies.to_string()]);
    let out = common::run(&mut cmd);
    let what = format!("ClassChurn {how} {copies} under {options} on {}", jdk.label);
    common::assert_success(&out, &what);
    let stdout = common::stdout_text(&out);
    let stderr = common::stderr_text(&out);
    assert!(!stderr.contains("HPROF ERROR"), "{what}: {stderr}");
    // make(3) on each copy: pieces 0, 1 and 2.
    assert_eq!(
        common::printed::<u64>(&stdout, "pieces"),
        3 * copies,
        "{what}"
    );
    assert_eq!(common::printed::<u64>(&stdout, "sum"), 3 * copies, "{what}");
    (AsciiProfile::read(&file), stderr)
}

/// The numbers of the verbose line `HPROF: <mode>: <distinct> class files
/// rewritten, <again> more definitions of them, <numbered> ... numbered`.
fn reloads_line(stderr: &str, mode: &str) -> (u64, u64, u64) {
    let prefix = format!("HPROF: {mode}: ");
    let line = stderr
        .lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("no `{prefix}` line in stderr:\n{stderr}"));
    let numbers: Vec<u64> = line
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|w| w.parse().ok())
        .collect();
    assert_eq!(numbers.len(), 3, "{line}");
    (numbers[0], numbers[1], numbers[2])
}

#[test]
fn heap_sites_counts_every_copy_and_numbers_a_reloaded_class_once() {
    common::on_each(&common::jdks(), |jdk| {
        let mut numbered = Vec::new();
        // (Both past the 8 MiB after which the classes loaded before VM
        // init are handed over to the counters, which numbers their sites.)
        for copies in [900u64, 2000] {
            let scratch = format!("churn-sites-{copies}-{}", jdk.label);
            let (profile, stderr) = churn(jdk, &scratch, "heap=sites,cutoff=0", copies);
            let rows = profile.sites_of_class_via("ChurnPlugin$Piece", "ChurnPlugin.make");
            let (allocated, _, _, _) = site_totals(&rows);
            assert_eq!(allocated, 3 * copies, "Piece objects of {copies} copies");
            let (_, again, sites) = reloads_line(&stderr, "heap=sites");
            // ChurnPlugin, rewritten for its `new`, defined again in each
            // copy after the first (ChurnPlugin$Piece allocates nothing:
            // counted per site, it is loaded as it is).
            assert!(again >= copies - 1, "{again} definitions again");
            numbered.push(sites);
        }
        // 1,100 more copies would number at least 1,100 more sites if each
        // copy got its own; the JDK's own classes may differ by a few
        // between two runs (a loaded machine took 15 more once).
        assert!(
            numbered[1] < numbered[0] + 100,
            "sites numbered after 900 and 2,000 copies: {numbered:?}: the tables grew with the copies"
        );
    });
}

#[test]
fn cpu_times_times_a_reloaded_method_as_one_method() {
    common::on_each(&common::jdks(), |jdk| {
        let copies = 300u64;
        let scratch = format!("churn-times-{}", jdk.label);
        let (profile, stderr) = churn(jdk, &scratch, "cpu=times,timing=calls,cutoff=0", copies);
        let section = profile
            .first_cpu(CpuTitle::TimeMs)
            .expect("a CPU TIME block");
        let rows: Vec<_> = section
            .rows
            .iter()
            .filter(|r| r.method.as_deref() == Some("ChurnPlugin.make"))
            .collect();
        let calls: u64 = rows.iter().map(|r| r.count).sum();
        assert_eq!(calls, copies, "calls of ChurnPlugin.make");
        // One row per distinct trace of the method, not one per copy.
        assert!(rows.len() <= 2, "{} rows for ChurnPlugin.make", rows.len());
        let (_, again, _) = reloads_line(&stderr, "cpu=times");
        assert!(again >= copies - 1, "{again} definitions again");
    });
}

/// The name ClassChurn's `distinct` gives copy `copy`.
fn distinct_name(copy: u64) -> String {
    format!("Churn{copy:06x}")
}

#[test]
fn heap_sites_counts_each_freshly_named_copy_at_its_own_site() {
    common::on_each(&common::jdks(), |jdk| {
        let copies = 400u64;
        let scratch = format!("churn-distinct-sites-{}", jdk.label);
        let (profile, _) = churn_run(jdk, &scratch, "heap=sites,cutoff=0", "distinct", copies);
        for copy in [0, 1, copies / 2, copies - 1] {
            let name = distinct_name(copy);
            let rows =
                profile.sites_of_class_via(&format!("{name}$Piece"), &format!("{name}.make"));
            let (allocated, _, _, _) = site_totals(&rows);
            assert_eq!(allocated, 3, "{name}$Piece objects");
        }
        let pieces: u64 = profile
            .site_rows()
            .iter()
            .filter(|r| r.class_name.starts_with("Churn") && r.class_name.ends_with("$Piece"))
            .map(|r| r.allocated_objects)
            .sum();
        assert_eq!(pieces, 3 * copies, "Piece objects of every copy");
    });
}

#[test]
fn cpu_times_times_each_freshly_named_copy_once() {
    common::on_each(&common::jdks(), |jdk| {
        let copies = 400u64;
        let scratch = format!("churn-distinct-times-{}", jdk.label);
        let (profile, _) = churn_run(
            jdk,
            &scratch,
            "cpu=times,timing=calls,cutoff=0",
            "distinct",
            copies,
        );
        let section = profile
            .first_cpu(CpuTitle::TimeMs)
            .expect("a CPU TIME block");
        let make_calls = |method: &str| -> u64 {
            section
                .rows
                .iter()
                .filter(|r| r.method.as_deref() == Some(method))
                .map(|r| r.count)
                .sum()
        };
        for copy in [0, 1, copies / 2, copies - 1] {
            let method = format!("{}.make", distinct_name(copy));
            assert_eq!(make_calls(&method), 1, "calls of {method}");
        }
        let all: u64 = section
            .rows
            .iter()
            .filter(|r| {
                r.method
                    .as_deref()
                    .is_some_and(|m| m.starts_with("Churn") && m.ends_with(".make"))
            })
            .map(|r| r.count)
            .sum();
        assert_eq!(all, copies, "calls of every copy's make");
    });
}

/// `ClassChurn unload <copies>` under `options` (with `verbose=y` and a
/// file in a fresh scratch dir): the program's output checked, every copy's
/// two classes unloaded; returns the file's path and stderr.
fn unload_run(jdk: &common::Jdk, scratch: &str, options: &str, copies: u64) -> (PathBuf, String) {
    let dir = common::scratch_dir(scratch);
    let file = dir.join("churn.hprof");
    let options = format!("{options},verbose=y,debug=y,file={}", file.display());
    let mut cmd = common::java_command(jdk, &dir);
    cmd.arg(common::agentpath_arg(&options))
        .args(["ClassChurn", "unload", &copies.to_string()]);
    let out = common::run(&mut cmd);
    let what = format!(
        "ClassChurn unload {copies} under {options} on {}",
        jdk.label
    );
    common::assert_success(&out, &what);
    let stdout = common::stdout_text(&out);
    let stderr = common::stderr_text(&out);
    assert!(!stderr.contains("HPROF ERROR"), "{what}: {stderr}");
    assert_eq!(common::printed::<u64>(&stdout, "sum"), 3 * copies, "{what}");
    assert_eq!(
        common::printed::<u64>(&stdout, "unloaded"),
        2 * copies,
        "{what}: the program saw its classes unload"
    );
    (file, stderr)
}

/// The frame keys the dump line (hidden option X=0x200000) `HPROF: <u> classes unloaded so
/// far, <l> loaded; <k> frame keys held` gives.
fn frame_keys_held(stderr: &str) -> u64 {
    let line = stderr
        .lines()
        .filter_map(|l| l.split("HPROF: ").nth(1))
        .find(|l| l.contains("frame keys held"))
        .unwrap_or_else(|| panic!("no frame keys line in stderr:\n{stderr}"));
    let numbers: Vec<u64> = line
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|w| w.parse().ok())
        .collect();
    numbers[2]
}

#[test]
fn unloaded_classes_get_unload_class_records_and_leave_the_tables() {
    common::on_each(&common::jdks(), |jdk| {
        let mut keys = Vec::new();
        for copies in [200u64, 600] {
            let scratch = format!("churn-unload-{copies}-{}", jdk.label);
            // Traces of 8 frames, every object walked (alloc_count=events):
            // each Piece's trace holds its copy's make().
            let (file, stderr) = unload_run(
                jdk,
                &scratch,
                "heap=sites,alloc_count=events,depth=8,format=b,cutoff=0,X=0x200000",
                copies,
            );
            keys.push(frame_keys_held(&stderr));
            let parsed = binary::reader::parse(&std::fs::read(&file).unwrap()).expect("parses");
            let mut names = common::class_names::ClassNames::default();
            let mut unloaded = Vec::new();
            let mut pieces = 0u64;
            for record in &parsed.records {
                names.note(&record.body);
                match &record.body {
                    RecordBody::UnloadClass { class_serial } => {
                        let name = names.of(*class_serial).unwrap_or_else(|| {
                            panic!("UNLOAD CLASS {class_serial} before its LOAD")
                        });
                        unloaded.push(name.to_owned());
                    }
                    RecordBody::AllocSites { sites, .. } => {
                        for site in sites {
                            let name = names.of(site.class_serial).unwrap_or_default();
                            if name.starts_with("Churn") && name.ends_with("$Piece") {
                                pieces += u64::from(site.allocated_instances);
                                assert_eq!(site.live_instances, 0, "{name} is unloaded");
                            }
                        }
                    }
                    _ => {}
                }
            }
            let churned: HashSet<&String> =
                unloaded.iter().filter(|n| n.starts_with("Churn")).collect();
            assert_eq!(
                churned.len() as u64,
                2 * copies,
                "{}: UNLOAD CLASS of each copy's two classes ({} records in all)",
                jdk.label,
                unloaded.len()
            );
            assert!(churned.contains(&distinct_name(copies - 1)));
            assert!(churned.contains(&format!("{}$Piece", distinct_name(0))));
            assert_eq!(
                pieces,
                3 * copies,
                "{}: Piece objects of every copy",
                jdk.label
            );
        }
        // Each copy's make() was in a trace, so its frame key was held until
        // its class unloaded: three times the copies, the same keys held.
        assert!(
            keys[1] < keys[0] + 100,
            "{}: frame keys held after 200 and 600 unloaded copies: {keys:?}",
            jdk.label
        );
    });
}

/// cpu=times keeps its call tree in the Java heap, where a heap this small
/// runs out while the tracker grows a table; the agent's dump at heap
/// exhaustion then comes on that very thread, which holds the tracker's
/// lock. It waited for that lock for ever before (2 of 5 runs hung on JDK
/// 17 by hand; where the heap runs out varies, so this test may pass on the
/// old agent too); now the dump goes on without the tables (it says so) and
/// the exit dump has every call. Whatever the program makes of the short
/// heap, the JVM ends and the file is complete.
#[test]
fn a_dump_at_heap_exhaustion_inside_the_call_tree_never_hangs() {
    common::on_each(&common::jdks_of(&[17, 25]), |jdk| {
        for round in 0..2 {
            let dir = common::scratch_dir(&format!("churn-times-oom-{round}-{}", jdk.label));
            let file = dir.join("times.txt");
            let mut cmd = common::java_command(jdk, &dir);
            cmd.arg("-Xmx64m")
                .arg(common::agentpath_arg(&format!(
                    "cpu=times,timing=calls,file={}",
                    file.display()
                )))
                .args(["ClassChurn", "distinct", "30000"]);
            let out = common::run_timeout(&mut cmd, std::time::Duration::from_secs(150));
            let what = format!(
                "cpu=times, ClassChurn distinct 30000, -Xmx64m, {}",
                jdk.label
            );
            assert!(out.status.code().is_some(), "{what}: ended by a signal");
            let profile = AsciiProfile::read(&file);
            assert!(
                profile.first_cpu(CpuTitle::TimeMs).is_some(),
                "{what}: a CPU TIME block"
            );
        }
    });
}
