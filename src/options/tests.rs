use super::*;

/// Parses a command line with no environment; panics on error or help.
fn ok(cmdline: &str) -> Options {
    match parse(Some(cmdline), None) {
        Ok(Parsed::Options(options)) => options,
        other => panic!("{cmdline:?} -> {other:?}"),
    }
}

/// The error description for a command line with no environment.
fn error(cmdline: &str) -> String {
    match parse(Some(cmdline), None) {
        Err(e) => {
            assert_eq!(e.combined, cmdline);
            e.description
        }
        other => panic!("{cmdline:?} should fail, got {other:?}"),
    }
}

/// What `cmdline` should parse to: the defaults with the implicit
/// `heap=all`, changed by `edit`.
fn expected(cmdline: &str, edit: impl FnOnce(&mut Options)) -> Options {
    let mut options = Options {
        heap_dump: true,
        heap_sites: true,
        combined: cmdline.to_owned(),
        ..Options::default()
    };
    edit(&mut options);
    if !options.alloc_count_given {
        options.alloc_count_bytecode = options.bytecode_counts_what_was_asked();
        options.alloc_count_sites = options.alloc_count_bytecode;
    }
    options
}

fn no_heap(o: &mut Options) {
    o.heap_dump = false;
    o.heap_sites = false;
}

const SWITCHES: &[&str] = &[
    "monitor",
    "lineno",
    "thread",
    "doe",
    "msa",
    "force",
    "verbose",
    "gc_okay",
    "primfields",
    "primarrays",
    "coredump",
    "errorexit",
    "pause",
    "debug",
];

#[test]
fn defaults() {
    let d = Options::default();
    assert!(!d.heap_dump && !d.heap_sites && !d.cpu_samples && !d.cpu_times && !d.cpu_old);
    assert!(!d.monitor);
    assert_eq!(d.format, Format::Ascii);
    assert_eq!(d.destination, Destination::File(None));
    assert_eq!((d.depth, d.prof_trace_depth, d.interval_ms), (4, 4, 10));
    assert_eq!(d.cutoff, 0.0001);
    assert!(d.lineno && !d.thread && d.doe && !d.msa && d.force && d.verbose);
    assert!(!d.gc_okay && d.primfields && d.primarrays);
    assert_eq!((d.logflags, d.debugflags, d.experiment), (0, 0, 0));
    assert!(!d.coredump && !d.errorexit && !d.pause && !d.debug);
    assert_eq!(d.alloc_interval, 0);
    assert_eq!(d.combined, "");
    assert_eq!(d.default_file_name(), "java.hprof.txt");

    // No options at all: HPROF's defaults plus heap=all.
    for (cmdline, env) in [
        (None, None),
        (Some(""), None),
        (None, Some("")),
        (Some(""), Some("")),
    ] {
        assert_eq!(
            parse(cmdline, env),
            Ok(Parsed::Options(expected("", |_| {})))
        );
    }
}

