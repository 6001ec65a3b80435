//! `hprof-rs convert` and `hprof-rs report` on real agent output (JDK 17
//! and 25): `go tool pprof` reads the converted CPU SAMPLES, CPU TIME,
//! SITES, MONITOR TIME and LOCK TIME and finds the file's own totals and
//! hot method; the speedscope file has its schema's required fields and
//! weighs what the file counts; headless Chromium draws the HTML report
//! with the hot method, the top allocation site and the heap's top class.
//! Expected numbers are read from the files with the format crate's
//! readers, not with the tool's profile model. `go` and `chromium` come
//! from scripts/setup.sh.

mod common;

use common::AsciiProfile;
use common::profile_to_file as profile;
use hprof_rs::format::ascii::{HeapEntry, MonitorTimeRow, Section};
use hprof_rs::format::binary::RecordBody;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

const JDKS: [u32; 2] = [17, 25];
const NS_PER_MS: u64 = 1_000_000;

/// CpuHot (hot-a does three times hot-b's work) under cpu=samples,thread=y.
fn cpu_hot_by_thread(jdk: &common::Jdk, dir: &Path) -> PathBuf {
    profile(
        jdk,
        dir,
        "cpu=samples,thread=y",
        "cpu.txt",
        &["CpuHot", "4"],
    )
}

/// AllocSites under heap=sites (ASCII).
fn alloc_sites(jdk: &common::Jdk, dir: &Path) -> PathBuf {
    profile(jdk, dir, "heap=sites", "sites.txt", &["AllocSites"])
}

fn hprof_rs(args: &[&str]) {
    let mut cmd = Command::new(common::hprof_rs_bin());
    cmd.args(args);
    common::assert_success(&common::run(&mut cmd), &format!("hprof-rs {args:?}"));
}

/// Converts `file`'s table `what` to pprof; returns the .pb.gz path.
fn to_pprof(file: &Path, what: &str) -> PathBuf {
    let out = file.with_extension(format!("{what}.pb.gz"));
    hprof_rs(&[
        "convert",
        path(file),
        "--to",
        "pprof",
        "--what",
        what,
        "-o",
        path(&out),
    ]);
    out
}

fn path(p: &Path) -> &str {
    p.to_str().expect("UTF-8 scratch paths")
}

/// `go tool pprof`, failing clearly when setup.sh has not been run.
fn go_pprof(args: &[&str], file: &Path) -> String {
    let mut cmd = Command::new("go");
    cmd.args(["tool", "pprof"]).args(args).arg(file);
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run go (Debian golang-go; run scripts/setup.sh): {e}"));
    common::assert_success(&out, &format!("go tool pprof {args:?} {}", file.display()));
    common::stdout_text(&out)
}

/// What `go tool pprof -top` shows for one sample index: the total (after
/// `of`, unit letters dropped) and the rows' names by flat value.
struct Top {
    total: u64,
    names: Vec<String>,
}

fn pprof_top(file: &Path, index: &str, unit: Option<&str>) -> Top {
    let mut args = vec!["-top".to_owned(), format!("-sample_index={index}")];
    if let Some(unit) = unit {
        args.push(format!("-unit={unit}"));
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let text = go_pprof(&args, file);
    let summary = text
        .lines()
        .find(|l| l.starts_with("Showing nodes accounting for"))
        .unwrap_or_else(|| panic!("no summary line: {text}"));
    let total = summary
        .split(" of ")
        .nth(1)
        .and_then(|t| t.split_whitespace().next())
        .map(|t| t.trim_end_matches(|c: char| c.is_ascii_alphabetic()))
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("no total in {summary:?}"));
    let names = text
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("flat"))
        .skip(1)
        .filter_map(|l| l.split_whitespace().nth(5).map(str::to_owned))
        .collect();
    Top { total, names }
}

fn ascii(path: &Path) -> AsciiProfile {
    AsciiProfile::read_whole_file(path)
}

/// The innermost frame (`class.method`) of a trace, from the file.
fn top_frame(profile: &AsciiProfile, serial: u32) -> String {
    profile.frames(serial).first().cloned().unwrap_or_default()
}

/// The method with the largest summed value over rows, by innermost frame.
fn heaviest(rows: impl Iterator<Item = (String, f64)>) -> String {
    let mut by_method: HashMap<String, f64> = HashMap::new();
    for (method, value) in rows {
        *by_method.entry(method).or_default() += value;
    }
    by_method
        .into_iter()
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(m, _)| m)
        .expect("rows")
}

