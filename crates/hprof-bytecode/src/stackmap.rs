//! StackMapTable decoding and re-encoding.
//!
//! Frames are kept in their original form (`same_frame`, `chop_frame`, …)
//! with absolute *original* offsets. On output each gets its new offset
//! delta: `same_frame` and `same_locals_1_stack_item_frame` are promoted to
//! their `_extended` forms when the delta passes 63, and `Uninitialized(n)`
//! types get the new offset of their `new` instruction. A frame the rewriter
//! inserts is written as a `full_frame`, and so is the original frame right
//! after it, whose compressed form would otherwise be read relative to the
//! wrong predecessor.

use super::bytes::{Reader, put_u16};
use super::constant_pool::ConstantPool;
use super::types::VType;

/// How a frame was encoded, with the types that encoding carries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum FrameKind {
    /// `same_frame` / `same_frame_extended`.
    Same,
    /// `same_locals_1_stack_item_frame` (`_extended`): the stack item.
    SameLocals1(VType),
    /// `chop_frame`: how many locals are dropped (1-3).
    Chop(u8),
    /// `append_frame`: the added locals (1-3).
    Append(Vec<VType>),
    /// `full_frame`.
    Full {
        /// The locals, Long and Double as one entry each.
        locals: Vec<VType>,
        /// The operand stack, likewise.
        stack: Vec<VType>,
    },
}

/// One stack map frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Frame {
    /// The original code offset the frame applies to.
    pub offset: u32,
    /// Its encoding.
    pub kind: FrameKind,
}

/// The complete state a frame describes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct FrameState {
    /// The locals, Long and Double as one entry each.
    pub locals: Vec<VType>,
    /// The operand stack, likewise.
    pub stack: Vec<VType>,
}

fn read_vtype(r: &mut Reader<'_>) -> Result<VType, String> {
    let tag = r.u8().map_err(|e| e.to_string())?;
    Ok(match tag {
        0 => VType::Top,
        1 => VType::Integer,
        2 => VType::Float,
        3 => VType::Double,
        4 => VType::Long,
        5 => VType::Null,
        6 => VType::UninitializedThis,
        7 => VType::Object(r.u16().map_err(|e| e.to_string())?),
        8 => VType::Uninitialized(u32::from(r.u16().map_err(|e| e.to_string())?)),
        _ => return Err(format!("bad verification type tag {tag}")),
    })
}

fn read_vtypes(r: &mut Reader<'_>, count: usize) -> Result<Vec<VType>, String> {
    (0..count).map(|_| read_vtype(r)).collect()
}

/// Decodes a StackMapTable body into frames with absolute offsets.
pub(crate) fn decode(body: &[u8]) -> Result<Vec<Frame>, String> {
    let r = &mut Reader::new(body);
    let err = |e: super::BciError| format!("StackMapTable: {e}");
    let count = r.u16().map_err(err)?;
    let mut frames = Vec::with_capacity(usize::from(count));
    let mut previous: Option<u32> = None;
    for _ in 0..count {
        let frame_type = r.u8().map_err(err)?;
        let (delta, kind) = match frame_type {
            0..=63 => (u16::from(frame_type), FrameKind::Same),
            64..=127 => (
                u16::from(frame_type - 64),
                FrameKind::SameLocals1(read_vtype(r)?),
            ),
            128..=246 => return Err(format!("reserved stack map frame type {frame_type}")),
            247 => {
                let delta = r.u16().map_err(err)?;
                (delta, FrameKind::SameLocals1(read_vtype(r)?))
            }
            248..=250 => (r.u16().map_err(err)?, FrameKind::Chop(251 - frame_type)),
            251 => (r.u16().map_err(err)?, FrameKind::Same),
            252..=254 => {
                let delta = r.u16().map_err(err)?;
                let added = read_vtypes(r, usize::from(frame_type - 251))?;
                (delta, FrameKind::Append(added))
            }
            255 => {
                let delta = r.u16().map_err(err)?;
                let nlocals = r.u16().map_err(err)?;
                let locals = read_vtypes(r, usize::from(nlocals))?;
                let nstack = r.u16().map_err(err)?;
                let stack = read_vtypes(r, usize::from(nstack))?;
                (delta, FrameKind::Full { locals, stack })
            }
        };
        let offset = match previous {
            None => u32::from(delta),
            // Saturating: a hostile table cannot wrap around; the offset
            // then maps to no instruction and the method is left alone.
            Some(p) => p.saturating_add(u32::from(delta) + 1),
        };
        previous = Some(offset);
        frames.push(Frame { offset, kind });
    }
    if !r.at_end() {
        return Err("bytes after the last stack map frame".into());
    }
    Ok(frames)
}

