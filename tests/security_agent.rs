//! What another local user of the machine (as on a shared CI runner) can do
//! to a program profiled by the agent: nothing through the paths it writes.
//!
//! The victim is this test's user (root in CI), the other user `nobody`:
//! what `nobody` plants is made here and handed to it with `lchown`, and
//! what it tries to read is read by a process running as `nobody`
//! (`setpriv`). Each test fails when not run as root.
//!
//! - cpu=times once wrote its Tracker class into a predictable
//!   `$TMPDIR/hprof-rs-<pid>/hprof_rs/` and took that directory when someone
//!   else had made it: a planted symlink made the agent overwrite the
//!   victim's file, a planted class ran its static initialiser inside the
//!   victim's JVM. The class is now defined from the agent's own bytes.
//! - Heap dumps were written 0644 through a predictable temporary file
//!   beside the output; outputs are now 0600, the temporary file lives in a
//!   private directory (0700, random name), and an output path another
//!   user planted is refused.

mod common;

use common::{AsciiProfile, Jdk, Spawned, on_each};
use hprof_rs::format::ascii::CpuTitle;
use std::ffi::OsString;
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// `nobody:nogroup`, the other user.
const OTHER_UID: u32 = 65534;
const OTHER_GID: u32 = 65534;

/// What the victim's file holds; it must never change.
const VICTIM_TEXT: &str = "the victim's own data\n";

fn require_root(what: &str) {
    // SAFETY: geteuid has no preconditions.
    let euid = unsafe { libc::geteuid() };
    assert_eq!(
        euid, 0,
        "{what}: this test plays two users (itself and nobody) and must run as root, as CI does"
    );
}

/// Hands `path` (not what a link points to) to the other user.
fn give_to_other_user(path: &Path) {
    std::os::unix::fs::lchown(path, Some(OTHER_UID), Some(OTHER_GID))
        .unwrap_or_else(|e| panic!("lchown {}: {e}", path.display()));
}

/// A directory anyone may write in, sticky, like /tmp.
fn shared_dir(path: &Path) -> PathBuf {
    fs::create_dir_all(path).unwrap();
    fs::set_permissions(path, fs::Permissions::from_mode(0o1777)).unwrap();
    path.to_owned()
}

/// `program args` run as the other user.
fn as_other_user(program: &str, args: &[&OsString]) -> Output {
    let mut cmd = Command::new("setpriv");
    cmd.args([
        format!("--reuid={OTHER_UID}"),
        format!("--regid={OTHER_GID}"),
        "--clear-groups".into(),
        "--".into(),
        program.into(),
    ])
    .args(args);
    common::run(&mut cmd)
}

fn mode_of(path: &Path) -> u32 {
    fs::symlink_metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .mode()
        & 0o7777
}

/// The victim's file, somewhere the other user cannot write.
fn victim_file(dir: &Path) -> PathBuf {
    let home = dir.join("victim-home");
    fs::create_dir_all(&home).unwrap();
    let file = home.join("important.txt");
    fs::write(&file, VICTIM_TEXT).unwrap();
    file
}

/// `java <options> <main> <args>` in `dir` with `TMPDIR=tmp`, started only
/// once `plant(pid)` has run: the shell waits for a file `go`, then execs
/// the JVM, which keeps the shell's pid (the one the agent's paths used).
fn run_after_planting(
    jdk: &Jdk,
    dir: &Path,
    tmp: &Path,
    java_args: &[OsString],
    plant: impl FnOnce(u32),
) -> Output {
    let java = common::java_command(jdk, dir);
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg("while [ ! -e go ]; do sleep 0.02; done; umask 022; exec \"$0\" \"$@\"")
        .arg(java.get_program())
        .args(java.get_args())
        .args(java_args)
        .current_dir(dir)
        .env("TMPDIR", tmp);
    for (name, value) in java.get_envs() {
        match value {
            Some(value) => cmd.env(name, value),
            None => cmd.env_remove(name),
        };
    }
    let program = Spawned::spawn(&mut cmd);
    plant(u32::try_from(program.pid()).unwrap());
    fs::write(dir.join("go"), b"").unwrap();
    program.wait_timeout(common::DEFAULT_TIMEOUT)
}

