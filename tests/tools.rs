//! The reading commands of `hprof-rs` on real agent output: `collapse`,
//! `flame`, `top` and `diff`, on every JDK of the matrix, and their
//! behaviour on input that is not a usable profile.

mod common;

use common::AsciiProfile;

use common::profile_to_file as profile;
use hprof_cli::profile::{TRUNCATED, stable_class_name};
use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::process::{Command, Output};

fn hprof_rs() -> Command {
    Command::new(common::hprof_rs_bin())
}

/// SpreadHot in the interpreter: compiled, each leaf runs at a speed that
/// depends on when the JIT (starved on a loaded machine) got to it, which
/// moved one leaf from 14% to 35% of the samples between two runs; the
/// interpreter gives every unit of work the same cost in every run.
const SPREAD_HOT: [&str; 2] = ["-Xint", "SpreadHot"];

fn tool(args: &[&str], files: &[&Path]) -> Output {
    let mut cmd = hprof_rs();
    cmd.args(args).args(files);
    common::run(&mut cmd)
}

/// Folded lines `stack count` summed per stack.
fn folded(text: &str) -> BTreeMap<String, u64> {
    let mut stacks = BTreeMap::new();
    for line in text.lines() {
        let (stack, count) = line
            .rsplit_once(' ')
            .unwrap_or_else(|| panic!("not folded: {line:?}"));
        *stacks.entry(stack.to_owned()).or_default() += count.parse::<u64>().unwrap();
    }
    stacks
}

/// The CPU SAMPLES header total and the sum of its rows, read with the crate's ASCII reader.
fn cpu_table(path: &Path) -> (u64, u64) {
    let profile = AsciiProfile::read_whole_file(path);
    let cpu = profile.last_cpu().expect("a CPU SAMPLES section");
    (cpu.total, cpu.rows.iter().map(|r| r.count).sum())
}

#[test]
fn collapse_of_cpu_samples_loses_no_sample_in_either_format() {
    common::on_each(&common::jdks(), |jdk| {
        let dir = common::scratch_dir(&format!("tools-collapse-{}", jdk.label));
        let text = profile(jdk, &dir, "cpu=samples", "cpu.txt", &SPREAD_HOT);
        let (total, rows) = cpu_table(&text);
        assert!(
            total > 20,
            "{}: too few samples ({total}) to test",
            jdk.label
        );
        let out = tool(&["collapse"], &[&text]);
        common::assert_success(&out, "collapse of the ASCII file");
        let stacks = folded(&common::stdout_text(&out));
        assert_eq!(
            stacks.values().sum::<u64>(),
            rows,
            "{}: collapse lost samples",
            jdk.label
        );
        assert_eq!(
            rows, total,
            "{}: the table's rows do not add up to its total",
            jdk.label
        );
        assert!(
            stacks.contains_key("SpreadHot.main;SpreadHot.single"),
            "{}: {stacks:?}",
            jdk.label
        );

        let binary = profile(jdk, &dir, "cpu=samples,format=b", "cpu.hprof", &SPREAD_HOT);
        let out = tool(&["collapse", "--what", "cpu"], &[&binary]);
        common::assert_success(&out, "collapse of the binary file");
        let parsed = hprof_rs::format::binary::reader::parse(&fs::read(&binary).unwrap()).unwrap();
        let binary_total: u64 = parsed
            .records
            .iter()
            .rev()
            .find_map(|r| match &r.body {
                hprof_rs::format::binary::RecordBody::CpuSamples { total, .. } => {
                    Some(u64::from(*total))
                }
                _ => None,
            })
            .expect("a CPU SAMPLES record");
        let stacks = folded(&common::stdout_text(&out));
        assert_eq!(
            stacks.values().sum::<u64>(),
            binary_total,
            "{}: binary collapse lost samples",
            jdk.label
        );
    });
}

#[test]
fn flame_writes_well_formed_searchable_svg_with_the_hot_method() {
    common::on_each(&common::jdks(), |jdk| {
        let dir = common::scratch_dir(&format!("tools-flame-{}", jdk.label));
        let text = profile(jdk, &dir, "cpu=samples", "cpu.txt", &SPREAD_HOT);
        for (svg, extra) in [("flame.svg", None), ("icicle.svg", Some("--reverse"))] {
            let svg = dir.join(svg);
            let mut cmd = hprof_rs();
            cmd.arg("flame")
                .arg(&text)
                .arg("-o")
                .arg(&svg)
                .args(["--title", "SpreadHot flame"]);
            cmd.args(extra);
            common::assert_success(&common::run(&mut cmd), "flame");
            let body = fs::read_to_string(&svg).unwrap();
            assert!(
                body.contains("SpreadHot.single"),
                "{}: hot method missing",
                jdk.label
            );
            assert!(
                body.contains("SpreadHot flame"),
                "{}: title missing",
                jdk.label
            );
            // The header (date line of the file) and the total are in the subtitle.
            let (total, _) = cpu_table(&text);
            assert!(
                body.contains(&format!("total {total} samples")),
                "{}: totals missing",
                jdk.label
            );
            assert!(
                body.contains("JAVA PROFILE 1.0.1, created"),
                "{}: header missing",
                jdk.label
            );
            assert!(
                body.contains("function search("),
                "{}: not searchable",
                jdk.label
            );
            assert!(
                body.contains("cpu=samples"),
                "{}: options missing",
                jdk.label
            );
            assert_well_formed_xml(&body);
        }
    });
}

