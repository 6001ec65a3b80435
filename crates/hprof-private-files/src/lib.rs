//! The one way hprof-rs creates an output file, in the agent (`file=`) and
//! in the tool (`-o`, `listen`'s files): profiles hold a program's names,
//! arguments and heap, and the path is often in a directory others can
//! write to (/tmp), so
//!
//! - a new file is made mode 0600, whatever the umask;
//! - no symbolic link is followed in ANY component of the path unless it
//!   is ours or root's: another user's link (`/tmp/ci -> /root/private`)
//!   is refused, naming the component;
//! - an existing regular file or FIFO of another user (not root) is
//!   refused: they could read what we write;
//! - the path is walked one component at a time through directory
//!   descriptors ([`walk`]), so nothing can be swapped between a check and
//!   the use of what was checked.
//!
//! Devices and FIFOs are opened as they are; nothing at the path is ever
//! removed or replaced.

mod sys;
mod walk;

/// The descriptor-relative calls the walk is made of (openat and unlinkat
/// in the current directory or in one held open), for code that must reach
/// names inside a directory it holds (attach, in a container's root), so
/// that their `unsafe` stays in this crate.
pub mod at {
    pub use crate::sys::{Dir, open_at, unlink_at};
}

use std::ffi::OsStr;
use std::fmt;
use std::fs::{File, Permissions};
use std::io;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use walk::{Link, O_LOOK, Walk, c_name, os_error, trusted_owner};

/// The mode of a file we create: its owner's only.
pub const PRIVATE: u32 = 0o600;

/// Why a path was not opened.
#[derive(Debug)]
pub enum Error {
    /// The system's refusal (no such directory, permission denied...).
    Io(io::Error),
    /// A symbolic link another user owns, at this component of the path
    /// (as walked: a link's target replaces the link).
    ForeignLink(PathBuf),
    /// The file at the path is another user's.
    ForeignFile,
}

impl From<io::Error> for Error {
    fn from(e: io::Error) -> Error {
        Error::Io(e)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io(e) => write!(f, "{e}"),
            Error::ForeignLink(component) => write!(
                f,
                "refused: {} is a symbolic link owned by another user",
                component.display()
            ),
            Error::ForeignFile => f.write_str("refused: it belongs to another user"),
        }
    }
}

impl std::error::Error for Error {}

/// An output file, open for writing.
pub struct Opened {
    pub file: File,
    /// It did not exist: we made it (0600).
    pub created: bool,
}

/// Opens `path` for writing under the rules above, without emptying an
/// existing file (the agent empties it only at its first write).
/// `nonblocking` adds `O_NONBLOCK`: a FIFO no one reads then fails
/// (ENXIO) instead of waiting.
pub fn open(path: &Path, nonblocking: bool) -> Result<Opened, Error> {
    let extra = if nonblocking { libc::O_NONBLOCK } else { 0 };
    let mut walk = Walk::new(path)?;
    // A round ends in the file, or follows one link (at most 40), or looks
    // again at a name whose file changed between two looks: someone
    // changing it forever gets ELOOP, not a hang.
    for _ in 0..ROUNDS {
        let name = walk.walk_to_last()?;
        let c = c_name(&name)?;
        let exclusive = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | extra;
        let made = match sys::open_at(walk.dir(), &c, exclusive, PRIVATE) {
            Ok(file) => return made_private(file),
            Err(e) => e,
        };
        // There already (EEXIST), or not creatable here (a read-only
        // directory holding /dev/null): open what is there.
        match sys::open_at(walk.dir(), &c, libc::O_WRONLY | libc::O_NOFOLLOW | extra, 0) {
            Ok(file) => return existing(file),
            Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
                if let Some(file) = through_link(&mut walk, &name, extra)? {
                    return existing(file);
                }
            }
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {
                if made.raw_os_error() != Some(libc::EEXIST) {
                    return Err(made.into());
                }
                walk.retry(name);
            }
            Err(e) => return Err(e.into()),
        }
    }
    Err(os_error(libc::ELOOP))
}

