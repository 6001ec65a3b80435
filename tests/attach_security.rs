//! `hprof-rs attach` against a second local user (root the victim, nobody
//! the one who plants things, as in a shared machine or a container): an
//! attach socket someone else made is refused and sent nothing; a trigger
//! file someone else planted is refused and the JVM gets no SIGQUIT (no
//! thread dump in the program's output); a JVM that exits during the
//! attach is said gone and the trigger file made for it removed; a file
//! handed over out of a container is taken only as the agent wrote it
//! (a swapped or grown file is refused, in bounded memory); a container
//! whose /tmp is an absolute symbolic link gets nothing written on the
//! host; a JVM that exits during an attached heap dump leaves no temporary
//! file, and `attach` says it exited; `HPROF_RS_AGENT` naming a file
//! another user could change is not used. These tests need root
//! (setpriv, unshare, chroot).

mod common;

use common::{Jdk, Spawned, attach, attach_with, namespaces};
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const READY_WAIT: Duration = Duration::from_secs(60);
const EXIT_WAIT: Duration = Duration::from_secs(120);
const NOBODY: &str = "65534";
/// The most memory `attach stop` may take refusing a 3 GB file.
const MAX_RSS_KB: u64 = 64 * 1024;

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Whether this run can play two users (root, setpriv) and make
/// namespaces (unshare); says why not.
fn can_run(what: &str) -> bool {
    if is_root() && Path::new("/usr/bin/setpriv").exists() && namespaces::can_unshare() {
        return true;
    }
    assert!(
        !common::strict() || !is_root(),
        "{what}: needs setpriv and unshare"
    );
    eprintln!("skipped {what}: needs root, setpriv and unshare");
    false
}

/// `setpriv` running the rest as nobody.
fn as_nobody(program: impl AsRef<std::ffi::OsStr>) -> Command {
    let mut cmd = Command::new("/usr/bin/setpriv");
    cmd.args([
        &format!("--reuid={NOBODY}"),
        &format!("--regid={NOBODY}"),
        "--clear-groups",
    ])
    .arg(program);
    cmd
}

/// The attach failed with exit code 1 and one line holding `says`.
fn assert_refused(out: &Output, says: &str, what: &str) {
    common::assert_exit_code(out, 1, what);
    let stderr = common::stderr_text(out);
    assert!(
        stderr.starts_with("hprof-rs: ") && stderr.contains(says) && stderr.lines().count() == 1,
        "{what}: should say {says:?} in one line\n{}",
        common::describe(out)
    );
}

fn world_writable(dir: &Path, sticky: bool) {
    let mode = if sticky { 0o1777 } else { 0o777 };
    fs::set_permissions(dir, fs::Permissions::from_mode(mode)).expect("chmod");
}

/// A JVM of root's running Sleeper in `dir`, once ready.
fn sleeper(jdk: &Jdk, dir: &Path, seconds: &str) -> Spawned {
    let mut cmd = common::java_command(jdk, dir);
    cmd.arg("Sleeper").arg(seconds);
    let mut jvm = Spawned::spawn(&mut cmd);
    jvm.wait_for_line("READY", READY_WAIT);
    jvm
}

/// A UNIX socket server of nobody's at `socket`: records every byte it
/// receives into `record`, and answers like a JVM, with terminal escape
/// sequences. Runs until killed.
fn nobody_listening(socket: &Path, record: &Path) -> Spawned {
    const SERVER: &str = r#"
import os, socket, sys
path, record = sys.argv[1], sys.argv[2]
open(record, "wb").close()
s = socket.socket(socket.AF_UNIX)
s.bind(path)
os.chmod(path, 0o777)
s.listen(4)
print("READY", flush=True)
while True:
    c, _ = s.accept()
    c.settimeout(3)
    try:
        data = c.recv(65536)
    except OSError:
        data = b""
    with open(record, "ab") as f:
        f.write(data)
    try:
        c.sendall(b"0\n\x1b]0;owned\x07return code: 0\n")
    except OSError:
        pass
    c.close()
"#;
    let mut cmd = as_nobody("/usr/bin/python3");
    cmd.args(["-c", SERVER]).arg(socket).arg(record);
    let mut server = Spawned::spawn(&mut cmd);
    server.wait_for_line("READY", READY_WAIT);
    server
}

