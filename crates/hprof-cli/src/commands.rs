//! The reading commands `collapse`, `flame`, `top` and `diff`: read the
//! files, run the computation, print, and map every failure to one line on
//! standard error and exit status 2 (1 is reserved for `diff`'s thresholds).

use super::diff_output::{self, DiffFormat};
use super::listen::output_file::create_buffered;
use super::profile::{self, Profile, What};
use super::{collapse, diff, flame, subject, threshold, top};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Exit status for unreadable input or unusable arguments.
const UNUSABLE: i32 = 2;

/// Prints `message` as the tool's one error line; returns the exit status.
fn fail(message: impl std::fmt::Display) -> i32 {
    eprintln!("hprof-rs: {message}");
    UNUSABLE
}

/// 0, or the error printed as the tool's one line and 2.
pub fn exit_status(result: Result<(), String>) -> i32 {
    result.map_or_else(fail, |()| 0)
}

/// Writes `text` to standard output; a closed pipe (`| head`) is not an error.
fn print(text: &str) -> i32 {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => 0,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => 0,
        Err(e) => fail(format!("cannot write the output: {e}")),
    }
}

fn read(path: &Path) -> Result<Profile, String> {
    profile::read_file(path).map_err(|e| e.0)
}

fn json(value: &impl serde::Serialize) -> String {
    let mut text = serde_json::to_string_pretty(value).expect("plain data serializes");
    text.push('\n');
    text
}

/// `hprof-rs collapse FILE [--what ...]`
pub fn collapse(file: &Path, what: Option<What>) -> i32 {
    let result = read(file).and_then(|p| Ok((p.choose(what).map_err(|e| e.0)?, p)));
    match result {
        Ok((what, profile)) => print(&collapse::folded_text(&profile, what)),
        Err(e) => fail(e),
    }
}

/// The subtitle of a flame graph: the profile's header and totals.
fn subtitle(profile: &Profile, what: What) -> String {
    let cut = profile
        .below_cutoff_text(what)
        .map_or_else(String::new, |cut| format!(" ({cut})"));
    format!(
        "{}; {}; total {} {}{cut}",
        profile.header,
        profile.options(),
        profile.total(what),
        what.unit()
    )
}

/// `hprof-rs flame FILE -o OUT [--what ...] [--title ...] [--reverse]`
pub fn flame(
    file: &Path,
    output: &Path,
    what: Option<What>,
    title: Option<String>,
    reverse: bool,
) -> i32 {
    let run = || -> Result<(), String> {
        let profile = read(file)?;
        let what = profile.choose(what).map_err(|e| e.0)?;
        let title = title.unwrap_or_else(|| format!("{} ({})", file.display(), what.unit()));
        let look = flame::Look {
            title: &title,
            subtitle: subtitle(&profile, what),
            unit: what.unit(),
            reverse,
        };
        let out = create_buffered(output)?;
        flame::draw(&profile, what, &look, out)
    };
    run().map_or_else(fail, |()| 0)
}

/// `hprof-rs top FILE [--what ...] [-n N] [--json]`
pub fn top(file: &Path, what: Option<What>, n: usize, as_json: bool) -> i32 {
    match read(file).and_then(|p| top::top(&p, what, n)) {
        Ok(report) if as_json => print(&json(&report)),
        Ok(report) => print(&top::render(&report)),
        Err(e) => fail(e),
    }
}

/// Arguments of `hprof-rs diff`.
#[derive(clap::Args, Debug)]
pub struct DiffArgs {
    /// The profile to compare against.
    pub base: PathBuf,
    /// The profile of the change.
    pub new: PathBuf,
    #[arg(long, value_enum)]
    pub what: Option<What>,
    /// e.g. 'alloc.total > +5%', 'method Foo.bar self > +20%',
    /// 'class int[] bytes > +10%', 'site int[] at Foo.make > +1000'. The
    /// limit's sign means what it says ('> -5%': any growth or a shrink of
    /// less than 5%); a threshold that matches nothing exits 2.
    #[arg(long = "fail-if")]
    pub fail_if: Vec<String>,
    /// How to print the report: text, md (Markdown for a pull request or
    /// $GITHUB_STEP_SUMMARY), junit (JUnit XML, a test case per --fail-if)
    /// or json (field names documented in docs/cli.md).
    #[arg(long, value_enum, default_value = "text")]
    pub format: DiffFormat,
    /// The same as --format json.
    #[arg(long, conflicts_with = "format")]
    pub json: bool,
    /// Also write a differential flame graph (red = grew) to this SVG file.
    #[arg(long)]
    pub flame: Option<PathBuf>,
    /// How many changed stacks and methods to list.
    #[arg(short, default_value_t = 20)]
    pub n: usize,
}

/// `hprof-rs diff BASE NEW ...`: 0, 1 when a threshold failed, 2 when unusable.
pub fn diff(args: DiffArgs) -> i32 {
    let run = || -> Result<bool, String> {
        let thresholds = args
            .fail_if
            .iter()
            .map(|t| threshold::parse(t))
            .collect::<Result<Vec<_>, _>>()?;
        let base = read(&args.base)?;
        let new = read(&args.new)?;
        let what = diff::common_kind(&base, &new, args.what)?;
        subject::check_thresholds_match(&base, &new, what, &thresholds)?;
        let report = diff::compare(&base, &new, what, &thresholds, args.n);
        if let Some(path) = &args.flame {
            let look = flame::Look {
                title: "Differential flame graph (red = grew, blue = shrank)",
                subtitle: format!(
                    "{} -> {}; {}",
                    args.base.display(),
                    args.new.display(),
                    subtitle(&new, what)
                ),
                unit: what.unit(),
                reverse: false,
            };
            flame::draw_diff(&base, &new, what, &look, create_buffered(path)?)?;
        }
        let format = if args.json {
            DiffFormat::Json
        } else {
            args.format
        };
        let text = diff_output::render(&report, format);
        if print(&text) != 0 {
            return Err("cannot write the report".into());
        }
        Ok(report.failed)
    };
    match run() {
        Ok(true) => 1,
        Ok(false) => 0,
        Err(e) => fail(e),
    }
}
