//! `hprof-rs flame`: an interactive, searchable SVG flame graph drawn by the
//! `inferno` crate from the folded stacks, and the differential flame graph
//! of `diff --flame` (red = grew, blue = shrank).

use super::collapse::folded;
use super::profile::{Profile, What};
use inferno::flamegraph::{self, Options};
use std::io::Write;

/// How a flame graph is drawn.
pub struct Look<'a> {
    pub title: &'a str,
    pub subtitle: String,
    pub unit: &'a str,
    /// Icicle graph of the callers: stacks merged from the leaf.
    pub reverse: bool,
}

fn options(look: &Look) -> Options<'static> {
    let mut options = Options::default();
    options.title = look.title.to_owned();
    options.subtitle = Some(look.subtitle.clone());
    options.count_name = look.unit.to_owned();
    options.reverse_stack_order = look.reverse;
    if look.reverse {
        options.direction = flamegraph::Direction::Inverted;
    }
    // Java frames coloured as Java (green: Java, yellow: C++ and so on).
    options.colors = flamegraph::color::Palette::Multi(flamegraph::color::MultiPalette::Java);
    options
}

/// Draws the flame graph of `profile`'s `what` into `out`.
pub fn draw(profile: &Profile, what: What, look: &Look, out: impl Write) -> Result<(), String> {
    let lines: Vec<String> = folded(profile, what)
        .into_iter()
        .map(|(stack, count)| format!("{stack} {count}"))
        .collect();
    if lines.is_empty() {
        return Err(format!(
            "no {} to draw: every stack has a count of 0",
            what.unit()
        ));
    }
    flamegraph::from_lines(&mut options(look), lines.iter().map(String::as_str), out)
        .map_err(|e| format!("cannot draw the flame graph: {e}"))
}

/// Draws the differential flame graph of `base` -> `new`: the shape is
/// `new`'s, the colour the change of each frame.
pub fn draw_diff(
    base: &Profile,
    new: &Profile,
    what: What,
    look: &Look,
    out: impl Write,
) -> Result<(), String> {
    let text = |p: &Profile| super::collapse::folded_text(p, what);
    let mut diff_folded = Vec::new();
    inferno::differential::from_readers(
        inferno::differential::Options::default(),
        text(base).as_bytes(),
        text(new).as_bytes(),
        &mut diff_folded,
    )
    .map_err(|e| format!("cannot compare the stacks: {e}"))?;
    let diff_folded = String::from_utf8_lossy(&diff_folded).into_owned();
    if diff_folded.trim().is_empty() {
        return Err(format!("no {} to draw in either profile", what.unit()));
    }
    flamegraph::from_lines(&mut options(look), diff_folded.lines(), out)
        .map_err(|e| format!("cannot draw the flame graph: {e}"))
}
