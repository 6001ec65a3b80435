//! Output file naming for `force=n` (reference §1.5).

/// The name HPROF picks when `force=n` and `name` already exists:
/// `<prefix>.<pid><suffix>`. Binary files get the pid appended
/// (`java.hprof.12345`); ASCII files keep or gain a `.txt` suffix
/// (`java.hprof.txt` -> `java.hprof.12345.txt`, `out.TXT` -> `out.12345.TXT`,
/// `out.log` -> `out.log.12345.txt`, `out` -> `out.12345.txt`).
pub fn unique_file_name(name: &str, binary: bool, pid: u32) -> String {
    if binary {
        return format!("{name}.{pid}");
    }
    // The last dot-component is kept as the suffix when it starts with ".txt"
    // (any case); the original compared only 4 characters, so ".txtfoo" counts.
    let file_part_start = name.rfind('/').map_or(0, |slash| slash + 1);
    if let Some(dot) = name[file_part_start..]
        .rfind('.')
        .map(|i| i + file_part_start)
    {
        let last = &name[dot..];
        let starts_with_txt = last.len() >= 4 && last[..4].eq_ignore_ascii_case(".txt");
        if starts_with_txt {
            return format!("{}.{pid}{last}", &name[..dot]);
        }
    }
    format!("{name}.{pid}.txt")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_reference_examples() {
        assert_eq!(
            unique_file_name("java.hprof.txt", false, 12345),
            "java.hprof.12345.txt"
        );
        assert_eq!(unique_file_name("out.TXT", false, 12345), "out.12345.TXT");
        assert_eq!(
            unique_file_name("out.log", false, 12345),
            "out.log.12345.txt"
        );
        assert_eq!(unique_file_name("out", false, 12345), "out.12345.txt");
        assert_eq!(
            unique_file_name("java.hprof", true, 12345),
            "java.hprof.12345"
        );
    }

    #[test]
    fn a_dot_in_a_directory_name_is_not_a_suffix() {
        assert_eq!(unique_file_name("dir.d/out", false, 7), "dir.d/out.7.txt");
        assert_eq!(
            unique_file_name("dir.txt/out", false, 7),
            "dir.txt/out.7.txt"
        );
    }
}
