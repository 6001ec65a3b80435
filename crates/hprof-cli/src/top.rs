//! `hprof-rs top`: the methods with the highest self and total (inclusive)
//! cost, aggregated over every trace they appear in (HPROF's own tables have
//! one row per trace, so one hot method is split over many rows), the
//! allocated classes for SITES, and the class histogram of a heap dump.

use super::collapse::EMPTY_TRACE;
use super::profile::{BelowCutoff, Profile, Weighted, What};
use serde::Serialize;
use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

/// One method's aggregated cost.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct MethodCost {
    pub method: String,
    /// Cost of the traces where the method is the innermost frame.
    #[serde(rename = "self")]
    pub self_cost: u64,
    /// Cost of the traces the method appears in, each counted once
    /// (recursion does not count twice).
    pub total: u64,
}

/// One row of the class histogram of a heap dump.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HistogramRow {
    pub class: String,
    pub instances: u64,
    /// Shallow bytes, as the JVM counts them (see [`Top::heap_layout`]).
    pub bytes: u64,
}

/// Cost per allocated class, for SITES.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ClassCost {
    pub class: String,
    pub value: u64,
}

/// Everything `top` reports; also its `--json` form.
#[derive(Debug, Clone, Serialize)]
pub struct Top {
    pub header: String,
    /// `cpu`, `time`, `alloc`, `alloc-objects`, `live`, `live-objects`;
    /// null when the file holds only a heap dump.
    pub what: Option<What>,
    pub unit: Option<&'static str>,
    pub total: Option<u64>,
    /// SITES: what the cutoff left out of the file's rows, counted in
    /// `total` and drawn as one `[rows below the cutoff]` stack; null when
    /// nothing was left out or the file does not say.
    pub below_cutoff: Option<BelowCutoff>,
    pub by_total: Vec<MethodCost>,
    pub by_self: Vec<MethodCost>,
    pub classes: Vec<ClassCost>,
    pub histogram: Vec<HistogramRow>,
    /// For a binary heap dump, the object layout the sizes were counted
    /// with, in words; null for an ASCII dump, whose entries give sizes.
    pub heap_layout: Option<String>,
}

/// The method frames of a stack, innermost first (the allocated class of a
/// site is not a method).
fn methods_of(stack: &Weighted) -> Vec<&str> {
    if stack.frames.is_empty() {
        return vec![EMPTY_TRACE];
    }
    stack.frames.iter().map(String::as_str).collect()
}

/// Self and total cost of every method.
pub fn method_costs(stacks: &[Weighted]) -> HashMap<String, MethodCost> {
    let mut costs: HashMap<String, MethodCost> = HashMap::new();
    for stack in stacks {
        let methods = methods_of(stack);
        let mut seen = HashSet::new();
        for (depth, method) in methods.iter().enumerate() {
            let cost = costs
                .entry((*method).to_owned())
                .or_insert_with(|| MethodCost {
                    method: (*method).to_owned(),
                    ..MethodCost::default()
                });
            if depth == 0 {
                cost.self_cost = cost.self_cost.saturating_add(stack.value);
            }
            if seen.insert(*method) {
                cost.total = cost.total.saturating_add(stack.value);
            }
        }
    }
    costs
}

/// Cost per allocated class.
pub fn class_costs(stacks: &[Weighted]) -> HashMap<String, u64> {
    let mut costs = HashMap::new();
    for stack in stacks {
        if let Some(class) = &stack.class {
            let sum: &mut u64 = costs.entry(class.clone()).or_default();
            *sum = sum.saturating_add(stack.value);
        }
    }
    costs
}

/// The `n` largest by `key`, ties by name.
fn largest<T, K: Ord>(
    items: impl IntoIterator<Item = T>,
    n: usize,
    key: impl Fn(&T) -> (K, String),
) -> Vec<T> {
    let mut items: Vec<T> = items.into_iter().collect();
    items.sort_by(|a, b| {
        let (ka, na) = key(a);
        let (kb, nb) = key(b);
        kb.cmp(&ka).then(na.cmp(&nb))
    });
    items.truncate(n);
    items
}

