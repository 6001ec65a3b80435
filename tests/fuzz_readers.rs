//! Fuzz targets for everything that reads bytes: the binary and ASCII
//! profile readers, `hprof-rs print`, the profile model of `hprof-rs
//! collapse`/`flame`/`top`/`diff` (and what those compute from it, and the
//! `--fail-if` parser), the carrying of the JVM's heap dump
//! into our files (binary copy and ASCII conversion) and the class-file
//! rewriter. (The option parser's target is in tests/options_props.rs.)
//!
//! Inputs reach deep because they start as valid files, written by our own
//! writers (tests/support/format_samples.rs) or javac, and are then damaged:
//! bytes flipped, set, inserted or cut out, a chunk of the file copied
//! elsewhere, the file truncated, and length and count fields set to huge
//! values.
//!
//! No input may panic, run longer than [`CASE_TIMEOUT_MS`] or hold more than
//! [`MEMORY_CAP`] at once: an allocation past the cap aborts the process,
//! which proptest (running the cases in a child process because of the
//! timeout) reports as a failure, shrunk to a small input, like a hang.
//!
//! `HPROF_RS_FUZZ_CASES` sets the number of cases per target (default
//! 2,000); a long campaign, one target at a time:
//! `HPROF_RS_FUZZ_CASES=1000000 nice -n 10 cargo test --release --test fuzz_readers -- --test-threads 1 binary_reader`

mod common;
#[path = "support/format_samples.rs"]
mod format_samples;

use cap::Cap;
use hprof_cli::convert::{self, Target};
use hprof_cli::diff_output::{self, DiffFormat};
use hprof_cli::{collapse, diff, profile, report, sample_table, threshold, top};
use hprof_rs::bci::{Injection, RewriteOptions, TRACKER_CLASS_FILE, rewrite_class_with};
use hprof_rs::emit::Emitter;
use hprof_rs::emit::heap_dump_copy::DumpMemory;
use hprof_rs::format::ascii::reader as ascii_reader;
use hprof_rs::format::binary::heap_walk;
use hprof_rs::format::binary::object_layout::ObjectLayout;
use hprof_rs::format::binary::reader::{self, RecordReader};
use hprof_rs::format::binary::writer::{encode_header, tags};
use hprof_rs::format::binary::{FileHeader, Version};
use hprof_rs::model::Model;
use hprof_rs::options::Format;
use parking_lot::Mutex;
use proptest::prelude::*;
use proptest::sample::Index;
use std::alloc::System;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

#[global_allocator]
static ALLOCATOR: Cap<System> = Cap::new(System, usize::MAX);

/// Live heap allowed to a fuzz process. The readers need a few MiB for
/// their blocks; a length field believed before the input is checked asks
/// for up to 4 GiB.
const MEMORY_CAP: usize = 256 << 20;

/// Longest a case may run; they take microseconds.
const CASE_TIMEOUT_MS: u32 = 5_000;

