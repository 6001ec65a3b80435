//! For the tests that play two users, root (the victim, this test's user)
//! and `nobody` (the other one): scratch directories under /tmp, which
//! nobody can reach (unlike target/), files handed to nobody, and programs
//! run as nobody through setpriv.

use std::fs;
use std::io::ErrorKind;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// `nobody:nogroup`, the other user.
pub const NOBODY: u32 = 65534;

/// Fails unless run as root: the test plays two users.
pub fn assert_root(what: &str) {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let euid = unsafe { libc::geteuid() };
    assert_eq!(
        euid, 0,
        "{what}: runs processes as user nobody through setpriv: run it as root"
    );
}

/// A fresh directory under /tmp with a random name, mode 0755; removed
/// when dropped. Short paths: a socket's path has at most 107 bytes.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(what: &str) -> TempDir {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        loop {
            let nanos = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap()
                .subsec_nanos();
            let n = COUNTER.fetch_add(1, Ordering::Relaxed);
            let path = PathBuf::from(format!(
                "/tmp/hprs-{what}-{}-{n}-{nanos:08x}",
                std::process::id()
            ));
            match fs::create_dir(&path) {
                Ok(()) => {
                    set_mode(&path, 0o755);
                    return TempDir(path);
                }
                Err(e) if e.kind() == ErrorKind::AlreadyExists => continue,
                Err(e) => panic!("cannot create {}: {e}", path.display()),
            }
        }
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    pub fn join(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

pub fn set_mode(path: &Path, mode: u32) {
    fs::set_permissions(path, fs::Permissions::from_mode(mode))
        .unwrap_or_else(|e| panic!("chmod {mode:o} {}: {e}", path.display()));
}

/// The mode of `path` itself (a link is not followed).
pub fn mode_of(path: &Path) -> u32 {
    fs::symlink_metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .permissions()
        .mode()
        & 0o7777
}

/// Hands `path` (not what a link points to) to nobody.
pub fn chown_nobody(path: &Path) {
    std::os::unix::fs::lchown(path, Some(NOBODY), Some(NOBODY))
        .unwrap_or_else(|e| panic!("chown nobody {}: {e}", path.display()));
}

/// `program args...` as nobody (group nogroup, no other groups), stdin
/// closed; `prepare` may add to the command (its environment, say).
pub fn as_nobody(program: &Path, args: &[&str], prepare: impl FnOnce(&mut Command)) -> Output {
    let mut cmd = Command::new("setpriv");
    cmd.args(["--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"])
        .arg(program)
        .args(args)
        .stdin(Stdio::null());
    prepare(&mut cmd);
    super::run(&mut cmd)
}
