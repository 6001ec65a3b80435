//! Where every instruction goes once the calls are injected, and the
//! re-emitted code.
//!
//! Each original instruction becomes a *block*: the code injected in front
//! of it (the exit call when it is a `*return`; an allocation's count), the
//! instruction itself, possibly in a longer form, then the code injected
//! after it (a `multianewarray`'s count). The entry call comes before the
//! first block. Offsets map as follows (the rules every table of the `Code`
//! attribute follows):
//!
//! - **block start** ([`Layout::block_of`]): branch targets, switch targets,
//!   stack map frames, and the exception table's `start_pc`, `end_pc` and
//!   `handler_pc`. A jump to a `return` runs the exit call; a jump back to
//!   offset 0 does not run the entry call again; a frame describes the state
//!   where its block begins, and injected code leaves the stack and locals
//!   as they were. An exception range `[start, end)` covers the same
//!   instructions as before, each with the exit call that belongs to it: a
//!   `return` just past the range and its exit call stay outside it, and the
//!   entry call is never inside any range (a handler does not catch what the
//!   profiler's call throws before the method proper has begun).
//! - **instruction** ([`Layout::instruction_at`]): `Uninitialized(offset)`
//!   types, which name the `new` instruction itself.
//! - **debug start** ([`Layout::debug_start`]): the start of LineNumberTable
//!   and LocalVariable(Type)Table entries. Like the block start, except that
//!   offset 0 stays 0, so that the entry call has the method's first line
//!   and the arguments are in scope there. The end of a local's range
//!   (`start + length`) maps as a block start, like `end_pc`.
//!
//! A 16-bit branch whose new offset does not fit is widened: `goto` to
//! `goto_w`, `jsr` to `jsr_w`, and `if<cond> L` to `if<not cond> +8;
//! goto_w L`. Widening moves later code, which may make other branches
//! overflow, so the layout is recomputed until nothing more needs widening
//! (it only ever widens, so this ends). Switch padding follows each
//! switch's new offset.

use super::bytes::{put_i32, put_u16};
use super::code::{Insn, Operands, invert_conditional, is_conditional, op, switch_padding};
use super::stackmap::OffsetMapping;

/// Marks an offset that is not the start of an instruction.
const NOT_AN_INSTRUCTION: u32 = u32::MAX;

/// New offsets for one method's instructions.
#[derive(Debug)]
pub(crate) struct Layout<'i> {
    insns: &'i [Insn],
    /// Original offset → instruction index (the code length → `insns.len()`).
    index: Vec<u32>,
    /// Per instruction, the new start of its block; one more at the end:
    /// the new code length.
    block: Vec<u32>,
    /// Per instruction, its own new offset.
    at: Vec<u32>,
    /// Per instruction, whether its 16-bit branch is widened.
    wide: Vec<bool>,
    /// Length of the entry call sequence.
    entry_len: u32,
    /// Per instruction, the length of the code injected before it.
    before: Vec<u32>,
    /// Per instruction, the length of the code injected after it.
    after: Vec<u32>,
}

/// The new length of `insn` placed at `pos`.
fn new_len(insn: &Insn, wide: bool, pos: u32) -> u32 {
    match insn.operands {
        Operands::Branch(_) if wide => {
            if is_conditional(insn.opcode) {
                8
            } else {
                5
            }
        }
        Operands::TableSwitch { .. } | Operands::LookupSwitch { .. } => {
            insn.len - switch_padding(insn.offset) + switch_padding(pos)
        }
        _ => insn.len,
    }
}

