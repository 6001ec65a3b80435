//! Rewritten code runs, and the injected calls count exactly: the classes
//! of `tests/support/bci/run` are rewritten to call `bcitest.CountingTracker`
//! and run on each JDK of the matrix; every method's calls and returns must
//! match the table below (an exception leaving a method runs the exit call
//! from the rewriter's catch-all handler, which rethrows it),
//! with its branches short or all widened, and the program's output must not
//! change. The same classes rewritten for the real `hprof_rs.Tracker`
//! ([`TRACKER_CLASS_FILE`] on the boot class path) run unchanged while it is
//! disengaged and reach its natives once engaged. Also checks that the
//! embedded Tracker.class is what `java-tracker/build.sh` makes of
//! Tracker.java.

mod common;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use hprof_rs::bci::{
    ALLOC_TRACKER_CLASS, ALLOC_TRACKER_CLASS_FILE, ALLOC_TRACKER_MADE_AT_CLASS,
    ALLOC_TRACKER_MADE_AT_CLASS_FILE, Injection, RewriteOptions, TRACKER_CLASS, TRACKER_CLASS_FILE,
    rewrite_class_with,
};

/// Calls and returns of every method the workload runs, by
/// `Class.name(descriptor)`: nothing else may be called.
const EXPECTED: &[(&str, u64, u64)] = &[
    // main's return comes after the counts are printed.
    ("Workload.main([Ljava/lang/String;)V", 1, 0),
    ("Workload.<clinit>()V", 1, 1),
    ("Workload.run()Ljava/lang/String;", 1, 1),
    ("Workload.fib(I)I", 177, 177),
    // Five of the ten calls end in an exception: the catch-all handler
    // reports their exits too.
    ("Workload.thrower(I)V", 10, 10),
    ("Workload.catcher(I)I", 1, 1),
    ("Workload.dense(I)C", 6, 6),
    ("Workload.sparse(I)C", 6, 6),
    ("Workload.tryFinally(I)J", 2, 2),
    ("Workload$Derived.<init>(Z)V", 2, 2),
    ("Workload$Base.<init>(I)V", 3, 3),
    ("Workload$Shape.square()Lbcitest/Workload$Shape;", 1, 1),
    ("Workload$Square.<init>()V", 1, 1),
    ("Workload$Square.sides()I", 2, 2),
    ("Workload$Shape.name()Ljava/lang/String;", 1, 1),
    ("Workload.lambda$run$0()I", 3, 3),
    ("Workload.sync(I)I", 1, 1),
    ("Workload.syncBlock(Ljava/lang/Object;I)I", 1, 1),
    ("Workload.wide(JD)D", 1, 1),
    // Its loop jumps back to offset 0, which must not count as a call.
    ("Workload.spin(I)I", 1, 1),
];

/// The workload compiled: `target/test-scratch/bci-run-classes`.
fn classes() -> &'static PathBuf {
    static CLASSES: OnceLock<PathBuf> = OnceLock::new();
    CLASSES.get_or_init(|| {
        let dir = common::scratch_dir("bci-run-classes");
        let src = common::repo_root().join("tests/support/bci/run/bcitest");
        let mut cmd = Command::new(common::javac());
        cmd.args(["--release", "11", "-encoding", "UTF-8", "-d"])
            .arg(&dir)
            .arg(src.join("Workload.java"))
            .arg(src.join("CountingTracker.java"));
        common::assert_success(&common::run(&mut cmd), "javac workload");
        dir
    })
}

/// Every `.class` under `dir`, sorted, relative to it.
fn class_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        for entry in fs::read_dir(&d).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "class") {
                out.push(path.strip_prefix(dir).unwrap().to_path_buf());
            }
        }
    }
    out.sort();
    out
}

