//! How fast heap=sites' rewrite is: rewrites classes of a `DumpJrt` file
//! (tests/support/bci/DumpJrt.java: every class of a JDK's image) as the
//! agent rewrites the classes loaded before VM init (calling contexts on,
//! site numbers pushed as a base and an offset), and prints the time per
//! class and a hash of everything written, which a change meant to be
//! faster only must leave as it was.
//!
//! ```text
//! cargo run --release -p hprof-bytecode --example rewrite_speed -- DUMP [NAMES] [ROUNDS]
//! ```
//! NAMES: a file whose lines name the classes to take (internal or dotted
//! names, anywhere in the line, as `-Xlog:class+load` prints them); all
//! classes without it.

use hprof_bytecode::{ContextScope, VM_MAKER_RULES, rewrite_counting_allocations_with};
use std::collections::HashSet;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(dump) = args.first() else {
        eprintln!("usage: rewrite_speed DUMP [NAMES|-] [ROUNDS]");
        std::process::exit(2);
    };
    let wanted = args.get(1).filter(|a| *a != "-").map(|path| names_in(path));
    let rounds: usize = args.get(2).and_then(|r| r.parse().ok()).unwrap_or(5);
    let classes: Vec<(String, Vec<u8>)> = read_dump(dump)
        .into_iter()
        .filter(|(name, _)| wanted.as_ref().is_none_or(|w| w.contains(name)))
        .collect();
    let bytes_in: usize = classes.iter().map(|(_, b)| b.len()).sum();
    let mut best = f64::MAX;
    let mut hash = 0xcbf2_9ce4_8422_2325u64;
    let mut changed = 0;
    for round in 0..rounds {
        let started = Instant::now();
        let (mut site, mut call_site) = (0u32, 1u32);
        let mut outcomes = Vec::with_capacity(classes.len());
        let mut per_class = Vec::new();
        for (name, bytes) in &classes {
            let one = Instant::now();
            let Ok(outcome) = rewrite_counting_allocations_with(
                bytes,
                site,
                VM_MAKER_RULES,
                Some(call_site),
                ContextScope::EveryCall,
                true,
            ) else {
                continue;
            };
            site += outcome.sites.len() as u32;
            call_site += outcome.call_sites.len() as u32;
            outcomes.push(outcome);
            per_class.push((one.elapsed().as_secs_f64(), name.as_str(), bytes.len()));
        }
        if round + 1 == rounds && std::env::var_os("SLOWEST").is_some() {
            per_class.sort_by(|a, b| b.0.total_cmp(&a.0));
            for (took, name, len) in per_class.iter().take(15) {
                println!("{:8.1} us {len:7} bytes {name}", took * 1e6);
            }
        }
        best = best.min(started.elapsed().as_secs_f64());
        if round == 0 && std::env::var_os("APPENDED").is_some() {
            let count = |b: &[u8]| u32::from(u16::from_be_bytes([b[8], b[9]]));
            let mut total = 0;
            let mut pools = 0u64;
            for ((name, bytes), outcome) in classes.iter().zip(&outcomes) {
                let added = count(&outcome.bytes) - count(bytes);
                total += added;
                pools += u64::from(added) * u64::from(count(bytes));
                if std::env::var("DUMP_CLASS").is_ok_and(|d| &d == name) {
                    std::fs::write("/tmp/rw/rewritten.class", &outcome.bytes).unwrap();
                }
                if name.ends_with("java/lang/String") || name.ends_with("java/util/HashMap") {
                    println!("{name}: pool {} + {added}", count(bytes));
                }
            }
            println!("constants appended: {total}; appended x pool: {pools}");
        }
        if round == 0 {
            // Everything the rewrite says, not only the bytes.
            for outcome in &outcomes {
                hash = fnv(hash, format!("{outcome:?}").as_bytes());
            }
            changed = outcomes
                .iter()
                .filter(|o| !o.sites.is_empty() || !o.call_sites.is_empty())
                .count();
        }
    }
    println!(
        "{} classes ({:.1} MB), {changed} changed: best of {rounds} {:.1} ms, {:.1} us a class; output hash {hash:016x}",
        classes.len(),
        bytes_in as f64 / 1e6,
        best * 1e3,
        best * 1e6 / classes.len().max(1) as f64,
    );
}

fn fnv(mut hash: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        hash = (hash ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
    }
    hash
}

/// Class names (internal form) found as words of the file's lines.
fn names_in(path: &str) -> HashSet<String> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    text.split_whitespace()
        .map(|word| word.replace('.', "/"))
        .collect()
}

/// (internal name, class file) of each record: writeUTF(module),
/// writeUTF(name), writeInt(length), bytes.
fn read_dump(path: &str) -> Vec<(String, Vec<u8>)> {
    let data = std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut records = Vec::new();
    let mut at = 0;
    while at < data.len() {
        let mut text = || {
            let len = usize::from(u16::from_be_bytes([data[at], data[at + 1]]));
            let s = String::from_utf8_lossy(&data[at + 2..at + 2 + len]).into_owned();
            at += 2 + len;
            s
        };
        let _module = text();
        let name = text();
        let len = u32::from_be_bytes(data[at..at + 4].try_into().unwrap()) as usize;
        at += 4;
        records.push((name, data[at..at + len].to_vec()));
        at += len;
    }
    records
}
