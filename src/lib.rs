//! hprof-rs: a drop-in replacement for the HPROF profiling agent.
//!
//! The crate builds the JVMTI agent library (`libhprof_rs.so`, also usable
//! as `libhprof.so`). The workspace's other crates hold what does not touch
//! the JVM: `hprof-format` (the HPROF formats and net= frames),
//! `hprof-bytecode` (the class-file rewriter) and `hprof-cli` (the
//! `hprof-rs` tool). See README.md and docs/ARCHITECTURE.md.

/// The class-file rewriter (the `hprof-bytecode` crate).
pub use hprof_bytecode as bci;
/// The HPROF formats and net= command frames (the `hprof-format` crate).
pub use hprof_format as format;

pub mod agent;
pub mod emit;
pub mod model;
pub mod options;
pub mod output;
pub mod sys;
