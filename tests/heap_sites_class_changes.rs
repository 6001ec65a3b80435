//! What heap=sites' class rewriting may change in the program, and what it
//! must still count: the field it adds to `java.lang.Thread` (hidden from
//! the public API), class data sharing required by the command line, other
//! agents that retransform the same classes, and methods too large to
//! rewrite.

mod common;

use common::{AsciiProfile, Jdk};
use std::process::Output;

/// Runs `main args` with the agent's `options` (none: no agent) and JVM
/// options `jvm_args` on `jdk` in `dir`.
fn run_java(
    jdk: &Jdk,
    dir: &std::path::Path,
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

#[test]
fn the_context_field_leaves_threads_public_fields_as_they_were() {
    common::on_each(&common::jdks(), |jdk| {
        let label = &jdk.label;
        let dir = common::scratch_dir(&format!("thread-fields-{label}"));
        let plain = common::stdout_text(&run_java(jdk, &dir, &[], None, "ThreadFields", &[]));
        let profiled = run_java(jdk, &dir, &[], Some("heap=sites"), "ThreadFields", &[]);
        let stdout = common::stdout_text(&profiled);
        let number = |text: &str, name: &str| common::printed::<usize>(text, name);
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
            let dir = common::scratch_dir(&format!("{name}-{label}"));
            // (The JVM refused to start here, its archive unusable beside an
            // early ClassFileLoadHook.)
            let out = run_java(jdk, &dir, jvm_args, Some("heap=sites"), "AllocSites", &[]);
            let stderr = common::stderr_text(&out);
            assert!(
                stderr.contains("-Xshare:on keeps java.lang.Thread from the shared archive"),
                "{label} {jvm_args:?}: the shallower traces are said: {stderr}"
            );
            assert!(!stderr.contains("HPROF ERROR"), "{label}: {stderr}");
            let profile = AsciiProfile::read(&dir.join("java.hprof.txt"));
            for (class, frame, size, made, live) in [
                ("AllocSites$Item", "AllocSites.makeItem", 24, 10_000, 4_000),
                // (Made by the VM: its trace stops at the maker.)
                (
                    "AllocSites$Cloned",
                    "java.lang.Object.clone",
                    16,
                    1_000,
                    1_000,
                ),
            ] {
                let rows = profile.sites_of_class_via(class, frame);
                assert_eq!(
                    common::site_totals(&rows),
                    (made, live, made * size, live * size),
                    "{label} {jvm_args:?}: {class} at {frame}"
                );
            }
        }
    });
}
