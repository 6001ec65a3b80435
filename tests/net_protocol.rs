//! `net=host:port` with HPROF's command protocol, both ends, on JDK 11,
//! 17, 21 and 25: the fixture `NetServer` (busy, allocating, running until
//! a `stop` file appears) sends its output to `hprof-rs listen`, and
//! commands sent mid-run with `hprof-rs send` write their sections into it:
//! - ASCII: `sites`, `sites --changed`, `sites --by-alloc`, `cpu` while
//!   busy, `control alloc off` (SITES stop growing) and `on`, unknown
//!   commands (reported once, ignored), `exit` (the program ends through
//!   `System.exit(0)` with a complete file);
//! - binary: `dump` gives a heap dump VisualVM's heap library loads,
//!   `summary` a HEAP SUMMARY, and the received file has the records that
//!   `file=` writes for the same run;
//! - a peer that closes mid-run: the program finishes with its own exit
//!   status and one message, and the listener thread spends no CPU after;
//! - a peer that reads 1 KB per second: the program's wall time grows by
//!   at most the output's stall limit.

mod common;

use common::{AsciiProfile, Jdk, Spawned};
use hprof_rs::format::ascii::{CpuTitle, Section, SitesSection};
use hprof_rs::format::binary::reader::RecordReader;
use std::collections::BTreeSet;
use std::fs;
use std::io::Read;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

/// The JDKs every check runs on.
const MATRIX: [u32; 4] = [11, 17, 21, 25];

/// Longest wait for a line, a record or a process.
const PATIENCE: Duration = Duration::from_secs(90);

/// What the output may stall the program before it is dropped: the
/// writer's limit (src/output/writer.rs, 5 s), and one second more for the
/// close to give up on a writer stuck in its last write.
const STALL_POLICY: Duration = Duration::from_secs(6);

fn hprof_rs() -> Command {
    Command::new(common::hprof_rs_bin())
}

/// Two free local ports (both held while chosen, so they differ).
fn free_ports() -> (u16, u16) {
    let a = TcpListener::bind("127.0.0.1:0").expect("a free port");
    let b = TcpListener::bind("127.0.0.1:0").expect("a free port");
    (
        a.local_addr().unwrap().port(),
        b.local_addr().unwrap().port(),
    )
}

/// A running `hprof-rs listen --once`, its ports and its output file.
struct Front {
    process: Spawned,
    port: u16,
    control: u16,
    file: PathBuf,
}

impl Front {
    fn start(dir: &Path) -> Front {
        let (port, control) = free_ports();
        let file = dir.join("received");
        let mut cmd = hprof_rs();
        cmd.args(["listen", "--once", "--port", &port.to_string()])
            .args(["--control-port", &control.to_string(), "-o"])
            .arg(&file)
            .stdin(Stdio::null());
        let mut process = Spawned::spawn(&mut cmd);
        process.wait_for_line(
            &format!("hprof-rs: listening on 127.0.0.1:{port}"),
            PATIENCE,
        );
        Front {
            process,
            port,
            control,
            file,
        }
    }

    fn wait_connected(&mut self) {
        let line = format!("hprof-rs: JVM 1 connected, writing {}", self.file.display());
        self.process.wait_for_line(&line, PATIENCE);
    }

    /// `hprof-rs send` of `command`, which must be taken.
    fn send(&self, command: &str) {
        let mut cmd = hprof_rs();
        cmd.args(["send", "--port", &self.control.to_string()])
            .args(command.split_whitespace());
        let out = common::run(&mut cmd);
        common::assert_success(&out, &format!("hprof-rs send {command}"));
    }

    /// Waits for `listen --once` to end (the JVM has disconnected).
    fn finish(self) -> PathBuf {
        let out = self.process.wait_timeout(PATIENCE);
        common::assert_success(&out, "hprof-rs listen --once");
        self.file
    }
}

/// `NetServer args` under the agent with `options` and `net=` to `port`,
/// once it printed SERVING.
fn start_server(jdk: &Jdk, dir: &Path, options: &str, port: u16, args: &[&str]) -> Spawned {
    let mut cmd = common::java_command(jdk, dir);
    cmd.arg(common::agentpath_arg(&format!(
        "{options},net=127.0.0.1:{port}"
    )))
    .arg("NetServer")
    .args(args);
    let mut jvm = Spawned::spawn(&mut cmd);
    jvm.wait_for_line("SERVING", PATIENCE);
    jvm
}

