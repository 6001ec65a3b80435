//! Stack frames: one entry per (method, bytecode location), resolved to
//! names and a line number once, when first seen.

use super::ids::IdSpace;
use rustc_hash::FxHashMap;
use std::collections::HashSet;
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
    /// The same number for every frame that prints the same in a SITES
    /// trace (class, method, signature and line; two locations of one line
    /// differ in their keys only): the index of the first such entry. Lets
    /// a dump compare traces by numbers instead of their names.
    pub printed: u32,
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
    /// (Fx: looked up for every frame of every walk.)
    by_key: FxHashMap<FrameKey, KeySlot>,
    /// Classes unloaded whose keys are still in `by_key`: they go in one
    /// pass once enough have gathered (see [`FrameTable::forget_class`]).
    retiring: HashSet<u32>,
    /// Entries by their bytecode location and a hash of what they show
    /// (names, source, line): a method of a class defined again in a fresh
    /// loader has a jmethodID of its own but shows the same frame at the
    /// same location, and shares its entry (a key costs about 40 bytes; an
    /// entry with its names a few hundred).
    by_shown: FxHashMap<(i64, u64), usize>,
    /// Entries by a hash of what they print (see [`FrameEntry::printed`]):
    /// the first entry of each printed form with that hash.
    by_printed: FxHashMap<u64, Vec<u32>>,
}

/// Where a key's frame is, and the class of the key's method (the key goes
/// when that class unloads; the entry, which traces refer to, stays).
#[derive(Debug, Clone, Copy)]
struct KeySlot {
    index: u32,
    class_serial: u32,
}