#[test]
fn every_option_is_accepted() {
    type Edit = fn(&mut Options);
    let cases: &[(&str, Edit)] = &[
        ("heap=dump", |o| o.heap_sites = false),
        ("heap=sites", |o| o.heap_dump = false),
        ("heap=all", |_| {}),
        ("cpu=samples", |o| {
            no_heap(o);
            o.cpu_samples = true;
        }),
        ("cpu=y", |o| {
            no_heap(o);
            o.cpu_samples = true;
        }),
        ("cpu=times", |o| {
            no_heap(o);
            (o.cpu_times, o.timing_by_samples) = (true, true);
        }),
        ("cpu=times,timing=calls", |o| {
            no_heap(o);
            (o.cpu_times, o.timing_given) = (true, true);
        }),
        ("cpu=old", |o| {
            no_heap(o);
            (o.cpu_times, o.cpu_old, o.prof_trace_depth) = (true, true, 2);
        }),
        ("monitor=y", |o| {
            no_heap(o);
            o.monitor = true;
        }),
        ("monitor=n", |_| {}),
        ("format=a", |_| {}),
        ("format=b", |o| o.format = Format::Binary),
        ("file=out.txt", |o| {
            o.destination = Destination::File(Some("out.txt".into()))
        }),
        ("file=données é.hprof", |o| {
            o.destination = Destination::File(Some("données é.hprof".into()));
        }),
        ("file=a=b:c", |o| {
            o.destination = Destination::File(Some("a=b:c".into()))
        }),
        ("net=localhost:8000", |o| {
            o.destination = Destination::Net {
                host: "localhost".into(),
                port: 8000,
            };
        }),
        ("net=10.0.0.1:1", |o| {
            o.destination = Destination::Net {
                host: "10.0.0.1".into(),
                port: 1,
            };
        }),
        ("net=h:065535", |o| {
            o.destination = Destination::Net {
                host: "h".into(),
                port: 65535,
            }
        }),
        // As in HPROF the host runs up to ':' even across a comma.
        ("net=a,b:9", |o| {
            o.destination = Destination::Net {
                host: "a,b".into(),
                port: 9,
            }
        }),
        ("depth=0", |o| (o.depth, o.prof_trace_depth) = (0, 0)),
        ("depth=12", |o| (o.depth, o.prof_trace_depth) = (12, 12)),
        ("depth=007", |o| (o.depth, o.prof_trace_depth) = (7, 7)),
        ("depth= +5", |o| (o.depth, o.prof_trace_depth) = (5, 5)),
        ("depth=-0", |o| (o.depth, o.prof_trace_depth) = (0, 0)),
        ("depth=2147483647", |o| {
            (o.depth, o.prof_trace_depth) = (i32::MAX as u32, i32::MAX as u32)
        }),
        ("interval=1", |o| o.interval_ms = 1),
        ("interval=20", |o| o.interval_ms = 20),
        ("cutoff=0", |o| o.cutoff = 0.0),
        ("cutoff=0.05", |o| o.cutoff = 0.05),
        ("cutoff=1e-3", |o| o.cutoff = 0.001),
        ("cutoff= .5", |o| o.cutoff = 0.5),
        ("cutoff=0x1p-4", |o| o.cutoff = 0.0625),
        ("cutoff=inf", |o| o.cutoff = f64::INFINITY),
        ("lineno=n", |o| o.lineno = false),
        ("thread=y", |o| o.thread = true),
        ("doe=n", |o| o.doe = false),
        ("msa=y", |o| o.msa = true),
        ("force=n", |o| o.force = false),
        ("verbose=n", |o| o.verbose = false),
        ("gc_okay=y", |o| o.gc_okay = true),
        ("primfields=n", |o| o.primfields = false),
        ("primarrays=n", |o| o.primarrays = false),
        ("coredump=y", |o| o.coredump = true),
        ("errorexit=y", |o| o.errorexit = true),
        ("pause=y", |o| o.pause = true),
        ("debug=y", |o| o.debug = true),
        ("logflags=4", |o| o.logflags = 4),
        ("logflags=0xC", |o| o.logflags = 12),
        ("logflags=010", |o| o.logflags = 8),
        ("logflags=junk", |o| o.logflags = 0),
        ("logflags=3junk", |o| o.logflags = 3),
        ("debugflags=0x1", |o| o.debugflags = 1),
        ("debugflags=-1", |o| o.debugflags = -1),
        ("X=0x1", |o| o.experiment = 1),
        ("X=99999999999999999999", |o| o.experiment = i64::MAX),
        ("alloc_interval=0", |_| {}),
        ("alloc_interval=0k", |_| {}),
        ("alloc_interval=4096", |o| o.alloc_interval = 4096),
        ("alloc_interval=512k", |o| o.alloc_interval = 512 * 1024),
        ("alloc_interval=3K", |o| o.alloc_interval = 3 * 1024),
        ("alloc_interval=2m", |o| o.alloc_interval = 2 << 20),
        ("alloc_interval=2M", |o| o.alloc_interval = 2 << 20),
        ("alloc_interval=1g", |o| o.alloc_interval = 1 << 30),
        ("alloc_interval=16G", |o| o.alloc_interval = 16 << 30),
        // A trailing comma ends the string like HPROF's loop does.
        ("depth=3,", |o| (o.depth, o.prof_trace_depth) = (3, 3)),
    ];
    for (cmdline, edit) in cases {
        assert_eq!(ok(cmdline), expected(cmdline, edit), "{cmdline:?}");
    }
}

