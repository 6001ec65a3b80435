//! Paths inside a JVM's own file system (a container), resolved the way
//! the JVM would resolve them but never outside its root.
//!
//! `/proc/PID/root/tmp/x` joined as a string is walked by our kernel view:
//! an absolute symbolic link inside the container (`/tmp -> /etc`) is
//! then resolved against *our* root, and the file lands on the host. So
//! every path here starts from a descriptor of `/proc/PID/root`, opened
//! once, and is resolved by openat2(2) with `RESOLVE_IN_ROOT` (absolute
//! links and `..` stay inside) and `RESOLVE_NO_MAGICLINKS` (no
//! `/proc/self/cwd`, which would lead anywhere). A kernel older than 5.6
//! has no openat2: then every component is opened one by one, following
//! no symbolic link at all (a container whose /tmp is a link is refused).
//! Names in a directory found that way are then reached with the `*at`
//! calls, relative to its descriptor.

use hprof_private_files::at::{self, open_at};
use std::ffi::CString;
use std::fs::{File, Metadata};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// The root directory of a process, held open.
pub struct Root(File);

impl Root {
    /// The root of process `pid` (`/proc/PID/root`), as an `O_PATH` descriptor.
    pub fn of(pid: u32) -> io::Result<Root> {
        let path = c_path(Path::new(&format!("/proc/{pid}/root")))?;
        open_at(&at::Dir::Cwd, &path, libc::O_PATH | libc::O_DIRECTORY, 0).map(Root)
    }

    /// Opens `inside` (absolute, as the process sees it) with `flags`
    /// (`O_CLOEXEC` is added), resolved inside this root.
    pub fn open(&self, inside: &str, flags: i32) -> io::Result<File> {
        let relative = inside.trim_start_matches('/');
        let relative = if relative.is_empty() { "." } else { relative };
        match openat2_in_root(&self.0, relative, flags) {
            Err(e) if e.raw_os_error() == Some(libc::ENOSYS) => walk(&self.0, relative, flags),
            other => other,
        }
    }

    /// The directory `inside`, held open to reach names in it.
    pub fn dir(&self, inside: &str) -> io::Result<Dir> {
        self.open(inside, libc::O_PATH | libc::O_DIRECTORY)
            .map(|dir| Dir(at::Dir::Open(dir)))
    }
}

/// A directory held open (`O_PATH`): names in it are one component, and
/// never followed when they are symbolic links.
pub struct Dir(at::Dir);

impl Dir {
    /// A directory given by a path of ours (e.g. `/proc/PID/cwd`).
    pub fn at(path: &Path) -> io::Result<Dir> {
        let flags = libc::O_PATH | libc::O_DIRECTORY;
        let dir = open_at(&at::Dir::Cwd, &c_path(path)?, flags, 0)?;
        Ok(Dir(at::Dir::Open(dir)))
    }

    /// Opens `name` in this directory with `flags` and `O_NOFOLLOW`
    /// (and `mode`, when `flags` create it).
    pub fn open(&self, name: &str, flags: i32, mode: u32) -> io::Result<File> {
        let name = c_path(Path::new(one_component(name)?))?;
        open_at(&self.0, &name, flags | libc::O_NOFOLLOW, mode)
    }

    /// What `name` is (a symbolic link is not followed); None if nothing
    /// is there.
    pub fn look(&self, name: &str) -> io::Result<Option<Metadata>> {
        match self.open(name, libc::O_PATH, 0) {
            Ok(file) => file.metadata().map(Some),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Removes the file `name` from this directory.
    pub fn remove(&self, name: &str) -> io::Result<()> {
        at::unlink_at(&self.0, &c_path(Path::new(one_component(name)?))?)
    }
}

/// `name` when it is one plain component (no `/`, not `.` or `..`).
fn one_component(name: &str) -> io::Result<&str> {
    if name.is_empty() || name.contains('/') || name == "." || name == ".." {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{name:?} is not a file name"),
        ));
    }
    Ok(name)
}