fn assert_well_formed_xml(text: &str) {
    let mut reader = quick_xml::Reader::from_str(text);
    reader.config_mut().check_end_names = true;
    let mut depth = 0i64;
    loop {
        match reader.read_event() {
            Ok(quick_xml::events::Event::Eof) => break,
            Ok(quick_xml::events::Event::Start(_)) => depth += 1,
            Ok(quick_xml::events::Event::End(_)) => depth -= 1,
            Ok(_) => {}
            Err(e) => panic!("malformed XML at {}: {e}", reader.buffer_position()),
        }
    }
    assert_eq!(depth, 0, "unclosed XML elements");
}

#[test]
fn top_ranks_a_method_hot_through_several_traces_first_by_total() {
    common::on_each(&common::jdks(), |jdk| {
        let dir = common::scratch_dir(&format!("tools-top-{}", jdk.label));
        let text = profile(jdk, &dir, "cpu=samples", "cpu.txt", &SPREAD_HOT);
        let out = tool(&["top", "--json", "-n", "50"], &[&text]);
        common::assert_success(&out, "top --json");
        let report: serde_json::Value = serde_json::from_str(&common::stdout_text(&out)).unwrap();
        let names = |list: &str| -> Vec<String> {
            report[list]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| m["method"].as_str().unwrap().to_owned())
                .filter(|m| m.starts_with("SpreadHot.") && m != "SpreadHot.main")
                .collect()
        };
        // By self, single() (4 units in one trace, 2 per leaf) is first; HPROF's own
        // table, one row per trace, ranks it first too.
        assert_eq!(
            names("by_self")[0],
            "SpreadHot.single",
            "{}: {report}",
            jdk.label
        );
        let profile = AsciiProfile::read_whole_file(&text);
        let first_row = profile
            .cpu_blocks()
            .find_map(|cpu| cpu.rows.first())
            .unwrap();
        assert_eq!(
            first_row.method.as_deref(),
            Some("SpreadHot.single"),
            "{}",
            jdk.label
        );
        // By total, hot() (6 units over three traces) ranks above single().
        assert_eq!(
            names("by_total")[0],
            "SpreadHot.hot",
            "{}: {report}",
            jdk.label
        );
        let hot = report["by_total"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["method"] == "SpreadHot.hot")
            .unwrap();
        // hot() itself does almost nothing (a sample may land between two calls).
        let hot_self = hot["self"].as_u64().unwrap();
        let hot_total = hot["total"].as_u64().unwrap();
        assert!(hot_self * 10 < hot_total, "{}: {hot}", jdk.label);
        let leaves: u64 = report["by_self"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["method"].as_str().unwrap().starts_with("SpreadHot.leaf"))
            .map(|m| m["self"].as_u64().unwrap())
            .sum();
        assert_eq!(
            hot_total,
            leaves + hot_self,
            "{}: hot's total is its own self plus its leaves' self",
            jdk.label
        );
    });
}

#[test]
fn top_of_a_heap_dump_prints_the_class_histogram() {
    common::on_each(&common::jdks(), |jdk| {
        let dir = common::scratch_dir(&format!("tools-histo-{}", jdk.label));
        // Both formats give each object's size as the JVM counts it: 24
        // bytes for an Item (12-byte header, an int and a long).
        let item_bytes = 24;
        for (file, options) in [
            ("dump.txt", "heap=dump"),
            ("dump.hprof", "heap=dump,format=b"),
        ] {
            let path = profile(jdk, &dir, options, file, &["AllocSites"]);
            let out = tool(&["top", "--json", "-n", "100000"], &[&path]);
            common::assert_success(&out, "top of a heap dump");
            let report: serde_json::Value =
                serde_json::from_str(&common::stdout_text(&out)).unwrap();
            let row = |class: &str| {
                report["histogram"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|r| r["class"] == class)
                    .unwrap_or_else(|| panic!("{}: no {class} in {file}", jdk.label))
                    .clone()
            };
            // AllocSites keeps 4000 Item and 4000 Reflected objects.
            assert_eq!(
                row("AllocSites$Item")["instances"],
                4000,
                "{} {file}",
                jdk.label
            );
            assert_eq!(
                row("AllocSites$Item")["bytes"],
                4000 * item_bytes,
                "{} {file}",
                jdk.label
            );
            assert_eq!(
                row("AllocSites$Reflected")["instances"],
                4000,
                "{} {file}",
                jdk.label
            );
            let text = common::stdout_text(&tool(&["top"], &[&path]));
            assert!(text.contains("class histogram"), "{text}");
        }
    });
}

