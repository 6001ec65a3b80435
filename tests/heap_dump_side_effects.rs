//! What heap=dump does to the program besides dumping it, on every JDK of
//! the matrix: it loads no class the program would not load (nothing is
//! prepared at start-up, and the dump itself runs no Java code), and a dump
//! that fails says so in one line, not as the program's exception.

mod common;

use common::{AsciiProfile, Jdk};
use hprof_rs::format::ascii::Section;
use hprof_rs::format::binary::{self, RecordBody};
use std::collections::BTreeSet;
use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// The classes `Hello` loads with the agent's `options` (none when empty),
/// from `-Xlog:class+load`; panics unless it ran as without the agent.
fn classes_loaded(jdk: &Jdk, dir: &Path, name: &str, options: &str) -> BTreeSet<String> {
    let log = dir.join(format!("{name}.classes"));
    let mut cmd = common::java_command(jdk, dir);
    cmd.arg(format!("-Xlog:class+load=info:file={}", log.display()));
    if !options.is_empty() {
        cmd.arg(common::agentpath_arg(options));
    }
    cmd.arg("Hello");
    let what = format!("Hello ({name}) on {}", jdk.label);
    let out = common::run(&mut cmd);
    common::assert_success(&out, &what);
    assert_eq!(
        common::stdout_text(&out),
        "Hello, hprof\n",
        "{what}: stdout"
    );
    let text = fs::read_to_string(&log)
        .unwrap_or_else(|e| panic!("{what}: cannot read {}: {e}", log.display()));
    // `[0.012s][info][class,load] java.lang.Object source: shared objects file`
    let classes: BTreeSet<String> = text
        .lines()
        .filter_map(|line| line.split_whitespace().nth(1))
        .map(str::to_owned)
        .collect();
    assert!(
        classes.contains("Hello"),
        "{what}: no Hello in the class-load log"
    );
    classes
}

