//! Loaded classes, numbered from 100000 as HPROF did.

use std::collections::HashMap;

/// Serial number of the first class.
pub const FIRST_CLASS_SERIAL: u32 = 100_000;

/// One loaded class.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassEntry {
    pub serial: u32,
    /// Identifier of the `java.lang.Class` object (its JVMTI tag).
    pub object_id: u64,
    /// JVM signature, e.g. `Ljava/lang/String;` or `[I`.
    pub signature: String,
    /// Trace of the thread that loaded it (300000 before VM init).
    pub trace_serial: u32,
}

/// Classes by the identifier of their class object.
#[derive(Debug, Default)]
pub struct ClassTable {
    entries: Vec<ClassEntry>,
    by_object: HashMap<u64, usize>,
    /// Serials of the classes unloaded, in the order their unloading was
    /// seen. An unloaded class keeps its entry (its serial and name, which
    /// rows and binary records already printed refer to) but not its place
    /// among the class objects: no object of it will be seen again.
    unloaded: Vec<u32>,
}

impl ClassTable {
    /// The class whose class object has `object_id`, if known.
    pub fn get(&self, object_id: u64) -> Option<&ClassEntry> {
        self.by_object.get(&object_id).map(|&i| &self.entries[i])
    }

    /// The class with serial number `serial`.
    pub fn by_serial(&self, serial: u32) -> Option<&ClassEntry> {
        let index = serial.checked_sub(FIRST_CLASS_SERIAL)? as usize;
        self.entries.get(index)
    }

    /// Finds or creates the class for `object_id`; returns its serial.
    pub fn intern(&mut self, object_id: u64, signature: &str, trace_serial: u32) -> u32 {
        if let Some(&i) = self.by_object.get(&object_id) {
            return self.entries[i].serial;
        }
        let serial = FIRST_CLASS_SERIAL + self.entries.len() as u32;
        self.by_object.insert(object_id, self.entries.len());
        self.entries.push(ClassEntry {
            serial,
            object_id,
            signature: signature.to_owned(),
            trace_serial,
        });
        serial
    }

    /// Like [`ClassTable::intern`]: returns the serial and whether the
    /// class is new to the table.
    pub fn intern_announced(
        &mut self,
        object_id: u64,
        signature: &str,
        trace_serial: u32,
    ) -> (u32, bool) {
        let known = self.by_object.contains_key(&object_id);
        let serial = self.intern(object_id, signature, trace_serial);
        (serial, !known)
    }

    /// Every class, in serial order.
    pub fn iter(&self) -> impl Iterator<Item = &ClassEntry> {
        self.entries.iter()
    }

    /// The classes from the `first`-th on (0: every class), in serial order.
    pub fn iter_from(&self, first: usize) -> impl Iterator<Item = &ClassEntry> {
        self.entries.get(first..).unwrap_or_default().iter()
    }

    /// Class `serial` has unloaded: its class object is forgotten. False
    /// for a serial not known or already unloaded.
    pub fn unload(&mut self, serial: u32) -> bool {
        let Some(entry) = self.by_serial(serial) else {
            return false;
        };
        let object_id = entry.object_id;
        match self.by_object.get(&object_id) {
            Some(&i) if self.entries[i].serial == serial => {
                self.by_object.remove(&object_id);
                self.unloaded.push(serial);
                true
            }
            _ => false,
        }
    }

    /// The serials of the unloaded classes from the `first`-th on, in the
    /// order they unloaded.
    pub fn unloaded_from(&self, first: usize) -> &[u32] {
        self.unloaded.get(first..).unwrap_or_default()
    }

    /// Number of classes whose class object is known (loaded classes).
    pub fn loaded_len(&self) -> usize {
        self.by_object.len()
    }

    /// Number of classes seen.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when no class has been seen.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serials_start_at_100000_and_are_stable() {
        let mut classes = ClassTable::default();
        assert_eq!(
            classes.intern(0x5000_0001, "Ljava/lang/Object;", 300_000),
            100_000
        );
        assert_eq!(classes.intern(0x5000_0002, "[I", 300_000), 100_001);
        assert_eq!(
            classes.intern(0x5000_0001, "Ljava/lang/Object;", 300_000),
            100_000
        );
        assert_eq!(classes.get(0x5000_0002).unwrap().signature, "[I");
        assert_eq!(classes.by_serial(100_001).unwrap().object_id, 0x5000_0002);
        assert!(classes.by_serial(99_999).is_none());
        let serials: Vec<u32> = classes.iter().map(|c| c.serial).collect();
        assert_eq!(serials, [100_000, 100_001]);
    }

    #[test]
    fn an_unloaded_class_keeps_its_serial_and_name_but_not_its_object() {
        let mut classes = ClassTable::default();
        classes.intern(0x5000_0001, "LA;", 300_000);
        classes.intern(0x5000_0002, "LB;", 300_000);
        assert!(classes.unload(100_000));
        assert!(!classes.unload(100_000), "once only");
        assert!(!classes.unload(100_007), "unknown serial");
        assert!(classes.get(0x5000_0001).is_none());
        assert_eq!(classes.by_serial(100_000).unwrap().signature, "LA;");
        assert_eq!(classes.unloaded_from(0), [100_000]);
        assert!(classes.unloaded_from(1).is_empty());
        assert_eq!((classes.len(), classes.loaded_len()), (2, 1));
        // A new class object (the identifier cannot come back, but a new
        // serial is what a new class gets).
        assert_eq!(classes.intern(0x5000_0003, "LA;", 300_000), 100_002);
    }
}
