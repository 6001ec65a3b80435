//! cpu=times and cpu=old on real JVMs: exact call counts through our own
//! bytecode injection, self time that excludes callees, exits by exception
//! accounted, and the program computing what it computes without the agent.

mod common;

use common::AsciiProfile;
use hprof_rs::format::ascii::{CpuSection, CpuTitle};
use std::collections::HashMap;
use std::fs;
use std::path::Path;

/// The fixture's result with or without the agent.
const COUNTER_LINE: &str = "counter=313046";

/// Completed calls per method name (rows of every trace added up).
fn calls_per_method(section: &CpuSection) -> HashMap<String, u64> {
    let mut calls = HashMap::new();
    for row in &section.rows {
        *calls
            .entry(row.method.clone().unwrap_or_default())
            .or_default() += row.count;
    }
    calls
}

/// The CPU TIME (ms) block of the profile at `path`.
fn cpu_time_section(path: &Path, label: &str) -> CpuSection {
    AsciiProfile::read(path)
        .first_cpu(CpuTitle::TimeMs)
        .unwrap_or_else(|| panic!("{label}: no CPU TIME (ms) block in {}", path.display()))
        .clone()
}

/// Runs `main_class` under `-agentpath:<agent>=<options>` (plus `jvm_args`)
/// in a fresh scratch dir; asserts exit 0 and no HPROF ERROR, and returns
/// the scratch dir and stdout.
fn run_timed(
    jdk: &common::Jdk,
    scratch: &str,
    jvm_args: &[&str],
    options: &str,
    main_class: &str,
) -> (std::path::PathBuf, String) {
    let dir = common::scratch_dir(scratch);
    let mut cmd = common::java_command(jdk, &dir);
    cmd.args(jvm_args)
        .arg(common::agentpath_arg(options))
        .arg(main_class);
    let out = common::run(&mut cmd);
    let what = format!("{main_class} under {options} on {}", jdk.label);
    common::assert_success(&out, &what);
    let stderr = common::stderr_text(&out);
    assert!(!stderr.contains("HPROF ERROR"), "{what}: {stderr}");
    (dir, common::stdout_text(&out))
}

#[test]
fn a_thread_is_still_timed_after_it_caught_a_stack_overflow() {
    common::on_each(&common::jdks(), |jdk| {
        let label = &jdk.label;
        // An overflow inside the Tracker's own code used to leave the
        // thread untimed for good in about half the runs: several runs of
        // five overflows each.
        for run in 0..4 {
            let (dir, stdout) = run_timed(
                jdk,
                &format!("cpu-times-overflow-{label}"),
                &[],
                "cpu=times,timing=calls,cutoff=0",
                "Overflow",
            );
            assert!(stdout.contains("counter=5000"), "{label}: {stdout}");
            let section = cpu_time_section(&dir.join("java.hprof.txt"), label);
            assert_eq!(
                calls_per_method(&section).get("Overflow.counted"),
                Some(&5000),
                "{label}, run {run}: counted() after the overflows"
            );
        }
    });
}

#[test]
fn call_counts_are_exact_and_the_sleeper_has_the_most_self_time() {
    common::on_each(&common::jdks(), |jdk| {
        let label = &jdk.label;
        let (dir, stdout) = run_timed(
            jdk,
            &format!("cpu-times-{label}"),
            &[],
            "cpu=times,timing=calls,cutoff=0",
            "TimedCalls",
        );
        assert!(
            stdout.contains(COUNTER_LINE),
            "{label}: the program's result changed"
        );
        let section = cpu_time_section(&dir.join("java.hprof.txt"), label);
        let calls = calls_per_method(&section);
        assert_eq!(
            calls.get("TimedCalls.a"),
            Some(&12345),
            "{label}: a() from a loop and a recursion"
        );
        assert_eq!(
            calls.get("TimedCalls.b"),
            Some(&777),
            "{label}: b(), one call left by an exception"
        );
        assert_eq!(
            calls.get("TimedCalls.recurse"),
            Some(&345),
            "{label}: recurse()"
        );
        assert_eq!(calls.get("TimedCalls.nap"), Some(&4), "{label}: nap()");
        let top = &section.rows[0];
        assert_eq!(
            top.method.as_deref(),
            Some("TimedCalls.nap"),
            "{label}: the 200 ms sleeper ranks first"
        );
        assert!(
            section.total >= 200,
            "{label}: total {} ms is below the 200 ms slept",
            section.total
        );
    });
}

/// The `self` share of `method`'s rows, added up.
fn self_percent_of(section: &CpuSection, method: &str) -> f64 {
    section
        .rows
        .iter()
        .filter(|row| row.method.as_deref() == Some(method))
        .map(|row| row.self_percent)
        .sum()
}