#[test]
fn pprof_reads_cpu_samples_with_the_files_totals_threads_and_hot_method() {
    common::on_each(&common::jdks_of(&JDKS), |jdk| {
        let label = &jdk.label;
        let dir = common::scratch_dir(&format!("convert-cpu-{label}"));
        let text = cpu_hot_by_thread(jdk, &dir);
        let cpu = ascii(&text).last_cpu().expect("CPU SAMPLES").clone();
        assert!(cpu.total > 20, "{label}: only {} samples", cpu.total);
        let pb = to_pprof(&text, "cpu");
        let samples = pprof_top(&pb, "samples", None);
        assert_eq!(samples.total, cpu.total, "{label}: samples");
        assert_eq!(samples.names[0], "CpuHot.hotA", "{label}: hot method first");
        let ns = pprof_top(&pb, "cpu", Some("ns"));
        assert_eq!(
            ns.total,
            cpu.total * 10 * NS_PER_MS,
            "{label}: cpu ns at 10 ms"
        );
        let tags = go_pprof(&["-tags"], &pb);
        assert!(
            tags.contains("hot-a") && tags.contains("hot-b"),
            "{label}: {tags}"
        );
        let raw = go_pprof(&["-raw"], &pb);
        assert!(
            raw.contains("CpuHot.hotA CpuHot.java:"),
            "{label}: no file and line: {raw}"
        );

        // Sampled every 7 ms: the file says so, and pprof's nanoseconds follow.
        let binary = profile(
            jdk,
            &dir,
            "cpu=samples,thread=y,format=b,interval=7",
            "cpu.hprof",
            &["CpuHot", "4"],
        );
        let parsed = hprof_rs::format::binary::reader::parse(&fs::read(&binary).unwrap()).unwrap();
        let total = parsed
            .records
            .iter()
            .rev()
            .find_map(|r| match &r.body {
                RecordBody::CpuSamples { total, .. } => Some(u64::from(*total)),
                _ => None,
            })
            .expect("a CPU SAMPLES record");
        let samples = pprof_top(&to_pprof(&binary, "cpu"), "samples", None);
        assert_eq!(samples.total, total, "{label}: binary samples");
        let ns = pprof_top(&to_pprof(&binary, "cpu"), "cpu", Some("ns"));
        assert_eq!(
            ns.total,
            total * 7 * NS_PER_MS,
            "{label}: cpu ns at the file's 7 ms"
        );
        assert_eq!(
            samples.names[0], "CpuHot.hotA",
            "{label}: binary hot method"
        );
        let tags = go_pprof(&["-tags"], &to_pprof(&binary, "cpu"));
        assert!(
            tags.contains("hot-a") && tags.contains("hot-b"),
            "{label}: binary threads: {tags}"
        );
    });
}

#[test]
fn pprof_reads_cpu_times_with_the_files_total_and_calls() {
    common::on_each(&common::jdks_of(&JDKS), |jdk| {
        let label = &jdk.label;
        let dir = common::scratch_dir(&format!("convert-times-{label}"));
        let text = profile(
            jdk,
            &dir,
            "cpu=times,timing=calls,cutoff=0",
            "times.txt",
            &["TimedCalls"],
        );
        let file = ascii(&text);
        let cpu = file.last_cpu().expect("CPU TIME").clone();
        let pb = to_pprof(&text, "time");
        let time = pprof_top(&pb, "time", Some("ns"));
        assert_eq!(time.total, cpu.total * NS_PER_MS, "{label}: CPU TIME total");
        let calls = pprof_top(&pb, "calls", None);
        assert_eq!(
            calls.total,
            cpu.rows.iter().map(|r| r.count).sum::<u64>(),
            "{label}: calls"
        );
        let expected = heaviest(
            cpu.rows
                .iter()
                .map(|r| (top_frame(&file, r.trace_serial), r.self_percent)),
        );
        assert_eq!(time.names[0], expected, "{label}: hot method first");
        assert_eq!(expected, "TimedCalls.nap", "{label}: the sleeper");
    });
}

