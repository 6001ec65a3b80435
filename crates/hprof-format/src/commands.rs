//! The commands a `net=` front end sends the agent on the output socket,
//! HPROF's framing: `u1 tag`, `u4 serial`, `u4 length`, then a body, all
//! numbers big-endian.
//!
//! As in HPROF, a known command's body is read by its tag alone and the
//! length field is not used for it (a front end written for HPROF may have
//! sent any length there). A frame with an unknown tag (or an unknown
//! CONTROL sub-command) is skipped by its length instead, so the frames
//! after it are still read. Nothing read from the peer is ever used to size
//! an allocation: a frame is at most [`LONGEST_KNOWN_FRAME`] bytes held at
//! once, and the bytes of an unknown frame are read and dropped in small
//! pieces.
//!
//! Thread object identifiers in CONTROL sub-commands 3 and 4 are 4 bytes, as
//! in HPROF (whose identifiers were 4 bytes); see [`Control::SamplingOn`].

use crate::big_endian::{self, BigEndianOut, read_u2, read_u4};
use std::io::{self, Read};

/// Command tags.
pub mod tags {
    /// 0x01: force a garbage collection ([`Command::Gc`](super::Command::Gc)).
    pub const GC: u8 = 0x01;
    /// 0x02: write a heap dump ([`Command::DumpHeap`](super::Command::DumpHeap)).
    pub const DUMP_HEAP: u8 = 0x02;
    /// 0x03: write the allocation sites; body u2 flags, u4 cutoff (f32 bits).
    pub const ALLOC_SITES: u8 = 0x03;
    /// 0x04: write a HEAP SUMMARY.
    pub const HEAP_SUMMARY: u8 = 0x04;
    /// 0x05: end the program.
    pub const EXIT: u8 = 0x05;
    /// 0x06: write the traces not written yet.
    pub const DUMP_TRACES: u8 = 0x06;
    /// 0x07: write the CPU section; body u2 (unused), u4 cutoff (f32 bits).
    pub const CPU_SAMPLES: u8 = 0x07;
    /// 0x08: a CONTROL sub-command; body u2 sub-command, then its operand if any.
    pub const CONTROL: u8 = 0x08;
    /// 0xFF: no more commands.
    pub const EOF: u8 = 0xFF;
}

/// ALLOC SITES flags.
pub mod site_flags {
    /// Only the sites that changed since the last sites dump.
    pub const CHANGED_ONLY: u16 = 0x1;
    /// Ordered by allocated bytes (not live bytes).
    pub const BY_ALLOCATED: u16 = 0x2;
    /// A garbage collection first.
    pub const GC_FIRST: u16 = 0x4;
}

/// The frame header: tag, serial, length.
pub const HEADER_BYTES: usize = 9;

/// The longest body a known command has (CONTROL 3/4: sub-command and a
/// 4-byte identifier; ALLOC SITES: flags and cutoff is 6).
pub const LONGEST_KNOWN_BODY: usize = 6;

/// The longest frame held at once.
pub const LONGEST_KNOWN_FRAME: usize = HEADER_BYTES + LONGEST_KNOWN_BODY;

/// One command from the front end.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Command {
    /// Force a garbage collection.
    Gc,
    /// Write a heap dump.
    DumpHeap,
    /// Write the allocation sites: `flags` of [`site_flags`], rows under
    /// the `cutoff` share left out.
    AllocSites {
        /// u2 flags, of [`site_flags`].
        flags: u16,
        /// u4 cutoff ratio, the bits of an f32.
        cutoff: f32,
    },
    /// Write a HEAP SUMMARY record (binary output only).
    HeapSummary,
    /// End the program.
    Exit,
    /// Write every trace not written yet.
    DumpTraces,
    /// Write the CPU section with `cutoff` (the u2 before it is unused).
    CpuSamples {
        /// u4 cutoff ratio, the bits of an f32.
        cutoff: f32,
    },
    /// Change what is collected.
    Control(Control),
    /// No more commands.
    Eof,
    /// A tag no command has; its frame was skipped by its length.
    Unknown {
        /// The frame's u1 tag.
        tag: u8,
    },
}

/// CONTROL sub-commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Control {
    /// 1: allocations are counted again.
    AllocationsOn,
    /// 2: allocations are no longer counted.
    AllocationsOff,
    /// 3: CPU sampling on for the thread whose THREAD START object
    /// identifier is `thread` (0: every thread). Files with 8-byte
    /// identifiers match its low 4 bytes.
    SamplingOn {
        /// u4 thread object identifier (0: every thread).
        thread: u32,
    },
    /// 4: CPU sampling off for that thread (0: every thread).
    SamplingOff {
        /// u4 thread object identifier (0: every thread).
        thread: u32,
    },
    /// 5: CPU counts start over.
    ClearCpu,
    /// 6: allocation site counts start over.
    ClearSites,
    /// 7: traces keep at most this many frames from now on.
    SetDepth(u16),
    /// Any other sub-command; its frame was skipped by its length.
    Unknown(u16),
}

