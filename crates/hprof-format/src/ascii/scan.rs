//! Small text-scanning tools for the ASCII reader: a line cursor that knows
//! byte offsets, a `scanf`-like pattern matcher and number parsers.
use std::borrow::Cow;
use std::str::FromStr;

/// One line without its `\n` or `\r\n`, and the byte offset where it starts.
#[derive(Debug, Clone)]
pub(crate) struct Line<'a> {
    pub offset: u64,
    pub text: Cow<'a, str>,
}

/// Splits input into lines, with one line of look-ahead.
pub(crate) struct Lines<'a> {
    input: &'a [u8],
    pos: usize,
    peeked: Option<Line<'a>>,
}

impl<'a> Lines<'a> {
    /// Lines of `input`, from its first byte.
    pub fn new(input: &'a [u8]) -> Self {
        Lines {
            input,
            pos: 0,
            peeked: None,
        }
    }

    /// The next line, without consuming it.
    pub fn peek(&mut self) -> Option<&Line<'a>> {
        if self.peeked.is_none() {
            self.peeked = self.read_line();
        }
        self.peeked.as_ref()
    }

    /// Consume the next line if `accept` likes it.
    pub fn next_if(&mut self, accept: impl FnOnce(&str) -> bool) -> Option<Line<'a>> {
        let line = self.peek()?;
        if accept(&line.text) {
            self.next()
        } else {
            None
        }
    }

    fn read_line(&mut self) -> Option<Line<'a>> {
        if self.pos >= self.input.len() {
            return None;
        }
        let start = self.pos;
        let rest = &self.input[start..];
        let len = rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len());
        self.pos = start + len + 1;
        let content = &rest[..len];
        let content = content.strip_suffix(b"\r").unwrap_or(content);
        Some(Line {
            offset: start as u64,
            text: String::from_utf8_lossy(content),
        })
    }
}

impl<'a> Iterator for Lines<'a> {
    type Item = Line<'a>;

    fn next(&mut self) -> Option<Line<'a>> {
        self.peeked.take().or_else(|| self.read_line())
    }
}

/// Match `text` against `pattern`, where each `{}` captures the text up to the
/// next literal part of the pattern (its first occurrence; the last capture
/// runs to the final literal, which must end the text). Returns the captures.
pub(crate) fn scan<'t, const N: usize>(text: &'t str, pattern: &str) -> Option<[&'t str; N]> {
    let mut literals = pattern.split("{}");
    let mut rest = text.strip_prefix(literals.next()?)?;
    let mut captures = [""; N];
    for (i, capture) in captures.iter_mut().enumerate() {
        let literal = literals.next()?;
        let end = if i + 1 == N {
            rest.strip_suffix(literal)?.len()
        } else {
            rest.find(literal)?
        };
        *capture = &rest[..end];
        rest = &rest[end + literal.len()..];
    }
    (literals.next().is_none() && rest.is_empty()).then_some(captures)
}

/// A lowercase or uppercase hexadecimal number without `0x`.
pub(crate) fn hex(text: &str) -> Option<u64> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u64::from_str_radix(text, 16).ok()
}

/// A decimal number (optionally signed for signed types).
pub(crate) fn dec<T: FromStr>(text: &str) -> Option<T> {
    if text.starts_with('+') {
        return None;
    }
    text.parse().ok()
}

/// A `%5.2f%%` column: `7.74%`, ` nan%` or `-nan%` (surrounding blanks already removed).
pub(crate) fn percent(text: &str) -> Option<f64> {
    let number = text.strip_suffix('%')?;
    match number {
        "nan" => Some(f64::NAN),
        "-nan" => Some(-f64::NAN),
        _ if number
            .bytes()
            .all(|b| b.is_ascii_digit() || b == b'.' || b == b'-') =>
        {
            number.parse().ok()
        }
        _ => None,
    }
}

/// Split off `N` blank-separated columns; the rest after one space follows.
pub(crate) fn columns<const N: usize>(text: &str) -> Option<([&str; N], &str)> {
    let mut cols = [""; N];
    let mut rest = text;
    for col in cols.iter_mut() {
        rest = rest.trim_start_matches(' ');
        let end = rest.find(' ').unwrap_or(rest.len());
        if end == 0 {
            return None;
        }
        *col = &rest[..end];
        rest = &rest[end..];
    }
    Some((cols, rest.strip_prefix(' ').unwrap_or(rest)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_report_offsets_and_strip_line_ends() {
        let got: Vec<_> = Lines::new(b"a\r\nbc\n\nd")
            .map(|l| (l.offset, l.text.into_owned()))
            .collect();
        assert_eq!(
            got,
            [
                (0, "a".into()),
                (3, "bc".into()),
                (6, "".into()),
                (7, "d".into())
            ]
        );
    }

    #[test]
    fn scan_captures_between_literals() {
        assert_eq!(
            scan("THREAD END (id = 7)", "THREAD END (id = {})"),
            Some(["7"])
        );
        assert_eq!(scan("a=1, b=x, y", "a={}, b={}"), Some(["1", "x, y"]));
        assert_eq!(scan::<1>("a=1!", "a={}"), Some(["1!"]));
        assert_eq!(scan::<1>("b=1", "a={}"), None);
        assert_eq!(scan::<0>("exact", "exact"), Some([]));
        assert_eq!(scan::<0>("exact+", "exact"), None);
    }

    #[test]
    fn numbers() {
        assert_eq!(hex("5000018d"), Some(0x5000018d));
        assert_eq!(hex("+1"), None);
        assert_eq!(hex(""), None);
        assert_eq!(dec::<u32>("+1"), None);
        assert_eq!(dec::<i32>("-1"), Some(-1));
        assert_eq!(percent("7.74%"), Some(7.74));
        assert!(percent("nan%").unwrap().is_nan());
        assert_eq!(percent("inf%"), None);
        assert_eq!(percent("7.74"), None);
    }

    #[test]
    fn columns_split_padded_fields() {
        assert_eq!(
            columns::<2>("   1  2 rest of it"),
            Some((["1", "2"], "rest of it"))
        );
        assert_eq!(columns::<2>("   1  2"), Some((["1", "2"], "")));
        assert_eq!(columns::<3>("1 2"), None);
    }
}
