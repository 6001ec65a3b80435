//! `hprof-rs diff` as a CI gate on real runs of `java-fixtures/Temp.java`,
//! whose per-call allocation is short-lived beside 100 MB kept live: the
//! totals a gate compares include the sites HPROF's cutoff leaves out of
//! SITES (the file states them in SITES TOTALS, or in ALLOC SITES), and the
//! report prints as text, Markdown, JUnit XML and JSON.

mod common;

use common::{AsciiProfile, site_totals};
use hprof_rs::format::ascii::SiteCounts;
use serde_json::Value;
use std::fs;
use std::path::Path;
use std::process::{Command, Output};

/// Temp's calls, each making one byte[SIZE] in `temp()`.
const CALLS: u64 = 1_000_000;
/// A byte[100] and a byte[200] with compressed class pointers (every heap
/// here is below 32 GB): 16 bytes of header, then the elements, to 8.
const SMALL: u64 = 120;
const LARGE: u64 = 216;
/// Temp's 100 long[125000] made in `keep()` and kept live.
const KEPT: u64 = 100;
const KEPT_BYTES: u64 = KEPT * 1_000_016;
/// The threshold every run here crosses, and one it stays within.
const ALLOC_GATE: &str = "alloc.total > +10%";
const OBJECTS_GATE: &str = "alloc.objects > +10%";
/// The longest line `diff` prints as text or Markdown: a change, then a
/// stack of at most 100 characters.
const LINE_BOUND: usize = 240;

fn tool(args: &[&str], files: &[&Path]) -> Output {
    common::run(Command::new(common::hprof_rs_bin()).args(args).args(files))
}

fn json_of(out: &Output) -> Value {
    serde_json::from_str(&common::stdout_text(out)).expect("JSON")
}

/// The listed SITES rows of `file` summed (allocated objects, live
/// objects, allocated bytes, live bytes).
fn listed(file: &AsciiProfile) -> (u64, u64, u64, u64) {
    site_totals(&file.site_rows().iter().collect::<Vec<_>>())
}

