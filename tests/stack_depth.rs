//! How deep a recursion gets under each mode, against the same program
//! without the agent, on JDK 11, 17, 21 and 25: on the main thread
//! (java-fixtures/MainDepth.java) and on a fresh 1 MiB thread
//! (java-fixtures/StackDepth.java), one `new` and two calls per level.
//!
//! The modes that rewrite code (cpu=times, the default heap=sites) make
//! frames larger, so a thread the program starts gets three times its
//! stack under heap=sites and ten times under cpu=times
//! (src/agent/jvm/thread_stacks.rs): every mode reaches at least 95% of the
//! levels it reaches without the agent, interpreted and compiled (more,
//! since the agent cannot size the stack to each frame). A warmed-up
//! recursion on threads the program made with 512 KiB
//! (java-fixtures/CompiledDepth.java) does too under cpu=times, run by
//! run, without `-Xbatch`. main() keeps the launcher's thread by default,
//! sized before any agent loads; the main-thread tests ask for
//! `main_stack=y`, which runs main() on a thread with that many times its
//! stack (src/agent/jvm/main_stack.rs), and hold it to the same 95%. cpu=samples rewrites nothing and leaves main()
//! on the launcher's thread: within 5% either way. What main() sees of its
//! thread is checked in tests/main_thread.rs.

mod common;

use common::Jdk;

/// The share of levels (percent) every mode keeps.
const KEPT: u64 = 95;

/// The deepest level `main args` reaches on `jdk` with `jvm_args`, under
/// the agent with `options` (`None`: without the agent).
fn deepest(jdk: &Jdk, jvm_args: &[&str], options: Option<&str>, main: &str, args: &[&str]) -> u64 {
    depths(jdk, jvm_args, options, main, args).0
}

/// The deepest level and the shallowest of `main args`' rounds.
fn depths(
    jdk: &Jdk,
    jvm_args: &[&str],
    options: Option<&str>,
    main: &str,
    args: &[&str],
) -> (u64, u64) {
    let label = &jdk.label;
    let flags = jvm_args.concat();
    let dir = common::scratch_dir(&format!(
        "stack-depth-{main}{flags}{}-{label}",
        args.concat()
    ));
    let mut cmd = common::java_command(jdk, &dir);
    cmd.args(jvm_args);
    if let Some(options) = options {
        cmd.arg(common::agentpath_arg(&format!("{options},file=out.txt")));
    }
    cmd.arg(main).args(args);
    let out = common::run(&mut cmd);
    common::assert_success(&out, &format!("{main} on {label} under {options:?}"));
    let printed = common::stdout_text(&out);
    (
        common::printed(&printed, "max"),
        common::printed(&printed, "min"),
    )
}

/// Checks `mode` keeps at least [`KEPT`] of the levels `without` the agent
/// reached; under cpu=samples, which leaves main() on the launcher's
/// thread, also no more than 5% more.
fn assert_main_kept(label: &str, what: &str, mode: &str, with: u64, without: u64) {
    if mode == "cpu=samples" {
        assert!(
            with * 100 <= without * 105,
            "{label}, {what}: {with} levels under {mode}, {without} without the agent \
             (main() stays on the launcher's thread)"
        );
    }
    assert_at_least(label, what, mode, with, without, KEPT);
}

/// Checks `mode` reaches at least `percent` of the levels `without` the
/// agent reached.
fn assert_at_least(label: &str, what: &str, mode: &str, with: u64, without: u64, percent: u64) {
    assert!(
        with * 100 >= without * percent,
        "{label}, {what}: {with} levels under {mode}, {without} without the agent \
         (at least {percent}% expected)"
    );
}

/// The modes measured: cpu=times both from samples (its default) and
/// timing every call.
const MODES: [&str; 4] = [
    "cpu=samples",
    "cpu=times",
    "cpu=times,timing=calls",
    "heap=sites",
];

/// The main thread, interpreted (`-Xint`, the same depths on every JDK).
#[test]
fn interpreted_recursions_keep_their_depth_under_every_mode() {
    common::on_each(&common::jdks_of(&[11, 17, 21, 25]), |jdk| {
        let label = &jdk.label;
        let (main, args, what) = ("MainDepth", [], "the main thread");
        let without = deepest(jdk, &["-Xint"], None, main, &args);
        for mode in MODES {
            let options = format!("{mode},main_stack=y");
            let with = deepest(jdk, &["-Xint"], Some(&options), main, &args);
            assert_main_kept(label, what, mode, with, without);
        }
    });
}

