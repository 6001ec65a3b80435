//! The `hprof-rs` command-line tool: runs programs under the agent and reads
//! the files it writes.

mod agent_path;
mod apportion;
mod attach;
mod change;
mod child_signals;
pub mod collapse;
mod command_text;
mod commands;
pub mod convert;
mod convert_pprof;
mod convert_speedscope;
pub mod diff;
pub mod diff_output;
pub mod flame;
mod heap_histogram;
mod heap_scan;
mod listen;
pub mod print;
pub mod profile;
mod profile_file;
pub mod report;
mod run;
pub mod sample_table;
mod subject;
pub mod threshold;
pub mod top;

use clap::{Parser, Subcommand};
use profile::What;
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
    /// passed through JAVA_TOOL_OPTIONS, traces of 16 frames unless the
    /// options give a depth. A JVM that finds its file written by another
    /// JVM of the run writes FILE.PID.txt (binary: FILE.PID) instead, and
    /// says so. SIGTERM, SIGINT, SIGHUP and SIGQUIT are passed on to the
    /// command; exits with its exit code, or 128 + the signal that killed
    /// it. Example: `hprof-rs run cpu=samples,depth=8 -- java -cp app.jar Main`
    Run {
        /// Agent options, as after `-agentlib:hprof=` (empty for the defaults).
        #[arg(default_value = "", value_name = "AGENT_OPTIONS")]
        options: String,
        /// The agent library to use (default: the HPROF_RS_AGENT environment
        /// variable, else the one `hprof-rs agent-path` prints).
        #[arg(long)]
        agent: Option<PathBuf>,
        /// The command to run, after `--`.
        #[arg(last = true, required = true)]
        command: Vec<String>,
    },
    /// Load the agent into a running HotSpot JVM (JDK 11 and later) through
    /// its attach mechanism, and profile it until `hprof-rs attach PID stop`,
    /// which writes the whole file and leaves the JVM as it was. A relative
    /// `file=` (or the default name) is made absolute against the current
    /// directory. Exits 1 with one line on standard error when it cannot.
    /// Example: `hprof-rs attach 4242 cpu=samples,file=app.txt`
    Attach {
        /// The JVM's process id (its host pid for a JVM in a container).
        pid: u32,
        /// Agent options (cpu=samples, heap=sites, heap=dump...), or `stop`.
        #[arg(default_value = "")]
        options: String,
        /// The agent library to load (default: as for `run`).
        #[arg(long)]
        agent: Option<PathBuf>,
    },
    /// Print the agent library's absolute path, for
    /// `java -agentpath:$(hprof-rs agent-path)=heap=sites Main`: HPROF_RS_AGENT,
    /// else ../lib/libhprof_rs.so beside this program (the release archive,
    /// scripts/install.sh), else libhprof_rs.so beside it (target/release).
    /// Exits 1 when there is none.
    AgentPath,
    /// Decode a binary profile into readable text, or check an ASCII one.
    /// Exits with status 2 and the byte offset on malformed input.
    Print {
        /// The file written by the agent (java.hprof or java.hprof.txt).
        file: PathBuf,
        /// For ASCII files: print the parsed sections, not just a summary.
        #[arg(long)]
        verbose: bool,
    },
    /// Folded stacks (`root;...;leaf count`) for flame graph tools, from
    /// CPU SAMPLES, CPU TIME or SITES (the allocated class is the leaf).
    Collapse {
        /// An ASCII or binary profile.
        file: PathBuf,
        /// Which cost (default: the first the file holds: cpu, time, alloc).
        #[arg(long, value_enum)]
        what: Option<What>,
    },
    /// An interactive, searchable SVG flame graph (drawn by inferno).
    Flame {
        file: PathBuf,
        /// The SVG file to write.
        #[arg(short, long)]
        output: PathBuf,
        #[arg(long, value_enum)]
        what: Option<What>,
        /// The graph's title (default: the file name and unit).
        #[arg(long)]
        title: Option<String>,
        /// Icicle graph of the callers, merged from the leaf.
        #[arg(long)]
        reverse: bool,
    },
    /// The top methods by self and total cost, aggregated over traces; the
    /// class histogram of a heap dump.
    Top {
        file: PathBuf,
        #[arg(long, value_enum)]
        what: Option<What>,
        /// How many rows per table.
        #[arg(short, default_value_t = 20)]
        n: usize,
        /// Print JSON (field names documented in docs/cli.md).
        #[arg(long)]
        json: bool,
    },
    /// Compare two profiles: what grew and shrank, beyond noise. Exits 1 when a
    /// --fail-if threshold is crossed, 2 on unusable input, 0 otherwise.
    Diff(commands::DiffArgs),
    /// One table of a profile (CPU SAMPLES, CPU TIME, SITES, MONITOR TIME or
    /// LOCK TIME, ASCII or binary) as pprof (`go tool pprof -http=:8080
    /// OUT`), speedscope JSON or folded stacks; totals are the file's.
    Convert(convert::ConvertArgs),
    /// One self-contained HTML page (no network) of a profile: flame
    /// graphs (search, click to zoom), hot methods, allocation sites,
    /// contention, threads, a heap dump's class histogram; `--diff BASE`
    /// adds diff's table and a differential flame graph. Open OUT in a browser.
    Report(report::ReportArgs),
    /// The front end of `net=HOST:PORT`: accepts the agents' connections,
    /// writes each JVM's output to a file of its own (FILE, FILE.1, ...,
    /// mode 0600) and sends them commands from standard input or `hprof-rs
    /// send`: gc, dump, sites [--changed] [--by-alloc] [--gc] [--cutoff X],
    /// summary, traces, cpu [--cutoff X], control ..., exit. Commands from
    /// `send` come only from this user, through a local socket; at most 64
    /// JVMs and 16 control connections at once, command lines of at most
    /// 4096 bytes.
    Listen(listen::ListenArgs),
    /// Hands one command to a running `hprof-rs listen --control-port N` of
    /// this user on this machine (through its socket, `control-N.sock` in
    /// $XDG_RUNTIME_DIR/hprof-rs or ${TMPDIR:-/tmp}/hprof-rs-<uid>); exits
    /// 0 when it was sent to the JVMs, 2 if not.
    Send {
        /// The listener's `--control-port` (it names its socket).
        #[arg(long)]
        port: u16,
        /// Kept for older scripts: control is local only, so this may only
        /// be a loopback address or localhost.
        #[arg(long, default_value = "127.0.0.1")]
        host: String,
        /// The command, e.g. `sites --changed --cutoff 0.01`.
        #[arg(required = true, allow_hyphen_values = true, trailing_var_arg = true)]
        command: Vec<String>,
    },
}

