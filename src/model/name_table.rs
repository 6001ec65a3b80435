//! Interned strings for binary UTF8 records: each distinct string gets one
//! name identifier and is written once, just before its first use.

use super::ids::IdSpace;
use std::collections::HashMap;

/// String -> name identifier, remembering which have been written out.
#[derive(Debug, Default)]
pub struct NameTable {
    wide: bool,
    ids: HashMap<String, u64>,
    written: HashMap<u64, bool>,
}

impl NameTable {
    /// A table for a file with 8-byte identifiers when `wide`.
    pub fn new(wide: bool) -> Self {
        Self {
            wide,
            ..Self::default()
        }
    }

    /// The identifier of `text`, creating it if needed.
    pub fn intern(&mut self, text: &str) -> u64 {
        if let Some(&id) = self.ids.get(text) {
            return id;
        }
        let id = IdSpace::Name.id(self.ids.len() as u64 + 1, self.wide);
        self.ids.insert(text.to_owned(), id);
        self.written.insert(id, false);
        id
    }

    /// Marks `id` as written; returns true if it had not been written before.
    pub fn mark_written(&mut self, id: u64) -> bool {
        match self.written.get_mut(&id) {
            Some(done) if !*done => {
                *done = true;
                true
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_text_same_id_and_written_once() {
        let mut names = NameTable::default();
        let a = names.intern("main");
        let b = names.intern("system");
        assert_ne!(a, b);
        assert_eq!(names.intern("main"), a);
        assert!(names.mark_written(a));
        assert!(!names.mark_written(a));
    }
}
