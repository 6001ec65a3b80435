//! What heap=dump does to the program besides dumping it, on every JDK of
//! the matrix: it loads no class the program would not load (nothing is
//! prepared at start-up, and the dump itself runs no Java code).

mod common;

use common::Jdk;
use hprof_rs::format::ascii::{self, Section};
use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

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

/// Panics unless `path` is an ASCII file with one HEAP DUMP section.
fn assert_heap_dump(path: &Path, what: &str) {
    let bytes =
        fs::read(path).unwrap_or_else(|e| panic!("{what}: cannot read {}: {e}", path.display()));
    let sections =
        ascii::reader::parse(&bytes).unwrap_or_else(|e| panic!("{what}: malformed output: {e}"));
    let dumps = sections
        .iter()
        .filter(|s| matches!(s, Section::HeapDump(_)))
        .count();
    assert_eq!(dumps, 1, "{what}: HEAP DUMP sections");
}

/// heap=dump, dumping at exit, loads exactly the classes the program loads
/// without the agent: nothing for a dump is prepared at start-up, and the
/// dump reaches the JVM's dumper without Java code. Through the
/// HotSpotDiagnostic MXBean (`X=0x8000`, the fallback and what earlier
/// versions did), the dump at exit loaded the platform MXBean machinery:
/// 273-349 classes more (JDK 11 to 25), which the check below tells apart.
#[test]
fn heap_dump_loads_no_class_the_program_does_not() {
    for jdk in common::jdks() {
        let dir = common::scratch_dir(&format!("heap-dump-classes-{}", jdk.label));
        let alone = classes_loaded(&jdk, &dir, "alone", "");
        let dumped = classes_loaded(&jdk, &dir, "dump", "heap=dump,file=dump.txt");
        assert_heap_dump(
            &dir.join("dump.txt"),
            &format!("heap=dump on {}", jdk.label),
        );
        let extra: Vec<_> = dumped.difference(&alone).collect();
        let missing: Vec<_> = alone.difference(&dumped).collect();
        assert!(
            extra.is_empty() && missing.is_empty(),
            "{}: heap=dump loaded {} classes more ({:?}) and {} fewer ({:?}) than no agent",
            jdk.label,
            extra.len(),
            &extra[..extra.len().min(10)],
            missing.len(),
            &missing[..missing.len().min(10)]
        );

        let through_bean = classes_loaded(&jdk, &dir, "bean", "heap=dump,file=bean.txt,X=0x8000");
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
    }
}
