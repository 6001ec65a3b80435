//! `include=` / `exclude=` (hprof-rs additions): the classes cpu=times and
//! cpu=old rewrite and time.
//!
//! A value is a list of patterns separated by `:` (the agent's options are
//! separated by commas already), e.g. `include=com.acme.*:org.foo.Bar`.
//! A pattern is a dotted class name in which `*` stands for any run of
//! characters inside one name part (it never crosses a `.`) and `**` for
//! any run at all: `com.acme.*` is every class of the package `com.acme`,
//! `com.acme.**` also those of its subpackages. A pattern that matches a
//! class also takes in that class's nested classes (`com.acme.Foo` covers
//! `com.acme.Foo$Inner`). A class is timed when some include pattern
//! matches it (or there is none) and no exclude pattern does: exclude wins.
//!
//! Bound: all patterns together hold at most [`PATTERN_TEXT_MAX`] bytes, so
//! deciding one class costs at most that many steps per byte of its name.

/// Most bytes all include and exclude patterns may hold together.
pub const PATTERN_TEXT_MAX: usize = 4096;

/// What a pattern value must look like, for the error messages.
const PATTERN_SYNTAX: &str = "class or package patterns separated by ':', \
     e.g. com.acme.*:org.foo.Bar (* within a package, ** across packages)";

/// The include and exclude patterns, each in the JVM's internal form
/// (`com/acme/*`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ClassFilter {
    include: Vec<Pattern>,
    exclude: Vec<Pattern>,
}

/// One part of a pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Piece {
    /// This byte, exactly.
    Byte(u8),
    /// `*`: any bytes but `/`.
    InPart,
    /// `**`: any bytes.
    Any,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Pattern(Vec<Piece>);

impl ClassFilter {
    /// Whether any pattern was given (without one every class is timed).
    pub fn is_active(&self) -> bool {
        !self.include.is_empty() || !self.exclude.is_empty()
    }

    /// Whether the class of internal name `name` (`com/acme/Foo`) is timed.
    pub fn times(&self, name: &str) -> bool {
        let name = name.as_bytes();
        (self.include.is_empty() || self.include.iter().any(|p| p.covers(name)))
            && !self.exclude.iter().any(|p| p.covers(name))
    }

    /// Adds the patterns of an `include=` (or with `exclude` an
    /// `exclude=`) value; `option` names it in the error.
    pub(super) fn add(&mut self, option: &str, value: &str) -> Result<(), String> {
        let patterns = value
            .split(':')
            .map(Pattern::parse)
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| format!("{option} option value must be {PATTERN_SYNTAX}"))?;
        if option == "exclude" {
            self.exclude.extend(patterns);
        } else {
            self.include.extend(patterns);
        }
        let total: usize = self
            .include
            .iter()
            .chain(&self.exclude)
            .map(|p| p.0.len())
            .sum();
        if total > PATTERN_TEXT_MAX {
            return Err(format!(
                "include and exclude patterns may hold at most {PATTERN_TEXT_MAX} characters in all"
            ));
        }
        Ok(())
    }
}

impl Pattern {
    /// A dotted pattern, or None if it is not one: empty, an empty name
    /// part (`a..b`, a leading or trailing `.`), three stars in a row, or
    /// a character that is neither `.`, `*` nor part of a Java name.
    fn parse(text: &str) -> Option<Pattern> {
        if text.is_empty() || text.split('.').any(str::is_empty) || text.contains("***") {
            return None;
        }
        let is_name_char = |c: char| c.is_alphanumeric() || c == '_' || c == '$';
        if !text
            .chars()
            .all(|c| c == '.' || c == '*' || is_name_char(c))
        {
            return None;
        }
        let internal = text.replace('.', "/");
        let mut pieces = Vec::with_capacity(internal.len());
        let mut bytes = internal.bytes().peekable();
        while let Some(b) = bytes.next() {
            pieces.push(match b {
                b'*' if bytes.next_if_eq(&b'*').is_some() => Piece::Any,
                b'*' => Piece::InPart,
                other => Piece::Byte(other),
            });
        }
        Some(Pattern(pieces))
    }