#[test]
fn pprof_reads_sites_with_the_four_totals_of_the_file() {
    common::on_each(&common::jdks_of(&JDKS), |jdk| {
        let label = &jdk.label;
        let dir = common::scratch_dir(&format!("convert-sites-{label}"));
        let text = alloc_sites(jdk, &dir);
        let file = ascii(&text);
        let rows = file.site_rows();
        // The file's totals: every site, the rows below the cutoff included.
        let all = file.sites_totals().all;
        let pb = to_pprof(&text, "sites");
        let checks: [(&str, Option<&str>, u64); 4] = [
            ("alloc_objects", None, all.allocated_objects),
            ("alloc_space", Some("B"), all.allocated_bytes),
            ("inuse_objects", None, all.live_objects),
            ("inuse_space", Some("B"), all.live_bytes),
        ];
        for (index, unit, expected) in checks {
            assert_eq!(
                pprof_top(&pb, index, unit).total,
                expected,
                "{label}: {index}"
            );
        }
        let biggest = rows.iter().max_by_key(|r| r.allocated_bytes).unwrap();
        let top = pprof_top(&pb, "alloc_space", Some("B"));
        assert_eq!(
            top.names[0], biggest.class_name,
            "{label}: top allocated class first"
        );
        assert_eq!(biggest.class_name, "int[]", "{label}");

        let binary = profile(
            jdk,
            &dir,
            "heap=sites,format=b",
            "sites.hprof",
            &["AllocSites"],
        );
        let (bytes, _) = common::alloc_sites_bytes(&binary);
        let top = pprof_top(&to_pprof(&binary, "sites"), "alloc_space", Some("B"));
        assert_eq!(top.total, bytes, "{label}: binary alloc_space");
        assert_eq!(top.names[0], "int[]", "{label}: binary top class");
    });
}

/// The MONITOR TIME or LOCK TIME table of a file, and its total.
fn contention_table(file: &AsciiProfile, lock: bool) -> (u64, Vec<MonitorTimeRow>) {
    file.sections
        .iter()
        .rev()
        .find_map(|s| match s {
            Section::MonitorTime { total_ms, rows, .. } if !lock => Some((*total_ms, rows.clone())),
            Section::LockTime { total_ms, rows, .. } if lock => Some((*total_ms, rows.clone())),
            _ => None,
        })
        .expect("a contention table")
}

#[test]
fn pprof_reads_monitor_and_lock_contention_with_the_files_totals() {
    common::on_each(&common::jdks_of(&JDKS), |jdk| {
        let label = &jdk.label;
        let dir = common::scratch_dir(&format!("convert-monitor-{label}"));
        let runs = [
            ("monitor", "mon.txt", vec!["Contention", "20"]),
            ("lock", "lock.txt", vec!["LockContention", "reentrant"]),
        ];
        for (what, name, args) in runs {
            let text = profile(jdk, &dir, "monitor=y", name, &args);
            let file = ascii(&text);
            let (total_ms, rows) = contention_table(&file, what == "lock");
            assert!(total_ms > 0, "{label}: {what}: no contention");
            let pb = to_pprof(&text, what);
            let delay = pprof_top(&pb, "delay", Some("ns"));
            assert_eq!(delay.total, total_ms * NS_PER_MS, "{label}: {what} delay");
            let count = pprof_top(&pb, "contentions", None);
            assert_eq!(
                count.total,
                rows.iter().map(|r| r.count).sum::<u64>(),
                "{label}: {what}"
            );
            let expected = heaviest(
                rows.iter()
                    .map(|r| (top_frame(&file, r.trace_serial), r.self_percent)),
            );
            assert_eq!(
                delay.names[0], expected,
                "{label}: {what}: hot method first"
            );
            let (sum, _) = check_speedscope(&speedscope(&text, what), label);
            assert_eq!(
                sum,
                total_ms * NS_PER_MS,
                "{label}: {what}: speedscope delay"
            );
        }
    });
}

const SPEEDSCOPE_UNITS: [&str; 6] = [
    "none",
    "nanoseconds",
    "microseconds",
    "milliseconds",
    "seconds",
    "bytes",
];

