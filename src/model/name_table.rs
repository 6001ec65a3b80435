//! Interned strings for binary UTF8 records: each distinct string gets one
//! name identifier (the emitter writes each once, just before its first use).

use super::ids::IdSpace;
use std::collections::HashMap;

/// String -> name identifier.
#[derive(Debug, Default)]
pub struct NameTable {
    wide: bool,
    ids: HashMap<String, u64>,
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
        id
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_text_same_id() {
        let mut names = NameTable::default();
        let a = names.intern("main");
        let b = names.intern("system");
        assert_ne!(a, b);
        assert_eq!(names.intern("main"), a);
    }
}
