//! Output file naming for `force=n`: when the file exists, HPROF wrote to
//! a name with the process id in it instead. Under `hprof-rs run` the same
//! name is taken when another JVM of the run writes the file.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

/// Set by `hprof-rs run` (crates/hprof-cli/src/run.rs) for the command it
/// starts: when the run started, in nanoseconds since 1970.
pub const RUN_STARTED: &str = "HPROF_RS_RUN_STARTED";

/// Whether `path` is the file of another JVM of the same `hprof-rs run`: a
/// regular file modified since the run started. Every JVM a launcher forks
/// (`mvn test`, `gradle`) gets the run's options, and so the same file
/// name; without this each would overwrite the one before. A file older
/// than the run is the last run's, overwritten as HPROF's `force=y` does.
pub fn written_during_this_run(path: &Path) -> bool {
    let started = std::env::var(RUN_STARTED)
        .ok()
        .and_then(|text| text.parse::<u128>().ok());
    let Some(started) = started else {
        return false;
    };
    let modified = std::fs::metadata(path)
        .ok()
        .filter(std::fs::Metadata::is_file)
        .and_then(|m| m.modified().ok())
        .and_then(|time| time.duration_since(UNIX_EPOCH).ok());
    modified.is_some_and(|since_1970| since_1970.as_nanos() >= started)
}

/// The name HPROF picks when `force=n` and `name` already exists:
/// `<prefix>.<pid><suffix>`. Binary files get the pid appended
/// (`java.hprof.12345`); ASCII files keep or gain a `.txt` suffix
/// (`java.hprof.txt` -> `java.hprof.12345.txt`, `out.TXT` -> `out.12345.TXT`,
/// `out.log` -> `out.log.12345.txt`, `out` -> `out.12345.txt`).
pub fn unique_file_name(name: &OsStr, binary: bool, pid: u32) -> PathBuf {
    let name = name.as_bytes();
    let joined = |parts: &[&[u8]]| PathBuf::from(OsStr::from_bytes(&parts.concat()));
    let pid = pid.to_string();
    if binary {
        return joined(&[name, b".", pid.as_bytes()]);
    }
    // The last dot-component is kept as the suffix when it starts with ".txt"
    // (any case); the original compared only 4 characters, so ".txtfoo" counts.
    let file_part_start = name
        .iter()
        .rposition(|&b| b == b'/')
        .map_or(0, |slash| slash + 1);
    if let Some(dot) = name[file_part_start..]
        .iter()
        .rposition(|&b| b == b'.')
        .map(|i| i + file_part_start)
    {
        let last = &name[dot..];
        let starts_with_txt = last.len() >= 4 && last[..4].eq_ignore_ascii_case(b".txt");
        if starts_with_txt {
            return joined(&[&name[..dot], b".", pid.as_bytes(), last]);
        }
    }
    joined(&[name, b".", pid.as_bytes(), b".txt"])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_reference_examples() {
        assert_eq!(
            unique_file_name(OsStr::new("java.hprof.txt"), false, 12345),
            PathBuf::from("java.hprof.12345.txt")
        );
        assert_eq!(
            unique_file_name(OsStr::new("out.TXT"), false, 12345),
            PathBuf::from("out.12345.TXT")
        );
        assert_eq!(
            unique_file_name(OsStr::new("out.log"), false, 12345),
            PathBuf::from("out.log.12345.txt")
        );
        assert_eq!(
            unique_file_name(OsStr::new("out"), false, 12345),
            PathBuf::from("out.12345.txt")
        );
        assert_eq!(
            unique_file_name(OsStr::new("java.hprof"), true, 12345),
            PathBuf::from("java.hprof.12345")
        );
    }

    #[test]
    fn a_dot_in_a_directory_name_is_not_a_suffix() {
        assert_eq!(
            unique_file_name(OsStr::new("dir.d/out"), false, 7),
            PathBuf::from("dir.d/out.7.txt")
        );
        assert_eq!(
            unique_file_name(OsStr::new("dir.txt/out"), false, 7),
            PathBuf::from("dir.txt/out.7.txt")
        );
    }

    #[test]
    fn a_name_that_is_not_utf8_keeps_its_bytes() {
        let name = OsStr::from_bytes(b"out-\xff.txt");
        assert_eq!(
            unique_file_name(name, false, 7).as_os_str().as_bytes(),
            b"out-\xff.7.txt"
        );
    }
}