#[test]
fn an_attach_socket_another_process_made_is_refused_and_sent_nothing() {
    if !can_run("spoofed attach socket") {
        return;
    }
    let jdk = common::jdk_preferring(21);
    let what = format!("spoofed attach socket on {}", jdk.label);
    let dir = common::scratch_dir("attach-sec-socket");
    world_writable(&dir, false);
    let jvm = sleeper(&jdk, &dir, "60");
    let pid = jvm.pid();
    let socket = PathBuf::from(format!("/tmp/.java_pid{pid}"));
    let record = dir.join("received");
    let server = nobody_listening(&socket, &record);

    // nobody's socket at the JVM's name: refused by its owner, never
    // connected to.
    let out = attach(&dir, pid, "cpu=samples,file=p.txt");
    assert_refused(&out, "is not the attach socket of the JVM", &what);
    assert!(common::stdout_text(&out).is_empty(), "{what}: said {out:?}");
    // The same socket given to root: the process listening is not the
    // JVM (SO_PEERCRED), refused once connected, before a byte is sent.
    std::os::unix::fs::lchown(&socket, Some(0), Some(0)).expect("chown the socket");
    let out = attach(&dir, pid, "cpu=samples,file=p.txt");
    assert_refused(&out, "listens there; refusing to talk to it", &what);

    std::thread::sleep(Duration::from_millis(300));
    let received = fs::read(&record).expect("the server's record");
    assert!(received.is_empty(), "{what}: nobody received {received:?}");
    assert!(!dir.join("p.txt").exists(), "{what}: a profile was started");
    let (stdout, _) = jvm.output_so_far();
    assert!(
        !stdout.contains("Full thread dump"),
        "{what}: SIGQUIT sent:\n{stdout}"
    );
    server.signal(libc::SIGKILL);
    let _ = server.wait_timeout(EXIT_WAIT);
    let _ = fs::remove_file(&socket);
    jvm.signal(libc::SIGTERM);
    let _ = jvm.wait_timeout(EXIT_WAIT);
}

#[test]
fn a_trigger_file_another_user_planted_is_refused_and_no_thread_dump_printed() {
    if !can_run("planted trigger file") {
        return;
    }
    let jdk = common::jdk_preferring(21);
    let what = format!("planted trigger file on {}", jdk.label);
    let dir = common::scratch_dir("attach-sec-trigger");
    world_writable(&dir, true);
    let jvm = sleeper(&jdk, &dir, "60");
    let pid = jvm.pid();
    let planted = dir.join(format!(".attach_pid{pid}"));
    let mut touch = as_nobody("/usr/bin/touch");
    touch.arg(&planted);
    common::assert_success(&common::run(&mut touch), &format!("{what}: touch"));

    let started = Instant::now();
    let out = attach(&dir, pid, "cpu=samples");
    assert_refused(&out, "someone else put it there", &what);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{what}: took {:?}",
        started.elapsed()
    );
    std::thread::sleep(Duration::from_millis(500));
    let (stdout, _) = jvm.output_so_far();
    assert!(
        !stdout.contains("Full thread dump"),
        "{what}: SIGQUIT sent:\n{stdout}"
    );
    assert!(planted.exists(), "{what}: nobody's file was removed");
    jvm.signal(libc::SIGTERM);
    let _ = jvm.wait_timeout(EXIT_WAIT);
}

/// `java ARGS` of `jdk` as a shell command, quoted.
fn java_words(jdk: &Jdk, dir: &Path, args: &[&str]) -> String {
    let java = common::java_command(jdk, dir);
    let mut words = format!("'{}'", jdk.java.display());
    for arg in java.get_args() {
        words.push_str(&format!(" '{}'", arg.to_string_lossy()));
    }
    for arg in args {
        words.push_str(&format!(" '{arg}'"));
    }
    words
}