/// Rewrites every class of [`classes`] into `out`; returns
/// `Class.name(descriptor)` by (class number, method number).
fn rewrite_into(
    out: &Path,
    injection: &Injection,
    options: &RewriteOptions,
) -> BTreeMap<(u32, u16), String> {
    let mut names = BTreeMap::new();
    for (cnum, relative) in class_files(classes()).iter().enumerate() {
        let bytes = fs::read(classes().join(relative)).unwrap();
        let outcome = rewrite_class_with(&bytes, cnum as u32, injection, options)
            .unwrap_or_else(|e| panic!("{}: {e}", relative.display()));
        let class = relative.with_extension("");
        let simple = class.file_name().unwrap().to_string_lossy().into_owned();
        for m in &outcome.methods {
            assert!(
                m.rewritten
                    || matches!(
                        m.skip_reason.as_deref(),
                        Some("the tracker class itself" | "no code (abstract or native)")
                    ),
                "{simple}.{}{} not rewritten: {:?}",
                m.name,
                m.descriptor,
                m.skip_reason
            );
            names.insert(
                (cnum as u32, m.index),
                format!("{simple}.{}{}", m.name, m.descriptor),
            );
        }
        let target = out.join(relative);
        fs::create_dir_all(target.parent().unwrap()).unwrap();
        fs::write(target, outcome.bytes).unwrap();
    }
    names
}

/// Runs `bcitest.Workload <mode>` on `jdk` with `classpath` (and `boot`
/// appended to the boot class path); returns stdout.
fn run_workload(jdk: &common::Jdk, classpath: &Path, boot: Option<&Path>, mode: &str) -> String {
    let mut cmd = Command::new(&jdk.java);
    for var in common::JAVA_ENV_TO_CLEAR {
        cmd.env_remove(var);
    }
    cmd.args([
        "-XX:+UnlockDiagnosticVMOptions",
        "-XX:+BytecodeVerificationRemote",
    ]);
    if let Some(boot) = boot {
        let mut arg = std::ffi::OsString::from("-Xbootclasspath/a:");
        arg.push(boot);
        cmd.arg(arg);
    }
    cmd.arg("-cp")
        .arg(classpath)
        .args(["bcitest.Workload", mode]);
    let what = format!("{} Workload {mode}", jdk.label);
    let out = common::run(&mut cmd);
    common::assert_success(&out, &what);
    common::stdout_text(&out)
}

fn result_line(stdout: &str) -> &str {
    stdout
        .lines()
        .find(|l| l.starts_with("RESULT "))
        .unwrap_or_else(|| panic!("no RESULT line in:\n{stdout}"))
}

/// `Class.name(descriptor)` → (calls, returns) from the COUNT lines.
fn counts(stdout: &str, names: &BTreeMap<(u32, u16), String>) -> BTreeMap<String, (u64, u64)> {
    let mut out = BTreeMap::new();
    for line in stdout.lines().filter_map(|l| l.strip_prefix("COUNT ")) {
        let v: Vec<u64> = line.split(' ').map(|f| f.parse().unwrap()).collect();
        let name = names
            .get(&(v[0] as u32, v[1] as u16))
            .unwrap_or_else(|| panic!("COUNT for an unknown method: {line}"));
        out.insert(name.clone(), (v[2], v[3]));
    }
    out
}

fn counting_tracker() -> Injection {
    Injection {
        tracker_class: "bcitest/CountingTracker".into(),
        ..Injection::tracker()
    }
}

#[test]
fn injected_calls_count_every_call_and_return_exactly() {
    let expected: BTreeMap<String, (u64, u64)> = EXPECTED
        .iter()
        .map(|(name, calls, returns)| (name.to_string(), (*calls, *returns)))
        .collect();
    for (tag, widen_all_branches) in [("short", false), ("widened", true)] {
        let dir = common::scratch_dir(&format!("bci-run-count-{tag}"));
        let options = RewriteOptions { widen_all_branches };
        let names = rewrite_into(&dir, &counting_tracker(), &options);
        common::on_each(&common::jdks(), |jdk| {
            let plain = run_workload(jdk, classes(), None, "plain");
            let stdout = run_workload(jdk, &dir, None, "count");
            assert_eq!(
                result_line(&stdout),
                result_line(&plain),
                "{} {tag}",
                jdk.label
            );
            assert_eq!(
                counts(&stdout, &names),
                expected,
                "{} {tag}: calls and returns per method",
                jdk.label
            );
        });
    }
}

