//! A differential check on byte code the JDK's image does not have: the
//! classes of the jars installed on this machine (VisualVM's, which
//! `scripts/setup.sh` installs, and Debian's `/usr/share/java`), built by
//! other compilers and for older class versions (Java 5 to 17 here). Each
//! class that [`rewrite_class_with`] changes is verified before and after
//! with JDK 25's verifier (`java.lang.classfile`), against the classes of
//! those jars then JDK 25's as the hierarchy: rewriting must add no error
//! (a few originals fail already, e.g. for want of an optional dependency;
//! they must fail no worse). Normal and all-branches-widened rewrites.
//! Skipped when no jar is found.

mod common;
#[path = "support/bci/harness.rs"]
mod harness;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

use harness::{helper_main, java, read_dump, reason_kind, run_ok, write_dump};
use hprof_rs::bci::{Injection, RewriteOptions, rewrite_class_with};

/// Where jars are looked for (recursively).
const JAR_DIRS: &[&str] = &["/usr/share/visualvm", "/usr/share/java"];

/// Every jar under [`JAR_DIRS`], each file once (Debian's versionless
/// names are links), sorted.
fn jars() -> Vec<PathBuf> {
    let mut found = BTreeSet::new();
    let mut pending: Vec<PathBuf> = JAR_DIRS.iter().map(PathBuf::from).collect();
    while let Some(dir) = pending.pop() {
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        for path in entries.flatten().map(|e| e.path()) {
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "jar")
                && let Ok(real) = fs::canonicalize(&path)
            {
                found.insert(real);
            }
        }
    }
    found.into_iter().collect()
}

/// `VerifyAll diff` on `jdk25`: (classes checked, originals failing,
/// `DIFF NEW` lines).
fn diff(
    jdk25: &common::Jdk,
    dir: &Path,
    original: &Path,
    rewritten: &Path,
) -> (usize, usize, Vec<String>) {
    let (stdout, summary) =
        harness::run_verifier(jdk25, dir, "diff", &[original, rewritten], "DIFF checked=");
    let numbers: Vec<usize> = summary
        .split(' ')
        .map(|f| f.rsplit('=').next().unwrap().parse().unwrap())
        .collect();
    let new = stdout
        .lines()
        .filter(|l| l.starts_with("DIFF NEW"))
        .map(str::to_string)
        .collect();
    (numbers[0], numbers[1], new)
}

#[test]
fn rewriting_third_party_classes_adds_no_verifier_error() {
    let Some(jdk25) = harness::jdk25() else {
        eprintln!("skipping: no JDK 25");
        return;
    };
    let jars = jars();
    if jars.is_empty() {
        eprintln!("skipping: no jar under {JAR_DIRS:?}");
        return;
    }
    let dir = common::scratch_dir("bci-jars");
    let all = dir.join("all.bin");
    let mut cmd = java(&jdk25, &dir);
    helper_main(&mut cmd, "DumpJrt")
        .arg("jars")
        .arg(&all)
        .args(&jars);
    run_ok(cmd);
    let records = read_dump(&all);
    let mut versions: BTreeMap<u16, usize> = BTreeMap::new();
    for r in &records {
        *versions
            .entry(u16::from_be_bytes([r.bytes[6], r.bytes[7]]))
            .or_default() += 1;
    }
    let mut report = format!(
        "{} classes from {} jars; class versions {versions:?}\n",
        records.len(),
        jars.len()
    );

    let mut failures = Vec::new();
    for (tag, widen_all_branches) in [("rewrite", false), ("widen-all", true)] {
        let options = RewriteOptions { widen_all_branches };
        let mut changed = Vec::new();
        let (mut methods, mut rewritten) = (0, 0);
        let mut skipped: BTreeMap<String, usize> = BTreeMap::new();
        for (number, r) in records.iter().enumerate() {
            match rewrite_class_with(&r.bytes, number as u32, &Injection::tracker(), &options) {
                Ok(outcome) => {
                    methods += outcome.methods.len();
                    for m in &outcome.methods {
                        match &m.skip_reason {
                            None => rewritten += 1,
                            Some(why) => *skipped.entry(reason_kind(why)).or_default() += 1,
                        }
                    }
                    if outcome.bytes != r.bytes {
                        changed.push((r.module.as_str(), r.name.as_str(), outcome.bytes));
                    }
                }
                Err(e) => {
                    *skipped
                        .entry(format!("class not rewritten: {e}"))
                        .or_default() += 1
                }
            }
        }
        let rewritten_dump = dir.join(format!("{tag}.bin"));
        write_dump(
            &rewritten_dump,
            changed.iter().map(|(m, n, b)| (*m, *n, b.as_slice())),
        );
        let (checked, originals_failing, new) = diff(&jdk25, &dir, &all, &rewritten_dump);
        let _ = writeln!(
            report,
            "  {tag}: classes changed {}, methods {methods}, rewritten {rewritten}, skipped {skipped:?}; \
             verified {checked}: originals failing {originals_failing}, new errors in {}",
            changed.len(),
            new.len()
        );
        assert_eq!(checked, changed.len(), "{report}");
        failures.extend(new);
    }
    eprintln!("{report}");
    assert!(failures.is_empty(), "{report}{failures:#?}");
    let _ = fs::remove_dir_all(&dir);
}