/// Computes the report; `what` None picks the first kind the file holds.
pub fn top(profile: &Profile, what: Option<What>, n: usize) -> Result<Top, String> {
    let chosen = match (what, &profile.histogram) {
        // A heap dump alone still has its histogram.
        (None, Some(_)) if profile.available().is_empty() => None,
        _ => Some(profile.choose(what).map_err(|e| e.0)?),
    };
    let mut report = Top {
        header: format!("{} ({})", profile.header, profile.options()),
        what: chosen,
        unit: chosen.map(What::unit),
        total: chosen.map(|w| profile.total(w)),
        below_cutoff: chosen
            .filter(|w| w.is_sites())
            .and_then(|_| profile.sites_below_cutoff()),
        by_total: Vec::new(),
        by_self: Vec::new(),
        classes: Vec::new(),
        histogram: Vec::new(),
        heap_layout: profile.heap_layout.clone(),
    };
    if let Some(what) = chosen {
        let stacks = profile.stacks(what);
        let costs = method_costs(&stacks);
        report.by_total = largest(costs.values().cloned(), n, |c| (c.total, c.method.clone()));
        report.by_self = largest(costs.into_values().filter(|c| c.self_cost > 0), n, |c| {
            (c.self_cost, c.method.clone())
        });
        report.classes = largest(
            class_costs(&stacks)
                .into_iter()
                .map(|(class, value)| ClassCost { class, value }),
            n,
            |c| (c.value, c.class.clone()),
        );
    }
    if let Some(histogram) = &profile.histogram {
        report.histogram = largest(
            histogram.iter().map(|(class, c)| HistogramRow {
                class: class.clone(),
                instances: c.instances,
                bytes: c.bytes,
            }),
            n,
            |r| (r.bytes, r.class.clone()),
        );
    }
    Ok(report)
}

fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 * 100.0 / whole as f64
    }
}

/// The report as aligned text tables.
pub fn render(report: &Top) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", report.header);
    if let (Some(what), Some(unit), Some(total)) = (report.what, report.unit, report.total) {
        let cut = report
            .below_cutoff
            .map_or_else(String::new, |cut| format!(" ({})", cut.describe(what)));
        let _ = writeln!(out, "{}: total {total} {unit}{cut}", what.name());
        let table = |out: &mut String, title: &str, rows: &[MethodCost]| {
            let _ = writeln!(out, "\n{title}");
            let _ = writeln!(
                out,
                "{:>6} {:>14} {:>7} {:>14} {:>7}  method",
                "rank", "self", "self%", "total", "total%"
            );
            for (i, row) in rows.iter().enumerate() {
                let _ = writeln!(
                    out,
                    "{:>6} {:>14} {:>6.2}% {:>14} {:>6.2}%  {}",
                    i + 1,
                    row.self_cost,
                    percent(row.self_cost, total),
                    row.total,
                    percent(row.total, total),
                    row.method
                );
            }
        };
        table(
            &mut out,
            "Top methods by total (inclusive) cost:",
            &report.by_total,
        );
        table(&mut out, "Top methods by self cost:", &report.by_self);
        if !report.classes.is_empty() {
            // cpu=wall's samples carry their state where a site has its class.
            let (title, column) = match what {
                What::Cpu => ("Samples by thread state (cpu=wall):", "state"),
                _ => ("Top allocated classes:", "class"),
            };
            let _ = writeln!(out, "\n{title}");
            let _ = writeln!(out, "{:>6} {:>14} {:>7}  {column}", "rank", unit, "share");
            for (i, row) in report.classes.iter().enumerate() {
                let _ = writeln!(
                    out,
                    "{:>6} {:>14} {:>6.2}%  {}",
                    i + 1,
                    row.value,
                    percent(row.value, total),
                    row.class
                );
            }
        }
    }
    if !report.histogram.is_empty() {
        let basis = match &report.heap_layout {
            Some(layout) => format!("shallow bytes as the JVM counts them: {layout}"),
            None => "shallow bytes, each object's sz=".to_owned(),
        };
        let _ = writeln!(out, "\nHeap dump class histogram ({basis}):");
        let _ = writeln!(
            out,
            "{:>6} {:>14} {:>16}  class",
            "rank", "instances", "bytes"
        );
        for (i, row) in report.histogram.iter().enumerate() {
            let _ = writeln!(
                out,
                "{:>6} {:>14} {:>16}  {}",
                i + 1,
                row.instances,
                row.bytes,
                row.class
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stack(frames: &[&str], value: u64) -> Weighted {
        Weighted {
            frames: frames.iter().map(|s| s.to_string()).collect(),
            class: None,
            value,
            trace: 0,
            calls: 0,
        }
    }

    #[test]
    fn a_method_spread_over_traces_sums_its_total_and_recursion_counts_once() {
        let stacks = [
            stack(&["A.leaf1", "A.hot", "A.main"], 3),
            stack(&["A.leaf2", "A.hot", "A.main"], 3),
            stack(&["A.hot", "A.hot", "A.main"], 2),
            stack(&["A.single", "A.main"], 5),
        ];
        let costs = method_costs(&stacks);
        assert_eq!(costs["A.hot"].total, 8);
        assert_eq!(costs["A.hot"].self_cost, 2);
        assert_eq!(costs["A.single"].self_cost, 5);
        assert_eq!(costs["A.main"].total, 13);
        let profile = Profile {
            samples: Some((stacks.to_vec(), 13)),
            ..Profile::default()
        };
        let report = top(&profile, None, 3).unwrap();
        let names: Vec<&str> = report.by_total.iter().map(|c| c.method.as_str()).collect();
        assert_eq!(names, ["A.main", "A.hot", "A.single"]);
        assert_eq!(report.by_self[0].method, "A.single");
    }
}