/// The number of cases, from `HPROF_RS_FUZZ_CASES` (default 2,000).
fn config() -> ProptestConfig {
    let _ = ALLOCATOR.set_limit(MEMORY_CAP);
    let cases = std::env::var("HPROF_RS_FUZZ_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(2_000);
    ProptestConfig {
        cases,
        timeout: CASE_TIMEOUT_MS,
        ..ProptestConfig::default()
    }
}

/// Length and count values that break careless readers.
const HUGE: [u32; 8] = [
    0xFFFF_FFFF,
    0xFFFF_FFF8,
    0x8000_0000,
    0x7FFF_FFFF,
    0x1000_0000,
    0x0100_0000,
    0x0001_0000,
    0,
];

/// One way of damaging a file.
#[derive(Debug, Clone)]
enum Damage {
    Flip(Index, u8),
    Set(Index, u8),
    Insert(Index, Vec<u8>),
    Remove(Index, usize),
    /// Copy `len` bytes from one place over or in front of another:
    /// duplicated records, lines or sub-records.
    Splice {
        from: Index,
        len: usize,
        to: Index,
        overwrite: bool,
    },
    /// A big-endian u32 from [`HUGE`] at a length or count field of the
    /// valid file (`targeted`) or anywhere.
    Huge {
        at: Index,
        targeted: bool,
        value: u32,
    },
    Truncate(Index),
}

fn damage() -> impl Strategy<Value = Damage> {
    prop_oneof![
        1 => (any::<Index>(), 1..=255u8).prop_map(|(at, mask)| Damage::Flip(at, mask)),
        1 => (any::<Index>(), any::<u8>()).prop_map(|(at, byte)| Damage::Set(at, byte)),
        1 => (any::<Index>(), prop::collection::vec(any::<u8>(), 1..8))
            .prop_map(|(at, bytes)| Damage::Insert(at, bytes)),
        1 => (any::<Index>(), 1..16usize).prop_map(|(at, len)| Damage::Remove(at, len)),
        1 => (any::<Index>(), 1..200usize, any::<Index>(), any::<bool>()).prop_map(
            |(from, len, to, overwrite)| Damage::Splice {
                from,
                len,
                to,
                overwrite,
            }
        ),
        3 => (any::<Index>(), any::<bool>(), prop::sample::select(HUGE.to_vec()))
            .prop_map(|(at, targeted, value)| Damage::Huge {
                at,
                targeted,
                value,
            }),
        1 => (any::<Index>()).prop_map(Damage::Truncate),
    ]
}

/// Applies `damage` to `bytes`; `fields` are the offsets of the length and
/// count fields of the valid file.
fn apply(bytes: &mut Vec<u8>, damage: &Damage, fields: &[usize]) {
    let len = bytes.len();
    if len == 0 {
        if let Damage::Insert(_, new) = damage {
            bytes.extend_from_slice(new);
        }
        return;
    }
    match damage {
        Damage::Flip(at, mask) => bytes[at.index(len)] ^= mask,
        Damage::Set(at, byte) => bytes[at.index(len)] = *byte,
        Damage::Insert(at, new) => {
            let at = at.index(len + 1);
            bytes.splice(at..at, new.iter().copied());
        }
        Damage::Remove(at, n) => {
            let at = at.index(len);
            bytes.drain(at..(at + n).min(len));
        }
        Damage::Splice {
            from,
            len: n,
            to,
            overwrite,
        } => {
            let from = from.index(len);
            let chunk = bytes[from..(from + n).min(len)].to_vec();
            let to = to.index(len);
            if *overwrite {
                let end = (to + chunk.len()).min(len);
                bytes[to..end].copy_from_slice(&chunk[..end - to]);
            } else {
                bytes.splice(to..to, chunk);
            }
        }
        Damage::Huge {
            at,
            targeted,
            value,
        } => {
            let at = match (targeted, fields.is_empty()) {
                (true, false) => fields[at.index(fields.len())],
                _ => at.index(len),
            };
            for (i, byte) in value.to_be_bytes().into_iter().enumerate() {
                if let Some(slot) = bytes.get_mut(at + i) {
                    *slot = byte;
                }
            }
        }
        Damage::Truncate(at) => bytes.truncate(at.index(len)),
    }
}

/// A valid file, and the offsets of its length and count fields.
#[derive(Debug, Clone)]
struct Seed {
    bytes: Vec<u8>,
    fields: Vec<usize>,
}

/// One of `seeds`, with one to eight kinds of damage, or untouched now and then.
fn damaged(seeds: Vec<Seed>) -> impl Strategy<Value = Vec<u8>> {
    (
        prop::sample::select(seeds),
        prop::collection::vec(damage(), 0..8),
    )
        .prop_map(|(seed, damages)| {
            let mut bytes = seed.bytes;
            for damage in &damages {
                apply(&mut bytes, damage, &seed.fields);
            }
            bytes
        })
}

/// The offsets of the length fields of a binary file's records, and of the
/// fixed part of each heap sub-record (identifiers, serials, counts).
fn binary_fields(bytes: &[u8], id_size: u32) -> Vec<usize> {
    let mut fields = Vec::new();
    let mut at = 19 + 4 + 8;
    while at + 9 <= bytes.len() {
        let tag = bytes[at];
        let length = heap_walk::get_u4(bytes, at + 5) as usize;
        fields.push(at + 5);
        let body = at + 9;
        if tag == tags::HEAP_DUMP || tag == tags::HEAP_DUMP_SEGMENT {
            let mut sub = body;
            while let Ok(Some(n)) = heap_walk::sub_record_len(&bytes[sub..body + length], id_size) {
                fields.extend(sub + 1..sub + n.min(2 * id_size as usize + 10));
                sub += n;
            }
        }
        at = body + length;
    }
    fields
}

fn binary_seeds() -> Vec<Seed> {
    [4, 8]
        .into_iter()
        .map(|id_size| {
            let bytes = format_samples::sample_file(id_size);
            let fields = binary_fields(&bytes, id_size);
            Seed { bytes, fields }
        })
        .collect()
}

fn ascii_seeds() -> Vec<Seed> {
    let lf = format_samples::write_all(&format_samples::sections());
    let crlf = String::from_utf8(lf.clone())
        .expect("our writer writes UTF-8 here")
        .replace('\n', "\r\n")
        .into_bytes();
    [lf, crlf]
        .into_iter()
        .map(|bytes| Seed {
            bytes,
            fields: Vec::new(),
        })
        .collect()
}

/// Hands out a few bytes per `read`, as a pipe or socket may.
struct Trickle<'a>(&'a [u8]);

