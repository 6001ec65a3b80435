//! The front end's command language (`hprof-rs listen` standard input,
//! `hprof-rs send`), turned into the frames the agent reads
//! (crates/hprof-format/src/commands.rs):
//!
//! ```text
//! gc                    force a garbage collection
//! dump                  heap dump (the run needs heap=dump)
//! sites [--changed] [--by-alloc] [--gc] [--cutoff X]
//! summary               HEAP SUMMARY record (binary output only)
//! traces                every trace not written yet
//! cpu [--cutoff X]      CPU SAMPLES (cpu=samples) or CPU TIME (cpu=times)
//! control alloc on|off
//! control sampling on|off [THREAD-OBJECT-ID]   (0 or none: every thread)
//! control clear-cpu | clear-sites | depth N
//! exit                  the program ends (System.exit(0))
//! eof                   the agent stops reading commands
//! raw HEX...            these bytes as they are (for testing an agent)
//! ```

use hprof_format::commands::{Command, Control, site_flags};

/// HPROF's default cutoff, for `sites` and `cpu` without `--cutoff`.
const DEFAULT_CUTOFF: f32 = 0.0001;

/// The help text of the command language (the module comment's table).
pub const HELP: &str = "commands: gc | dump | sites [--changed] [--by-alloc] [--gc] [--cutoff X] | \
summary | traces | cpu [--cutoff X] | control alloc on|off | \
control sampling on|off [THREAD-ID] | control clear-cpu | control clear-sites | \
control depth N | exit | eof | raw HEX...";

/// The frame for the command `line` with `serial`, or why it is not one.
pub fn frame(line: &str, serial: u32) -> Result<Vec<u8>, String> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let Some((&verb, rest)) = words.split_first() else {
        return Err("empty command".into());
    };
    let command = match verb {
        "gc" => plain(Command::Gc, rest)?,
        "dump" => plain(Command::DumpHeap, rest)?,
        "summary" => plain(Command::HeapSummary, rest)?,
        "traces" => plain(Command::DumpTraces, rest)?,
        "exit" => plain(Command::Exit, rest)?,
        "eof" => plain(Command::Eof, rest)?,
        "sites" => sites(rest)?,
        "cpu" => Command::CpuSamples {
            cutoff: flags_and_cutoff(rest, &[])?.1,
        },
        "control" => Command::Control(control(rest)?),
        "raw" => return hex(&rest.concat()),
        other => return Err(format!("unknown command {other:?}; {HELP}")),
    };
    Ok(command.encode(serial))
}

fn plain(command: Command, rest: &[&str]) -> Result<Command, String> {
    match rest.first() {
        None => Ok(command),
        Some(extra) => Err(format!("unexpected {extra:?}; {HELP}")),
    }
}

fn sites(rest: &[&str]) -> Result<Command, String> {
    let switches = [
        ("--changed", site_flags::CHANGED_ONLY),
        ("--by-alloc", site_flags::BY_ALLOCATED),
        ("--gc", site_flags::GC_FIRST),
    ];
    let (flags, cutoff) = flags_and_cutoff(rest, &switches)?;
    Ok(Command::AllocSites { flags, cutoff })
}

/// Reads `switches` (each sets its flag) and `--cutoff X` in any order.
fn flags_and_cutoff(rest: &[&str], switches: &[(&str, u16)]) -> Result<(u16, f32), String> {
    let mut flags = 0;
    let mut cutoff = DEFAULT_CUTOFF;
    let mut words = rest.iter();
    while let Some(&word) = words.next() {
        if word == "--cutoff" {
            let value = words.next().ok_or("--cutoff needs a number")?;
            cutoff = value
                .parse::<f32>()
                .ok()
                .filter(|c| *c >= 0.0)
                .ok_or_else(|| format!("--cutoff {value:?}: not a number >= 0"))?;
        } else if let Some((_, flag)) = switches.iter().find(|(name, _)| *name == word) {
            flags |= flag;
        } else {
            return Err(format!("unexpected {word:?}; {HELP}"));
        }
    }
    Ok((flags, cutoff))
}

