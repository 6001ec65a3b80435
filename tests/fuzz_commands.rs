//! Fuzz target for the agent's reader of `net=` front-end commands
//! (crates/hprof-format/src/commands.rs): whatever a peer sends (frames cut short,
//! unknown tags, absurd lengths, random bytes, a flood of frames) is read
//! to a defined result without a panic, a hang or an allocation sized by
//! the input.
//!
//! Inputs are runs of valid frames, then damaged (bytes replaced, inserted
//! or removed, lengths set to huge values, the run cut short), or plain
//! random bytes. Memory is capped at [`MEMORY_CAP`]: an allocation past it
//! aborts the case, which proptest reports as a failure like a hang past
//! [`CASE_TIMEOUT_MS`].
//!
//! `HPROF_RS_FUZZ_CASES` sets the number of cases (default 5,000). The
//! campaign of a million cases:
//! `HPROF_RS_FUZZ_CASES=1000000 cargo test --release --test fuzz_commands -- --test-threads 1 command_reader`

use cap::Cap;
use hprof_rs::format::commands::{Command, Control, HEADER_BYTES, read_command};
use proptest::prelude::*;
use std::alloc::System;

#[global_allocator]
static ALLOCATOR: Cap<System> = Cap::new(System, usize::MAX);

/// Live heap allowed to the fuzz process: proptest's own needs (which grow
/// over a million cases: 64 MiB ran out), and not one buffer the size of a
/// length field (up to 4 GiB).
const MEMORY_CAP: usize = 256 << 20;

/// Longest a case may run; a case takes microseconds.
const CASE_TIMEOUT_MS: u32 = 5_000;

fn fuzz_config() -> ProptestConfig {
    let _ = ALLOCATOR.set_limit(MEMORY_CAP);
    ProptestConfig {
        cases: std::env::var("HPROF_RS_FUZZ_CASES")
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(5_000),
        timeout: CASE_TIMEOUT_MS,
        ..ProptestConfig::default()
    }
}

fn control() -> impl Strategy<Value = Control> {
    prop_oneof![
        Just(Control::AllocationsOn),
        Just(Control::AllocationsOff),
        any::<u32>().prop_map(|thread| Control::SamplingOn { thread }),
        any::<u32>().prop_map(|thread| Control::SamplingOff { thread }),
        Just(Control::ClearCpu),
        Just(Control::ClearSites),
        any::<u16>().prop_map(Control::SetDepth),
    ]
}

fn command() -> impl Strategy<Value = Command> {
    prop_oneof![
        Just(Command::Gc),
        Just(Command::DumpHeap),
        (any::<u16>(), any::<f32>())
            .prop_map(|(flags, cutoff)| Command::AllocSites { flags, cutoff }),
        Just(Command::HeapSummary),
        Just(Command::Exit),
        Just(Command::DumpTraces),
        any::<f32>().prop_map(|cutoff| Command::CpuSamples { cutoff }),
        control().prop_map(Command::Control),
        Just(Command::Eof),
    ]
}

/// Length values that break careless readers.
const HUGE: [u32; 5] = [0xFFFF_FFFF, 0x8000_0000, 0x7FFF_FFFF, 0x0001_0000, 0];

#[derive(Debug, Clone)]
enum Damage {
    Set(prop::sample::Index, u8),
    Insert(prop::sample::Index, u8),
    Remove(prop::sample::Index),
    /// A huge value in some frame's length field.
    Length(prop::sample::Index, u32),
    Truncate(prop::sample::Index),
}

fn damage() -> impl Strategy<Value = Damage> {
    prop_oneof![
        (any::<prop::sample::Index>(), any::<u8>()).prop_map(|(at, b)| Damage::Set(at, b)),
        (any::<prop::sample::Index>(), any::<u8>()).prop_map(|(at, b)| Damage::Insert(at, b)),
        any::<prop::sample::Index>().prop_map(Damage::Remove),
        (
            any::<prop::sample::Index>(),
            prop::sample::select(HUGE.to_vec())
        )
            .prop_map(|(at, value)| Damage::Length(at, value)),
        any::<prop::sample::Index>().prop_map(Damage::Truncate),
    ]
}

fn apply(bytes: &mut Vec<u8>, starts: &[usize], damage: &Damage) {
    if bytes.is_empty() {
        return;
    }
    match damage {
        Damage::Set(at, b) => {
            let i = at.index(bytes.len());
            bytes[i] = *b;
        }
        Damage::Insert(at, b) => bytes.insert(at.index(bytes.len() + 1), *b),
        Damage::Remove(at) => {
            bytes.remove(at.index(bytes.len()));
        }
        Damage::Length(at, value) => {
            let start = starts[at.index(starts.len())];
            if start + HEADER_BYTES <= bytes.len() {
                bytes[start + 5..start + 9].copy_from_slice(&value.to_be_bytes());
            }
        }
        Damage::Truncate(at) => bytes.truncate(at.index(bytes.len())),
    }
}

/// Frames of valid commands, damaged a few times, or random bytes.
fn input() -> impl Strategy<Value = Vec<u8>> {
    let framed = (
        prop::collection::vec(command(), 1..12),
        prop::collection::vec(damage(), 0..4),
    )
        .prop_map(|(commands, damages)| {
            let mut bytes = Vec::new();
            let mut starts = Vec::new();
            for (serial, command) in commands.iter().enumerate() {
                starts.push(bytes.len());
                bytes.extend(command.encode(serial as u32));
            }
            for damage in &damages {
                apply(&mut bytes, &starts, damage);
            }
            bytes
        });
    prop_oneof![
        4 => framed,
        1 => prop::collection::vec(any::<u8>(), 0..200),
    ]
}

proptest! {
    #![proptest_config(fuzz_config())]

    /// Every input reads to its end or to an error; each command took at
    /// least a frame header's bytes.
    #[test]
    fn command_reader(bytes in input()) {
        let mut rest: &[u8] = &bytes;
        let mut commands = 0usize;
        loop {
            let before = rest.len();
            match read_command(&mut rest) {
                Ok(Some(_)) => {
                    commands += 1;
                    prop_assert!(before - rest.len() >= HEADER_BYTES);
                }
                Ok(None) => {
                    prop_assert!(rest.is_empty());
                    break;
                }
                Err(e) => {
                    prop_assert_eq!(e.kind(), std::io::ErrorKind::UnexpectedEof);
                    break;
                }
            }
        }
        prop_assert!(commands * HEADER_BYTES <= bytes.len());
    }

    /// Undamaged frames read back as the commands they encode (a NaN
    /// cutoff compares by its bits).
    #[test]
    fn frames_read_back(commands in prop::collection::vec(command(), 0..12)) {
        let bytes: Vec<u8> = commands.iter().flat_map(|c| c.encode(1)).collect();
        let mut rest: &[u8] = &bytes;
        for expected in &commands {
            let got = read_command(&mut rest).unwrap().unwrap();
            prop_assert_eq!(format!("{:?}", got.encode(1)), format!("{:?}", expected.encode(1)));
        }
        prop_assert!(read_command(&mut rest).unwrap().is_none());
    }
}