/// Checks the fields speedscope's schema requires; returns the weights'
/// sum and the profiles' names.
fn check_speedscope(json: &Value, what: &str) -> (u64, Vec<String>) {
    assert_eq!(
        json["$schema"], "https://www.speedscope.app/file-format-schema.json",
        "{what}"
    );
    let frames = json["shared"]["frames"].as_array().expect("shared.frames");
    assert!(
        frames.iter().all(|f| f["name"].is_string()),
        "{what}: frame names"
    );
    let profiles = json["profiles"].as_array().expect("profiles");
    assert!(!profiles.is_empty(), "{what}");
    let mut sum = 0;
    let mut names = Vec::new();
    for p in profiles {
        assert_eq!(p["type"], "sampled", "{what}");
        names.push(p["name"].as_str().expect("name").to_owned());
        assert!(
            SPEEDSCOPE_UNITS.contains(&p["unit"].as_str().expect("unit")),
            "{what}"
        );
        let (start, end) = (
            p["startValue"].as_u64().unwrap(),
            p["endValue"].as_u64().unwrap(),
        );
        let samples = p["samples"].as_array().expect("samples");
        let weights: Vec<u64> = p["weights"]
            .as_array()
            .expect("weights")
            .iter()
            .map(|w| w.as_u64().unwrap())
            .collect();
        assert_eq!(samples.len(), weights.len(), "{what}");
        for stack in samples {
            for i in stack.as_array().expect("a stack") {
                assert!(
                    (i.as_u64().unwrap() as usize) < frames.len(),
                    "{what}: frame index"
                );
            }
        }
        let weight: u64 = weights.iter().sum();
        assert_eq!(end - start, weight, "{what}: endValue - startValue");
        sum += weight;
    }
    (sum, names)
}

fn speedscope(file: &Path, what: &str) -> Value {
    let out = file.with_extension(format!("{what}.speedscope.json"));
    hprof_rs(&[
        "convert",
        path(file),
        "--to",
        "speedscope",
        "--what",
        what,
        "-o",
        path(&out),
    ]);
    serde_json::from_slice(&fs::read(&out).unwrap()).expect("JSON")
}

#[test]
fn speedscope_has_the_schemas_fields_a_profile_per_thread_and_the_files_totals() {
    common::on_each(&common::jdks_of(&JDKS), |jdk| {
        let label = &jdk.label;
        let dir = common::scratch_dir(&format!("convert-speedscope-{label}"));
        let text = cpu_hot_by_thread(jdk, &dir);
        let total = ascii(&text).last_cpu().unwrap().total;
        let (sum, names) = check_speedscope(&speedscope(&text, "cpu"), label);
        assert_eq!(sum, total, "{label}: weights against the file's total");
        assert!(
            names.iter().any(|n| n.contains("hot-a")),
            "{label}: {names:?}"
        );
        assert!(
            names.iter().any(|n| n.contains("hot-b")),
            "{label}: {names:?}"
        );

        let sites = alloc_sites(jdk, &dir);
        let bytes = ascii(&sites).sites_totals().all.allocated_bytes;
        let (sum, names) = check_speedscope(&speedscope(&sites, "sites"), label);
        assert_eq!(sum, bytes, "{label}: allocated bytes");
        assert_eq!(names.len(), 1, "{label}: one profile without thread=y");
    });
}

/// Headless Chromium: the DOM after the page's script ran, and a screenshot.
fn chromium(page: &Path, dir: &Path) -> String {
    chromium_at(page, "", dir)
}

/// [`chromium`] with `fragment` (`#search=...`) after the page's address.
fn chromium_at(page: &Path, fragment: &str, dir: &Path) -> String {
    let url = format!("file://{}{fragment}", page.display());
    let run = |extra: &[&str]| {
        let mut cmd = Command::new("chromium");
        cmd.args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--virtual-time-budget=5000",
        ])
        .arg(format!(
            "--user-data-dir={}",
            dir.join("chromium-profile").display()
        ))
        .args(extra)
        .arg(&url);
        let out = cmd.output().unwrap_or_else(|e| {
            panic!("cannot run chromium (Debian chromium; run scripts/setup.sh): {e}")
        });
        common::assert_success(&out, &format!("chromium {extra:?}"));
        out
    };
    let shot = page.with_extension("png");
    run(&[
        "--window-size=1280,1000",
        &format!("--screenshot={}", shot.display()),
    ]);
    let png = fs::read(&shot).expect("a screenshot");
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 10_000,
        "{}: screenshot",
        shot.display()
    );
    common::stdout_text(&run(&["--dump-dom"]))
}

