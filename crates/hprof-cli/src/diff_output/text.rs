//! `diff`'s report as plain text, stacks shortened to one readable line.

use super::stack_label::{STACK_WIDTH, short_stack};
use super::words::{describe, state};
use crate::change::Change;
use crate::diff::Report;
use std::fmt::Write as _;

/// The report as text.
pub fn render(report: &Report) -> String {
    let mut out = String::new();
    let unit = report.unit;
    let _ = writeln!(
        out,
        "{} total: {}",
        report.what.name(),
        describe(&report.total, unit)
    );
    for note in &report.notes {
        let _ = writeln!(out, "Note: {note}");
    }
    let _ = writeln!(out, "Noise: {}", report.statistic);
    let mut section = |title: &str, rows: &[Change]| {
        let _ = writeln!(out, "\n{title}");
        if rows.is_empty() {
            let _ = writeln!(out, "  (no change beyond noise)");
        }
        for row in rows {
            let name = short_stack(&row.name, STACK_WIDTH);
            let _ = writeln!(out, "  {}  {name}", describe(row, unit));
        }
    };
    section("Stacks that changed, largest first:", &report.stacks);
    section(
        "Methods whose self cost changed, largest first:",
        &report.methods,
    );
    if !report.thresholds.is_empty() {
        let _ = writeln!(out, "\nThresholds:");
        for v in &report.thresholds {
            let _ = writeln!(
                out,
                "  {:6} {}: {}",
                state(v.failed),
                v.expression,
                describe(&v.value, v.unit)
            );
            if let Some(note) = &v.note {
                let _ = writeln!(out, "         ({note})");
            }
        }
    }
    out
}
