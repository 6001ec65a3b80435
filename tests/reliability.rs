//! Reliability: each test is one way the agent once hurt the program it
//! profiled (found by trying it as a hostile user would), run on the JDKs
//! where it applies, and checks that the program now runs as it does alone
//! and that the profile is complete.

mod common;

use common::{AsciiProfile, Jdk, assert_print_accepts, cpu_count_in, jdks_of, on_each};
use std::ffi::OsString;
use std::fs;
use std::net::TcpListener;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

/// `java <jvm_args> <main> <args>` in `dir`, with a timeout.
fn run_java(
    jdk: &Jdk,
    dir: &Path,
    jvm_args: &[OsString],
    main: &str,
    args: &[&str],
    timeout: Duration,
) -> Output {
    let mut cmd = common::java_command(jdk, dir);
    cmd.args(jvm_args).arg(main).args(args);
    common::run_timeout(&mut cmd, timeout)
}

/// The fixture `Hello` with the agent and `options`.
fn run_hello(jdk: &Jdk, dir: &Path, options: &str) -> Output {
    run_java(
        jdk,
        dir,
        &[agent(options)],
        "Hello",
        &[],
        common::DEFAULT_TIMEOUT,
    )
}

fn agent(options: &str) -> OsString {
    common::agentpath_arg(options)
}

fn scratch(name: &str, jdk: &Jdk) -> PathBuf {
    common::scratch_dir(&format!("reliability-{name}-{}", jdk.label))
}

// ---------------------------------------------------------------------------
// 1. file= never destroys what is at the path
// ---------------------------------------------------------------------------

/// An existing file is written in place (a hard link to it sees the
/// profile: it was not unlinked and replaced), and a link is written through.
#[test]
fn file_option_writes_in_place_and_never_replaces_the_file() {
    on_each(&jdks_of(&[17, 25]), |jdk| {
        let dir = scratch("in-place", jdk);
        let target = dir.join("profile.txt");
        fs::write(
            &target,
            "an older, longer profile that must be truncated\n".repeat(100),
        )
        .unwrap();
        let other_name = dir.join("other-name.txt");
        fs::hard_link(&target, &other_name).unwrap();
        let inode = fs::metadata(&target).unwrap().ino();
        let out = run_hello(jdk, &dir, &format!("heap=sites,file={}", target.display()));
        common::assert_success(&out, "Hello with file=<existing file>");
        assert_eq!(
            fs::metadata(&target).unwrap().ino(),
            inode,
            "the file was replaced"
        );
        let seen = fs::read_to_string(&other_name).unwrap();
        assert!(
            seen.starts_with("JAVA PROFILE 1.0.1") && !seen.contains("an older"),
            "the other name of the file does not see the new profile: {:.200}",
            seen
        );
        AsciiProfile::read(&target);

        // A symbolic link is written through, and stays a link.
        let real = dir.join("real.txt");
        let link = dir.join("link.txt");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let out = run_hello(jdk, &dir, &format!("heap=sites,file={}", link.display()));
        common::assert_success(&out, "Hello with file=<symlink>");
        assert!(
            fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        AsciiProfile::read(&real);
    });
}

fn make_fifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: mkfifo with a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0, "mkfifo");
}

/// A FIFO is written into as it is (a reader on the other end gets the
/// profile and the FIFO stays a FIFO); with no reader, the agent refuses
/// with HPROF's error at once instead of holding the JVM's start.
#[test]
fn file_option_writes_into_a_fifo_and_refuses_one_without_reader() {
    on_each(&jdks_of(&[17, 25]), |jdk| {
        let dir = scratch("fifo", jdk);
        let fifo = dir.join("profile.fifo");
        make_fifo(&fifo);
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || fs::read(&fifo).unwrap())
        };
        // The reader opens the FIFO first: give it the time to block in open.
        std::thread::sleep(Duration::from_millis(300));
        let out = run_hello(jdk, &dir, &format!("heap=sites,file={}", fifo.display()));
        common::assert_success(&out, "Hello with file=<fifo>");
        let bytes = reader.join().unwrap();
        assert!(
            bytes.starts_with(b"JAVA PROFILE 1.0.1"),
            "the reader got no profile"
        );
        AsciiProfile::parse(&bytes, "the profile read from the FIFO");
        assert!(
            fs::metadata(&fifo).unwrap().file_type().is_fifo(),
            "not a FIFO any more"
        );

        let out = run_java(
            jdk,
            &dir,
            &[agent(&format!("heap=sites,file={}", fifo.display()))],
            "Hello",
            &[],
            Duration::from_secs(30),
        );
        common::assert_exit_code(&out, 1, "file=<fifo without reader>");
        let err = common::stderr_text(&out);
        assert!(
            err.contains("HPROF ERROR: can't create profile file"),
            "stderr: {err}"
        );
        assert!(fs::metadata(&fifo).unwrap().file_type().is_fifo());
    });
}

