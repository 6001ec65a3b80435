//! The `hprof-rs` command-line tool. (Being implemented.)

/// Run the tool with the process arguments; returns the exit code.
pub fn main() -> i32 {
    0
}