impl Command {
    /// The frame of this command with `serial`, as a front end sends it.
    /// [`Command::Unknown`] gives a frame with that tag and no body.
    pub fn encode(&self, serial: u32) -> Vec<u8> {
        let (tag, body): (u8, Vec<u8>) = match *self {
            Command::Gc => (tags::GC, vec![]),
            Command::DumpHeap => (tags::DUMP_HEAP, vec![]),
            Command::AllocSites { flags, cutoff } => {
                let mut body = Vec::with_capacity(6);
                body.put_u2(flags);
                body.put_u4(cutoff.to_bits());
                (tags::ALLOC_SITES, body)
            }
            Command::HeapSummary => (tags::HEAP_SUMMARY, vec![]),
            Command::Exit => (tags::EXIT, vec![]),
            Command::DumpTraces => (tags::DUMP_TRACES, vec![]),
            Command::CpuSamples { cutoff } => {
                let mut body = Vec::with_capacity(6);
                body.put_u2(0);
                body.put_u4(cutoff.to_bits());
                (tags::CPU_SAMPLES, body)
            }
            Command::Control(control) => (tags::CONTROL, control.encode()),
            Command::Eof => (tags::EOF, vec![]),
            Command::Unknown { tag } => (tag, vec![]),
        };
        let mut frame = vec![tag];
        frame.put_u4(serial);
        frame.put_u4(body.len() as u32);
        frame.extend(body);
        frame
    }
}

impl Control {
    fn encode(&self) -> Vec<u8> {
        let mut body = Vec::with_capacity(6);
        match *self {
            Control::AllocationsOn => body.put_u2(1),
            Control::AllocationsOff => body.put_u2(2),
            Control::SamplingOn { thread } => {
                body.put_u2(3);
                body.put_u4(thread);
            }
            Control::SamplingOff { thread } => {
                body.put_u2(4);
                body.put_u4(thread);
            }
            Control::ClearCpu => body.put_u2(5),
            Control::ClearSites => body.put_u2(6),
            Control::SetDepth(depth) => {
                body.put_u2(7);
                body.put_u2(depth);
            }
            Control::Unknown(code) => body.put_u2(code),
        }
        body
    }
}

