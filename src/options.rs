//! The HPROF option string -> [`Options`].
//!
//! [`parse`] reads the agent option string the way HPROF did (see
//! HPROF behaviour reference, §1.2–§1.4): the same grammar, the same
//! defaults, the same accumulation and override rules and the same error
//! descriptions, so that scripts written for HPROF keep working. Where the
//! behaviour differs on purpose the code says so with `differs from HPROF:`.
//!
//! This module is pure: it neither prints nor exits. The agent prints
//! [`help_text`] or [`OptionError::message`] and ends the process itself.

mod class_filter;
mod cnum;
pub mod experiment;
mod help;

use std::fmt;

pub use class_filter::{ClassFilter, PATTERN_TEXT_MAX};
pub use help::help_text;

/// Output format (`format=a|b`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    /// `format=a`: the text format, the default.
    #[default]
    Ascii,
    /// `format=b`: the binary "JAVA PROFILE 1.0.x" format.
    Binary,
}

/// Where the profile goes.
#[derive(Debug, Clone, PartialEq)]
pub enum Destination {
    /// `file=<name>`; `None` means the default name
    /// ([`Options::default_file_name`]).
    File(Option<String>),
    /// `net=<host>:<port>`.
    Net { host: String, port: u16 },
}

/// Everything the option string selects, after HPROF's derived settings
/// have been applied (the rules are listed at the parser's `derive`).
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// `heap=dump` (or `all`, or nothing at all selected).
    pub heap_dump: bool,
    /// `heap=sites` (or `all`, or nothing at all selected).
    pub heap_sites: bool,
    /// `cpu=samples` / `cpu=y`.
    pub cpu_samples: bool,
    /// Method timing by byte-code instrumentation: set by `cpu=times` *and*
    /// by `cpu=old` (HPROF's `cpu_timing`).
    pub cpu_times: bool,
    /// The timing output uses the old "prof" format (`cpu=old`). Only ever
    /// true together with `cpu_times`; a later `cpu=times` clears it.
    pub cpu_old: bool,
    /// hprof-rs addition, `cpu=wall`: every live thread sampled every
    /// `interval` ms of wall-clock time, whatever it is doing, with its
    /// state (`modes/cpu_wall`).
    pub cpu_wall: bool,
    /// `monitor=y`.
    pub monitor: bool,
    pub format: Format,
    pub destination: Destination,
    /// `depth=`: maximum frames per trace.
    pub depth: u32,
    /// Frames per trace for timing traces: 2 with `cpu=old`, else `depth`.
    pub prof_trace_depth: u32,
    /// `interval=`: sampling period in milliseconds, always > 0.
    pub interval_ms: u32,
    /// `cutoff=`: rows below this fraction are left out; >= 0, never NaN.
    pub cutoff: f64,
    pub lineno: bool,
    pub thread: bool,
    /// Dump on exit.
    pub doe: bool,
    /// Solaris micro-state accounting (a no-op elsewhere).
    pub msa: bool,
    pub force: bool,
    pub verbose: bool,
    /// Obsolete; parsed and ignored.
    pub gc_okay: bool,
    pub primfields: bool,
    pub primarrays: bool,
    pub logflags: i64,
    pub debugflags: i64,
    pub coredump: bool,
    pub errorexit: bool,
    pub pause: bool,
    pub debug: bool,
    /// hprof-rs addition, `main_stack=y`: under the modes that rewrite code,
    /// main() runs on a thread of the agent's with their factor times the
    /// launcher thread's stack (three, ten under cpu=times:
    /// `jvm/thread_stacks.rs`, `jvm/main_stack.rs`). Off by default: the program
    /// then sees another thread than the one that ran its main class's
    /// static initializer (identity, id, thread-locals).
    pub main_stack: bool,
    /// `X=`: experiment bits.
    pub experiment: i64,
    /// hprof-rs addition, `alloc_interval=<bytes>[k|m|g]`: sample one
    /// allocation per this many bytes; 0 (the default) records every one.
    pub alloc_interval: u64,
    /// hprof-rs addition, `alloc_count=bytecode`: heap=sites counts every
    /// allocation with counters injected into the byte code instead of one
    /// JVMTI event per object (`alloc_count=events`), keyed by calling
    /// context (every row exact). Set by `sites` too. Unless the option is
    /// given, `sites` where the byte code gives what was asked (see `finish`).
    pub alloc_count_bytecode: bool,
    /// hprof-rs addition, `alloc_count=sites` (the default where the byte
    /// code counts): counted in the byte code per allocation site without
    /// calling contexts, each site's rows (traces) taken from the live
    /// sample and the site's first allocations: exact while the sample
    /// reports every object, estimated past.
    pub alloc_count_sites: bool,
    /// Whether `alloc_count` was given.
    pub alloc_count_given: bool,
    /// hprof-rs addition, `timing=samples`: cpu=times counts every call on
    /// entry and takes times and traces from CPU samples; `timing=calls`
    /// times every call (HPROF's way). Unless the option is given, samples
    /// for cpu=times without `include=`/`exclude=` (see `derive`).
    pub timing_by_samples: bool,
    /// Whether `timing` was given.
    pub timing_given: bool,
    /// hprof-rs addition, `include=` / `exclude=`: the classes cpu=times
    /// and cpu=old rewrite and time (all but the agent's own by default).
    pub class_filter: ClassFilter,
    /// The full combined option string (command line + "," +
    /// `_JAVA_HPROF_OPTIONS`), as used in error messages.
    pub combined: String,
}

