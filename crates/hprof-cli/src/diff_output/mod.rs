//! The forms `hprof-rs diff` prints its report in: text for a terminal or a
//! CI log, Markdown for a pull request (GitHub's `$GITHUB_STEP_SUMMARY`),
//! JUnit XML (one test case per threshold) for CI test reports, and JSON.
//! Text and Markdown shorten long stacks; JSON keeps every name whole.

mod junit;
mod markdown;
pub mod stack_label;
mod text;
mod words;

use super::diff::Report;

/// The output forms of `diff --format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DiffFormat {
    /// Plain text (the default).
    Text,
    /// A Markdown summary: thresholds, then what changed, as tables.
    #[value(alias = "markdown")]
    Md,
    /// JUnit XML: one test case per `--fail-if`, failed when crossed.
    Junit,
    /// JSON, every stack whole (field names in docs/cli.md).
    Json,
}

/// The report in `format`.
pub fn render(report: &Report, format: DiffFormat) -> String {
    match format {
        DiffFormat::Text => text::render(report),
        DiffFormat::Md => markdown::render(report),
        DiffFormat::Junit => junit::render(report),
        DiffFormat::Json => {
            let mut json = serde_json::to_string_pretty(report).expect("plain data serializes");
            json.push('\n');
            json
        }
    }
}
