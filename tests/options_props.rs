//! Property tests: `options::parse` never panics, and what it returns is
//! consistent with its input.

use hprof_rs::options::{Destination, Parsed, parse};
use proptest::prelude::*;

/// Pieces that steer the parser into its interesting paths.
fn piece() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(",".to_owned()),
        Just("=".to_owned()),
        Just(":".to_owned()),
        Just("\0".to_owned()),
        Just("help".to_owned()),
        prop::sample::select(vec![
            "heap",
            "cpu",
            "monitor",
            "format",
            "file",
            "net",
            "depth",
            "interval",
            "cutoff",
            "lineno",
            "thread",
            "doe",
            "msa",
            "force",
            "verbose",
            "gc_okay",
            "primfields",
            "primarrays",
            "logflags",
            "debugflags",
            "coredump",
            "errorexit",
            "pause",
            "debug",
            "X",
            "exitpause",
            "precrash",
            "alloc_interval",
        ])
        .prop_map(|name| format!("{name}=")),
        prop::sample::select(vec![
            "y",
            "n",
            "dump",
            "sites",
            "all",
            "samples",
            "times",
            "old",
            "a",
            "b",
            "0x1p-3",
            "-1",
            "0",
            "65535",
            "65536",
            "1e308",
            "nan",
            "inf",
            "512k",
            "99999999999999999999g",
            " 7",
            "010",
        ])
        .prop_map(str::to_owned),
        "\\PC{0,20}",
        "[0-9a-z.:,=]{0,12}",
        // Long values, around HPROF's 4096-byte value buffer.
        (4090usize..4100).prop_map(|n| "é".repeat(n / 2) + &"x".repeat(n % 2)),
    ]
}

fn option_string() -> impl Strategy<Value = String> {
    prop::collection::vec(piece(), 0..12).prop_map(|pieces| pieces.concat())
}

/// Cases per property: `HPROF_RS_FUZZ_CASES` (default 2,000), as for the
/// fuzz targets of tests/fuzz_readers.rs.
fn config() -> ProptestConfig {
    let cases = std::env::var("HPROF_RS_FUZZ_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(2_000);
    ProptestConfig::with_cases(cases)
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn arbitrary_strings_never_panic(cmdline in any::<Option<String>>(), env in any::<Option<String>>()) {
        let _ = parse(cmdline.as_deref(), env.as_deref());
    }

    #[test]
    fn structured_strings_never_panic_and_are_consistent(
        cmdline in prop::option::of(option_string()),
        env in prop::option::of(option_string()),
    ) {
        match parse(cmdline.as_deref(), env.as_deref()) {
            Ok(Parsed::Help) => {
                // Only the command line, up to a NUL as a C string would end, counts.
                let before_nul = cmdline.as_deref().and_then(|c| c.split('\0').next());
                prop_assert_eq!(before_nul, Some("help"));
            }
            Ok(Parsed::Options(o)) => {
                prop_assert!(o.interval_ms > 0);
                prop_assert!(o.cutoff >= 0.0);
                let timing_depth = if o.cpu_old { 2 } else { o.depth };
                prop_assert_eq!(o.prof_trace_depth, timing_depth);
                prop_assert!(!o.cpu_old || o.cpu_times);
                prop_assert!(o.cpu_samples || o.cpu_times || o.monitor || o.heap_sites || o.heap_dump);
                if let Destination::Net { port, .. } = o.destination {
                    prop_assert!(port > 0);
                }
                prop_assert!(!o.combined.contains('\0'));
            }
            Err(e) => {
                prop_assert!(!e.description.is_empty());
                prop_assert!(e.message().starts_with("HPROF ERROR: hprof option error: "));
                prop_assert!(e.message().ends_with(" [options.rs]"));
                prop_assert!(!e.message().contains('\n') || e.combined.contains('\n'));
            }
        }
    }
}

#[test]
fn very_long_inputs_do_not_panic() {
    let long = "x".repeat(1 << 20);
    for cmdline in [
        long.clone(),
        format!("file={long}"),
        format!("net={long}:{long}"),
        format!("depth={long}"),
        format!("cutoff=0x{}", "f".repeat(100_000)),
        format!("cutoff=0.{}1", "0".repeat(100_000)),
        format!("alloc_interval={}", "9".repeat(100_000)),
        ",".repeat(100_000),
        "=".repeat(100_000),
    ] {
        let _ = parse(Some(&cmdline), Some(&cmdline));
    }
}
