//! The few system calls the walk needs that std does not offer on a
//! directory descriptor: openat, unlinkat, readlinkat(fd, ""), fstatfs,
//! geteuid.
//! Every `unsafe` of the crate is here.

use std::ffi::CStr;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, RawFd};

/// Where a name is looked up: the current directory or an open one.
pub enum Dir {
    Cwd,
    Open(File),
}

impl Dir {
    fn raw(&self) -> RawFd {
        match self {
            Dir::Cwd => libc::AT_FDCWD,
            Dir::Open(file) => file.as_raw_fd(),
        }
    }
}

/// openat(2) of `name` in `dir`; `O_CLOEXEC` is always added, so that no
/// program the JVM or the tool starts inherits the descriptor.
pub fn open_at(dir: &Dir, name: &CStr, flags: libc::c_int, mode: u32) -> io::Result<File> {
    // SAFETY: `name` is a NUL-terminated string that outlives the call;
    // `dir` is AT_FDCWD or a descriptor `dir` owns and keeps open.
    let fd = unsafe {
        libc::openat(
            dir.raw(),
            name.as_ptr(),
            flags | libc::O_CLOEXEC,
            mode as libc::c_uint,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just returned by openat and nothing else owns it.
    Ok(unsafe { File::from_raw_fd(fd) })
}

/// unlinkat(2) of the file `name` in `dir`.
pub fn unlink_at(dir: &Dir, name: &CStr) -> io::Result<()> {
    // SAFETY: as in `open_at`.
    if unsafe { libc::unlinkat(dir.raw(), name.as_ptr(), 0) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The target of the symbolic link `link` (opened `O_PATH|O_NOFOLLOW`):
/// read from the descriptor, so it is the very link whose owner was checked.
pub fn read_link(link: &File) -> io::Result<Vec<u8>> {
    let mut buffer = vec![0u8; 256];
    loop {
        // SAFETY: the buffer is writable for its whole length; "" asks for
        // the link the descriptor itself refers to.
        let n = unsafe {
            libc::readlinkat(
                link.as_raw_fd(),
                c"".as_ptr(),
                buffer.as_mut_ptr().cast(),
                buffer.len(),
            )
        };
        let n = usize::try_from(n).map_err(|_| io::Error::last_os_error())?;
        if n < buffer.len() {
            buffer.truncate(n);
            return Ok(buffer);
        }
        // The target may have been cut: try again with more room.
        let bigger = buffer.len() * 2;
        buffer.resize(bigger, 0);
    }
}

/// Whether `file` lies on procfs, whose links (/proc/self, /proc/PID/fd/N)
/// are the kernel's own: no user can plant one, and some name no path
/// (`pipe:[1234]`).
pub fn on_procfs(file: &File) -> io::Result<bool> {
    // SAFETY: statfs is plain data, for which all zeroes is a valid value.
    let mut found: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: `file` is an open descriptor; `found` is writable.
    if unsafe { libc::fstatfs(file.as_raw_fd(), &mut found) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(found.f_type == libc::PROC_SUPER_MAGIC)
}

pub fn effective_uid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}
