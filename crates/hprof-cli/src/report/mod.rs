//! `hprof-rs report FILE -o report.html [--diff BASE]`: one self-contained
//! HTML page (no network: the style, the script and the data are inlined)
//! with what the file holds: a flame graph (search, click to zoom) and the
//! hot methods of CPU SAMPLES / CPU TIME, the allocation sites and their
//! flame graph, the contention tables, the threads, a heap dump's class
//! histogram and biggest array classes; with `--diff BASE`, `diff`'s table
//! and a differential flame graph. Tables hold at most [`ROWS`] rows and
//! flame graphs at most [`tree::MAX_NODES`] nodes, so the page's size is
//! bounded whatever the profile's.

mod tree;

use super::listen::output_file;
use super::profile::{self, Profile, What};
use super::sample_table::{self, Samples, Table};
use super::{collapse, diff, diff_output, top};
use hprof_format::wall_states;
use serde::Serialize;
use serde_json::{Value, json};
use std::io::Write;
use std::path::PathBuf;
use tree::{Names, Tree};

/// The most rows of one table.
pub const ROWS: usize = 50;
/// The most rows of the thread list.
pub const THREAD_ROWS: usize = 500;

const PAGE: &str = include_str!("page.html");
const STYLE: &str = include_str!("report.css");
const SCRIPT: &str = include_str!("report.js");

/// Arguments of `hprof-rs report`.
#[derive(clap::Args, Debug)]
pub struct ReportArgs {
    /// An ASCII or binary profile.
    pub file: PathBuf,
    /// The HTML file to write (mode 0600).
    #[arg(short, long)]
    pub output: PathBuf,
    /// Compare with this profile: diff's table and a differential flame
    /// graph (red = grew, blue = shrank) of FILE against BASE.
    #[arg(long)]
    pub diff: Option<PathBuf>,
    /// The cpu=samples interval in ms (default: the one the file says,
    /// else HPROF's 10).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
    pub interval: Option<u64>,
}

#[derive(Serialize)]
struct Flame {
    title: String,
    unit: &'static str,
    total: u64,
    diff: bool,
    /// The share of the total below which frames were merged.
    share: f64,
    root: tree::Node,
}

#[derive(Serialize)]
struct TableData {
    title: String,
    note: String,
    columns: Vec<&'static str>,
    rows: Vec<Vec<Value>>,
}

#[derive(Serialize)]
struct Text {
    title: String,
    text: String,
}

#[derive(Serialize, Default)]
struct Data {
    title: String,
    header: String,
    options: String,
    names: Names,
    flames: Vec<Flame>,
    tables: Vec<TableData>,
    texts: Vec<Text>,
}

impl Data {
    fn flame(&mut self, title: String, unit: &'static str, tree: &Tree, diff: bool) {
        let (root, share) = tree.bounded(&mut self.names);
        self.flames.push(Flame {
            title,
            unit,
            total: tree.total(),
            diff,
            share,
            root,
        });
    }

    fn table(
        &mut self,
        title: &str,
        note: String,
        columns: &[&'static str],
        rows: Vec<Vec<Value>>,
    ) {
        self.tables.push(TableData {
            title: title.to_owned(),
            note,
            columns: columns.to_vec(),
            rows,
        });
    }
}

const NS_PER_MS: u64 = 1_000_000;

/// The value flame graphs and tables show for a sample, and its unit:
/// nanoseconds (CPU TIME, delays) shown as the files' milliseconds.
fn shown(samples: &Samples, values: &[u64]) -> (u64, &'static str) {
    let kind = samples.kinds[samples.main];
    match kind.unit {
        "nanoseconds" => (values[samples.main] / NS_PER_MS, "ms"),
        "count" => (values[samples.main], "samples"),
        unit => (values[samples.main], unit),
    }
}

fn shown_unit(samples: &Samples) -> &'static str {
    shown(samples, &samples.totals).1
}