    /// Whether the pattern matches `name` or the outer class of `name`
    /// (the name up to one of its `$`): one pass over the name per piece,
    /// never backtracking.
    fn covers(&self, name: &[u8]) -> bool {
        // matched[j]: the pieces so far match name[..j].
        let mut matched = vec![false; name.len() + 1];
        matched[0] = true;
        let mut next = vec![false; name.len() + 1];
        for piece in &self.0 {
            // Only a star matches the empty start.
            next[0] = matched[0] && !matches!(piece, Piece::Byte(_));
            for j in 1..=name.len() {
                next[j] = match *piece {
                    Piece::Byte(b) => matched[j - 1] && name[j - 1] == b,
                    Piece::InPart => matched[j] || (next[j - 1] && name[j - 1] != b'/'),
                    Piece::Any => matched[j] || next[j - 1],
                };
            }
            std::mem::swap(&mut matched, &mut next);
        }
        matched[name.len()] || (0..name.len()).any(|j| matched[j] && name[j] == b'$')
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filter(include: &str, exclude: &str) -> ClassFilter {
        let mut filter = ClassFilter::default();
        if !include.is_empty() {
            filter.add("include", include).unwrap();
        }
        if !exclude.is_empty() {
            filter.add("exclude", exclude).unwrap();
        }
        filter
    }

    #[test]
    fn one_star_stays_in_its_package_two_stars_take_subpackages() {
        let one = filter("com.acme.*", "");
        assert!(one.times("com/acme/Foo"));
        assert!(one.times("com/acme/Foo$Inner"));
        assert!(!one.times("com/acme/deep/Foo"));
        assert!(!one.times("com/acmes/Foo"));
        assert!(!one.times("org/Foo"));
        let two = filter("com.acme.**", "");
        assert!(two.times("com/acme/Foo"));
        assert!(two.times("com/acme/deep/er/Foo"));
        assert!(!two.times("com/acmes/Foo"));
        assert!(!two.times("com/acme"));
    }

    #[test]
    fn a_class_name_takes_in_its_nested_classes_only() {
        let f = filter("org.foo.Bar", "");
        assert!(f.times("org/foo/Bar"));
        assert!(f.times("org/foo/Bar$1"));
        assert!(f.times("org/foo/Bar$Inner$Deeper"));
        assert!(!f.times("org/foo/BarBaz"));
        assert!(!f.times("org/foo/Ba"));
        let prefix = filter("org.foo.Ba*r", "");
        assert!(prefix.times("org/foo/Bar") && prefix.times("org/foo/Baxxr$X"));
        assert!(!prefix.times("org/foo/Bax/r"));
    }

    #[test]
    fn exclude_wins_over_include_and_alone_times_the_rest() {
        let both = filter("com.acme.**", "com.acme.slow.*:com.acme.Noisy");
        assert!(both.times("com/acme/Foo"));
        assert!(!both.times("com/acme/slow/Foo"));
        assert!(!both.times("com/acme/Noisy$Inner"));
        assert!(both.times("com/acme/slow/deep/Foo"));
        let alone = filter("", "java.**:javax.**");
        assert!(alone.is_active());
        assert!(!alone.times("java/lang/String"));
        assert!(alone.times("com/acme/Foo"));
        assert!(!ClassFilter::default().is_active());
        assert!(ClassFilter::default().times("anything/At/All"));
    }

    #[test]
    fn patterns_accumulate_over_options() {
        let mut f = filter("a.*", "");
        f.add("include", "b.C").unwrap();
        assert!(f.times("a/X") && f.times("b/C") && !f.times("c/D"));
    }

    #[test]
    fn bad_patterns_are_refused() {
        for bad in [
            "",
            ":",
            "a::b",
            "a.",
            ".a",
            "a..b",
            "a/b",
            "a.***",
            "a b",
            "a-b",
            "a,b",
            "com.acme.*:",
        ] {
            let err = ClassFilter::default().add("include", bad).unwrap_err();
            assert!(
                err.starts_with("include option value must be"),
                "{bad:?}: {err}"
            );
        }
        assert!(ClassFilter::default().add("exclude", "é.ü$1.*").is_ok());
        let long = "a".repeat(PATTERN_TEXT_MAX + 1);
        let err = ClassFilter::default().add("include", &long).unwrap_err();
        assert!(err.contains("at most 4096"), "{err}");
    }

    #[test]
    fn a_star_matches_nothing_and_stars_at_the_ends() {
        assert!(filter("*", "").times("Foo") && !filter("*", "").times("a/Foo"));
        assert!(filter("**", "").times("a/b/Foo"));
        assert!(filter("com.*.Foo", "").times("com/x/Foo"));
        assert!(!filter("com.*.Foo", "").times("com/x/y/Foo"));
        assert!(filter("com.**.Foo", "").times("com/x/y/Foo"));
        assert!(filter("a.*b", "").times("a/b"));
    }
}