#[test]
fn a_jvm_that_exits_during_the_attach_is_said_gone_and_its_trigger_file_removed() {
    if !can_run("exiting target") {
        return;
    }
    let jdk = common::jdk_preferring(21);
    let what = format!("a JVM exiting during the attach on {}", jdk.label);
    let dir = common::scratch_dir("attach-sec-exiting");
    // Its /tmp is read-only: its attach listener cannot make its socket,
    // and the JVM ends a few seconds later, while `attach` waits.
    let script = format!(
        "{} && mount -o remount,ro /tmp && cd '{}' && exec {}",
        namespaces::own_tmp_keeping_the_checkout(),
        dir.display(),
        java_words(&jdk, &dir, &["Sleeper", "4"])
    );
    let mut cmd = Command::new("unshare");
    cmd.args(["--mount", "sh", "-c", &script])
        .current_dir(&dir)
        .stdin(Stdio::null());
    common::clean_java_env(&mut cmd);
    let mut jvm = Spawned::spawn(&mut cmd);
    jvm.wait_for_line("READY", READY_WAIT);
    let pid = jvm.pid();
    let started = Instant::now();
    let out = attach(&dir, pid, "cpu=samples");
    assert_refused(&out, &format!("the JVM {pid} exited"), &what);
    assert!(
        !common::stderr_text(&out).contains("DisableAttachMechanism"),
        "{what}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(9),
        "{what}: said after {:?}",
        started.elapsed()
    );
    let trigger = dir.join(format!(".attach_pid{pid}"));
    assert!(!trigger.exists(), "{what}: {} left", trigger.display());
    let _ = jvm.wait_timeout(EXIT_WAIT);
}

/// The file the JVM writes in its own /tmp for a handover, seen from here.
fn inside_output(jvm: i32) -> PathBuf {
    let tmp = PathBuf::from(format!("/proc/{jvm}/root/tmp"));
    let found: Vec<PathBuf> = fs::read_dir(&tmp)
        .expect("the JVM's /tmp")
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("hprof-rs-"))
        })
        .collect();
    assert_eq!(found.len(), 1, "one output in the JVM's /tmp: {found:?}");
    found.into_iter().next().unwrap()
}

/// `attach PID stop` under /usr/bin/time -v: its output, and its peak
/// resident memory in KB.
fn timed_stop(dir: &Path, pid: i32) -> (Output, u64) {
    let mut cmd = Command::new("/usr/bin/time");
    cmd.arg("-v")
        .arg(common::hprof_rs_bin())
        .args(["attach", &pid.to_string(), "stop", "--agent"])
        .arg(common::agent_lib())
        .current_dir(dir);
    let mut out = common::run_timeout(&mut cmd, Duration::from_secs(120));
    let stderr = common::stderr_text(&out);
    let rss = stderr
        .lines()
        .find_map(|l| {
            l.trim()
                .strip_prefix("Maximum resident set size (kbytes): ")
        })
        .and_then(|kb| kb.trim().parse().ok())
        .unwrap_or_else(|| panic!("no peak memory from /usr/bin/time -v:\n{stderr}"));
    // The tool's own lines come before time's report.
    let own: String = stderr
        .lines()
        .take_while(|l| !l.starts_with('\t') && !l.starts_with("Command "))
        .map(|l| format!("{l}\n"))
        .collect();
    out.stderr = own.into_bytes();
    (out, rss)
}

