//! The `hprof-rs` command-line tool; its logic lives in `hprof_rs::cli`.
fn main() {
    std::process::exit(hprof_rs::cli::main());
}
