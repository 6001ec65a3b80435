//! cpu=times `include=` / `exclude=` on real JVMs: only the matching
//! classes are rewritten and timed, their calls counted exactly; the other
//! classes reach the JVM byte for byte as they were loaded (checked by a
//! java.lang.instrument agent placed behind ours, which sees our output);
//! traces skip the frames of classes left out; exclude wins over include.
//!
//! The fixture (java-fixtures/FilterMain.java, FilterLib.java,
//! FilterDeep.java) calls across three packages: main 1, step 1000,
//! FilterLib.twice 1000, FilterLib$Half.half 500, FilterDeep.inc 1500,
//! FilterLib.guarded 1, FilterDeep.check 1 (throws, caught in guarded).

mod common;

use common::AsciiProfile;
use hprof_rs::format::ascii::{CpuSection, CpuTitle};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

const MAIN: &str = "filtered.app.FilterMain";
/// The fixture's result, with or without the agent.
const TOTAL_LINE: &str = "total=1125257";
const APP: &str = "filtered/app/FilterMain";
const LIB: &str = "filtered/lib/FilterLib";
const HALF: &str = "filtered/lib/FilterLib$Half";
const DEEP: &str = "filtered/lib/deep/FilterDeep";

/// A jar of the ClassBytesAgent fixture, made once per test process.
fn class_bytes_agent() -> PathBuf {
    static JAR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    JAR.get_or_init(|| {
        let dir = common::scratch_dir("class-bytes-agent-jar");
        let manifest = dir.join("manifest.txt");
        std::fs::write(&manifest, "Premain-Class: ClassBytesAgent\n").unwrap();
        let jar = dir.join("ClassBytesAgent.jar");
        let classes = common::fixtures_classpath();
        let mut cmd = Command::new(Path::new(common::DEBIAN_JDK_HOME).join("bin/jar"));
        cmd.arg("cfm").arg(&jar).arg(&manifest);
        for entry in ["ClassBytesAgent.class", "ClassBytesAgent$1.class"] {
            cmd.arg("-C").arg(&classes).arg(entry);
        }
        common::assert_success(&common::run(&mut cmd), "jar of ClassBytesAgent");
        jar
    })
    .clone()
}

/// One run of the fixture: the profile (None without the agent), what the
/// byte checker said per class (true: the bytes the JVM got are the class
/// file on disk), and stderr.
struct Run {
    profile: Option<AsciiProfile>,
    same_bytes: BTreeMap<String, bool>,
    stderr: String,
}

/// Runs FilterMain under `options` (no agent when empty), with the byte
/// checker behind the agent; asserts success, the unchanged result and no
/// HPROF ERROR.
fn run_filtered(jdk: &common::Jdk, test: &str, options: &str) -> Run {
    let dir = common::scratch_dir(&format!("{test}-{}", jdk.label));
    let mut cmd = common::java_command(jdk, &dir);
    if !options.is_empty() {
        cmd.arg(common::agentpath_arg(options));
    }
    // After ours on the command line, so it is handed our output.
    cmd.arg(format!(
        "-javaagent:{}=filtered/",
        class_bytes_agent().display()
    ))
    .arg(MAIN);
    let out = common::run(&mut cmd);
    let what = format!("{test} ({options}) on {}", jdk.label);
    common::assert_success(&out, &what);
    let stdout = common::stdout_text(&out);
    let stderr = common::stderr_text(&out);
    assert!(
        stdout.contains(TOTAL_LINE),
        "{what}: result changed\n{stdout}"
    );
    assert!(!stderr.contains("HPROF ERROR"), "{what}: {stderr}");
    let same_bytes = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("bytes "))
        .filter_map(|l| l.rsplit_once(' '))
        .map(|(name, verdict)| (name.to_owned(), verdict == "same"))
        .collect();
    let profile = (!options.is_empty()).then(|| AsciiProfile::read(&dir.join("java.hprof.txt")));
    Run {
        profile,
        same_bytes,
        stderr,
    }
}

impl Run {
    fn cpu(&self) -> &CpuSection {
        self.profile
            .as_ref()
            .and_then(|p| p.first_cpu(CpuTitle::TimeMs))
            .expect("a CPU TIME block")
    }