// ---------------------------------------------------------------------------
// 2. depth= costs are bounded
// ---------------------------------------------------------------------------

#[test]
fn a_huge_depth_is_capped_not_allocated() {
    on_each(&jdks_of(&[11, 17, 25]), |jdk| {
        let dir = scratch("depth", jdk);
        let runs = [
            (2147483647u64, "heap=sites", "AllocThreads", "0"),
            (10000000, "cpu=samples", "Busy", "500"),
        ];
        for (depth, mode, main, arg) in runs {
            let file = dir.join(format!("depth-{depth}.txt"));
            let args: &[&str] = if arg == "0" { &[] } else { &[arg] };
            let out = run_java(
                jdk,
                &dir,
                &[agent(&format!(
                    "{mode},depth={depth},file={}",
                    file.display()
                ))],
                main,
                args,
                Duration::from_secs(60),
            );
            common::assert_success(&out, &format!("{mode},depth={depth}"));
            let err = common::stderr_text(&out);
            assert!(
                err.contains(&format!("depth={depth} is taken as 1024")),
                "no note about the depth: {err}"
            );
            let deepest = AsciiProfile::read(&file)
                .traces()
                .map(|t| t.frames.len())
                .max()
                .unwrap_or(0);
            assert!((1..=1024).contains(&deepest), "deepest trace: {deepest}");
        }
    });
}

// ---------------------------------------------------------------------------
// 3. a socket peer that never reads cannot hold the JVM's exit
// ---------------------------------------------------------------------------

#[test]
fn a_peer_that_never_reads_delays_exit_by_the_stall_limit_at_most() {
    on_each(&jdks_of(&[17, 25]), |jdk| {
        let dir = scratch("stalled-peer", jdk);
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        // Accepts, then holds the connection without ever reading.
        let holder = std::thread::spawn(move || {
            let (conn, _) = listener.accept().unwrap();
            std::thread::sleep(Duration::from_secs(60));
            drop(conn);
        });
        let started = Instant::now();
        let out = run_java(
            jdk,
            &dir,
            &[
                OsString::from("-Xmx256m"),
                agent(&format!("heap=dump,format=b,net=127.0.0.1:{port}")),
            ],
            "BigHeap",
            &["64"],
            Duration::from_secs(45),
        );
        let took = started.elapsed();
        common::assert_success(&out, "BigHeap with a peer that never reads");
        assert_eq!(common::stdout_text(&out).trim(), "held");
        let err = common::stderr_text(&out);
        assert!(
            err.contains("made no progress for 5 s") && err.contains("bytes of profile dropped"),
            "stderr does not say what was dropped: {err}"
        );
        assert!(took < Duration::from_secs(40), "exit took {took:?}");
        drop(holder);
    });
}

// ---------------------------------------------------------------------------
// 4. the sampler's sleep never delays the exit
// ---------------------------------------------------------------------------

#[test]
fn a_long_sampling_interval_does_not_delay_the_exit() {
    on_each(&jdks_of(&[17, 25]), |jdk| {
        let dir = scratch("interval", jdk);
        for interval in ["20000", "2147483647"] {
            let started = Instant::now();
            let out = run_java(
                jdk,
                &dir,
                &[agent(&format!("cpu=samples,interval={interval}"))],
                "Hello",
                &[],
                Duration::from_secs(60),
            );
            common::assert_success(&out, &format!("interval={interval}"));
            // Hello alone takes well under a second; the old sampler slept
            // a whole interval (20 s, or forever) before the VM could end.
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "interval={interval}: the run took {:?}",
                started.elapsed()
            );
            AsciiProfile::read(&dir.join("java.hprof.txt"));
        }
    });
}

// ---------------------------------------------------------------------------
// 9. an OutOfMemoryError that leaves the heap full still leaves the profile
// ---------------------------------------------------------------------------