/// The full state at each frame, starting from the method's implicit first
/// frame (`initial` locals, empty stack); each state's locals have room for
/// `locals_capacity` entries.
pub(crate) fn expand(
    frames: &[Frame],
    initial: &[VType],
    locals_capacity: usize,
) -> Result<Vec<FrameState>, String> {
    let mut states: Vec<FrameState> = Vec::with_capacity(frames.len());
    let mut locals = initial.to_vec();
    for frame in frames {
        let stack = match &frame.kind {
            FrameKind::Same => vec![],
            FrameKind::SameLocals1(t) => vec![t.clone()],
            FrameKind::Chop(k) => {
                let k = usize::from(*k);
                if k > locals.len() {
                    return Err(format!(
                        "chop_frame at {} drops too many locals",
                        frame.offset
                    ));
                }
                locals.truncate(locals.len() - k);
                vec![]
            }
            FrameKind::Append(added) => {
                locals.extend(added.iter().cloned());
                vec![]
            }
            FrameKind::Full { locals: l, stack } => {
                locals = l.clone();
                stack.clone()
            }
        };
        let mut copy = Vec::with_capacity(locals.len().max(locals_capacity));
        copy.extend_from_slice(&locals);
        states.push(FrameState {
            locals: copy,
            stack,
        });
    }
    Ok(states)
}

/// Where things move, for encoding: frame offsets and `Uninitialized`
/// offsets, both original → new.
pub(crate) trait OffsetMapping {
    /// The new offset a frame at original offset `old` applies to.
    fn frame_offset(&self, old: u32) -> Result<u32, String>;
    /// The new offset of the `new` instruction at original offset `old`.
    fn new_instruction(&self, old: u32) -> Result<u32, String>;
}

/// A frame to write: its encoding, or `None` to write the full `state`.
pub(crate) struct OutFrame<'f> {
    /// The original offset.
    pub offset: u32,
    /// The original encoding, when it is still valid.
    pub kind: Option<&'f FrameKind>,
    /// The full state, used when `kind` is `None`.
    pub state: Option<&'f FrameState>,
}

fn write_vtype(
    out: &mut Vec<u8>,
    t: &VType,
    map: &dyn OffsetMapping,
    pool: &mut ConstantPool<'_>,
) -> Result<(), String> {
    match t {
        VType::Top => out.push(0),
        VType::Integer => out.push(1),
        VType::Float => out.push(2),
        VType::Double => out.push(3),
        VType::Long => out.push(4),
        VType::Null => out.push(5),
        VType::UninitializedThis => out.push(6),
        VType::Object(index) => {
            out.push(7);
            put_u16(out, *index);
        }
        VType::Named(name) => {
            let index = pool.add_class(name)?;
            out.push(7);
            put_u16(out, index);
        }
        VType::Uninitialized(old) => {
            let new = map.new_instruction(*old)?;
            out.push(8);
            put_u16(out, u16::try_from(new).map_err(|_| "offset past 65535")?);
        }
    }
    Ok(())
}

fn write_vtypes(
    out: &mut Vec<u8>,
    types: &[VType],
    map: &dyn OffsetMapping,
    pool: &mut ConstantPool<'_>,
) -> Result<(), String> {
    for t in types {
        write_vtype(out, t, map, pool)?;
    }
    Ok(())
}