/// The first cell of the first row of the table under the heading `title`.
fn first_cell(dom: &str, title: &str) -> String {
    let at = dom
        .find(&format!(">{title}</h2>"))
        .unwrap_or_else(|| panic!("no {title:?} in {dom}"));
    let cell = &dom[at..];
    let start = cell.find("<td class=\"name\">").expect("a row") + "<td class=\"name\">".len();
    cell[start..start + cell[start..].find("</td>").unwrap()].to_owned()
}

fn report(file: &Path, extra: &[&str]) -> (PathBuf, String) {
    let out = file.with_extension("html");
    let mut args = vec!["report", path(file), "-o", path(&out)];
    args.extend_from_slice(extra);
    hprof_rs(&args);
    let page = fs::read_to_string(&out).unwrap();
    assert!(
        !page.contains("http://") && !page.contains("https://"),
        "{}: an address",
        out.display()
    );
    assert!(
        !page.contains("<link") && !page.contains(" src="),
        "{}: an outside resource",
        out.display()
    );
    (out, page)
}

#[test]
fn chromium_draws_the_report_with_hot_method_top_site_and_top_class() {
    common::on_each(&common::jdks_of(&JDKS), |jdk| {
        let label = &jdk.label;
        let dir = common::scratch_dir(&format!("report-{label}"));
        let cpu = cpu_hot_by_thread(jdk, &dir);
        let (page, _) = report(&cpu, &[]);
        let dom = chromium(&page, &dir);
        assert_eq!(
            first_cell(&dom, "CPU SAMPLES: hot methods (samples, by self)"),
            "CpuHot.hotA",
            "{label}"
        );
        assert!(
            dom.contains("class=\"frame\"") && dom.contains(">CpuHot.hotA</div>"),
            "{label}: flame graph"
        );
        // Search marks hotB's box and gives its share; zoom makes hotB's
        // caller the graph's full-width top box.
        let dom = chromium_at(&page, "#search=hotB&zoom=CpuHot.lambda%24main%244", &dir);
        assert!(
            dom.contains("class=\"frame hit\"") && dom.contains("matched: "),
            "{label}: search"
        );
        let top_box = dom.split("<div class=\"frame").nth(1).expect("a box");
        assert!(
            top_box.contains("left: 0%; width: 100%") && top_box.contains(">CpuHot.lambda$main$4<"),
            "{label}: zoom: {top_box}"
        );

        let sites = alloc_sites(jdk, &dir);
        let file = ascii(&sites);
        let biggest = file
            .site_rows()
            .iter()
            .max_by_key(|r| r.allocated_bytes)
            .unwrap();
        let (page, _) = report(&sites, &[]);
        let dom = chromium(&page, &dir);
        assert_eq!(
            first_cell(&dom, "SITES: allocation sites"),
            biggest.class_name,
            "{label}"
        );
        let site = &file.frames(biggest.trace_serial)[0];
        assert!(
            dom.contains(&format!("<td>{site}</td>")),
            "{label}: allocated in {site}"
        );

        let dump = profile(jdk, &dir, "heap=dump", "dump.txt", &["HeapGraph", "0"]);
        let mut bytes: BTreeMap<String, u64> = BTreeMap::new();
        for heap in ascii(&dump).heap_dumps() {
            for (class, size) in heap.entries.iter().filter_map(HeapEntry::class_and_size) {
                *bytes.entry(class.to_owned()).or_default() += size;
            }
        }
        let top_class = bytes
            .iter()
            .max_by_key(|(_, b)| **b)
            .map(|(c, _)| c.clone())
            .unwrap();
        let (page, _) = report(&dump, &[]);
        let dom = chromium(&page, &dir);
        assert_eq!(
            first_cell(&dom, "HEAP DUMP: class histogram"),
            top_class,
            "{label}"
        );
    });
}

