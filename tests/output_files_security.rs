//! Every file hprof-rs writes, the agent's and the tool's, against a second
//! user of the machine (root the victim, `nobody` the attacker, with
//! fs.protected_symlinks=0 as some machines and containers have it):
//!
//! - a symbolic link nobody planted as a directory of the output path
//!   (`/tmp/x/ci -> <root's 0700 directory>`) is refused, whatever writes:
//!   the agent at start-up (the JVM exits 1 before the program runs) and
//!   attached (`hprof-rs attach PID ...,file=`), `report -o`, `flame -o`,
//!   `convert -o`, `diff --flame`; root's files behind it are unchanged;
//! - `flame -o` into nobody's file (0666), or through nobody's link to a
//!   file of root's, is refused;
//! - every output is made 0600 under umask 022: the agent's file, flame,
//!   report, convert to each format, diff's flame graph, listen's files.
//!   (`collapse`, `top` and `diff --json` print to standard output.)
//!
//! nobody plants with its own `ln -s`, run through setpriv: these tests
//! need root.

mod common;

use common::two_users::{self, NOBODY, TempDir, as_nobody, chown_nobody, mode_of, set_mode};
use common::{Jdk, Spawned};
use std::fs;
use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

/// What root's files hold; it must never change.
const VICTIM_TEXT: &str = "root's own data\n";

/// The names root's private directory holds, each one an output name the
/// tests ask for through the planted link.
const VICTIMS: [&str; 6] = [
    "java.hprof.txt",
    "p.txt",
    "report.html",
    "f.svg",
    "out.pb.gz",
    "d.svg",
];

const PATIENCE: Duration = Duration::from_secs(60);

/// A shared directory (mode 1777, as /tmp) where nobody planted
/// `ci -> private`, root's directory of mode 0700 holding its files.
struct Planted {
    shared: TempDir,
    private: TempDir,
}

impl Planted {
    fn new() -> Planted {
        let shared = TempDir::new("shared");
        set_mode(shared.path(), 0o1777);
        let private = TempDir::new("private");
        set_mode(private.path(), 0o700);
        for name in VICTIMS {
            fs::write(private.join(name), VICTIM_TEXT).unwrap();
        }
        let planted = Planted { shared, private };
        let link = planted.link();
        let ln = as_nobody(
            Path::new("ln"),
            &["-s", path(planted.private.path()), path(&link)],
            |_| {},
        );
        common::assert_success(&ln, "nobody plants the link");
        assert_eq!(fs::symlink_metadata(&link).unwrap().uid(), NOBODY);
        planted
    }

    /// The planted link, `<shared>/ci`.
    fn link(&self) -> PathBuf {
        self.shared.join("ci")
    }

    /// `name` through the planted link.
    fn through(&self, name: &str) -> PathBuf {
        self.link().join(name)
    }

    /// What the refusals name.
    fn refusal(&self) -> String {
        format!(
            "{} is a symbolic link owned by another user",
            self.link().display()
        )
    }