/// What a mistake on `run`'s command line most likely is.
const RUN_HINT: &str =
    "put the command after --, e.g. hprof-rs run cpu=samples -- java -jar app.jar";

/// Prints clap's error (with [`RUN_HINT`] for `run`, whose command must
/// follow `--`); returns clap's exit code (0 for --help and --version).
fn usage_error(mut error: clap::Error) -> i32 {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    let under_run = std::env::args().nth(1).as_deref() == Some("run");
    let help = matches!(
        error.kind(),
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion
    );
    if under_run && !help {
        let mut tips = match error.get(ContextKind::Suggested) {
            Some(ContextValue::StyledStrs(tips)) => tips.clone(),
            _ => Vec::new(),
        };
        tips.push(RUN_HINT.into());
        error.insert(ContextKind::Suggested, ContextValue::StyledStrs(tips));
    }
    // A closed standard error leaves nothing to tell.
    let _ = error.print();
    error.exit_code()
}

/// Runs the tool with the process arguments; returns the exit code.
pub fn main() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => return usage_error(error),
    };
    match cli.command {
        Command::Run {
            options,
            agent,
            command,
        } => run::run(&options, agent, &command),
        Command::Attach {
            pid,
            options,
            agent,
        } => attach::attach(pid, &options, agent),
        Command::AgentPath => agent_path::print_agent_path(),
        Command::Print { file, verbose } => print::print(&file, verbose),
        Command::Collapse { file, what } => commands::collapse(&file, what),
        Command::Flame {
            file,
            output,
            what,
            title,
            reverse,
        } => commands::flame(&file, &output, what, title, reverse),
        Command::Top {
            file,
            what,
            n,
            json,
        } => commands::top(&file, what, n, json),
        Command::Diff(args) => commands::diff(args),
        Command::Convert(args) => commands::exit_status(convert::convert(&args)),
        Command::Report(args) => commands::exit_status(report::report(&args)),
        Command::Listen(args) => listen::listen(args),
        Command::Send {
            port,
            host,
            command,
        } => listen::send(&host, port, &command),
    }
}