fn control(rest: &[&str]) -> Result<Control, String> {
    let on_off = |word: Option<&&str>| match word.copied() {
        Some("on") => Ok(true),
        Some("off") => Ok(false),
        _ => Err(format!("expected on or off; {HELP}")),
    };
    Ok(match rest {
        ["alloc", switch] => {
            if on_off(Some(switch))? {
                Control::AllocationsOn
            } else {
                Control::AllocationsOff
            }
        }
        ["sampling", switch, thread @ ..] if thread.len() <= 1 => {
            let thread = match thread.first() {
                Some(id) => number(id)?,
                None => 0,
            };
            if on_off(Some(switch))? {
                Control::SamplingOn { thread }
            } else {
                Control::SamplingOff { thread }
            }
        }
        ["clear-cpu"] => Control::ClearCpu,
        ["clear-sites"] => Control::ClearSites,
        ["depth", depth] => Control::SetDepth(
            depth
                .parse()
                .map_err(|_| format!("depth {depth:?}: not a number from 0 to 65535"))?,
        ),
        _ => return Err(format!("unknown control command; {HELP}")),
    })
}

/// A thread object ID as `hprof-rs print` shows it (hex with 0x, or
/// decimal); of a wider ID, the low four bytes (what the agent compares).
fn number(text: &str) -> Result<u32, String> {
    let value = match text.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => text.parse(),
    };
    value
        .map(|v| v as u32)
        .map_err(|_| format!("{text:?}: not a thread object ID"))
}

fn hex(text: &str) -> Result<Vec<u8>, String> {
    if text.is_empty() || text.len() % 2 != 0 {
        return Err("raw needs whole bytes in hex".into());
    }
    (0..text.len())
        .step_by(2)
        .map(|i| {
            text.get(i..i + 2)
                .and_then(|pair| u8::from_str_radix(pair, 16).ok())
                .ok_or_else(|| format!("raw: {text:?} is not hex"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use hprof_format::commands::read_command;

    fn read(line: &str) -> Command {
        let bytes = frame(line, 1).unwrap();
        read_command(&mut bytes.as_slice()).unwrap().unwrap()
    }

    #[test]
    fn every_command_has_its_frame() {
        assert_eq!(read("gc"), Command::Gc);
        assert_eq!(read("dump"), Command::DumpHeap);
        assert_eq!(read("summary"), Command::HeapSummary);
        assert_eq!(read("traces"), Command::DumpTraces);
        assert_eq!(read("exit"), Command::Exit);
        assert_eq!(read("eof"), Command::Eof);
        assert_eq!(
            read("sites"),
            Command::AllocSites {
                flags: 0,
                cutoff: 0.0001
            }
        );
        assert_eq!(
            read("sites --gc --cutoff 0.5 --changed --by-alloc"),
            Command::AllocSites {
                flags: 7,
                cutoff: 0.5
            }
        );
        assert_eq!(read("cpu --cutoff 0"), Command::CpuSamples { cutoff: 0.0 });
        assert_eq!(
            read("control alloc off"),
            Command::Control(Control::AllocationsOff)
        );
        assert_eq!(
            read("control sampling on 0x0100000050000003"),
            Command::Control(Control::SamplingOn {
                thread: 0x5000_0003
            })
        );
        assert_eq!(
            read("control sampling off"),
            Command::Control(Control::SamplingOff { thread: 0 })
        );
        assert_eq!(
            read("control clear-cpu"),
            Command::Control(Control::ClearCpu)
        );
        assert_eq!(
            read("control clear-sites"),
            Command::Control(Control::ClearSites)
        );
        assert_eq!(
            read("control depth 3"),
            Command::Control(Control::SetDepth(3))
        );
        assert_eq!(
            frame("raw 09 00000001 00000000", 1).unwrap(),
            [9, 0, 0, 0, 1, 0, 0, 0, 0]
        );
    }

    #[test]
    fn mistakes_are_errors() {
        for bad in [
            "",
            "gcc",
            "gc now",
            "sites --cutoff",
            "sites --cutoff -1",
            "sites --fast",
            "cpu --changed",
            "control",
            "control alloc maybe",
            "control depth 70000",
            "control sampling on 1 2",
            "raw 0",
            "raw zz",
        ] {
            assert!(frame(bad, 1).is_err(), "{bad:?} was taken");
        }
    }
}