#[test]
fn diff_of_two_runs_of_the_same_program_reports_nothing_and_exits_0() {
    common::on_each(&common::jdks(), |jdk| {
        let dir = common::scratch_dir(&format!("tools-diff-same-{}", jdk.label));
        let a = profile(
            jdk,
            &dir,
            "heap=sites,cutoff=0",
            "a.txt",
            &["AllocGrowth", "0"],
        );
        let b = profile(
            jdk,
            &dir,
            "heap=sites,format=b,cutoff=0",
            "b.hprof",
            &["AllocGrowth", "0"],
        );
        let out = tool(
            &[
                "diff",
                "--json",
                "--fail-if",
                "alloc.total > +10%",
                "--fail-if",
                "site int[] at AllocGrowth.makeArray > +1%",
            ],
            &[&a, &b],
        );
        common::assert_exit_code(&out, 0, &format!("{}: diff of the same program", jdk.label));
        let report: serde_json::Value = serde_json::from_str(&common::stdout_text(&out)).unwrap();
        assert_eq!(
            report["stacks"],
            serde_json::json!([]),
            "{}: {report}",
            jdk.label
        );
        assert_eq!(report["failed"], false);
        // The site is matched across formats and serial numbers: same bytes.
        let site = &report["thresholds"][1];
        assert_eq!(site["change"], 0, "{}: {report}", jdk.label);
        assert!(
            site["base"].as_u64().unwrap() >= 20000 * 272,
            "{}: {report}",
            jdk.label
        );

        // CPU samples: two runs differ by chance only; nothing beyond noise.
        let a = profile(jdk, &dir, "cpu=samples", "a-cpu.txt", &SPREAD_HOT);
        let b = profile(jdk, &dir, "cpu=samples", "b-cpu.txt", &SPREAD_HOT);
        let out = tool(
            &[
                "diff",
                "--json",
                "--fail-if",
                "method SpreadHot.single self > +20%",
                "--fail-if",
                "method SpreadHot.hot total > +20%",
            ],
            &[&a, &b],
        );
        common::assert_exit_code(&out, 0, &format!("{}: diff of two CPU runs", jdk.label));
        let report: serde_json::Value = serde_json::from_str(&common::stdout_text(&out)).unwrap();
        // The fixture's own stacks and methods (the JVM's few samples of
        // start-up code are not what this test is about).
        let fixture_changes: Vec<&serde_json::Value> = ["stacks", "methods"]
            .iter()
            .flat_map(|list| report[list].as_array().unwrap())
            .filter(|m| m["name"].as_str().unwrap().contains("SpreadHot."))
            .collect();
        assert!(fixture_changes.is_empty(), "{}: {report}", jdk.label);
    });
}

#[test]
fn diff_reports_a_site_that_allocates_30_percent_more_first_and_exits_1() {
    common::on_each(&common::jdks(), |jdk| {
        let dir = common::scratch_dir(&format!("tools-diff-grow-{}", jdk.label));
        let base = profile(
            jdk,
            &dir,
            "heap=sites,cutoff=0",
            "base.txt",
            &["AllocGrowth", "0"],
        );
        let new = profile(
            jdk,
            &dir,
            "heap=sites,format=b,cutoff=0",
            "new.hprof",
            &["AllocGrowth", "30"],
        );
        let svg = dir.join("diff.svg");
        let svg_arg = svg.to_str().unwrap();
        let out = tool(
            &[
                "diff",
                "--json",
                "--fail-if",
                "alloc.total > +10%",
                "--flame",
                svg_arg,
            ],
            &[&base, &new],
        );
        common::assert_exit_code(&out, 1, &format!("{}: diff of a 30% growth", jdk.label));
        let report: serde_json::Value = serde_json::from_str(&common::stdout_text(&out)).unwrap();
        let first = &report["stacks"][0];
        assert_eq!(
            first["name"], "AllocGrowth.main;AllocGrowth.makeArray;int[]",
            "{}: {report}",
            jdk.label
        );
        // 20000 arrays before, 26000 after: exactly +30%.
        let base_bytes = first["base"].as_u64().unwrap();
        assert_eq!(base_bytes % 20000, 0, "{}: {report}", jdk.label);
        assert_eq!(
            first["change"].as_u64().unwrap(),
            base_bytes / 20000 * 6000,
            "{}",
            jdk.label
        );
        assert!((first["relative_percent"].as_f64().unwrap() - 30.0).abs() < 1e-9);
        assert_eq!(report["thresholds"][0]["failed"], true);
        // The Item site did not change and is not reported.
        assert!(
            !common::stdout_text(&out).contains("makeItem"),
            "{}: {report}",
            jdk.label
        );
        let body = fs::read_to_string(&svg).unwrap();
        assert!(body.contains("AllocGrowth.makeArray"));
        assert_well_formed_xml(&body);

        // Below the threshold: exit 0; text output names the site first.
        let out = tool(&["diff", "--fail-if", "alloc.total > +90%"], &[&base, &new]);
        common::assert_exit_code(&out, 0, "diff under a loose threshold");
        let text = common::stdout_text(&out);
        let first_stack = text
            .lines()
            .skip_while(|l| !l.starts_with("Stacks"))
            .nth(1)
            .unwrap();
        assert!(
            first_stack.ends_with("AllocGrowth.main;AllocGrowth.makeArray;int[]"),
            "{text}"
        );
    });
}

