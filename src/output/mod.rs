//! Sinks: where the bytes go (a file or a socket), how the file is named,
//! the one writer thread that does all output I/O, and the private
//! directory that holds the agent's own temporary files.

pub mod heap_dump_output;
pub mod naming;
pub mod private_dir;
pub mod sink;
pub mod writer;

pub use heap_dump_output::HeapDumpOutput;
pub use naming::unique_file_name;
pub use private_dir::PrivateDir;
pub use sink::{OpenError, Sink};
pub use writer::OutputWriter;
