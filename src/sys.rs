//! The operating system calls the agent makes outside the JVM boundary,
//! each behind a safe function: the one place besides `agent/jvm/`, the
//! JVMTI entry points (`agent/mod.rs`) and the CPU sampler's signal path
//! (`agent/modes/cpu_samples/`) that holds unsafe code.

use std::fs::File;
use std::io;
use std::os::unix::io::AsRawFd;

/// This process's effective user id.
pub fn effective_uid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// Whether every byte of address space the process maps is charged
/// against a limit: a finite `ulimit -v` (RLIMIT_AS), or the kernel's
/// strict overcommit (`vm.overcommit_memory = 2`), under which a thread's
/// stack is charged whole when it is made, used or not.
pub fn address_space_is_limited() -> bool {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one rlimit into the struct it is given.
    let known = unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut limit) } == 0;
    let rlimit_as = !known || limit.rlim_cur != libc::RLIM_INFINITY;
    let strict_overcommit = std::fs::read_to_string("/proc/sys/vm/overcommit_memory")
        .is_ok_and(|mode| mode.trim() == "2");
    rlimit_as || strict_overcommit
}

/// Monotonic nanoseconds: the clock of `System.nanoTime()` on Linux
/// (CLOCK_MONOTONIC), which `std::time::Instant` uses too but does not
/// show as a number.
pub fn monotonic_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// CPU time the calling thread has used, in ns (CLOCK_THREAD_CPUTIME_ID).
pub fn thread_cpu_ns() -> u64 {
    clock_ns(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// The clock `clock` in ns; only clocks every Linux process has are asked.
fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid out-pointer; the callers pass CLOCK_MONOTONIC or
    // CLOCK_THREAD_CPUTIME_ID, which always exist on Linux.
    unsafe { libc::clock_gettime(clock, &mut now) };
    now.tv_sec as u64 * 1_000_000_000 + now.tv_nsec as u64
}

/// Clears O_NONBLOCK on `file` (set only to open a FIFO without waiting
/// for a reader).
pub fn set_blocking(file: &File) -> io::Result<()> {
    let fd = file.as_raw_fd();
    // SAFETY: fcntl on a descriptor `file` owns, reading then writing its
    // status flags.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    // SAFETY: as above.
    if flags < 0 || unsafe { libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Releases the disk blocks of `len` bytes of `file` from `offset` on,
/// keeping its size (reads of the range give zeros afterwards). False on a
/// file system that cannot punch holes.
pub fn punch_hole(file: &File, offset: u64, len: u64) -> bool {
    let (Ok(offset), Ok(len)) = (libc::off_t::try_from(offset), libc::off_t::try_from(len)) else {
        return false;
    };
    // SAFETY: fallocate on a descriptor `file` owns; PUNCH_HOLE with
    // KEEP_SIZE only deallocates the range, touching no memory of ours.
    let done = unsafe {
        libc::fallocate(
            file.as_raw_fd(),
            libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
            offset,
            len,
        )
    };
    done == 0
}

/// A local time broken down by the C library's time zone rules.
pub struct LocalTime {
    pub year: i64,
    /// 0 (January) to 11.
    pub month: i32,
    pub day: i32,
    pub hour: i32,
    pub minute: i32,
    pub second: i32,
    /// 0 (Sunday) to 6.
    pub weekday: i32,
}

/// `secs` since the epoch as local time (`localtime_r`); None for a time
/// the C library cannot convert.
pub fn local_time(secs: i64) -> Option<LocalTime> {
    let t = libc::time_t::try_from(secs).ok()?;
    // SAFETY: `tm` is a plain C struct for which all-zero bytes are a valid
    // value; `localtime_r` only reads `t` and writes into `tm`, both of which
    // live for the whole call, and it keeps no pointer to either afterwards.
    let tm = unsafe {
        let mut tm: libc::tm = std::mem::zeroed();
        if libc::localtime_r(&t, &mut tm).is_null() {
            return None;
        }
        tm
    };
    Some(LocalTime {
        year: i64::from(tm.tm_year) + 1900,
        month: tm.tm_mon,
        day: tm.tm_mday,
        hour: tm.tm_hour,
        minute: tm.tm_min,
        second: tm.tm_sec,
        weekday: tm.tm_wday,
    })
}

/// This process's open descriptors that are connections accepted on a
/// UNIX stream socket bound to one of `paths` (the listening socket itself
/// left out). At most `limit` descriptors are looked at.
pub fn accepted_unix_connections(paths: &[&str], limit: usize) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc/self/fd") else {
        return Vec::new();
    };
    entries
        .take(limit)
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&fd| {
            socket_option(fd, libc::SO_TYPE) == Some(libc::SOCK_STREAM)
                && socket_option(fd, libc::SO_ACCEPTCONN) == Some(0)
                && unix_socket_path(fd).is_some_and(|path| paths.contains(&path.as_str()))
        })
        .collect()
}