/// What is in `dir`, by name, sorted.
fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// A class named `hprof_rs.Tracker` whose static initialiser creates
/// `marker`: what the other user would like the victim's JVM to run.
fn foreign_tracker_class(dir: &Path, marker: &Path) -> Vec<u8> {
    let source_dir = dir.join("foreign-src/hprof_rs");
    fs::create_dir_all(&source_dir).unwrap();
    let source = source_dir.join("Tracker.java");
    fs::write(
        &source,
        format!(
            "package hprof_rs;\n\
             public final class Tracker {{\n\
             static {{ try {{ java.nio.file.Files.createFile(java.nio.file.Path.of({marker:?})); }}\n\
             catch (Exception e) {{ throw new RuntimeException(e); }} }}\n\
             public static void CallSite(int c, int m) {{}}\n\
             public static void ReturnSite(int c, int m) {{}}\n\
             }}\n"
        ),
    )
    .unwrap();
    let classes = dir.join("foreign-classes");
    let out = common::run(
        Command::new(common::javac())
            .args(["--release", "11", "-d"])
            .arg(&classes)
            .arg(&source),
    );
    common::assert_success(&out, "javac of the foreign Tracker");
    fs::read(classes.join("hprof_rs/Tracker.class")).unwrap()
}

/// TimedCalls under cpu=times ran with the agent's own Tracker: its
/// result and its exact call counts.
fn assert_timed_calls_profiled(out: &Output, dir: &Path, what: &str) {
    common::assert_success(out, what);
    assert!(
        common::stdout_text(out).contains("counter=313046"),
        "{what}: the program's result changed\n{}",
        common::describe(out)
    );
    let profile = AsciiProfile::read(&dir.join("java.hprof.txt"));
    let cpu = profile
        .first_cpu(CpuTitle::TimeMs)
        .unwrap_or_else(|| panic!("{what}: no CPU TIME section"));
    let calls_of = |method: &str| -> u64 {
        cpu.rows
            .iter()
            .filter(|r| r.method.as_deref() == Some(method))
            .map(|r| r.count)
            .sum()
    };
    assert_eq!(calls_of("TimedCalls.a"), 12345, "{what}: calls of a()");
    assert_eq!(calls_of("TimedCalls.b"), 777, "{what}: calls of b()");
}

/// The other user pre-creates the Tracker directory of the victim's pid,
/// open to all, with `Tracker.class` a symlink to the victim's file (the
/// agent once wrote the class through it), or a class of their own (which
/// the agent once loaded if swapped in after it wrote its own). Neither is
/// touched, nothing foreign runs, the timing is exact, and the agent
/// leaves nothing of its own in TMPDIR.
#[test]
fn a_planted_tracker_directory_is_never_used() {
    require_root("planted Tracker directory");
    on_each(&common::jdks(), |jdk| {
        for swap_in_a_class in [false, true] {
            let what = format!(
                "cpu=times, Tracker directory planted with {}, {}",
                if swap_in_a_class {
                    "a foreign class"
                } else {
                    "a symlink"
                },
                jdk.label
            );
            let dir = common::scratch_dir(&format!(
                "security-tracker-{}-{}",
                u8::from(swap_in_a_class),
                jdk.label
            ));
            let tmp = shared_dir(&dir.join("tmp"));
            let victim = victim_file(&dir);
            let marker = dir.join("foreign-code-ran");
            let foreign = foreign_tracker_class(&dir, &marker);
            let mut planted = PathBuf::new();
            let out = run_after_planting(
                jdk,
                &dir,
                &tmp,
                &[
                    common::agentpath_arg("cpu=times,timing=calls,cutoff=0"),
                    "TimedCalls".into(),
                ],
                |pid| {
                    let top = tmp.join(format!("hprof-rs-{pid}"));
                    let package = top.join("hprof_rs");
                    fs::create_dir_all(&package).unwrap();
                    planted = package.join("Tracker.class");
                    if swap_in_a_class {
                        fs::write(&planted, &foreign).unwrap();
                    } else {
                        std::os::unix::fs::symlink(&victim, &planted).unwrap();
                    }
                    for path in [&planted, &package, &top] {
                        give_to_other_user(path);
                        if path != &planted {
                            fs::set_permissions(path, fs::Permissions::from_mode(0o777)).unwrap();
                        }
                    }
                },
            );
            assert_timed_calls_profiled(&out, &dir, &what);
            assert_eq!(
                fs::read_to_string(&victim).unwrap(),
                VICTIM_TEXT,
                "{what}: the victim's file changed"
            );
            assert!(!marker.exists(), "{what}: the foreign class's code ran");
            if swap_in_a_class {
                assert_eq!(
                    fs::read(&planted).unwrap(),
                    foreign,
                    "{what}: planted class"
                );
            } else {
                assert_eq!(
                    fs::read_link(&planted).unwrap(),
                    victim,
                    "{what}: planted link"
                );
            }
            let pid_dir = planted.parent().unwrap().parent().unwrap();
            assert_eq!(
                names_in(&tmp),
                vec![pid_dir.file_name().unwrap().to_string_lossy().into_owned()],
                "{what}: TMPDIR should hold only what the other user made"
            );
            assert_eq!(fs::symlink_metadata(pid_dir).unwrap().uid(), OTHER_UID);
        }
    });
}

