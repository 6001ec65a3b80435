//! The profile model: everything the collectors learn, with HPROF's serial
//! numbers, in plain Rust (no JVM types), so it can be tested without a JVM.
//!
//! Each table has the same small shape as in the original agent: find or
//! create an entry by its key, get back a stable serial or identifier.

pub mod classes;
pub mod frames;
pub mod ids;
pub mod name_table;
pub mod sites;
pub mod threads;
pub mod traces;

pub use classes::{ClassEntry, ClassTable};
pub use frames::{FrameEntry, FrameFacts, FrameKey, FrameTable, LINE_UNKNOWN, line_for_location};
pub use ids::{IdSpace, ObjectIds};
pub use name_table::NameTable;
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
