//! What heap=sites' class rewriting may change in the program, and what it
//! must still count: the field it adds to `java.lang.Thread` (hidden from
//! the public API), class data sharing required by the command line, other
//! agents that retransform the same classes, and methods too large to
//! rewrite.

mod common;

use common::{AsciiProfile, Jdk};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Runs `main args` with the agent's `options` (none: no agent) and JVM
/// options `jvm_args` on `jdk` in `dir`.
fn run_java(
    jdk: &Jdk,
    dir: &Path,
    jvm_args: &[&str],
    options: Option<&str>,
    main: &str,
    args: &[&str],
) -> Output {
    let mut cmd = common::java_command(jdk, dir);
    cmd.args(jvm_args);
    if let Some(options) = options {
        cmd.arg(common::agentpath_arg(options));
    }
    cmd.arg(main).args(args);
    let out = common::run(&mut cmd);
    common::assert_success(
        &out,
        &format!("{main} {jvm_args:?} with {options:?} on {}", jdk.label),
    );
    out
}

/// The calling contexts' field (`alloc_count=bytecode`, which rewrites the
/// classes loaded before VM init as they load): one declared field more,
/// out of the program's reach; the default leaves java.lang.Thread as it is.
#[test]
fn the_context_field_leaves_threads_public_fields_as_they_were() {
    common::on_each(&common::jdks(), |jdk| {
        let label = &jdk.label;
        let dir = common::scratch_dir(&format!("thread-fields-{label}"));
        let plain = common::stdout_text(&run_java(jdk, &dir, &[], None, "ThreadFields", &[]));
        let number = |text: &str, name: &str| common::printed::<usize>(text, name);
        let by_default = run_java(jdk, &dir, &[], Some("heap=sites"), "ThreadFields", &[]);
        let by_default = common::stdout_text(&by_default);
        assert_eq!(
            number(&by_default, "declared_fields"),
            number(&plain, "declared_fields"),
            "{label}: the default's Thread: {by_default}"
        );
        let options = Some("heap=sites,alloc_count=bytecode");
        let profiled = run_java(jdk, &dir, &[], options, "ThreadFields", &[]);
        let stdout = common::stdout_text(&profiled);
        assert_eq!(
            number(&stdout, "public_fields"),
            number(&plain, "public_fields"),
            "{label}: Thread.class.getFields() with and without the agent"
        );
        // One declared field more: package-private, synthetic, and out of
        // the program's reach.
        assert_eq!(
            number(&stdout, "declared_fields"),
            number(&plain, "declared_fields") + 1,
            "{label}: {stdout}"
        );
        assert_eq!(number(&stdout, "agent_fields"), 1, "{label}: {stdout}");
        for (name, expected) in [
            ("agent_field_public", false),
            ("agent_field_synthetic", true),
            ("agent_field_writable", false),
        ] {
            assert_eq!(
                common::printed::<bool>(&stdout, name),
                expected,
                "{label}: {name}"
            );
        }
        // Calling contexts still work through the field: the site's trace
        // names its caller.
        assert!(
            !common::stderr_text(&profiled).contains("HPROF ERROR"),
            "{label}: {}",
            common::stderr_text(&profiled)
        );
        let profile = AsciiProfile::read(&dir.join("java.hprof.txt"));
        let rows = profile.sites_of_class_via("int[]", "ThreadFields.make");
        assert_eq!(common::site_totals(&rows).0, 1000, "{label}: int[] made");
        let frames = profile.frames(rows[0].trace_serial);
        assert!(
            frames
                .get(1)
                .is_some_and(|f| f.contains("ThreadFields.main")),
            "{label}: the trace of ThreadFields.make's site: {frames:?}"
        );
    });
}