#[test]
fn every_switch_takes_exactly_y_or_n() {
    for name in SWITCHES {
        for (value, set) in [("y", true), ("n", false)] {
            let options = ok(&format!("{name}={value}"));
            let mut field = options.clone();
            *switch(&mut field, name).unwrap() = !set;
            assert_ne!(options, field, "{name}={value} sets {name}");
        }
        let message = format!("{name} option value must be y|n");
        for bad in ["", "Y", "N", "yes", "no", "1", "true", " y", "y ", "é"] {
            assert_eq!(error(&format!("{name}={bad}")), message, "{name}={bad}");
        }
        // Name without '=' at the end: the value is missing.
        assert_eq!(error(&format!("depth=2,{name}")), message);
    }
}

#[test]
fn every_error_text() {
    let long_name = "abcdefghijklmnop"; // 16 bytes: does not fit HPROF's buffer
    let long_file = format!("file={}", "x".repeat(4097));
    let cases: Vec<(String, &str)> = [
        ("=5", "general syntax error parsing options"),
        ("depth=4,=3", "general syntax error parsing options"),
        ("abcdefghijklmnop=1", "general syntax error parsing options"),
        (
            "verbose=y,abcdefghijklmnopq",
            "general syntax error parsing options",
        ),
        ("éééééééé=1", "general syntax error parsing options"),
        ("abcdefghijklmno=1", "Unknown option: abcdefghijklmno"),
        ("help,cpu=samples", "Unknown option: help,cpu"),
        ("help=y", "Unknown option: help"),
        ("Depth=1", "Unknown option: Depth"),
        ("depth=3,,cpu=y", "Unknown option: ,cpu"),
        ("é=1", "Unknown option: é"),
        ("heap", "syntax error parsing heap=dump|sites|all"),
        ("heap=", "syntax error parsing heap=dump|sites|all"),
        ("heap=,cpu=y", "syntax error parsing heap=dump|sites|all"),
        ("heap=Dump", "heap option value must be dump|sites|all"),
        ("heap=none", "heap option value must be dump|sites|all"),
        ("cpu", "syntax error parsing cpu=y|samples|times|old|wall"),
        ("cpu=", "syntax error parsing cpu=y|samples|times|old|wall"),
        ("cpu=n", "cpu option value must be y|samples|times|old|wall"),
        ("cpu=sample", "cpu option value must be y|samples|times|old|wall"),
        ("cpu=wall,cpu=samples", "cpu=wall samples every thread by the clock: it cannot be combined with cpu=samples, cpu=times or cpu=old"),
        ("cpu=times,cpu=wall", "cpu=wall samples every thread by the clock: it cannot be combined with cpu=samples, cpu=times or cpu=old"),
        ("format=", "syntax error parsing format=a|b"),
        ("format=c", "format option value must be a|b"),
        ("format=B", "format option value must be a|b"),
        ("file", "syntax error parsing file=filename"),
        ("file=", "syntax error parsing file=filename"),
        (
            "file=a,file=b",
            "file or net options should only appear once",
        ),
        (
            "file=a,net=h:1",
            "file or net options should only appear once",
        ),
        (
            "net=h:1,file=a",
            "file or net options should only appear once",
        ),
        (
            "net=h:1,net=h:2",
            "file or net options should only appear once",
        ),
        ("file=,file=a", "syntax error parsing file=filename"),
        ("net", "net option missing ':'"),
        ("net=", "net option missing ':'"),
        ("net=:8000", "net option missing ':'"),
        ("net=localhost", "net option missing port"),
        ("net=localhost:", "net option missing port"),
        ("net=localhost:,cpu=y", "net option missing port"),
        ("net=localhost,cpu=samples", "net option missing port"),
        ("net=h:0", PORT_ERROR),
        ("net=h:65536", PORT_ERROR),
        ("net=h:70000", PORT_ERROR),
        ("net=h:http", PORT_ERROR),
        ("net=h:+80", PORT_ERROR),
        ("net=h: 80", PORT_ERROR),
        ("net=h:80x", PORT_ERROR),
        ("net=h:80:90", PORT_ERROR),
        ("net=h:99999999999999999999999", PORT_ERROR),
        ("depth", "syntax error parsing depth=DECIMAL"),
        ("depth=", "syntax error parsing depth=DECIMAL"),
        ("depth=-1", "depth option value must be decimal and >= 0"),
        ("depth=abc", "depth option value must be decimal and >= 0"),
        ("depth=4x", "depth option value must be decimal and >= 0"),
        ("depth=4 ", "depth option value must be decimal and >= 0"),
        ("depth=4.0", "depth option value must be decimal and >= 0"),
        ("depth=0x4", "depth option value must be decimal and >= 0"),
        (
            "depth=2147483648",
            "depth option value must be decimal and >= 0",
        ),
        ("depth= ", "depth option value must be decimal and >= 0"),
        ("interval", "syntax error parsing interval=DECIMAL"),
        ("interval=", "syntax error parsing interval=DECIMAL"),
        (
            "interval=0",
            "interval option value must be decimal and > 0",
        ),
        (
            "interval=-5",
            "interval option value must be decimal and > 0",
        ),
        (
            "interval=1.5",
            "interval option value must be decimal and > 0",
        ),
        (
            "interval=ten",
            "interval option value must be decimal and > 0",
        ),
        ("cutoff", "syntax error parsing cutoff=DOUBLE"),
        ("cutoff=", "syntax error parsing cutoff=DOUBLE"),
        (
            "cutoff=-0.1",
            "cutoff option value must be floating point and >= 0",
        ),
        (
            "cutoff=-inf",
            "cutoff option value must be floating point and >= 0",
        ),
        (
            "cutoff=nan",
            "cutoff option value must be floating point and >= 0",
        ),
        (
            "cutoff=NAN(1)",
            "cutoff option value must be floating point and >= 0",
        ),
        (
            "cutoff=1x",
            "cutoff option value must be floating point and >= 0",
        ),
        (
            "cutoff=1%",
            "cutoff option value must be floating point and >= 0",
        ),
        ("logflags", "logflags option value must be numeric"),
        ("logflags=", "logflags option value must be numeric"),
        ("debugflags=", "debugflags option value must be numeric"),
        ("X=", "X option value must be numeric"),
        ("X", "X option value must be numeric"),
        ("alloc_interval", ALLOC_INTERVAL_ERROR),
        ("alloc_interval=", ALLOC_INTERVAL_ERROR),
        ("alloc_interval=k", ALLOC_INTERVAL_ERROR),
        ("alloc_interval=-1", ALLOC_INTERVAL_ERROR),
        ("alloc_interval=+1", ALLOC_INTERVAL_ERROR),
        ("alloc_interval=1x", ALLOC_INTERVAL_ERROR),
        ("alloc_interval=1kb", ALLOC_INTERVAL_ERROR),
        ("alloc_interval=1 k", ALLOC_INTERVAL_ERROR),
        ("alloc_interval=1.5m", ALLOC_INTERVAL_ERROR),
        ("alloc_interval=99999999999999999999", ALLOC_INTERVAL_ERROR),
        ("alloc_interval=17179869184g", ALLOC_INTERVAL_ERROR),
        (
            "exitpause",
            "The exitpause option was removed, use -XX:OnError='cmd %p'",
        ),
        (
            "exitpause=y",
            "The exitpause option was removed, use -XX:OnError='cmd %p'",
        ),
        (
            "precrash=y",
            "The precrash option was removed, use -XX:OnError='precrash -p %p'",
        ),
        (
            "precrash=",
            "The precrash option was removed, use -XX:OnError='precrash -p %p'",
        ),
        // Derived checks.
        (
            "format=b,cpu=times",
            "cpu=times|old is not supported with format=b",
        ),
        (
            "cpu=old,format=b",
            "cpu=times|old is not supported with format=b",
        ),
        (
            "format=b,cpu=old,cpu=samples",
            "cpu=times|old is not supported with format=b",
        ),
        (
            "format=b,monitor=y",
            "monitor=y is not supported with format=b",
        ),
        (
            "format=b,monitor=y,cpu=times",
            "cpu=times|old is not supported with format=b",
        ),
        // The first error in the string wins.
        (
            "heap=foo,depth=-1",
            "heap option value must be dump|sites|all",
        ),
        (
            "depth=-1,format=b,cpu=times",
            "depth option value must be decimal and >= 0",
        ),
    ]
    .into_iter()
    .map(|(cmdline, description)| (cmdline.to_owned(), description))
    .chain([
        (long_name.to_owned(), "general syntax error parsing options"),
        (long_file, "syntax error parsing file=filename"),
        (
            format!("net={}:1", "h".repeat(4097)),
            "net option missing ':'",
        ),
        (
            format!("heap={}", "x".repeat(4097)),
            "syntax error parsing heap=dump|sites|all",
        ),
    ])
    .collect();
    for (cmdline, description) in &cases {
        assert_eq!(error(cmdline), *description, "{cmdline:?}");
    }
}

