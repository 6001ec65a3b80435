//! The words `diff`'s text, Markdown and JUnit forms share: a change, its
//! relative size, whether it is beyond noise, a threshold's result.

use crate::change::Change;
use crate::diff::Z_SIGNIFICANT;

/// The relative change in words: `+28.0%`, `new`, `unchanged`.
pub fn relative(c: &Change) -> String {
    match c.relative_percent {
        Some(r) => format!("{r:+.1}%"),
        None if c.new == 0 => "unchanged".to_owned(),
        None => "new".to_owned(),
    }
}

/// Whether a change is beyond sampling noise, in words with its z
/// (`not significant, z=+0.8`); exact counts have no noise.
pub fn significance(c: &Change) -> String {
    match c.z {
        Some(z) if z.abs() >= Z_SIGNIFICANT => format!("significant, z={z:+.1}"),
        Some(z) => format!("not significant, z={z:+.1}"),
        None => "exact counts".to_owned(),
    }
}

/// `+1619808 bytes (+28.0%): 5793208 -> 7413016`, with the significance
/// in words for sampled counts.
pub fn describe(c: &Change, unit: &str) -> String {
    let noise = if c.z.is_some() {
        format!(", {}", significance(c))
    } else {
        String::new()
    };
    format!(
        "{:+} {unit} ({}{noise}): {} -> {}",
        c.change,
        relative(c),
        c.base,
        c.new
    )
}

/// Whether a threshold failed, in one word.
pub fn state(failed: bool) -> &'static str {
    if failed { "FAILED" } else { "ok" }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::change::change;

    #[test]
    fn significance_is_said_in_words() {
        let sampled = |z| change("x".into(), 100, 126, Some(z));
        assert_eq!(
            describe(&sampled(2.3), "samples"),
            "+26 samples (+26.0%, not significant, z=+2.3): 100 -> 126"
        );
        assert_eq!(
            describe(&sampled(-3.4), "samples"),
            "+26 samples (+26.0%, significant, z=-3.4): 100 -> 126"
        );
        let exact = change("x".into(), 0, 5, None);
        assert_eq!(describe(&exact, "bytes"), "+5 bytes (new): 0 -> 5");
        assert_eq!(significance(&exact), "exact counts");
    }
}
