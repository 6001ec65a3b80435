//! The files `hprof-rs listen` writes the JVMs' output to: they hold the
//! program's data (heap contents, names, arguments), so they are made
//! readable by their user only, and never written through something
//! another user put at their name (`-o /tmp/out` in a directory anyone
//! can write to).

use std::fs::{self, File, OpenOptions};
use std::io::{self, ErrorKind};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// The mode of an output file: its user's only.
const PRIVATE: u32 = 0o600;

fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

fn refused(message: String) -> io::Error {
    io::Error::new(ErrorKind::PermissionDenied, message)
}

/// Opens `path` for a JVM's output, empty and with mode 0600: created if
/// missing; if there, taken only when it is ours. A symbolic link is
/// followed only when it is ours or its directory owner's (who could
/// replace it anyway), the kernel's `protected_symlinks` rule, so that
/// `-o /dev/stdout` still works.
pub fn create(path: &Path) -> io::Result<File> {
    let follow = check_existing(path)?;
    let mut options = OpenOptions::new();
    options.write(true).create(true).mode(PRIVATE);
    if !follow {
        // Something planted between the look above and this open is not
        // followed either.
        options.custom_flags(libc::O_NOFOLLOW);
    }
    let file = options.open(path)?;
    let opened = file.metadata()?;
    if opened.is_file() {
        // A file planted between the look and the open: not emptied.
        if opened.uid() != euid() {
            return Err(not_ours(path, opened.uid()));
        }
        file.set_len(0)?;
        // (An old file of ours keeps its mode through the open.)
        if opened.permissions().mode() & 0o7777 != PRIVATE {
            file.set_permissions(fs::Permissions::from_mode(PRIVATE))?;
        }
    }
    Ok(file)
}

fn not_ours(path: &Path, uid: u32) -> io::Error {
    refused(format!(
        "{} is owned by uid {uid}, not by uid {}",
        path.display(),
        euid()
    ))
}

/// Whether the open may follow a symbolic link at `path`; an error if
/// what is there belongs to someone else.
fn check_existing(path: &Path) -> io::Result<bool> {
    let found = match fs::symlink_metadata(path) {
        Ok(found) => found,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e),
    };
    let me = euid();
    if !found.file_type().is_symlink() {
        return if found.uid() == me {
            Ok(false)
        } else {
            Err(not_ours(path, found.uid()))
        };
    }
    let directory = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    let directory_owner = fs::metadata(directory)?.uid();
    if found.uid() == me || found.uid() == directory_owner {
        Ok(true)
    } else {
        Err(refused(format!(
            "{} is a symbolic link of uid {}, not of uid {me} nor of its directory's owner",
            path.display(),
            found.uid()
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "hprof-rs-output-file-{name}-{}",
            std::process::id()
        ));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn mode(path: &Path) -> u32 {
        fs::metadata(path).unwrap().permissions().mode() & 0o7777
    }

    #[test]
    fn a_new_file_is_private() {
        let dir = scratch("new");
        let path = dir.join("out");
        create(&path).unwrap();
        assert_eq!(mode(&path), 0o600);
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn an_old_file_of_ours_is_emptied_and_made_private() {
        let dir = scratch("old");
        let path = dir.join("out");
        fs::write(&path, b"old data").unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
        create(&path).unwrap();
        assert_eq!(mode(&path), 0o600);
        assert_eq!(fs::read(&path).unwrap(), b"");
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn our_own_symbolic_link_is_followed() {
        let dir = scratch("link");
        let target = dir.join("target");
        let link = dir.join("out");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        create(&link).unwrap();
        assert!(target.is_file());
        assert_eq!(mode(&target), 0o600);
        fs::remove_dir_all(dir).unwrap();
    }
}