/// `hprof-rs listen` in `dir`, and `NetServer 3` (exit status 3) with
/// `options` connected to it.
fn serve(jdk: &Jdk, dir: &Path, options: &str) -> (Front, Spawned) {
    let mut front = Front::start(dir);
    let jvm = start_server(jdk, dir, options, front.port, &["3"]);
    front.wait_connected();
    (front, jvm)
}

fn stop_server(dir: &Path) {
    fs::write(dir.join("stop"), b"").expect("stop file");
}

/// The allocated objects of `class` in one SITES block.
fn allocated(block: &SitesSection, class: &str) -> u64 {
    block
        .rows
        .iter()
        .filter(|r| r.class_name == class)
        .map(|r| r.allocated_objects)
        .sum()
}

fn has_class(block: &SitesSection, class: &str) -> bool {
    block.rows.iter().any(|r| r.class_name == class)
}

#[test]
fn commands_sent_mid_run_write_their_sections() {
    common::on_each(&common::jdks_of(&MATRIX), |jdk| {
        let dir = common::scratch_dir(&format!("net-commands-{}", jdk.label));
        let options = "heap=sites,cpu=samples,depth=4";
        let (front, jvm) = serve(jdk, &dir, options);
        // (SERVING comes just before the first Chunk.)
        thread::sleep(Duration::from_millis(500));
        front.send("sites --cutoff 0"); // SITES 0: every site
        front.send("sites --changed --cutoff 0"); // 1: what changed since 0
        front.send("sites --by-alloc"); // 2
        thread::sleep(Duration::from_secs(1));
        front.send("cpu --cutoff 0");
        front.send("traces");
        front.send("control alloc off");
        // Callbacks under way when the event was turned off end first.
        thread::sleep(Duration::from_millis(300));
        front.send("sites"); // 3
        thread::sleep(Duration::from_millis(500));
        front.send("sites"); // 4: as 3
        front.send("control alloc on");
        thread::sleep(Duration::from_millis(500));
        front.send("raw 09 00000001 00000000"); // unknown tag 9
        front.send("raw 2A 00000002 00000002 ABCD"); // unknown, with a body
        front.send("sites"); // 5: grown again, and the program still runs
        front.send("gc");
        front.send("exit");
        let out = jvm.wait_timeout(PATIENCE);
        let what = format!("{} {options} with commands", jdk.label);
        common::assert_exit_code(&out, 0, &format!("{what}: EXIT is System.exit(0)"));
        let (stdout, stderr) = (common::stdout_text(&out), common::stderr_text(&out));
        assert!(!stdout.contains("STOPPED"), "{what}: ended by itself");
        assert_eq!(
            stderr
                .matches("HPROF ERROR: failed to recognize cmd 9")
                .count(),
            1,
            "{what}: one report for two unknown commands\n{stderr}"
        );
        assert_eq!(
            stderr.matches("HPROF ERROR").count(),
            1,
            "{what}:\n{stderr}"
        );

        let file = front.finish();
        common::assert_print_accepts(&file, &what);
        let profile = AsciiProfile::read_whole_file(&file);
        let sites: Vec<&SitesSection> = profile.sites_blocks().collect();
        assert_eq!(sites.len(), 7, "{what}: 6 requested + the exit dump's");
        assert_eq!(allocated(sites[0], "NetServer$Once"), 100, "{what}");
        assert!(has_class(sites[0], "NetServer$Chunk"), "{what}");
        assert!(
            !has_class(sites[1], "NetServer$Once") && has_class(sites[1], "NetServer$Chunk"),
            "{what}: --changed lists only what changed: {:?}",
            sites[1].rows
        );
        assert_eq!(sites[2].ordered_by, "allocated bytes", "{what}");
        assert_eq!(sites[0].ordered_by, "live bytes", "{what}");
        let chunks: Vec<u64> = sites
            .iter()
            .map(|s| allocated(s, "NetServer$Chunk"))
            .collect();
        assert!(chunks[0] > 0, "{what}: {chunks:?}");
        assert_eq!(
            chunks[3], chunks[4],
            "{what}: no allocation counted while tracking is off: {chunks:?}"
        );
        assert!(
            chunks[5] > chunks[4] && chunks[4] > chunks[0],
            "{what}: counting again once on: {chunks:?}"
        );
        let cpu: Vec<_> = profile.cpu_blocks().collect();
        assert_eq!(cpu.len(), 2, "{what}: requested + the exit dump's");
        assert!(
            common::cpu_count_in(cpu[0], "NetServer.spin") > 0,
            "{what}: the busy method is sampled: {:?}",
            cpu[0].rows
        );
    });
}