#[test]
fn an_out_of_memory_death_with_the_heap_full_leaves_the_whole_profile() {
    on_each(&jdks_of(&[11, 17, 21, 25]), |jdk| {
        let dir = scratch("heap-full", jdk);
        let alone = run_java(
            jdk,
            &dir,
            &[OsString::from("-Xmx32m")],
            "HeapFull",
            &[],
            common::DEFAULT_TIMEOUT,
        );
        common::assert_exit_code(&alone, 1, "HeapFull alone");
        for options in ["heap=sites", "cpu=samples", "heap=sites,format=b"] {
            let file = dir.join(if options.contains("format=b") {
                "java.hprof"
            } else {
                "java.hprof.txt"
            });
            let out = run_java(
                jdk,
                &dir,
                &[OsString::from("-Xmx32m"), agent(options)],
                "HeapFull",
                &[],
                common::DEFAULT_TIMEOUT,
            );
            common::assert_exit_code(&out, 1, &format!("HeapFull {options}"));
            assert!(common::stdout_text(&out).starts_with("filling the heap"));
            assert_print_accepts(&file, &format!("HeapFull {options}"));
            if options.contains("format=b") {
                continue;
            }
            let profile = AsciiProfile::read(&file);
            if options == "heap=sites" {
                let sites = profile
                    .sites_blocks()
                    .next()
                    .unwrap_or_else(|| panic!("{options}: no SITES in the file"));
                let long_arrays: u64 = sites
                    .rows
                    .iter()
                    .filter(|r| r.class_name == "long[]")
                    .map(|r| r.allocated_objects)
                    .sum();
                // Each long[16] is 144 bytes: a 32 MB heap holds well over 100,000.
                assert!(
                    long_arrays > 100_000,
                    "{options}: {long_arrays} long[] counted"
                );
            } else {
                assert!(
                    profile.cpu_blocks().next().is_some(),
                    "{options}: no CPU SAMPLES in the file"
                );
            }
        }
    });
}

// ---------------------------------------------------------------------------
// 10. threads that use less than one interval of CPU are sampled fairly
// ---------------------------------------------------------------------------

#[test]
fn short_threads_add_up_to_the_cpu_they_used() {
    on_each(&jdks_of(&[17, 25]), |jdk| {
        let dir = scratch("short-threads", jdk);
        let out = run_java(
            jdk,
            &dir,
            &[agent("cpu=samples,interval=10")],
            "ShortThreads",
            &["2000", "8"],
            Duration::from_secs(300),
        );
        common::assert_success(&out, "ShortThreads 2000 8");
        let stdout = common::stdout_text(&out);
        let cpu_ms: u64 = stdout
            .trim()
            .strip_prefix("cpu_ms=")
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no cpu_ms in {stdout:?}"));
        let samples: u64 = AsciiProfile::read(&dir.join("java.hprof.txt"))
            .cpu_blocks()
            .map(|cpu| cpu.total)
            .sum();
        // One sample per 10 ms of CPU: the threads' spinning alone is
        // cpu_ms / 10; the rest of the program (start-up, the main thread,
        // each thread's own start and end) adds a little.
        let expected = cpu_ms as f64 / 10.0;
        let ratio = samples as f64 / expected;
        eprintln!(
            "[{}] {samples} samples, {cpu_ms} ms of CPU: ratio {ratio:.3}",
            jdk.label
        );
        assert!(
            (0.9..=1.25).contains(&ratio),
            "{samples} samples for {cpu_ms} ms of CPU in 2000 short threads (ratio {ratio:.2})"
        );
    });
}

// ---------------------------------------------------------------------------
// 12. every thread serial a trace refers to has its THREAD START
// ---------------------------------------------------------------------------

fn assert_every_trace_thread_started(profile: &AsciiProfile, what: &str) {
    let started = profile.threads();
    let mut referred = 0;
    for trace in profile.traces() {
        if let Some(thread) = trace.thread_serial {
            referred += 1;
            assert_ne!(thread, 0, "{what}: TRACE {} has thread=0", trace.serial);
            assert!(
                started.contains_key(&thread),
                "{what}: TRACE {} refers to thread {thread}, which has no THREAD START",
                trace.serial
            );
        }
    }
    assert!(referred > 0, "{what}: no trace carries a thread");
}

#[test]
fn heap_sites_with_thread_y_starts_every_thread_it_names() {
    on_each(&jdks_of(&[11, 17, 25]), |jdk| {
        let dir = scratch("sites-threads", jdk);
        let out = run_java(
            jdk,
            &dir,
            &[agent("heap=sites,thread=y,depth=2")],
            "AllocThreads",
            &[],
            common::DEFAULT_TIMEOUT,
        );
        common::assert_success(&out, "AllocThreads heap=sites,thread=y");
        let profile = AsciiProfile::read(&dir.join("java.hprof.txt"));
        assert_every_trace_thread_started(&profile, "heap=sites,thread=y");
    });
}