#[test]
fn leaves_are_counted_exactly_and_hold_their_own_time() {
    common::on_each(&common::jdks(), |jdk| {
        let label = &jdk.label;
        let (dir, stdout) = run_timed(
            jdk,
            &format!("cpu-times-leaves-{label}"),
            &[],
            "cpu=times,timing=calls,cutoff=0",
            "LeafCalls",
        );
        assert!(stdout.contains("done true"), "{label}: {stdout}");
        let section = cpu_time_section(&dir.join("java.hprof.txt"), label);
        let calls = calls_per_method(&section);
        assert_eq!(calls.get("LeafCalls.spin"), Some(&3), "{label}: spin()");
        assert_eq!(calls.get("LeafCalls.outer"), Some(&1), "{label}: outer()");
        assert_eq!(
            calls.get("LeafCalls.at"),
            Some(&1001),
            "{label}: at(), one call left by an exception"
        );
        // spin() runs 180 million rounds of its loop; outer() three calls.
        let spin = self_percent_of(&section, "LeafCalls.spin");
        let outer = self_percent_of(&section, "LeafCalls.outer");
        assert!(
            spin >= 30.0 && outer * 20.0 <= spin,
            "{label}: spin() {spin}% and outer() {outer}% of the self time"
        );
    });
}

#[test]
fn cpu_old_writes_the_old_prof_table_only() {
    common::on_each(&common::jdks(), |jdk| {
        let label = &jdk.label;
        let dir = common::scratch_dir(&format!("cpu-old-{label}"));
        let mut cmd = common::java_command(jdk, &dir);
        cmd.arg(common::agentpath_arg("cpu=old")).arg("TimedCalls");
        let out = common::run(&mut cmd);
        common::assert_success(&out, &format!("TimedCalls under cpu=old on {label}"));
        assert!(common::stdout_text(&out).contains(COUNTER_LINE));
        let path = dir.join("java.hprof.txt");
        let text = fs::read_to_string(&path).unwrap();
        assert!(
            text.starts_with("count callee caller time\n"),
            "{label}: cpu=old has no header:\n{}",
            &text[..200.min(text.len())]
        );
        let profile = AsciiProfile::read(&path);
        let rows = profile.old_prof_rows();
        let find = |callee: &str, caller: &str| {
            rows.iter()
                .find(|r| {
                    r.callee.as_deref() == Some(callee) && r.caller.as_deref() == Some(caller)
                })
                .map(|r| r.count)
        };
        assert_eq!(
            find("TimedCalls.a()V", "TimedCalls.main([Ljava/lang/String;)V"),
            Some(12000),
            "{label}"
        );
        assert_eq!(
            find("TimedCalls.a()V", "TimedCalls.recurse(I)I"),
            Some(345),
            "{label}"
        );
        assert_eq!(
            find("TimedCalls.b(I)V", "TimedCalls.main([Ljava/lang/String;)V"),
            Some(777),
            "{label}"
        );
        assert!(
            rows.windows(2).all(|w| w[0].count >= w[1].count),
            "{label}: rows are sorted by count"
        );
    });
}

#[test]
fn javac_output_is_unchanged_under_cpu_times() {
    let dir = common::scratch_dir("cpu-times-javac");
    // A real source tree that compiles on its own: the java-fixtures, plus
    // the harness's compiled fixtures' own sources compiled twice.
    let sources: Vec<_> = fs::read_dir(common::repo_root().join("java-fixtures"))
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "java"))
        .collect();
    let compile = |out: &str, agent: Option<&str>| {
        let out_dir = dir.join(out);
        fs::create_dir_all(&out_dir).unwrap();
        let mut cmd = std::process::Command::new(common::javac());
        cmd.current_dir(&dir)
            .arg("--release")
            .arg("11")
            .arg("-d")
            .arg(&out_dir);
        if let Some(options) = agent {
            cmd.arg(format!(
                "-J{}",
                common::agentpath_arg(options).to_string_lossy()
            ));
        }
        cmd.args(&sources);
        common::assert_success(&common::run(&mut cmd), &format!("javac into {out}"));
        out_dir
    };
    let plain = compile("plain", None);
    let timed = compile("timed", Some("cpu=times"));
    // Fixtures in packages (filtered/app/...) compile into folders.
    let mut names: Vec<_> = common::jdk_compiler::files_under(&plain)
        .into_iter()
        .map(|path| path.strip_prefix(&plain).unwrap().to_path_buf())
        .collect();
    names.sort();
    assert!(names.len() >= 10, "too few classes compiled: {names:?}");
    for name in names {
        assert_eq!(
            fs::read(plain.join(&name)).unwrap(),
            fs::read(timed.join(&name)).unwrap(),
            "{name:?} differs"
        );
    }
    let profile = AsciiProfile::read(&dir.join("java.hprof.txt"));
    let timed_javac = profile.cpu_blocks().any(|c| {
        c.rows.iter().any(|r| {
            r.method
                .as_deref()
                .is_some_and(|m| m.starts_with("com.sun.tools.javac."))
        })
    });
    assert!(timed_javac, "javac's own methods were not timed");
}