/// AllocSites' known counts: its 10,000 items (4,000 kept) and 1,000
/// clones (all kept), the clones' site found through `cloned_frame`.
fn assert_known_counts(profile: &AsciiProfile, cloned_frame: &str, what: &str) {
    for (class, frame, size, made, live) in [
        ("AllocSites$Item", "AllocSites.makeItem", 24, 10_000, 4_000),
        ("AllocSites$Cloned", cloned_frame, 16, 1_000, 1_000),
    ] {
        let rows = profile.sites_of_class_via(class, frame);
        assert_eq!(
            common::site_totals(&rows),
            (made, live, made * size, live * size),
            "{what}: {class} at {frame}"
        );
    }
}

#[test]
fn heap_sites_starts_under_required_sharing_and_counts_exactly() {
    common::on_each(&common::jdks(), |jdk| {
        let label = &jdk.label;
        for (name, jvm_args) in [
            ("share-on", &["-Xshare:on"][..]),
            (
                "share-on-verified",
                &["-Xshare:on", "-XX:+VerifySharedSpaces"][..],
            ),
        ] {
            // Calling contexts need the field, and are refused, which is said;
            // by default (alloc_count=sites) the traces come from the live
            // sample, which needs none; depth=1 wants no context (the JVM
            // refused to start beside it: the early hook was still asked for).
            for (run, (options, contexts)) in [
                ("heap=sites,alloc_count=bytecode", true),
                ("heap=sites", false),
                ("heap=sites,depth=1", false),
            ]
            .into_iter()
            .enumerate()
            {
                let dir = common::scratch_dir(&format!("{name}-{run}-{label}"));
                // (The JVM refused to start here, its archive unusable beside
                // an early ClassFileLoadHook.)
                let out = run_java(jdk, &dir, jvm_args, Some(options), "AllocSites", &[]);
                let stderr = common::stderr_text(&out);
                assert_eq!(
                    stderr.contains("-Xshare:on keeps java.lang.Thread from the shared archive"),
                    contexts,
                    "{label} {jvm_args:?} {options}: the shallower traces are said: {stderr}"
                );
                assert!(!stderr.contains("HPROF ERROR"), "{label}: {stderr}");
                let profile = AsciiProfile::read(&dir.join("java.hprof.txt"));
                // (Made by the VM: its trace starts at the maker.)
                let what = format!("{label} {jvm_args:?} {options}");
                assert_known_counts(&profile, "java.lang.Object.clone", &what);
            }
        }
    });
}

/// A jar of `main_class` (classes `entries` in `classes`), with a manifest
/// that makes it an agent allowed to retransform and redefine, its other
/// jars in `class_path`.
fn agent_jar(
    dir: &Path,
    classes: &Path,
    main_class: &str,
    entries: &[&str],
    class_path: &str,
) -> PathBuf {
    let manifest = dir.join("manifest.txt");
    let mut text = format!(
        "Premain-Class: {main_class}\nCan-Retransform-Classes: true\nCan-Redefine-Classes: true\n"
    );
    if !class_path.is_empty() {
        text.push_str(&format!("Class-Path: {class_path}\n"));
    }
    std::fs::write(&manifest, text).unwrap();
    let jar = dir.join(format!("{main_class}.jar"));
    let mut cmd = Command::new(Path::new(common::DEBIAN_JDK_HOME).join("bin/jar"));
    cmd.arg("cfm").arg(&jar).arg(&manifest);
    for entry in entries {
        cmd.arg("-C").arg(classes).arg(entry);
    }
    common::assert_success(&common::run(&mut cmd), &format!("jar of {main_class}"));
    jar
}

