//! Where the agent library is: `HPROF_RS_AGENT`, else beside this program,
//! in the layout of the release archive and `scripts/install.sh`
//! (`bin/hprof-rs` and `lib/libhprof_rs.so`) or of a cargo build
//! (`target/release/hprof-rs` and `target/release/libhprof_rs.so`).
//! `hprof-rs run` and `hprof-rs agent-path` both ask here.

use std::path::{Path, PathBuf};

/// File name of the agent library on this platform.
pub const AGENT_FILE: &str = "libhprof_rs.so";

/// Environment variable that names the agent library, ahead of any search.
pub const AGENT_ENV: &str = "HPROF_RS_AGENT";

/// The agent library as an absolute path, or a one-line reason it was not found.
pub fn find() -> Result<PathBuf, String> {
    if let Some(named) = std::env::var_os(AGENT_ENV) {
        let named = PathBuf::from(named);
        let found = absolute_file(&named)
            .ok_or_else(|| format!("{AGENT_ENV}={} names no file", named.display()))?;
        check_trusted(&found)?;
        return Ok(found);
    }
    // current_exe() is /proc/self/exe: symbolic links to the program are
    // already followed, so a link in ~/bin still finds the archive's lib/.
    let exe = std::env::current_exe()
        .map_err(|e| format!("cannot tell where this program is ({e}), set {AGENT_ENV}"))?;
    let dir = exe.parent().unwrap_or(Path::new("/"));
    let candidates = candidates(dir);
    candidates
        .iter()
        .find_map(|path| absolute_file(path))
        .ok_or_else(|| {
            let looked: Vec<String> = candidates.iter().map(|p| p.display().to_string()).collect();
            format!(
                "cannot find {AGENT_FILE} (looked at {}); build it with scripts/build-agent.sh, \
                 or name it with {AGENT_ENV}",
                looked.join(", ")
            )
        })
}

/// Where the library may be, for a program in `dir`, in the order tried:
/// the installed layout first, then the cargo build's.
fn candidates(dir: &Path) -> [PathBuf; 2] {
    [dir.join("../lib").join(AGENT_FILE), dir.join(AGENT_FILE)]
}

/// A library named by the environment (which may come from elsewhere:
/// `sudo -E`, a shared profile script) runs as the JVM's user, root
/// included: it must be ours or root's, and writable by no one else.
fn check_trusted(path: &Path) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(path).map_err(|e| format!("{}: {e}", path.display()))?;
    // SAFETY: geteuid and getegid have no preconditions and cannot fail.
    let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
    let owner_ok = meta.uid() == uid || meta.uid() == 0;
    let group_writable = meta.mode() & 0o020 != 0 && meta.gid() != gid && meta.gid() != 0;
    if !owner_ok || meta.mode() & 0o002 != 0 || group_writable {
        return Err(format!(
            "{AGENT_ENV}={} is not used: it belongs to uid {} (mode {:o}); the agent must be \
             a file of uid {uid} or root that no other user can write",
            path.display(),
            meta.uid(),
            meta.mode() & 0o7777
        ));
    }
    Ok(())
}

/// `path` made absolute with `..` and links resolved, if it is a file.
fn absolute_file(path: &Path) -> Option<PathBuf> {
    path.canonicalize().ok().filter(|p| p.is_file())
}

/// `hprof-rs agent-path`: prints the agent's absolute path; 1 when not found.
pub fn print_agent_path() -> i32 {
    match find() {
        Ok(path) => {
            println!("{}", path.display());
            0
        }
        Err(message) => {
            eprintln!("hprof-rs: {message}");
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_library_writable_by_others_is_not_trusted() {
        use std::os::unix::fs::PermissionsExt;
        let path = std::env::temp_dir().join(format!("hprof-rs-agent-path-{}", std::process::id()));
        std::fs::write(&path, b"x").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(check_trusted(&path), Ok(()));
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o646)).unwrap();
        let refused = check_trusted(&path).unwrap_err();
        assert!(refused.contains("is not used"), "{refused}");
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn installed_layout_is_tried_before_the_build_folder() {
        let got = candidates(Path::new("/opt/hprof-rs/bin"));
        assert_eq!(got[0], Path::new("/opt/hprof-rs/bin/../lib/libhprof_rs.so"));
        assert_eq!(got[1], Path::new("/opt/hprof-rs/bin/libhprof_rs.so"));
    }
}