impl Default for Options {
    /// HPROF's defaults, before the implicit `heap=all` (both heap flags
    /// are false here).
    fn default() -> Self {
        Options {
            heap_dump: false,
            heap_sites: false,
            cpu_samples: false,
            cpu_times: false,
            cpu_old: false,
            cpu_wall: false,
            monitor: false,
            format: Format::Ascii,
            destination: Destination::File(None),
            depth: 4,
            prof_trace_depth: 4,
            interval_ms: 10,
            cutoff: 0.0001,
            lineno: true,
            thread: false,
            doe: true,
            msa: false,
            force: true,
            verbose: true,
            gc_okay: false,
            primfields: true,
            primarrays: true,
            logflags: 0,
            debugflags: 0,
            coredump: false,
            errorexit: false,
            pause: false,
            debug: false,
            main_stack: false,
            experiment: 0,
            alloc_interval: 0,
            alloc_count_bytecode: false,
            alloc_count_given: false,
            alloc_count_sites: false,
            timing_by_samples: false,
            timing_given: false,
            class_filter: ClassFilter::default(),
            combined: String::new(),
        }
    }
}

impl Options {
    /// Whether heap=sites counted in the byte code gives what these options
    /// ask: every allocation (no `alloc_interval`). Over `net=` too: what
    /// its commands switch off or clear is left out of the counters' counts
    /// at each dump (`heap_sites/counted_window.rs`). Any `depth` and `thread=y` are
    /// counted so: the default `alloc_count=sites` walks `depth` frames of
    /// the stacks its rows come from, on their threads. cpu=times|old are
    /// too: the class-file hook counts, then times, and the counting
    /// leaves the agent's own classes (the timing's Tracker) alone.
    pub(crate) fn bytecode_counts_what_was_asked(&self) -> bool {
        self.heap_sites && self.alloc_interval == 0
    }

    /// `java.hprof.txt` for ascii, `java.hprof` for binary.
    pub fn default_file_name(&self) -> &'static str {
        match self.format {
            Format::Ascii => "java.hprof.txt",
            Format::Binary => "java.hprof",
        }
    }
}

/// What the option string asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum Parsed {
    /// The option string was exactly `help`: print [`help_text`], exit 0.
    Help,
    Options(Options),
}

/// An invalid option string. The agent prints [`OptionError::message`] to
/// stderr and exits with status 1.
#[derive(Debug, Clone, PartialEq)]
pub struct OptionError {
    /// What is wrong, e.g. `Unknown option: foo`.
    pub description: String,
    /// The full combined option string.
    pub combined: String,
}

impl fmt::Display for OptionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "hprof option error: {} ({})",
            self.description, self.combined
        )
    }
}

impl std::error::Error for OptionError {}

impl OptionError {
    /// The whole stderr line, without the trailing newline.
    pub fn message(&self) -> String {
        format!("HPROF ERROR: {self} [options.rs]")
    }
}

/// The `file=` value of a raw agent option string that is not UTF-8, byte
/// for byte: [`parse`] sees a lossy copy of such a string, and a file name
/// must still name the file the user meant. `None` for UTF-8 strings (the
/// parsed value is exact) and when there is no `file=`.
pub fn raw_file_value(raw: &[u8]) -> Option<&[u8]> {
    if std::str::from_utf8(raw).is_ok() {
        return None;
    }
    raw.split(|&b| b == b',')
        .filter_map(|option| option.strip_prefix(b"file="))
        .next_back()
}

/// Longest option name: HPROF read names into a 16-byte C buffer.
const NAME_MAX: usize = 15;
/// Longest value: HPROF's value buffer was `FILENAME_MAX + 1` (Linux: 4097).
const VALUE_MAX: usize = 4096;

