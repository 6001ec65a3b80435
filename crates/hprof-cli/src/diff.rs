//! `hprof-rs diff`: what grew and shrank between two profiles, matched by
//! their frames (trace serial numbers differ between runs), with thresholds
//! that fail a CI job.
//!
//! CPU samples are a random sample, so a change is only reported when the
//! counts can resolve it: stacks and methods are compared by their share of
//! all samples with a two-proportion z-test, and totals by the difference of
//! two Poisson counts, z = (new - base) / sqrt(new + base). Changes with
//! |z| < 3 (a 0.27% chance of a false alarm per comparison) are noise.
//! Allocation sites and CPU times are exact counts: a stack is reported when
//! it changed by at least 0.5% of the base total. (Under heap=sites' default
//! a large program's stacks below each site are estimates that move between
//! runs: two runs of javac moved 2.9% of its objects among stacks, each
//! stack's change far below the floor.)

pub use super::change::Change;
use super::change::change;
use super::collapse::folded;
use super::profile::{BELOW_CUTOFF, BelowCutoff, Profile, What};
use super::subject::{subject_kind, subject_value};
use super::threshold::{Subject, Threshold};
use super::top::method_costs;
use serde::Serialize;

/// |z| at and above which a change of sampled counts is not noise.
pub const Z_SIGNIFICANT: f64 = 3.0;
/// For exact counts, changes below this share of the base total are not listed.
pub const EXACT_FLOOR: f64 = 0.005;

/// One `--fail-if` and whether it failed.
#[derive(Debug, Clone, Serialize)]
pub struct Verdict {
    pub expression: String,
    /// The unit of the subject's counts (`objects` for `class X objects`).
    pub unit: &'static str,
    #[serde(flatten)]
    pub value: Change,
    /// The threshold is crossed and, for CPU samples, the change is not noise.
    pub failed: bool,
    /// Why the value may be short: a class, site or method of SITES whose
    /// rows below the cutoff are not in either file; null otherwise.
    pub note: Option<String>,
}

/// The whole comparison; also the `--json` form.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub what: What,
    pub unit: &'static str,
    pub statistic: &'static str,
    pub total: Change,
    /// SITES: what the cutoff left out of each file's rows (counted in
    /// the totals and as one `[rows below the cutoff]` stack); null when
    /// nothing was, or the file does not say.
    pub base_below_cutoff: Option<BelowCutoff>,
    pub new_below_cutoff: Option<BelowCutoff>,
    /// What the reader should know about the totals, in words.
    pub notes: Vec<String>,
    /// Stacks that changed beyond noise, largest absolute change first.
    pub stacks: Vec<Change>,
    /// Methods whose self cost changed beyond noise, largest first.
    pub methods: Vec<Change>,
    pub thresholds: Vec<Verdict>,
    /// True when any threshold failed (the exit code is then 1).
    pub failed: bool,
}

/// z of the difference of two Poisson counts.
pub fn poisson_z(base: u64, new: u64) -> f64 {
    if base == 0 && new == 0 {
        return 0.0;
    }
    (new as f64 - base as f64) / (base as f64 + new as f64).sqrt()
}

/// z of the change in share, `base/base_total` to `new/new_total`
/// (two-proportion test with the pooled share).
pub fn share_z(base: u64, base_total: u64, new: u64, new_total: u64) -> f64 {
    if base_total == 0 || new_total == 0 {
        return 0.0;
    }
    let (n1, n2) = (base_total as f64, new_total as f64);
    let pooled = (base as f64 + new as f64) / (n1 + n2);
    let spread = (pooled * (1.0 - pooled) * (1.0 / n1 + 1.0 / n2)).sqrt();
    if spread == 0.0 {
        return 0.0;
    }
    (new as f64 / n2 - base as f64 / n1) / spread
}

/// Which `what` both profiles are compared on; an error names the mismatch.
pub fn common_kind(base: &Profile, new: &Profile, what: Option<What>) -> Result<What, String> {
    let b = base
        .choose(what)
        .map_err(|e| format!("base profile: {e}"))?;
    let n = new.choose(what).map_err(|e| format!("new profile: {e}"))?;
    if b != n {
        return Err(format!(
            "the profiles are of different kinds ({} in the base, {} in the new one)",
            b.name(),
            n.name()
        ));
    }
    Ok(b)
}

/// Compares two keyed cost maps; keeps the changes that are beyond noise.
fn compare_all(
    what: What,
    base: &std::collections::HashMap<String, u64>,
    new: &std::collections::HashMap<String, u64>,
    totals: (u64, u64),
) -> Vec<Change> {
    let mut names: Vec<&String> = base.keys().chain(new.keys()).collect();
    names.sort();
    names.dedup();
    let mut changes: Vec<Change> = names
        .into_iter()
        .filter_map(|name| {
            let (b, n) = (
                base.get(name).copied().unwrap_or(0),
                new.get(name).copied().unwrap_or(0),
            );
            let z = (what == What::Cpu).then(|| share_z(b, totals.0, n, totals.1));
            let beyond_noise = match z {
                Some(z) => z.abs() >= Z_SIGNIFICANT,
                None => b.abs_diff(n) as f64 >= EXACT_FLOOR * totals.0.max(1) as f64 && b != n,
            };
            beyond_noise.then(|| change(name.clone(), b, n, z))
        })
        .collect();
    changes.sort_by(|a, b| {
        b.change
            .unsigned_abs()
            .cmp(&a.change.unsigned_abs())
            .then(a.name.cmp(&b.name))
    });
    changes
}

