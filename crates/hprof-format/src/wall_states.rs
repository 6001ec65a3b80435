//! How `cpu=wall`'s samples of each trace split among the states the
//! threads were in (an hprof-rs addition). The samples themselves are a CPU
//! SAMPLES block or record, which every HPROF reader reads; the split is
//! beside it, where those readers pass over it:
//!
//! * ASCII: a `WALL STATES BEGIN` ... `WALL STATES END` block after the
//!   CPU SAMPLES block (`ascii::Section::WallStates`).
//! * Binary: the text of a UTF8 record that no other record names, written
//!   before the CPU SAMPLES record:
//!
//! ```text
//! hprof-rs wall states: running native blocked waiting sleeping
//! 300021 120 0 0 0 0
//! 300022 0 0 80 0 0
//! ```
//!
//! A file's settings line says `wall_clock=1` (`settings.rs`) when its CPU
//! SAMPLES are wall-clock samples.

/// The states, in the order of the columns: running Java code; in native
/// code (a JNI call, blocking I/O); blocked entering a monitor; waiting
/// (`Object.wait`, `LockSupport.park`, a `java.util.concurrent` lock or
/// queue); sleeping (`Thread.sleep`).
pub const STATES: [&str; 5] = ["running", "native", "blocked", "waiting", "sleeping"];

/// What the binary UTF8 record's text starts with.
pub const UTF8_PREFIX: &str = "hprof-rs wall states:";

/// One trace's samples by state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WallStateRow {
    /// The TRACE serial.
    pub trace_serial: u32,
    /// Samples in each of [`STATES`], in that order.
    pub counts: [u64; 5],
}

impl WallStateRow {
    /// Every sample of the trace.
    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }
}

/// The text of the binary UTF8 record for `rows`.
pub fn utf8_text(rows: &[WallStateRow]) -> String {
    let mut text = format!("{UTF8_PREFIX} {}\n", STATES.join(" "));
    for row in rows {
        let [a, b, c, d, e] = row.counts;
        text.push_str(&format!("{} {a} {b} {c} {d} {e}\n", row.trace_serial));
    }
    text
}

/// The rows of a UTF8 record's text, if it is a wall-states text. A line
/// that is not a trace serial and five numbers makes it none.
pub fn from_utf8_text(text: &str) -> Option<Vec<WallStateRow>> {
    let mut lines = text.lines();
    let header = lines.next()?.strip_prefix(UTF8_PREFIX)?;
    if header.split_whitespace().ne(STATES.iter().copied()) {
        return None;
    }
    lines.filter(|l| !l.trim().is_empty()).map(row_of).collect()
}

/// `trace c1 c2 c3 c4 c5`, by whitespace.
pub fn row_of(line: &str) -> Option<WallStateRow> {
    let mut words = line.split_whitespace();
    let trace_serial = words.next()?.parse().ok()?;
    let mut counts = [0u64; 5];
    for count in &mut counts {
        *count = words.next()?.parse().ok()?;
    }
    words.next().is_none().then_some(WallStateRow {
        trace_serial,
        counts,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_record_text_reads_back() {
        let rows = vec![
            WallStateRow {
                trace_serial: 300_021,
                counts: [120, 0, 0, 3, 0],
            },
            WallStateRow {
                trace_serial: 300_022,
                counts: [0, 7, 80, 0, 9],
            },
        ];
        let text = utf8_text(&rows);
        assert!(
            text.starts_with("hprof-rs wall states: running native blocked waiting sleeping\n")
        );
        assert_eq!(from_utf8_text(&text), Some(rows));
        assert_eq!(from_utf8_text("hprof-rs settings: depth=4"), None);
        assert_eq!(
            from_utf8_text(&format!("{}\n1 2 3\n", &text[..text.find('\n').unwrap()])),
            None
        );
    }
}
