//! One compared quantity of `hprof-rs diff`, what thresholds are checked
//! against (its own module so that `diff` and `threshold` both use it
//! without depending on each other).

use serde::Serialize;

/// One compared quantity.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Change {
    /// The folded stack, method or threshold expression.
    pub name: String,
    pub base: u64,
    pub new: u64,
    /// new - base.
    pub change: i64,
    /// Relative change in percent; null when the base is 0.
    pub relative_percent: Option<f64>,
    /// For CPU samples: the z statistic of the change; null for exact counts.
    pub z: Option<f64>,
}

/// The change from `base` to `new`, saturated at the ends of i64.
pub fn change(name: String, base: u64, new: u64, z: Option<f64>) -> Change {
    Change {
        name,
        base,
        new,
        change: (i128::from(new) - i128::from(base)).clamp(i64::MIN.into(), i64::MAX.into()) as i64,
        relative_percent: (base > 0).then(|| (new as f64 - base as f64) * 100.0 / base as f64),
        z,
    }
}