#[test]
fn heap_sites_counts_in_the_bytecode_unless_the_options_need_events() {
    assert!(ok("heap=sites").alloc_count_bytecode);
    assert!(ok("").alloc_count_bytecode, "heap=all");
    assert!(ok("heap=sites,depth=4,format=b").alloc_count_bytecode);
    assert!(!ok("heap=dump").alloc_count_bytecode, "no heap=sites");
    // Deep traces and rows per thread come from the counted path's walks.
    for counted in [
        "heap=sites,thread=y",
        "heap=sites,depth=5",
        "heap=sites,depth=64",
        "heap=sites,cpu=times",
        "heap=sites,cpu=old",
        "heap=sites,net=localhost:5000",
    ] {
        let options = ok(counted);
        assert!(options.alloc_count_sites, "{counted}");
    }
    assert!(!ok("heap=sites,alloc_interval=512k").alloc_count_bytecode);
    assert!(!ok("heap=sites,alloc_count=events").alloc_count_bytecode);
    assert!(ok("heap=sites,thread=y,alloc_count=bytecode").alloc_count_bytecode);
    // Rows from the live sample by default; calling contexts when asked for.
    assert!(ok("heap=sites").alloc_count_sites);
    let sites = ok("heap=sites,alloc_count=sites");
    assert!(sites.alloc_count_bytecode && sites.alloc_count_sites);
    let contexts = ok("heap=sites,alloc_count=bytecode");
    assert!(contexts.alloc_count_bytecode && !contexts.alloc_count_sites);
    assert!(!ok("heap=sites,alloc_count=sites,alloc_count=events").alloc_count_sites);
}

