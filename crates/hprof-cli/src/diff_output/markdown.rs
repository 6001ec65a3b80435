//! `diff`'s report as Markdown for a pull request or GitHub's job summary
//! (`>> $GITHUB_STEP_SUMMARY`): the verdict first, a table row per
//! threshold, then the stacks and methods that changed, shortened.

use super::stack_label::{STACK_WIDTH, short_stack};
use super::words::{relative, significance, state};
use crate::change::Change;
use crate::diff::Report;
use std::fmt::Write as _;

/// The report as Markdown.
pub fn render(report: &Report) -> String {
    let mut out = String::new();
    let failed = report.thresholds.iter().filter(|v| v.failed).count();
    let verdict = match (report.thresholds.len(), failed) {
        (0, _) => "no thresholds".to_owned(),
        (n, 0) => format!("passed ({n} of {n} thresholds within limits)"),
        (n, f) => format!("**FAILED** ({f} of {n} thresholds crossed)"),
    };
    let _ = writeln!(
        out,
        "### hprof-rs diff ({}): {verdict}\n",
        report.what.name()
    );
    let unit = report.unit;
    let total = &report.total;
    let _ = writeln!(
        out,
        "Total: {:+} {unit} ({}, {}): {} -> {}\n",
        total.change,
        relative(total),
        significance(total),
        total.base,
        total.new
    );
    for note in &report.notes {
        let _ = writeln!(out, "* {}", cell(note));
    }
    if !report.notes.is_empty() {
        out.push('\n');
    }
    if !report.thresholds.is_empty() {
        out.push_str("| threshold | result | base | new | change | significance |\n");
        out.push_str("| --- | --- | ---: | ---: | ---: | --- |\n");
        for v in &report.thresholds {
            let result = if v.failed {
                format!("**{}**", state(true))
            } else {
                state(false).to_owned()
            };
            let note = v
                .note
                .as_ref()
                .map_or_else(String::new, |n| format!("; {}", cell(n)));
            let _ = writeln!(
                out,
                "| {} | {result} | {} | {} | {} | {}{note} |",
                code(&v.expression),
                v.value.base,
                v.value.new,
                change_cell(&v.value, v.unit),
                significance(&v.value)
            );
        }
        out.push('\n');
    }
    changes(
        &mut out,
        ("Stacks that changed", "stack"),
        &report.stacks,
        unit,
    );
    let title = ("Methods whose self cost changed", "method");
    changes(&mut out, title, &report.methods, unit);
    let _ = writeln!(out, "Noise: {}", cell(report.statistic));
    out
}

/// A table of changes under its title, its last column named `name`, or a
/// line saying there is none.
fn changes(out: &mut String, (title, name): (&str, &str), rows: &[Change], unit: &str) {
    let _ = writeln!(out, "#### {title}, largest first\n");
    if rows.is_empty() {
        out.push_str("No change beyond noise.\n\n");
        return;
    }
    let _ = writeln!(
        out,
        "| change | base | new | {name} |\n| ---: | ---: | ---: | --- |"
    );
    for row in rows {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} |",
            change_cell(row, unit),
            row.base,
            row.new,
            code(&short_stack(&row.name, STACK_WIDTH))
        );
    }
    out.push('\n');
}

/// `+1632000 bytes (+30.0%)`.
fn change_cell(c: &Change, unit: &str) -> String {
    format!("{:+} {unit} ({})", c.change, relative(c))
}

/// Text in a code span inside a table cell: backticks cannot close it and
/// a `|` cannot end the cell.
fn code(text: &str) -> String {
    format!("`{}`", text.replace('`', "'").replace('|', "\\|"))
}

/// Plain text in a table cell or list item: nothing in it is markup.
fn cell(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '|' | '\\' | '*' | '_' | '`' | '[' | ']' | '<' | '>' | '#' => {
                escaped.push('\\');
                escaped.push(c);
            }
            '\n' | '\r' => escaped.push(' '),
            _ => escaped.push(c),
        }
    }
    escaped
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_cannot_break_the_table() {
        assert_eq!(code("A|B`c"), "`A\\|B'c`");
        assert_eq!(cell("a|b <init> [x]\nc"), "a\\|b \\<init\\> \\[x\\] c");
    }
}
