//! hprof-rs: a drop-in replacement for the HPROF profiling agent.
//!
//! The crate builds a JVMTI agent library (`libhprof_rs.so`, also usable as
//! `libhprof.so`) and the `hprof-rs` command-line tool. See README.md and
//! the decision log in `docs/decisions.md`.

pub mod agent;
pub mod bci;
pub mod cli;
pub mod emit;
pub mod format;
pub mod model;
pub mod options;
pub mod output;