/// The tags of the records of a binary file in order, and the end offset
/// of its first HEAP DUMP END record, reading as far as the file is whole.
fn record_tags(path: &Path) -> (Vec<u8>, Option<usize>) {
    let bytes = fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let Ok(mut reader) = RecordReader::new(bytes.as_slice()) else {
        return (Vec::new(), None);
    };
    let mut tags = Vec::new();
    let mut first_dump_end = None;
    while let Some(Ok((_, record))) = reader.next() {
        let tag = record.body.tag();
        tags.push(tag);
        if tag == HEAP_DUMP_END && first_dump_end.is_none() {
            first_dump_end = Some(reader.offset() as usize);
        }
    }
    (tags, first_dump_end)
}

/// The kinds of record of a binary file, but END THREAD (threads the JVM
/// ends on its own may end before or after the exit).
fn record_kinds(path: &Path) -> BTreeSet<u8> {
    let mut kinds: BTreeSet<u8> = record_tags(path).0.into_iter().collect();
    kinds.remove(&END_THREAD);
    kinds
}

fn first(tags: &[u8], tag: u8) -> Option<usize> {
    tags.iter().position(|&t| t == tag)
}

const HEAP_SUMMARY: u8 = 0x07;
const HEAP_DUMP_END: u8 = 0x2C;
const END_THREAD: u8 = 0x0B;
const TRACE: u8 = 0x05;
const HEAP_DUMP_SEGMENT: u8 = 0x1C;

#[test]
fn a_binary_dump_on_request_loads_in_visualvm_and_the_records_are_files() {
    common::on_each(&common::jdks_of(&MATRIX), |jdk| {
        let dir = common::scratch_dir(&format!("net-binary-{}", jdk.label));
        let options = "heap=dump,format=b";
        let what = format!("{} {options}", jdk.label);

        let mut cmd = common::java_command(jdk, &dir);
        cmd.arg(common::agentpath_arg(&format!("{options},file=file.hprof")))
            .args(["NetServer", "3", "1"]);
        common::assert_exit_code(&common::run(&mut cmd), 3, &format!("{what} file="));

        let (front, jvm) = serve(jdk, &dir, options);
        // Nothing before this writes a TRACE record in binary: the first
        // ones are the traces command's, before the first summary.
        front.send("traces");
        front.send("summary");
        front.send("dump");
        front.send("summary");
        // The program goes on until the second summary (after the dump) arrived.
        let summaries = |path: &Path| {
            let tags = record_tags(path).0;
            tags.iter().filter(|&&t| t == HEAP_SUMMARY).count()
        };
        common::wait_until(
            PATIENCE,
            || format!("{what}: no second HEAP SUMMARY came"),
            || summaries(&front.file) >= 2,
        );
        stop_server(&dir);
        let out = jvm.wait_timeout(PATIENCE);
        common::assert_exit_code(&out, 3, &format!("{what} net="));
        let received = front.finish();
        common::assert_print_accepts(&received, &what);
        common::assert_print_accepts(&dir.join("file.hprof"), &what);

        let (tags, first_dump_end) = record_tags(&received);
        let (trace, summary) = (first(&tags, TRACE), first(&tags, HEAP_SUMMARY));
        let dump = first(&tags, HEAP_DUMP_SEGMENT);
        assert!(
            trace < summary && summary < dump && trace.is_some(),
            "{what}: traces {trace:?}, summary {summary:?}, dump {dump:?}"
        );
        let mut file_kinds = record_kinds(&dir.join("file.hprof"));
        file_kinds.insert(HEAP_SUMMARY);
        assert_eq!(
            record_kinds(&received),
            file_kinds,
            "{what}: net= against file="
        );

        // The file up to the requested dump's end is a whole heap dump file.
        let requested = dir.join("requested-dump.hprof");
        let bytes = fs::read(&received).unwrap();
        fs::write(
            &requested,
            &bytes[..first_dump_end.expect("a HEAP DUMP END")],
        )
        .unwrap();
        if common::visualvm::visualvm_check(&requested, &what) {
            eprintln!("{what}: VisualVM's heap library reads the requested dump");
        }
    });
}

