//! `diff`'s thresholds as JUnit XML, which CI systems show as test results:
//! one test case per `--fail-if`, with a `failure` element when it was
//! crossed; the totals and notes go to the suite's output.

use super::text;
use super::words::describe;
use crate::diff::Report;
use std::fmt::Write as _;

/// The report as a JUnit XML document.
pub fn render(report: &Report) -> String {
    let tests = report.thresholds.len();
    let failures = report.thresholds.iter().filter(|v| v.failed).count();
    let suite = format!("hprof-rs diff ({})", report.what.name());
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites name=\"hprof-rs diff\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\">"
    );
    let _ = writeln!(
        out,
        "  <testsuite name=\"{}\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\" skipped=\"0\">",
        escape(&suite)
    );
    for v in &report.thresholds {
        let said = describe(&v.value, v.unit);
        let _ = write!(
            out,
            "    <testcase classname=\"hprof-rs.diff.{}\" name=\"{}\"",
            escape(report.what.name()),
            escape(&v.expression)
        );
        if v.failed {
            let message = format!("{} crossed: {said}", v.expression);
            let detail = match &v.note {
                Some(note) => format!("{message}\n({note})"),
                None => message.clone(),
            };
            let _ = writeln!(
                out,
                ">\n      <failure type=\"threshold\" message=\"{}\">{}</failure>\n    </testcase>",
                escape(&message),
                escape(&detail)
            );
        } else {
            let _ = writeln!(
                out,
                ">\n      <system-out>{}</system-out>\n    </testcase>",
                escape(&said)
            );
        }
    }
    let _ = writeln!(
        out,
        "    <system-out>{}</system-out>",
        escape(&text::render(report))
    );
    out.push_str("  </testsuite>\n</testsuites>\n");
    out
}

/// Text as XML character data or attribute value: the five markup
/// characters as references, and the characters XML 1.0 does not allow
/// (control characters, U+FFFE, U+FFFF) as U+FFFD.
fn escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            '"' => escaped.push_str("&quot;"),
            '\'' => escaped.push_str("&apos;"),
            '\t' | '\n' | '\r' => escaped.push(c),
            c if u32::from(c) < 0x20 || c == '\u{fffe}' || c == '\u{ffff}' => {
                escaped.push('\u{fffd}')
            }
            c => escaped.push(c),
        }
    }
    escaped
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_and_characters_xml_forbids_are_escaped() {
        assert_eq!(
            escape("a<b>&\"c'\u{1}\u{ffff}\té"),
            "a&lt;b&gt;&amp;&quot;c&apos;\u{fffd}\u{fffd}\té"
        );
    }
}