#[test]
fn value_length_limit_is_hprofs() {
    let name = "x".repeat(4096);
    let options = ok(&format!("file={name}"));
    assert_eq!(options.destination, Destination::File(Some(name)));
}

#[test]
fn heap_and_cpu_accumulate() {
    assert_eq!(
        ok("heap=dump,heap=sites"),
        expected("heap=dump,heap=sites", |_| {})
    );
    assert_eq!(
        ok("heap=sites,heap=sites"),
        expected("heap=sites,heap=sites", |o| o.heap_dump = false)
    );

    let both = ok("cpu=samples,cpu=times");
    assert!(both.cpu_samples && both.cpu_times && !both.cpu_old);
    assert!(!both.heap_dump && !both.heap_sites);

    let back = ok("cpu=old,cpu=times,depth=6");
    assert!(back.cpu_times && !back.cpu_old);
    assert_eq!((back.depth, back.prof_trace_depth), (6, 6));

    let old = ok("cpu=times,depth=6,cpu=old");
    assert!(old.cpu_times && old.cpu_old);
    assert_eq!((old.depth, old.prof_trace_depth), (6, 2));

    let mixed = ok("heap=sites,cpu=samples,monitor=y");
    assert!(mixed.heap_sites && !mixed.heap_dump && mixed.cpu_samples && mixed.monitor);
}

#[test]
fn later_values_override_earlier_ones() {
    let o = ok("depth=2,lineno=n,depth=9,lineno=y,interval=5,interval=7,cutoff=1,cutoff=0.5");
    assert_eq!((o.depth, o.interval_ms, o.cutoff), (9, 7, 0.5));
    assert!(o.lineno);
    assert_eq!(ok("format=b,format=a").format, Format::Ascii);
    assert_eq!(ok("logflags=1,logflags=2").logflags, 2);
    assert_eq!(ok("alloc_interval=1k,alloc_interval=0").alloc_interval, 0);
    assert!(!ok("monitor=y,monitor=n").monitor);
}