/// Under the default options, the temp() site is not a SITES row; the
/// file's SITES TOTALS count it; `diff`'s `alloc.total` gate compares those
/// totals and fails on the change from byte[100] to byte[200], which the
/// listed rows do not show at all.
#[test]
fn alloc_total_gate_counts_what_the_cutoff_leaves_out() {
    common::on_each(&common::jdks(), |jdk| {
        let label = &jdk.label;
        let dir = common::scratch_dir(&format!("ci-gates-totals-{label}"));
        let base = common::profile_to_file(jdk, &dir, "heap=sites", "base.txt", &["Temp", "100"]);
        let new = common::profile_to_file(jdk, &dir, "heap=sites", "new.txt", &["Temp", "200"]);
        let mut stated = Vec::new();
        for (path, size) in [(&base, SMALL), (&new, LARGE)] {
            let file = AsciiProfile::read(path);
            let what = format!("{label} {}", path.display());
            assert!(
                file.sites_of_class_via("byte[]", "Temp.temp").is_empty(),
                "{what}: the temp() site is below the cutoff"
            );
            let kept = site_totals(&file.sites_of_class_via("long[]", "Temp.keep"));
            assert_eq!((kept.0, kept.2), (KEPT, KEPT_BYTES), "{what}: keep()");
            let totals = *file.sites_totals();
            let (objects, _, bytes, _) = listed(&file);
            let rows = file.site_rows().len() as u64;
            let cut = totals.below_cutoff;
            assert_eq!(
                (totals.all.rows, totals.all.allocated_objects),
                (rows + cut.rows, objects + cut.allocated_objects),
                "{what}: every site = the rows + those below the cutoff"
            );
            assert_eq!(totals.all.allocated_bytes, bytes + cut.allocated_bytes);
            assert!(
                cut.allocated_objects >= CALLS && cut.allocated_bytes >= CALLS * size,
                "{what}: {cut:?} holds the temp() site"
            );
            stated.push(totals);
        }
        let (b, n) = (stated[0], stated[1]);

        let out = tool(
            &[
                "diff",
                "--json",
                "--fail-if",
                ALLOC_GATE,
                "--fail-if",
                OBJECTS_GATE,
            ],
            &[&base, &new],
        );
        common::assert_exit_code(&out, 1, &format!("{label}: {ALLOC_GATE}"));
        let report = json_of(&out);
        let totals = (b.all.allocated_bytes, n.all.allocated_bytes);
        assert_eq!(report["total"]["base"], totals.0, "{label}: {report}");
        assert_eq!(report["total"]["new"], totals.1, "{label}: {report}");
        assert!(
            totals.0 >= CALLS * SMALL + KEPT_BYTES,
            "{label}: {totals:?}"
        );
        assert!(
            totals.1 >= CALLS * LARGE + KEPT_BYTES,
            "{label}: {totals:?}"
        );
        // Everything else Temp and the JVM allocate is the same in both runs
        // to far better than 1%.
        let grew = report["total"]["change"].as_i64().unwrap() as f64;
        let made = (CALLS * (LARGE - SMALL)) as f64;
        assert!((grew - made).abs() < made / 100.0, "{label}: {report}");
        let gate = &report["thresholds"][0];
        assert_eq!(gate["expression"], ALLOC_GATE);
        assert_eq!(
            (&gate["base"], &gate["new"]),
            (&totals.0.into(), &totals.1.into())
        );
        assert_eq!(gate["failed"], true, "{label}: {report}");
        let objects = &report["thresholds"][1];
        assert_eq!(
            objects["base"], b.all.allocated_objects,
            "{label}: {report}"
        );
        assert_eq!(objects["new"], n.all.allocated_objects, "{label}: {report}");
        assert_eq!(objects["failed"], false, "{label}: {report}");
        assert_eq!(report["base_below_cutoff"]["rows"], b.below_cutoff.rows);
        assert_eq!(
            report["new_below_cutoff"]["allocated_bytes"],
            n.below_cutoff.allocated_bytes
        );
        let cut_stack = &report["stacks"][0];
        assert_eq!(
            cut_stack["name"], "[rows below the cutoff]",
            "{label}: {report}"
        );
        assert_eq!(
            (&cut_stack["base"], &cut_stack["new"]),
            (
                &b.below_cutoff.allocated_bytes.into(),
                &n.below_cutoff.allocated_bytes.into()
            )
        );

        // The text a CI log shows names the true totals and what was cut.
        let out = tool(&["diff", "--fail-if", ALLOC_GATE], &[&base, &new]);
        common::assert_exit_code(&out, 1, &format!("{label}: text"));
        let text = common::stdout_text(&out);
        let failed = format!("FAILED {ALLOC_GATE}: ");
        let line = text.lines().find(|l| l.contains(&failed)).expect(&text);
        assert!(
            line.ends_with(&format!(": {} -> {}", totals.0, totals.1)),
            "{label}: {text}"
        );
        let cut = format!(
            "base: {} rows below the cutoff, {} bytes",
            b.below_cutoff.rows, b.below_cutoff.allocated_bytes
        );
        assert!(text.contains(&cut), "{label}: {text}");

        // top's total is the file's too.
        let top = json_of(&tool(
            &["top", "--json", "--what", "alloc-objects"],
            &[&base],
        ));
        assert_eq!(top["total"], b.all.allocated_objects, "{label}: {top}");
        assert_eq!(
            top["below_cutoff"]["rows"], b.below_cutoff.rows,
            "{label}: {top}"
        );
    });
}