/// Runs AllocSites under heap=sites beside the java agent `javaagent`
/// (before or after it on the command line), which prints `started`, with
/// JVM options `jvm_args`; checks that nothing failed and that known sites'
/// counts are exact, with their callers in their traces.
fn counts_beside(
    jdk: &Jdk,
    test: &str,
    javaagent: &str,
    (first, jvm_args): (bool, &[&str]),
    started: &str,
) {
    let dir = common::scratch_dir(&format!("{test}-{}", jdk.label));
    let mut cmd = common::java_command(jdk, &dir);
    cmd.args(jvm_args);
    // (Byte Buddy takes class files of JDK 25 only so.)
    cmd.arg("-Dnet.bytebuddy.experimental=true");
    if first {
        cmd.arg(javaagent);
    }
    cmd.arg(common::agentpath_arg("heap=sites"));
    if !first {
        cmd.arg(javaagent);
    }
    cmd.arg("AllocSites");
    let out = common::run(&mut cmd);
    let what = format!("{} {test}", jdk.label);
    common::assert_success(&out, &what);
    let stdout = common::stdout_text(&out);
    let stderr = common::stderr_text(&out);
    assert!(stdout.contains(started), "{what}: {stdout}");
    assert!(
        !stderr.contains("HPROF ERROR") && !stderr.contains("ASSERTION"),
        "{what}: {stderr}"
    );
    let profile = AsciiProfile::read(&dir.join("java.hprof.txt"));
    assert_known_counts(&profile, "AllocSites$Cloned.copy", &what);
    // Calling contexts held: the site's caller is in its trace.
    let item = profile.sites_of_class_via("AllocSites$Item", "AllocSites.makeItem")[0];
    let frames = profile.frames(item.trace_serial);
    assert!(
        frames.iter().any(|f| f == "AllocSites.main"),
        "{what}: {frames:?}"
    );
}

/// TLABs of 32 KiB that keep their size (AllocSites' arrays of 40 KB never
/// fit in what is left of one).
const SMALL_TLABS: [&str; 2] = ["-XX:TLABSize=32k", "-XX:-ResizeTLAB"];

#[test]
fn an_agent_that_retransforms_and_redefines_thread_leaves_counts_exact() {
    let jar_dir = common::scratch_dir("retransforming-agent-jar");
    let classes = common::fixtures_classpath();
    let entries = ["RetransformingAgent.class", "RetransformingAgent$1.class"];
    let jar = agent_jar(&jar_dir, &classes, "RetransformingAgent", &entries, "");
    let javaagent = format!("-javaagent:{}=AllocSites", jar.display());
    common::on_each(&common::jdks(), |jdk| {
        // The other agent's retransformation before this one's (the JVM then
        // handed Thread's class file for other classes: NAMES_DONT_MATCH on
        // JDK 11 and 17, libinstrument's "can't create byte array" on 21,
        // crashes on 25, four runs in six), three times, and after it.
        let changed = "agent changed 2 classes";
        for run in 0..3 {
            let test = format!("retransformed-first-{run}");
            counts_beside(jdk, &test, &javaagent, (true, &[]), changed);
        }
        // AllocSites, loaded before VM init, is counted from the events of
        // every object until the hand-over: small TLABs of one size put one
        // of its 40 KB arrays outside the main thread's, after which JDK 11
        // reported none of the allocations that fit in that TLAB (9,984
        // Items of 10,000 in every run; with the JVM's sizes, in about 3
        // runs of 40: heap_sites/outside_tlab.rs).
        let small_tlabs = (true, SMALL_TLABS.as_slice());
        counts_beside(
            jdk,
            "retransformed-first-small-tlabs",
            &javaagent,
            small_tlabs,
            changed,
        );
        counts_beside(
            jdk,
            "retransformed-after",
            &javaagent,
            (false, &[]),
            changed,
        );
    });
}

const BYTE_BUDDY_JAR: &str = "/usr/share/java/byte-buddy.jar";