    /// Completed calls per timed method (`filtered.app.FilterMain.step`).
    fn calls(&self) -> BTreeMap<String, u64> {
        let mut calls = BTreeMap::new();
        for row in &self.cpu().rows {
            *calls
                .entry(row.method.clone().unwrap_or_default())
                .or_default() += row.count;
        }
        calls
    }

    /// The frames of each trace of `method` in CPU TIME.
    fn traces_of(&self, method: &str) -> Vec<Vec<String>> {
        let profile = self.profile.as_ref().unwrap();
        self.cpu()
            .rows
            .iter()
            .filter(|r| r.method.as_deref() == Some(method))
            .map(|r| profile.frames(r.trace_serial))
            .collect()
    }

    /// The checker's verdict for each of the fixture's four classes.
    fn verdicts(&self) -> [(&'static str, Option<bool>); 4] {
        [APP, LIB, HALF, DEEP].map(|c| (c, self.same_bytes.get(c).copied()))
    }
}

/// `[(method, calls)]` as the map `calls()` returns.
fn expected(pairs: &[(&str, u64)]) -> BTreeMap<String, u64> {
    pairs.iter().map(|&(m, n)| (m.to_owned(), n)).collect()
}

#[test]
fn include_times_only_the_matching_classes_and_leaves_the_others_as_loaded() {
    common::on_each(&common::jdks(), |jdk| {
        let label = &jdk.label;
        // Without the agent the checker finds every class as on disk.
        let plain = run_filtered(jdk, "filters-no-agent", "");
        assert_eq!(
            plain.verdicts(),
            [APP, LIB, HALF, DEEP].map(|c| (c, Some(true))),
            "{label}"
        );

        let run = run_filtered(
            jdk,
            "filters-include",
            "cpu=times,cutoff=0,debug=y,include=filtered.app.*:filtered.lib.deep.*",
        );
        // Matched classes rewritten (the checker sees our output), the
        // others handed on as they came.
        assert_eq!(
            run.verdicts(),
            [
                (APP, Some(false)),
                (LIB, Some(true)),
                (HALF, Some(true)),
                (DEEP, Some(false))
            ],
            "{label}"
        );
        assert_eq!(
            run.calls(),
            expected(&[
                ("filtered.app.FilterMain.main", 1),
                ("filtered.app.FilterMain.step", 1000),
                ("filtered.lib.deep.FilterDeep.inc", 1500),
                ("filtered.lib.deep.FilterDeep.check", 1),
            ]),
            "{label}: exact counts, FilterLib absent"
        );
        // twice() and half() are not timed: inc's trace goes from inc
        // straight to step.
        let inc_traces = run.traces_of("filtered.lib.deep.FilterDeep.inc");
        let via_step = [
            "filtered.lib.deep.FilterDeep.inc",
            "filtered.app.FilterMain.step",
            "filtered.app.FilterMain.main",
        ];
        assert_eq!(inc_traces, [via_step.map(String::from)], "{label}");
        // check() threw into guarded(), which is not timed: its call ended
        // there, so step's trace does not go through it.
        assert_eq!(
            run.traces_of("filtered.app.FilterMain.step"),
            [[
                "filtered.app.FilterMain.step",
                "filtered.app.FilterMain.main"
            ]
            .map(String::from)],
            "{label}"
        );
        assert!(
            run.stderr
                .contains("HPROF: cpu=times: include/exclude: 2 classes rewritten, "),
            "{label}: {}",
            run.stderr
        );
    });
}

#[test]
fn one_star_stays_in_its_package_and_two_stars_take_subpackages() {
    common::on_each(&common::jdks(), |jdk| {
        let label = &jdk.label;
        let one = run_filtered(
            jdk,
            "filters-one-star",
            "cpu=times,cutoff=0,include=filtered.lib.*",
        );
        assert_eq!(
            one.calls(),
            expected(&[
                ("filtered.lib.FilterLib.twice", 1000),
                ("filtered.lib.FilterLib$Half.half", 500),
                ("filtered.lib.FilterLib.guarded", 1),
            ]),
            "{label}: filtered.lib.* (FilterLib$Half is in the package, deep is not)"
        );
        assert_eq!(
            one.verdicts(),
            [
                (APP, Some(true)),
                (LIB, Some(false)),
                (HALF, Some(false)),
                (DEEP, Some(true))
            ],
            "{label}"
        );

        let two = run_filtered(
            jdk,
            "filters-two-stars",
            "cpu=times,cutoff=0,include=filtered.lib.**",
        );
        assert_eq!(
            two.calls(),
            expected(&[
                ("filtered.lib.FilterLib.twice", 1000),
                ("filtered.lib.FilterLib$Half.half", 500),
                ("filtered.lib.FilterLib.guarded", 1),
                ("filtered.lib.deep.FilterDeep.inc", 1500),
                ("filtered.lib.deep.FilterDeep.check", 1),
            ]),
            "{label}: filtered.lib.** takes in filtered.lib.deep"
        );
        // The traces begin at the outermost timed method.
        let mut inc_callers: Vec<_> = two
            .traces_of("filtered.lib.deep.FilterDeep.inc")
            .into_iter()
            .map(|frames| frames[1..].to_vec())
            .collect();
        inc_callers.sort();
        assert_eq!(
            inc_callers,
            [
                vec!["filtered.lib.FilterLib$Half.half".to_owned()],
                vec!["filtered.lib.FilterLib.twice".to_owned()],
            ],
            "{label}"
        );
    });
}

#[test]
fn exclude_wins_over_include_and_takes_nested_classes_with_it() {
    common::on_each(&common::jdks(), |jdk| {
        let label = &jdk.label;
        let options = "cpu=times,cutoff=0,include=filtered.**,exclude=filtered.lib.FilterLib";
        let run = run_filtered(jdk, "filters-exclude", options);
        assert_eq!(
            run.calls(),
            expected(&[
                ("filtered.app.FilterMain.main", 1),
                ("filtered.app.FilterMain.step", 1000),
                ("filtered.lib.deep.FilterDeep.inc", 1500),
                ("filtered.lib.deep.FilterDeep.check", 1),
            ]),
            "{label}: FilterLib and FilterLib$Half excluded"
        );
        assert_eq!(
            run.verdicts(),
            [
                (APP, Some(false)),
                (LIB, Some(true)),
                (HALF, Some(true)),
                (DEEP, Some(false))
            ],
            "{label}"
        );

        // cpu=old shares the timing and the filter.
        let old = run_filtered(
            jdk,
            "filters-exclude-old",
            "cpu=old,include=filtered.**,exclude=filtered.lib.FilterLib",
        );
        let profile = old.profile.as_ref().unwrap();
        let rows = profile.old_prof_rows();
        let inc = rows
            .iter()
            .find(|r| r.callee.as_deref() == Some("filtered.lib.deep.FilterDeep.inc(J)J"))
            .unwrap_or_else(|| panic!("{label}: no row of inc"));
        assert_eq!(
            (inc.count, inc.caller.as_deref()),
            (1500, Some("filtered.app.FilterMain.step(I)V")),
            "{label}"
        );
        assert!(
            !rows
                .iter()
                .any(|r| r.callee.as_deref().is_some_and(|c| c.contains("FilterLib"))),
            "{label}: FilterLib is not timed under cpu=old either"
        );
    });
}

#[test]
fn bad_patterns_and_filters_without_cpu_times_are_option_errors() {
    let syntax = "include option value must be class or package patterns separated by ':'";
    let cases = [
        ("cpu=times,include=com..acme", syntax),
        ("cpu=times,include=com/acme/*", syntax),
        ("cpu=times,include=a:", syntax),
        (
            "heap=sites,include=com.acme.*",
            "include and exclude choose the classes cpu=times|old times: they need cpu=times or cpu=old",
        ),
    ];
    common::on_each(&common::jdks(), |jdk| {
        let dir = common::scratch_dir(&format!("filters-errors-{}", jdk.label));
        for (options, expected) in cases {
            let mut cmd = common::java_command(jdk, &dir);
            cmd.arg(common::agentpath_arg(options)).arg("Hello");
            let out = common::run(&mut cmd);
            let what = format!("{options} on {}", jdk.label);
            common::assert_exit_code(&out, 1, &what);
            let stderr = common::stderr_text(&out);
            let line = format!("HPROF ERROR: hprof option error: {expected}");
            assert!(
                stderr.contains(&line),
                "{what}: expected {line:?} in:\n{stderr}"
            );
            assert!(
                stderr.contains(&format!("({options}) [options.rs]")),
                "{what}: {stderr}"
            );
            assert!(
                !common::stdout_text(&out).contains("Hello, hprof"),
                "{what}"
            );
        }
    });
}
