//! Which format a file is in, told from its first bytes alone, so that a
//! reader refuses a file that is not a profile before reading the rest of
//! it (a multi-gigabyte file of zeros, `/dev/zero`, an archive).
//!
//! A binary profile starts with `JAVA PROFILE 1.0.1` or `JAVA PROFILE 1.0.2`
//! and a NUL byte; an ASCII one with HPROF's first line,
//! `JAVA PROFILE 1.0.x, created <date>` (or, for `cpu=old`, the old table's
//! title line `count callee caller time`), which must end within
//! [`IDENTIFY_LEN`] bytes.

use crate::ParseError;
use crate::ascii::reader::is_first_line;
use crate::binary::Version;

/// How many bytes [`identify`] needs (fewer only when the file is shorter):
/// far more than any first line HPROF wrote (about 55 bytes).
pub const IDENTIFY_LEN: usize = 1024;

/// The two formats of a profile file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileFormat {
    /// `java.hprof`, a heap dump: records after a NUL-terminated header.
    Binary(Version),
    /// `java.hprof.txt`: text lines.
    Ascii,
}

/// The format of a file that starts with `start`: its first
/// [`IDENTIFY_LEN`] bytes, or all of it when it is shorter. Anything else
/// is an error at byte offset 0 that shows the first bytes.
pub fn identify(start: &[u8]) -> Result<FileFormat, ParseError> {
    for version in [Version::V101, Version::V102] {
        let header = version.header_text().as_bytes();
        if start.starts_with(header) && start.get(header.len()) == Some(&0) {
            return Ok(FileFormat::Binary(version));
        }
    }
    if start.is_empty() {
        return Err(ParseError {
            offset: 0,
            message: "empty file: a profile starts with a `JAVA PROFILE 1.0.x` header".into(),
        });
    }
    let line = match start.iter().position(|&b| b == b'\n') {
        Some(end) => Some(&start[..end]),
        // A file shorter than IDENTIFY_LEN may end on its first line.
        None if start.len() < IDENTIFY_LEN => Some(start),
        None => None,
    };
    let line = line.map(|l| l.strip_suffix(b"\r").unwrap_or(l));
    if let Some(text) = line.and_then(|l| std::str::from_utf8(l).ok())
        && is_first_line(text)
    {
        return Ok(FileFormat::Ascii);
    }
    let shown = &start[..start.len().min(16)];
    Err(ParseError {
        offset: 0,
        message: format!(
            "not an HPROF profile: it does not start with `JAVA PROFILE 1.0.1` or `1.0.2` and \
             a NUL byte (binary) or a `JAVA PROFILE 1.0.x, created <date>` line (ASCII); \
             its first bytes: \"{}\"",
            shown.escape_ascii()
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_and_ascii_headers_are_told_apart() {
        let mut binary = b"JAVA PROFILE 1.0.2\0".to_vec();
        binary.extend([0, 0, 0, 8]);
        assert_eq!(identify(&binary), Ok(FileFormat::Binary(Version::V102)));
        assert_eq!(
            identify(b"JAVA PROFILE 1.0.1\0"),
            Ok(FileFormat::Binary(Version::V101))
        );
        let ascii = b"JAVA PROFILE 1.0.1, created Thu Nov  2 17:11:21 2017\r\n\r\n";
        assert_eq!(identify(ascii), Ok(FileFormat::Ascii));
        assert_eq!(
            identify(b"count callee caller time\n"),
            Ok(FileFormat::Ascii)
        );
        // A file of one line without its end.
        assert_eq!(
            identify(b"JAVA PROFILE 1.0.1, created X"),
            Ok(FileFormat::Ascii)
        );
    }

    #[test]
    fn anything_else_is_refused_at_offset_0_with_its_first_bytes() {
        let zeros = [0u8; IDENTIFY_LEN];
        let error = identify(&zeros).unwrap_err();
        assert_eq!(error.offset, 0);
        assert!(error.message.contains("not an HPROF profile"), "{error}");
        assert!(error.message.contains(r#""\x00\x00"#), "{error}");
        assert!(identify(b"").unwrap_err().message.starts_with("empty file"));
        for bad in [
            &b"JAVA PROFILE 1.0.3\0"[..],
            b"JAVA PROFILE 1.0.2",
            b"THREAD END (id = 1)\n",
            b"\nJAVA PROFILE 1.0.1, created X\n",
            b"PK\x03\x04",
        ] {
            assert_eq!(identify(bad).unwrap_err().offset, 0, "{bad:?}");
        }
        // A first line that does not end within IDENTIFY_LEN bytes.
        let mut long = b"JAVA PROFILE 1.0.1, created ".to_vec();
        long.resize(IDENTIFY_LEN, b'x');
        assert!(identify(&long).is_err());
    }
}
