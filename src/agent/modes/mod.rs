//! The profiling modes, one folder each, holding its engine (the type the
//! run's engine list calls) and all of its machinery.
//!
//! - `cpu_samples`: cpu=samples, the signal-driven sampler and its stack walk.
//! - `cpu_times`: cpu=times and cpu=old, the Tracker the rewritten classes call.
//! - `cpu_wall`: cpu=wall, every thread sampled by the clock with its state.
//! - `heap_sites`: heap=sites, allocation counting (bytecode or events) and the live sample.
//! - `heap_dump`: heap=dump, the JVM's own dump carried into the output.
//! - `monitor`: monitor=y, monitor contention and java.util.concurrent lock waits.

pub mod cpu_samples;
pub mod cpu_times;
pub mod cpu_wall;
pub mod heap_dump;
pub mod heap_sites;
pub mod monitor;