/// Every output is made 0600 whatever the umask (022 here), a heap dump
/// above all: the other user cannot read it; an existing file of the
/// victim's that others could read loses those rights when it is written.
/// The heap dump's temporary directory, beside the output, is 0700 with a
/// random name while the JVM runs, and gone afterwards.
#[test]
fn outputs_are_readable_by_their_owner_only() {
    require_root("output modes");
    on_each(&common::jdks_of(&[11, 17, 21, 25]), |jdk| {
        let dir = common::scratch_dir(&format!("security-modes-{}", jdk.label));
        let tmp = shared_dir(&dir.join("tmp"));
        // A file the other user may read, beside the outputs: what stops
        // them below is each output's mode, not the way to it.
        let control = dir.join("control.txt");
        fs::write(&control, b"anyone may read this").unwrap();
        fs::set_permissions(&control, fs::Permissions::from_mode(0o644)).unwrap();
        let read = as_other_user("cat", &[&control.clone().into_os_string()]);
        common::assert_success(&read, "the other user reads a 0644 file beside the outputs");
        let kept = dir.join("old-0644.txt");
        fs::write(&kept, b"a profile of an earlier run").unwrap();
        fs::set_permissions(&kept, fs::Permissions::from_mode(0o644)).unwrap();
        for (options, file) in [
            ("heap=dump,format=b,file=dump.hprof", "dump.hprof"),
            ("heap=dump,file=dump.txt", "dump.txt"),
            ("heap=sites,file=sites.txt", "sites.txt"),
            ("cpu=samples,file=cpu.hprof,format=b", "cpu.hprof"),
            ("heap=all,file=old-0644.txt", "old-0644.txt"),
        ] {
            let what = format!("{options} on {}", jdk.label);
            let out = run_after_planting(
                jdk,
                &dir,
                &tmp,
                &[
                    common::agentpath_arg(options),
                    "HeapGraph".into(),
                    "0".into(),
                ],
                |_| {},
            );
            common::assert_success(&out, &what);
            let path = dir.join(file);
            assert_eq!(mode_of(&path), 0o600, "{what}: mode of {file}");
            assert!(
                fs::metadata(&path).unwrap().len() > 1000,
                "{what}: {file} is empty"
            );
            let read = as_other_user("cat", &[&path.clone().into_os_string()]);
            assert!(
                !read.status.success() && common::stderr_text(&read).contains("Permission denied"),
                "{what}: the other user could read {file}\n{}",
                common::describe(&read)
            );
            let left: Vec<String> = names_in(&dir)
                .into_iter()
                .filter(|n| n.contains(".TMP"))
                .collect();
            assert!(left.is_empty(), "{what}: temporary files left: {left:?}");
        }
        assert!(names_in(&tmp).is_empty(), "TMPDIR: {:?}", names_in(&tmp));

        // While a heap=dump run lives, its private directory is there.
        let what = format!("heap=dump's private directory on {}", jdk.label);
        let mut cmd = common::java_command(jdk, &dir);
        cmd.arg(common::agentpath_arg("heap=dump,format=b,file=live.hprof"))
            .args(["HeapGraph", "30"]);
        let mut program = Spawned::spawn(&mut cmd);
        program.wait_for_line("READY", Duration::from_secs(60));
        let prefix = format!("live.hprof.{}.TMP-", program.pid());
        let private: Vec<String> = names_in(&dir)
            .into_iter()
            .filter(|n| n.starts_with(&prefix))
            .collect();
        assert_eq!(private.len(), 1, "{what}: {:?}", names_in(&dir));
        let suffix = &private[0][prefix.len()..];
        assert!(
            suffix.len() == 12 && suffix.bytes().all(|b| b.is_ascii_alphanumeric()),
            "{what}: {:?} should end in 12 random characters",
            private[0]
        );
        let private = dir.join(&private[0]);
        assert_eq!(mode_of(&private), 0o700, "{what}: mode");
        assert!(fs::symlink_metadata(&private).unwrap().is_dir(), "{what}");
        assert_eq!(fs::symlink_metadata(&private).unwrap().uid(), 0, "{what}");
        program.signal(libc::SIGTERM);
        let started = Instant::now();
        let _ = program.wait_timeout(Duration::from_secs(60));
        assert!(
            !private.exists(),
            "{what}: still there {:?} after the JVM ended",
            started.elapsed()
        );
        assert_eq!(mode_of(&dir.join("live.hprof")), 0o600, "{what}");
    });
}

