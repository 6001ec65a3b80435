//! What `tests/bci_jrt.rs` and `tests/bci_jars.rs` share: the compiled
//! Java helpers of `tests/support/bci`, running them, and their dump files.
//! Included with `#[path = "support/bci/harness.rs"] mod harness;` next to
//! `mod common;`.
#![allow(dead_code)] // each test binary uses a part

use std::ffi::{OsStr, OsString};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;
use std::time::Duration;

use crate::common;

/// The test tracker, patched into java.base by `tests/bci_jrt.rs`.
pub const TRACKER: &str = "java/lang/HprofRsVerifyTracker";
/// How long one JVM run may take.
pub const JVM_TIMEOUT: Duration = Duration::from_secs(900);
/// What `VerifyAll exempt` and `VerifyAll diff` need to reach the JDK's
/// verifier (see [`run_verifier`]).
pub const VERIFIER_OPENS: [&str; 2] = [
    "--add-opens",
    "java.base/jdk.internal.classfile.impl.verifier=ALL-UNNAMED",
];

/// `DumpJrt` and `VerifyAll` (in `classes`), and the compiled test
/// tracker (under `tracker`).
pub struct Helpers {
    /// The classpath of `DumpJrt` and `VerifyAll`.
    pub classes: PathBuf,
    /// Holds `java/lang/HprofRsVerifyTracker.class`.
    pub tracker: PathBuf,
}

fn javac(args: &[&OsStr]) {
    let mut cmd = Command::new(common::javac());
    cmd.args(["--release", "11", "-encoding", "UTF-8"])
        .args(args);
    let out = common::run(&mut cmd);
    common::assert_success(&out, &common::describe_command(&cmd));
}

/// The helpers, compiled once per test process.
pub fn helpers() -> &'static Helpers {
    static HELPERS: OnceLock<Helpers> = OnceLock::new();
    HELPERS.get_or_init(|| {
        let src = common::repo_root().join("tests/support/bci");
        // One per test binary: they may run at the same time.
        let dir = common::scratch_dir(concat!("bci-helpers-", env!("CARGO_CRATE_NAME")));
        let classes = dir.join("classes");
        let tracker = dir.join("tracker");
        javac(&[
            "-d".as_ref(),
            classes.as_os_str(),
            src.join("DumpJrt.java").as_os_str(),
            src.join("VerifyAll.java").as_os_str(),
        ]);
        let java_base = src.join("java.base");
        let mut patch = OsString::from("java.base=");
        patch.push(&java_base);
        javac(&[
            "--patch-module".as_ref(),
            &patch,
            "-d".as_ref(),
            tracker.as_os_str(),
            java_base.join(format!("{TRACKER}.java")).as_os_str(),
        ]);
        Helpers { classes, tracker }
    })
}

/// `java` of `jdk` in `dir`, with the JVM-affecting environment cleared
/// and the helpers on the classpath.
pub fn java(jdk: &common::Jdk, dir: &Path) -> Command {
    let mut cmd = Command::new(&jdk.java);
    cmd.current_dir(dir);
    for var in common::JAVA_ENV_TO_CLEAR {
        cmd.env_remove(var);
    }
    cmd
}

/// Appends `-cp <helpers> <main>` to `cmd`.
pub fn helper_main<'c>(cmd: &'c mut Command, main: &str) -> &'c mut Command {
    cmd.arg("-cp").arg(&helpers().classes).arg(main)
}

/// Runs `cmd` to success within [`JVM_TIMEOUT`].
pub fn run_ok(mut cmd: Command) -> Output {
    let what = common::describe_command(&cmd);
    let out = common::run_timeout(&mut cmd, JVM_TIMEOUT);
    common::assert_success(&out, &what);
    out
}

/// The JDK 25 of the matrix, which has `java.lang.classfile` and its
/// verifier. `None` when absent (a failure in the full test run).
pub fn jdk25() -> Option<common::Jdk> {
    let found = common::jdks().into_iter().find(|j| j.major == 25);
    assert!(found.is_some() || !common::strict(), "JDK 25 is missing");
    found
}

/// Runs `VerifyAll <mode> <args>` on `jdk25`, which can reach the JDK's
/// verifier; returns its stdout and the rest of its summary line, the one
/// starting with `summary`.
pub fn run_verifier(
    jdk25: &common::Jdk,
    dir: &Path,
    mode: &str,
    args: &[&Path],
    summary: &str,
) -> (String, String) {
    let mut cmd = java(jdk25, dir);
    cmd.args(VERIFIER_OPENS);
    helper_main(&mut cmd, "VerifyAll").arg(mode).args(args);
    let stdout = common::stdout_text(&run_ok(cmd));
    let rest = stdout
        .lines()
        .find_map(|l| l.strip_prefix(summary))
        .unwrap_or_else(|| panic!("no {summary:?} line:\n{stdout}"))
        .to_string();
    (stdout, rest)
}

/// One class of a dump file.
pub struct Record {
    /// Its module (a jar's file name for `DumpJrt jars`).
    pub module: String,
    /// Its internal name.
    pub name: String,
    /// The class file.
    pub bytes: Vec<u8>,
}

/// Splits `n` bytes off the front of `rest`.
fn take<'d>(rest: &mut &'d [u8], n: usize) -> &'d [u8] {
    let (head, tail) = rest.split_at(n);
    *rest = tail;
    head
}

/// A `writeUTF` string (the names are ASCII).
fn take_text(rest: &mut &[u8]) -> String {
    let len = u16::from_be_bytes(take(rest, 2).try_into().unwrap());
    String::from_utf8_lossy(take(rest, usize::from(len))).into_owned()
}

/// Reads a `DumpJrt` file.
pub fn read_dump(path: &Path) -> Vec<Record> {
    let data = fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut rest: &[u8] = &data;
    let mut records = Vec::new();
    while !rest.is_empty() {
        let module = take_text(&mut rest);
        let name = take_text(&mut rest);
        let len = u32::from_be_bytes(take(&mut rest, 4).try_into().unwrap()) as usize;
        records.push(Record {
            module,
            name,
            bytes: take(&mut rest, len).to_vec(),
        });
    }
    records
}

/// Writes records in `DumpJrt`'s format.
pub fn write_dump<'r>(
    path: &Path,
    records: impl IntoIterator<Item = (&'r str, &'r str, &'r [u8])>,
) {
    let mut out = Vec::new();
    for (module, name, bytes) in records {
        for text in [module, name] {
            out.extend_from_slice(&(text.len() as u16).to_be_bytes());
            out.extend_from_slice(text.as_bytes());
        }
        out.extend_from_slice(&(bytes.len() as u32).to_be_bytes());
        out.extend_from_slice(bytes);
    }
    fs::write(path, out).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
}

/// A skip reason with its numbers blanked, to group alike reasons.
pub fn reason_kind(reason: &str) -> String {
    let mut out = String::new();
    for c in reason.chars() {
        if !c.is_ascii_digit() {
            out.push(c);
        } else if !out.ends_with('N') {
            out.push('N');
        }
    }
    out
}