/// The listener thread of `pid`: its CPU time in clock ticks (utime +
/// stime), or None when there is no such thread.
fn listener_cpu_ticks(pid: i32) -> Option<u64> {
    for task in fs::read_dir(format!("/proc/{pid}/task")).ok()?.flatten() {
        let comm = fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        // (The kernel keeps 15 bytes of a thread's name.)
        if !"HPROF listener thread".starts_with(comm.trim_end()) || comm.trim().len() < 10 {
            continue;
        }
        let stat = fs::read_to_string(task.path().join("stat")).ok()?;
        let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
        // Fields 14 and 15 of stat; the first after ")" is field 3.
        let utime: u64 = fields.get(11)?.parse().ok()?;
        let stime: u64 = fields.get(12)?.parse().ok()?;
        return Some(utime + stime);
    }
    None
}

#[test]
fn a_peer_that_closes_ends_the_listener_and_the_program_keeps_its_exit_status() {
    common::on_each(&common::jdks_of(&MATRIX), |jdk| {
        let dir = common::scratch_dir(&format!("net-peer-closes-{}", jdk.label));
        let options = "heap=sites,cpu=samples";
        let what = format!("{} {options}", jdk.label);
        let peer = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = peer.local_addr().unwrap().port();
        let jvm = start_server(jdk, &dir, options, port, &["3"]);
        let (mut connection, _) = peer.accept().unwrap();
        connection
            .set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        let mut received = Vec::new();
        let _ = connection.read_to_end(&mut received);
        assert!(
            listener_cpu_ticks(jvm.pid()).is_some(),
            "{what}: no HPROF listener thread"
        );
        drop(connection);
        thread::sleep(Duration::from_secs(1));
        let before = listener_cpu_ticks(jvm.pid());
        thread::sleep(Duration::from_secs(2));
        let after = listener_cpu_ticks(jvm.pid());
        if let (Some(before), Some(after)) = (before, after) {
            assert!(
                after - before <= 1,
                "{what}: the listener spent {} ticks after the peer closed",
                after - before
            );
        }
        stop_server(&dir);
        let out = jvm.wait_timeout(PATIENCE);
        common::assert_exit_code(&out, 3, &what);
        let stderr = common::stderr_text(&out);
        assert_eq!(
            stderr.matches("HPROF ERROR").count(),
            1,
            "{what}: one message\n{stderr}"
        );
        // (A write that fails before the listener saw the close reports it
        // instead, as the same one line.)
        assert!(
            stderr.contains("closed the connection") || stderr.contains("write failed"),
            "{what}:\n{stderr}"
        );
    });
}

/// Runs `BigHeap 32` (a 32 MB heap dump at exit) with `net=` to a peer
/// that reads with `read`; its wall time and output.
fn big_dump_to(jdk: &Jdk, dir: &Path, read: fn(TcpStream, &AtomicBool)) -> (Duration, Output) {
    let peer = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = peer.local_addr().unwrap().port();
    let mut cmd = common::java_command(jdk, dir);
    cmd.arg(common::agentpath_arg(&format!(
        "heap=dump,format=b,net=127.0.0.1:{port}"
    )))
    .args(["BigHeap", "32"]);
    let started = Instant::now();
    let jvm = Spawned::spawn(&mut cmd);
    let (connection, _) = peer.accept().unwrap();
    let done = Arc::new(AtomicBool::new(false));
    let reader = {
        let done = Arc::clone(&done);
        thread::spawn(move || read(connection, &done))
    };
    let out = jvm.wait_timeout(PATIENCE);
    let took = started.elapsed();
    done.store(true, Ordering::Release);
    reader.join().unwrap();
    (took, out)
}

fn read_all(mut connection: TcpStream, _done: &AtomicBool) {
    let _ = std::io::copy(&mut connection, &mut std::io::sink());
}

