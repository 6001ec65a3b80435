//! Paths between this tool and a JVM that may see another file system (a
//! container: its own mount namespace). The agent library and the output
//! file are named to the JVM by paths it can open: ours when it sees the
//! same file or directory there (same device and inode through
//! `/proc/PID/root`), else a copy of the library in its /tmp, and an
//! output file in its /tmp under a random name that `stop` copies out to
//! the path asked for (the pair is kept meanwhile in our private runtime
//! directory, `attach-<PID>`, mode 0600).
//!
//! The container's files belong to the JVM's user, who may be someone
//! else than us: every path inside is resolved inside the JVM's root
//! (root.rs), and the file handed over must be the one the agent made, of
//! the size it wrote, and is streamed (see [`Handover::bring_out`]).

use super::root::Dir;
use super::target::Target;
use crate::listen::{control, output_file};
use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The JVM's temporary directory, where the library copy and the output go.
const TMP: &str = "/tmp";
/// The buffer a handed-over file is copied through: memory stays bounded
/// whatever the file's size.
const COPY_BUFFER: usize = 1 << 20;
/// What the agent adds to the size it reports (see `reply=size` in
/// src/agent/attach.rs): codes below are its refusals.
pub const SIZE_BASE: i32 = 16;
/// The option asking the agent to reply with the size it wrote.
pub const REPLY_SIZE: &str = "reply=size";

/// Whether `ours` (a path here) is the same file or directory the JVM
/// sees at the same path (resolved inside its root).
fn same_inside(target: &Target, ours: &Path) -> bool {
    let inside = target
        .root
        .open(&ours.to_string_lossy(), libc::O_PATH)
        .and_then(|file| file.metadata());
    match (fs::metadata(ours), inside) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

/// Whether the output `asked` for must be handed over: the JVM does not
/// see its directory as we do.
pub fn needs_handover(target: &Target, asked: &Path) -> bool {
    target.own_mounts && !asked.parent().is_some_and(|dir| same_inside(target, dir))
}

/// The JVM's /tmp, resolved inside its root.
fn jvm_tmp(target: &Target) -> Result<Dir, String> {
    target.root.dir(TMP).map_err(|e| {
        format!(
            "cannot open the /tmp of the JVM {} inside its root: {e}",
            target.pid
        )
    })
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
    let name = format!("libhprof_rs-{:x}-{:016x}.so", bytes.len(), fnv(&bytes));
    let inside = format!("{TMP}/{name}");
    let tmp = jvm_tmp(target)?;
    let cannot = |e: io::Error| format!("cannot copy the agent to {inside} in the JVM: {e}");
    match tmp.open(&name, libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL, 0o755) {
        Ok(mut file) => {
            file.write_all(&bytes).map_err(cannot)?;
            // (Made by root for the JVM's user: it must be able to read it.)
            let _ = std::os::unix::fs::fchown(&file, Some(target.uid), Some(target.gid));
        }
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            let (mut file, meta) = open_regular(&tmp, &name, &[target.uid, 0])
                .map_err(|e| format!("{inside} in the JVM: {e}"))?;
            let mut there = Vec::new();
            if meta.len() == bytes.len() as u64 {
                file.read_to_end(&mut there).map_err(cannot)?;
            }
            if there != bytes {
                return Err(format!("{inside} in the JVM is not this agent: remove it"));
            }
        }
        Err(e) => return Err(cannot(e)),
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
        "{TMP}/hprof-rs-{:016x}.{extension}",
        u64::from_ne_bytes(random)
    )
}

/// A file the JVM writes in its /tmp (`inside`) for the path asked for
/// here (`asked`), and the file's identity once the agent made it.
pub struct Handover {
    pub inside: String,
    pub asked: PathBuf,
    /// Device and inode of the file the agent made, recorded right after
    /// the attach: the stop takes that file and no other.
    made: Option<(u64, u64)>,
}

impl Handover {
    pub fn new(inside: String, asked: PathBuf) -> Handover {
        Handover {
            inside,
            asked,
            made: None,
        }
    }

    /// The file's name in the JVM's /tmp.
    fn name(&self) -> Result<&str, String> {
        self.inside
            .strip_prefix("/tmp/")
            .filter(|n| !n.contains('/'))
            .ok_or_else(|| format!("{} is not a file of the JVM's /tmp", self.inside))
    }

    /// Looks up the file the agent just made (its device and inode).
    pub fn note_made(&mut self, target: &Target) -> Result<(), String> {
        let tmp = jvm_tmp(target)?;
        let (_, meta) = open_regular(&tmp, self.name()?, &[target.uid])
            .map_err(|e| format!("{} in the JVM: {e}", self.inside))?;
        self.made = Some((meta.dev(), meta.ino()));
        Ok(())
    }

