//! What a `--fail-if` threshold's subject is worth in a profile, and the
//! check that every subject matches something in at least one of the two
//! profiles compared (a threshold that matches nothing could never fail).

use super::profile::{Profile, What, describe_kinds, state_leaf};
use super::threshold::{Subject, Threshold};
use super::top::{class_costs, method_costs};

/// The value of a threshold's subject in one profile; None when the profile
/// does not hold it (no such method, class or site).
pub fn subject_value(profile: &Profile, what: What, subject: &Subject) -> Option<u64> {
    match subject {
        Subject::Total(w) => Some(profile.total(w.unwrap_or(what))),
        Subject::Method { name, inclusive } => method_costs(&profile.stacks(what))
            .get(name)
            .map(|c| if *inclusive { c.total } else { c.self_cost }),
        Subject::Class { name, objects } => class_costs(&profile.stacks(class_kind(*objects)))
            .get(name)
            .copied(),
        Subject::Site { class, method } => profile
            .stacks(what)
            .iter()
            .filter(|s| s.class.as_deref() == Some(class) && s.frames.first() == Some(method))
            .map(|s| s.value)
            .reduce(u64::saturating_add),
        Subject::State { state, method } => {
            let leaf = state_leaf(state);
            profile
                .stacks(what)
                .iter()
                .filter(|s| s.class.as_deref() == Some(leaf.as_str()))
                .filter(|s| method.as_ref().is_none_or(|m| s.frames.contains(m)))
                .map(|s| s.value)
                .reduce(u64::saturating_add)
        }
    }
}

/// The SITES count a `class` threshold looks at.
fn class_kind(objects: bool) -> What {
    if objects {
        What::AllocObjects
    } else {
        What::Alloc
    }
}

/// The kind of cost a threshold's subject is counted in.
pub fn subject_kind(subject: &Subject, what: What) -> What {
    match subject {
        Subject::Total(Some(w)) => *w,
        Subject::Class { objects, .. } => class_kind(*objects),
        _ => what,
    }
}

/// An error for the first threshold that matches nothing: its kind of cost
/// is missing from a profile, or its method, class or site is in neither.
/// Such a threshold could never fail (a typo in a name would pass a gate
/// for ever), so it is unusable input.
pub fn check_thresholds_match(
    base: &Profile,
    new: &Profile,
    what: What,
    thresholds: &[Threshold],
) -> Result<(), String> {
    for threshold in thresholds {
        let nothing = |why: String| {
            format!(
                "--fail-if {:?} matches nothing: {why}",
                threshold.expression
            )
        };
        let kind = subject_kind(&threshold.subject, what);
        for (side, profile) in [("base", base), ("new", new)] {
            let kinds = profile.available();
            if !kinds.contains(&kind) {
                return Err(nothing(format!(
                    "the {side} profile has no {} data ({})",
                    kind.name(),
                    describe_kinds(&kinds)
                )));
            }
        }
        let subject = &threshold.subject;
        if subject_value(base, what, subject).is_none()
            && subject_value(new, what, subject).is_none()
        {
            let known = |p: &Profile| known_names(p, what, subject);
            let mut names = known(base);
            names.extend(known(new));
            return Err(nothing(format!(
                "{} ({}){}",
                describe_subject(subject),
                kind.name(),
                suggestion(subject, &names)
            )));
        }
    }
    Ok(())
}

/// Why the subject matched nothing, in words.
fn describe_subject(subject: &Subject) -> String {
    match subject {
        Subject::Total(_) => "no total".into(),
        Subject::Method { name, .. } => format!("method {name} is in neither profile"),
        Subject::Class { name, .. } => format!("no {name} was allocated in either profile"),
        Subject::Site { class, method } => {
            format!("no {class} was allocated directly in {method} in either profile")
        }
        Subject::State {
            state,
            method: None,
        } => format!("no sample is in state {state} in either profile (cpu=wall's)"),
        Subject::State {
            state,
            method: Some(method),
        } => format!("no sample in state {state} has {method} on its stack in either profile"),
    }
}

/// The names a method or class threshold could have meant.
fn known_names(profile: &Profile, what: What, subject: &Subject) -> Vec<String> {
    match subject {
        Subject::Method { .. } | Subject::Site { .. } | Subject::State { .. } => {
            method_costs(&profile.stacks(what)).into_keys().collect()
        }
        Subject::Class { objects, .. } => class_costs(&profile.stacks(class_kind(*objects)))
            .into_keys()
            .collect(),
        Subject::Total(_) => Vec::new(),
    }
}

/// `; did you mean X?` when a known name is within two edits of the one given.
fn suggestion(subject: &Subject, known: &[String]) -> String {
    let given = match subject {
        Subject::Method { name, .. } | Subject::Class { name, .. } => name,
        Subject::Site { method, .. } if !known.contains(method) => method,
        Subject::State {
            method: Some(method),
            ..
        } if !known.contains(method) => method,
        Subject::Site { .. } | Subject::State { .. } | Subject::Total(_) => return String::new(),
    };
    let mut close: Vec<&String> = known
        .iter()
        .filter(|name| edit_distance(name, given) <= 2)
        .collect();
    close.sort();
    close.dedup();
    match close.first() {
        Some(name) => format!("; did you mean {name}?"),
        None => String::new(),
    }
}

/// Levenshtein distance between two names, in characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1)
                .min(row[j] + 1)
                .min(diagonal + usize::from(ca != *cb));
            diagonal = above;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_distance_counts_inserted_removed_and_changed_characters() {
        assert_eq!(edit_distance("Foo.bar", "Foo.bar"), 0);
        assert_eq!(edit_distance("Foo.barr", "Foo.bar"), 1);
        assert_eq!(edit_distance("Foo.bra", "Foo.bar"), 2);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }
}