/// One diff on one JDK in each of `diff`'s formats: deep stacks (depth=40)
/// shortened in text and Markdown, whole in JSON; a table row per
/// threshold in Markdown; JUnit XML that Python's parser reads, with a
/// failure element for the threshold crossed only. The base is ASCII with
/// cutoff=0 (the temp() site exact), the new run binary with the default
/// cutoff (its totals those of ALLOC SITES).
#[test]
fn diff_prints_text_markdown_junit_and_json_for_ci() {
    let jdk = common::jdk_preferring(21);
    let label = &jdk.label;
    let dir = common::scratch_dir(&format!("ci-gates-formats-{label}"));
    let options = "heap=sites,depth=40";
    let base = common::profile_to_file(
        &jdk,
        &dir,
        &format!("{options},cutoff=0"),
        "base.txt",
        &["Temp", "100"],
    );
    let new = common::profile_to_file(
        &jdk,
        &dir,
        &format!("{options},format=b"),
        "new.hprof",
        &["Temp", "200"],
    );
    let file = AsciiProfile::read(&base);
    let temp = site_totals(&file.sites_of_class_via("byte[]", "Temp.temp"));
    assert_eq!((temp.0, temp.2), (CALLS, CALLS * SMALL), "{label}: temp()");
    let totals = *file.sites_totals();
    assert_eq!(totals.below_cutoff, SiteCounts::default(), "{label}");
    assert_eq!(totals.all.allocated_bytes, listed(&file).2, "{label}");
    let (new_total, new_listed) = common::alloc_sites_bytes(&new);
    assert!(
        new_listed + CALLS * LARGE <= new_total,
        "{label}: the new run's temp() site is below the cutoff"
    );

    let gates = ["--fail-if", ALLOC_GATE, "--fail-if", OBJECTS_GATE];
    let diff = |format: &str| {
        let mut args = vec!["diff", "--format", format];
        args.extend(gates);
        let out = tool(&args, &[&base, &new]);
        common::assert_exit_code(&out, 1, &format!("{label}: diff --format {format}"));
        common::stdout_text(&out)
    };

    let json = diff("json");
    let report: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(report["total"]["base"], totals.all.allocated_bytes);
    assert_eq!(report["total"]["new"], new_total, "{label}: {report}");
    assert_eq!(report["new_below_cutoff"]["rows"], Value::Null);
    assert_eq!(
        report["new_below_cutoff"]["allocated_bytes"],
        new_total - new_listed
    );
    let deep = report["stacks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .find(|s| s.ends_with(";Temp.temp;byte[]"))
        .unwrap_or_else(|| panic!("{label}: no temp() stack: {report}"));
    assert!(
        deep.starts_with("Temp.main;") && deep.matches(";Temp.level;").count() >= 10,
        "{label}: JSON keeps the whole stack: {deep}"
    );
    let mut alias = vec!["diff", "--json"];
    alias.extend(gates);
    let out = tool(&alias, &[&base, &new]);
    assert_eq!(common::stdout_text(&out), json, "--json is --format json");

    let text = diff("text");
    assert_lines_within_bound(&text, "text");
    let short = text
        .lines()
        .find(|l| l.ends_with(";Temp.temp;byte[]"))
        .unwrap_or_else(|| panic!("{label}: no temp() stack:\n{text}"));
    assert!(
        short.contains(";... ") && short.contains(" frames ...;"),
        "{short}"
    );
    assert!(text.contains(&format!("FAILED {ALLOC_GATE}:")), "{text}");
    assert!(text.contains(&format!("ok     {OBJECTS_GATE}:")), "{text}");

    let md = diff("md");
    assert_lines_within_bound(&md, "md");
    assert!(
        md.starts_with("### hprof-rs diff (alloc): **FAILED** (1 of 2"),
        "{md}"
    );
    let gate_rows: Vec<&str> = md.lines().filter(|l| l.starts_with("| `alloc.")).collect();
    assert_eq!(gate_rows.len(), 2, "{md}");
    assert!(
        gate_rows[0].starts_with(&format!("| `{ALLOC_GATE}` | **FAILED** |")),
        "{md}"
    );
    assert!(
        gate_rows[1].starts_with(&format!("| `{OBJECTS_GATE}` | ok |")),
        "{md}"
    );
    assert!(
        md.lines()
            .any(|l| l.starts_with("| ") && l.ends_with(";Temp.temp;byte[]` |")),
        "{md}"
    );

    let junit = diff("junit");
    let cases = junit_cases(&junit, &dir);
    assert_eq!(
        cases,
        [
            "suite tests=2 failures=1".to_owned(),
            format!("case {ALLOC_GATE} failure"),
            format!("case {OBJECTS_GATE} passed"),
        ],
        "{junit}"
    );
}

fn assert_lines_within_bound(text: &str, format: &str) {
    for line in text.lines() {
        assert!(
            line.chars().count() <= LINE_BOUND,
            "{format}: a line of {} characters: {line}",
            line.chars().count()
        );
    }
}

/// The JUnit document read by Python's XML parser: `suite tests=N
/// failures=F`, then `case NAME failure|passed` per test case.
fn junit_cases(xml: &str, dir: &Path) -> Vec<String> {
    let path = dir.join("junit.xml");
    fs::write(&path, xml).unwrap();
    let script = "\
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
assert root.tag == 'testsuites', root.tag
suites = root.findall('testsuite')
assert len(suites) == 1, suites
suite = suites[0]
print('suite tests=%s failures=%s' % (suite.get('tests'), suite.get('failures')))
for case in suite.findall('testcase'):
    failed = case.find('failure') is not None
    print('case %s %s' % (case.get('name'), 'failure' if failed else 'passed'))
";
    let out = common::run(Command::new("python3").args(["-c", script]).arg(&path));
    common::assert_success(&out, "python3's XML parser on diff --format junit");
    common::stdout_text(&out)
        .lines()
        .map(str::to_owned)
        .collect()
}