impl Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf.len().min(self.0.len()).min(3);
        buf[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        Ok(n)
    }
}

/// A file of this test thread's own, for the readers that take a path,
/// rewritten by each case (so a million cases leave one file per thread,
/// under the target directory, never in a shared place like /dev/shm).
fn case_file(name: &str, bytes: &[u8]) -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    // Not common::scratch_dir, which empties the folder: proptest runs
    // cases in child processes, which must not delete each other's files.
    let dir = DIR.get_or_init(|| {
        let dir = common::target_dir().join("test-scratch/fuzz-readers");
        std::fs::create_dir_all(&dir).expect("scratch folder made");
        dir
    });
    let thread = format!("{:?}", std::thread::current().id());
    let path = dir.join(format!(
        "{name}-{}-{}",
        std::process::id(),
        thread.trim_matches(|c: char| !c.is_ascii_digit())
    ));
    std::fs::write(&path, bytes).expect("scratch file written");
    path
}

/// Runs `hprof-rs print` on `path`: exit 0, or 2 with the offset.
fn print(path: &Path) -> Result<(), TestCaseError> {
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = hprof_cli::print::print_to(path, true, &mut out, &mut err);
    let err = String::from_utf8_lossy(&err);
    match code {
        0 => prop_assert!(err.is_empty(), "{err}"),
        2 => prop_assert!(err.contains("malformed at byte offset "), "{err}"),
        other => prop_assert!(false, "exit code {other}: {err}"),
    }
    Ok(())
}