/// Encodes `frames` (sorted by original offset, none at the same offset)
/// as a StackMapTable body at their new offsets.
pub(crate) fn encode(
    frames: &[OutFrame<'_>],
    map: &dyn OffsetMapping,
    pool: &mut ConstantPool<'_>,
) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    put_u16(
        &mut out,
        u16::try_from(frames.len()).map_err(|_| "too many frames")?,
    );
    let mut previous: Option<u32> = None;
    for frame in frames {
        let offset = map.frame_offset(frame.offset)?;
        let delta = match previous {
            None => offset,
            Some(p) if offset > p => offset - p - 1,
            Some(_) => return Err("stack map frames out of order".into()),
        };
        previous = Some(offset);
        let delta = u16::try_from(delta).map_err(|_| "frame offset delta past 65535")?;
        let kind = match (frame.kind, frame.state) {
            (Some(kind), _) => kind,
            (None, Some(state)) => {
                write_full(&mut out, delta, &state.locals, &state.stack, map, pool)?;
                continue;
            }
            (None, None) => return Err("a frame with neither encoding nor state".into()),
        };
        match kind {
            FrameKind::Same if delta <= 63 => out.push(delta as u8),
            FrameKind::Same => {
                out.push(251);
                put_u16(&mut out, delta);
            }
            FrameKind::SameLocals1(t) => {
                if delta <= 63 {
                    out.push(64 + delta as u8);
                } else {
                    out.push(247);
                    put_u16(&mut out, delta);
                }
                write_vtype(&mut out, t, map, pool)?;
            }
            FrameKind::Chop(k) => {
                out.push(251 - k);
                put_u16(&mut out, delta);
            }
            FrameKind::Append(added) => {
                out.push(251 + added.len() as u8);
                put_u16(&mut out, delta);
                write_vtypes(&mut out, added, map, pool)?;
            }
            FrameKind::Full { locals, stack } => {
                write_full(&mut out, delta, locals, stack, map, pool)?;
            }
        }
    }
    Ok(out)
}

