//! Paths between this tool and a JVM that may see another file system (a
//! container: its own mount namespace). The agent library and the output
//! file are named to the JVM by paths it can open: ours when it sees the
//! same file or directory there (same device and inode through
//! `/proc/PID/root`), else a copy of the library in its /tmp, and an
//! output file in its /tmp under a random name that `stop` copies out to
//! the path asked for (the pair is kept meanwhile in our private runtime
//! directory, `attach-<PID>`, mode 0600).

use super::target::Target;
use crate::listen::{control, output_file};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// Whether `ours` (a path here) is the same file or directory the JVM
/// sees at the same path.
fn same_inside(target: &Target, ours: &Path) -> bool {
    let inside = target.path(&ours.to_string_lossy());
    match (fs::metadata(ours), fs::metadata(inside)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

/// Whether the output `asked` for must be handed over: the JVM does not
/// see its directory as we do.
pub fn needs_handover(target: &Target, asked: &Path) -> bool {
    target.own_mounts && !asked.parent().is_some_and(|dir| same_inside(target, dir))
}

/// The agent library's path as the JVM sees it: ours, or a copy in its
/// /tmp named by the library's size and a hash of its bytes, made once
/// (a file already there is used only when it holds the same bytes and
/// belongs to the JVM's user or root).
pub fn library_for(target: &Target, agent: &Path) -> Result<String, String> {
    if !target.own_mounts || same_inside(target, agent) {
        return Ok(agent.to_string_lossy().into_owned());
    }
    let bytes = fs::read(agent).map_err(|e| format!("{}: {e}", agent.display()))?;
    let inside = format!("/tmp/libhprof_rs-{:x}-{:016x}.so", bytes.len(), fnv(&bytes));
    let here = target.path(&inside);
    match OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o755)
        .open(&here)
    {
        Ok(mut file) => {
            io::Write::write_all(&mut file, &bytes)
                .map_err(|e| format!("cannot copy the agent to {}: {e}", here.display()))?;
            // (Made by root for the JVM's user: it must be able to read it.)
            let _ = std::os::unix::fs::chown(&here, Some(target.uid), Some(target.gid));
        }
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            let there = read_regular(&here, target.uid)?;
            if there != bytes {
                return Err(format!("{} is not this agent: remove it", here.display()));
            }
        }
        Err(e) => return Err(format!("cannot copy the agent to {}: {e}", here.display())),
    }
    Ok(inside)
}

/// FNV-1a: names the copy of the library by its content.
fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// A random output name in the JVM's /tmp.
pub fn inside_name(binary: bool) -> String {
    let mut random = [0u8; 8];
    if let Ok(mut urandom) = File::open("/dev/urandom") {
        let _ = urandom.read_exact(&mut random);
    }
    let extension = if binary { "hprof" } else { "hprof.txt" };
    format!(
        "/tmp/hprof-rs-{:016x}.{extension}",
        u64::from_ne_bytes(random)
    )
}

fn state_file(target: &Target) -> Result<PathBuf, String> {
    Ok(control::make_private_dir()?.join(format!("attach-{}", target.pid)))
}

/// Keeps, until `stop`, where the JVM writes (`inside`) and where the file
/// is wanted (`asked`).
pub fn remember(target: &Target, inside: &str, asked: &Path) -> Result<(), String> {
    let path = state_file(target)?;
    let mut file = output_file::create(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let text = format!("{inside}\n{}\n", asked.display());
    io::Write::write_all(&mut file, text.as_bytes()).map_err(|e| format!("{}: {e}", path.display()))
}

/// Drops what `remember` kept (the attach failed).
pub fn forget(target: &Target) {
    if let Ok(path) = state_file(target) {
        let _ = fs::remove_file(path);
    }
}

/// After the profile ended: the file the JVM wrote in its /tmp is copied
/// to the path asked for (mode 0600) and removed there. None when nothing
/// was handed over (the JVM wrote where it was asked).
pub fn bring_out(target: &Target) -> Result<Option<PathBuf>, String> {
    let state = state_file(target)?;
    let Ok(text) = fs::read_to_string(&state) else {
        return Ok(None);
    };
    let _ = fs::remove_file(&state);
    let mut lines = text.lines();
    let (Some(inside), Some(asked)) = (lines.next(), lines.next()) else {
        return Err(format!("{} is damaged", state.display()));
    };
    let here = target.path(inside);
    let bytes = read_regular(&here, target.uid)?;
    let asked = PathBuf::from(asked);
    let mut out = output_file::create(&asked).map_err(|e| format!("{}: {e}", asked.display()))?;
    io::Write::write_all(&mut out, &bytes).map_err(|e| format!("{}: {e}", asked.display()))?;
    let _ = fs::remove_file(&here);
    Ok(Some(asked))
}

/// The bytes of `path`, a regular file (not followed if a symbolic link)
/// of user `uid` or root.
fn read_regular(path: &Path, uid: u32) -> Result<Vec<u8>, String> {
    let fail = |e: io::Error| format!("{}: {e}", path.display());
    let mut file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .map_err(fail)?;
    let meta = file.metadata().map_err(fail)?;
    if !meta.is_file() || (meta.uid() != uid && meta.uid() != 0) {
        return Err(format!(
            "{} is not a file of the JVM's user",
            path.display()
        ));
    }
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).map_err(fail)?;
    Ok(bytes)
}

/// Whether the profile the options start ends at once: heap=dump alone
/// (the agent writes the dump and stops, see src/agent/attach.rs).
pub fn is_finished(options: &str) -> bool {
    let words: Vec<&str> = options.split(',').collect();
    words.contains(&"heap=dump")
        && !words.iter().any(|w| {
            matches!(
                *w,
                "heap=sites" | "heap=all" | "cpu=samples" | "cpu=y" | "monitor=y"
            )
        })
}
