//! `--fail-if` expressions of `hprof-rs diff`.
//!
//! Grammar: `SUBJECT > L%`, `SUBJECT < L%`, `SUBJECT > L`, `SUBJECT < L`
//! (absolute), L a signed number whose sign means what it says: `> -5%`
//! fails when the change in percent is above -5 (any growth, no change, a
//! shrink of less than 5%). SUBJECT is one of
//! - `total`, or `cpu.total`, `time.total`, `alloc.total` (allocated
//!   bytes), `alloc.objects`, `live.total` (live bytes), `live.objects`;
//! - `method NAME self` or `method NAME total` (NAME as `class.method`);
//! - `class NAME bytes` or `class NAME objects` (allocated);
//! - `site CLASS at METHOD` (what CLASS allocations made directly in METHOD cost).

use super::change::Change;
use super::profile::What;

/// What a threshold measures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Subject {
    /// The total of a kind; None = the kind being compared.
    Total(Option<What>),
    Method {
        name: String,
        inclusive: bool,
    },
    Class {
        name: String,
        objects: bool,
    },
    Site {
        class: String,
        method: String,
    },
    /// cpu=wall: the samples in a thread state, of stacks through `method`
    /// when given (`state blocked in Dao.query`).
    State {
        state: String,
        method: Option<String>,
    },
}

/// A parsed `--fail-if`.
#[derive(Debug, Clone, PartialEq)]
pub struct Threshold {
    pub expression: String,
    pub subject: Subject,
    /// `>`: fails when the change is above the limit; `<`: below it.
    pub above: bool,
    pub limit: f64,
    /// The limit is a relative change in percent, not an absolute one.
    pub percent: bool,
}

impl Threshold {
    /// Whether `value`'s change crosses this threshold: is above (`>`) or
    /// below (`<`) the signed limit. A change from a base of 0 is +infinity
    /// percent, from 0 to 0 it is 0%.
    pub fn crossed(&self, value: &Change) -> bool {
        let amount = if self.percent {
            match value.relative_percent {
                Some(r) => r,
                None if value.new > 0 => f64::INFINITY,
                None => 0.0,
            }
        } else {
            value.change as f64
        };
        if self.above {
            amount > self.limit
        } else {
            amount < self.limit
        }
    }
}

fn total_kind(word: &str) -> Option<Option<What>> {
    Some(match word {
        "total" => None,
        "cpu.total" => Some(What::Cpu),
        "time.total" => Some(What::Time),
        "alloc.total" => Some(What::Alloc),
        "alloc.objects" => Some(What::AllocObjects),
        "live.total" => Some(What::Live),
        "live.objects" => Some(What::LiveObjects),
        _ => return None,
    })
}

fn subject(words: &[&str]) -> Result<Subject, String> {
    match words {
        [word] => total_kind(word)
            .map(Subject::Total)
            .ok_or_else(|| format!("unknown total {word:?}")),
        ["method", name, "self"] => Ok(Subject::Method { name: (*name).into(), inclusive: false }),
        ["method", name, "total"] => Ok(Subject::Method { name: (*name).into(), inclusive: true }),
        ["class", name, "bytes"] => Ok(Subject::Class { name: (*name).into(), objects: false }),
        ["class", name, "objects"] => Ok(Subject::Class { name: (*name).into(), objects: true }),
        ["site", class, "at", method] => Ok(Subject::Site { class: (*class).into(), method: (*method).into() }),
        ["state", state] => state_subject(state, None),
        ["state", state, "in", method] => state_subject(state, Some(method)),
        _ => Err("expected `total`, `alloc.total`..., `method NAME self|total`, `class NAME bytes|objects`, `site CLASS at METHOD` or `state STATE [in METHOD]`".into()),
    }
}

/// `state STATE [in METHOD]`, STATE one of cpu=wall's.
fn state_subject(state: &str, method: Option<&str>) -> Result<Subject, String> {
    if !hprof_format::wall_states::STATES.contains(&state) {
        return Err(format!(
            "unknown state {state:?}: cpu=wall's are {}",
            hprof_format::wall_states::STATES.join(", ")
        ));
    }
    Ok(Subject::State {
        state: state.into(),
        method: method.map(Into::into),
    })
}

/// Parses one `--fail-if` expression.
pub fn parse(expression: &str) -> Result<Threshold, String> {
    let fail = |why: String| format!("--fail-if {expression:?}: {why}");
    let at = expression
        .find(['>', '<'])
        .ok_or_else(|| fail("no `>` or `<`".into()))?;
    let above = expression[at..].starts_with('>');
    let words: Vec<&str> = expression[..at].split_whitespace().collect();
    let subject = subject(&words).map_err(fail)?;
    let limit_text = expression[at + 1..].trim();
    let (number, percent) = match limit_text.strip_suffix('%') {
        Some(number) => (number.trim(), true),
        None => (limit_text, false),
    };
    let limit: f64 = number
        .parse()
        .ok()
        .filter(|v: &f64| v.is_finite())
        .ok_or_else(|| fail(format!("{limit_text:?} is not a number like +5% or +1000")))?;
    Ok(Threshold {
        expression: expression.trim().to_owned(),
        subject,
        above,
        limit,
        percent,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(base: u64, new: u64) -> Change {
        crate::change::change(String::new(), base, new, None)
    }

    #[test]
    fn expressions_parse_into_subjects_and_limits() {
        let t = parse("alloc.total > +5%").unwrap();
        assert_eq!(t.subject, Subject::Total(Some(What::Alloc)));
        assert!(t.above && t.percent && t.limit == 5.0);
        let t = parse("method Foo.bar self > +20%").unwrap();
        assert_eq!(
            t.subject,
            Subject::Method {
                name: "Foo.bar".into(),
                inclusive: false
            }
        );
        let t = parse("site int[] at A.make < -1000").unwrap();
        assert_eq!(
            t.subject,
            Subject::Site {
                class: "int[]".into(),
                method: "A.make".into()
            }
        );
        assert!(!t.above && !t.percent && t.limit == -1000.0);
        let t = parse("state blocked in Dao.query > +10%").unwrap();
        assert_eq!(
            t.subject,
            Subject::State {
                state: "blocked".into(),
                method: Some("Dao.query".into())
            }
        );
        assert!(
            parse("state parked > 1%")
                .unwrap_err()
                .contains("unknown state")
        );
        assert!(parse("alloc.total +5%").is_err());
        assert!(parse("bogus > 5%").is_err());
        assert!(parse("total > five").is_err());
    }

    #[test]
    fn thresholds_cross_on_the_right_side() {
        let t = parse("total > +10%").unwrap();
        assert!(t.crossed(&value(100, 111)));
        assert!(!t.crossed(&value(100, 110)));
        assert!(t.crossed(&value(0, 1)));
        let t = parse("total < -10%").unwrap();
        assert!(t.crossed(&value(100, 89)));
        assert!(!t.crossed(&value(100, 95)));
        // The sign as written: above -10% is any growth, no change, a small shrink.
        let t = parse("total > -10%").unwrap();
        assert!(t.crossed(&value(100, 111)) && t.crossed(&value(100, 100)));
        assert!(t.crossed(&value(100, 91)) && !t.crossed(&value(100, 90)));
        assert!(t.crossed(&value(0, 0)) && t.crossed(&value(0, 1)));
        let t = parse("total > +50").unwrap();
        assert!(t.crossed(&value(100, 151)) && !t.crossed(&value(100, 150)));
    }
}
