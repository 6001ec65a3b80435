//! What every run has, whatever its modes: the profiler's lifecycle (load,
//! VM init, VM death), the list of engines and the trait they implement,
//! the dump sequence, threads, traces and classes as the model knows them,
//! the file header, and the `net=` command listener.

pub mod class_reloads;
pub mod classes;
pub mod collection;
pub mod dump_sequence;
pub mod engine;
pub mod engines;
pub mod header;
pub mod listener;
pub mod method_cache;
pub mod profiler;
pub mod remote;
pub mod threads;
pub mod traces;