/// An integer option of the socket `fd` at level SOL_SOCKET; None when
/// `fd` is no socket.
fn socket_option(fd: i32, option: libc::c_int) -> Option<libc::c_int> {
    let mut value: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` bytes into `value`; any
    // descriptor number is safe to ask about (ENOTSOCK, EBADF).
    let done = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            option,
            (&mut value as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    (done == 0).then_some(value)
}

/// The path a UNIX socket `fd` is bound to (for an accepted connection,
/// its listening socket's); None for any other descriptor.
fn unix_socket_path(fd: i32) -> Option<String> {
    // SAFETY: a sockaddr_un is plain bytes; all zeros is a valid value.
    let mut addr: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::sockaddr_un>() as libc::socklen_t;
    // SAFETY: getsockname writes at most `len` bytes into `addr`.
    let done =
        unsafe { libc::getsockname(fd, (&mut addr as *mut libc::sockaddr_un).cast(), &mut len) };
    if done != 0 || addr.sun_family != libc::AF_UNIX as libc::sa_family_t {
        return None;
    }
    let path: Vec<u8> = addr
        .sun_path
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8(path).ok()
}

/// Sends `bytes` on the connected socket `fd` at once or not at all: never
/// waits, and a closed peer is an error, not a SIGPIPE. Returns how many
/// bytes the socket took.
pub fn send_now(fd: i32, bytes: &[u8]) -> io::Result<usize> {
    // SAFETY: send reads `bytes.len()` bytes from `bytes`; a stale
    // descriptor fails (EBADF, ENOTSOCK).
    let sent = unsafe {
        libc::send(
            fd,
            bytes.as_ptr().cast(),
            bytes.len(),
            libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT,
        )
    };
    usize::try_from(sent).map_err(|_| io::Error::last_os_error())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_monotonic_clock_moves_forward() {
        let a = monotonic_ns();
        std::thread::sleep(std::time::Duration::from_millis(2));
        assert!(monotonic_ns() >= a + 2_000_000);
    }

    #[test]
    fn a_connection_accepted_on_a_unix_socket_is_found_by_the_listeners_path() {
        use std::os::unix::net::{UnixListener, UnixStream};
        let dir = std::env::temp_dir().join(format!("hprof-rs-sys-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir(&dir).unwrap();
        let path = dir.join("listener");
        let listener = UnixListener::bind(&path).unwrap();
        let client = UnixStream::connect(&path).unwrap();
        let (accepted, _) = listener.accept().unwrap();
        let name = path.to_str().unwrap();
        let found = accepted_unix_connections(&[name], 100_000);
        assert_eq!(found, [accepted.as_raw_fd()]);
        assert_eq!(send_now(found[0], b"hello\n").unwrap(), 6);
        let mut got = [0u8; 6];
        std::io::Read::read_exact(&mut &client, &mut got).unwrap();
        assert_eq!(&got, b"hello\n");
        assert!(accepted_unix_connections(&["/nowhere"], 100_000).is_empty());
        drop((accepted, client, listener));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_epoch_is_a_local_time() {
        let t = local_time(0).expect("the epoch converts");
        assert!((1969..=1970).contains(&t.year));
    }
}