const PORT_ERROR: &str = "net option port must be a decimal number from 1 to 65535";
const ALLOC_COUNT_ERROR: &str = "alloc_count option value must be bytecode, sites or events";
const TIMING_ERROR: &str = "timing option value must be samples or calls";
const ALLOC_INTERVAL_ERROR: &str = "alloc_interval option value must be a byte count (e.g. 512k)";

/// Parses the agent options.
///
/// `cmdline` is the agent option string (`None`, as the JVM passes it when
/// there is none, is the same as `""`); `env` is the value of
/// `_JAVA_HPROF_OPTIONS` if that is set. Only a command line of exactly
/// `help` asks for help, and the environment is then ignored.
pub fn parse(cmdline: Option<&str>, env: Option<&str>) -> Result<Parsed, OptionError> {
    let cmdline = up_to_nul(cmdline.unwrap_or(""));
    if cmdline == "help" {
        return Ok(Parsed::Help);
    }
    let env = up_to_nul(env.unwrap_or(""));
    let mut combined = cmdline.to_owned();
    if !env.is_empty() {
        if !combined.is_empty() {
            combined.push(',');
        }
        combined.push_str(env);
    }
    match Parser::new(&combined).run() {
        Ok(mut options) => {
            options.combined = combined;
            Ok(Parsed::Options(options))
        }
        Err(description) => Err(OptionError {
            description,
            combined,
        }),
    }
}

/// HPROF saw C strings: anything after a NUL never reached it.
fn up_to_nul(s: &str) -> &str {
    s.find('\0').map_or(s, |end| &s[..end])
}

struct Parser<'a> {
    input: Cursor<'a>,
    options: Options,
    destination_seen: bool,
}

/// What is left of the combined string.
struct Cursor<'a>(&'a str);

impl<'a> Cursor<'a> {
    /// HPROF's `get_tok`: the text up to the next `separator` (or to the
    /// end), consumed together with the separator. `None` when nothing is
    /// left, or the text is empty or longer than `max_len` bytes.
    fn token(&mut self, separator: u8, max_len: usize) -> Option<&'a str> {
        let rest = self.0;
        let (token, after) = match rest.bytes().position(|b| b == separator) {
            // `separator` is ASCII, so both slices are on char boundaries.
            Some(at) => (&rest[..at], &rest[at + 1..]),
            None => (rest, ""),
        };
        self.0 = after;
        (!token.is_empty() && token.len() <= max_len).then_some(token)
    }

    /// The value of an option, up to the next comma; `missing` is the error
    /// when there is none.
    fn value(&mut self, missing: &str) -> Result<&'a str, String> {
        self.token(b',', VALUE_MAX)
            .ok_or_else(|| missing.to_owned())
    }
}

impl<'a> Parser<'a> {
    fn new(combined: &'a str) -> Self {
        Parser {
            input: Cursor(combined),
            options: Options::default(),
            destination_seen: false,
        }
    }

    fn run(mut self) -> Result<Options, String> {
        while !self.input.0.is_empty() {
            let name = self
                .input
                .token(b'=', NAME_MAX)
                .ok_or("general syntax error parsing options")?;
            self.option(name)?;
        }
        self.derive()?;
        Ok(self.options)
    }