/// The class with the most shallow bytes in a binary heap dump, read with
/// the format crate's whole-file parser and sized for HotSpot's usual
/// layout (12-byte headers, 16-byte array headers, 4-byte references,
/// 8-byte alignment; instance fields from the CLASS DUMPs of the class and
/// its superclasses).
fn top_class_of_binary_dump(path: &Path) -> String {
    use hprof_rs::format::binary::{BasicType, HeapRecord};
    let parsed = hprof_rs::format::binary::reader::parse(&fs::read(path).unwrap()).unwrap();
    let mut utf8 = HashMap::new();
    let mut class_names = HashMap::new();
    // class id -> (superclass, heap bytes of the fields it declares)
    let mut classes: HashMap<u64, (u64, u64)> = HashMap::new();
    let heap = || {
        parsed.records.iter().flat_map(|record| match &record.body {
            RecordBody::HeapDump(heap) | RecordBody::HeapDumpSegment(heap) => heap.as_slice(),
            _ => &[],
        })
    };
    for record in &parsed.records {
        match &record.body {
            RecordBody::Utf8 { id, text } => {
                utf8.insert(*id, String::from_utf8_lossy(text).into_owned());
            }
            RecordBody::LoadClass {
                class_id, name_id, ..
            } => {
                class_names.insert(*class_id, *name_id);
            }
            _ => {}
        }
    }
    for object in heap() {
        if let HeapRecord::ClassDump {
            class_id,
            super_id,
            instance_fields,
            ..
        } = object
        {
            let bytes = instance_fields
                .iter()
                .map(|f| f.field_type.size(4) as u64)
                .sum();
            classes.insert(*class_id, (*super_id, bytes));
        }
    }
    let name_of = |class_id: &u64| {
        let raw = &utf8[&class_names[class_id]];
        if raw.starts_with('[') {
            hprof_rs::format::names::signature_to_name(raw)
        } else {
            raw.replace('/', ".")
        }
    };
    let aligned = |bytes: u64| bytes.next_multiple_of(8);
    let instance_size = |mut class: u64| {
        let mut fields = 0;
        while let Some(&(superclass, bytes)) = classes.get(&class) {
            fields += bytes;
            class = superclass;
        }
        aligned(12 + fields)
    };
    let mut bytes: HashMap<String, u64> = HashMap::new();
    for object in heap() {
        let (class, size) = match object {
            HeapRecord::InstanceDump { class_id, .. } => {
                (name_of(class_id), instance_size(*class_id))
            }
            HeapRecord::ObjectArrayDump {
                array_class_id,
                elements,
                ..
            } => (
                name_of(array_class_id),
                aligned(16 + 4 * elements.len() as u64),
            ),
            HeapRecord::PrimitiveArrayDump { elements, .. } => {
                let kind: BasicType = elements.element_type();
                let name = format!("{}[]", format!("{kind:?}").to_lowercase());
                let size = aligned(16 + (elements.len() * kind.size(4)) as u64);
                (name, size)
            }
            _ => continue,
        };
        *bytes.entry(class).or_default() += size;
    }
    bytes
        .into_iter()
        .max_by_key(|(_, b)| *b)
        .map(|(c, _)| c)
        .expect("objects")
}

#[test]
fn chromium_draws_the_class_histogram_of_a_binary_heap_dump() {
    common::on_each(&common::jdks_of(&JDKS), |jdk| {
        let label = &jdk.label;
        let dir = common::scratch_dir(&format!("report-binary-dump-{label}"));
        let dump = profile(
            jdk,
            &dir,
            "heap=dump,format=b",
            "dump.hprof",
            &["HeapGraph", "0"],
        );
        let (page, _) = report(&dump, &[]);
        let dom = chromium(&page, &dir);
        let expected = top_class_of_binary_dump(&dump);
        assert_eq!(
            first_cell(&dom, "HEAP DUMP: class histogram"),
            expected,
            "{label}"
        );
    });
}

#[test]
fn report_with_diff_shows_the_diff_table_and_a_differential_flame_graph() {
    common::on_each(&common::jdks_of(&JDKS), |jdk| {
        let label = &jdk.label;
        let dir = common::scratch_dir(&format!("report-diff-{label}"));
        let base = profile(jdk, &dir, "cpu=samples", "base.txt", &["CpuHot", "2"]);
        let new = profile(jdk, &dir, "cpu=samples", "new.txt", &["CpuHot", "4"]);
        let (page, _) = report(&new, &["--diff", path(&base)]);
        let dom = chromium(&page, &dir);
        assert!(dom.contains("Differential flame graph"), "{label}");
        let mut cmd = Command::new(common::hprof_rs_bin());
        cmd.args(["diff", path(&base), path(&new)]);
        let diff = common::stdout_text(&common::run(&mut cmd));
        let first = diff.lines().next().expect("diff's first line");
        assert!(
            dom.contains(first),
            "{label}: diff's table {first:?} not in the page"
        );
        assert!(
            dom.contains("rgb(255,"),
            "{label}: no frame coloured as grown"
        );
    });
}