proptest! {
    #![proptest_config(config())]

    /// The whole-file parser and the streaming reader (fed a few bytes at a
    /// time) agree: the same records, or an error at the same offset.
    #[test]
    fn binary_reader(bytes in damaged(binary_seeds())) {
        let whole = reader::parse(&bytes);
        let streamed = RecordReader::new(Trickle(&bytes)).and_then(|reader| {
            reader.map(|item| item.map(|(_, record)| record)).collect::<Result<Vec<_>, _>>()
        });
        match (whole, streamed) {
            (Ok(file), Ok(records)) => prop_assert_eq!(file.records, records),
            (Err(a), Err(b)) => prop_assert_eq!(a.offset, b.offset),
            (a, b) => prop_assert!(false, "parse {:?} but streaming {:?}", a.is_ok(), b.is_ok()),
        }
    }

    #[test]
    fn ascii_reader(bytes in damaged(ascii_seeds())) {
        let fragments = ascii_reader::parse(&bytes);
        if let Ok(sections) = ascii_reader::parse_file(&bytes) {
            prop_assert_eq!(Ok(sections), fragments);
        }
    }

    /// The tools' profile model reads the same inputs: a binary file the
    /// record parser accepts is accepted (streamed a few bytes at a time),
    /// and every accepted profile goes through collapse, top and diff.
    #[test]
    fn tool_profile_reader(bytes in damaged([binary_seeds(), ascii_seeds()].concat())) {
        let binary = bytes.starts_with(b"JAVA PROFILE 1.0.") && bytes.get(18) == Some(&0);
        let profile = if binary {
            let read = profile::read_binary(Trickle(&bytes));
            if reader::parse(&bytes).is_ok() {
                prop_assert!(read.is_ok(), "{:?}", read.err());
            }
            read
        } else {
            profile::read_ascii(&bytes)
        };
        if let Ok(profile) = profile {
            for what in profile.available() {
                let _ = collapse::folded_text(&profile, what);
                let _ = top::render(&top::top(&profile, Some(what), 5).expect("available"));
                let report = diff::compare(&profile, &profile, what, &[], 5);
                for format in [DiffFormat::Text, DiffFormat::Md, DiffFormat::Junit] {
                    let _ = diff_output::render(&report, format);
                }
            }
            let _ = top::top(&profile, None, 5);
        }
    }

    /// `convert` to every format and `report` on every profile the model
    /// accepts: an error or an output, never a panic.
    #[test]
    fn converters_and_report(bytes in damaged([binary_seeds(), ascii_seeds()].concat())) {
        let binary = bytes.starts_with(b"JAVA PROFILE 1.0.") && bytes.get(18) == Some(&0);
        let profile = if binary {
            profile::read_binary(Trickle(&bytes))
        } else {
            profile::read_ascii(&bytes)
        };
        if let Ok(profile) = profile {
            for table in sample_table::available(&profile) {
                for target in [Target::Pprof, Target::Speedscope, Target::Collapsed] {
                    let out = convert::to_bytes(&profile, target, Some(table), 10, "fuzz");
                    prop_assert!(out.is_ok(), "{:?}", out.err());
                }
            }
            let _ = report::page_of(&profile);
        }
    }

    #[test]
    fn fail_if_parser(text in "\\PC{0,40}|(total|alloc\\.total|method [a-z.]+ (self|total)|site [a-z]+ at [a-z.]+) [<>] [-+]?[0-9.e]{0,6}%?") {
        if let Ok(threshold) = threshold::parse(&text) {
            prop_assert!(threshold.limit.is_finite());
        }
    }

    #[test]
    fn print_command(bytes in damaged([binary_seeds(), ascii_seeds()].concat())) {
        print(&case_file("print", &bytes))?;
    }

    /// Both ways of carrying a JVM heap dump into our file: the binary copy
    /// (two streaming passes) and the ASCII HEAP DUMP section.
    #[test]
    fn heap_dump_carrying(
        id_size in prop_oneof![Just(4u32), Just(8u32)],
        damages in prop::collection::vec(damage(), 0..8),
        fields_reversed in any::<bool>(),
    ) {
        let mut bytes = format_samples::sample_file(id_size);
        let fields = binary_fields(&bytes, id_size);
        for damage in &damages {
            apply(&mut bytes, damage, &fields);
        }
        let path = case_file("dump", &bytes);
        let model = Mutex::new(Model::default());
        let mut written = Vec::new();
        let copy = Emitter::new(Format::Binary, id_size).carry_heap_dump(
            &mut std::fs::File::open(&path).unwrap(),
            &model,
            &mut DumpMemory::default(),
            &mut |mut block| {
                written.extend_from_slice(&block);
                block.clear();
                block
            },
        );
        if copy.is_ok() {
            // What the copy wrote reads back, behind a file header.
            let header = FileHeader { version: Version::V102, id_size, timestamp_ms: 0 };
            let mut file = Vec::new();
            encode_header(&header, &mut file);
            file.extend_from_slice(&written);
            reader::parse(&file).map_err(|e| TestCaseError::fail(e.to_string()))?;
        }
        // The ASCII section is not read back: a name with a line break (the
        // JVM allows one) is written verbatim, as HPROF did, and splits its line.
        let _ = Emitter::new(Format::Ascii, id_size).ascii_heap_dump(
            &mut std::fs::File::open(&path).unwrap(),
            &model,
            "Sat Mar 27 10:51:47 2021",
            fields_reversed,
            &ObjectLayout::hotspot(false, true, true),
            &mut |_| Vec::new(),
        );
    }

    /// The class-file rewriter on damaged classes: javac's (the test
    /// fixtures) and our tracker class. Whatever it accepts parses again.
    #[test]
    fn class_rewriter(bytes in damaged(class_seeds()), widen in any::<bool>()) {
        let injection = Injection {
            tracker_class: "hprof_rs/Tracker".into(),
            entry: Some(("CallSite".into(), "(II)V".into())),
            exit: Some(("ReturnSite".into(), "(II)V".into())),
            exit_on_throw: true,
            leaf: Injection::tracker().leaf,
        };
        let options = RewriteOptions { widen_all_branches: widen };
        if let Ok(out) = rewrite_class_with(&bytes, 1, &injection, &options) {
            let again = rewrite_class_with(&out.bytes, 2, &injection, &RewriteOptions::default());
            prop_assert!(again.is_ok(), "rewritten class does not parse: {:?}", again.err());
        }
    }
}

