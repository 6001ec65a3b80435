//! Byte-code instruction decoding: lengths (including `tableswitch` and
//! `lookupswitch` padding and the `wide` prefix) and branch targets.
use super::bytes::{i32_at, put_u16, u16_at};

/// Opcodes the rewriter treats specially.
pub(crate) mod op {
    pub const ICONST_0: u8 = 3;
    pub const ALOAD_0: u8 = 42;
    pub const ISTORE: u8 = 54;
    pub const ASTORE: u8 = 58;
    pub const ISTORE_0: u8 = 59;
    pub const LLOAD: u8 = 22;
    pub const LLOAD_0: u8 = 30;
    pub const LSTORE: u8 = 55;
    pub const LSTORE_0: u8 = 63;
    pub const FSTORE_0: u8 = 67;
    pub const DSTORE_0: u8 = 71;
    pub const ASTORE_0: u8 = 75;
    pub const IINC: u8 = 132;
    pub const BIPUSH: u8 = 16;
    pub const SIPUSH: u8 = 17;
    pub const LDC: u8 = 18;
    pub const LDC_W: u8 = 19;
    pub const IFEQ: u8 = 153;
    pub const IF_ACMPNE: u8 = 166;
    pub const JSR: u8 = 168;
    pub const RET: u8 = 169;
    pub const TABLESWITCH: u8 = 170;
    pub const LOOKUPSWITCH: u8 = 171;
    pub const IRETURN: u8 = 172;
    pub const RETURN: u8 = 177;
    pub const IADD: u8 = 96;
    pub const INVOKEVIRTUAL: u8 = 182;
    pub const INVOKESTATIC: u8 = 184;
    pub const INVOKEDYNAMIC: u8 = 186;
    pub const ATHROW: u8 = 191;
    pub const WIDE: u8 = 196;
    pub const IFNULL: u8 = 198;
    pub const IFNONNULL: u8 = 199;
    pub const GOTO_W: u8 = 200;
    pub const JSR_W: u8 = 201;
    pub const DUP: u8 = 89;
    pub const GETFIELD: u8 = 180;
    pub const PUTFIELD: u8 = 181;
    pub const LCONST_0: u8 = 9;
    pub const LRETURN: u8 = 173;
    pub const LSHL: u8 = 121;
    pub const ILOAD_2: u8 = 28;
    pub const I2L: u8 = 133;
    pub const LOR: u8 = 129;
    pub const GETSTATIC: u8 = 178;
    pub const PUTSTATIC: u8 = 179;
    pub const NEWARRAY: u8 = 188;
    pub const ISTORE_3: u8 = 62;
    pub const ILOAD_3: u8 = 29;
    pub const IAND: u8 = 126;
    pub const LASTORE: u8 = 80;
}

/// The element type operand of `newarray` (JVMS 6.5, newarray): not an
/// opcode, the byte that follows one.
pub(crate) mod array_type {
    pub const T_LONG: u8 = 11;
}

/// A local variable instruction (`lload L`, `lstore L`, ...) in its
/// shortest form: `short_form + L` for locals 0 to 3, `opcode L`, or `wide
/// opcode L` past 255.
pub(crate) fn local_insn(out: &mut Vec<u8>, opcode: u8, short_form: u8, local: u16) {
    match local {
        0..=3 => out.push(short_form + local as u8),
        4..=255 => out.extend_from_slice(&[opcode, local as u8]),
        _ => {
            out.extend_from_slice(&[op::WIDE, opcode]);
            put_u16(out, local);
        }
    }
}

/// Opcode ranges whose fixed length is not 1: `(first, last, length)`,
/// length 0 for the variable-size ones (`tableswitch`, `lookupswitch`,
/// `wide`).
const LENGTHS: [(usize, usize, u8); 20] = [
    (16, 16, 2),   // bipush
    (17, 17, 3),   // sipush
    (18, 18, 2),   // ldc
    (19, 20, 3),   // ldc_w, ldc2_w
    (21, 25, 2),   // iload..aload
    (54, 58, 2),   // istore..astore
    (132, 132, 3), // iinc
    (153, 168, 3), // if*, goto, jsr
    (169, 169, 2), // ret
    (170, 171, 0), // tableswitch, lookupswitch
    (178, 184, 3), // getstatic..invokestatic
    (185, 186, 5), // invokeinterface, invokedynamic
    (187, 187, 3), // new
    (188, 188, 2), // newarray
    (189, 189, 3), // anewarray
    (192, 193, 3), // checkcast, instanceof
    (196, 196, 0), // wide
    (197, 197, 4), // multianewarray
    (198, 199, 3), // ifnull, ifnonnull
    (200, 201, 5), // goto_w, jsr_w
];

