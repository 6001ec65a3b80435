//! Classes defined again with the same bytes: a plugin reloaded in a fresh
//! class loader, a script engine's generated class per run, an application
//! server redeploying. Each definition reaches the ClassFileLoadHook; a mode
//! that numbers what it finds in a class (heap=sites' allocation sites,
//! cpu=times' methods) looks the class up here first and, for bytes seen
//! before under the same name, reuses the numbers it gave them then. Its
//! tables then grow with the distinct classes a program has, not with how
//! often it loads them, and the numbers (heap=sites has at most 2^24 sites)
//! do not run out. The rows are the same either way: HPROF names a site or
//! a method by class name, method and line, never by loader.

use rustc_hash::{FxHashMap, FxHasher};
use std::hash::Hasher;

/// What a class's bytes were given the first time they were rewritten.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FirstNumbers {
    /// The first number given (a site, a class number...).
    pub first: u32,
    /// The first call site number, for modes that number those too.
    pub first_call_site: Option<u32>,
    /// How many numbers the rewrite took: a rewrite of the same bytes from
    /// the same first numbers that takes another count is not the same
    /// class (a hash collision), and gets numbers of its own.
    pub taken: (u32, u32),
}

/// Identifies a class file: its name, length and a 64-bit hash of its
/// bytes (FxHash: fixed, so the same bytes give the same key in every run,
/// and several times faster than SipHash over whole class files, which
/// every class the agent rewrites is hashed as). Made once per class load.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ClassKey {
    name: Box<str>,
    len: usize,
    hash: u64,
}

impl ClassKey {
    /// The key of `bytes`, the class file of `name`.
    pub fn of(name: &str, bytes: &[u8]) -> Self {
        let mut hasher = FxHasher::default();
        hasher.write(bytes);
        Self {
            name: name.into(),
            len: bytes.len(),
            hash: hasher.finish(),
        }
    }
}

/// The numbers given to each distinct class file so far. About 60 bytes
/// and the name per distinct class; a class loaded again costs nothing.
#[derive(Debug, Default)]
pub struct ClassReloads {
    seen: FxHashMap<ClassKey, FirstNumbers>,
    /// Definitions that reused the numbers of a class file seen before.
    reused: u64,
}

impl ClassReloads {
    /// The numbers the class file `key` identifies got when first seen.
    pub fn get(&self, key: &ClassKey) -> Option<FirstNumbers> {
        self.seen.get(key).copied()
    }

    /// Counts a definition that reused the numbers [`get`](Self::get) gave.
    pub fn note_reused(&mut self) {
        self.reused += 1;
    }

    /// What `verbose=y` says at a dump once a class was defined again:
    /// `<distinct> class files rewritten, <reused> more definitions of
    /// them`; None (nothing said) while none was.
    pub fn describe(&self) -> Option<String> {
        (self.reused > 0).then(|| {
            format!(
                "{} class files rewritten, {} more definitions of them",
                self.seen.len(),
                self.reused
            )
        })
    }

    /// Remembers the numbers a first rewrite of the class file `key`
    /// identifies gave.
    pub fn insert(&mut self, key: ClassKey, numbers: FirstNumbers) {
        self.seen.insert(key, numbers);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_bytes_under_the_same_name_are_found_again() {
        let mut reloads = ClassReloads::default();
        let numbers = FirstNumbers {
            first: 7,
            first_call_site: Some(3),
            taken: (2, 1),
        };
        let key = |name: &str, bytes: &[u8]| ClassKey::of(name, bytes);
        reloads.insert(key("p/Plugin", b"\xca\xfe\xba\xbe one"), numbers);
        assert_eq!(
            reloads.get(&key("p/Plugin", b"\xca\xfe\xba\xbe one")),
            Some(numbers)
        );
        assert_eq!(reloads.get(&key("p/Other", b"\xca\xfe\xba\xbe one")), None);
        assert_eq!(reloads.get(&key("p/Plugin", b"\xca\xfe\xba\xbe two")), None);
        reloads.insert(key("p/Plugin", b"\xca\xfe\xba\xbe one"), numbers);
        assert_eq!(reloads.seen.len(), 1);
    }
}