/// Rounds of [`open`]: the links a path may go through, and a few looks again.
const ROUNDS: u32 = walk::MAX_LINKS + 8;

/// Removes the file [`open`] made at `path` (`file`, still open), the
/// path walked the same way: what is there now is removed only if it is
/// that very file, and never through a link of another user (one swapped
/// in on the way since would send the removal elsewhere).
pub fn remove_created(path: &Path, file: &File) -> Result<(), Error> {
    let made = file.metadata()?;
    let mut walk = Walk::new(path)?;
    for _ in 0..ROUNDS {
        let name = walk.walk_to_last()?;
        let c = c_name(&name)?;
        let found = sys::open_at(walk.dir(), &c, O_LOOK, 0)?;
        let metadata = found.metadata()?;
        if metadata.file_type().is_symlink() {
            match walk.check_link(&found, &name)? {
                Link::Queued => continue,
                // A link of procfs names an open file, never one we made.
                Link::Kernel => return Ok(()),
            }
        }
        if (metadata.dev(), metadata.ino()) == (made.dev(), made.ino()) {
            sys::unlink_at(walk.dir(), &c)?;
        }
        return Ok(());
    }
    Err(os_error(libc::ELOOP))
}

/// Opens `path` for writing (see [`open`]), emptied and private: created
/// 0600, or, if it was ours, truncated and without others' rights.
pub fn create(path: &Path) -> Result<File, Error> {
    let opened = open(path, false)?;
    if !opened.created && opened.file.metadata()?.is_file() {
        opened.file.set_len(0)?;
        make_private(&opened.file)?;
    }
    Ok(opened.file)
}

/// Takes group's and others' rights from `file` if it is a regular file
/// of ours (an old output that was readable by others); a device or FIFO,
/// or a file of root's written by another user, is left as it is.
pub fn make_private(file: &File) -> io::Result<()> {
    let metadata = file.metadata()?;
    let mode = metadata.permissions().mode();
    if metadata.is_file() && metadata.uid() == sys::effective_uid() && mode & 0o077 != 0 {
        file.set_permissions(Permissions::from_mode(mode & !0o077))?;
    }
    Ok(())
}

/// A file we just made: the umask may have taken rights from 0600 (0277
/// leaves 0400); it gets exactly 0600.
fn made_private(file: File) -> Result<Opened, Error> {
    if file.metadata()?.permissions().mode() & 0o7777 != PRIVATE {
        file.set_permissions(Permissions::from_mode(PRIVATE))?;
    }
    Ok(Opened {
        file,
        created: true,
    })
}

/// A file that was there: refused if another user could read what we
/// write into it (a regular file or FIFO of theirs); a device is theirs to
/// give, and opening it needed their permission already.
fn existing(file: File) -> Result<Opened, Error> {
    let metadata = file.metadata()?;
    let kind = metadata.file_type();
    if (kind.is_file() || kind.is_fifo()) && !trusted_owner(metadata.uid()) {
        return Err(Error::ForeignFile);
    }
    Ok(Opened {
        file,
        created: false,
    })
}

/// The last component `name` is a symbolic link (O_NOFOLLOW said ELOOP):
/// checked, then its target queued on `walk` (None: walk on), or, on
/// procfs, opened by the kernel.
fn through_link(walk: &mut Walk, name: &OsStr, extra: libc::c_int) -> Result<Option<File>, Error> {
    let c = c_name(name)?;
    let link = sys::open_at(walk.dir(), &c, O_LOOK, 0)?;
    if !link.metadata()?.file_type().is_symlink() {
        // Replaced by a file between the two opens: look again.
        walk.retry(name.to_owned());
        return Ok(None);
    }
    match walk.check_link(&link, name)? {
        Link::Queued => Ok(None),
        Link::Kernel => Ok(Some(sys::open_at(
            walk.dir(),
            &c,
            libc::O_WRONLY | extra,
            0,
        )?)),
    }
}

#[cfg(test)]
mod tests;
