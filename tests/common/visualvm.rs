//! VisualVM's heap library as an independent reader of binary heap dumps:
//! `tests/support/visualvm/HeapCheck.java`, compiled against the Debian
//! package `visualvm`'s jar, opens a dump of `java-fixtures/HeapGraph.java`
//! and checks the values the fixture set and that no reference dangles.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// Overrides where the VisualVM heap library is looked for.
const VISUALVM_JAR_ENV: &str = "HPROF_RS_VISUALVM_HEAP_JAR";
/// The heap library's file name in the Debian package `visualvm`.
const VISUALVM_JAR_NAME: &str = "org-graalvm-visualvm-lib-jfluid-heap.jar";
/// Folders searched for [`VISUALVM_JAR_NAME`] (Debian puts it in
/// `/usr/share/visualvm/visualvm/modules/`).
const VISUALVM_JAR_ROOTS: &[&str] = &[
    "/usr/share/visualvm",
    "/usr/lib/visualvm",
    "/usr/share/java",
];

/// The VisualVM heap library, or `None` (skip) when the package is missing;
/// in the full test run a missing jar is a failure.
fn visualvm_heap_jar() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os(VISUALVM_JAR_ENV) {
        let path = PathBuf::from(path);
        assert!(
            path.is_file(),
            "{VISUALVM_JAR_ENV}={} does not exist",
            path.display()
        );
        return Some(path);
    }
    fn find(dir: &Path, depth: u32) -> Option<PathBuf> {
        let mut entries: Vec<PathBuf> = fs::read_dir(dir)
            .ok()?
            .flatten()
            .map(|e| e.path())
            .collect();
        entries.sort();
        for path in &entries {
            if path.file_name().is_some_and(|n| n == VISUALVM_JAR_NAME) && path.is_file() {
                return Some(path.clone());
            }
        }
        if depth == 0 {
            return None;
        }
        entries
            .iter()
            .filter(|p| p.is_dir())
            .find_map(|p| find(p, depth - 1))
    }
    let found = VISUALVM_JAR_ROOTS
        .iter()
        .find_map(|root| find(Path::new(root), 4));
    if found.is_none() {
        assert!(
            !super::strict(),
            "{VISUALVM_JAR_NAME} not found under {VISUALVM_JAR_ROOTS:?} and {} is set: \
             run scripts/setup.sh (it installs the Debian package visualvm)",
            super::REQUIRE_JDKS_ENV
        );
        eprintln!("skipping VisualVM checks: {VISUALVM_JAR_NAME} not found (run scripts/setup.sh)");
    }
    found
}

/// `java -cp <jar>:<classes> HeapCheck`, with HeapCheck compiled once per
/// test process; `None` when the jar is missing (see [`visualvm_heap_jar`]).
fn heap_check_command() -> Option<Command> {
    static CLASSPATH: OnceLock<Option<(PathBuf, std::ffi::OsString)>> = OnceLock::new();
    let (java, classpath) = CLASSPATH
        .get_or_init(|| {
            let jar = visualvm_heap_jar()?;
            let classes = super::scratch_dir("visualvm-heapcheck-classes");
            let source = super::repo_root().join("tests/support/visualvm/HeapCheck.java");
            let javac = super::javac();
            let mut cmd = Command::new(&javac);
            cmd.args(["-encoding", "UTF-8", "-cp"])
                .arg(&jar)
                .arg("-d")
                .arg(&classes)
                .arg(&source);
            for var in super::JAVA_ENV_TO_CLEAR {
                cmd.env_remove(var);
            }
            let out = super::run(&mut cmd);
            super::assert_success(&out, "compiling tests/support/visualvm/HeapCheck.java");
            // The java next to that javac (Debian's 17 unless overridden).
            let java = javac
                .parent()
                .map(|bin| bin.join("java"))
                .filter(|j| j.is_file())
                .unwrap_or_else(|| Path::new(super::DEBIAN_JDK_HOME).join("bin/java"));
            let classpath = std::env::join_paths([jar, classes]).expect("classpath");
            Some((java, classpath))
        })
        .clone()?;
    let mut cmd = Command::new(java);
    cmd.arg("-cp").arg(classpath).arg("HeapCheck");
    for var in super::JAVA_ENV_TO_CLEAR {
        cmd.env_remove(var);
    }
    Some(cmd)
}

/// Runs HeapCheck on `dump`; panics unless it prints `OK` and exits 0.
/// Returns false when it was skipped (no jar).
pub fn visualvm_check(dump: &Path, what: &str) -> bool {
    let Some(mut cmd) = heap_check_command() else {
        return false;
    };
    let out = super::run(cmd.arg(dump));
    let stdout = super::stdout_text(&out);
    assert!(
        out.status.success() && stdout.lines().last() == Some("OK"),
        "{what}: VisualVM's heap library disagrees with the fixture\n{}",
        super::describe(&out)
    );
    true
}