    /// Handles one `name=value`; the input is left at the value.
    fn option(&mut self, name: &str) -> Result<(), String> {
        if let Some(flag) = switch(&mut self.options, name) {
            *flag = match self.input.token(b',', VALUE_MAX) {
                Some("y") => true,
                Some("n") => false,
                _ => return Err(format!("{name} option value must be y|n")),
            };
            return Ok(());
        }
        if let Some(mask) = mask(&mut self.options, name) {
            let text = self
                .input
                .value(&format!("{name} option value must be numeric"))?;
            // Like C strtol base 0: hex and octal prefixes, junk gives 0.
            *mask = cnum::strtol(text, 0).0;
            return Ok(());
        }
        if name == "file" || name == "net" {
            return self.destination(name);
        }
        let (input, options) = (&mut self.input, &mut self.options);
        match name {
            "format" => {
                options.format = match input.value("syntax error parsing format=a|b")? {
                    "a" => Format::Ascii,
                    "b" => Format::Binary,
                    _ => return Err("format option value must be a|b".into()),
                }
            }
            "heap" => match input.value("syntax error parsing heap=dump|sites|all")? {
                "dump" => options.heap_dump = true,
                "sites" => options.heap_sites = true,
                "all" => (options.heap_dump, options.heap_sites) = (true, true),
                _ => return Err("heap option value must be dump|sites|all".into()),
            },
            "cpu" => match input.value("syntax error parsing cpu=y|samples|times|old|wall")? {
                "samples" | "y" => options.cpu_samples = true,
                "times" => (options.cpu_times, options.cpu_old) = (true, false),
                "old" => (options.cpu_times, options.cpu_old) = (true, true),
                "wall" => options.cpu_wall = true,
                _ => return Err("cpu option value must be y|samples|times|old|wall".into()),
            },
            "depth" => {
                let text = input.value("syntax error parsing depth=DECIMAL")?;
                options.depth =
                    decimal(text, 0).ok_or("depth option value must be decimal and >= 0")?;
            }
            "interval" => {
                let text = input.value("syntax error parsing interval=DECIMAL")?;
                options.interval_ms =
                    decimal(text, 1).ok_or("interval option value must be decimal and > 0")?;
            }
            "cutoff" => {
                let text = input.value("syntax error parsing cutoff=DOUBLE")?;
                // differs from HPROF: its `< 0` test let NaN through; the
                // `>= 0.0` test below refuses it.
                options.cutoff = cnum::strtod_all(text)
                    .filter(|cutoff| *cutoff >= 0.0)
                    .ok_or("cutoff option value must be floating point and >= 0")?;
            }
            "alloc_interval" => {
                let text = input.value(ALLOC_INTERVAL_ERROR)?;
                options.alloc_interval = byte_count(text).ok_or(ALLOC_INTERVAL_ERROR)?;
            }
            "include" | "exclude" => {
                let value =
                    input.value(&format!("syntax error parsing {name}=PATTERN[:PATTERN...]"))?;
                options.class_filter.add(name, value)?;
            }
            "timing" => {
                options.timing_by_samples = match input.value(TIMING_ERROR)? {
                    "samples" => true,
                    "calls" => false,
                    _ => return Err(TIMING_ERROR.into()),
                };
                options.timing_given = true;
            }
            "alloc_count" => {
                (options.alloc_count_bytecode, options.alloc_count_sites) =
                    match input.value(ALLOC_COUNT_ERROR)? {
                        "bytecode" => (true, false),
                        "sites" => (true, true),
                        "events" => (false, false),
                        _ => return Err(ALLOC_COUNT_ERROR.into()),
                    };
                options.alloc_count_given = true;
            }
            // differs from HPROF: it printed a literal `%%p` (a printf escape
            // that was never expanded); we print the `%p` that was meant.
            "exitpause" => {
                return Err("The exitpause option was removed, use -XX:OnError='cmd %p'".into());
            }
            "precrash" => {
                return Err(
                    "The precrash option was removed, use -XX:OnError='precrash -p %p'".into(),
                );
            }
            _ => return Err(format!("Unknown option: {name}")),
        }
        Ok(())
    }

    /// `file=<name>` or `net=<host>:<port>`; only one of them, once.
    fn destination(&mut self, name: &str) -> Result<(), String> {
        if self.destination_seen {
            return Err("file or net options should only appear once".into());
        }
        self.destination_seen = true;
        self.options.destination = if name == "file" {
            let file = self.input.value("syntax error parsing file=filename")?;
            Destination::File(Some(file.to_owned()))
        } else {
            // The host runs up to the next ':', even across commas, as in HPROF.
            let host = self
                .input
                .token(b':', VALUE_MAX)
                .ok_or("net option missing ':'")?;
            let port = self
                .input
                .token(b',', usize::MAX)
                .ok_or("net option missing port")?;
            // differs from HPROF: it took strtol's value unchecked and cut it to
            // 16 bits, so `70000` meant 4464 and `x` failed later, obscurely
            // (and a port of 16+ characters overflowed its buffer: "missing
            // port"). Here any port that is not 1..=65535 in decimal is refused.
            let port = Some(port)
                .filter(|digits| digits.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|digits| digits.parse::<u16>().ok())
                .filter(|&port| port != 0)
                .ok_or(PORT_ERROR)?;
            Destination::Net {
                host: host.to_owned(),
                port,
            }
        };
        Ok(())
    }