#[test]
fn a_handed_over_file_swapped_or_grown_in_the_container_is_refused_in_bounded_memory() {
    if !can_run("container handover") {
        return;
    }
    let jdk = common::jdk_preferring(21);
    let what = format!("container handover on {}", jdk.label);
    let dir = common::scratch_dir("attach-sec-handover");
    world_writable(&dir, false);
    let script = format!(
        "{} && cd '{}' && exec setpriv --reuid={NOBODY} --regid={NOBODY} --clear-groups {}",
        namespaces::own_tmp_keeping_the_checkout(),
        dir.display(),
        java_words(&jdk, &dir, &["Sleeper", "90"])
    );
    let mut cmd = Command::new("unshare");
    cmd.args(["--fork", "--pid", "--mount", "--mount-proc", "sh", "-c"])
        .arg(&script)
        .current_dir(&dir)
        .stdin(Stdio::null());
    common::clean_java_env(&mut cmd);
    let mut unshare = Spawned::spawn(&mut cmd);
    unshare.wait_for_line("READY", READY_WAIT);
    let pid = namespaces::forked_child(unshare.pid());
    let host = PathBuf::from(format!("/tmp/hprof-rs-attach-sec-{}", std::process::id()));
    let _ = fs::remove_dir_all(&host);
    fs::create_dir(&host).expect("a host directory");
    let three_gb: u64 = 3 << 30;

    // Swapped for a 3 GB sparse file of the JVM's user.
    let swapped = host.join("swapped.txt");
    let out = attach(
        &dir,
        pid,
        &format!("cpu=samples,file={}", swapped.display()),
    );
    common::assert_success(&out, &format!("{what}: attach"));
    let inside = inside_output(pid);
    fs::remove_file(&inside).expect("remove the JVM's output");
    let big = fs::File::create(&inside).expect("a sparse file");
    big.set_len(three_gb).expect("3 GB");
    std::os::unix::fs::fchown(&big, Some(65534), Some(65534)).expect("chown");
    drop(big);
    let (out, rss) = timed_stop(&dir, pid);
    eprintln!("{what}: stop with a swapped 3 GB file: peak RSS {rss} KB");
    assert_refused(&out, "is not the file the agent made", &what);
    assert!(rss < MAX_RSS_KB, "{what}: peak RSS {rss} KB");
    assert!(!swapped.exists(), "{what}: {} written", swapped.display());
    let _ = fs::remove_file(&inside);

    // The agent's own file, grown to 3 GB before the stop.
    let grown = host.join("grown.txt");
    let out = attach(&dir, pid, &format!("cpu=samples,file={}", grown.display()));
    common::assert_success(&out, &format!("{what}: attach"));
    let inside = inside_output(pid);
    let file = fs::OpenOptions::new()
        .write(true)
        .open(&inside)
        .expect("the JVM's output");
    file.set_len(three_gb).expect("grown to 3 GB");
    drop(file);
    let (out, rss) = timed_stop(&dir, pid);
    eprintln!("{what}: stop with the output grown to 3 GB: peak RSS {rss} KB");
    assert_refused(&out, "holds 3221225472 bytes, the agent wrote", &what);
    assert!(rss < MAX_RSS_KB, "{what}: peak RSS {rss} KB");
    assert!(!grown.exists(), "{what}: {} written", grown.display());
    let _ = fs::remove_file(&inside);

    // Left alone, it is handed over, private to root.
    let kept = host.join("kept.txt");
    let out = attach(&dir, pid, &format!("cpu=samples,file={}", kept.display()));
    common::assert_success(&out, &format!("{what}: attach"));
    std::thread::sleep(Duration::from_millis(1000));
    let (out, rss) = timed_stop(&dir, pid);
    eprintln!("{what}: stop handing over the profile: peak RSS {rss} KB");
    common::assert_success(&out, &format!("{what}: stop"));
    let meta = fs::symlink_metadata(&kept).expect("the profile handed over");
    assert_eq!((meta.uid(), meta.mode() & 0o777), (0, 0o600), "{what}");
    assert!(
        fs::read_to_string(&kept).is_ok_and(|t| t.contains("CPU SAMPLES BEGIN")),
        "{what}: no CPU SAMPLES in {}",
        kept.display()
    );
    assert!(
        fs::read_dir(format!("/proc/{pid}/root/tmp"))
            .expect("the JVM's /tmp")
            .flatten()
            .all(|e| !e.file_name().to_string_lossy().ends_with(".hprof.txt")),
        "{what}: the handed-over file stayed in the JVM's /tmp"
    );

    // SAFETY: kill(2) of the JVM this test started in its namespace.
    unsafe { libc::kill(pid, libc::SIGTERM) };
    let _ = unshare.wait_timeout(EXIT_WAIT);
    let _ = fs::remove_dir_all(&host);
}

/// The first component of `path` made absolute (`/work` of `/work/a/b`).
fn top_of(path: &Path) -> String {
    let path = fs::canonicalize(path).expect("a path");
    let first = path.components().nth(1).expect("not /");
    format!("/{}", first.as_os_str().to_string_lossy())
}

