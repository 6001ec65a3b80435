//! The usage text printed for `-agentlib:hprof=help`.
//!
//! The layout follows HPROF's: an empty first line, an indented title, the
//! usage line, then the option table with the description at column 23 and
//! the default at column 54 (0-based), then titled sections, each title
//! underlined with dashes and the sections separated by one blank line.

/// 0-based column where the description starts.
pub(crate) const DESCRIPTION_COLUMN: usize = 23;
/// 0-based column where the default value starts.
pub(crate) const DEFAULT_COLUMN: usize = 54;

/// (option and value, description, default). The first two rows are the
/// table's own heading; the HPROF rows keep HPROF's wording and defaults.
const TABLE: &[(&str, &str, &str)] = &[
    ("Option Name and Value", "Description", "Default"),
    ("---------------------", "-----------", "-------"),
    ("heap=dump|sites|all", "heap profiling", "all"),
    ("cpu=samples|times|old", "CPU usage", "off"),
    ("monitor=y|n", "monitor contention", "n"),
    ("format=a|b", "text(txt) or binary output", "a"),
    ("file=<file>", "write data to file", "java.hprof[{.txt}]"),
    ("net=<host>:<port>", "send data over a socket", "off"),
    ("depth=<size>", "stack trace depth", "4"),
    ("interval=<ms>", "sample interval in ms", "10"),
    ("cutoff=<value>", "output cutoff point", "0.0001"),
    ("lineno=y|n", "line number in traces?", "y"),
    ("thread=y|n", "thread in traces?", "n"),
    ("doe=y|n", "dump on exit?", "y"),
    ("msa=y|n", "Solaris micro state accounting", "n"),
    ("force=y|n", "force output to <file>", "y"),
    ("verbose=y|n", "print messages about dumps", "y"),
    (
        "alloc_interval=<size>",
        "alloc sampling (hprof-rs)",
        "0 (exact)",
    ),
    ("alloc_count=<how>", "how sites count (hprof-rs)", "sites*"),
    (
        "timing=samples|calls",
        "cpu=times timing (hprof-rs)",
        "samples*",
    ),
    ("main_stack=y|n", "main() stack x3 (hprof-rs)", "n"),
    ("include=<patterns>", "time only these (hprof-rs)", "all"),
    ("exclude=<patterns>", "never time these (hprof-rs)", "none"),
];

const TITLE: &str = "     HPROF-RS: Heap and CPU Profiling Agent (drop-in replacement for HPROF)";
const USAGE: &str = "hprof usage: java -agentlib:hprof=[help]|[<option>=<value>, ...]";

/// Titled sections after the table, in order.
const SECTIONS: &[(&str, &[&str])] = &[
    ("Obsolete Options", &["gc_okay=y|n"]),
    (
        "Examples",
        &[
            "  - Sample the running threads every 20 ms, keeping 3 frames per trace:",
            "      java -agentlib:hprof=cpu=samples,interval=20,depth=3 classname",
            "  - Show where the heap was allocated, grouped by allocation site:",
            "      java -agentlib:hprof=heap=sites classname",
        ],
    ),
    (
        "Notes",
        &[
            "  - format=b cannot be combined with monitor=y.",
            "  - format=b cannot be combined with cpu=old or cpu=times.",
            "  - The old -Xrun form",
            "       java -Xrunhprof:[help]|[<option>=<value>, ...]",
            "    is treated exactly like",
            "       java -agentlib:hprof=[help]|[<option>=<value>, ...]",
            "  - Loaded under its own name (-agentlib:hprof_rs=...) the agent takes",
            "    the same options.",
            "  - The environment variable _JAVA_HPROF_OPTIONS, if set, is added after",
            "    the command-line options (with a comma in between when both are",
            "    present), so it can supply or override options.",
            "  - alloc_interval is an hprof-rs addition: a byte count, optionally",
            "    followed by k, m or g (e.g. alloc_interval=512k). 0, the default,",
            "    records every allocation.",
            "  - alloc_count is an hprof-rs addition: sites counts every",
            "    allocation of heap=sites per site with counters in the rewritten",
            "    classes (exact per site; traces of depth frames, per thread with",
            "    thread=y, from a sample that sees every object of the first 8 MiB",
            "    and from each site's first allocations, so past 8 MiB a site's",
            "    split among its callers and threads is an estimate), bytecode the",
            "    same with calling contexts kept in the code (every trace's counts",
            "    exact, traces of 4 frames at most, not split by thread, slower),",
            "    events takes one JVM event per object. *sites with every other",
            "    option (depth, thread, net=, cpu=); alloc_interval samples.",
            "  - cpu=wall is an hprof-rs addition: every live thread sampled every",
            "    interval ms of wall-clock time, whatever it does, with its state",
            "    (running, native, blocked, waiting, sleeping); written as CPU",
            "    SAMPLES marked (wall clock), with a WALL STATES block after it.",
            "  - timing is an hprof-rs addition for cpu=times: samples counts every",
            "    call exactly (per method; a method's calls shared among its traces",
            "    by their samples) and takes times and traces from samples of each",
            "    thread's CPU every 1 ms (time asleep or waiting is not charged);",
            "    calls times every call with a 1 ms wall clock, as HPROF did.",
            "    *samples unless cpu=old, include or exclude is given, which time",
            "    every call.",
            "  - include and exclude are hprof-rs additions for cpu=times|old: class",
            "    patterns separated by ':' (include=com.acme.*:org.foo.Bar); * stays",
            "    within a package, ** takes in subpackages, and a class takes in its",
            "    nested classes. Only the matching classes are rewritten and timed;",
            "    exclude wins over include.",
        ],
    ),
    (
        "Cautions",
        &[
            "  - heap=dump, heap=sites, cpu=times and cpu=old add work to every",
            "    allocation or method call and can slow the program down a lot;",
            "    cpu=samples and monitor=y cost much less.",
            "  - The -Xrun form is a legacy interface that a future JDK may drop.",
            "  - The binary format (format=b) is HPROF's \"JAVA PROFILE 1.0.x\" layout,",
            "    meant for the tools that read HPROF files.",
        ],
    ),
];