fn cut_note(kept: usize, of: usize) -> String {
    if kept < of {
        format!("the first {kept} of {of} rows")
    } else {
        format!("{of} rows")
    }
}

fn percent(part: u64, total: u64) -> Value {
    if total == 0 {
        return json!("");
    }
    json!(format!("{:.2}%", part as f64 * 100.0 / total as f64))
}

/// The flame graph and tables of one table of the file.
fn add_table(data: &mut Data, profile: &Profile, samples: &Samples) {
    let unit = shown_unit(samples);
    let mut tree = Tree::default();
    for sample in &samples.samples {
        tree.add(
            &Samples::root_first(sample),
            shown(samples, &sample.values).0,
            0,
        );
    }
    let title = format!("{}: flame graph ({unit})", samples.table.title());
    data.flame(title, unit, &tree, false);
    let total = shown(samples, &samples.totals).0;
    match samples.table {
        Table::Cpu | Table::Time => {
            let what = if samples.table == Table::Cpu {
                What::Cpu
            } else {
                What::Time
            };
            let mut note = format!("total {total} {unit}");
            let wall = profile.settings.is_wall_clock();
            if let Some((_, period_ns)) = samples.period.filter(|_| what == What::Cpu) {
                let seconds = total.saturating_mul(period_ns) as f64 / 1e9;
                let (each, sum) = match wall {
                    true => ("wall-clock time of every thread", "of threads' time"),
                    false => ("a thread's CPU", "of CPU"),
                };
                note.push_str(&format!(
                    ", one per {} ms of {each}: about {seconds:.1} s {sum}",
                    period_ns / NS_PER_MS
                ));
            }
            hot_methods(data, profile, what, samples.table, (total, &note), unit);
            if samples.table == Table::Cpu {
                if wall {
                    states_by_cost(data, samples, total);
                }
                threads_by_cost(data, samples, total);
            }
        }
        Table::Sites => sites(data, profile),
        Table::Monitor | Table::Lock => contention(data, samples, total),
    }
}

/// The CPU SAMPLES or CPU TIME stacks, borrowed.
fn stacks_of(profile: &Profile, what: What) -> &[profile::Weighted] {
    let table = if what == What::Cpu {
        &profile.samples
    } else {
        &profile.times
    };
    table.as_ref().map_or(&[], |t| &t.0)
}

fn hot_methods(
    data: &mut Data,
    profile: &Profile,
    what: What,
    table: Table,
    (total, total_note): (u64, &str),
    unit: &str,
) {
    let mut costs: Vec<top::MethodCost> = top::method_costs(stacks_of(profile, what))
        .into_values()
        .collect();
    costs.sort_by(|a, b| (b.self_cost, b.total, &a.method).cmp(&(a.self_cost, a.total, &b.method)));
    let of = costs.len();
    let rows = costs
        .iter()
        .take(ROWS)
        .map(|c| {
            vec![
                json!(c.method),
                json!(c.self_cost),
                percent(c.self_cost, total),
                json!(c.total),
                percent(c.total, total),
            ]
        })
        .collect();
    let title = format!("{}: hot methods ({unit}, by self)", table.title());
    let note = format!("{}; {total_note}", cut_note(ROWS.min(of), of));
    data.table(
        &title,
        note,
        &["method", "self", "self %", "total", "total %"],
        rows,
    );
}

/// cpu=wall: the samples in each thread state.
fn states_by_cost(data: &mut Data, samples: &Samples, total: u64) {
    let mut by_state = [0u64; 5];
    for sample in &samples.samples {
        let column = sample
            .state
            .and_then(|s| wall_states::STATES.iter().position(|n| *n == s));
        if let Some(column) = column {
            by_state[column] = by_state[column].saturating_add(sample.values[0]);
        }
    }
    let rows = wall_states::STATES
        .iter()
        .zip(by_state)
        .map(|(state, n)| vec![json!(format!("[{state}]")), json!(n), percent(n, total)])
        .collect();
    data.table(
        "CPU SAMPLES (wall clock): thread states",
        "each sample is one interval of one thread's wall-clock time".into(),
        &["state", "samples", "share"],
        rows,
    );
}

