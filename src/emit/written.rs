//! Which records the emitter has already written: each string (UTF8),
//! frame (FRAME), class (LOAD CLASS) and trace (TRACE, in both formats)
//! goes out once, just before its first use. The model keeps only the
//! facts; this is the emitter's memory of what it has said.

use crate::model::classes::FIRST_CLASS_SERIAL;
use crate::model::traces::EMPTY_TRACE_SERIAL;
use std::collections::HashSet;

/// The records written so far.
#[derive(Debug, Default)]
pub struct Written {
    names: HashSet<u64>,
    frames: HashSet<u64>,
    classes: SerialSet,
    traces: SerialSet,
    /// How many of the model's classes were looked at for LOAD CLASS: each
    /// was written then (or before, by a heap dump), so the next look
    /// starts after them, not at the first class of the run.
    classes_looked_at: usize,
    /// How many of the model's unloaded classes have their UNLOAD CLASS.
    unloads_written: usize,
}

impl Written {
    /// Notes the UTF8 record of name `id`; true the first time.
    pub fn name(&mut self, id: u64) -> bool {
        self.names.insert(id)
    }

    /// Notes the FRAME record of frame `id`; true the first time.
    pub fn frame(&mut self, id: u64) -> bool {
        self.frames.insert(id)
    }

    /// Notes the LOAD CLASS record of class `serial`; true the first time.
    pub fn class(&mut self, serial: u32) -> bool {
        serial
            .checked_sub(FIRST_CLASS_SERIAL)
            .is_some_and(|index| self.classes.insert(index))
    }

    /// Of a class table now holding `count` classes, the index of the first
    /// one not yet looked at for LOAD CLASS; the rest count as looked at
    /// from here on.
    pub fn classes_to_look_at(&mut self, count: usize) -> usize {
        std::mem::replace(&mut self.classes_looked_at, count)
    }

    /// Of `count` classes unloaded so far, the index of the first one
    /// without its UNLOAD CLASS; the rest count as written from here on.
    pub fn unloads_to_write(&mut self, count: usize) -> usize {
        std::mem::replace(&mut self.unloads_written, count)
    }

    /// Notes trace `serial` as printed; true the first time.
    pub fn trace(&mut self, serial: u32) -> bool {
        serial
            .checked_sub(EMPTY_TRACE_SERIAL)
            .is_some_and(|index| self.traces.insert(index))
    }
}

/// Serial numbers counted from their first (they are dense), one bit each:
/// the agent asks about every class on each class load, so this must cost
/// no more than a flag per entry.
#[derive(Debug, Default)]
struct SerialSet {
    bits: Vec<u64>,
}

impl SerialSet {
    /// Adds `index`; true if it was not there.
    fn insert(&mut self, index: u32) -> bool {
        let (word, bit) = ((index / 64) as usize, 1u64 << (index % 64));
        if self.bits.len() <= word {
            self.bits.resize(word + 1, 0);
        }
        let new = self.bits[word] & bit == 0;
        self.bits[word] |= bit;
        new
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_record_is_first_once_per_kind() {
        let mut written = Written::default();
        assert!(written.name(7) && !written.name(7));
        assert!(written.frame(7) && !written.frame(7));
        assert!(written.class(100_000) && !written.class(100_000));
        assert!(written.class(100_130) && !written.class(100_130));
        assert!(written.trace(300_001) && written.trace(300_000));
        assert!(!written.trace(300_001) && !written.trace(300_000));
    }
}