/// cpu=times,thread=y: the calls of threads that ended before the dump stay
/// under their own serial (the agent once read the serial from the dead
/// Thread and wrote thread=0 on every such trace).
#[test]
fn cpu_times_with_thread_y_keeps_ended_threads_serials() {
    on_each(&jdks_of(&[11, 17, 21, 25]), |jdk| {
        let dir = scratch("times-threads", jdk);
        let out = run_java(
            jdk,
            &dir,
            &[agent("cpu=times,timing=calls,thread=y,cutoff=0")],
            "Threads",
            &[],
            common::DEFAULT_TIMEOUT,
        );
        common::assert_success(&out, "Threads cpu=times,thread=y");
        let profile = AsciiProfile::read(&dir.join("java.hprof.txt"));
        assert_every_trace_thread_started(&profile, "cpu=times,thread=y");
        let workers: std::collections::BTreeMap<u32, String> = profile
            .threads()
            .into_iter()
            .filter(|(_, name)| name.starts_with("worker-"))
            .collect();
        assert_eq!(workers.len(), 3, "three workers: {workers:?}");
        for (serial, name) in &workers {
            let timed_work = profile.traces().any(|t| {
                t.thread_serial == Some(*serial)
                    && t.frames.first().is_some_and(|f| f.method_name == "work")
            });
            assert!(
                timed_work,
                "no trace of {name}'s work() under its serial {serial}"
            );
        }
    });
}

// ---------------------------------------------------------------------------
// 7. cpu=times and the JVM's flight recorder run together
// ---------------------------------------------------------------------------

#[test]
fn cpu_times_runs_with_the_flight_recorder() {
    on_each(&jdks_of(&[11, 17, 21, 25]), |jdk| {
        let dir = scratch("times-jfr", jdk);
        let recording = format!(
            "-XX:StartFlightRecording=filename={}",
            dir.join("rec.jfr").display()
        );
        let out = run_java(
            jdk,
            &dir,
            &[
                OsString::from(recording),
                agent("cpu=times,timing=calls,cutoff=0"),
            ],
            "TimedCalls",
            &[],
            common::DEFAULT_TIMEOUT,
        );
        common::assert_success(&out, "TimedCalls under cpu=times with JFR");
        assert!(dir.join("rec.jfr").exists(), "JFR wrote no recording");
        let a_calls: u64 = AsciiProfile::read(&dir.join("java.hprof.txt"))
            .cpu_blocks()
            .map(|cpu| cpu_count_in(cpu, "TimedCalls.a"))
            .sum();
        assert_eq!(a_calls, 12345, "TimedCalls.a calls under JFR");
    });
}

// ---------------------------------------------------------------------------
// 14. cpu=times writes nothing in the temporary directory
// ---------------------------------------------------------------------------

/// The Tracker class is defined from the agent's own bytes: no directory
/// or file of the run appears in TMPDIR, and a directory a run of an
/// earlier version left there is not the agent's to remove.
#[test]
fn cpu_times_writes_nothing_in_the_temporary_directory() {
    on_each(&jdks_of(&[11, 17, 25]), |jdk| {
        let dir = scratch("times-tmpdir", jdk);
        let temp = dir.join("tmp");
        let earlier = temp.join("hprof-rs-4000000001/hprof_rs");
        fs::create_dir_all(&earlier).unwrap();
        fs::write(earlier.join("Tracker.class"), b"left by an earlier version").unwrap();
        let mut cmd = common::java_command(jdk, &dir);
        cmd.env("TMPDIR", &temp)
            .arg(agent("cpu=times"))
            .arg("TimedCalls");
        let out = common::run(&mut cmd);
        common::assert_success(&out, "TimedCalls under cpu=times");
        let left: Vec<_> = fs::read_dir(&temp)
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(left, ["hprof-rs-4000000001"], "in TMPDIR: {left:?}");
        assert_eq!(
            fs::read(earlier.join("Tracker.class")).unwrap(),
            b"left by an earlier version"
        );
        let profile = AsciiProfile::read(&dir.join("java.hprof.txt"));
        assert!(
            profile.cpu_blocks().next().is_some(),
            "no CPU TIME: the Tracker did not run"
        );
    });
}

// ---------------------------------------------------------------------------
// 13. an agent that refuses to start leaves no file behind
// ---------------------------------------------------------------------------