    /// Keeps the handover until `stop`, in our private runtime directory.
    pub fn remember(&self, target: &Target) -> Result<(), String> {
        let path = state_file(target)?;
        let mut file =
            output_file::create(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let (dev, ino) = self.made.unwrap_or((0, 0));
        let text = format!("{}\n{}\n{dev} {ino}\n", self.inside, self.asked.display());
        file.write_all(text.as_bytes())
            .map_err(|e| format!("{}: {e}", path.display()))
    }

    /// The handover `remember` kept for this JVM (None if none).
    pub fn recall(target: &Target) -> Result<Option<Handover>, String> {
        let state = state_file(target)?;
        let Ok(text) = fs::read_to_string(&state) else {
            return Ok(None);
        };
        let mut lines = text.lines();
        let damaged = || format!("{} is damaged", state.display());
        let (Some(inside), Some(asked), Some(made)) = (lines.next(), lines.next(), lines.next())
        else {
            return Err(damaged());
        };
        let ids: Vec<u64> = made.split(' ').filter_map(|n| n.parse().ok()).collect();
        let [dev, ino] = ids[..] else {
            return Err(damaged());
        };
        Ok(Some(Handover {
            inside: inside.to_owned(),
            asked: PathBuf::from(asked),
            made: (ino != 0).then_some((dev, ino)),
        }))
    }

    /// After the profile ended: the file the JVM wrote in its /tmp is
    /// copied to the path asked for (mode 0600, through a bounded buffer)
    /// and removed there. It must be the file the agent made, a regular
    /// file of the JVM's user, of the size the agent says it wrote
    /// (`written_kib`: KiB rounded up, as `reply=size` returns it);
    /// anything else is refused, and nothing is written here.
    pub fn bring_out(&self, target: &Target, written_kib: Option<u64>) -> Result<(), String> {
        let tmp = jvm_tmp(target)?;
        let name = self.name()?;
        let refuse = |why: String| {
            format!(
                "{} in the JVM {} {why}: not copied to {}",
                self.inside,
                target.pid,
                self.asked.display()
            )
        };
        let (file, meta) =
            open_regular(&tmp, name, &[target.uid]).map_err(|e| refuse(format!("{e}")))?;
        if self
            .made
            .is_some_and(|made| made != (meta.dev(), meta.ino()))
        {
            return Err(refuse("is not the file the agent made (replaced)".into()));
        }
        let kib = meta.len().div_ceil(1024);
        match written_kib {
            None => return Err(refuse("has no size reported by the agent".into())),
            Some(said) if said != kib => {
                return Err(refuse(format!(
                    "holds {} bytes, the agent wrote {said} KiB",
                    meta.len()
                )));
            }
            Some(_) => {}
        }
        copy_out(file, meta.len(), &self.asked)?;
        // Removed as the JVM's user: a name swapped meanwhile can only be
        // one of that user's own files.
        let _ = target.as_its_user(|| tmp.remove(name).map_err(|e| e.to_string()));
        Ok(())
    }
}

/// Drops what `remember` kept (the profile it was for has ended).
pub fn forget(target: &Target) {
    if let Ok(path) = state_file(target) {
        let _ = fs::remove_file(path);
    }
}

fn state_file(target: &Target) -> Result<PathBuf, String> {
    Ok(control::make_private_dir()?.join(format!("attach-{}", target.pid)))
}

/// Copies the first `size` bytes of `from` to a new private file at `to`;
/// on a failure the file made is removed (no partial copy is left).
fn copy_out(mut from: File, size: u64, to: &Path) -> Result<(), String> {
    let fail = |e: io::Error| format!("{}: {e}", to.display());
    let mut out = create_output(to).map_err(fail)?;
    let copied = io::copy(
        &mut io::BufReader::with_capacity(COPY_BUFFER, (&mut from).take(size)),
        &mut out,
    )
    .and_then(|n| out.sync_all().map(|()| n));
    match copied {
        Ok(n) if n == size => Ok(()),
        other => {
            let _ = fs::remove_file(to);
            Err(match other {
                Err(e) => fail(e),
                Ok(n) => format!("{}: only {n} of {size} bytes could be read", to.display()),
            })
        }
    }
}

/// The output file here, private and not through a link another user
/// planted (one function, to move to the shared file-creation helper).
fn create_output(path: &Path) -> io::Result<File> {
    output_file::create(path)
}

/// Opens `name` in `dir` for reading without following a link (and
/// without waiting on a FIFO): a regular file of one of `owners`.
fn open_regular(dir: &Dir, name: &str, owners: &[u32]) -> io::Result<(File, fs::Metadata)> {
    let file = dir.open(name, libc::O_RDONLY | libc::O_NONBLOCK, 0)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::other("is not a regular file"));
    }
    if !owners.contains(&meta.uid()) {
        return Err(io::Error::other(format!(
            "belongs to uid {}, not to the JVM's user",
            meta.uid()
        )));
    }
    Ok((file, meta))
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