impl KeySlot {
    fn new(index: usize, class_serial: u32) -> Self {
        Self {
            index: index as u32,
            class_serial,
        }
    }
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
        if let Some(slot) = self.by_key.get(&key)
            && (self.retiring.is_empty() || !self.retiring.contains(&slot.class_serial))
        {
            return self.entries[slot.index as usize].id;
        }
        let facts = resolve();
        let class_serial = facts.class_serial;
        let shown = (key.location, shown_hash(&facts));
        if let Some(&i) = self.by_shown.get(&shown)
            && self.entries[i].shows(&facts)
        {
            self.by_key.insert(key, KeySlot::new(i, class_serial));
            return self.entries[i].id;
        }
        let id = IdSpace::Frame.id(self.entries.len() as u64 + 1, self.wide);
        let printed = self.printed_number(&facts);
        self.by_shown.entry(shown).or_insert(self.entries.len());
        self.by_key
            .insert(key, KeySlot::new(self.entries.len(), class_serial));
        self.entries.push(FrameEntry {
            id,
            class_serial: facts.class_serial,
            class_signature: facts.class_signature,
            method_name: facts.method_name,
            method_signature: facts.method_signature,
            source_file: facts.source_file,
            line: facts.line,
            printed,
        });
        id
    }

    /// The [`FrameEntry::printed`] number of a new entry with `facts`: that
    /// of an entry that prints the same, else the new entry's index.
    fn printed_number(&mut self, facts: &FrameFacts) -> u32 {
        let prints_as = |e: &FrameEntry| {
            (
                &e.class_signature,
                &e.method_name,
                &e.method_signature,
                e.line,
            ) == (
                &facts.class_signature,
                &facts.method_name,
                &facts.method_signature,
                facts.line,
            )
        };
        let mut hasher = DefaultHasher::new();
        (
            &facts.class_signature,
            &facts.method_name,
            &facts.method_signature,
            facts.line,
        )
            .hash(&mut hasher);
        let firsts = self.by_printed.entry(hasher.finish()).or_default();
        if let Some(&first) = firsts
            .iter()
            .find(|&&first| prints_as(&self.entries[first as usize]))
        {
            return self.entries[first as usize].printed;
        }
        let index = self.entries.len() as u32;
        firsts.push(index);
        index
    }

    /// Class `serial` has unloaded: the keys of its methods go (a JVM may
    /// give a method of a later class the identifier one of them had). The
    /// frames stay, for the traces that show them. Keys go in one pass over
    /// the table once the classes waiting make a sixteenth of its keys, so
    /// that each key costs its removal once, not a pass per class; until
    /// then a key of a waiting class is not trusted.
    pub fn forget_class(&mut self, serial: u32) {
        self.retiring.insert(serial);
        if self.retiring.len() * 16 >= self.by_key.len() {
            self.settle();
        }
    }

    /// Removes now the keys of every class [`forget_class`](Self::forget_class)
    /// was told of; returns how many went.
    pub fn settle(&mut self) -> usize {
        if self.retiring.is_empty() {
            return 0;
        }
        let before = self.by_key.len();
        let retiring = std::mem::take(&mut self.retiring);
        self.by_key
            .retain(|_, slot| !retiring.contains(&slot.class_serial));
        self.by_key.shrink_to(self.by_key.len() * 2);
        before - self.by_key.len()
    }

    /// Number of keys held (one per method and location seen, of classes
    /// still loaded).
    pub fn key_count(&self) -> usize {
        self.by_key.len()
    }

    /// The class signatures of the frames whose class has no serial yet
    /// (frames named from what a rewrite recorded, not from the JVM).
    pub fn unnamed_classes(&self) -> impl Iterator<Item = &str> {
        self.entries
            .iter()
            .filter(|e| e.class_serial == 0)
            .map(|e| e.class_signature.as_str())
    }

    /// Gives each frame without a class serial the serial `serial_of` its
    /// class signature: a binary FRAME record names its class by serial,
    /// and readers print `Unknown_class` for 0.
    pub fn name_classes(&mut self, serial_of: impl Fn(&str) -> Option<u32>) {
        for entry in self.entries.iter_mut().filter(|e| e.class_serial == 0) {
            if let Some(serial) = serial_of(&entry.class_signature) {
                entry.class_serial = serial;
            }
        }
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
    fn frames_without_a_class_serial_get_their_classes_serial() {
        let mut frames = FrameTable::default();
        let unnamed = |method| FrameFacts {
            class_serial: 0,
            ..facts(method)
        };
        let key = |location| FrameKey {
            method: 9,
            location,
        };
        let named = frames.intern(key(1), || facts("main"));
        let counted = frames.intern(key(2), || unnamed("run"));
        assert_eq!(frames.unnamed_classes().collect::<Vec<_>>(), ["LHello;"]);
        frames.name_classes(|signature| (signature == "LHello;").then_some(100_007));
        assert_eq!(frames.get(counted).unwrap().class_serial, 100_007);
        assert_eq!(frames.get(named).unwrap().class_serial, 100_000);
        assert_eq!(frames.unnamed_classes().count(), 0);
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
    fn frames_that_print_the_same_share_their_printed_number() {
        let mut frames = FrameTable::default();
        let key = |method, location| FrameKey { method, location };
        // Two locations of line 7 of main, and a class defined again.
        let first = frames.intern(key(1, 4), || facts("main"));
        let same_line = frames.intern(key(1, 8), || facts("main"));
        let redefined = frames.intern(key(2, 4), || FrameFacts {
            class_serial: 100_001,
            source_file: None,
            ..facts("main")
        });
        let other_line = frames.intern(key(1, 12), || FrameFacts {
            line: 8,
            ..facts("main")
        });
        let other_method = frames.intern(key(3, 4), || facts("run"));
        let printed = |id| frames.get(id).unwrap().printed;
        assert_ne!(first, same_line);
        assert_eq!(printed(first), printed(same_line));
        assert_eq!(printed(first), printed(redefined));
        assert_ne!(printed(first), printed(other_line));
        assert_ne!(printed(first), printed(other_method));
        assert_ne!(printed(other_line), printed(other_method));
    }

    #[test]
    fn an_unloaded_class_takes_its_keys_but_leaves_its_frames() {
        let mut frames = FrameTable::default();
        let key = |method| FrameKey {
            method,
            location: 4,
        };
        let kept = frames.intern(key(1), || facts("kept"));
        let gone = frames.intern(key(2), || FrameFacts {
            class_serial: 100_001,
            ..facts("gone")
        });
        frames.forget_class(100_001);
        assert_eq!(
            frames.key_count(),
            1,
            "a sixteenth reached: settled at once"
        );
        assert_eq!(frames.get(gone).unwrap().method_name, "gone");
        // The JVM hands the unloaded method's identifier to a new method:
        // it is resolved afresh.
        let reused = frames.intern(key(2), || FrameFacts {
            class_serial: 100_002,
            ..facts("reused")
        });
        assert_ne!(reused, gone);
        assert_eq!(frames.intern(key(1), || panic!("kept key")), kept);
    }

    #[test]
    fn keys_of_waiting_classes_are_not_trusted_before_they_go() {
        let mut frames = FrameTable::default();
        for method in 0..40 {
            frames.intern(
                FrameKey {
                    method,
                    location: 0,
                },
                || FrameFacts {
                    class_serial: 100_000 + method as u32,
                    ..facts(&format!("m{method}"))
                },
            );
        }
        frames.forget_class(100_003);
        assert_eq!(frames.key_count(), 40, "one of 40 waits");
        let again = frames.intern(
            FrameKey {
                method: 3,
                location: 0,
            },
            || FrameFacts {
                class_serial: 100_050,
                ..facts("other")
            },
        );
        assert_eq!(frames.get(again).unwrap().method_name, "other");
        assert_eq!(frames.settle(), 0, "its key was replaced by the new one");
        frames.forget_class(100_004);
        assert_eq!(frames.settle(), 1);
        assert_eq!(frames.key_count(), 39);
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
