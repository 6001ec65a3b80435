//! The `hprof-rs` command-line tool: runs programs under the agent and reads
//! the files it writes.

pub mod print;
mod run;

use clap::{Parser, Subcommand};
use std::path::PathBuf;

/// Command line of `hprof-rs`.
#[derive(Parser, Debug)]
#[command(
    name = "hprof-rs",
    version,
    about = "Run Java programs under the hprof-rs agent and read its output files"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run any JVM-based command (java, javac, mvn, gradle...) with the agent,
    /// passed through JAVA_TOOL_OPTIONS. Example:
    /// `hprof-rs run cpu=samples,depth=8 -- java -cp app.jar Main`
    Run {
        /// Agent options, as after `-agentlib:hprof=` (empty for the defaults).
        #[arg(default_value = "")]
        options: String,
        /// The agent library to use (default: next to this program, or the
        /// HPROF_RS_AGENT environment variable).
        #[arg(long)]
        agent: Option<PathBuf>,
        /// The command to run, after `--`.
        #[arg(last = true, required = true)]
        command: Vec<String>,
    },
    /// Decode a binary profile into readable text, or check an ASCII one.
    /// Exits with status 2 and the byte offset on malformed input.
    Print {
        /// The file written by the agent (java.hprof or java.hprof.txt).
        file: PathBuf,
        /// For ASCII files: print the parsed sections, not just a summary.
        #[arg(long)]
        verbose: bool,
    },
}

/// Runs the tool with the process arguments; returns the exit code.
pub fn main() -> i32 {
    let cli = Cli::parse();
    match cli.command {
        Command::Run {
            options,
            agent,
            command,
        } => run::run(&options, agent, &command),
        Command::Print { file, verbose } => print::print(&file, verbose),
    }
}