#[test]
fn our_collapse_agrees_with_hprof2flamegraph_on_the_same_ascii_file() {
    let Some(theirs) = common::stackcollapse_hprof() else {
        return;
    };
    common::on_each(&common::jdks(), |jdk| {
        let dir = common::scratch_dir(&format!("tools-agree-{}", jdk.label));
        let text = profile(jdk, &dir, "cpu=samples", "cpu.txt", &SPREAD_HOT);
        let out = common::run(Command::new(&theirs).arg("--discard-lineno").arg(&text));
        common::assert_success(&out, "stackcollapse-hprof");
        // hprof2flamegraph keeps the addresses in hidden class names; ours
        // drops them so that runs match. Line by line, that is the only difference.
        let their_stacks: BTreeMap<String, u64> = folded(&common::stdout_text(&out))
            .into_iter()
            .map(|(stack, n)| {
                (
                    stack
                        .split(';')
                        .map(stable_class_name)
                        .collect::<Vec<_>>()
                        .join(";"),
                    n,
                )
            })
            .fold(BTreeMap::new(), |mut all, (stack, n)| {
                *all.entry(stack).or_default() += n;
                all
            });
        // And ours puts the stacks cut at the depth (4 frames) under a
        // `[truncated]` root; hprof2flamegraph cannot know they were cut.
        let truncated = format!("{TRUNCATED};");
        let ours = folded(&common::stdout_text(&tool(&["collapse"], &[&text])));
        let ours_unmarked = ours.iter().fold(BTreeMap::new(), |mut all, (stack, n)| {
            let unmarked = stack.strip_prefix(&truncated).unwrap_or(stack);
            *all.entry(unmarked.to_owned()).or_default() += n;
            all
        });
        assert_eq!(ours_unmarked, their_stacks, "{}", jdk.label);
        assert!(ours.values().sum::<u64>() > 0);
        for stack in ours.keys() {
            let frames = stack.split(';').count();
            let marked = stack.starts_with(&truncated);
            assert_eq!(marked, frames == 5, "{}: {stack}", jdk.label);
        }
    });
}

