//! Output file naming for `force=n`: when the file exists, HPROF wrote to
//! a name with the process id in it instead.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

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