/// Evaluates one threshold. For CPU samples, methods and sites are compared
/// as shares of all samples (a longer run has more samples everywhere).
fn verdict(base: &Profile, new: &Profile, what: What, threshold: &Threshold) -> Verdict {
    let subject_kind = subject_kind(&threshold.subject, what);
    // Absent from one profile: it appeared or went away.
    let (b, n) = (
        subject_value(base, what, &threshold.subject).unwrap_or(0),
        subject_value(new, what, &threshold.subject).unwrap_or(0),
    );
    let (bt, nt) = (base.total(subject_kind), new.total(subject_kind));
    let sampled = subject_kind == What::Cpu;
    let (value, crossed) = if sampled && !matches!(threshold.subject, Subject::Total(_)) {
        // Compare shares in parts per million of the total.
        let share = |v: u64, t: u64| {
            if t == 0 {
                0
            } else {
                (v as f64 * 1e6 / t as f64).round() as u64
            }
        };
        let z = share_z(b, bt, n, nt);
        let value = change(threshold.expression.clone(), b, n, Some(z));
        let shared = change(String::new(), share(b, bt), share(n, nt), None);
        let crossed = threshold.crossed(&shared) && z.abs() >= Z_SIGNIFICANT;
        (value, crossed)
    } else {
        let z = sampled.then(|| poisson_z(b, n));
        let value = change(threshold.expression.clone(), b, n, z);
        let crossed = threshold.crossed(&value) && z.is_none_or(|z| z.abs() >= Z_SIGNIFICANT);
        (value, crossed)
    };
    Verdict {
        expression: threshold.expression.clone(),
        unit: subject_kind.unit(),
        value,
        failed: crossed,
        note: uncounted_rows(base, new, subject_kind, &threshold.subject),
    }
}

/// For a class, site or method threshold on SITES: the rows below the
/// cutoff it cannot see, in words (totals count them, other subjects not).
fn uncounted_rows(base: &Profile, new: &Profile, kind: What, subject: &Subject) -> Option<String> {
    if matches!(subject, Subject::Total(_)) || !kind.is_sites() {
        return None;
    }
    let cut = |p: &Profile| p.sites_below_cutoff().map_or(0, |c| c.value(kind));
    let (b, n) = (cut(base), cut(new));
    (b > 0 || n > 0).then(|| {
        format!(
            "rows below the cutoff not counted: {b} {} in the base profile, {n} in the new \
             one; profile with cutoff=0 to gate on classes, sites and methods",
            kind.unit()
        )
    })
}

/// What the reader should know about SITES totals: each side's rows below
/// the cutoff, and a file that does not state its totals.
fn total_notes(base: &Profile, new: &Profile, what: What) -> Vec<String> {
    if !what.is_sites() {
        return Vec::new();
    }
    let mut notes = Vec::new();
    for (side, profile) in [("base", base), ("new", new)] {
        if let Some(cut) = profile.below_cutoff_text(what) {
            notes.push(format!(
                "{side}: {cut}, counted in the total and as one {BELOW_CUTOFF} stack"
            ));
        } else if profile.sites_totals.is_none() {
            notes.push(format!(
                "{side}: the file does not state its SITES totals (written by HPROF or an \
                 older hprof-rs), so its total is the sum of its rows, without the rows below \
                 the cutoff"
            ));
        }
    }
    notes
}

/// Compares `new` against `base` on `what` and evaluates the thresholds.
pub fn compare(
    base: &Profile,
    new: &Profile,
    what: What,
    thresholds: &[Threshold],
    n: usize,
) -> Report {
    let totals = (base.total(what), new.total(what));
    let total_z = (what == What::Cpu).then(|| poisson_z(totals.0, totals.1));
    let to_map = |p: &Profile| folded(p, what).into_iter().collect();
    let mut stacks = compare_all(what, &to_map(base), &to_map(new), totals);
    stacks.truncate(n);
    let self_costs = |p: &Profile| {
        method_costs(&p.stacks(what))
            .into_values()
            .map(|c| (c.method, c.self_cost))
            .collect()
    };
    let mut methods = compare_all(what, &self_costs(base), &self_costs(new), totals);
    methods.truncate(n);
    let thresholds: Vec<Verdict> = thresholds
        .iter()
        .map(|t| verdict(base, new, what, t))
        .collect();
    Report {
        what,
        unit: what.unit(),
        statistic: if what == What::Cpu {
            "CPU samples: two-proportion z-test on shares of all samples (totals: Poisson), |z| >= 3"
        } else {
            "exact counts: changes of at least 0.5% of the base total"
        },
        total: change("total".into(), totals.0, totals.1, total_z),
        base_below_cutoff: base.sites_below_cutoff().filter(|_| what.is_sites()),
        new_below_cutoff: new.sites_below_cutoff().filter(|_| what.is_sites()),
        notes: total_notes(base, new, what),
        failed: thresholds.iter().any(|v| v.failed),
        stacks,
        methods,
        thresholds,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_z_statistics_match_hand_computed_values() {
        // 100 vs 144 samples: (144 - 100) / sqrt(244) = 2.817
        assert!((poisson_z(100, 144) - 2.8168).abs() < 1e-3);
        // shares 0.10 and 0.15 of 1000 samples each: pooled 0.125,
        // sd = sqrt(0.125 * 0.875 * 0.002) = 0.014790, z = 0.05 / 0.014790 = 3.3806
        assert!((share_z(100, 1000, 150, 1000) - 3.3806).abs() < 1e-3);
        assert_eq!(share_z(0, 0, 5, 10), 0.0);
    }
}