#[test]
fn unusable_input_gives_one_line_and_exit_2() {
    let jdk = common::jdks().into_iter().next().expect("a JDK");
    let dir = common::scratch_dir("tools-bad-input");
    let sites = profile(&jdk, &dir, "heap=sites", "sites.txt", &["AllocGrowth"]);
    let cpu = profile(
        &jdk,
        &dir,
        "cpu=samples",
        "cpu.txt",
        &["-Xint", "SpreadHot", "100"],
    );
    let binary = profile(
        &jdk,
        &dir,
        "heap=sites,format=b",
        "sites.hprof",
        &["AllocGrowth"],
    );
    let bytes = fs::read(&binary).unwrap();
    let cut = dir.join("cut.hprof");
    fs::write(&cut, &bytes[..bytes.len() - 7]).unwrap();
    let text = fs::read(&sites).unwrap();
    let cut_text = dir.join("cut.txt");
    fs::write(&cut_text, &text[..text.len() * 2 / 3]).unwrap();
    let prose = dir.join("notes.txt");
    fs::write(&prose, "Shopping list:\n- eggs\n").unwrap();
    let missing = dir.join("missing.hprof");
    let cases: Vec<(Vec<&str>, Vec<&Path>)> = vec![
        (vec!["top"], vec![&cut]),
        (vec!["collapse"], vec![&cut_text]),
        (vec!["flame", "-o", "/dev/null"], vec![&prose]),
        (vec!["top"], vec![&missing]),
        (vec!["diff"], vec![&sites, &cpu]),
        (vec!["diff"], vec![&sites, &prose]),
        (
            vec!["diff", "--fail-if", "alloc.total >> 5"],
            vec![&sites, &sites],
        ),
        (vec!["collapse", "--what", "cpu"], vec![&sites]),
    ];
    for (args, files) in cases {
        let out = tool(&args, &files);
        common::assert_exit_code(&out, 2, &format!("{args:?} {files:?}"));
        let stderr = common::stderr_text(&out);
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.starts_with("hprof-rs: "), "{stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
    let stderr = common::stderr_text(&tool(&["diff"], &[&sites, &cpu]));
    assert!(stderr.contains("different kinds"), "{stderr}");
}

#[test]
fn top_and_collapse_read_cpu_times() {
    common::on_each(&common::jdks(), |jdk| {
        let dir = common::scratch_dir(&format!("tools-times-{}", jdk.label));
        let text = profile(
            jdk,
            &dir,
            "cpu=times,timing=calls",
            "times.txt",
            &["TimedCalls"],
        );
        let out = tool(&["top", "--what", "time", "--json"], &[&text]);
        common::assert_success(&out, "top --what time");
        let report: serde_json::Value = serde_json::from_str(&common::stdout_text(&out)).unwrap();
        // nap() sleeps 4 x 50 ms (main's own time, class loading included,
        // can be larger on a loaded machine).
        let nap_row = report["by_self"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["method"] == "TimedCalls.nap")
            .unwrap_or_else(|| panic!("{}: no nap in {report}", jdk.label));
        // The Tracker's clock is a field an agent thread refreshes every
        // 0.1 ms: on a loaded machine that thread runs late and a call can
        // measure a few ms short of its sleep (186 ms for 200 was seen).
        let nap_self = nap_row["self"].as_u64().unwrap();
        assert!(nap_self >= 150, "{}: {report}", jdk.label);
        // nap's only callee is Thread.sleep, whose JDK classes are timed
        // only where loaded after VM init (JDK 19+'s sleep events): a few ms
        // at most.
        let nap_total = nap_row["total"].as_u64().unwrap();
        assert!(
            (nap_self..=nap_self + 10).contains(&nap_total),
            "{}: nap's total {nap_total} against its self {nap_self}: {report}",
            jdk.label
        );
        assert_eq!(report["unit"], "ms");
        let folded = folded(&common::stdout_text(&tool(&["collapse"], &[&text])));
        let nap: u64 = folded
            .iter()
            .filter(|(stack, _)| stack.ends_with("TimedCalls.nap"))
            .map(|(_, ms)| ms)
            .sum();
        assert_eq!(nap, nap_self, "{}", jdk.label);
    });
}

/// A whole ASCII profile with one CPU SAMPLES table, written by hand.
const SMALL_ASCII_PROFILE: &str = "JAVA PROFILE 1.0.1, created Thu Nov  2 17:11:21 2017\n\n\
--------\n\n\
TRACE 300001:\n\tHot.leaf(Hot.java:5)\n\
CPU SAMPLES BEGIN (total = 1) Thu Nov  2 17:11:22 2017\n\
rank   self  accum   count trace method\n   1 100.00% 100.00%       1 300001 Hot.leaf\n\
CPU SAMPLES END\n";

#[test]
fn every_reading_command_refuses_zeros_from_the_first_bytes() {
    let dir = common::scratch_dir("tools-zeros");
    // 3 GB of zeros in a sparse file: no disk used.
    let zeros = dir.join("zeros.hprof");
    fs::File::create(&zeros)
        .and_then(|f| f.set_len(3 << 30))
        .unwrap();
    let good = dir.join("good.txt");
    fs::write(&good, SMALL_ASCII_PROFILE).unwrap();
    common::assert_success(&tool(&["top"], &[&good]), "top of the small profile");
    let svg = dir.join("out.svg");
    for bad in [zeros.as_path(), Path::new("/dev/zero")] {
        let cases: [(&[&str], Vec<&Path>); 6] = [
            (&["print"], vec![bad]),
            (&["top"], vec![bad]),
            (&["collapse"], vec![bad]),
            (&["flame", "-o", svg.to_str().unwrap()], vec![bad]),
            (&["diff"], vec![bad, &good]),
            (&["diff"], vec![&good, bad]),
        ];
        for (args, files) in cases {
            let what = format!("{args:?} {files:?}");
            let mut cmd = hprof_rs();
            cmd.args(args).args(&files);
            // Refused at once; the timeout only guards against reading on
            // (before, /dev/zero was read for ever).
            let out = common::run_timeout(&mut cmd, std::time::Duration::from_secs(60));
            common::assert_exit_code(&out, 2, &what);
            let stderr = common::stderr_text(&out);
            assert_eq!(stderr.lines().count(), 1, "{what}: {stderr}");
            assert!(
                stderr.starts_with(&format!("hprof-rs: {}: ", bad.display())),
                "{what}: {stderr}"
            );
            assert!(
                stderr.contains("not an HPROF profile")
                    && stderr.contains("byte offset 0")
                    && stderr.contains(r#"first bytes: "\x00\x00"#),
                "{what}: {stderr}"
            );
            assert!(common::stdout_text(&out).is_empty(), "{what}");
        }
    }
    assert!(!svg.exists(), "flame wrote a graph of nothing");

    // A real header line, then 3 GB of zeros: refused at the first zero.
    let header_line = "JAVA PROFILE 1.0.1, created Thu Nov  2 17:11:21 2017\n";
    let headed = dir.join("headed-zeros.txt");
    fs::write(&headed, header_line).unwrap();
    fs::OpenOptions::new()
        .write(true)
        .open(&headed)
        .and_then(|f| f.set_len(3 << 30))
        .unwrap();
    for (args, message) in [
        (
            &["print"][..],
            format!("malformed at byte offset {}", header_line.len()),
        ),
        (&["top"][..], format!("(byte offset {})", header_line.len())),
    ] {
        let mut cmd = hprof_rs();
        cmd.args(args).arg(&headed);
        let out = common::run_timeout(&mut cmd, std::time::Duration::from_secs(60));
        common::assert_exit_code(&out, 2, &format!("{args:?} of a header and zeros"));
        let stderr = common::stderr_text(&out);
        assert!(
            stderr.contains("a NUL byte in an ASCII profile") && stderr.contains(&message),
            "{args:?}: {stderr}"
        );
    }
}

/// `hprof-rs diff BASE NEW --fail-if THRESHOLD`'s exit status.
fn gate(base: &Path, new: &Path, threshold: &str) -> Output {
    tool(&["diff", "--fail-if", threshold], &[base, new])
}

#[test]
fn fail_if_signs_mean_what_they_say_and_a_threshold_matching_nothing_is_unusable() {
    common::on_each(&common::jdks(), |jdk| {
        let dir = common::scratch_dir(&format!("tools-fail-if-{}", jdk.label));
        // 20000 int[64] against 26000: the site grows by exactly 30%, the
        // total by about 28%; the 10000 Items do not change. (cutoff=0: the
        // arrays all die, and HPROF's cutoff leaves out the rows with no
        // live bytes.)
        let small = profile(
            jdk,
            &dir,
            "heap=sites,cutoff=0",
            "small.txt",
            &["AllocGrowth", "0"],
        );
        let large = profile(
            jdk,
            &dir,
            "heap=sites,cutoff=0",
            "large.txt",
            &["AllocGrowth", "30"],
        );
        let site = "site int[] at AllocGrowth.makeArray";
        let item = "class AllocGrowth$Item bytes";
        // (base, new, threshold, exit status): `> L%` fails when the change
        // in percent is above L, `< L%` when it is below, L's sign as written.
        let cases = [
            (&small, &large, "alloc.total > +5%", 1),
            (&small, &large, "alloc.total > +50%", 0),
            (&small, &large, "alloc.total > -5%", 1),
            (&small, &large, "alloc.total < -5%", 0),
            (&small, &large, "alloc.total < +50%", 1),
            (&large, &small, "alloc.total > +5%", 0),
            (&large, &small, "alloc.total > -5%", 0),
            (&large, &small, "alloc.total > -50%", 1),
            (&large, &small, "alloc.total < -5%", 1),
            (&large, &small, "alloc.total < -50%", 0),
            (&small, &large, &format!("{site} > +29%"), 1),
            (&small, &large, &format!("{site} > +31%"), 0),
            (&large, &small, &format!("{site} < -23%"), 1),
            (&large, &small, &format!("{site} < -24%"), 0),
            (&small, &large, &format!("{site} > +1632000"), 0),
            (&small, &large, &format!("{site} > +1631999"), 1),
            // Unchanged: a change of 0% is above -1% and below +1%, not above 0%.
            (&small, &large, &format!("{item} > -1%"), 1),
            (&small, &large, &format!("{item} < +1%"), 1),
            (&small, &large, &format!("{item} > +0%"), 0),
        ];
        for (base, new, threshold, code) in cases {
            let out = gate(base, new, threshold);
            let what = format!("{}: {threshold} from {base:?} to {new:?}", jdk.label);
            common::assert_exit_code(&out, code, &what);
        }
        let out = gate(&small, &large, "class AllocGrowth$Item objects > -1%");
        common::assert_exit_code(&out, 1, "class objects");
        assert!(
            common::stdout_text(&out).contains("+0 objects (+0.0%): 10000 -> 10000"),
            "{}",
            common::describe(&out)
        );

        // What matches nothing can never fail: unusable input, even next
        // to a threshold that fails.
        let cpu = profile(
            jdk,
            &dir,
            "cpu=samples",
            "cpu.txt",
            &["-Xint", "SpreadHot", "100"],
        );
        let nothing = [
            (
                &small,
                &large,
                "method AllocGrowth.makeAray self > +5%",
                "method AllocGrowth.makeAray is in neither profile (alloc); did you mean AllocGrowth.makeArray?",
            ),
            (
                &small,
                &large,
                "class Nope bytes > +5%",
                "no Nope was allocated in either profile (alloc)",
            ),
            (
                &small,
                &large,
                "site int[] at AllocGrowth.makeItem > +5%",
                "no int[] was allocated directly in AllocGrowth.makeItem in either profile (alloc)",
            ),
            (
                &small,
                &large,
                "cpu.total > +5%",
                "the base profile has no cpu data (it holds: alloc, alloc-objects, live, live-objects)",
            ),
            (
                &cpu,
                &cpu,
                "alloc.total > +5%",
                "the base profile has no alloc data (it holds: cpu)",
            ),
            (
                &cpu,
                &cpu,
                "method SpreadHot.hott total > +5%",
                "method SpreadHot.hott is in neither profile (cpu); did you mean SpreadHot.hot?",
            ),
        ];
        for (base, new, threshold, why) in nothing {
            let mut cmd = hprof_rs();
            cmd.args(["diff", "--fail-if", "total > -100%", "--fail-if", threshold]);
            let out = common::run(cmd.arg(base).arg(new));
            common::assert_exit_code(&out, 2, &format!("{}: {threshold}", jdk.label));
            let stderr = common::stderr_text(&out);
            assert_eq!(
                stderr.trim_end(),
                format!("hprof-rs: --fail-if {threshold:?} matches nothing: {why}"),
                "{}",
                jdk.label
            );
        }
    });
}

/// `hprof-rs run OPTIONS -- java -cp <fixtures> ARGS` in `dir`, as the
/// README's CI recipe runs a build; checks that it succeeded.
fn run_under_tool(jdk: &common::Jdk, dir: &Path, options: &str, args: &[&str]) -> Output {
    let mut cmd = hprof_rs();
    common::clean_java_env(&mut cmd);
    cmd.current_dir(dir)
        .env("HPROF_RS_AGENT", common::agent_lib())
        .args(["run", options, "--"])
        .arg(&jdk.java)
        .args(["-Xshare:auto", "-cp"])
        .arg(common::fixtures_classpath())
        .args(args);
    let out = common::run(&mut cmd);
    common::assert_success(&out, &format!("{}: hprof-rs run {options}", jdk.label));
    out
}

/// One line of a G line: a StringBuilder and a String (24 bytes each) and
/// two byte[width] (16 + width bytes each); 10,000 lines.
fn g_line_bytes(width: u64) -> u64 {
    10_000 * (2 * 24 + 2 * (16 + width))
}

#[test]
fn the_ci_gate_on_a_method_deep_in_the_stack_fails_when_it_allocates_more() {
    common::on_each(&common::jdks(), |jdk| {
        let dir = common::scratch_dir(&format!("tools-gate-deep-{}", jdk.label));
        // The README's recipe: the base build, the changed build, the gate.
        run_under_tool(jdk, &dir, "heap=sites,cutoff=0,file=base.txt", &["G"]);
        run_under_tool(
            jdk,
            &dir,
            "heap=sites,cutoff=0,file=new.txt",
            &["G", "changed"],
        );
        let (base, new) = (dir.join("base.txt"), dir.join("new.txt"));
        // `run` gave the agent its depth of 16: line() is 10 frames deep.
        let prelude = fs::read_to_string(&base).unwrap();
        assert!(
            prelude.contains("\nhprof-rs settings: depth=16 interval=10\n"),
            "{}: the file's settings line:\n{prelude}",
            jdk.label
        );
        let gate = "method G.line total > +10%";
        let out = tool(&["diff", "--json", "--fail-if", gate], &[&base, &new]);
        common::assert_exit_code(&out, 1, &format!("{}: {gate}", jdk.label));
        let report: serde_json::Value = serde_json::from_str(&common::stdout_text(&out)).unwrap();
        let line = &report["thresholds"][0];
        assert_eq!(line["failed"], true, "{}: {report}", jdk.label);
        // Lines of 48 characters instead of 32: two arrays 16 bytes larger
        // each, 10,000 times (exact counts: the program stays within the
        // first 8 MiB). The JVM's own few objects made while line() first
        // runs (its classes loaded) are the same in both builds.
        assert_eq!(line["change"], 320_000, "{}: {line}", jdk.label);
        let extra = line["base"].as_u64().unwrap() - g_line_bytes(32);
        assert!(extra < 2_000, "{}: {line}", jdk.label);
        assert_eq!(line["new"], g_line_bytes(48) + extra, "{}", jdk.label);
    });
}

#[test]
fn stacks_cut_at_the_depth_stand_under_one_truncated_root_and_the_file_says_its_interval() {
    common::on_each(&common::jdks(), |jdk| {
        let dir = common::scratch_dir(&format!("tools-cut-{}", jdk.label));
        let options = "heap=sites,cpu=samples,interval=7,depth=8,format=b,cutoff=0";
        let file = profile(jdk, &dir, options, "g.hprof", &["G"]);
        let out = tool(&["collapse", "--what", "alloc"], &[&file]);
        common::assert_success(&out, "collapse --what alloc");
        let stacks = folded(&common::stdout_text(&out));
        // Below main, line() is 9 frames down: every stack through it was
        // cut at 8 and stands under the one root; main's own site is whole.
        let truncated = format!("{TRUNCATED};");
        let through_line: Vec<(&String, &u64)> = stacks
            .iter()
            .filter(|(stack, _)| stack.contains("G.line;"))
            .collect();
        assert!(!through_line.is_empty(), "{}: {stacks:?}", jdk.label);
        for (stack, _) in &through_line {
            assert!(stack.starts_with(&truncated), "{}: {stack}", jdk.label);
            assert_eq!(
                stack.split(';').count(),
                1 + 8 + 1,
                "{}: {stack}",
                jdk.label
            );
        }
        let line_bytes: u64 = through_line.iter().map(|(_, n)| **n).sum();
        assert!(
            (g_line_bytes(32)..g_line_bytes(32) + 2_000).contains(&line_bytes),
            "{}: {line_bytes}",
            jdk.label
        );
        assert_eq!(
            stacks.get("G.main;G.shallow;int[]"),
            Some(&(5_000 * 48)),
            "{}: {stacks:?}",
            jdk.label
        );
        assert!(
            !stacks
                .keys()
                .any(|s| s.contains(TRUNCATED) && !s.starts_with(&truncated)),
            "{}: the mark is only ever the root",
            jdk.label
        );

        // The interval and the start, read back from the file by `report`.
        let page = dir.join("g.html");
        let out = tool(&["report", "-o", page.to_str().unwrap()], &[&file]);
        common::assert_success(&out, "report");
        let html = fs::read_to_string(&page).unwrap();
        assert!(
            html.contains("depth=8, interval=7") && html.contains("one per 7 ms of a thread's CPU"),
            "{}: no interval of 7 ms in the report",
            jdk.label
        );
        let bytes = fs::read(&file).unwrap();
        let header = hprof_rs::format::binary::reader::parse(&bytes)
            .unwrap()
            .header;
        let mut date = Command::new("date");
        date.arg("-u")
            .arg(format!("-d@{}", header.timestamp_ms / 1000))
            .arg("+%Y-%m-%dT%H:%M:%S");
        let utc = common::stdout_text(&common::run(&mut date));
        let started = format!("started {}.{:03}Z", utc.trim(), header.timestamp_ms % 1000);
        assert!(
            html.contains(&started),
            "{}: no {started:?} in the report's header",
            jdk.label
        );
    });
}

/// A class named `H(1)T` (legal in the JVM: OddName defines it at run time
/// from Hq1qT's bytes renamed, source file `H(1)T.java` included) in every
/// place an ASCII file names classes and methods: TRACE frames
/// (`H(1)T.spin(H(1)T.java:29)`), CPU SAMPLES rows and SITES rows. The file
/// reads back whole, and `top` and `collapse` show the name.
#[test]
fn a_class_named_with_parentheses_reads_back_from_ascii() {
    common::on_each(&common::jdks(), |jdk| {
        let label = &jdk.label;
        let dir = common::scratch_dir(&format!("tools-odd-name-{label}"));
        let path = profile(jdk, &dir, "cpu=samples,heap=sites", "odd.txt", &["OddName"]);
        common::assert_print_accepts(&path, label);
        let file = AsciiProfile::read_whole_file(&path);
        let spin = file
            .traces()
            .flat_map(|t| &t.frames)
            .find(|f| f.method_name == "spin")
            .unwrap_or_else(|| panic!("{label}: no frame in spin"));
        assert_eq!(
            (spin.class_name.as_str(), spin.source_file.as_str()),
            ("H(1)T", "H(1)T.java"),
            "{label}"
        );

        let json = |what: &str| -> serde_json::Value {
            let out = tool(&["top", "--json", "--what", what], &[&path]);
            common::assert_success(&out, &format!("{label}: top --what {what}"));
            serde_json::from_str(&common::stdout_text(&out)).unwrap()
        };
        let cpu = json("cpu");
        let spin_self = cpu["by_self"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["method"] == "H(1)T.spin")
            .unwrap_or_else(|| panic!("{label}: no H(1)T.spin in {cpu}"))["self"]
            .as_u64()
            .unwrap();
        assert!(spin_self > 0, "{label}: {cpu}");
        let objects = json("alloc-objects");
        assert!(
            objects["classes"]
                .as_array()
                .unwrap()
                .contains(&serde_json::json!({"class": "H(1)T", "value": 5000})),
            "{label}: 5000 H(1)T allocated: {objects}"
        );

        let collapsed = |what: &str| {
            let out = tool(&["collapse", "--what", what], &[&path]);
            common::assert_success(&out, &format!("{label}: collapse --what {what}"));
            folded(&common::stdout_text(&out))
        };
        let cpu_stacks = collapsed("cpu");
        assert!(
            cpu_stacks
                .get("OddName.main;H(1)T.run;H(1)T.spin")
                .is_some_and(|&n| n > 0),
            "{label}: {cpu_stacks:?}"
        );
        let sites = collapsed("alloc-objects");
        assert_eq!(
            sites.get("OddName.main;H(1)T.run;H(1)T"),
            Some(&5000),
            "{label}: {sites:?}"
        );
    });
}