impl<'i> Layout<'i> {
    /// Lays out `insns` (the decoded code, `code_len` bytes) with an entry
    /// sequence of `entry_len` bytes and an exit sequence of `exit_len`
    /// bytes before each return. With `widen_all`, every 16-bit branch is
    /// widened, needed or not (a test knob). Fails when a branch target is
    /// not the start of an instruction. (The tests' shorthand.)
    #[cfg(test)]
    pub(crate) fn new(
        insns: &'i [Insn],
        code_len: usize,
        entry_len: u32,
        exit_len: u32,
        widen_all: bool,
    ) -> Result<Layout<'i>, String> {
        let before = insns
            .iter()
            .map(|i| if i.is_return() { exit_len } else { 0 })
            .collect();
        let after = vec![0; insns.len()];
        Self::with_injections(insns, code_len, entry_len, before, after, widen_all)
    }

    /// [`Layout::new`] with, per instruction, `before[i]` bytes injected in
    /// front of instruction `i` and `after[i]` bytes after it.
    pub(crate) fn with_injections(
        insns: &'i [Insn],
        code_len: usize,
        entry_len: u32,
        before: Vec<u32>,
        after: Vec<u32>,
        widen_all: bool,
    ) -> Result<Layout<'i>, String> {
        if before.len() != insns.len() || after.len() != insns.len() {
            return Err("one injection length per instruction".into());
        }
        let mut index = vec![NOT_AN_INSTRUCTION; code_len + 1];
        for (i, insn) in insns.iter().enumerate() {
            index[insn.offset as usize] = i as u32;
        }
        index[code_len] = insns.len() as u32;
        let mut layout = Layout {
            insns,
            index,
            block: vec![0; insns.len() + 1],
            at: vec![0; insns.len()],
            wide: insns
                .iter()
                .map(|i| widen_all && matches!(i.operands, Operands::Branch(_)))
                .collect(),
            entry_len,
            before,
            after,
        };
        for insn in insns {
            for target in targets(insn) {
                let i = layout.index[target as usize];
                if i == NOT_AN_INSTRUCTION || i as usize == insns.len() {
                    return Err(format!(
                        "branch at {} to {target}, not an instruction",
                        insn.offset
                    ));
                }
            }
        }
        loop {
            layout.place();
            let mut widened = false;
            for (i, insn) in insns.iter().enumerate() {
                if let Operands::Branch(target) = insn.operands
                    && !layout.wide[i]
                {
                    let rel = i64::from(layout.block_at(target)) - i64::from(layout.at[i]);
                    if i16::try_from(rel).is_err() {
                        layout.wide[i] = true;
                        widened = true;
                    }
                }
            }
            if !widened {
                return Ok(layout);
            }
        }
    }

    /// Computes `block` and `at` for the current choice of widened branches.
    fn place(&mut self) {
        let mut pos = self.entry_len;
        for (i, insn) in self.insns.iter().enumerate() {
            self.block[i] = pos;
            pos += self.before[i];
            self.at[i] = pos;
            pos += new_len(insn, self.wide[i], pos) + self.after[i];
        }
        self.block[self.insns.len()] = pos;
    }

    /// `block_of` for an offset already known to be an instruction.
    fn block_at(&self, old: u32) -> u32 {
        self.block[self.index[old as usize] as usize]
    }

    /// The instruction index of original offset `old` (the instruction
    /// count for the end of the code).
    fn index_of(&self, old: u32) -> Result<usize, String> {
        match self.index.get(old as usize) {
            Some(&i) if i != NOT_AN_INSTRUCTION => Ok(i as usize),
            _ => Err(format!("offset {old} is not at an instruction")),
        }
    }

    /// The new code length.
    pub(crate) fn len(&self) -> u32 {
        self.block[self.insns.len()]
    }

    /// Where the block of the instruction at original offset `old` starts
    /// (the new code length for the original code length).
    pub(crate) fn block_of(&self, old: u32) -> Result<u32, String> {
        Ok(self.block[self.index_of(old)?])
    }

    /// [`Layout::block_of`] for offsets that must be an instruction (a
    /// branch target, a handler, a frame), not the end of the code.
    pub(crate) fn target(&self, old: u32) -> Result<u32, String> {
        if self.index_of(old)? == self.insns.len() {
            return Err(format!("offset {old} is the end of the code"));
        }
        self.block_of(old)
    }

    /// The new offset of the instruction at original offset `old` itself.
    pub(crate) fn instruction_at(&self, old: u32) -> Result<u32, String> {
        let i = self.index_of(old)?;
        self.at
            .get(i)
            .copied()
            .ok_or_else(|| format!("offset {old} is the end of the code"))
    }

    /// The new start of a LineNumberTable or LocalVariableTable entry that
    /// started at `old` (an instruction).
    pub(crate) fn debug_start(&self, old: u32) -> Result<u32, String> {
        let new = self.target(old)?;
        Ok(if old == 0 { 0 } else { new })
    }

    /// Indices of the conditional branches that were widened; the
    /// instruction after each becomes a branch target.
    pub(crate) fn widened_conditionals(&self) -> impl Iterator<Item = usize> + '_ {
        self.insns
            .iter()
            .enumerate()
            .filter(|(i, insn)| self.wide[*i] && is_conditional(insn.opcode))
            .map(|(i, _)| i)
    }

    /// Relative offset from the instruction `i` to the block of `target`.
    fn rel(&self, i: usize, target: u32) -> i32 {
        // Both are below 65536 once the length is checked; before that the
        // subtraction still cannot overflow an i64, and the caller refuses
        // code longer than 65535 bytes.
        (i64::from(self.block_at(target)) - i64::from(self.at[i])) as i32
    }

    /// The new code: `entry` first, `exit` before each return, branches and
    /// switches re-targeted. (The tests' shorthand.)
    #[cfg(test)]
    pub(crate) fn emit(&self, code: &[u8], entry: &[u8], exit: &[u8]) -> Vec<u8> {
        let none: &[u8] = &[];
        self.emit_with(code, entry, |i| {
            let before = if self.insns[i].is_return() {
                exit
            } else {
                none
            };
            (before, none)
        })
    }

    /// The new code: `entry` first, then per instruction `injected(i).0`,
    /// the instruction (branches and switches re-targeted) and
    /// `injected(i).1`, of the lengths the layout was made with.
    pub(crate) fn emit_with<'s>(
        &self,
        code: &[u8],
        entry: &[u8],
        injected: impl Fn(usize) -> (&'s [u8], &'s [u8]),
    ) -> Vec<u8> {
        debug_assert_eq!(entry.len() as u32, self.entry_len);
        let mut out = Vec::with_capacity(self.len() as usize);
        out.extend_from_slice(entry);
        for (i, insn) in self.insns.iter().enumerate() {
            let (before, after) = injected(i);
            debug_assert_eq!(before.len() as u32, self.before[i]);
            debug_assert_eq!(after.len() as u32, self.after[i]);
            out.extend_from_slice(before);
            debug_assert_eq!(out.len() as u32, self.at[i]);
            match &insn.operands {
                Operands::None => {
                    let start = insn.offset as usize;
                    out.extend_from_slice(&code[start..start + insn.len as usize]);
                }
                Operands::Branch(target) => {
                    let rel = self.rel(i, *target);
                    if !self.wide[i] {
                        out.push(insn.opcode);
                        put_u16(&mut out, rel as i16 as u16);
                    } else if is_conditional(insn.opcode) {
                        // if<not cond> over the goto_w (3 + 5 bytes).
                        out.push(invert_conditional(insn.opcode));
                        put_u16(&mut out, 8);
                        out.push(op::GOTO_W);
                        put_i32(&mut out, rel - 3);
                    } else {
                        out.push(if insn.opcode == op::JSR {
                            op::JSR_W
                        } else {
                            op::GOTO_W
                        });
                        put_i32(&mut out, rel);
                    }
                }
                Operands::BranchWide(target) => {
                    out.push(insn.opcode);
                    put_i32(&mut out, self.rel(i, *target));
                }
                Operands::TableSwitch {
                    default,
                    low,
                    targets,
                } => {
                    self.switch_head(&mut out, i, insn.opcode, *default);
                    put_i32(&mut out, *low);
                    put_i32(&mut out, low + targets.len() as i32 - 1);
                    for target in targets {
                        put_i32(&mut out, self.rel(i, *target));
                    }
                }
                Operands::LookupSwitch { default, pairs } => {
                    self.switch_head(&mut out, i, insn.opcode, *default);
                    put_i32(&mut out, pairs.len() as i32);
                    for (key, target) in pairs {
                        put_i32(&mut out, *key);
                        put_i32(&mut out, self.rel(i, *target));
                    }
                }
            }
            out.extend_from_slice(after);
        }
        debug_assert_eq!(out.len() as u32, self.len());
        out
    }

    /// A switch's opcode, padding for its new offset and default target.
    fn switch_head(&self, out: &mut Vec<u8>, i: usize, opcode: u8, default: u32) {
        out.push(opcode);
        out.extend(std::iter::repeat_n(0, switch_padding(self.at[i]) as usize));
        put_i32(out, self.rel(i, default));
    }
}

