//! `hprof-rs convert FILE --to pprof|speedscope|collapsed [-o OUT]`: one
//! table of a profile in a format other tools open.

use super::listen::output_file;
use super::profile::{self, What};
use super::sample_table::{self, Samples, Table};
use super::{collapse, convert_pprof, convert_speedscope};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

/// The formats `convert` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Target {
    /// google/pprof's profile.proto, gzipped (go tool pprof, Pyroscope, Parca).
    Pprof,
    /// speedscope's JSON file format (speedscope, Firefox Profiler).
    Speedscope,
    /// Folded stacks, one `root;...;leaf count` a line.
    Collapsed,
}

/// Arguments of `hprof-rs convert`.
#[derive(clap::Args, Debug)]
pub struct ConvertArgs {
    /// An ASCII or binary profile.
    pub file: PathBuf,
    #[arg(long, value_enum)]
    pub to: Target,
    /// The file to write (mode 0600; default: standard output).
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Which table (default: the first the file holds: cpu, time, sites,
    /// monitor, lock).
    #[arg(long, value_enum)]
    pub what: Option<Table>,
    /// The cpu=samples interval in ms: pprof's cpu/nanoseconds are samples
    /// x interval (default: the one the file says, else HPROF's 10).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
    pub interval: Option<u64>,
}

/// Folded stacks of `samples`: the table's own unit for CPU, CPU TIME (ms)
/// and SITES (allocated bytes), as `collapse` prints them; contention
/// delays in ms.
fn folded(profile: &profile::Profile, samples: &Samples) -> String {
    let what = match samples.table {
        Table::Cpu => What::Cpu,
        Table::Time => What::Time,
        Table::Sites => What::Alloc,
        Table::Monitor | Table::Lock => {
            let mut lines = std::collections::BTreeMap::<String, u64>::new();
            for sample in &samples.samples {
                let ms = sample.values[1] / 1_000_000;
                if ms > 0 {
                    let sum = lines
                        .entry(Samples::root_first(sample).join(";"))
                        .or_default();
                    *sum = sum.saturating_add(ms);
                }
            }
            return lines.iter().map(|(s, n)| format!("{s} {n}\n")).collect();
        }
    };
    collapse::folded_text(profile, what)
}

/// Opens `-o OUT` (0600, never through another user's file) or standard output.
fn open_output(output: Option<&Path>, binary: bool) -> Result<Box<dyn Write>, String> {
    match output {
        Some(path) => output_file::create_buffered(path).map(|f| Box::new(f) as Box<dyn Write>),
        None if binary && std::io::stdout().is_terminal() => {
            Err("a pprof file is binary: give -o FILE or redirect standard output".into())
        }
        None => Ok(Box::new(std::io::BufWriter::new(std::io::stdout().lock()))),
    }
}

/// `profile`'s table `table` (default: the first it holds) in `target`'s
/// format; `name` names the source in the output.
pub fn to_bytes(
    profile: &profile::Profile,
    target: Target,
    table: Option<Table>,
    interval_ms: u64,
    name: &str,
) -> Result<Vec<u8>, String> {
    let table = sample_table::choose(profile, table)?;
    let samples = sample_table::samples(profile, table, interval_ms);
    let mut out = Vec::new();
    match target {
        Target::Pprof => {
            let comments = [
                profile.header.clone(),
                format!("{} of {name}", table.title()),
            ];
            convert_pprof::write(&samples, &comments, &mut out)?
        }
        Target::Speedscope => convert_speedscope::write(&samples, name, &mut out)?,
        Target::Collapsed => out = folded(profile, &samples).into_bytes(),
    }
    Ok(out)
}

/// Runs `convert`; the error is the one line to print.
pub fn convert(args: &ConvertArgs) -> Result<(), String> {
    let profile = profile::read_file(&args.file).map_err(|e| e.0)?;
    let name = args.file.display().to_string();
    let interval = args.interval.unwrap_or_else(|| profile.interval_ms());
    let bytes = to_bytes(&profile, args.to, args.what, interval, &name)?;
    let mut out = open_output(args.output.as_deref(), args.to == Target::Pprof)?;
    match out.write_all(&bytes).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(format!("cannot write the output: {e}"))
        }
        _ => Ok(()),
    }
}