#[test]
fn a_container_whose_tmp_is_an_absolute_link_gets_nothing_written_on_the_host() {
    if !can_run("container /tmp link") {
        return;
    }
    let jdk = common::jdk_preferring(21);
    let what = format!("a container's /tmp link on {}", jdk.label);
    let tops = [
        top_of(Path::new(env!("CARGO_MANIFEST_DIR"))),
        top_of(&jdk.java),
        top_of(&common::fixtures_classpath()),
    ];
    if tops
        .iter()
        .any(|t| ["/tmp", "/var", "/proc", "/dev", "/usr"].contains(&t.as_str()))
    {
        eprintln!("skipped {what}: the checkout or JDK is under {tops:?}");
        return;
    }
    let scratch = common::scratch_dir("attach-sec-tmp-link");
    let root = scratch.join("root");
    let tool_cwd = scratch.join("cwd");
    for sub in ["usr", "proc", "dev"] {
        fs::create_dir_all(root.join(sub)).expect("the container's root");
    }
    fs::create_dir_all(&tool_cwd).expect("a directory");
    let mut binds = vec!["/usr".to_owned(), "/dev".to_owned()];
    for top in &tops {
        if !binds.contains(top) {
            fs::create_dir_all(root.join(&top[1..])).expect("a mount point");
            binds.push(top.clone());
        }
    }
    for link in ["bin", "lib", "lib64", "sbin"] {
        let host = Path::new("/").join(link);
        match fs::read_link(&host) {
            Ok(to) => std::os::unix::fs::symlink(to, root.join(link)).expect("a link"),
            Err(_) if host.is_dir() => {
                fs::create_dir_all(root.join(link)).expect("a mount point");
                binds.push(host.display().to_string());
            }
            Err(_) => {}
        }
    }
    // A host directory the container's /tmp names, which does not exist
    // inside its root; and the agent where the container cannot see it,
    // so that it is copied into the container's /tmp.
    let host_dir = PathBuf::from(format!(
        "/var/tmp/hprof-rs-attach-sec-{}",
        std::process::id()
    ));
    let agent_dir = PathBuf::from(format!(
        "/var/tmp/hprof-rs-attach-sec-agent-{}",
        std::process::id()
    ));
    for d in [&host_dir, &agent_dir] {
        let _ = fs::remove_dir_all(d);
        fs::create_dir_all(d).expect("a host directory");
    }
    let agent = agent_dir.join("libhprof_rs.so");
    fs::copy(common::agent_lib(), &agent).expect("the agent's copy");
    let tmp_link = root.join("tmp");
    std::os::unix::fs::symlink(&host_dir, &tmp_link).expect("the /tmp link");

    let mut script = String::new();
    for bind in &binds {
        script.push_str(&format!(
            "mount --bind '{bind}' '{}{bind}' && ",
            root.display()
        ));
    }
    script.push_str(&format!(
        "mount -t proc proc '{}/proc' && exec chroot --userspec={NOBODY}:{NOBODY} '{}' {}",
        root.display(),
        root.display(),
        java_words(&jdk, Path::new("/"), &["Sleeper", "90"])
    ));
    let mut cmd = Command::new("unshare");
    cmd.args(["--fork", "--pid", "--mount", "sh", "-c"])
        .arg(&script)
        .current_dir(&scratch)
        .stdin(Stdio::null());
    common::clean_java_env(&mut cmd);
    let mut unshare = Spawned::spawn(&mut cmd);
    unshare.wait_for_line("READY", READY_WAIT);
    let pid = namespaces::forked_child(unshare.pid());
    let empty = |dir: &Path| fs::read_dir(dir).expect("a directory").next().is_none();

    // /tmp -> an absolute host path: resolved inside the root, it is not there.
    let out = attach_with(&tool_cwd, pid, "cpu=samples", &agent);
    assert_refused(&out, "inside its root", &what);
    assert!(
        empty(&host_dir),
        "{what}: written into {}",
        host_dir.display()
    );
    // /tmp -> /proc/self/cwd: a magic link, not followed.
    fs::remove_file(&tmp_link).expect("the old link");
    std::os::unix::fs::symlink("/proc/self/cwd", &tmp_link).expect("the /tmp link");
    let out = attach_with(&tool_cwd, pid, "cpu=samples", &agent);
    assert_refused(&out, "inside its root", &what);
    assert!(empty(&tool_cwd), "{what}: written into our directory");
    assert!(
        empty(&host_dir),
        "{what}: written into {}",
        host_dir.display()
    );
    let (stdout, _) = unshare.output_so_far();
    assert!(!stdout.contains("Full thread dump"), "{what}: SIGQUIT sent");

    // SAFETY: kill(2) of the JVM this test started in its namespace.
    unsafe { libc::kill(pid, libc::SIGTERM) };
    let _ = unshare.wait_timeout(EXIT_WAIT);
    for d in [&host_dir, &agent_dir] {
        let _ = fs::remove_dir_all(d);
    }
}