    fn assert_untouched(&self, what: &str) {
        let mut names: Vec<String> = fs::read_dir(self.private.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        let mut expected: Vec<&str> = VICTIMS.to_vec();
        expected.sort();
        assert_eq!(names, expected, "{what}: root's directory changed");
        for name in VICTIMS {
            let file = self.private.join(name);
            assert_eq!(
                fs::read_to_string(&file).unwrap(),
                VICTIM_TEXT,
                "{what}: {name} changed"
            );
            assert_eq!(mode_of(&file), 0o644, "{what}: {name}'s mode");
        }
    }
}

fn path(p: &Path) -> &str {
    p.to_str().expect("a UTF-8 path")
}

/// `hprof-rs args...`.
fn hprof_rs(args: &[&str]) -> Output {
    common::run(Command::new(common::hprof_rs_bin()).args(args))
}

/// `cmd` run under umask 022 (through sh, which then execs it).
fn with_umask_022(cmd: &Command) -> Command {
    let mut wrapped = Command::new("sh");
    wrapped
        .arg("-c")
        .arg("umask 022; exec \"$0\" \"$@\"")
        .arg(cmd.get_program())
        .args(cmd.get_args());
    if let Some(dir) = cmd.get_current_dir() {
        wrapped.current_dir(dir);
    }
    for (name, value) in cmd.get_envs() {
        match value {
            Some(value) => wrapped.env(name, value),
            None => wrapped.env_remove(name),
        };
    }
    wrapped
}

/// A cpu=samples profile of SpreadHot made under umask 022, in `dir`;
/// the agent's file is 0600.
fn profile(jdk: &Jdk, dir: &Path) -> PathBuf {
    let file = dir.join("cpu.txt");
    let mut java = common::java_command(jdk, dir);
    java.arg(common::agentpath_arg(&format!(
        "cpu=samples,file={}",
        file.display()
    )))
    .args(["-Xint", "SpreadHot"]);
    let out = common::run(&mut with_umask_022(&java));
    common::assert_success(&out, &format!("the profile on {}", jdk.label));
    assert_eq!(mode_of(&file), 0o600, "the agent's file under umask 022");
    file
}

/// The tool exited 2 with one line, `hprof-rs: <file>: refused: <why>`.
fn assert_tool_refused(out: &Output, file: &Path, why: &str, what: &str) {
    common::assert_exit_code(out, 2, what);
    assert_eq!(
        common::stderr_text(out),
        format!("hprof-rs: {}: refused: {why}\n", file.display()),
        "{what}"
    );
}

#[test]
fn the_agent_refuses_a_planted_directory_link_at_start_up_and_attached() {
    two_users::assert_root("planted directory link, agent");
    common::on_each(&common::jdks_of(&[11, 17, 21, 25]), |jdk| {
        let planted = Planted::new();
        let dir = common::scratch_dir(&format!("output-files-agent-{}", jdk.label));

        let file = planted.through("java.hprof.txt");
        let what = format!("file={} at start-up on {}", file.display(), jdk.label);
        let mut cmd = common::java_command(jdk, &dir);
        cmd.arg(common::agentpath_arg(&format!(
            "cpu=samples,file={}",
            file.display()
        )))
        .arg("Hello");
        let out = common::run(&mut cmd);
        common::assert_exit_code(&out, 1, &what);
        let stderr = common::stderr_text(&out);
        let errors: Vec<&str> = stderr.lines().filter(|l| l.contains("HPROF")).collect();
        assert_eq!(
            errors,
            [format!(
                "HPROF ERROR: can't create profile file: {} ({})",
                file.display(),
                planted.refusal()
            )],
            "{what}: {stderr}"
        );
        assert!(
            !common::stdout_text(&out).contains("Hello"),
            "{what}: the program ran without its profile"
        );
        planted.assert_untouched(&what);

        let file = planted.through("p.txt");
        let what = format!("attached, file={} on {}", file.display(), jdk.label);
        let mut cmd = common::java_command(jdk, &dir);
        cmd.args(["Sleeper", "60"]);
        let mut target = Spawned::spawn(&mut cmd);
        target.wait_for_line("READY", PATIENCE);
        let mut attach = Command::new(common::hprof_rs_bin());
        attach
            .arg("attach")
            .arg(target.pid().to_string())
            .arg(format!("cpu=samples,file={}", file.display()))
            .arg("--agent")
            .arg(common::agent_lib());
        let out = common::run_timeout(&mut attach, Duration::from_secs(120));
        common::assert_exit_code(&out, 1, &what);
        // The agent's own line, sent back through the attach reply.
        assert_eq!(
            common::stderr_text(&out),
            format!(
                "hprof-rs: JVM {}: the agent could not start: HPROF ERROR: can't create profile \
                 file: {} ({} is a symbolic link owned by another user)\n",
                target.pid(),
                file.display(),
                file.parent().unwrap().display()
            ),
            "{what}"
        );
        // The agent's one line, on the JVM's standard error.
        let expected = format!(
            "HPROF ERROR: can't create profile file: {} ({})",
            file.display(),
            planted.refusal()
        );
        common::wait_until(
            PATIENCE,
            || format!("{what}: no line {expected:?}: {:?}", target.output_so_far()),
            || target.output_so_far().1.lines().any(|l| l == expected),
        );
        assert!(
            Path::new(&format!("/proc/{}", target.pid())).exists(),
            "{what}: the target ended"
        );
        target.signal(libc::SIGTERM);
        drop(target);
        planted.assert_untouched(&what);
    });
}

#[test]
fn the_tools_writers_refuse_a_planted_directory_link() {
    two_users::assert_root("planted directory link, tool");
    let planted = Planted::new();
    let dir = common::scratch_dir("output-files-tool-link");
    let profile = profile(&common::jdk_preferring(21), &dir);
    let profile = path(&profile);
    let outputs = ["report.html", "f.svg", "out.pb.gz", "d.svg"].map(|n| planted.through(n));
    let [report, flame, pprof, diff] = outputs.each_ref().map(|p| path(p));
    for (args, file) in [
        (vec!["report", "-o", report, profile], report),
        (vec!["flame", "-o", flame, profile], flame),
        (
            vec!["convert", "--to", "pprof", "-o", pprof, profile],
            pprof,
        ),
        (vec!["diff", "--flame", diff, profile, profile], diff),
    ] {
        let what = format!("hprof-rs {}", args.join(" "));
        let out = hprof_rs(&args);
        assert_tool_refused(&out, Path::new(file), &planted.refusal(), &what);
        planted.assert_untouched(&what);
    }
}

#[test]
fn flame_refuses_another_users_file_and_link() {
    two_users::assert_root("flame -o into another user's file");
    let dir = common::scratch_dir("output-files-flame-theirs");
    let profile = profile(&common::jdk_preferring(21), &dir);
    let shared = TempDir::new("flame");
    set_mode(shared.path(), 0o1777);
    let theirs = shared.join("theirs.svg");
    fs::write(&theirs, "nobody's\n").unwrap();
    set_mode(&theirs, 0o666);
    chown_nobody(&theirs);
    let mine = shared.join("mine.svg");
    fs::write(&mine, VICTIM_TEXT).unwrap();
    let link = shared.join("link.svg");
    std::os::unix::fs::symlink(&mine, &link).unwrap();
    chown_nobody(&link);

    for (file, why) in [
        (&theirs, "it belongs to another user".to_owned()),
        (
            &link,
            format!(
                "{} is a symbolic link owned by another user",
                link.display()
            ),
        ),
    ] {
        let what = format!("flame -o {}", file.display());
        let out = hprof_rs(&["flame", "-o", path(file), path(&profile)]);
        assert_tool_refused(&out, file, &why, &what);
    }
    assert_eq!(fs::read_to_string(&theirs).unwrap(), "nobody's\n");
    assert_eq!(mode_of(&theirs), 0o666);
    assert_eq!(fs::read_to_string(&mine).unwrap(), VICTIM_TEXT);
}

#[test]
fn every_output_is_0600_under_umask_022() {
    let dir = common::scratch_dir("output-files-modes");
    let profile = profile(&common::jdk_preferring(21), &dir);
    let profile = path(&profile);
    let outputs = [
        "report.html",
        "flame.svg",
        "cpu.pb.gz",
        "cpu.speedscope.json",
        "cpu.folded",
        "diff.svg",
    ]
    .map(|name| dir.join(name));
    // An old file of ours readable by all: emptied and made 0600 too.
    fs::write(&outputs[1], "an old graph").unwrap();
    set_mode(&outputs[1], 0o644);
    let [report, flame, pprof, speedscope, folded, diff] = outputs.each_ref().map(|p| path(p));
    for args in [
        vec!["report", "-o", report, profile],
        vec!["flame", "-o", flame, profile],
        vec!["convert", "--to", "pprof", "-o", pprof, profile],
        vec!["convert", "--to", "speedscope", "-o", speedscope, profile],
        vec!["convert", "--to", "collapsed", "-o", folded, profile],
        vec!["diff", "--flame", diff, profile, profile],
    ] {
        let mut cmd = Command::new(common::hprof_rs_bin());
        cmd.args(&args);
        let out = common::run(&mut with_umask_022(&cmd));
        let what = format!("hprof-rs {}", args.join(" "));
        common::assert_success(&out, &what);
    }
    for file in &outputs {
        assert_eq!(mode_of(file), 0o600, "{}", file.display());
        assert!(
            fs::metadata(file).unwrap().len() > 100,
            "{}",
            file.display()
        );
    }

    // listen's file: one fake JVM, then `--once` ends it.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let file = dir.join("listened.hprof");
    let mut cmd = Command::new(common::hprof_rs_bin());
    cmd.args(["listen", "--once", "--port", &port.to_string(), "-o"])
        .arg(&file);
    let mut listen = Spawned::spawn(&mut with_umask_022(&cmd));
    listen.wait_for_line(
        &format!("hprof-rs: listening on 127.0.0.1:{port}"),
        PATIENCE,
    );
    let mut jvm = TcpStream::connect(("127.0.0.1", port)).unwrap();
    jvm.write_all(b"JAVA PROFILE").unwrap();
    drop(jvm);
    let out = listen.wait_timeout(PATIENCE);
    common::assert_success(&out, "listen --once");
    assert_eq!(fs::read(&file).unwrap(), b"JAVA PROFILE");
    assert_eq!(mode_of(&file), 0o600, "listen's file");
}