/// Length of each fixed-size opcode (0 for variable-size ones); opcodes
/// 202 and up are not valid in class files.
const FIXED_LENGTH: [u8; 202] = {
    let mut t = [1u8; 202];
    let mut k = 0;
    while k < LENGTHS.len() {
        let (first, last, len) = LENGTHS[k];
        let mut i = first;
        while i <= last {
            t[i] = len;
            i += 1;
        }
        k += 1;
    }
    t
};

/// What an instruction's operands say about control flow. Targets are
/// absolute offsets in the original code.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Operands {
    /// No code offsets.
    None,
    /// A 16-bit relative branch: `if*`, `goto`, `jsr`.
    Branch(u32),
    /// A 32-bit relative branch: `goto_w`, `jsr_w`.
    BranchWide(u32),
    /// `tableswitch`.
    TableSwitch {
        /// The default target.
        default: u32,
        /// The lowest key.
        low: i32,
        /// The targets of keys `low..=high`.
        targets: Vec<u32>,
    },
    /// `lookupswitch`.
    LookupSwitch {
        /// The default target.
        default: u32,
        /// `(key, target)` pairs, in class-file order.
        pairs: Vec<(i32, u32)>,
    },
}

/// One decoded instruction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Insn {
    /// Offset of the opcode.
    pub offset: u32,
    /// Length in bytes, operands and padding included.
    pub len: u32,
    /// The opcode (`wide` for wide-prefixed instructions).
    pub opcode: u8,
    /// Branch targets, if any.
    pub operands: Operands,
}

impl Insn {
    /// True for `ireturn` … `return`, the instructions the exit call goes
    /// in front of.
    pub(crate) fn is_return(&self) -> bool {
        (op::IRETURN..=op::RETURN).contains(&self.opcode)
    }
}

/// True for the 16-bit conditional branches (`ifeq` … `if_acmpne`,
/// `ifnull`, `ifnonnull`).
pub(crate) fn is_conditional(opcode: u8) -> bool {
    (op::IFEQ..=op::IF_ACMPNE).contains(&opcode) || opcode == op::IFNULL || opcode == op::IFNONNULL
}

/// The conditional branch taken exactly when `opcode`'s is not
/// (`ifeq` ↔ `ifne`, `if_icmplt` ↔ `if_icmpge`, `ifnull` ↔ `ifnonnull`, …):
/// `ifeq` … `if_acmpne` come in pairs starting at odd values.
pub(crate) fn invert_conditional(opcode: u8) -> u8 {
    debug_assert!(is_conditional(opcode));
    match opcode {
        op::IFNULL => op::IFNONNULL,
        op::IFNONNULL => op::IFNULL,
        _ if opcode % 2 == 1 => opcode + 1,
        _ => opcode - 1,
    }
}

/// Padding after a switch opcode at `offset` so that its operands start on a
/// multiple of four (counted from the start of the code).
pub(crate) fn switch_padding(offset: u32) -> u32 {
    (4 - (offset + 1) % 4) % 4
}

/// `offset + relative`, if that lands inside the code.
fn target(offset: u32, relative: i32, code_len: usize) -> Result<u32, String> {
    let t = i64::from(offset) + i64::from(relative);
    if (0..code_len as i64).contains(&t) {
        Ok(t as u32)
    } else {
        Err(format!("branch at {offset} leaves the code (to {t})"))
    }
}