/// The agent's private directories for heap dumps in `dir`
/// (`<output>.<pid>.TMP-<random>`).
fn private_dirs(dir: &Path) -> Vec<PathBuf> {
    fs::read_dir(dir)
        .expect("the scratch directory")
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().contains(".TMP-"))
        })
        .collect()
}

#[test]
fn a_jvm_that_exits_during_an_attached_heap_dump_leaves_no_temporary_file() {
    common::on_each(&common::jdks_of(&[11, 17, 21, 25]), |jdk| {
        let what = format!("System.exit during an attached heap dump on {}", jdk.label);
        let dir = common::scratch_dir(&format!("attach-sec-exit-dump-{}", jdk.label));
        let mut cmd = common::java_command(jdk, &dir);
        cmd.arg("ExitDuringDump").arg("10").stdin(Stdio::piped());
        let mut jvm = Spawned::spawn(&mut cmd);
        jvm.wait_for_line("READY", READY_WAIT);
        let mut cmd = Command::new(common::hprof_rs_bin());
        cmd.args([
            "attach",
            &jvm.pid().to_string(),
            "heap=dump,format=b,file=dump.hprof",
        ])
        .arg("--agent")
        .arg(common::agent_lib())
        .current_dir(&dir);
        let attach = Spawned::spawn(&mut cmd);
        // Once the JVM writes its dump into the private directory, the
        // program exits.
        common::wait_until(
            READY_WAIT,
            || format!("{what}: no dump started in {}", dir.display()),
            || {
                private_dirs(&dir).iter().any(|d| {
                    fs::read_dir(d).is_ok_and(|mut files| {
                        files.any(|f| f.is_ok_and(|f| f.metadata().is_ok_and(|m| m.len() > 0)))
                    })
                })
            },
        );
        jvm.send_line("exit");
        let out = attach.wait_timeout(EXIT_WAIT);
        let program = jvm.wait_timeout(EXIT_WAIT);
        common::assert_success(&program, &format!("{what}: the program"));
        eprintln!("{what}: attach said {}", common::describe(&out));
        if !out.status.success() {
            assert_refused(&out, "exited", &what);
            assert!(
                !common::stderr_text(&out).contains("status : "),
                "{what}: {}",
                common::describe(&out)
            );
        }
        assert_eq!(
            private_dirs(&dir),
            Vec::<PathBuf>::new(),
            "{what}: temporary files left"
        );
    });
}

#[test]
fn an_agent_named_by_the_environment_that_another_user_could_change_is_not_used() {
    if !is_root() {
        eprintln!("skipped: needs root");
        return;
    }
    let dir = common::scratch_dir("attach-sec-agent-env");
    let copy = dir.join("libhprof_rs.so");
    fs::copy(common::agent_lib(), &copy).expect("the agent's copy");
    let agent_path = || {
        let mut cmd = Command::new(common::hprof_rs_bin());
        cmd.arg("agent-path").env("HPROF_RS_AGENT", &copy);
        common::run(&mut cmd)
    };
    // nobody's file, then root's but writable by anyone.
    std::os::unix::fs::chown(&copy, Some(65534), Some(65534)).expect("chown");
    assert_refused(&agent_path(), "is not used", "nobody's agent");
    std::os::unix::fs::chown(&copy, Some(0), Some(0)).expect("chown");
    fs::set_permissions(&copy, fs::Permissions::from_mode(0o666)).expect("chmod");
    assert_refused(&agent_path(), "is not used", "an agent anyone can write");
    fs::set_permissions(&copy, fs::Permissions::from_mode(0o755)).expect("chmod");
    let out = agent_path();
    common::assert_success(&out, "root's agent");
    assert_eq!(common::stdout_text(&out).trim(), copy.display().to_string());
}
