//! Threads, numbered from 200001; 200000 is the "unknown thread".

use std::collections::HashMap;

/// Serial of the unknown thread, reserved at start-up.
pub const UNKNOWN_THREAD_SERIAL: u32 = 200_000;

/// One Java thread the agent has seen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadEntry {
    pub serial: u32,
    /// Identifier of the `java.lang.Thread` object.
    pub object_id: u64,
    pub name: String,
    pub group: String,
    pub parent_group: Option<String>,
    /// Trace of the thread when it was first seen.
    pub trace_serial: u32,
    pub ended: bool,
}

/// Threads in the order they were first seen.
#[derive(Debug, Default)]
pub struct ThreadTable {
    entries: Vec<ThreadEntry>,
    by_object: HashMap<u64, u32>,
}

impl ThreadTable {
    /// Registers a new thread and returns its serial (200001 for the first).
    pub fn add(
        &mut self,
        object_id: u64,
        name: String,
        group: String,
        parent_group: Option<String>,
        trace_serial: u32,
    ) -> u32 {
        let serial = UNKNOWN_THREAD_SERIAL + 1 + self.entries.len() as u32;
        self.by_object.insert(object_id, serial);
        self.entries.push(ThreadEntry {
            serial,
            object_id,
            name,
            group,
            parent_group,
            trace_serial,
            ended: false,
        });
        serial
    }

    /// The thread with `serial`.
    pub fn get(&self, serial: u32) -> Option<&ThreadEntry> {
        let index = serial.checked_sub(UNKNOWN_THREAD_SERIAL + 1)? as usize;
        self.entries.get(index)
    }

    /// The serial of the thread whose Thread object has `object_id`.
    pub fn serial_of_object(&self, object_id: u64) -> Option<u32> {
        if object_id == 0 {
            return None;
        }
        self.by_object.get(&object_id).copied()
    }

    /// Sets the trace recorded for the thread's start.
    pub fn set_trace(&mut self, serial: u32, trace_serial: u32) {
        if let Some(index) = serial.checked_sub(UNKNOWN_THREAD_SERIAL + 1) {
            if let Some(entry) = self.entries.get_mut(index as usize) {
                entry.trace_serial = trace_serial;
            }
        }
    }

    /// Marks the thread ended; false if unknown or already ended.
    pub fn end(&mut self, serial: u32) -> bool {
        let Some(index) = serial.checked_sub(UNKNOWN_THREAD_SERIAL + 1) else {
            return false;
        };
        match self.entries.get_mut(index as usize) {
            Some(entry) if !entry.ended => {
                entry.ended = true;
                true
            }
            _ => false,
        }
    }

    /// All threads, in serial order.
    pub fn iter(&self) -> impl Iterator<Item = &ThreadEntry> {
        self.entries.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_thread_is_200001_and_ends_once() {
        let mut threads = ThreadTable::default();
        let main = threads.add(
            0x5000_0001,
            "main".into(),
            "main".into(),
            Some("system".into()),
            300_000,
        );
        assert_eq!(main, 200_001);
        assert_eq!(threads.get(main).unwrap().name, "main");
        assert!(threads.get(UNKNOWN_THREAD_SERIAL).is_none());
        assert_eq!(threads.serial_of_object(0x5000_0001), Some(main));
        assert_eq!(threads.serial_of_object(0), None);
        threads.set_trace(main, 300_004);
        assert_eq!(threads.get(main).unwrap().trace_serial, 300_004);
        assert!(threads.end(main));
        assert!(!threads.end(main));
    }
}