/// 1 KB per second, until the program is done.
fn read_slowly(mut connection: TcpStream, done: &AtomicBool) {
    let mut buffer = [0u8; 1024];
    while !done.load(Ordering::Acquire) {
        match connection.read(&mut buffer) {
            Ok(0) | Err(_) => break,
            Ok(_) => thread::sleep(Duration::from_secs(1)),
        }
    }
}

#[test]
fn a_slow_peer_delays_the_program_by_the_stall_limit_at_most() {
    common::on_each(&common::jdks_of(&MATRIX), |jdk| {
        let dir = common::scratch_dir(&format!("net-slow-peer-{}", jdk.label));
        let what = format!("{} BigHeap to a peer", jdk.label);
        let (fast, fast_out) = big_dump_to(jdk, &dir, read_all);
        common::assert_success(&fast_out, &format!("{what} that reads all"));
        let (slow, slow_out) = big_dump_to(jdk, &dir, read_slowly);
        common::assert_success(&slow_out, &format!("{what} reading 1 KB/s"));
        let stderr = common::stderr_text(&slow_out);
        assert!(
            stderr.contains("made no progress"),
            "{what}: the output was not held up\n{stderr}"
        );
        eprintln!("{what}: {fast:?} read at once, {slow:?} at 1 KB/s");
        assert!(
            slow <= fast + STALL_POLICY + Duration::from_secs(2),
            "{what}: {slow:?} at 1 KB/s against {fast:?}"
        );
    });
}

/// Waits until the ASCII file the front end writes has `count` lines that
/// start with `title`.
fn wait_for_blocks(file: &Path, title: &str, count: usize, what: &str) {
    common::wait_until(
        PATIENCE,
        || format!("{what}: fewer than {count} '{title}' in {}", file.display()),
        || {
            let text = String::from_utf8_lossy(&fs::read(file).unwrap_or_default()).into_owned();
            text.lines().filter(|l| l.starts_with(title)).count() >= count
        },
    );
}

/// The `obj=` of the main thread's THREAD START in an ASCII file being
/// written, as hex.
fn main_thread_object(file: &Path) -> String {
    let text = String::from_utf8_lossy(&fs::read(file).unwrap()).into_owned();
    let line = text
        .lines()
        .find(|l| l.starts_with("THREAD START") && l.contains("name=\"main\""))
        .unwrap_or_else(|| panic!("no THREAD START of main in {}", file.display()));
    let start = line.find("obj=").expect("obj=") + 4;
    let end = start + line[start..].find(',').expect("obj=...,");
    format!("0x{}", &line[start..end])
}

#[test]
fn control_commands_change_what_is_counted() {
    common::on_each(&common::jdks_of(&MATRIX), |jdk| {
        let dir = common::scratch_dir(&format!("net-control-{}", jdk.label));
        let options = "heap=sites,cpu=samples,depth=6";
        let what = format!("{} {options} CONTROL", jdk.label);
        let (front, jvm) = serve(jdk, &dir, options);
        let main = main_thread_object(&front.file);
        front.send(&format!("control sampling off {main}"));
        thread::sleep(Duration::from_millis(300));
        front.send("cpu --cutoff 0"); // A
        thread::sleep(Duration::from_secs(1));
        front.send("cpu --cutoff 0"); // B: main, the busy thread, not sampled
        front.send(&format!("control sampling on {main}"));
        // Two seconds of a busy thread: at least 10 samples of 10 ms even
        // when the two cores are shared with other work (one second and 20
        // samples failed now and then under load).
        thread::sleep(Duration::from_secs(2));
        front.send("cpu --cutoff 0"); // C: sampled again
        front.send("control clear-cpu");
        front.send("cpu --cutoff 0"); // D: counts started over
        front.send("control clear-sites");
        front.send("sites --cutoff 0"); // sites started over
        front.send("control depth 1");
        front.send("control clear-cpu");
        thread::sleep(Duration::from_millis(500));
        front.send("cpu --cutoff 0"); // E: one-frame traces
        front.send("eof"); // no more commands; the output goes on
        // The agent takes commands in turn, behind dumps a loaded machine
        // makes slow: once E is in the file, clear-sites was taken, and
        // the program allocates Chunks after it until it stops.
        wait_for_blocks(&front.file, "CPU SAMPLES BEGIN", 5, &what);
        thread::sleep(Duration::from_millis(300));
        stop_server(&dir);
        common::assert_exit_code(&jvm.wait_timeout(PATIENCE), 3, &what);
        let file = front.finish();
        let profile = AsciiProfile::read_whole_file(&file);
        let cpu: Vec<_> = profile.cpu_blocks().collect();
        assert_eq!(cpu.len(), 6, "{what}: 5 requested + the exit dump's");
        let totals: Vec<u64> = cpu.iter().map(|c| c.total).collect();
        assert!(
            totals[1] <= totals[0] + 2,
            "{what}: main's sampling off: {totals:?}"
        );
        assert!(totals[2] >= totals[1] + 10, "{what}: on again: {totals:?}");
        assert!(totals[3] < totals[2] / 2, "{what}: cleared: {totals:?}");
        assert!(!cpu[4].rows.is_empty(), "{what}: samples at depth 1");
        for row in &cpu[4].rows {
            let frames = profile.frames(row.trace_serial);
            assert!(frames.len() <= 1, "{what}: depth 1: {frames:?}");
        }
        let sites: Vec<&SitesSection> = profile.sites_blocks().collect();
        assert_eq!(sites.len(), 2, "{what}: requested + the exit dump's");
        for block in &sites {
            assert_eq!(
                allocated(block, "NetServer$Once"),
                0,
                "{what}: the sites' counts started over (no Once since)"
            );
        }
        assert!(allocated(sites[1], "NetServer$Chunk") > 0, "{what}");
    });
}