/// How many SITES sections and heap dumps the file at `path` holds, in
/// format `format` (`a` or `b`).
fn sections_of(path: &Path, format: &str) -> (usize, usize) {
    if format == "a" {
        let profile = AsciiProfile::read(path);
        (
            profile.count(|s| matches!(s, Section::Sites(_))),
            profile.count(|s| matches!(s, Section::HeapDump(_))),
        )
    } else {
        let bytes =
            fs::read(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        let file = binary::reader::parse(&bytes)
            .unwrap_or_else(|e| panic!("{} is malformed: {e}", path.display()));
        let count = |f: fn(&RecordBody) -> bool| file.records.iter().filter(|r| f(&r.body)).count();
        (
            count(|b| matches!(b, RecordBody::AllocSites { .. })),
            count(|b| matches!(b, RecordBody::HeapDumpEnd)),
        )
    }
}

/// Classes the JDK's own threads load the first time they wait on a
/// lock's condition (JDK 21's reference queues wait that way): whether the
/// Common-Cleaner gets to wait before the JVM ends depends on how long the
/// run lasts (an exit dump makes it longer), not on the agent's code.
const WAITING_LOADS: &[&str] = &[
    "java.util.concurrent.ForkJoinPool$ManagedBlocker",
    "java.util.concurrent.locks.AbstractQueuedSynchronizer$ConditionNode",
];

/// heap=dump, dumping at exit, loads exactly the classes the program loads
/// without the agent: nothing for a dump is prepared at start-up, and the
/// dump reaches the JVM's dumper without Java code. Through the
/// HotSpotDiagnostic MXBean (`X=0x8000`, the fallback and what earlier
/// versions did), the dump at exit loaded the platform MXBean machinery:
/// 273-349 classes more (JDK 11 to 25), which the check below tells apart.
#[test]
fn heap_dump_loads_no_class_the_program_does_not() {
    common::on_each(&common::jdks(), |jdk| {
        let dir = common::scratch_dir(&format!("heap-dump-classes-{}", jdk.label));
        let alone = classes_loaded(jdk, &dir, "alone", "");
        let dumped = classes_loaded(jdk, &dir, "dump", "heap=dump,file=dump.txt");
        assert_eq!(
            sections_of(&dir.join("dump.txt"), "a"),
            (0, 1),
            "{}: heap=dump's SITES sections and heap dumps",
            jdk.label
        );
        let timing_dependent = |class: &&String| !WAITING_LOADS.contains(&class.as_str());
        let extra: Vec<_> = dumped.difference(&alone).filter(timing_dependent).collect();
        let missing: Vec<_> = alone.difference(&dumped).filter(timing_dependent).collect();
        assert!(
            extra.is_empty() && missing.is_empty(),
            "{}: heap=dump loaded {} classes more ({:?}) and {} fewer ({:?}) than no agent",
            jdk.label,
            extra.len(),
            &extra[..extra.len().min(10)],
            missing.len(),
            &missing[..missing.len().min(10)]
        );

        let through_bean = classes_loaded(jdk, &dir, "bean", "heap=dump,file=bean.txt,X=0x8000");
        let bean_extra = through_bean.difference(&alone).count();
        assert!(
            through_bean.contains("sun.management.VMManagementImpl") && bean_extra > 100,
            "{}: the MXBean route should load the management machinery ({bean_extra} classes more)",
            jdk.label
        );
        eprintln!(
            "{}: {} classes with or without heap=dump; {bean_extra} more through the MXBean",
            jdk.label,
            alone.len()
        );
    });
}

/// A heap dump that cannot be written (its temporary file's name, in the
/// run's private directory, is taken by a directory, made once the program
/// runs and its pid is known; root ignores directory permissions, so a
/// read-only folder would not do): with heap=all, in ASCII and binary,
/// stderr holds exactly one `HPROF ERROR:` line, naming the temporary file and the JVM's reason, and no
/// Java exception; the program prints and exits as it would; the output
/// still parses, with its allocation sites. Before, the JVM's IOException
/// was printed as `Exception in thread "DestroyJavaVM" java.io.IOException:
/// File exists` (with JDK frames through the MXBean) and the error line
/// named no file.
#[test]
fn failed_heap_dump_says_so_in_one_line() {
    common::on_each(&common::jdks(), |jdk| {
        for format in ["a", "b"] {
            let what = format!(
                "heap=all,format={format}, temp file taken, on {}",
                jdk.label
            );
            let dir = common::scratch_dir(&format!("heap-dump-fails-{format}-{}", jdk.label));
            let mut cmd = common::java_command(jdk, &dir);
            cmd.arg(common::agentpath_arg(&format!(
                "heap=all,format={format},file=out.hprof"
            )))
            .args(["HeapGraph", "2"]);
            let mut program = common::Spawned::spawn(&mut cmd);
            program.wait_for_line("READY", Duration::from_secs(60));
            // The JVM's dump goes to heap.hprof in the run's private
            // directory; a directory in its place makes the dump fail.
            let prefix = format!("out.hprof.{}.TMP-", program.pid());
            let private = fs::read_dir(&dir)
                .unwrap()
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .find(|name| name.starts_with(&prefix))
                .unwrap_or_else(|| panic!("{what}: no private directory {prefix}*"));
            let temp = format!("{private}/heap.hprof");
            fs::create_dir(dir.join(&temp)).unwrap_or_else(|e| panic!("{what}: mkdir {temp}: {e}"));
            let out = program.wait_timeout(Duration::from_secs(60));

            common::assert_success(&out, &what);
            let stdout = common::stdout_text(&out);
            let lines: Vec<&str> = stdout.lines().collect();
            assert!(
                lines.len() == 3
                    && lines[0].starts_with("vm.info=")
                    && lines[1..] == ["READY", "DONE"],
                "{what}: stdout {stdout:?}"
            );
            let stderr = common::stderr_text(&out);
            let errors: Vec<&str> = stderr
                .lines()
                .filter(|l| l.contains("HPROF ERROR"))
                .collect();
            assert_eq!(errors.len(), 1, "{what}: HPROF ERROR lines\n{stderr}");
            assert!(
                errors[0].starts_with("HPROF ERROR: cannot dump the heap to ")
                    && errors[0].contains(&temp)
                    && errors[0].contains("File exists"),
                "{what}: the error line should name {temp} and the reason: {:?}",
                errors[0]
            );
            assert!(
                !stderr.contains("Exception") && !stderr.contains("\tat "),
                "{what}: a Java exception on stderr\n{stderr}"
            );

            let output = dir.join("out.hprof");
            let printed = common::run(
                Command::new(common::hprof_rs_bin())
                    .arg("print")
                    .arg(&output),
            );
            common::assert_success(&printed, &format!("{what}: hprof-rs print"));
            let (sites, dumps) = sections_of(&output, format);
            assert!(
                sites == 1 && dumps == 0,
                "{what}: the output should hold one SITES section and no heap dump \
                 ({sites} and {dumps})"
            );
        }
    });
}