/// Classes javac compiled from java-fixtures/ (the smaller half, so cases
/// stay fast) and the tracker class.
fn class_seeds() -> Vec<Seed> {
    let mut classes: Vec<Vec<u8>> = std::fs::read_dir(common::fixtures_classpath())
        .expect("fixture classes")
        .filter_map(|entry| {
            let path = entry.ok()?.path();
            (path.extension()? == "class").then(|| std::fs::read(path).ok())?
        })
        .collect();
    classes.sort_by_key(Vec::len);
    classes.truncate(classes.len().div_ceil(2));
    classes.push(TRACKER_CLASS_FILE.to_vec());
    classes
        .into_iter()
        .map(|bytes| Seed {
            bytes,
            fields: Vec::new(),
        })
        .collect()
}

/// A JVM dump of `records` (tag, body), with `length` as the last record's
/// length field instead of its true length.
fn dump_with_last_length(id_size: u32, records: &[(u8, Vec<u8>)], length: u32) -> Vec<u8> {
    let mut bytes = format_samples::sample_file(id_size);
    for (i, (tag, body)) in records.iter().enumerate() {
        let claimed = if i + 1 == records.len() {
            length
        } else {
            body.len() as u32
        };
        bytes.push(*tag);
        bytes.extend_from_slice(&0u32.to_be_bytes());
        bytes.extend_from_slice(&claimed.to_be_bytes());
        bytes.extend_from_slice(body);
    }
    bytes
}

/// Both carriers of the JVM's dump on `bytes`: (binary copy, ASCII section) errors.
fn carry_both(bytes: &[u8]) -> (Option<String>, Option<String>) {
    let _ = ALLOCATOR.set_limit(MEMORY_CAP);
    let path = case_file("dump-unit", bytes);
    let model = Mutex::new(Model::default());
    let copy = Emitter::new(Format::Binary, 8).carry_heap_dump(
        &mut std::fs::File::open(&path).unwrap(),
        &model,
        &mut DumpMemory::default(),
        &mut |mut block| {
            block.clear();
            block
        },
    );
    let ascii = Emitter::new(Format::Ascii, 8).ascii_heap_dump(
        &mut std::fs::File::open(&path).unwrap(),
        &model,
        "X",
        false,
        &ObjectLayout::hotspot(false, true, true),
        &mut |_| Vec::new(),
    );
    (
        copy.err().map(|e| e.message),
        ascii.err().map(|e| e.message),
    )
}

/// Found by `heap_dump_carrying`: a record length of 4 GiB in a short dump
/// made both carriers allocate 4 GiB before reading.
#[test]
fn a_4_gib_record_length_in_a_jvm_dump_is_an_error_not_an_allocation() {
    let bytes = dump_with_last_length(8, &[(tags::UTF8, vec![0; 12])], u32::MAX);
    let (copy, ascii) = carry_both(&bytes);
    for error in [copy, ascii] {
        let error = error.expect("a record cut short is an error");
        assert!(error.contains("past the end of the file"), "{error}");
    }
}

/// Found by `heap_dump_carrying`: an INSTANCE DUMP claiming 4 GiB of
/// values in a heap record that claims as much made the ASCII conversion
/// allocate them before reading.
#[test]
fn a_4_gib_instance_in_a_jvm_dump_is_an_error_not_an_allocation() {
    // Tag, object id, trace serial, class id, then the values' length.
    let mut instance = vec![0x21];
    instance.extend_from_slice(&[0; 8 + 4 + 8]);
    instance.extend_from_slice(&0xFFFF_FFF0u32.to_be_bytes());
    instance.extend_from_slice(&[1, 2, 3]);
    let bytes = dump_with_last_length(8, &[(tags::HEAP_DUMP_SEGMENT, instance)], u32::MAX);
    let (copy, ascii) = carry_both(&bytes);
    assert!(copy.expect("cut short").contains("past the end"));
    let ascii = ascii.expect("cut short");
    assert!(ascii.contains("runs past the end of its record"), "{ascii}");
}