/// The default counting (in the bytecode) under `net=` commands, exact:
/// `NetPhases` allocates 100 A, 200 B, 300 C, then 400 D and 50 C, each
/// phase waiting for a file, while the front end switches allocation
/// tracking off before B and on after it, and clears the sites after the
/// first 300 C. Each request waits for the previous section in the file,
/// so the commands are taken with the program standing still. Live counts
/// past the clear are estimates (a row's live objects at most what it
/// allocated since); all of D's are made after it and stay exact.
#[test]
fn control_commands_leave_exact_counts_under_the_default_counting() {
    common::on_each(&common::jdks_of(&MATRIX), |jdk| {
        let dir = common::scratch_dir(&format!("net-window-{}", jdk.label));
        let what = format!("{} NetPhases over net=", jdk.label);
        let mut front = Front::start(&dir);
        let mut cmd = common::java_command(jdk, &dir);
        cmd.arg(common::agentpath_arg(&format!(
            "heap=sites,cutoff=0,net=127.0.0.1:{}",
            front.port
        )))
        .arg("NetPhases");
        let mut jvm = Spawned::spawn(&mut cmd);
        front.wait_connected();
        let mut blocks = 0;
        let mut sites_now = |front: &Front| {
            front.send("sites --cutoff 0");
            blocks += 1;
            wait_for_blocks(&front.file, "SITES BEGIN", blocks, &what);
        };
        let go = |phase: u32| fs::write(dir.join(format!("go{phase}")), b"").expect("go file");
        jvm.wait_for_line("PHASE 1", PATIENCE);
        front.send("control alloc off");
        sites_now(&front); // 0: A
        go(1);
        jvm.wait_for_line("PHASE 2", PATIENCE);
        sites_now(&front); // 1: B made while off
        front.send("control alloc on");
        sites_now(&front); // 2: as 1
        go(2);
        jvm.wait_for_line("PHASE 3", PATIENCE);
        sites_now(&front); // 3: C
        front.send("control clear-sites");
        sites_now(&front); // 4: nothing since the clear
        go(3);
        common::assert_success(&jvm.wait_timeout(PATIENCE), &what);
        let file = front.finish();
        let profile = AsciiProfile::read_whole_file(&file);
        let sites: Vec<&SitesSection> = profile.sites_blocks().collect();
        assert_eq!(sites.len(), 6, "{what}: 5 requested + the exit dump's");
        let counts: Vec<[u64; 4]> = sites
            .iter()
            .map(|block| ["A", "B", "C", "D"].map(|c| allocated(block, &format!("NetPhases${c}"))))
            .collect();
        assert_eq!(
            counts,
            vec![
                [100, 0, 0, 0],
                [100, 0, 0, 0],
                [100, 0, 0, 0],
                [100, 0, 300, 0],
                [0, 0, 0, 0],
                [0, 0, 50, 400],
            ],
            "{what}: allocated objects of A, B, C, D in each SITES"
        );
        let live_d: u64 = sites[5]
            .rows
            .iter()
            .filter(|r| r.class_name == "NetPhases$D")
            .map(|r| r.live_objects)
            .sum();
        assert_eq!(live_d, 400, "{what}: D's live objects at exit");
    });
}