/// Every mode, on a thread the program starts: at least 95% of the levels
/// without the agent, interpreted (`-Xint`, one round) and compiled
/// (`-Xbatch`, four rounds, the first mostly interpreted): the shallowest
/// round under the agent against the deepest without. On JDK 21 and 25
/// also on a virtual thread, whose frames live on its carrier's stack.
#[test]
fn recursions_on_started_threads_keep_their_depth_under_every_mode() {
    common::on_each(&common::jdks_of(&[11, 17, 21, 25]), |jdk| {
        let mut cases: Vec<(&str, &[&str])> =
            vec![("-Xint", &["1", "1024"]), ("-Xbatch", &["4", "1024"])];
        if jdk.major >= 21 {
            cases.push(("-Xint", &["1", "1024", "virtual"]));
            cases.push(("-Xbatch", &["4", "1024", "virtual"]));
        }
        for (flag, args) in cases {
            let what = format!("{}, {flag}", thread_of(args));
            let (without, _) = depths(jdk, &[flag], None, "StackDepth", args);
            for mode in MODES {
                let (_, with) = depths(jdk, &[flag], Some(mode), "StackDepth", args);
                assert_at_least(&jdk.label, &what, mode, with, without, KEPT);
            }
        }
    });
}

/// What StackDepth's `args` recurse on.
fn thread_of(args: &[&str]) -> &'static str {
    if args.contains(&"virtual") {
        "a virtual thread"
    } else {
        "a 1 MiB thread"
    }
}

/// The main thread once C2 compiled the recursion (`-Xbatch`, the best of
/// three deep calls after 30,000 shallow ones). Without the agent C2
/// inlines the recursion into itself (39,349 levels on JDK 17 to 25,
/// 29,511 on JDK 11); the rewritten methods are too large for that, and
/// on the launcher's stack they kept 60-75% of the levels.
#[test]
fn compiled_recursions_on_the_main_thread_keep_their_depth_under_every_mode() {
    common::on_each(&common::jdks_of(&[11, 17, 21, 25]), |jdk| {
        // 30,000 shallow calls first, each compiled before it runs on
        // (-Xbatch): the deep ones run compiled, whatever the machine's load.
        let (jvm, args) = (["-Xbatch"], ["30000"]);
        let without = deepest(jdk, &jvm, None, "MainDepth", &args);
        for mode in MODES {
            let options = format!("{mode},main_stack=y");
            let with = deepest(jdk, &jvm, Some(&options), "MainDepth", &args);
            assert_main_kept(&jdk.label, "the main thread, compiled", mode, with, without);
        }
    });
}

/// Runs of [`compiled_recursions_on_threads_the_program_sized_keep_their_depth_under_cpu_times`]
/// per JDK without `-Xbatch`, each against a run without the agent.
const SIZED_THREAD_RUNS: usize = 5;

/// A warmed-up recursion, compiled, run on threads the program made with a
/// 512 KiB stack (issue #48, item 5; java-fixtures/CompiledDepth.java:
/// 30,000 shallow calls on the main thread, then three rounds, each on a
/// fresh thread, until a StackOverflowError), under cpu=times' default, in
/// every run: five runs per JDK without `-Xbatch`, where the compiler's
/// timing varies from run to run, and one with it, each run's shallowest
/// round under the agent against the deepest round of a run without it
/// just before. Then once with the agent's code kept to C1
/// (`-XX:TieredStopAtLevel=3`) against C2's without it: what a deep call
/// gets when it comes before C2 has compiled the recursion under the agent
/// but after it has without (C2 takes about ten times as long over it
/// under the agent), which the thread's ten times its stack covers
/// (src/agent/jvm/thread_stacks.rs).
///
/// Without the agent C2 inlines the recursion into itself: 13,123 levels on
/// JDK 11, 17,495-17,499 on 17 to 25. Under the agent, before: the first
/// call on each new thread took a way out of the inlined count that C2
/// had compiled as an uncommon trap, and the recursion went on in C1's
/// code, 5,098-12,236 levels with three times the stack (every `-Xbatch`
/// run on JDK 17 to 25, and 15 of 20 runs without it, had such a round).
/// Now (Tracker.prime(), docs/decisions.md 2026-12-07) C2's code, 128,461
/// to 128,465 levels, and C1's 20,072 (JDK 21, 25) to 22,940.
#[test]
fn compiled_recursions_on_threads_the_program_sized_keep_their_depth_under_cpu_times() {
    common::on_each(&common::jdks_of(&[11, 17, 21, 25]), |jdk| {
        let args = ["30000", "512", "3"];
        let mut runs: Vec<(&[&str], &[&str])> = vec![(&[], &[]); SIZED_THREAD_RUNS];
        runs.push((&["-Xbatch"], &["-Xbatch"]));
        runs.push((&[], &["-XX:TieredStopAtLevel=3"]));
        for (run, (without_args, with_args)) in runs.into_iter().enumerate() {
            let what = format!(
                "a 512 KiB thread, compiled, run {}: {without_args:?} against {with_args:?}",
                run + 1
            );
            let (without, _) = depths(jdk, without_args, None, "CompiledDepth", &args);
            let (_, with) = depths(jdk, with_args, Some("cpu=times"), "CompiledDepth", &args);
            assert_at_least(&jdk.label, &what, "cpu=times", with, without, KEPT);
        }
    });
}