#[test]
fn loading_the_agent_twice_leaves_no_file_and_keeps_an_existing_one() {
    on_each(&jdks_of(&[17, 25]), |jdk| {
        let dir = scratch("twice", jdk);
        let twice = [agent("heap=sites"), agent("heap=sites")];
        let out = run_java(jdk, &dir, &twice, "Hello", &[], common::DEFAULT_TIMEOUT);
        common::assert_exit_code(&out, 1, "agent loaded twice");
        assert!(
            common::stderr_text(&out).contains("Cannot load this JVM TI agent twice"),
            "{}",
            common::stderr_text(&out)
        );
        let file = dir.join("java.hprof.txt");
        assert!(!file.exists(), "an empty file was left behind");

        // A file that was there before is left exactly as it was.
        fs::write(&file, "precious\n").unwrap();
        let out = run_java(jdk, &dir, &twice, "Hello", &[], common::DEFAULT_TIMEOUT);
        common::assert_exit_code(&out, 1, "agent loaded twice, file present");
        assert_eq!(fs::read_to_string(&file).unwrap(), "precious\n");
    });
}

// ---------------------------------------------------------------------------
// 14. a file name that is not UTF-8 is kept byte for byte
// ---------------------------------------------------------------------------

#[test]
fn a_file_name_that_is_not_utf8_is_written_under_that_name() {
    on_each(&jdks_of(&[17, 25]), |jdk| {
        let dir = scratch("non-utf8", jdk);
        let name = b"profile-\xe9t\xe9.txt";
        let mut arg = common::agentpath_arg("heap=sites,file=").into_vec();
        arg.extend_from_slice(name);
        let out = run_java(
            jdk,
            &dir,
            &[OsString::from_vec(arg)],
            "Hello",
            &[],
            common::DEFAULT_TIMEOUT,
        );
        common::assert_success(&out, "file=<latin-1 name>");
        let path = dir.join(std::ffi::OsStr::from_bytes(name));
        assert!(
            path.exists(),
            "no file named {:?}; the directory holds {:?}",
            path,
            fs::read_dir(&dir)
                .unwrap()
                .flatten()
                .map(|e| e.file_name())
                .collect::<Vec<_>>()
        );
        AsciiProfile::read(&path);
    });
}

// ---------------------------------------------------------------------------
// 15. a slow disk is waited for, never abandoned
// ---------------------------------------------------------------------------

/// The output file's first write sleeps 7 s (hidden `X=0x80000`), longer
/// than the 5 s after which a socket peer that does not read is given up:
/// a file is written to the end however slowly, so the heap dump and the
/// SITES of `heap=all` (ASCII) and the binary heap dump come out complete,
/// with HeapGraph's exactly 1234 leaves, and stderr has no ERROR line,
/// only verbose's note of how long the output stood still.
#[test]
fn a_slow_output_file_is_written_to_the_end() {
    on_each(&jdks_of(&[17, 25]), |jdk| {
        let dir = scratch("slow-file", jdk);
        for (options, file) in [
            ("heap=all,cutoff=0,X=0x80000,file=all.txt", "all.txt"),
            ("heap=dump,format=b,X=0x80000,file=dump.hprof", "dump.hprof"),
        ] {
            let what = format!("{options} on {}", jdk.label);
            let out = run_java(
                jdk,
                &dir,
                &[agent(options)],
                "HeapGraph",
                &["0"],
                common::DEFAULT_TIMEOUT,
            );
            common::assert_success(&out, &what);
            let stderr = common::stderr_text(&out);
            assert!(!stderr.contains("ERROR"), "{what}: {stderr}");
            assert!(
                stderr.contains("HPROF: the output made no progress for up to "),
                "{what}: verbose should say the output stood still: {stderr}"
            );
            let path = dir.join(file);
            assert_print_accepts(&path, &what);
            if file.ends_with(".txt") {
                let profile = AsciiProfile::read_whole_file(&path);
                let sites = profile.sites_of_class("HeapGraph$Leaf");
                let allocated: u64 = sites.iter().map(|r| r.allocated_objects).sum();
                assert_eq!(allocated, 1234, "{what}: SITES of HeapGraph$Leaf");
                let text = fs::read_to_string(&path).unwrap();
                assert_eq!(
                    text.matches("class=HeapGraph$Leaf@").count(),
                    1234,
                    "{what}: Leaf objects in the heap dump"
                );
            } else {
                // The class histogram of the dump: rank, instances, bytes, class.
                let top = common::run(
                    std::process::Command::new(common::hprof_rs_bin())
                        .args(["top", "-n", "100000"])
                        .arg(&path),
                );
                common::assert_success(&top, &format!("{what}: hprof-rs top"));
                let leaves: Vec<String> = common::stdout_text(&top)
                    .lines()
                    .filter(|l| l.ends_with(" HeapGraph$Leaf"))
                    .map(|l| l.split_whitespace().nth(1).unwrap_or_default().to_owned())
                    .collect();
                assert_eq!(leaves, ["1234"], "{what}: Leaf instances in the heap dump");
            }
        }
    });
}