fn threads_by_cost(data: &mut Data, samples: &Samples, total: u64) {
    let mut by_thread: std::collections::BTreeMap<&str, u64> = Default::default();
    for sample in &samples.samples {
        if let Some(thread) = &sample.thread {
            let sum = by_thread.entry(thread).or_default();
            *sum = sum.saturating_add(sample.values[0]);
        }
    }
    if by_thread.is_empty() {
        return;
    }
    let mut rows: Vec<(&str, u64)> = by_thread.into_iter().collect();
    rows.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let of = rows.len();
    let rows = rows
        .into_iter()
        .take(ROWS)
        .map(|(t, n)| vec![json!(t), json!(n), percent(n, total)])
        .collect();
    let note = cut_note(ROWS.min(of), of);
    data.table(
        "CPU SAMPLES: threads",
        note,
        &["thread", "samples", "share"],
        rows,
    );
}

fn sites(data: &mut Data, profile: &Profile) {
    let mut sites: Vec<&profile::Site> = profile.sites.iter().flatten().collect();
    sites.sort_by_key(|s| std::cmp::Reverse(s.allocated_bytes));
    let total = profile.total(What::Alloc);
    let of = sites.len();
    let rows = sites
        .iter()
        .take(ROWS)
        .map(|s| {
            let at = s
                .frames
                .first()
                .map_or(collapse::EMPTY_TRACE, String::as_str);
            vec![
                json!(s.class),
                json!(at),
                json!(s.allocated_bytes),
                percent(s.allocated_bytes, total),
                json!(s.allocated_objects),
                json!(s.live_bytes),
                json!(s.live_objects),
            ]
        })
        .collect();
    let below_cutoff = profile
        .below_cutoff_text(What::Alloc)
        .map_or_else(String::new, |cut| format!(" ({cut}, not listed)"));
    let note = format!(
        "{}, by allocated bytes; total {total} bytes{below_cutoff}",
        cut_note(ROWS.min(of), of)
    );
    let columns = [
        "class",
        "allocated in",
        "alloc'ed bytes",
        "share",
        "alloc'ed objs",
        "live bytes",
        "live objs",
    ];
    data.table("SITES: allocation sites", note, &columns, rows);
}

fn contention(data: &mut Data, samples: &Samples, total: u64) {
    let mut rows: Vec<_> = samples.samples.iter().collect();
    rows.sort_by_key(|s| std::cmp::Reverse(s.values[1]));
    let of = rows.len();
    let rows = rows
        .iter()
        .take(ROWS)
        .map(|s| {
            let ms = s.values[1] / NS_PER_MS;
            vec![
                json!(s.monitor.unwrap_or("")),
                json!(
                    s.frames
                        .first()
                        .map_or(collapse::EMPTY_TRACE, String::as_str)
                ),
                json!(s.values[0]),
                json!(ms),
                percent(ms, total),
            ]
        })
        .collect();
    let title = format!("{}: contention", samples.table.title());
    let note = format!("{}; total {total} ms", cut_note(ROWS.min(of), of));
    let columns = ["monitor", "waiting in", "count", "delay ms", "share"];
    data.table(&title, note, &columns, rows);
}