/// One TRACE of 100,000 frames (`Deep.f0` innermost) with 7 CPU samples:
/// `report` (whose flame graph once recursed once per frame and overflowed
/// its stack at 32,768) writes a page that Chromium draws, down to the
/// depth bound, below which one box holds the 99,000 deeper frames; the
/// differential graph of the file against itself as well.
#[test]
fn report_draws_a_trace_of_100000_frames_to_its_depth_bound() {
    let dir = common::scratch_dir("report-deep-trace");
    let file = dir.join("deep.txt");
    let mut text = String::from(
        "JAVA PROFILE 1.0.1, created Mon Dec  7 06:29:50 2026\n\n--------\n\n\
         TRACE 300001: (thread=200001)\n",
    );
    for depth in 0..100_000 {
        text.push_str(&format!("\tDeep.f{depth}(Deep.java:{})\n", depth + 1));
    }
    text.push_str(
        "CPU SAMPLES BEGIN (total = 7) Mon Dec  7 06:29:51 2026\n\
         rank   self  accum   count trace method\n\
         \x20  1 100.00% 100.00%       7 300001 Deep.f0\n\
         CPU SAMPLES END\n",
    );
    fs::write(&file, text).unwrap();
    let (page, _) = report(&file, &["--diff", path(&file)]);
    let dom = chromium(&page, &dir);
    assert_eq!(
        first_cell(&dom, "CPU SAMPLES: hot methods (samples, by self)"),
        "Deep.f0"
    );
    // Root first: f99999 ... f99000 keep their boxes, the rest is one.
    for name in ["Deep.f99999", "Deep.f99000", "[99000 deeper frames]"] {
        assert!(dom.contains(&format!(">{name}<")), "no {name} box");
    }
    assert!(
        !dom.contains(">Deep.f98999<"),
        "a frame past the bound kept its box"
    );
    assert!(dom.contains("Differential flame graph"));
}

#[test]
fn unusable_input_gives_one_line_and_exit_2() {
    let dir = common::scratch_dir("convert-unusable");
    let not_profile = dir.join("notes.txt");
    fs::write(&not_profile, "just some text\n").unwrap();
    let cpu_only = dir.join("cpu.txt");
    fs::write(
        &cpu_only,
        "JAVA PROFILE 1.0.1, created Thu Nov  2 17:11:21 2017\n\n--------\n\n\
TRACE 300001:\n\tHot.leaf(Hot.java:5)\n\
CPU SAMPLES BEGIN (total = 3) Thu Nov  2 17:11:22 2017\n\
rank   self  accum   count trace method\n\
   1 100.00% 100.00%       3 300001 Hot.leaf\n\
CPU SAMPLES END\n",
    )
    .unwrap();
    let out = |name: &str| path(&dir.join(name)).to_owned();
    let cases: [(Vec<String>, &str); 4] = [
        (
            vec![
                "convert".into(),
                path(&not_profile).into(),
                "--to".into(),
                "pprof".into(),
                "-o".into(),
                out("a.pb.gz"),
            ],
            "not a readable profile",
        ),
        (
            vec![
                "convert".into(),
                path(&cpu_only).into(),
                "--to".into(),
                "speedscope".into(),
                "--what".into(),
                "lock".into(),
            ],
            "has no LOCK TIME table (it holds: cpu)",
        ),
        (
            vec![
                "report".into(),
                path(&not_profile).into(),
                "-o".into(),
                out("a.html"),
            ],
            "not a readable profile",
        ),
        (
            vec![
                "report".into(),
                path(&cpu_only).into(),
                "--diff".into(),
                path(&not_profile).into(),
                "-o".into(),
                out("b.html"),
            ],
            "not a readable profile",
        ),
    ];
    for (args, message) in cases {
        let mut cmd = Command::new(common::hprof_rs_bin());
        cmd.args(&args);
        let result = common::run(&mut cmd);
        common::assert_exit_code(&result, 2, &format!("{args:?}"));
        let err = common::stderr_text(&result);
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.starts_with("hprof-rs: ") && err.contains(message),
            "{args:?}: {err}"
        );
    }
    assert!(
        !dir.join("b.html").exists(),
        "a report written from unusable input"
    );
}