fn c_path(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a path with a NUL byte"))
}

/// The kernel's `struct open_how` (libc's cannot be built: it is marked
/// non-exhaustive, the kernel may grow it; its first version is this).
#[repr(C)]
struct OpenHow {
    flags: u64,
    mode: u64,
    resolve: u64,
}

/// openat2(2) of `relative` under `root`, which it never leaves.
fn openat2_in_root(root: &File, relative: &str, flags: i32) -> io::Result<File> {
    let path = c_path(Path::new(relative))?;
    let how = OpenHow {
        flags: (flags | libc::O_CLOEXEC) as u64,
        mode: 0,
        resolve: libc::RESOLVE_IN_ROOT | libc::RESOLVE_NO_MAGICLINKS,
    };
    // SAFETY: the root descriptor is open, `path` a valid C string, and
    // `how` a properly sized open_how that lives across the call; the
    // kernel only reads them. The result is checked below.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            root.as_raw_fd(),
            path.as_ptr(),
            &how as *const OpenHow,
            std::mem::size_of::<OpenHow>(),
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: openat2 returned a new descriptor, which nothing else owns.
    Ok(unsafe { File::from_raw_fd(fd as i32) })
}

/// Without openat2: each component opened from the one before, with
/// `O_NOFOLLOW` and no `..`, so that nothing leads out of `root` (and no
/// symbolic link is followed, even one that would stay inside).
fn walk(root: &File, relative: &str, flags: i32) -> io::Result<File> {
    let parts: Vec<&str> = relative
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    if parts.contains(&"..") {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{relative}: `..` is not followed without openat2"),
        ));
    }
    let mut dir = at::Dir::Open(root.try_clone()?);
    let Some((last, leading)) = parts.split_last() else {
        return open_at(&dir, c".", flags, 0);
    };
    for part in leading {
        let flags = libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW;
        dir = at::Dir::Open(open_at(&dir, &c_path(Path::new(part))?, flags, 0)?);
    }
    open_at(&dir, &c_path(Path::new(last))?, flags | libc::O_NOFOLLOW, 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    #[test]
    fn an_absolute_link_inside_stays_inside() {
        let base = std::env::temp_dir().join(format!("hprof-rs-root-{}", std::process::id()));
        let _ = fs::remove_dir_all(&base);
        let (root, outside) = (base.join("root"), base.join("outside"));
        fs::create_dir_all(root.join("real")).unwrap();
        fs::create_dir_all(&outside).unwrap();
        fs::write(root.join("real/f"), b"in").unwrap();
        fs::write(outside.join("f"), b"out").unwrap();
        // An absolute link to a path that exists on the host only, and
        // one to a directory of the root.
        std::os::unix::fs::symlink(&outside, root.join("escape")).unwrap();
        std::os::unix::fs::symlink("/real", root.join("tmp")).unwrap();
        let root_fd = Root(File::open(&root).unwrap());
        let read = |inside: &str| {
            root_fd
                .open(inside, libc::O_RDONLY)
                .map(|fd| fs::read_to_string(format!("/proc/self/fd/{}", fd.as_raw_fd())))
        };
        assert_eq!(read("/tmp/f").unwrap().unwrap(), "in");
        assert_eq!(read("/../../real/f").unwrap().unwrap(), "in");
        let escaped = format!("{}/f", "/escape");
        assert!(read(&escaped).is_err(), "{escaped} led out of the root");
        // Without openat2: no link is followed at all.
        let walked = walk(&root_fd.0, "tmp/f", libc::O_RDONLY);
        assert!(walked.is_err());
        assert!(walk(&root_fd.0, "real/f", libc::O_RDONLY).is_ok());
        assert!(walk(&root_fd.0, "real/../real/f", libc::O_RDONLY).is_err());
        fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn names_are_single_components() {
        for bad in ["", ".", "..", "a/b"] {
            assert!(one_component(bad).is_err(), "{bad:?}");
        }
        assert!(one_component(".attach_pid1").is_ok());
    }
}