fn heap(data: &mut Data, profile: &Profile) {
    let Some(histogram) = &profile.histogram else {
        return;
    };
    let mut classes: Vec<(&String, &profile::ClassCount)> = histogram.iter().collect();
    classes.sort_by(|a, b| b.1.bytes.cmp(&a.1.bytes).then(a.0.cmp(b.0)));
    let total = classes
        .iter()
        .fold(0u64, |s, c| s.saturating_add(c.1.bytes));
    let row = |(name, count): &(&String, &profile::ClassCount)| {
        vec![
            json!(name),
            json!(count.instances),
            json!(count.bytes),
            percent(count.bytes, total),
        ]
    };
    let columns = ["class", "instances", "shallow bytes", "share"];
    let of = classes.len();
    let rows = classes.iter().take(ROWS).map(row).collect();
    let basis = match &profile.heap_layout {
        Some(layout) => format!(" ({layout})"),
        None => String::new(),
    };
    let note = format!(
        "{}, by shallow bytes{basis}; total {total} bytes",
        cut_note(ROWS.min(of), of)
    );
    data.table("HEAP DUMP: class histogram", note, &columns, rows);
    let mut arrays: Vec<_> = classes.iter().filter(|c| c.0.ends_with("[]")).collect();
    arrays.sort_by(|a, b| b.1.largest.cmp(&a.1.largest).then(a.0.cmp(b.0)));
    let of = arrays.len();
    let rows = arrays
        .iter()
        .take(ROWS)
        .map(|(name, count)| {
            vec![
                json!(name),
                json!(count.largest),
                json!(count.instances),
                json!(count.bytes),
            ]
        })
        .collect();
    let note = format!(
        "{}: array classes by their biggest array",
        cut_note(ROWS.min(of), of)
    );
    let columns = ["array class", "biggest array bytes", "arrays", "all bytes"];
    data.table("HEAP DUMP: biggest arrays", note, &columns, rows);
}

fn threads(data: &mut Data, profile: &Profile) {
    if profile.threads.is_empty() {
        return;
    }
    let of = profile.threads.len();
    let rows = profile
        .threads
        .iter()
        .take(THREAD_ROWS)
        .map(|(serial, name)| vec![json!(serial), json!(name)])
        .collect();
    data.table(
        "Threads",
        cut_note(THREAD_ROWS.min(of), of),
        &["serial", "name"],
        rows,
    );
}

/// `diff BASE NEW`'s table and the differential flame graph.
fn differential(
    data: &mut Data,
    base_path: &std::path::Path,
    base: &Profile,
    new: &Profile,
) -> Result<(), String> {
    let what = diff::common_kind(base, new, None)?;
    let report = diff::compare(base, new, what, &[], 20);
    data.texts.push(Text {
        title: format!(
            "hprof-rs diff {} (base) against this profile",
            base_path.display()
        ),
        text: diff_output::render(&report, diff_output::DiffFormat::Text),
    });
    let mut tree = Tree::default();
    for (stack, value) in collapse::folded(new, what) {
        tree.add(&stack.split(';').collect::<Vec<_>>(), value, 0);
    }
    for (stack, value) in collapse::folded(base, what) {
        tree.add(&stack.split(';').collect::<Vec<_>>(), 0, value);
    }
    let title = format!(
        "Differential flame graph ({}; red = grew, blue = shrank)",
        what.unit()
    );
    data.flame(title, what.unit(), &tree, true);
    Ok(())
}

/// Escapes text for HTML, and breaks `//` so that no address-like string
/// (`http://`) appears in the page whatever the profile's names hold.
fn html_text(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('/', "&#47;")
}

/// The data as JSON that is safe inside `<script>`: no `<` (so no
/// `</script>`) and no `//`, both written as JSON escapes.
fn script_json(data: &Data) -> String {
    let text = serde_json::to_string(data).expect("plain data serializes");
    text.replace('<', "\\u003c").replace('/', "\\/")
}

