//! A directory only this user can enter, for the files the agent writes
//! for itself (the JVM's heap dump before it is carried into the output).
//!
//! Its name ends in random characters and it is made by one `mkdir` with
//! mode 0700, which fails if anything (a directory, a file, a symlink) is
//! already at that path: another local user can neither predict the path
//! nor pre-create it, nor put anything inside it afterwards. Its owner and
//! mode are checked once it exists (a mode the umask cannot widen, but a
//! file system that ignores modes is refused too).

use crate::options::Options;
use crate::output::sink::Sink;
use std::ffi::OsStr;
use std::fs::DirBuilder;
use std::io::{self, Read};
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};

/// How many names are tried before giving up (each has 2^48 possibilities:
/// a clash means someone is filling the directory on purpose).
const ATTEMPTS: u32 = 16;

/// A private directory made by [`PrivateDir::create`].
#[derive(Debug)]
pub struct PrivateDir {
    path: PathBuf,
}

impl PrivateDir {
    /// The private directory where the JVM writes a heap dump before it is
    /// carried into the output: beside the output file, so that it is on the
    /// same disk (in the temporary directory when the output is a device, a
    /// FIFO or `net=`), named `<output>.<pid>.TMP-<random>`, mode 0700.
    pub fn for_heap_dumps(options: &Options, sink: &Sink) -> Result<PrivateDir, String> {
        // Beside a regular output file; else (a device, a FIFO, `net=`) in the
        // temporary directory.
        let beside = sink
            .file_path()
            .filter(|path| path.is_file())
            .and_then(|path| Some((path.parent()?, path.file_name()?)));
        let (parent, name) = match beside {
            Some((parent, name)) if parent.as_os_str().is_empty() => {
                (Path::new(".").into(), name.into())
            }
            Some((parent, name)) => (parent.to_path_buf(), name.to_owned()),
            None => (std::env::temp_dir(), options.default_file_name().into()),
        };
        let mut prefix = name;
        prefix.push(format!(".{}.TMP-", std::process::id()));
        PrivateDir::create(&parent, &prefix).map_err(|e| {
            format!(
                "cannot make a private directory for heap dumps in {}: {e}",
                parent.display()
            )
        })
    }

    /// Makes `<parent>/<prefix><12 random characters>`, mode 0700.
    pub fn create(parent: &Path, prefix: &OsStr) -> io::Result<PrivateDir> {
        let mut last_error = io::Error::from(io::ErrorKind::AlreadyExists);
        for _ in 0..ATTEMPTS {
            let mut name = prefix.to_owned();
            name.push(random_suffix());
            let path = parent.join(name);
            match DirBuilder::new().mode(0o700).create(&path) {
                Ok(()) => {
                    let dir = PrivateDir { path };
                    dir.check()?;
                    return Ok(dir);
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last_error = e,
                Err(e) => return Err(e),
            }
        }
        Err(last_error)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Removes the directory if it is empty; a file left inside (which only
    /// this user or root can have put there) keeps it, never deleted.
    pub fn remove(&self) {
        let _ = std::fs::remove_dir(&self.path);
    }

    /// A real directory (not a link), owned by this process's user, that no
    /// one else may enter.
    fn check(&self) -> io::Result<()> {
        let metadata = std::fs::symlink_metadata(&self.path)?;
        let refuse = |why: &str| {
            self.remove();
            Err(io::Error::other(format!("{}: {why}", self.path.display())))
        };
        if !metadata.is_dir() {
            return refuse("not a directory");
        }
        if metadata.uid() != crate::sys::effective_uid() {
            return refuse("owned by another user");
        }
        if metadata.mode() & 0o077 != 0 {
            return refuse("open to other users (mode is not 0700)");
        }
        Ok(())
    }
}

/// 12 characters of `[A-Za-z0-9]` from the kernel's random source (72
/// bits), or, should /dev/urandom be unreadable, from the standard
/// library's per-process random hash keys mixed with the time.
fn random_suffix() -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut bytes = [0u8; 12];
    let from_kernel = std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .is_ok();
    if !from_kernel {
        use std::hash::{BuildHasher, Hasher};
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos()),
        );
        let high = hasher.finish();
        hasher.write_u64(high);
        let low = hasher.finish();
        bytes[..8].copy_from_slice(&high.to_le_bytes());
        bytes[8..].copy_from_slice(&low.to_le_bytes()[..4]);
    }
    bytes
        .iter()
        .map(|&b| char::from(ALPHABET[usize::from(b) % ALPHABET.len()]))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("hprof-rs-unit-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn made_with_mode_0700_and_a_random_name() {
        let parent = scratch("private-dir");
        let a = PrivateDir::create(&parent, OsStr::new("out.hprof.1.TMP-")).unwrap();
        let b = PrivateDir::create(&parent, OsStr::new("out.hprof.1.TMP-")).unwrap();
        assert_ne!(a.path(), b.path());
        for dir in [&a, &b] {
            let name = dir.path().file_name().unwrap().to_str().unwrap();
            let suffix = name.strip_prefix("out.hprof.1.TMP-").unwrap();
            assert_eq!(suffix.len(), 12, "{name}");
            assert!(suffix.bytes().all(|c| c.is_ascii_alphanumeric()), "{name}");
            let mode = std::fs::metadata(dir.path()).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o700, "{name}: mode {mode:o}");
        }
        a.remove();
        assert!(!a.path().exists());
        std::fs::write(b.path().join("kept.txt"), b"x").unwrap();
        b.remove();
        assert!(
            b.path().join("kept.txt").exists(),
            "a file inside was removed"
        );
        std::fs::remove_dir_all(&parent).unwrap();
    }

    #[test]
    fn a_parent_that_cannot_hold_it_is_an_error() {
        let parent = scratch("private-dir-missing").join("not there");
        let error = PrivateDir::create(&parent, OsStr::new("x-")).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::NotFound);
    }
}