/// The jar of `tests/support/bytebuddy/ByteBuddyAgent.java`, built in
/// `dir`; None (said) when Byte Buddy is not installed, outside strict runs.
fn byte_buddy_agent_jar(dir: &str) -> Option<PathBuf> {
    if !Path::new(BYTE_BUDDY_JAR).exists() {
        assert!(
            !common::strict(),
            "{BYTE_BUDDY_JAR} is missing: run scripts/setup.sh"
        );
        eprintln!("skipped: {BYTE_BUDDY_JAR} is missing (scripts/setup.sh installs it)");
        return None;
    }
    let dir = common::scratch_dir(dir);
    let source = common::repo_root().join("tests/support/bytebuddy/ByteBuddyAgent.java");
    let mut javac = Command::new(common::javac());
    javac
        .args(["--release", "11", "-cp", BYTE_BUDDY_JAR, "-d"])
        .arg(&dir)
        .arg(&source);
    common::assert_success(&common::run(&mut javac), "javac ByteBuddyAgent");
    let entries = ["ByteBuddyAgent.class", "ByteBuddyAgent$Entered.class"];
    Some(agent_jar(
        &dir,
        &dir,
        "ByteBuddyAgent",
        &entries,
        BYTE_BUDDY_JAR,
    ))
}

#[test]
fn a_byte_buddy_agent_over_thread_leaves_counts_exact() {
    let Some(jar) = byte_buddy_agent_jar("byte-buddy-agent-jar") else {
        return;
    };
    let javaagent = format!("-javaagent:{}=AllocSites", jar.display());
    common::on_each(&common::jdks(), |jdk| {
        for (test, first) in [("byte-buddy-first", true), ("byte-buddy-after", false)] {
            counts_beside(
                jdk,
                test,
                &javaagent,
                (first, &[]),
                "byte buddy agent installed",
            );
        }
    });
}

/// MethodRefAlloc's 40,000 objects, made by the `new` of a constructor
/// reference's hidden class, counted exactly by default without a java
/// agent and beside one that changes nothing, one that retransforms (the
/// program's class among others) and Byte Buddy's, each before and after
/// this agent on the command line. A java agent makes the JVM build its
/// module graph before VM init, with lambdas: the JDK's class generators
/// are loaded then, and a hidden class they make can be counted only if
/// they are rewritten by the time it is made (before: no row for the class
/// at all beside any java agent, on JDK 11 to 25).
#[test]
fn a_constructor_references_objects_are_counted_beside_java_agents() {
    let classes = common::fixtures_classpath();
    let jar_dir = common::scratch_dir("method-ref-agent-jars");
    let no_op = agent_jar(
        &jar_dir,
        &classes,
        "ClassBytesAgent",
        &["ClassBytesAgent.class", "ClassBytesAgent$1.class"],
        "",
    );
    let retransforming = agent_jar(
        &jar_dir,
        &classes,
        "RetransformingAgent",
        &["RetransformingAgent.class", "RetransformingAgent$1.class"],
        "",
    );
    // (ClassBytesAgent's argument is a prefix no class has: it reports
    // nothing and hands every class back unchanged.)
    let mut agents = vec![
        (
            "no-op",
            format!("-javaagent:{}=no/such/prefix/", no_op.display()),
            None,
        ),
        (
            "retransforming",
            format!("-javaagent:{}=MethodRefAlloc", retransforming.display()),
            Some("agent changed 2 classes"),
        ),
    ];
    if let Some(jar) = byte_buddy_agent_jar("method-ref-byte-buddy-jar") {
        agents.push((
            "byte-buddy",
            format!("-javaagent:{}=MethodRefAlloc", jar.display()),
            Some("byte buddy agent installed"),
        ));
    }
    common::on_each(&common::jdks(), |jdk| {
        let label = &jdk.label;
        let mut runs = vec![("alone".to_owned(), None, true)];
        for (name, javaagent, _) in &agents {
            runs.push((format!("{name}-first"), Some(javaagent), true));
            runs.push((format!("{name}-after"), Some(javaagent), false));
        }
        for (run, javaagent, first) in runs {
            let what = format!("{label} {run}");
            let dir = common::scratch_dir(&format!("method-ref-{run}-{label}"));
            let mut cmd = common::java_command(jdk, &dir);
            // (Byte Buddy takes class files of JDK 25 only so.)
            cmd.arg("-Dnet.bytebuddy.experimental=true");
            let profiler = common::agentpath_arg("heap=sites");
            match (javaagent, first) {
                (None, _) => cmd.arg(profiler),
                (Some(agent), true) => cmd.arg(agent).arg(profiler),
                (Some(agent), false) => cmd.arg(profiler).arg(agent),
            };
            cmd.arg("MethodRefAlloc");
            let out = common::run(&mut cmd);
            common::assert_success(&out, &what);
            let stdout = common::stdout_text(&out);
            assert!(stdout.contains("made 40000"), "{what}: {stdout}");
            let started = agents
                .iter()
                .find(|(_, agent, _)| Some(agent) == javaagent)
                .and_then(|(_, _, started)| *started);
            if let Some(started) = started {
                assert!(stdout.contains(started), "{what}: {stdout}");
            }
            let stderr = common::stderr_text(&out);
            assert!(!stderr.contains("HPROF ERROR"), "{what}: {stderr}");
            let profile = AsciiProfile::read(&dir.join("java.hprof.txt"));
            let rows = profile.sites_of_class("MethodRefAlloc$Made");
            assert_eq!(
                common::site_totals(&rows),
                (40_000, 40_000, 40_000 * 16, 40_000 * 16),
                "{what}: MethodRefAlloc$Made's rows {rows:?}"
            );
        }
    });
}