/// The whole page for `data`: the template's `{{NAME}}` places filled in
/// one pass, so nothing filled in is ever read as a place.
fn page(data: &Data) -> String {
    let fills = [
        ("{{TITLE}}", html_text(&data.title)),
        ("{{STYLE}}", STYLE.to_owned()),
        ("{{SCRIPT}}", SCRIPT.to_owned()),
        ("{{DATA}}", script_json(data)),
    ];
    let mut out = String::with_capacity(PAGE.len());
    let mut rest = PAGE;
    while let Some(at) = rest.find("{{") {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        match fills.iter().find(|(key, _)| rest.starts_with(key)) {
            Some((key, value)) => {
                out.push_str(value);
                rest = &rest[key.len()..];
            }
            None => {
                out.push_str("{{");
                rest = &rest[2..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// Builds the page of `profile` (and of its difference from `base`).
fn build(args: &ReportArgs, profile: &Profile, base: Option<&Profile>) -> Result<String, String> {
    let mut data = Data {
        title: format!("hprof-rs report: {}", args.file.display()),
        header: profile.header.clone(),
        options: profile.options(),
        ..Data::default()
    };
    if let (Some(base), Some(path)) = (base, &args.diff) {
        differential(&mut data, path, base, profile)?;
    }
    let interval = args.interval.unwrap_or_else(|| profile.interval_ms());
    for table in sample_table::available(profile) {
        let samples = sample_table::samples(profile, table, interval);
        add_table(&mut data, profile, &samples);
    }
    heap(&mut data, profile);
    threads(&mut data, profile);
    if data.flames.is_empty() && data.tables.is_empty() {
        return Err(
            "the profile holds no CPU, SITES, MONITOR TIME, LOCK TIME or heap dump data".into(),
        );
    }
    Ok(page(&data))
}

/// Runs `report`; the error is the one line to print.
pub fn report(args: &ReportArgs) -> Result<(), String> {
    let profile = profile::read_file(&args.file).map_err(|e| e.0)?;
    let base = match &args.diff {
        Some(path) => Some(profile::read_file(path).map_err(|e| e.0)?),
        None => None,
    };
    let page = build(args, &profile, base.as_ref())?;
    let mut out = output_file::create_buffered(&args.output)?;
    out.write_all(page.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|e| format!("{}: {e}", args.output.display()))
}

/// The page of an in-memory profile, for tests and fuzzing.
pub fn page_of(profile: &Profile) -> Result<String, String> {
    let args = ReportArgs {
        file: PathBuf::from("profile"),
        output: PathBuf::new(),
        diff: None,
        interval: None,
    };
    build(&args, profile, None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::{ClassCount, Weighted};
    use std::collections::HashMap;

    /// A profile whose names try to end the script, put an address in the
    /// page and fill the template's places.
    fn hostile() -> Profile {
        let stack = Weighted {
            frames: vec![
                "</script><img src=x>.m".into(),
                "http://example.invalid/{{DATA}}.main".into(),
            ],
            class: None,
            value: 5,
            trace: 1,
            calls: 0,
        };
        let mut histogram = HashMap::new();
        histogram.insert("https://x/{{SCRIPT}}[]".to_owned(), ClassCount::default());
        Profile {
            header: "JAVA PROFILE 1.0.1, created <b>".into(),
            samples: Some((vec![stack], 5)),
            histogram: Some(histogram),
            ..Profile::default()
        }
    }

    #[test]
    fn names_cannot_end_the_script_or_put_an_address_in_the_page() {
        let page = page_of(&hostile()).unwrap();
        assert!(!page.contains("http://") && !page.contains("https://"));
        assert!(!page.contains("</script><img"));
        assert_eq!(
            page.matches("</script>").count(),
            2,
            "the page's own two scripts"
        );
        // Filled in one pass: the names' places are left as text.
        assert_eq!(page.matches(SCRIPT).count(), 1);
        assert_eq!(page.matches("type=\"application/json\"").count(), 1);
        // The names are still there, as JSON escapes the browser decodes.
        assert!(page.contains(r"\u003c\/script>\u003cimg src=x>.m"));
        let json_start = page.find("id=\"data\">").unwrap() + "id=\"data\">".len();
        let json_end = json_start + page[json_start..].find("</script>").unwrap();
        let data: serde_json::Value = serde_json::from_str(&page[json_start..json_end]).unwrap();
        let names: Vec<&str> = data["names"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n.as_str().unwrap())
            .collect();
        assert!(
            names.contains(&"http://example.invalid/{{DATA}}.main"),
            "{names:?}"
        );
    }

    #[test]
    fn a_profile_without_tables_is_an_error() {
        assert!(page_of(&Profile::default()).is_err());
    }
}
