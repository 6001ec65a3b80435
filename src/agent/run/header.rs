//! What the file header announces, decided from the options and the JVM
//! (HPROF's rules): the format version, the size of identifiers, the
//! CONTROL SETTINGS flags, and whether there is a header at all.

use crate::agent::jvm::collector::{Collector, exit_dump_note};
use crate::emit::clock::ctime_now;
use crate::emit::{HeaderFacts, SitesCounting};
use crate::format::binary::{self, Version};
use crate::format::settings::RunSettings;
use crate::options::{Format, Options};
use std::time::{SystemTime, UNIX_EPOCH};

/// Max heap size from which binary files are 1.0.2 (segmented heap dumps),
/// as in the original agent.
const SEGMENTED_HEAP_THRESHOLD: i64 = 2_000_000_000;

/// The format version: binary files with a heap dump, or of a JVM whose
/// heap may reach [`SEGMENTED_HEAP_THRESHOLD`], are 1.0.2 (a heap dump in
/// segments); all others, and every ASCII file, 1.0.1.
pub fn version(options: &Options, max_heap_bytes: Option<i64>) -> Version {
    match (options.format, max_heap_bytes) {
        (Format::Binary, _) if options.heap_dump => Version::V102,
        (Format::Binary, Some(max)) if max >= SEGMENTED_HEAP_THRESHOLD => Version::V102,
        _ => Version::V101,
    }
}

/// Binary identifiers are 4 bytes, like the original agent's, except in
/// files with heap dumps: those carry the JVM's own dump, whose object
/// identifiers are 8-byte addresses (and with which VisualVM computes
/// instance sizes for a 64-bit JVM).
pub fn id_size(options: &Options) -> u32 {
    if options.heap_dump { 8 } else { 4 }
}

/// The CONTROL SETTINGS flags: allocation traces with heap=sites, CPU
/// sampling with cpu=samples and cpu=wall (whose CPU SAMPLES the settings
/// line marks as wall-clock samples).
pub fn control_flags(options: &Options) -> u32 {
    let mut flags = 0;
    if options.heap_sites {
        flags |= binary::CONTROL_ALLOC_TRACES;
    }
    if options.cpu_samples || options.cpu_wall {
        flags |= binary::CONTROL_CPU_SAMPLING;
    }
    flags
}

/// cpu=old files are just the old "prof" table: no header, and no THREAD
/// START or END (HPROF's rule).
pub fn has_header_and_threads(options: &Options) -> bool {
    !options.cpu_old
}

/// How heap=sites counts under these (derived) options.
pub fn sites_counting(options: &Options) -> SitesCounting {
    if options.alloc_interval > 0 {
        SitesCounting::Sampled(options.alloc_interval)
    } else if options.alloc_count_sites {
        SitesCounting::PerSite
    } else if options.alloc_count_bytecode {
        SitesCounting::ByContext
    } else if options.heap_sites {
        SitesCounting::EveryObject
    } else {
        SitesCounting::PerSite
    }
}

/// Whether the run ends with an exit dump that has live figures (only the
/// heap modes have them): the dump whose collection a collector that stops
/// before VM death cannot make.
pub fn exit_dump_has_live_figures(options: &Options) -> bool {
    options.doe && (options.heap_sites || options.heap_dump)
}

/// What the prelude says of this run: under a collector that cannot
/// collect at exit, that the exit dump's live figures hold garbage.
pub fn notes(options: &Options, collector: Collector, exit_hook: bool) -> Vec<String> {
    match exit_dump_note(collector, exit_hook) {
        Some(note) if exit_dump_has_live_figures(options) => vec![note],
        _ => Vec::new(),
    }
}

/// The header of a run started now, under `collector` (`exit_hook`: with
/// a collection in the JVM's last shutdown hook).
pub fn facts(
    options: &Options,
    max_heap_bytes: Option<i64>,
    collector: Collector,
    exit_hook: bool,
) -> HeaderFacts {
    HeaderFacts {
        sites_counting: sites_counting(options),
        notes: notes(options, collector, exit_hook),
        version: version(options, max_heap_bytes),
        created: ctime_now(),
        timestamp_ms: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64),
        control_flags: control_flags(options),
        depth: options.depth.min(u16::MAX as u32) as u16,
        settings: settings(options),
    }
}

