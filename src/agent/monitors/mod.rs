//! The parts of monitor=y that are not the engine itself
//! (`engines/monitors.rs`): the lock-free per-thread and per-row cells,
//! the contention rows, and the thread status strings of MONITOR DUMP.

pub mod rows;
pub mod status;
pub mod table;