#[test]
fn each_jvm_gets_a_file_of_its_own() {
    common::on_each(&common::jdks_of(&MATRIX), |jdk| {
        let dir = common::scratch_dir(&format!("net-two-jvms-{}", jdk.label));
        let (port, _) = free_ports();
        let file = dir.join("two");
        let mut cmd = hprof_rs();
        cmd.args(["listen", "--port", &port.to_string(), "-o"])
            .arg(&file)
            .stdin(Stdio::null());
        let mut front = Spawned::spawn(&mut cmd);
        front.wait_for_line(
            &format!("hprof-rs: listening on 127.0.0.1:{port}"),
            PATIENCE,
        );
        for n in 1..=2 {
            let mut java = common::java_command(jdk, &dir);
            java.arg(common::agentpath_arg(&format!(
                "heap=sites,net=127.0.0.1:{port}"
            )))
            .arg("Hello");
            common::assert_success(&common::run(&mut java), &format!("JVM {n}"));
            let name = if n == 1 { "two" } else { "two.1" };
            let line = format!("hprof-rs: JVM {n} disconnected, ");
            front.wait_for_line_starting(&line, PATIENCE);
            let profile = AsciiProfile::read_whole_file(&dir.join(name));
            assert_eq!(profile.sites_blocks().count(), 1, "{name}: one whole run");
        }
    });
}

#[test]
fn a_flood_of_bad_frames_neither_ends_nor_stalls_the_program() {
    common::on_each(&common::jdks_of(&MATRIX), |jdk| {
        let dir = common::scratch_dir(&format!("net-flood-{}", jdk.label));
        let what = format!("{} heap=sites under a flood", jdk.label);
        let peer = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = peer.local_addr().unwrap().port();
        // The program works 2 s after SERVING, then exits with status 3.
        let mut jvm = start_server(jdk, &dir, "heap=sites", port, &["3", "2"]);
        let serving = Instant::now();
        let (connection, _) = peer.accept().unwrap();
        let mut output = connection.try_clone().unwrap();
        let drain = thread::spawn(move || {
            let _ = std::io::copy(&mut output, &mut std::io::sink());
        });
        // 100,000 frames of an unknown tag, then one whose length claims
        // 4 GiB, followed by a megabyte it swallows (a known tag in it
        // would otherwise be a command).
        let mut flood = Vec::new();
        for serial in 0..100_000u32 {
            flood.push(0x42);
            flood.extend(serial.to_be_bytes());
            flood.extend(0u32.to_be_bytes());
        }
        flood.extend([0x43, 0, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF]);
        flood.extend((0..1 << 20).map(|i: u32| (i.wrapping_mul(2_654_435_761) >> 13) as u8));
        let mut commands = connection;
        let _ = std::io::Write::write_all(&mut commands, &flood);
        jvm.wait_for_line("STOPPED", PATIENCE);
        let worked = serving.elapsed();
        let out = jvm.wait_timeout(PATIENCE);
        drop(commands);
        drain.join().unwrap();
        common::assert_exit_code(&out, 3, &what);
        let stderr = common::stderr_text(&out);
        assert_eq!(
            stderr.matches("HPROF ERROR").count(),
            1,
            "{what}: one report of the unknown commands\n{stderr}"
        );
        assert!(
            worked < Duration::from_secs(6),
            "{what}: 2 s of work took {worked:?}"
        );
    });
}