/// Decodes the instruction at `offset`.
fn decode_one(code: &[u8], offset: u32) -> Result<Insn, String> {
    let at = offset as usize;
    let truncated = || format!("instruction at {offset} runs past the end of the code");
    let opcode = code[at];
    let fixed = *FIXED_LENGTH
        .get(usize::from(opcode))
        .ok_or_else(|| format!("invalid opcode {opcode} at {offset}"))?;
    let (len, operands) = match opcode {
        op::TABLESWITCH | op::LOOKUPSWITCH => {
            let base = at + 1 + switch_padding(offset) as usize;
            let default = target(
                offset,
                i32_at(code, base).ok_or_else(truncated)?,
                code.len(),
            )?;
            if opcode == op::TABLESWITCH {
                let low = i32_at(code, base + 4).ok_or_else(truncated)?;
                let high = i32_at(code, base + 8).ok_or_else(truncated)?;
                if high < low {
                    return Err(format!("tableswitch at {offset} has high < low"));
                }
                let count = (i64::from(high) - i64::from(low) + 1) as usize;
                if count > code.len() / 4 {
                    return Err(truncated());
                }
                let mut targets = Vec::with_capacity(count);
                for k in 0..count {
                    let rel = i32_at(code, base + 12 + 4 * k).ok_or_else(truncated)?;
                    targets.push(target(offset, rel, code.len())?);
                }
                let end = base + 12 + 4 * count;
                (
                    end - at,
                    Operands::TableSwitch {
                        default,
                        low,
                        targets,
                    },
                )
            } else {
                let npairs = i32_at(code, base + 4).ok_or_else(truncated)?;
                if npairs < 0 || npairs as usize > code.len() / 8 {
                    return Err(format!(
                        "lookupswitch at {offset} has a bad npairs {npairs}"
                    ));
                }
                let mut pairs = Vec::with_capacity(npairs as usize);
                for k in 0..npairs as usize {
                    let key = i32_at(code, base + 8 + 8 * k).ok_or_else(truncated)?;
                    let rel = i32_at(code, base + 12 + 8 * k).ok_or_else(truncated)?;
                    pairs.push((key, target(offset, rel, code.len())?));
                }
                let end = base + 8 + 8 * npairs as usize;
                (end - at, Operands::LookupSwitch { default, pairs })
            }
        }
        op::WIDE => {
            let modified = *code.get(at + 1).ok_or_else(truncated)?;
            let len = match modified {
                21..=25 | 54..=58 | op::RET => 4,
                132 => 6, // iinc
                _ => return Err(format!("wide {modified} at {offset} is not allowed")),
            };
            (len, Operands::None)
        }
        _ if fixed == 0 => return Err(format!("invalid opcode {opcode} at {offset}")),
        153..=168 | op::IFNULL | op::IFNONNULL => {
            let rel = u16_at(code, at + 1).ok_or_else(truncated)? as i16;
            (
                3,
                Operands::Branch(target(offset, i32::from(rel), code.len())?),
            )
        }
        op::GOTO_W | op::JSR_W => {
            let rel = i32_at(code, at + 1).ok_or_else(truncated)?;
            (5, Operands::BranchWide(target(offset, rel, code.len())?))
        }
        _ => (usize::from(fixed), Operands::None),
    };
    if at + len > code.len() {
        return Err(truncated());
    }
    Ok(Insn {
        offset,
        len: len as u32,
        opcode,
        operands,
    })
}