/// Every branch target of `insn`.
fn targets(insn: &Insn) -> Vec<u32> {
    match &insn.operands {
        Operands::None => vec![],
        Operands::Branch(t) | Operands::BranchWide(t) => vec![*t],
        Operands::TableSwitch {
            default, targets, ..
        } => std::iter::once(*default)
            .chain(targets.iter().copied())
            .collect(),
        Operands::LookupSwitch { default, pairs } => std::iter::once(*default)
            .chain(pairs.iter().map(|p| p.1))
            .collect(),
    }
}

impl OffsetMapping for Layout<'_> {
    fn frame_offset(&self, old: u32) -> Result<u32, String> {
        self.target(old)
    }

    fn new_instruction(&self, old: u32) -> Result<u32, String> {
        match self.insns.get(self.index_of(old)?) {
            Some(insn) if insn.opcode == 187 => self.instruction_at(old),
            _ => Err(format!(
                "Uninitialized({old}) does not name a new instruction"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::code::decode;

    /// Stand-ins for the call sequences: nops, so that the output decodes.
    const ENTRY: [u8; 3] = [0, 0, 0];
    const EXIT: [u8; 2] = [0, 0];

    fn rewrite(code: &[u8], widen_all: bool) -> (Vec<u8>, Vec<Insn>) {
        let insns = decode(code).unwrap();
        let layout = Layout::new(&insns, code.len(), 3, 2, widen_all).unwrap();
        let out = layout.emit(code, &ENTRY, &EXIT);
        (out, insns)
    }

    #[test]
    fn injects_at_entry_and_before_returns_and_retargets_branches() {
        // 0: iload_0  1: ifeq +4 (-> 5)  4: ireturn  5: goto -5 (-> 0)
        let code = [26, 153, 0, 4, 172, 167, 0xff, 0xfb];
        let (out, insns) = rewrite(&code, false);
        assert_eq!(
            out,
            [
                0, 0, 0,  // entry
                26, // 3: iload_0
                153, 0, 6, // 4: ifeq -> 10 (the goto)
                0, 0, 172, // 7: exit, ireturn
                167, 0xff, 0xf9, // 10: goto -> 3, after the entry call
            ]
        );
        let layout = Layout::new(&insns, code.len(), 3, 2, false).unwrap();
        assert_eq!(
            layout.block_of(4).unwrap(),
            7,
            "a jump to the return runs the exit call"
        );
        assert_eq!(layout.instruction_at(4).unwrap(), 9);
        assert_eq!(layout.block_of(0).unwrap(), 3);
        assert_eq!(layout.debug_start(0).unwrap(), 0);
        assert_eq!(layout.debug_start(5).unwrap(), 10);
        assert_eq!(layout.block_of(8).unwrap(), 13, "the end of the code");
        assert!(layout.block_of(2).is_err());
        assert!(layout.debug_start(8).is_err());
    }

    #[test]
    fn relocates_switch_padding() {
        // 0: iload_0  1: tableswitch (pad 2) default -> 24, 0..=1 -> 24, 25
        // 24: return  25: return
        let mut code = vec![26, op::TABLESWITCH, 0, 0];
        for v in [23i32, 0, 1, 23, 24] {
            put_i32(&mut code, v);
        }
        code.extend_from_slice(&[177, 177]);
        assert_eq!(code.len(), 26);
        let (out, _) = rewrite(&code, false);
        // The switch moves to 4: padding 3. Returns at 4+1+3+20 = 28 and 31
        // get their exit calls at 28 and 31.
        let mut expected = vec![0, 0, 0, 26, op::TABLESWITCH, 0, 0, 0];
        for v in [24i32, 0, 1, 24, 27] {
            put_i32(&mut expected, v);
        }
        expected.extend_from_slice(&[0, 0, 177, 0, 0, 177]);
        assert_eq!(out, expected);
        let again = decode(&out).unwrap();
        let switch = again.iter().find(|i| i.opcode == op::TABLESWITCH).unwrap();
        assert_eq!((switch.offset, switch.len), (4, 24));
    }

    #[test]
    fn lookupswitch_keys_survive() {
        // 0: iload_0  1: lookupswitch (pad 2) default -> 20, {7 -> 20}  20: return
        let mut code = vec![26, op::LOOKUPSWITCH, 0, 0];
        for v in [19i32, 1, 7, 19] {
            put_i32(&mut code, v);
        }
        code.push(177);
        let (out, _) = rewrite(&code, false);
        let insns = decode(&out).unwrap();
        let switch = insns.iter().find(|i| i.opcode == op::LOOKUPSWITCH).unwrap();
        assert_eq!(switch.offset, 4);
        let exit_call = switch.offset + switch.len;
        assert_eq!(
            switch.operands,
            Operands::LookupSwitch {
                default: exit_call,
                pairs: vec![(7, exit_call)]
            }
        );
    }

    /// `nops` nops between a conditional branch and its target.
    fn far_branch(opcode: u8, nops: usize) -> Vec<u8> {
        let mut code = vec![26, opcode];
        put_u16(&mut code, (nops + 3) as u16);
        code.extend(std::iter::repeat_n(0, nops));
        code.push(177);
        code
    }

    #[test]
    fn widens_a_conditional_that_overflows() {
        // ifeq +32767 fits before injection; the entry call does not move
        // it, but a return in between does.
        let mut code = far_branch(153, 32764);
        // Replace the middle nop with a return so the exit call lands inside.
        code[1000] = 177;
        let insns = decode(&code).unwrap();
        let layout = Layout::new(&insns, code.len(), 3, 2, false).unwrap();
        let widened: Vec<usize> = layout.widened_conditionals().collect();
        assert_eq!(widened, [1]);
        let out = layout.emit(&code, &ENTRY, &EXIT);
        assert_eq!(&out[4..12], &[154, 0, 8, op::GOTO_W, 0, 0, 0x80, 0x03]);
        // The goto_w at 7 reaches the exit call before the last return.
        let target = 7 + 0x8003;
        assert_eq!(&out[target..], &[0, 0, 177]);
        assert_eq!(
            layout.block_of(4).unwrap(),
            12,
            "the fall-through moved by 5"
        );
    }

    #[test]
    fn widens_goto_and_jsr_and_keeps_short_branches_short() {
        let mut code = far_branch(167, 32764);
        code[1000] = 177;
        let (out, _) = rewrite(&code, false);
        assert_eq!(&out[4..9], &[op::GOTO_W, 0, 0, 0x80, 0x03]);

        let (out, _) = rewrite(&far_branch(168, 10), false);
        assert_eq!(&out[4..7], &[168, 0, 13], "jsr +13 stays short");
        let (out, _) = rewrite(&far_branch(168, 10), true);
        assert_eq!(&out[4..9], &[op::JSR_W, 0, 0, 0, 15], "widen_all");
    }

    #[test]
    fn widening_all_branches_gives_equivalent_code() {
        // 0: iload_0  1: ifne +6 (-> 7)  4: goto +4 (-> 8)  7: nop  8: return
        let code = [26, 154, 0, 6, 167, 0, 4, 0, 177];
        let (out, _) = rewrite(&code, true);
        assert_eq!(
            out,
            [
                0,
                0,
                0,
                26, //
                153,
                0,
                8,
                op::GOTO_W,
                0,
                0,
                0,
                10, // 4: ifeq +8 (-> 12); goto_w -> 17
                op::GOTO_W,
                0,
                0,
                0,
                6, // 12: goto_w -> 18
                0, // 17: nop
                0,
                0,
                177, // 18
            ]
        );
    }

    #[test]
    fn refuses_branches_into_the_middle_of_an_instruction() {
        let code = [16, 1, 167, 0xff, 0xff, 177]; // bipush 1; goto -1 (-> 1)
        let insns = decode(&code).unwrap();
        assert!(Layout::new(&insns, code.len(), 0, 0, false).is_err());
    }
}