/// Reads the next command from `input`. `Ok(None)`: the input ended
/// between two frames (the peer closed). A frame cut short is an
/// `UnexpectedEof` error. Every call consumes at least one byte or ends.
pub fn read_command(input: &mut impl Read) -> io::Result<Option<Command>> {
    let mut tag = [0u8; 1];
    loop {
        match input.read(&mut tag) {
            Ok(0) => return Ok(None),
            Ok(_) => break,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    let mut rest = [0u8; HEADER_BYTES - 1];
    input.read_exact(&mut rest)?;
    let length = big_endian::u4_at(&rest, 4).expect("8 bytes after the tag");
    let command = match tag[0] {
        tags::GC => Command::Gc,
        tags::DUMP_HEAP => Command::DumpHeap,
        tags::ALLOC_SITES => {
            let flags = read_u2(input)?;
            let cutoff = f32::from_bits(read_u4(input)?);
            Command::AllocSites { flags, cutoff }
        }
        tags::HEAP_SUMMARY => Command::HeapSummary,
        tags::EXIT => Command::Exit,
        tags::DUMP_TRACES => Command::DumpTraces,
        tags::CPU_SAMPLES => {
            let _unused = read_u2(input)?;
            let cutoff = f32::from_bits(read_u4(input)?);
            Command::CpuSamples { cutoff }
        }
        tags::CONTROL => Command::Control(read_control(input, length)?),
        tags::EOF => Command::Eof,
        other => {
            skip(input, u64::from(length))?;
            Command::Unknown { tag: other }
        }
    };
    Ok(Some(command))
}

fn read_control(input: &mut impl Read, length: u32) -> io::Result<Control> {
    Ok(match read_u2(input)? {
        1 => Control::AllocationsOn,
        2 => Control::AllocationsOff,
        3 => Control::SamplingOn {
            thread: read_u4(input)?,
        },
        4 => Control::SamplingOff {
            thread: read_u4(input)?,
        },
        5 => Control::ClearCpu,
        6 => Control::ClearSites,
        7 => Control::SetDepth(read_u2(input)?),
        other => {
            // The sub-command's two bytes were part of the length.
            skip(input, u64::from(length).saturating_sub(2))?;
            Control::Unknown(other)
        }
    })
}

/// Reads and drops `count` bytes, in pieces of a fixed buffer.
fn skip(input: &mut impl Read, count: u64) -> io::Result<()> {
    let skipped = io::copy(&mut input.take(count), &mut io::sink())?;
    if skipped < count {
        return Err(io::ErrorKind::UnexpectedEof.into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(mut bytes: &[u8]) -> (Vec<Command>, Option<io::ErrorKind>) {
        let mut commands = Vec::new();
        loop {
            match read_command(&mut bytes) {
                Ok(Some(command)) => commands.push(command),
                Ok(None) => return (commands, None),
                Err(e) => return (commands, Some(e.kind())),
            }
        }
    }

    fn every_command() -> Vec<Command> {
        let mut commands = vec![
            Command::Gc,
            Command::DumpHeap,
            Command::AllocSites {
                flags: site_flags::CHANGED_ONLY | site_flags::GC_FIRST,
                cutoff: 0.25,
            },
            Command::HeapSummary,
            Command::Exit,
            Command::DumpTraces,
            Command::CpuSamples { cutoff: 0.0001 },
            Command::Eof,
        ];
        for control in [
            Control::AllocationsOn,
            Control::AllocationsOff,
            Control::SamplingOn {
                thread: 0x5000_0002,
            },
            Control::SamplingOff { thread: 0 },
            Control::ClearCpu,
            Control::ClearSites,
            Control::SetDepth(3),
        ] {
            commands.push(Command::Control(control));
        }
        commands
    }

    #[test]
    fn every_command_reads_back_as_encoded() {
        let commands = every_command();
        let bytes: Vec<u8> = commands
            .iter()
            .enumerate()
            .flat_map(|(serial, c)| c.encode(serial as u32))
            .collect();
        assert_eq!(all(&bytes), (commands, None));
    }

    #[test]
    fn the_frames_are_hprofs() {
        let sites = Command::AllocSites {
            flags: 0x3,
            cutoff: 0.5,
        };
        assert_eq!(
            sites.encode(7),
            [3, 0, 0, 0, 7, 0, 0, 0, 6, 0, 3, 0x3F, 0, 0, 0]
        );
        let off = Command::Control(Control::SamplingOff {
            thread: 0x0102_0304,
        });
        assert_eq!(off.encode(0), [8, 0, 0, 0, 0, 0, 0, 0, 6, 0, 4, 1, 2, 3, 4]);
        assert_eq!(Command::Eof.encode(1), [0xFF, 0, 0, 0, 1, 0, 0, 0, 0]);
    }

    #[test]
    fn a_known_command_ignores_its_length_as_hprof_did() {
        // GC with a length of 5 and no body, then DUMP TRACES.
        let bytes = [1, 0, 0, 0, 0, 0, 0, 0, 5, 6, 0, 0, 0, 0, 0, 0, 0, 0];
        assert_eq!(all(&bytes), (vec![Command::Gc, Command::DumpTraces], None));
    }

    #[test]
    fn an_unknown_tag_is_skipped_by_its_length() {
        let mut bytes = vec![0x42, 0, 0, 0, 1, 0, 0, 0, 3, 0xAA, 0xBB, 0xCC];
        bytes.extend(Command::Gc.encode(2));
        assert_eq!(
            all(&bytes),
            (vec![Command::Unknown { tag: 0x42 }, Command::Gc], None)
        );
        let mut control = vec![8, 0, 0, 0, 1, 0, 0, 0, 4, 0, 99, 0xEE, 0xEE];
        control.extend(Command::Exit.encode(2));
        assert_eq!(
            all(&control),
            (
                vec![Command::Control(Control::Unknown(99)), Command::Exit],
                None
            )
        );
    }

    #[test]
    fn an_absurd_length_reads_to_the_end_without_allocating() {
        let bytes = [0x42, 0, 0, 0, 1, 0xFF, 0xFF, 0xFF, 0xFF, 1, 2, 3];
        assert_eq!(all(&bytes), (vec![], Some(io::ErrorKind::UnexpectedEof)));
    }

    #[test]
    fn a_cut_frame_is_an_error_and_nothing_is_the_end() {
        assert_eq!(all(&[]), (vec![], None));
        for cut in 1..15 {
            let frame = Command::Control(Control::SamplingOn { thread: 1 }).encode(0);
            assert_eq!(
                all(&frame[..cut]),
                (vec![], Some(io::ErrorKind::UnexpectedEof)),
                "cut at {cut}"
            );
        }
    }
}
