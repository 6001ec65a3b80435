//! The process `hprof-rs attach PID` talks to: whether it is a HotSpot JVM
//! that allows attaching, whose it is, and how its files are reached from
//! here when it runs in a pid and mount namespace of its own (a container):
//! through `/proc/PID/root`, under the pid the JVM knows itself by
//! (`NSpid` in `/proc/PID/status`). Everything here only reads `/proc`.

use super::root::Root;
use std::fs;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// A JVM to attach to.
pub struct Target {
    /// Its pid here.
    pub pid: u32,
    /// Its pid in its own namespace (the number in its attach file names).
    pub ns_pid: u32,
    /// Its effective user and group.
    pub uid: u32,
    pub gid: u32,
    /// Its file system as it sees it: `/proc/PID/root`, held open (the
    /// paths inside are resolved there, see root.rs).
    pub root: Root,
    /// When it started (`/proc/PID/stat`), which tells it from a later
    /// process given the same pid.
    started: Option<u64>,
    /// Whether it sees another file system than ours (its own mount
    /// namespace): our paths mean nothing to it.
    pub own_mounts: bool,
}

/// The JVM options that turn the attach mechanism off, as given on the
/// command line or in the variables the launcher reads.
const DISABLED: &str = "-XX:+DisableAttachMechanism";

impl Target {
    /// Looks at process `pid`: an error when it does not exist, is not a
    /// HotSpot JVM, or turned attaching off. Nothing is sent to it.
    pub fn find(pid: u32) -> Result<Self, String> {
        let proc = PathBuf::from(format!("/proc/{pid}"));
        let status =
            fs::read_to_string(proc.join("status")).map_err(|_| format!("no process {pid}"))?;
        let maps = fs::read_to_string(proc.join("maps")).map_err(|e| {
            format!("cannot look at process {pid} ({e}): attach as its user or as root")
        })?;
        if !maps.lines().any(|line| line.ends_with("/libjvm.so")) {
            return Err(format!(
                "process {pid} is not a Java virtual machine (no libjvm.so)"
            ));
        }
        if turns_attach_off(pid) {
            return Err(format!(
                "the JVM {pid} was started with {DISABLED}: it cannot be attached to"
            ));
        }
        let (uid, gid) = (ids(&status, "Uid:"), ids(&status, "Gid:"));
        let ns_pid = status
            .lines()
            .find_map(|l| l.strip_prefix("NSpid:"))
            .and_then(|ids| ids.split_whitespace().last())
            .and_then(|id| id.parse().ok())
            .unwrap_or(pid);
        let own_mounts = match (
            fs::read_link("/proc/self/ns/mnt"),
            fs::read_link(proc.join("ns/mnt")),
        ) {
            (Ok(ours), Ok(its)) => ours != its,
            _ => false,
        };
        Ok(Self {
            pid,
            ns_pid,
            uid: uid.ok_or_else(|| format!("cannot read the user of process {pid}"))?,
            gid: gid.ok_or_else(|| format!("cannot read the group of process {pid}"))?,
            root: Root::of(pid)
                .map_err(|e| format!("cannot open the root of process {pid}: {e}"))?,
            started: start_time(pid),
            own_mounts,
        })
    }

    /// Runs `work` with the target's effective user and group when we are
    /// root (the files we make for it are then its own, as the JVM expects),
    /// and as ourselves otherwise.
    pub fn as_its_user<T>(&self, work: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
        // SAFETY: plain id calls; the ids are set back before returning.
        let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
        let switch = uid == 0 && self.uid != 0;
        if switch {
            // SAFETY: as root, setegid/seteuid to another id succeed or fail
            // without other effect; this tool runs no other thread now.
            let switched = unsafe { libc::setegid(self.gid) == 0 && libc::seteuid(self.uid) == 0 };
            if !switched {
                // SAFETY: back to root, as above.
                unsafe {
                    libc::seteuid(uid);
                    libc::setegid(gid);
                }
                return Err(format!("cannot take the user of JVM {}", self.pid));
            }
        }
        let result = work();
        if switch {
            // SAFETY: back to the saved root ids.
            unsafe {
                libc::seteuid(uid);
                libc::setegid(gid);
            }
        }
        result
    }

    /// Whether the JVM still runs: the same process, not ended (a zombie
    /// has ended; its socket and files are closed).
    pub fn alive(&self) -> bool {
        let Ok(stat) = fs::read_to_string(format!("/proc/{}/stat", self.pid)) else {
            return false;
        };
        let state = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.trim_start().chars().next());
        !matches!(state, None | Some('Z' | 'X')) && start_time(self.pid) == self.started
    }

    /// Whether the JVM ends within `patience` (its attach connection
    /// closes before the process is reaped: it is given time to go).
    pub fn exits_within(&self, patience: Duration) -> bool {
        let deadline = Instant::now() + patience;
        while self.alive() {
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        true
    }
}

/// The start time of process `pid`, in clock ticks since boot (field 22
/// of `/proc/PID/stat`, counted after the command name, which may hold
/// spaces and parentheses).
fn start_time(pid: u32) -> Option<u64> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, after_name) = stat.rsplit_once(')')?;
    after_name.split_whitespace().nth(19)?.parse().ok()
}

/// The effective id of a `Uid:` or `Gid:` line (real, effective, saved, fs).
fn ids(status: &str, key: &str) -> Option<u32> {
    status
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|ids| ids.split_whitespace().nth(1))
        .and_then(|id| id.parse().ok())
}

/// Whether the JVM was told to refuse attaching: on its command line or in
/// the variables the launcher and the JVM read (a later `-` option would
/// turn it on again, which a last-wins look respects).
fn turns_attach_off(pid: u32) -> bool {
    let mut words: Vec<String> = Vec::new();
    if let Ok(cmdline) = fs::read(format!("/proc/{pid}/cmdline")) {
        words.extend(
            cmdline
                .split(|&b| b == 0)
                .map(|w| String::from_utf8_lossy(w).into_owned()),
        );
    }
    if let Ok(environ) = fs::read(format!("/proc/{pid}/environ")) {
        for var in environ.split(|&b| b == 0) {
            let var = String::from_utf8_lossy(var);
            for name in ["JAVA_TOOL_OPTIONS=", "JDK_JAVA_OPTIONS=", "_JAVA_OPTIONS="] {
                if let Some(value) = var.strip_prefix(name) {
                    words.extend(value.split_whitespace().map(str::to_owned));
                }
            }
        }
    }
    words
        .iter()
        .rev()
        .find(|w| w.as_str() == DISABLED || w.as_str() == "-XX:-DisableAttachMechanism")
        .is_some_and(|w| w == DISABLED)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn effective_ids_are_the_second_column() {
        let status = "Name:\tjava\nUid:\t1000\t1001\t1002\t1003\nGid:\t50\t51\t52\t53\n";
        assert_eq!(ids(status, "Uid:"), Some(1001));
        assert_eq!(ids(status, "Gid:"), Some(51));
        assert_eq!(ids(status, "Groups:"), None);
    }

    #[test]
    fn this_test_process_is_no_jvm() {
        let me = std::process::id();
        let error = Target::find(me).err().unwrap_or_default();
        assert!(error.contains("is not a Java virtual machine"), "{error}");
    }
}
