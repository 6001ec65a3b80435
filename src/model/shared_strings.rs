//! One shared copy of each string. Method names, descriptors and the call
//! targets of rewritten classes repeat across thousands of classes (every
//! constructor is `<init>`, most call `java/lang/Object.<init>()V`); kept
//! once each, a class defined under a fresh name costs only what is new in it.

use rustc_hash::FxHashSet;
use std::sync::Arc;

/// The strings handed out so far. Bound: one copy per distinct string, so
/// never more than the tables that hold them.
#[derive(Debug, Default)]
pub struct SharedStrings(FxHashSet<Arc<str>>);

impl SharedStrings {
    /// The shared copy of `text`, made on first sight.
    pub fn get(&mut self, text: &str) -> Arc<str> {
        if let Some(shared) = self.0.get(text) {
            return shared.clone();
        }
        let shared: Arc<str> = Arc::from(text);
        self.0.insert(shared.clone());
        shared
    }

    /// Number of distinct strings kept.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// True when no string was kept yet.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_text_gets_the_same_allocation() {
        let mut strings = SharedStrings::default();
        let first = strings.get("<init>");
        let again = strings.get(&String::from("<init>"));
        assert!(Arc::ptr_eq(&first, &again));
        assert_eq!(&*strings.get("()V"), "()V");
        assert_eq!(strings.len(), 2);
    }
}