/// One table row, padded so that the columns line up.
fn table_row(name: &str, description: &str, default: &str) -> String {
    let description_width = DEFAULT_COLUMN - DESCRIPTION_COLUMN;
    format!("{name:<DESCRIPTION_COLUMN$}{description:<description_width$}{default}")
}

/// The full help text, ending with a newline.
pub fn help_text() -> String {
    let mut out = String::new();
    let mut line = |text: &str| {
        out.push_str(text);
        out.push('\n');
    };
    line("");
    line(TITLE);
    line("");
    line(USAGE);
    line("");
    for &(name, description, default) in TABLE {
        line(&table_row(name, description, default));
    }
    for &(title, body) in SECTIONS {
        line("");
        line(title);
        line(&"-".repeat(title.len()));
        for text in body {
            line(text);
        }
    }
    debug_assert!(out.lines().all(|l| l.len() <= 80 && l.trim_end() == l));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_like_hprof() {
        let text = help_text();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "");
        assert!(lines[1].starts_with("     HPROF-RS: ") && !lines[1].starts_with("      "));
        assert_eq!(lines[2], "");
        assert_eq!(lines[3], USAGE);
        assert_eq!(lines[4], "");
        assert!(text.ends_with("meant for the tools that read HPROF files.\n"));
        assert!(!text.ends_with("\n\n"));
    }

    #[test]
    fn table_rows_are_exact() {
        let expected = "\
Option Name and Value  Description                    Default
---------------------  -----------                    -------
heap=dump|sites|all    heap profiling                 all
cpu=samples|times|old  CPU usage                      off
monitor=y|n            monitor contention             n
format=a|b             text(txt) or binary output     a
file=<file>            write data to file             java.hprof[{.txt}]
net=<host>:<port>      send data over a socket        off
depth=<size>           stack trace depth              4
interval=<ms>          sample interval in ms          10
cutoff=<value>         output cutoff point            0.0001
lineno=y|n             line number in traces?         y
thread=y|n             thread in traces?              n
doe=y|n                dump on exit?                  y
msa=y|n                Solaris micro state accounting n
force=y|n              force output to <file>         y
verbose=y|n            print messages about dumps     y
alloc_interval=<size>  alloc sampling (hprof-rs)      0 (exact)
alloc_count=<how>      how sites count (hprof-rs)     sites*
timing=samples|calls   cpu=times timing (hprof-rs)    samples*
main_stack=y|n         main() stack x3 (hprof-rs)     n
include=<patterns>     time only these (hprof-rs)     all
exclude=<patterns>     never time these (hprof-rs)    none

Obsolete Options
----------------
gc_okay=y|n
";
        assert!(help_text().contains(expected), "{}", help_text());
    }

    #[test]
    fn table_columns_line_up() {
        let text = help_text();
        let rows: Vec<&str> = text
            .lines()
            .skip_while(|l| !l.starts_with("Option Name and Value"))
            .take_while(|l| !l.is_empty())
            .collect();
        assert_eq!(rows.len(), TABLE.len());
        for row in rows {
            let (name, rest) = row.split_at(DESCRIPTION_COLUMN);
            let (description, default) = rest.split_at(DEFAULT_COLUMN - DESCRIPTION_COLUMN);
            // Each column starts with text and the one before it ends in a space.
            assert!(name.ends_with(' ') && !name.starts_with(' '), "{row:?}");
            assert!(
                description.ends_with(' ') && !description.starts_with(' '),
                "{row:?}"
            );
            assert!(!default.starts_with(' ') && !default.is_empty(), "{row:?}");
        }
    }

    #[test]
    fn sections_are_underlined_and_separated() {
        let text = help_text();
        let lines: Vec<&str> = text.lines().collect();
        for &(title, _) in SECTIONS {
            let at = lines.iter().position(|l| *l == title).expect(title);
            assert_eq!(lines[at - 1], "", "blank line before {title}");
            assert_eq!(
                lines[at + 1],
                "-".repeat(title.len()),
                "underline of {title}"
            );
        }
        for needle in [
            "cpu=samples,interval=20,depth=3 classname",
            "heap=sites classname",
            "-agentlib:hprof_rs",
            "_JAVA_HPROF_OPTIONS",
            "alloc_interval=512k",
            "-Xrunhprof:",
        ] {
            assert!(text.contains(needle), "missing {needle:?}");
        }
        assert!(!text.contains("\n\n\n"));
        assert!(lines.iter().all(|l| l.len() <= 80 && l.trim_end() == *l));
    }
}