/// Decodes a whole method body. Fails (with the reason) on an invalid
/// opcode, a truncated instruction, or a branch out of the code; whether
/// branch targets fall on instruction boundaries is checked by the caller,
/// which maps them.
pub(crate) fn decode(code: &[u8]) -> Result<Vec<Insn>, String> {
    if code.is_empty() {
        return Err("empty code".into());
    }
    let mut insns = Vec::with_capacity(code.len() / 2);
    let mut offset = 0usize;
    while offset < code.len() {
        let insn = decode_one(code, offset as u32)?;
        offset += insn.len as usize;
        insns.push(insn);
    }
    Ok(insns)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bytes::put_i32;

    #[test]
    fn fixed_lengths_cover_every_opcode() {
        // Spot checks against the JVMS opcode table.
        for (opcode, len) in [
            (0, 1),
            (16, 2),
            (17, 3),
            (20, 3),
            (25, 2),
            (45, 1),
            (58, 2),
            (132, 3),
            (167, 3),
            (169, 2),
            (177, 1),
            (185, 5),
            (186, 5),
            (188, 2),
            (197, 4),
            (200, 5),
        ] {
            assert_eq!(FIXED_LENGTH[opcode], len, "opcode {opcode}");
        }
    }

    #[test]
    fn decodes_branches_with_absolute_targets() {
        // 0: iconst_0  1: ifeq +5 (-> 6)  4: nop  5: nop  6: goto -6 (-> 0)  9: goto_w -9 (-> 0)
        let code = [
            3, 153, 0, 5, 0, 0, 167, 0xff, 0xfa, 200, 0xff, 0xff, 0xff, 0xf7,
        ];
        let insns = decode(&code).unwrap();
        let summary: Vec<_> = insns
            .iter()
            .map(|i| (i.offset, i.len, i.operands.clone()))
            .collect();
        assert_eq!(
            summary,
            [
                (0, 1, Operands::None),
                (1, 3, Operands::Branch(6)),
                (4, 1, Operands::None),
                (5, 1, Operands::None),
                (6, 3, Operands::Branch(0)),
                (9, 5, Operands::BranchWide(0)),
            ]
        );
    }

    /// A tableswitch at `offset` (after `offset` nops) with keys 1..=2.
    fn tableswitch_at(offset: usize) -> Vec<u8> {
        let mut code = vec![0u8; offset];
        code.push(op::TABLESWITCH);
        code.extend(std::iter::repeat_n(
            0,
            switch_padding(offset as u32) as usize,
        ));
        for v in [-(offset as i32), 1, 2, -(offset as i32), -(offset as i32)] {
            put_i32(&mut code, v);
        }
        code
    }

    #[test]
    fn switch_padding_depends_on_the_offset() {
        for offset in 0..8 {
            let code = tableswitch_at(offset);
            let insns = decode(&code).unwrap();
            let switch = insns.last().unwrap();
            assert_eq!(switch.offset as usize, offset);
            let padding = (4 - (offset + 1) % 4) % 4;
            assert_eq!(switch.len as usize, 1 + padding + 20, "at {offset}");
            assert_eq!(
                switch.operands,
                Operands::TableSwitch {
                    default: 0,
                    low: 1,
                    targets: vec![0, 0]
                }
            );
        }
    }

    #[test]
    fn decodes_lookupswitch_and_wide() {
        // 0: wide iinc 300 -1 (6 bytes)  6: wide aload 300 (4)  10: lookupswitch (pad 1)
        let mut code = vec![
            196,
            132,
            1,
            44,
            0xff,
            0xff,
            196,
            25,
            1,
            44,
            op::LOOKUPSWITCH,
            0,
        ];
        for v in [-10i32, 1, 7, -6] {
            put_i32(&mut code, v);
        }
        let insns = decode(&code).unwrap();
        assert_eq!(insns.iter().map(|i| i.len).collect::<Vec<_>>(), [6, 4, 18]);
        assert_eq!(
            insns[2].operands,
            Operands::LookupSwitch {
                default: 0,
                pairs: vec![(7, 4)]
            }
        );
    }

    #[test]
    fn rejects_what_it_cannot_decode() {
        assert!(decode(&[]).is_err());
        assert!(decode(&[202]).unwrap_err().contains("invalid opcode"));
        assert!(decode(&[167, 0]).unwrap_err().contains("past the end"));
        assert!(
            decode(&[167, 0x7f, 0xff])
                .unwrap_err()
                .contains("leaves the code")
        );
        assert!(decode(&[196, 0]).unwrap_err().contains("wide"));
        let mut table = tableswitch_at(0);
        table[8] = 0x7f; // low far above high
        assert!(decode(&table).is_err());
    }

    #[test]
    fn inverts_conditionals_in_pairs() {
        assert_eq!(invert_conditional(153), 154);
        assert_eq!(invert_conditional(154), 153);
        assert_eq!(invert_conditional(165), 166);
        assert_eq!(invert_conditional(op::IFNULL), op::IFNONNULL);
        assert_eq!(invert_conditional(op::IFNONNULL), op::IFNULL);
        assert!(!is_conditional(167), "goto");
    }
}