#[test]
fn environment_is_appended() {
    let cases = [
        (Some("cpu=samples"), Some("depth=2"), "cpu=samples,depth=2"),
        (None, Some("depth=2"), "depth=2"),
        (Some(""), Some("depth=2"), "depth=2"),
        (Some("depth=2"), None, "depth=2"),
        (Some("depth=2"), Some(""), "depth=2"),
    ];
    for (cmdline, env, combined) in cases {
        let Ok(Parsed::Options(o)) = parse(cmdline, env) else {
            panic!("{cmdline:?} {env:?}");
        };
        assert_eq!(o.combined, combined);
        assert_eq!(o.depth, 2);
    }
    // The environment comes last, so it overrides.
    let Ok(Parsed::Options(o)) = parse(Some("depth=3,thread=y"), Some("depth=5")) else {
        panic!()
    };
    assert_eq!(
        (o.depth, o.thread, o.combined.as_str()),
        (5, true, "depth=3,thread=y,depth=5")
    );
    // Anything after a NUL never reached HPROF.
    assert_eq!(
        parse(Some("depth=3\0junk"), Some("\0junk")),
        Ok(Parsed::Options(expected("depth=3", |o| {
            (o.depth, o.prof_trace_depth) = (3, 3);
        })))
    );
}

#[test]
fn combined_string_is_in_the_error() {
    let e = parse(Some("depth=x"), Some("cpu=samples")).unwrap_err();
    assert_eq!(e.description, "depth option value must be decimal and >= 0");
    assert_eq!(e.combined, "depth=x,cpu=samples");
    assert_eq!(
        e.to_string(),
        "hprof option error: depth option value must be decimal and >= 0 (depth=x,cpu=samples)"
    );
    assert_eq!(
        e.message(),
        "HPROF ERROR: hprof option error: depth option value must be decimal and >= 0 \
         (depth=x,cpu=samples) [options.rs]"
    );
    // An error in the environment part also reports the whole string.
    let e = parse(Some("heap=sites"), Some("bogus=1")).unwrap_err();
    assert_eq!(
        e.message(),
        "HPROF ERROR: hprof option error: Unknown option: bogus (heap=sites,bogus=1) [options.rs]"
    );
}

#[test]
fn help_only_when_exactly_help() {
    assert_eq!(parse(Some("help"), None), Ok(Parsed::Help));
    assert_eq!(parse(Some("help"), Some("cpu=bogus")), Ok(Parsed::Help));
    assert_eq!(parse(Some("help\0x"), None), Ok(Parsed::Help));
    for (cmdline, env, description) in [
        (Some("help,cpu=samples"), None, "Unknown option: help,cpu"),
        (Some("help "), None, "Unknown option: help "),
        (Some("HELP"), None, "Unknown option: HELP"),
        (Some("help,"), None, "Unknown option: help,"),
        (None, Some("help"), "Unknown option: help"),
        (Some(""), Some("help"), "Unknown option: help"),
    ] {
        assert_eq!(parse(cmdline, env).unwrap_err().description, description);
    }
}

#[test]
fn derived_settings() {
    // 1 and 2: binary output with timing or monitors is refused (tested in
    // every_error_text); binary with sampling or heap is fine.
    let b = ok("format=b,cpu=samples,heap=dump,monitor=y,monitor=n");
    assert_eq!(b.format, Format::Binary);
    assert_eq!(b.default_file_name(), "java.hprof");
    // 3: cpu=old uses two frames for timing traces, depth elsewhere.
    let old = ok("depth=10,cpu=old");
    assert_eq!((old.depth, old.prof_trace_depth), (10, 2));
    assert_eq!(ok("depth=10,cpu=times").prof_trace_depth, 10);
    // 4: nothing selected means heap=all; any cpu or monitor turns it off.
    for cmdline in ["", "depth=1,thread=y", "format=b", "file=x", "monitor=n"] {
        let o = ok(cmdline);
        assert!(o.heap_dump && o.heap_sites, "{cmdline:?}");
    }
    for cmdline in ["cpu=samples", "cpu=times", "cpu=old", "monitor=y"] {
        let o = ok(cmdline);
        assert!(!o.heap_dump && !o.heap_sites, "{cmdline:?}");
    }
    // Destinations.
    assert_eq!(
        ok("file=prof.out").destination,
        Destination::File(Some("prof.out".into()))
    );
    assert!(matches!(ok("net=h:1").destination, Destination::Net { .. }));
}