#[test]
fn the_real_tracker_is_inert_until_engaged_and_starts_over_when_reset() {
    let dir = common::scratch_dir("bci-run-tracker");
    let classpath = dir.join("classes");
    rewrite_into(
        &classpath,
        &Injection::tracker(),
        &RewriteOptions::default(),
    );
    let boot = dir.join("boot");
    let tracker = boot.join(format!("{TRACKER_CLASS}.class"));
    fs::create_dir_all(tracker.parent().unwrap()).unwrap();
    fs::write(&tracker, TRACKER_CLASS_FILE).unwrap();
    common::on_each(&common::jdks(), |jdk| {
        let plain = run_workload(jdk, classes(), None, "plain");
        let disengaged = run_workload(jdk, &classpath, Some(&boot), "plain");
        assert_eq!(
            result_line(&disengaged),
            result_line(&plain),
            "{}",
            jdk.label
        );
        // Engaged, the Tracker times the calls itself (no agent here): fib(10)
        // makes 177 calls, all completed.
        let engaged = run_workload(jdk, &classpath, Some(&boot), "engage");
        let result = result_line(&engaged);
        assert_eq!(
            result, "RESULT timed fib(10)=55 calls=177",
            "{}: engaged tracker",
            jdk.label
        );
        // Reset between two spans (as a second attach does): the second
        // counts its own 177 calls, not the caller that began before.
        let reset = run_workload(jdk, &classpath, Some(&boot), "reset");
        assert_eq!(
            result_line(&reset),
            "RESULT reset fib(10)=110 before=177 after=177",
            "{}: reset tracker",
            jdk.label
        );
    });
}

#[test]
fn the_embedded_tracker_classes_are_built_from_their_sources() {
    let dir = common::scratch_dir("bci-run-tracker-source");
    // AllocTracker uses jdk.internal.misc.Unsafe, both trackers HotSpot's
    // DontInline, which --release forbids (the flags of java-tracker/build.sh).
    let internal_api_flags = [
        "-source",
        "11",
        "-target",
        "11",
        "-Xlint:-options",
        "--add-exports",
        "java.base/jdk.internal.misc=ALL-UNNAMED",
        "--add-exports",
        "java.base/jdk.internal.vm.annotation=ALL-UNNAMED",
    ];
    // The agent embeds StartBinder.class and ExitCollection.class as they
    // are checked in.
    let checked_in = |class: &str| {
        let path = format!("java-tracker/hprof_rs/{class}.class");
        fs::read(common::repo_root().join(&path)).expect(&path)
    };
    let start_binder = checked_in("StartBinder");
    let exit_collection = checked_in("ExitCollection");
    for (class, embedded, flags) in [
        (TRACKER_CLASS, TRACKER_CLASS_FILE, &internal_api_flags[..]),
        (
            "hprof_rs/StartBinder",
            &start_binder[..],
            &["--release", "11"][..],
        ),
        (
            "hprof_rs/ExitCollection",
            &exit_collection[..],
            &["--release", "11"][..],
        ),
        (
            ALLOC_TRACKER_CLASS,
            ALLOC_TRACKER_CLASS_FILE,
            &internal_api_flags[..],
        ),
    ] {
        let mut cmd = Command::new(common::javac());
        cmd.args(flags)
            .args(["-encoding", "UTF-8", "-d"])
            .arg(&dir)
            .arg(common::repo_root().join(format!("java-tracker/{class}.java")));
        common::assert_success(&common::run(&mut cmd), &format!("javac {class}.java"));
        let fresh = fs::read(dir.join(format!("{class}.class"))).unwrap();
        assert!(
            fresh == embedded,
            "java-tracker/{class}.class is stale (or {} is not the javac that built it): \
             run java-tracker/build.sh",
            common::javac().display()
        );
    }
    // The tracker's nested class, compiled with it above.
    let fresh = fs::read(dir.join(format!("{ALLOC_TRACKER_MADE_AT_CLASS}.class"))).unwrap();
    assert!(
        fresh == ALLOC_TRACKER_MADE_AT_CLASS_FILE,
        "java-tracker/{ALLOC_TRACKER_MADE_AT_CLASS}.class is stale: run java-tracker/build.sh"
    );
}