#[test]
fn cpu_under_cpu_times_writes_cpu_time_on_request() {
    common::on_each(&common::jdks_of(&MATRIX), |jdk| {
        let dir = common::scratch_dir(&format!("net-cpu-times-{}", jdk.label));
        let options = "cpu=times";
        let what = format!("{} {options}", jdk.label);
        let (front, jvm) = serve(jdk, &dir, options);
        thread::sleep(Duration::from_millis(500));
        front.send("cpu --cutoff 0");
        front.send("exit");
        common::assert_exit_code(&jvm.wait_timeout(PATIENCE), 0, &what);
        let profile = AsciiProfile::read_whole_file(&front.finish());
        let blocks: Vec<_> = profile.cpu_blocks().collect();
        assert_eq!(blocks.len(), 2, "{what}: requested + the exit dump's");
        for block in &blocks {
            assert_eq!(block.title, CpuTitle::TimeMs, "{what}");
        }
        assert!(
            common::cpu_count_in(blocks[0], "NetServer.spin") > 0,
            "{what}: spin's calls timed: {:?}",
            blocks[0].rows
        );
    });
}

#[test]
fn listen_on_port_0_prints_the_port_the_system_picked_and_a_jvm_connects_there() {
    let jdk = common::jdk_preferring(21);
    let dir = common::scratch_dir("net-port-0");
    let file = dir.join("received.txt");
    let mut cmd = hprof_rs();
    cmd.args(["listen", "--once", "--port", "0", "-o"])
        .arg(&file)
        .stdin(Stdio::null());
    let mut front = Spawned::spawn(&mut cmd);
    let line = front.wait_for_line_starting("hprof-rs: listening on 127.0.0.1:", PATIENCE);
    let port: u16 = line
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no port in {line:?}"));
    assert_ne!(port, 0, "{line}");
    // The port printed is the one bound: a JVM's agent connects and sends
    // its whole profile there.
    let mut java = common::java_command(&jdk, &dir);
    java.arg(common::agentpath_arg(&format!(
        "heap=sites,net=127.0.0.1:{port}"
    )))
    .arg("Hello");
    common::assert_success(
        &common::run(&mut java),
        "Hello with net= to the printed port",
    );
    let out = front.wait_timeout(PATIENCE);
    common::assert_success(&out, "hprof-rs listen --once --port 0");
    let received = AsciiProfile::read_whole_file(&file);
    assert_eq!(
        received.count(|s| matches!(s, hprof_rs::format::ascii::Section::Sites(_))),
        1,
        "the exit dump's SITES"
    );
}

/// cpu=wall beside heap=sites and monitor=y over `net=`: the `cpu`
/// command writes its samples so far (marked wall-clock, with their
/// states), `control clear-cpu` starts them over, and the exit dump has
/// every section.
#[test]
fn cpu_wall_beside_heap_sites_and_monitor_answers_the_cpu_commands() {
    common::on_each(&common::jdks_of(&[17, 21]), |jdk| {
        let dir = common::scratch_dir(&format!("net-wall-{}", jdk.label));
        let options = "cpu=wall,heap=sites,monitor=y";
        let (front, jvm) = serve(jdk, &dir, options);
        thread::sleep(Duration::from_secs(1));
        front.send("cpu --cutoff 0");
        front.send("control clear-cpu");
        front.send("cpu --cutoff 0");
        front.send("exit");
        let out = jvm.wait_timeout(PATIENCE);
        let what = format!("{} {options}", jdk.label);
        common::assert_exit_code(&out, 0, &format!("{what}: EXIT is System.exit(0)"));
        let file = front.finish();
        let profile = AsciiProfile::read_whole_file(&file);
        let cpu: Vec<_> = profile.cpu_blocks().collect();
        assert_eq!(cpu.len(), 3, "{what}: 2 requested + the exit dump's");
        assert!(cpu.iter().all(|c| c.is_wall_clock()), "{what}: marked");
        let states = profile
            .sections
            .iter()
            .filter(|s| matches!(s, Section::WallStates(_)))
            .count();
        assert_eq!(states, 3, "{what}: a WALL STATES block after each");
        assert!(
            common::cpu_count_in(cpu[0], "NetServer.spin") > 0,
            "{what}: the busy method is sampled: {:?}",
            cpu[0].rows
        );
        assert!(
            cpu[1].total < cpu[0].total,
            "{what}: cleared just before: {} then {}",
            cpu[0].total,
            cpu[1].total
        );
        assert!(profile.sites_blocks().count() >= 1, "{what}: SITES");
        let monitor = profile
            .sections
            .iter()
            .any(|s| matches!(s, Section::MonitorDump { .. }));
        assert!(monitor, "{what}: MONITOR DUMP");
    });
}