#[test]
fn a_file_name_that_is_not_utf8_is_recovered_byte_for_byte() {
    assert_eq!(
        super::raw_file_value(b"heap=sites,file=out-\xff.txt,depth=2"),
        Some(&b"out-\xff.txt"[..])
    );
    assert_eq!(super::raw_file_value(b"heap=sites,file=out.txt"), None);
    assert_eq!(super::raw_file_value(b"heap=sites,depth=\xff"), None);
}

#[test]
fn include_and_exclude_choose_the_timed_classes() {
    let options = ok("cpu=times,include=com.acme.*:org.foo.Bar,exclude=com.acme.Slow");
    let filter = &options.class_filter;
    assert!(filter.is_active());
    assert!(filter.times("com/acme/Fast") && filter.times("org/foo/Bar$1"));
    assert!(!filter.times("com/acme/Slow") && !filter.times("java/lang/String"));
    // Repeated options and the environment add patterns.
    let parsed = parse(Some("cpu=old,include=a.*"), Some("include=b.C")).unwrap();
    let Parsed::Options(options) = parsed else {
        panic!("{parsed:?}")
    };
    assert!(options.class_filter.times("a/X") && options.class_filter.times("b/C"));
    assert!(!ok("cpu=times").class_filter.is_active());
}

#[test]
fn include_and_exclude_errors() {
    let syntax = "include option value must be class or package patterns separated by ':', \
                  e.g. com.acme.*:org.foo.Bar (* within a package, ** across packages)";
    assert_eq!(error("cpu=times,include=com..acme"), syntax);
    assert_eq!(error("cpu=times,include=com/acme/*"), syntax);
    assert_eq!(
        error("cpu=times,exclude=a:"),
        syntax.replacen("include", "exclude", 1)
    );
    assert_eq!(
        error("cpu=times,include="),
        "syntax error parsing include=PATTERN[:PATTERN...]"
    );
    let needs_times = "include and exclude choose the classes cpu=times|old times: \
                       they need cpu=times or cpu=old";
    assert_eq!(error("include=com.acme.*"), needs_times);
    assert_eq!(error("heap=sites,exclude=com.acme.*"), needs_times);
    assert_eq!(error("cpu=samples,include=a.B"), needs_times);
    // Each value fits the 4096 bytes of a value; together they do not.
    let half = vec!["abcdefgh"; 300].join(":");
    let many = format!("cpu=times,include={half},exclude={half}");
    assert_eq!(
        error(&many),
        "include and exclude patterns may hold at most 4096 characters in all"
    );
}

#[test]
fn cpu_times_is_timed_from_samples_unless_a_filter_cpu_old_or_timing_calls_says_otherwise() {
    assert!(ok("cpu=times").timing_by_samples);
    assert!(ok("cpu=times,timing=samples").timing_by_samples);
    assert!(!ok("cpu=times,timing=calls").timing_by_samples);
    assert!(!ok("cpu=times,include=com.acme.*").timing_by_samples);
    assert!(!ok("cpu=times,exclude=com.acme.*").timing_by_samples);
    assert!(!ok("cpu=old").timing_by_samples);
    assert!(!ok("cpu=samples").timing_by_samples);
    assert!(!ok("heap=sites").timing_by_samples);
    // A later value overrides an earlier one, as for every option.
    assert!(!ok("cpu=times,timing=samples,timing=calls").timing_by_samples);
}

#[test]
fn timing_errors() {
    assert_eq!(
        error("cpu=times,timing=exact"),
        "timing option value must be samples or calls"
    );
    assert_eq!(
        error("cpu=samples,timing=calls"),
        "timing chooses how cpu=times times: it needs cpu=times"
    );
    let every_call = "timing=samples is for cpu=times without include or exclude: \
                      cpu=old and the filters time every call";
    assert_eq!(error("cpu=times,timing=samples,include=a.*"), every_call);
    assert_eq!(error("cpu=old,timing=samples"), every_call);
    assert!(!ok("cpu=old,timing=calls").timing_by_samples);
}

#[test]
fn main_stays_on_the_launcher_s_thread_unless_main_stack_is_asked() {
    assert!(!ok("heap=sites").main_stack);
    assert!(!ok("cpu=times").main_stack);
    assert!(ok("cpu=times,main_stack=y").main_stack);
    assert!(!ok("heap=sites,main_stack=n").main_stack);
}
