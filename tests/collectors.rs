//! Every collector HotSpot ships: the JVM exits and the file is complete.
//!
//! When a JVM exits, HotSpot stops its collectors' concurrent threads
//! before it posts VM death. A forced collection at the exit dump then
//! waited forever under ZGC and Shenandoah (their driver thread is gone),
//! and the JVM never exited. These tests run the heap modes under every
//! collector each JDK has, with a fixture whose counts are known
//! (AllocSites: 10,000 `AllocSites$Item` made, 4,000 still reachable after
//! the program's own `System.gc()`), and check that the JVM exits in its
//! normal time, that the file parses whole, that the counts are exact and
//! that the prelude says when the exit dump could not collect.

mod common;

use common::{AsciiProfile, Jdk, jdks_of, on_each, site_totals};
use hprof_rs::format::ascii::{HeapEntry, Section};
use std::time::{Duration, Instant};

/// Far above AllocSites' second or two under any mode: only a hang
/// reaches it (the run is then killed and the test fails).
const PATIENCE: Duration = Duration::from_secs(60);

/// The collectors of one JDK, as the `-XX` options that select them, and
/// whether each can still collect at VM death.
fn collectors(jdk: &Jdk) -> Vec<(&'static [&'static str], bool)> {
    let mut all: Vec<(&'static [&'static str], bool)> = vec![
        (&["-XX:+UseShenandoahGC"], false),
        (&["-XX:+UseParallelGC"], true),
        (&["-XX:+UseSerialGC"], true),
        (&["-XX:+UseG1GC"], true),
    ];
    match jdk.major {
        // ZGC is experimental on JDK 11.
        11 => all.push((&["-XX:+UnlockExperimentalVMOptions", "-XX:+UseZGC"], false)),
        // JDK 21 has both ZGCs; from JDK 23 on only the generational one.
        21 => {
            all.push((&["-XX:+UseZGC"], false));
            all.push((&["-XX:+UseZGC", "-XX:+ZGenerational"], false));
        }
        _ => all.push((&["-XX:+UseZGC"], false)),
    }
    all
}

/// AllocSites under the agent's `options` (none: HPROF's heap=all) and the
/// collector `gc`; the parsed file and how long the JVM took.
fn profile(jdk: &Jdk, gc: &[&str], options: &str) -> (AsciiProfile, Duration) {
    let name = format!(
        "collectors-{}-{}-{}",
        jdk.label,
        gc.last().unwrap().trim_start_matches("-XX:+"),
        if options.is_empty() { "none" } else { options }
    )
    .replace(['=', ','], "-");
    let dir = common::scratch_dir(&name);
    let mut cmd = common::java_command(jdk, &dir);
    let agent = if options.is_empty() {
        format!("-agentpath:{}", common::agent_lib().display())
    } else {
        common::agentpath_arg(options)
            .to_string_lossy()
            .into_owned()
    };
    cmd.args(gc).arg(agent).arg("AllocSites");
    let started = Instant::now();
    let out = common::run_timeout(&mut cmd, PATIENCE);
    let took = started.elapsed();
    common::assert_success(&out, &format!("{name}: {}", common::describe_command(&cmd)));
    (
        AsciiProfile::read_whole_file(&dir.join("java.hprof.txt")),
        took,
    )
}

fn prelude(profile: &AsciiProfile) -> &str {
    match profile.sections.first() {
        Some(Section::Header { prelude, .. }) => prelude,
        other => panic!("{}: no header first: {other:?}", profile.what),
    }
}

/// The SITES rows of AllocSites$Item: 10,000 made, 4,000 reachable.
fn assert_item_sites(profile: &AsciiProfile, what: &str) {
    let rows = profile.sites_of_class("AllocSites$Item");
    let (objects, live_objects, _, _) = site_totals(&rows);
    assert_eq!(objects, 10_000, "{what}: AllocSites$Item allocated");
    assert_eq!(live_objects, 4_000, "{what}: AllocSites$Item live");
}

/// The HEAP DUMP's AllocSites$Item instances: the 4,000 reachable ones
/// (the program's System.gc() took the rest, so even a dump of every
/// object in the heap holds no more).
fn assert_item_instances(profile: &AsciiProfile, what: &str) {
    let dumps: Vec<_> = profile.heap_dumps().collect();
    assert_eq!(dumps.len(), 1, "{what}: HEAP DUMP sections");
    let items = dumps[0]
        .entries
        .iter()
        .filter(|e| matches!(e, HeapEntry::Object { class_name, .. } if class_name == "AllocSites$Item"))
        .count();
    assert_eq!(items, 4_000, "{what}: AllocSites$Item instances");
}

#[test]
fn every_collector_exits_with_a_whole_file_and_exact_counts() {
    on_each(&jdks_of(&[11, 17, 21, 25]), |jdk| {
        for (gc, collects_at_exit) in collectors(jdk) {
            // The collectors of the VM thread were never at risk: HPROF's
            // heap=all (both heap modes) is enough for them.
            let modes: &[&str] = if collects_at_exit {
                &[""]
            } else {
                &["heap=sites", "heap=dump", ""]
            };
            for &options in modes {
                let what = format!("{} {gc:?} {options:?}", jdk.label);
                let (profile, took) = profile(jdk, gc, options);
                eprintln!("{what}: {:.2} s", took.as_secs_f64());
                if options != "heap=dump" {
                    assert_item_sites(&profile, &what);
                }
                if options != "heap=sites" {
                    assert_item_instances(&profile, &what);
                }
                let warned = prelude(&profile).contains("forces no collection");
                assert_eq!(
                    warned,
                    !collects_at_exit,
                    "{what}: the prelude's note on the exit dump:\n{}",
                    prelude(&profile)
                );
            }
        }
    });
}