#[test]
fn javac_compiling_the_jdk_compiler_module_writes_the_same_class_files_under_cpu_times() {
    let Some(sources) = common::jdk_compiler_sources("cpu-times-jdk-compiler") else {
        return;
    };
    let plain = sources.compile("plain", None);
    let timed = sources.compile("timed", Some("cpu=times,verbose=n"));
    let compared = common::assert_same_files(&plain, &timed);
    assert!(compared > 1000, "only {compared} class files compared");
}

#[test]
fn deep_traces_of_many_paths_fit_a_small_heap() {
    common::on_each(&common::jdks(), |jdk| {
        let label = &jdk.label;
        // 8192 paths of 40 frames: at depth=200 every one is a trace of its
        // own. Traces used to cost depth x 8 bytes each (the run thrashed
        // the 32 MB heap for minutes); now a few bytes whatever the depth.
        let (dir, stdout) = run_timed(
            jdk,
            &format!("cpu-times-paths-{label}"),
            &["-Xmx32m"],
            "cpu=times,timing=calls,depth=200,cutoff=0",
            "Paths",
        );
        assert!(stdout.contains("counter=8192"), "{label}: {stdout}");
        let section = cpu_time_section(&dir.join("java.hprof.txt"), label);
        assert_eq!(
            calls_per_method(&section).get("Paths.leaf"),
            Some(&8192),
            "{label}: leaf()"
        );
        let leaf_traces = section
            .rows
            .iter()
            .filter(|r| r.method.as_deref() == Some("Paths.leaf"))
            .count();
        assert_eq!(leaf_traces, 8192, "{label}: one trace per path");
    });
}

#[test]
fn an_error_inside_the_tracker_stops_timing_but_never_reaches_the_program() {
    common::on_each(&common::jdks(), |jdk| {
        let label = &jdk.label;
        let dir = common::scratch_dir(&format!("cpu-times-heap-full-{label}"));
        let mut cmd = common::java_command(jdk, &dir);
        cmd.arg("-Xmx32m")
            .arg(common::agentpath_arg("cpu=times,timing=calls,verbose=n"))
            .arg("TimedHeapFull");
        let out = common::run(&mut cmd);
        // Alone, the program succeeds; the Tracker's OutOfMemoryError used
        // to escape into it (or the JVM thrashed past the timeout).
        common::assert_success(&out, &format!("TimedHeapFull under cpu=times on {label}"));
        assert!(
            common::stdout_text(&out).contains("pieces>0=true counter=8192"),
            "{label}: {}",
            common::describe(&out)
        );
        let stderr = common::stderr_text(&out);
        let errors: Vec<&str> = stderr
            .lines()
            .filter(|l| l.starts_with("HPROF ERROR"))
            .collect();
        assert_eq!(errors.len(), 1, "{label}: one error line: {stderr}");
        assert!(
            errors[0].contains("cpu=times stopped timing a thread")
                && errors[0].contains("OutOfMemoryError"),
            "{label}: {}",
            errors[0]
        );
        cpu_time_section(&dir.join("java.hprof.txt"), label);
    });
}

#[test]
fn many_short_lived_threads_fit_a_small_heap_and_keep_exact_counts() {
    common::on_each(&common::jdks(), |jdk| {
        let label = &jdk.label;
        let mut kinds = vec!["platform"];
        if jdk.major >= 21 {
            kinds.push("virtual");
        }
        for kind in kinds {
            // 20,000 threads: each used to keep about 11.5 KB of timing
            // state to the end (OutOfMemoryError at 48 MB); a finished
            // thread's counts are now folded and its state dropped.
            let dir = common::scratch_dir(&format!("cpu-times-threads-{kind}-{label}"));
            let mut cmd = common::java_command(jdk, &dir);
            cmd.arg("-Xmx48m")
                .arg(common::agentpath_arg(
                    "cpu=times,timing=calls,cutoff=0,verbose=n",
                ))
                .arg("ManyThreads")
                .arg(kind);
            let out = common::run(&mut cmd);
            let what = format!("ManyThreads {kind} under cpu=times on {label}");
            common::assert_success(&out, &what);
            assert!(
                common::stdout_text(&out).contains("calls=200000"),
                "{what}: {}",
                common::describe(&out)
            );
            assert!(
                !common::stderr_text(&out).contains("HPROF ERROR"),
                "{what}: {}",
                common::describe(&out)
            );
            let section = cpu_time_section(&dir.join("java.hprof.txt"), label);
            let calls = calls_per_method(&section);
            assert_eq!(calls.get("ManyThreads.work"), Some(&200_000), "{what}");
            assert_eq!(calls.get("ManyThreads.task"), Some(&20_000), "{what}");
        }
    });
}
