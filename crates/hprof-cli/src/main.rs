//! The `hprof-rs` command-line tool; its logic lives in the `hprof_cli` library.
fn main() {
    std::process::exit(hprof_cli::main());
}
