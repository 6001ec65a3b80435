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
//! that the prelude says when the exit dump could not collect. Under ZGC
//! and Shenandoah the agent collects in the JVM's last shutdown hook
//! instead (`jvm/exit_collection.rs`), so live columns hold no garbage on
//! any collector.

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
    profile_of(jdk, gc, options, "AllocSites")
}

/// The fixture `main` under the agent's `options` (none: HPROF's heap=all)
/// and the collector `gc`; the parsed file and how long the JVM took.
fn profile_of(jdk: &Jdk, gc: &[&str], options: &str, main: &str) -> (AsciiProfile, Duration) {
    let name = format!(
        "collectors-{main}-{}-{}-{}",
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
    cmd.args(gc).arg(agent).arg(main);
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
                &["heap=sites", "heap=dump", "heap=all", ""]
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
                let warned = prelude(&profile).contains("collects in the JVM's last shutdown hook");
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

/// 40,000 `int[7]` made and dropped (DeadArrays): 0 live under the default
/// heap=sites on G1, Shenandoah and ZGC (before: 6 to 112 of the class's
/// unplaced live objects on G1, every one of them on Shenandoah).
#[test]
fn live_columns_count_no_garbage_on_any_collector() {
    on_each(&jdks_of(&[11, 17, 21, 25]), |jdk| {
        let mut gcs = vec![
            vec!["-XX:+UseG1GC"],
            vec!["-XX:+UseShenandoahGC"],
            vec!["-XX:+UseZGC"],
        ];
        if jdk.major == 11 {
            gcs[2].insert(0, "-XX:+UnlockExperimentalVMOptions");
        }
        for gc in gcs {
            let (profile, _) = profile_of(jdk, &gc, "heap=sites,cutoff=0", "DeadArrays");
            // The int[] rows made in main() itself (the string it prints
            // makes others below it).
            let rows: Vec<_> = profile
                .sites_of_class("int[]")
                .into_iter()
                .filter(|r| {
                    profile.frames(r.trace_serial).first().map(String::as_str)
                        == Some("DeadArrays.main")
                })
                .collect();
            let (objects, live_objects, _, live_bytes) = site_totals(&rows);
            let what = format!("{} {gc:?}", jdk.label);
            assert_eq!(
                objects, 40_000,
                "{what}: int[7] allocated in DeadArrays.main"
            );
            assert_eq!((live_objects, live_bytes), (0, 0), "{what}: int[7] live");
        }
    });
}