/// A class with two generated methods that each make one `Item` per line
/// and pass it to a call: `make()` 1,500 of them (about 24 KB of byte
/// code), `makeHuge()` 3,000 (about 48 KB, which counting code would take
/// past the JVM's 64 KiB limit). `main` calls `make()` ten times and
/// `makeHuge()` once.
fn big_method_source() -> String {
    let mut source = String::from(
        "public class BigMethod {\n    static Object sink;\n\
         \x20   static final class Item { final int a, b; Item(int a, int b) { this.a = a; this.b = b; } }\n\
         \x20   static void keep(Object o) { sink = o; }\n",
    );
    for (method, items) in [("make", 1_500), ("makeHuge", 3_000)] {
        source.push_str(&format!("    static void {method}() {{\n"));
        for k in 0..items {
            source.push_str(&format!(
                "        keep(new Item({}, {}));\n",
                1000 + k,
                2000 + k
            ));
        }
        source.push_str("    }\n");
    }
    source.push_str(
        "    public static void main(String[] args) {\n\
         \x20       for (int i = 0; i < 10; i++) make();\n\
         \x20       makeHuge();\n    }\n}\n",
    );
    source
}

#[test]
fn a_large_method_is_counted_and_one_too_large_is_named() {
    let classes = common::scratch_dir("big-method-classes");
    let source = classes.join("BigMethod.java");
    std::fs::write(&source, big_method_source()).unwrap();
    let mut javac = Command::new(common::javac());
    javac
        .args(["--release", "11", "-d"])
        .arg(&classes)
        .arg(&source);
    common::assert_success(&common::run(&mut javac), "javac BigMethod");
    common::on_each(&common::jdks(), |jdk| {
        let label = &jdk.label;
        let dir = common::scratch_dir(&format!("big-method-{label}"));
        let mut cmd = common::java_command(jdk, &dir);
        cmd.arg(common::agentpath_arg("heap=sites,cutoff=0"))
            .arg("-cp")
            .arg(&classes)
            .arg("BigMethod");
        let out = common::run(&mut cmd);
        common::assert_success(&out, &format!("BigMethod on {label}"));
        let profile = AsciiProfile::read(&dir.join("java.hprof.txt"));
        // (Before: none of the 15,000, and nothing said.)
        let made = profile.sites_of_class_via("BigMethod$Item", "BigMethod.make");
        assert_eq!(
            common::site_totals(&made).0,
            15_000,
            "{label}: Items made in make()"
        );
        let stderr = common::stderr_text(&out);
        let named: Vec<&str> = stderr
            .lines()
            .filter(|l| l.contains("cannot count the allocations of"))
            .collect();
        assert_eq!(named.len(), 1, "{label}: {stderr}");
        assert!(
            named[0].contains("BigMethod.makeHuge()V"),
            "{label}: {stderr}"
        );
    });
}