    /// HPROF's checks and derived settings, in its order (hprof_init.c's
    /// option parsing): format=b refuses cpu=times|old and monitor=y;
    /// cpu=old keeps 2 frames per trace; with no collector chosen,
    /// heap=all is the default.
    fn derive(&mut self) -> Result<(), String> {
        let o = &mut self.options;
        if o.format == Format::Binary {
            if o.cpu_times {
                return Err("cpu=times|old is not supported with format=b".into());
            }
            if o.monitor {
                return Err("monitor=y is not supported with format=b".into());
            }
        }
        // hprof-rs addition: cpu=wall's samples are a CPU SAMPLES section of
        // their own; beside another cpu= mode a reader could not tell them
        // apart.
        if o.cpu_wall && (o.cpu_samples || o.cpu_times) {
            return Err("cpu=wall samples every thread by the clock: it cannot be combined with cpu=samples, cpu=times or cpu=old".into());
        }
        if o.alloc_count_bytecode && o.alloc_interval != 0 {
            return Err("alloc_count=bytecode|sites counts every allocation: it cannot be combined with alloc_interval".into());
        }
        // hprof-rs addition: the filters choose what cpu=times|old rewrites;
        // heap=sites counts in every class whatever they say.
        if o.class_filter.is_active() && !o.cpu_times {
            return Err("include and exclude choose the classes cpu=times|old times: they need cpu=times or cpu=old".into());
        }
        if o.timing_given && !o.cpu_times {
            return Err("timing chooses how cpu=times times: it needs cpu=times".into());
        }
        if o.timing_given && o.timing_by_samples && (o.cpu_old || o.class_filter.is_active()) {
            return Err("timing=samples is for cpu=times without include or exclude: cpu=old and the filters time every call".into());
        }
        if !o.timing_given {
            // The default for cpu=times: every call counted, times from
            // samples, at about 2x; timing every call costs 3x to 8x on
            // programs made of small methods, and is what a filter asks.
            o.timing_by_samples = o.cpu_times && !o.cpu_old && !o.class_filter.is_active();
        }
        o.prof_trace_depth = if o.cpu_old { 2 } else { o.depth };
        if !(o.cpu_samples || o.cpu_times || o.cpu_wall || o.monitor || o.heap_sites || o.heap_dump)
        {
            o.heap_dump = true;
            o.heap_sites = true;
        }
        if !o.alloc_count_given {
            // The default is `sites`: exact counts per site at about 1.2x,
            // each site's rows from the live sample (exact for a program's
            // first 8 MiB); `bytecode`'s calling contexts, exact rows in any
            // program, cost about 1.35x.
            o.alloc_count_bytecode = o.bytecode_counts_what_was_asked();
            o.alloc_count_sites = o.alloc_count_bytecode;
        }
        Ok(())
    }
}

/// The field set by a `y|n` option.
fn switch<'o>(options: &'o mut Options, name: &str) -> Option<&'o mut bool> {
    Some(match name {
        "monitor" => &mut options.monitor,
        "lineno" => &mut options.lineno,
        "thread" => &mut options.thread,
        "doe" => &mut options.doe,
        "msa" => &mut options.msa,
        "force" => &mut options.force,
        "verbose" => &mut options.verbose,
        "gc_okay" => &mut options.gc_okay,
        "primfields" => &mut options.primfields,
        "primarrays" => &mut options.primarrays,
        "coredump" => &mut options.coredump,
        "errorexit" => &mut options.errorexit,
        "pause" => &mut options.pause,
        "debug" => &mut options.debug,
        "main_stack" => &mut options.main_stack,
        _ => return None,
    })
}

/// The field set by a numeric mask option.
fn mask<'o>(options: &'o mut Options, name: &str) -> Option<&'o mut i64> {
    Some(match name {
        "logflags" => &mut options.logflags,
        "debugflags" => &mut options.debugflags,
        "X" => &mut options.experiment,
        _ => return None,
    })
}

/// A `depth=`/`interval=` value: all of it must be read by C `strtol(…, 10)`
/// (so leading blanks and a sign are allowed), and the number must be at
/// least `min`.
// differs from HPROF: it silently cut the value to a C `int` (so 4294967297
// meant 1); anything above `i32::MAX` is rejected here.
fn decimal(text: &str, min: i64) -> Option<u32> {
    let (value, used) = cnum::strtol(text, 10);
    if used != text.len() || value < min {
        return None;
    }
    i32::try_from(value).ok()?.try_into().ok()
}

/// An `alloc_interval=` value: decimal digits, then optionally one of
/// `k`/`K` (KiB), `m`/`M` (MiB), `g`/`G` (GiB).
fn byte_count(text: &str) -> Option<u64> {
    let digits_len = text.bytes().take_while(u8::is_ascii_digit).count();
    let (digits, suffix) = text.split_at(digits_len);
    let unit: u64 = match suffix {
        "" => 1,
        "k" | "K" => 1 << 10,
        "m" | "M" => 1 << 20,
        "g" | "G" => 1 << 30,
        _ => return None,
    };
    if digits.is_empty() {
        return None;
    }
    digits.parse::<u64>().ok()?.checked_mul(unit)
}

#[cfg(test)]
mod tests;
