//! The walk down a path, one component at a time, each looked up with
//! `O_NOFOLLOW` in the directory descriptor the walk holds: nothing on the
//! way can be swapped between the look and the use, and a symbolic link
//! is followed only after its owner was checked on the link itself.

use crate::Error;
use crate::sys::{self, Dir};
use std::ffi::{CString, OsStr, OsString};
use std::fs::File;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

/// The most links one path may go through, as the kernel's own limit
/// (MAXSYMLINKS): past it, ELOOP.
pub const MAX_LINKS: u32 = 40;

/// Whose files and links may be used: ours, or root's (root could do
/// anything to the path anyway).
pub fn trusted_owner(uid: u32) -> bool {
    uid == 0 || uid == sys::effective_uid()
}

pub fn os_error(code: i32) -> Error {
    Error::Io(io::Error::from_raw_os_error(code))
}

/// Where the walk is, and what is left of the path.
pub struct Walk {
    dir: Dir,
    /// The components still to walk, the next one last.
    pending: Vec<OsString>,
    /// The path of `dir` as walked (targets of links included), to name
    /// a refused component.
    shown: PathBuf,
    links: u32,
}

/// What a name turned out to be.
pub enum Link {
    /// Its target was queued: walk on.
    Queued,
    /// A link of procfs: the kernel follows it (its target may be no path).
    Kernel,
}

impl Walk {
    /// A walk of `path`: from `/` if it is absolute, else from the current
    /// directory.
    pub fn new(path: &Path) -> Result<Walk, Error> {
        if path.as_os_str().is_empty() {
            return Err(os_error(libc::ENOENT));
        }
        // `dir/` names a directory, which can never be the output file.
        if path.as_os_str().as_bytes().ends_with(b"/") {
            return Err(os_error(libc::EISDIR));
        }
        let mut walk = Walk {
            dir: Dir::Cwd,
            pending: Vec::new(),
            shown: PathBuf::new(),
            links: 0,
        };
        walk.queue(path)?;
        Ok(walk)
    }

    pub fn dir(&self) -> &Dir {
        &self.dir
    }

    /// Queues `target`'s components before what is left; an absolute
    /// target starts again from `/`.
    fn queue(&mut self, target: &Path) -> io::Result<()> {
        if target.is_absolute() {
            self.dir = Dir::Open(sys::open_at(
                &Dir::Cwd,
                c"/",
                libc::O_PATH | libc::O_DIRECTORY,
                0,
            )?);
            self.shown = PathBuf::from("/");
        }
        let names: Vec<OsString> = target
            .components()
            .filter_map(|component| match component {
                Component::Normal(name) => Some(name.to_owned()),
                Component::ParentDir => Some("..".into()),
                Component::RootDir | Component::CurDir | Component::Prefix(_) => None,
            })
            .collect();
        self.pending.extend(names.into_iter().rev());
        Ok(())
    }

    /// Puts `name` back as the next component (its file went away while
    /// it was being opened: it is looked up again).
    pub fn retry(&mut self, name: OsString) {
        self.pending.push(name);
    }

    /// Walks every component but the last: returns the last one's name,
    /// to be looked up in [`Walk::dir`].
    pub fn walk_to_last(&mut self) -> Result<OsString, Error> {
        loop {
            // A path (or a link) that ends in a directory: `/`, `..`, `.`.
            let name = self.pending.pop().ok_or_else(|| os_error(libc::EISDIR))?;
            if self.pending.is_empty() {
                return Ok(name);
            }
            let found = sys::open_at(&self.dir, &c_name(&name)?, O_LOOK, 0)?;
            let metadata = found.metadata()?;
            if metadata.is_dir() {
                self.enter(found, &name);
            } else if metadata.file_type().is_symlink() {
                if let Link::Kernel = self.check_link(&found, &name)? {
                    let flags = libc::O_PATH | libc::O_DIRECTORY;
                    let dir = sys::open_at(&self.dir, &c_name(&name)?, flags, 0)?;
                    self.enter(dir, &name);
                }
            } else {
                return Err(os_error(libc::ENOTDIR));
            }
        }
    }

    fn enter(&mut self, dir: File, name: &OsStr) {
        self.dir = Dir::Open(dir);
        self.shown.push(name);
    }

    /// Checks the symbolic link `link` (opened [`O_LOOK`]), named `name`
    /// in the current directory: refused unless ours or root's, else its
    /// target is queued (or left to the kernel, on procfs).
    pub fn check_link(&mut self, link: &File, name: &OsStr) -> Result<Link, Error> {
        self.links += 1;
        if self.links > MAX_LINKS {
            return Err(os_error(libc::ELOOP));
        }
        if !trusted_owner(link.metadata()?.uid()) {
            return Err(Error::ForeignLink(self.shown.join(name)));
        }
        if sys::on_procfs(link)? {
            return Ok(Link::Kernel);
        }
        let target = sys::read_link(link)?;
        if target.is_empty() {
            return Err(os_error(libc::ENOENT));
        }
        self.queue(Path::new(OsStr::from_bytes(&target)))?;
        Ok(Link::Queued)
    }
}

/// How a name is looked at: whatever it is, a link itself rather than its
/// target, without opening it for reading or writing.
pub const O_LOOK: libc::c_int = libc::O_PATH | libc::O_NOFOLLOW;

pub fn c_name(name: &OsStr) -> io::Result<CString> {
    CString::new(name.as_bytes()).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}
