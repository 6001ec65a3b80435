//! heap=dump on a disk with room for the output but not for a second copy
//! of the heap: the JVM's temporary dump is read as it is written and its
//! read part released (hole punching), so it never takes the heap's size
//! on disk next to the output.
//!
//! The disk is a tmpfs mounted for the test (root only; skipped otherwise).
//! JDK 17 and 21 only: JDK 11's dump is copied once the JVM is done (its
//! dumper writes segment lengths last), and JDK 22+'s dumper itself writes
//! the heap's objects to a segment file `<path>.p0` before appending it to
//! the dump, so that it needs two copies of the heap on its own (as for
//! `jcmd GC.heap_dump`).

mod common;

use common::Jdk;
use hprof_rs::format::binary::RecordBody;
use hprof_rs::format::binary::reader::parse;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// MB of byte arrays BigHeap holds.
const HELD_MB: u64 = 192;

/// The disk's size: more than the output (the held arrays and the JDK's
/// own objects, under 240 MB), less than two copies of it.
const DISK_MB: u64 = 300;

/// A tmpfs mounted at a folder, unmounted when dropped (also when the
/// test fails).
struct Mounted(PathBuf);

impl Mounted {
    fn tmpfs(at: &Path, megabytes: u64) -> Option<Mounted> {
        fs::create_dir_all(at).unwrap();
        let status = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={megabytes}m"), "tmpfs"])
            .arg(at)
            .status()
            .ok()?;
        status.success().then(|| Mounted(at.to_owned()))
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

fn dump_on_a_small_disk(jdk: &Jdk) {
    let what = format!(
        "BigHeap {HELD_MB} dumped on a {DISK_MB} MB disk, {}",
        jdk.label
    );
    let dir = common::scratch_dir(&format!("heap-dump-small-disk-{}", jdk.label));
    let disk = dir.join("disk");
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let Some(_mounted) = Mounted::tmpfs(&disk, DISK_MB) else {
        assert!(!root, "{what}: cannot mount a tmpfs at {}", disk.display());
        eprintln!("{what}: skipped, mounting a tmpfs needs root");
        return;
    };
    eprintln!("{what}: tmpfs mounted at {}", disk.display());
    let output = disk.join("out.hprof");
    let mut cmd = common::java_command(jdk, &dir);
    cmd.arg("-Xmx1g")
        .arg(common::agentpath_arg(&format!(
            "heap=dump,format=b,file={}",
            output.display()
        )))
        .args(["BigHeap", &HELD_MB.to_string()]);
    let out = common::run_timeout(&mut cmd, Duration::from_secs(120));
    common::assert_success(&out, &what);
    let stderr = common::stderr_text(&out);
    assert!(!stderr.contains("HPROF ERROR"), "{what}: {stderr}");

    let leftovers: Vec<_> = fs::read_dir(&disk)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name != "out.hprof")
        .collect();
    assert!(
        leftovers.is_empty(),
        "{what}: left on the disk: {leftovers:?}"
    );

    let bytes = fs::read(&output).unwrap();
    let size = bytes.len() as u64;
    assert!(
        size > (HELD_MB << 20) && 2 * size > DISK_MB << 20,
        "{what}: the output ({size} bytes) should hold the heap, and two copies of it \
         should not fit on the disk"
    );
    let file = parse(&bytes).unwrap_or_else(|e| panic!("{what}: the output is malformed: {e}"));
    let ends = file
        .records
        .iter()
        .filter(|r| matches!(r.body, RecordBody::HeapDumpEnd))
        .count();
    assert_eq!(ends, 1, "{what}: heap dumps in the output");
    let held = file
        .records
        .iter()
        .filter_map(|r| match &r.body {
            RecordBody::HeapDumpSegment(records) => Some(records),
            _ => None,
        })
        .flatten()
        .filter(|r| {
            matches!(r, hprof_rs::format::binary::HeapRecord::PrimitiveArrayDump { elements, .. }
                if elements.len() == 1 << 20)
        })
        .count() as u64;
    assert_eq!(held, HELD_MB, "{what}: the 1 MB arrays BigHeap holds");
}

#[test]
fn heap_dump_completes_on_a_disk_without_room_for_a_second_copy() {
    common::on_each(&common::jdks_of(&[17, 21]), dump_on_a_small_disk);
}