/// A `full_frame` of `locals` and `stack`.
fn write_full(
    out: &mut Vec<u8>,
    delta: u16,
    locals: &[VType],
    stack: &[VType],
    map: &dyn OffsetMapping,
    pool: &mut ConstantPool<'_>,
) -> Result<(), String> {
    out.push(255);
    put_u16(out, delta);
    put_u16(out, locals.len() as u16);
    write_vtypes(out, locals, map, pool)?;
    put_u16(out, stack.len() as u16);
    write_vtypes(out, stack, map, pool)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bytes::Reader;
    use std::rc::Rc;

    /// Shifts every offset by a fixed amount, like code injected at the start.
    struct Shift(u32);

    impl OffsetMapping for Shift {
        fn frame_offset(&self, old: u32) -> Result<u32, String> {
            Ok(old + self.0)
        }
        fn new_instruction(&self, old: u32) -> Result<u32, String> {
            Ok(old + self.0)
        }
    }

    fn pool() -> ConstantPool<'static> {
        // #1 Utf8 "A", #2 Class A
        static BYTES: [u8; 9] = [0, 3, 1, 0, 1, b'A', 7, 0, 1];
        ConstantPool::parse(&mut Reader::new(&BYTES)).unwrap()
    }

    fn original_frames(frames: &[Frame]) -> Vec<OutFrame<'_>> {
        frames
            .iter()
            .map(|f| OutFrame {
                offset: f.offset,
                kind: Some(&f.kind),
                state: None,
            })
            .collect()
    }

    #[test]
    fn decodes_every_frame_type() {
        let body = [
            0,
            6, // six frames
            5, // same_frame at 5
            64 + 3,
            1, // same_locals_1_stack_item(int) at 9
            252,
            0,
            0,
            7,
            0,
            2, // append(A) at 10
            249,
            0,
            4, // chop 2 at 15
            247,
            0,
            100,
            8,
            0,
            3, // same_locals_1_stack_item_extended(Uninitialized(3)) at 116
            255,
            0,
            0,
            0,
            2,
            4,
            6,
            0,
            1,
            5, // full [long, uninitThis] [null] at 117
        ];
        let frames = decode(&body).unwrap();
        let offsets: Vec<u32> = frames.iter().map(|f| f.offset).collect();
        assert_eq!(offsets, [5, 9, 10, 15, 116, 117]);
        assert_eq!(frames[1].kind, FrameKind::SameLocals1(VType::Integer));
        assert_eq!(frames[2].kind, FrameKind::Append(vec![VType::Object(2)]));
        assert_eq!(frames[3].kind, FrameKind::Chop(2));
        assert_eq!(
            frames[4].kind,
            FrameKind::SameLocals1(VType::Uninitialized(3))
        );
        let states = expand(&frames, &[VType::Integer, VType::Float], 0).unwrap();
        assert_eq!(
            states[2].locals,
            [VType::Integer, VType::Float, VType::Object(2)]
        );
        assert_eq!(states[3].locals, [VType::Integer]);
        assert_eq!(states[4].stack, [VType::Uninitialized(3)]);
        assert_eq!(states[5].locals, [VType::Long, VType::UninitializedThis]);
        // Re-encoding at the same offsets gives the same bytes.
        let again = encode(&original_frames(&frames), &Shift(0), &mut pool()).unwrap();
        assert_eq!(again, body);
    }

    #[test]
    fn promotes_short_frames_when_the_delta_passes_63() {
        let body = [0, 2, 10, 64 + 63, 2];
        let frames = decode(&body).unwrap();
        assert_eq!(frames[1].offset, 74);
        // Injected code in between: a map that spreads the two frames apart.
        struct Spread;
        impl OffsetMapping for Spread {
            fn frame_offset(&self, old: u32) -> Result<u32, String> {
                Ok(if old == 10 { 10 } else { old + 30 })
            }
            fn new_instruction(&self, old: u32) -> Result<u32, String> {
                Ok(old)
            }
        }
        let out = encode(&original_frames(&frames), &Spread, &mut pool()).unwrap();
        // same_frame at 10 stays; same_locals_1 at 104 needs delta 93: extended.
        assert_eq!(out, [0, 2, 10, 247, 0, 93, 2]);
        let redecoded = decode(&out).unwrap();
        assert_eq!(redecoded[1].offset, 104);
        assert_eq!(redecoded[1].kind, frames[1].kind);

        let same = decode(&[0, 1, 63]).unwrap();
        let out = encode(&original_frames(&same), &Shift(1), &mut pool()).unwrap();
        assert_eq!(out, [0, 1, 251, 0, 64], "same_frame_extended");
    }

    #[test]
    fn remaps_uninitialized_offsets() {
        let body = [0, 1, 255, 0, 20, 0, 0, 0, 2, 8, 0, 7, 8, 0, 7];
        let frames = decode(&body).unwrap();
        let out = encode(&original_frames(&frames), &Shift(8), &mut pool()).unwrap();
        assert_eq!(out, [0, 1, 255, 0, 28, 0, 0, 0, 2, 8, 0, 15, 8, 0, 15]);
    }

    #[test]
    fn writes_full_frames_from_states_and_names_classes() {
        let state = FrameState {
            locals: vec![
                VType::Named(Rc::from(&b"A"[..])),
                VType::Named(Rc::from(&b"B"[..])),
            ],
            stack: vec![],
        };
        let frames = [OutFrame {
            offset: 3,
            kind: None,
            state: Some(&state),
        }];
        let mut pool = pool();
        let out = encode(&frames, &Shift(0), &mut pool).unwrap();
        assert_eq!(out, [0, 1, 255, 0, 3, 0, 2, 7, 0, 2, 7, 0, 4, 0, 0]);
        assert_eq!(pool.class_name(4).unwrap(), b"B");
    }

    #[test]
    fn rejects_bad_tables() {
        assert!(decode(&[0, 1, 128]).is_err());
        assert!(decode(&[0, 1, 64, 9]).is_err());
        assert!(decode(&[0, 1, 0, 0]).is_err());
        let chop = decode(&[0, 1, 250, 0, 0]).unwrap();
        assert!(expand(&chop, &[], 0).is_err());
    }
}
