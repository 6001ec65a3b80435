//! Stack frames: one entry per (method, bytecode location), resolved to
//! names and a line number once, when first seen.

use super::ids::IdSpace;
use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};

/// Line number value for "unknown" (no line table, native, `lineno=n`).
pub const LINE_UNKNOWN: i32 = -1;

/// What identifies a frame: the JVM's method identifier and bytecode index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FrameKey {
    pub method: u64,
    pub location: i64,
}

/// A resolved frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrameEntry {
    /// Binary FRAME identifier.
    pub id: u64,
    pub class_serial: u32,
    /// JVM signature of the declaring class.
    pub class_signature: String,
    pub method_name: String,
    pub method_signature: String,
    pub source_file: Option<String>,
    /// Line number, or [`LINE_UNKNOWN`].
    pub line: i32,
}

/// The facts a collector resolves about a new frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrameFacts {
    pub class_serial: u32,
    pub class_signature: String,
    pub method_name: String,
    pub method_signature: String,
    pub source_file: Option<String>,
    pub line: i32,
}

/// Frames by key, in creation order.
#[derive(Debug, Default)]
pub struct FrameTable {
    wide: bool,
    entries: Vec<FrameEntry>,
    by_key: HashMap<FrameKey, usize>,
    /// Entries by their bytecode location and a hash of what they show
    /// (names, source, line): a method of a class defined again in a fresh
    /// loader has a jmethodID of its own but shows the same frame at the
    /// same location, and shares its entry (a key costs about 40 bytes; an
    /// entry with its names a few hundred).
    by_shown: HashMap<(i64, u64), usize>,
}

/// A hash of what a frame shows: everything but its class serial, which
/// differs between two definitions of one class.
fn shown_hash(facts: &FrameFacts) -> u64 {
    let mut hasher = DefaultHasher::new();
    (
        &facts.class_signature,
        &facts.method_name,
        &facts.method_signature,
        &facts.source_file,
        facts.line,
    )
        .hash(&mut hasher);
    hasher.finish()
}

impl FrameEntry {
    fn shows(&self, facts: &FrameFacts) -> bool {
        (
            &self.class_signature,
            &self.method_name,
            &self.method_signature,
            &self.source_file,
            self.line,
        ) == (
            &facts.class_signature,
            &facts.method_name,
            &facts.method_signature,
            &facts.source_file,
            facts.line,
        )
    }
}

impl FrameTable {
    /// A table for a file with 8-byte identifiers when `wide`.
    pub fn new(wide: bool) -> Self {
        Self {
            wide,
            ..Self::default()
        }
    }

    /// The frame identifier for `key`, calling `resolve` only for a new key.
    pub fn intern(&mut self, key: FrameKey, resolve: impl FnOnce() -> FrameFacts) -> u64 {
        if let Some(&i) = self.by_key.get(&key) {
            return self.entries[i].id;
        }
        let facts = resolve();
        let shown = (key.location, shown_hash(&facts));
        if let Some(&i) = self.by_shown.get(&shown)
            && self.entries[i].shows(&facts)
        {
            self.by_key.insert(key, i);
            return self.entries[i].id;
        }
        let id = IdSpace::Frame.id(self.entries.len() as u64 + 1, self.wide);
        self.by_shown.entry(shown).or_insert(self.entries.len());
        self.by_key.insert(key, self.entries.len());
        self.entries.push(FrameEntry {
            id,
            class_serial: facts.class_serial,
            class_signature: facts.class_signature,
            method_name: facts.method_name,
            method_signature: facts.method_signature,
            source_file: facts.source_file,
            line: facts.line,
        });
        id
    }

    /// The frame with identifier `id`.
    pub fn get(&self, id: u64) -> Option<&FrameEntry> {
        let slot = (id & ((1 << 28) - 1)) as usize;
        self.entries
            .get(slot.checked_sub(1)?)
            .filter(|e| e.id == id)
    }
}

/// The line of `location` in a method's line table: the entry with the
/// largest start location not after it (the table may be unsorted). A line
/// of 0 or less is no line number at all (readers such as jvm-hprof reject 0).
pub fn line_for_location(table: &[(i64, i32)], location: i64) -> i32 {
    table
        .iter()
        .filter(|(start, _)| *start <= location)
        .max_by_key(|(start, _)| *start)
        .map(|(_, line)| *line)
        .filter(|line| *line > 0)
        .unwrap_or(LINE_UNKNOWN)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(name: &str) -> FrameFacts {
        FrameFacts {
            class_serial: 100_000,
            class_signature: "LHello;".into(),
            method_name: name.into(),
            method_signature: "()V".into(),
            source_file: Some("Hello.java".into()),
            line: 7,
        }
    }

    #[test]
    fn resolves_each_key_once() {
        let mut frames = FrameTable::default();
        let key = FrameKey {
            method: 1,
            location: 4,
        };
        let a = frames.intern(key, || facts("main"));
        let b = frames.intern(key, || panic!("resolved twice"));
        assert_eq!(a, b);
        let other = frames.intern(
            FrameKey {
                method: 1,
                location: 8,
            },
            || facts("main"),
        );
        assert_ne!(a, other);
        assert_eq!(frames.get(a).unwrap().method_name, "main");
    }

    #[test]
    fn a_method_of_a_class_defined_again_shares_its_frame() {
        let mut frames = FrameTable::default();
        let first = frames.intern(
            FrameKey {
                method: 1,
                location: 4,
            },
            || facts("make"),
        );
        let again = frames.intern(
            FrameKey {
                method: 2,
                location: 4,
            },
            || FrameFacts {
                class_serial: 100_001,
                ..facts("make")
            },
        );
        assert_eq!(first, again);
        let other_line = frames.intern(
            FrameKey {
                method: 3,
                location: 4,
            },
            || FrameFacts {
                line: 8,
                ..facts("make")
            },
        );
        assert_ne!(first, other_line);
        assert_eq!(frames.entries.len(), 2);
    }

    #[test]
    fn line_lookup_takes_the_closest_start_before() {
        let table = [(0, 10), (5, 11), (9, 12)];
        assert_eq!(line_for_location(&table, 0), 10);
        assert_eq!(line_for_location(&table, 7), 11);
        assert_eq!(line_for_location(&table, 100), 12);
        assert_eq!(line_for_location(&[], 3), LINE_UNKNOWN);
        assert_eq!(line_for_location(&[(4, 2)], 3), LINE_UNKNOWN);
        assert_eq!(line_for_location(&[(0, 0)], 3), LINE_UNKNOWN);
    }
}