/// An output path the other user planted in a shared directory (a file of
/// theirs open to all, or a symlink of theirs to the victim's file) is
/// refused with one HPROF ERROR line and exit 1, before the program runs:
/// their file gets nothing, the victim's is unchanged. The heap dump's old
/// temporary name, planted as a symlink, is never used either.
#[test]
fn output_paths_planted_by_another_user_are_refused() {
    require_root("planted output paths");
    on_each(&common::jdks_of(&[11, 25]), |jdk| {
        let dir = common::scratch_dir(&format!("security-planted-{}", jdk.label));
        let shared = shared_dir(&dir.join("shared"));
        let victim = victim_file(&dir);

        let theirs = shared.join("java.hprof.txt");
        fs::write(&theirs, b"").unwrap();
        fs::set_permissions(&theirs, fs::Permissions::from_mode(0o666)).unwrap();
        give_to_other_user(&theirs);
        let link = shared.join("out.hprof");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        give_to_other_user(&link);

        for (options, path) in [
            ("heap=sites", &theirs),
            ("heap=dump,format=b,file=out.hprof", &link),
        ] {
            let what = format!("{options} into {} on {}", path.display(), jdk.label);
            let mut cmd = common::java_command(jdk, &shared);
            cmd.arg(common::agentpath_arg(options)).arg("Hello");
            let out = common::run(&mut cmd);
            common::assert_exit_code(&out, 1, &what);
            let stderr = common::stderr_text(&out);
            let errors: Vec<&str> = stderr
                .lines()
                .filter(|l| l.contains("HPROF ERROR"))
                .collect();
            let name = path.file_name().unwrap().to_string_lossy();
            assert!(
                errors.len() == 1
                    && errors[0]
                        .starts_with(&format!("HPROF ERROR: can't create profile file: {name} ("))
                    && (errors[0].contains("belongs to another user")
                        || errors[0].contains("symbolic link owned by another user")),
                "{what}: {stderr}"
            );
            assert!(
                !common::stdout_text(&out).contains("Hello"),
                "{what}: the program ran without its profile"
            );
        }
        assert_eq!(
            fs::metadata(&theirs).unwrap().len(),
            0,
            "their file got data"
        );
        assert_eq!(
            fs::read_to_string(&victim).unwrap(),
            VICTIM_TEXT,
            "the victim's file changed"
        );

        // The predictable name the heap dump's temporary file once had,
        // planted as a link to the victim's file, is left alone.
        let what = format!(
            "heap=dump with the old temporary name planted, {}",
            jdk.label
        );
        let mut planted = PathBuf::new();
        let out = run_after_planting(
            jdk,
            &shared,
            &shared,
            &[
                common::agentpath_arg("heap=dump,format=b,file=dump.hprof"),
                "HeapGraph".into(),
                "0".into(),
            ],
            |pid| {
                planted = shared.join(format!("dump.hprof.{pid}.TMP.hprof"));
                std::os::unix::fs::symlink(&victim, &planted).unwrap();
                give_to_other_user(&planted);
            },
        );
        common::assert_success(&out, &what);
        assert_eq!(
            fs::read_to_string(&victim).unwrap(),
            VICTIM_TEXT,
            "{what}: victim changed"
        );
        assert_eq!(
            fs::read_link(&planted).unwrap(),
            victim,
            "{what}: the link was touched"
        );
        let printed = common::run(
            Command::new(common::hprof_rs_bin())
                .arg("print")
                .arg(shared.join("dump.hprof")),
        );
        common::assert_success(&printed, &format!("{what}: hprof-rs print"));
    });
}