/// The settings line's values: the depth traces are cut at, the SITES
/// traces' when calling contexts keep fewer frames, the sampling interval.
pub fn settings(options: &Options) -> RunSettings {
    // A calling context holds the allocating frame and 3 callers at most.
    let context_frames = 1 + crate::bci::WINDOW_CALL_SITES as u32;
    let sites_depth = (sites_counting(options) == SitesCounting::ByContext
        && options.depth > context_frames)
        .then_some(context_frames);
    RunSettings {
        depth: Some(options.depth),
        sites_depth,
        interval_ms: Some(options.interval_ms),
        wall_clock: options.cpu_wall.then_some(1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::{Parsed, parse};

    fn options(cmdline: &str) -> Options {
        match parse(Some(cmdline), None) {
            Ok(Parsed::Options(options)) => options,
            other => panic!("{cmdline:?}: {other:?}"),
        }
    }

    #[test]
    fn binary_files_with_a_heap_dump_or_a_large_heap_are_segmented() {
        let gib = 1 << 30;
        let cases = [
            ("format=b,heap=dump", None, Version::V102),
            ("format=b,heap=dump", Some(gib), Version::V102),
            ("format=b,heap=sites", Some(gib), Version::V101),
            ("format=b,heap=sites", None, Version::V101),
            ("format=b,cpu=samples", Some(1_999_999_999), Version::V101),
            ("format=b,cpu=samples", Some(2_000_000_000), Version::V102),
            ("format=b,heap=sites", Some(4 * gib), Version::V102),
            // ASCII is 1.0.1 whatever the heap and the dump.
            ("heap=dump", Some(4 * gib), Version::V101),
            ("heap=all", None, Version::V101),
        ];
        for (cmdline, max_heap, expected) in cases {
            assert_eq!(
                version(&options(cmdline), max_heap),
                expected,
                "{cmdline} {max_heap:?}"
            );
        }
    }

    #[test]
    fn identifiers_are_8_bytes_only_with_a_heap_dump() {
        assert_eq!(id_size(&options("format=b,heap=dump")), 8);
        assert_eq!(id_size(&options("heap=all")), 8);
        assert_eq!(id_size(&options("format=b,heap=sites")), 4);
        assert_eq!(id_size(&options("cpu=samples")), 4);
        assert_eq!(id_size(&options("cpu=times")), 4);
    }

    #[test]
    fn control_flags_say_alloc_traces_and_cpu_sampling() {
        assert_eq!(control_flags(&options("heap=sites")), 0x1);
        assert_eq!(control_flags(&options("cpu=samples")), 0x2);
        assert_eq!(control_flags(&options("heap=sites,cpu=samples")), 0x3);
        assert_eq!(control_flags(&options("heap=all")), 0x1);
        assert_eq!(control_flags(&options("heap=dump")), 0);
        assert_eq!(control_flags(&options("cpu=times")), 0);
    }

    #[test]
    fn cpu_old_files_have_no_header_and_no_threads() {
        assert!(!has_header_and_threads(&options("cpu=old")));
        assert!(has_header_and_threads(&options("cpu=times")));
        assert!(has_header_and_threads(&options("heap=sites")));
    }

    #[test]
    fn facts_carry_the_depth_and_the_rules() {
        let facts = facts(
            &options("format=b,heap=dump,cpu=samples,depth=7"),
            None,
            Collector::G1,
            false,
        );
        assert_eq!(
            (facts.version, facts.control_flags, facts.depth),
            (Version::V102, 0x2, 7)
        );
        assert!(
            facts.timestamp_ms > 1_600_000_000_000,
            "milliseconds since 1970"
        );
        assert!(facts.notes.is_empty(), "G1 collects at exit");
        assert_eq!(
            facts.settings.line(),
            "hprof-rs settings: depth=7 interval=10"
        );
    }

    #[test]
    fn settings_say_when_sites_traces_keep_fewer_frames_than_the_depth() {
        let line = |cmdline: &str| settings(&options(cmdline)).line();
        assert_eq!(
            line("heap=sites,depth=16,interval=3"),
            "hprof-rs settings: depth=16 interval=3"
        );
        assert_eq!(
            line("heap=sites,alloc_count=bytecode,depth=16"),
            "hprof-rs settings: depth=16 sites_depth=4 interval=10"
        );
        assert_eq!(
            line("heap=sites,alloc_count=bytecode,depth=3"),
            "hprof-rs settings: depth=3 interval=10"
        );
    }

    #[test]
    fn the_prelude_is_told_how_heap_sites_counts() {
        let cases = [
            ("heap=sites", SitesCounting::PerSite),
            ("heap=sites,alloc_count=bytecode", SitesCounting::ByContext),
            ("heap=sites,alloc_count=events", SitesCounting::EveryObject),
            ("heap=sites,depth=8", SitesCounting::PerSite),
            ("heap=sites,thread=y", SitesCounting::PerSite),
            ("heap=sites,cpu=times", SitesCounting::PerSite),
            ("heap=sites,net=localhost:9000", SitesCounting::PerSite),
            (
                "heap=sites,alloc_interval=512k",
                SitesCounting::Sampled(512 * 1024),
            ),
        ];
        for (cmdline, expected) in cases {
            assert_eq!(sites_counting(&options(cmdline)), expected, "{cmdline}");
        }
    }

    #[test]
    fn the_prelude_warns_of_garbage_in_the_exit_dump_only_where_it_has_live_figures() {
        for cmdline in [
            "heap=sites",
            "heap=dump",
            "heap=all",
            "heap=sites,cpu=samples",
        ] {
            let under_zgc = notes(&options(cmdline), Collector::Z, false);
            assert_eq!(under_zgc.len(), 1, "{cmdline}");
            assert!(under_zgc[0].contains("ZGC"), "{}", under_zgc[0]);
            assert!(notes(&options(cmdline), Collector::Parallel, false).is_empty());
        }
        for cmdline in ["cpu=samples", "cpu=times", "monitor=y", "heap=sites,doe=n"] {
            assert!(
                notes(&options(cmdline), Collector::Shenandoah, true).is_empty(),
                "{cmdline}"
            );
        }
    }
}
