//! The profile model: everything the collectors learn, with HPROF's serial
//! numbers, in plain Rust (no JVM types), so it can be tested without a JVM.
//!
//! Each table has the same small shape as in the original agent: find or
//! create an entry by its key, get back a stable serial or identifier.

pub mod classes;
pub mod frames;
pub mod ids;
pub mod name_table;
pub mod shared_strings;
pub mod sites;
pub mod threads;
pub mod traces;

pub use classes::{ClassEntry, ClassTable};
pub use frames::{FrameEntry, FrameFacts, FrameKey, FrameTable, LINE_UNKNOWN, line_for_location};
pub use ids::{IdSpace, ObjectIds};
pub use name_table::NameTable;
pub use shared_strings::SharedStrings;
pub use sites::{SiteCounters, SiteKey, SiteStats, SiteTable};
pub use threads::{ThreadEntry, ThreadTable};
pub use traces::{TraceEntry, TraceKey, TraceTable};

/// All tables of one profiling run.
#[derive(Debug, Default)]
pub struct Model {
    pub names: NameTable,
    pub classes: ClassTable,
    pub frames: FrameTable,
    pub traces: TraceTable,
    pub threads: ThreadTable,
    pub objects: ObjectIds,
    pub sites: SiteTable,
}

impl Model {
    /// A fresh model: the empty trace 300000 and the unknown thread 200000
    /// exist. `wide`: the output has 8-byte identifiers (see [`ids`]).
    pub fn new(wide: bool) -> Self {
        Self {
            names: NameTable::new(wide),
            frames: FrameTable::new(wide),
            objects: ObjectIds::new(wide),
            ..Self::default()
        }
    }
}

impl Model {
    /// Class `serial` has unloaded: the tables keyed by its class object
    /// and its methods let go of it (rows, traces and frames that name it
    /// stay, as HPROF kept them). False for a class not known as loaded.
    pub fn unload_class(&mut self, serial: u32) -> bool {
        if !self.classes.unload(serial) {
            return false;
        }
        self.frames.forget_class(serial);
        true
    }
}

/// What carrying a JVM-made heap dump into the output asks of the model:
/// this file's serials for the dump's own classes and stack traces. The
/// emitter holds no lock of the model; the model locked behind a mutex
/// answers each call under the lock, one call per record of the dump, so
/// that the program's threads are not held up for the whole copy.
pub trait DumpSerials {
    /// A trace serial for one of the dump's stack traces.
    fn reserve_trace(&self) -> u32;
    /// The serial of the class `object_id` (with JVM signature
    /// `signature`, loaded at the empty trace), and whether it is new to
    /// this file (and so needs its LOAD CLASS record).
    fn announce_class(&self, object_id: u64, signature: &str) -> (u32, bool);
}

impl DumpSerials for parking_lot::Mutex<Model> {
    fn reserve_trace(&self) -> u32 {
        self.lock().traces.reserve()
    }

    fn announce_class(&self, object_id: u64, signature: &str) -> (u32, bool) {
        self.lock()
            .classes
            .intern_announced(object_id, signature, traces::EMPTY_TRACE_SERIAL)
    }
}
