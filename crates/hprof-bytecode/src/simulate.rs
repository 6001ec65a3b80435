//! Straight-line type simulation, for the one case that needs a stack map
//! frame the class does not have: a conditional branch widened into
//! `if<not cond> +8; goto_w target` makes the instruction after it a branch
//! target, and a branch target needs a frame.
//!
//! Between a frame and the next instruction that needs one, code only falls
//! through (every branch target and every instruction after an
//! unconditional jump has a frame), so the state at the branch follows from
//! the last frame before it by applying each instruction's effect in turn,
//! with no merging. The result must equal what the JVM's verifier infers;
//! anything the simulator is not sure of is an error, and the method is
//! then left untouched.

use super::bytes::u16_at;
use super::code::{Insn, op};
use super::constant_pool::ConstantPool;
use super::stackmap::FrameState;
use super::types::{VType, field_type, method_type};
use std::rc::Rc;

/// What the simulation needs besides the instructions.
pub(crate) struct Context<'c, 'a> {
    /// The class's constant pool.
    pub pool: &'c ConstantPool<'a>,
    /// The original byte code.
    pub code: &'c [u8],
    /// `this_class`, the type `UninitializedThis` becomes.
    pub this_class: u16,
    /// `max_locals`.
    pub max_locals: u16,
}

/// Locals slot by slot (the slot after a Long or Double holds `Top`) and
/// the stack entry by entry.
struct State {
    locals: Vec<VType>,
    stack: Vec<VType>,
}

fn slots(entries: &[VType]) -> Vec<VType> {
    let mut out = Vec::with_capacity(entries.len());
    for t in entries {
        out.push(t.clone());
        if t.is_wide() {
            out.push(VType::Top);
        }
    }
    out
}

fn entries(slots: &[VType]) -> Vec<VType> {
    let mut out = Vec::with_capacity(slots.len());
    let mut i = 0;
    while i < slots.len() {
        out.push(slots[i].clone());
        i += if slots[i].is_wide() { 2 } else { 1 };
    }
    while out.last() == Some(&VType::Top) {
        out.pop();
    }
    out
}

impl State {
    fn pop(&mut self) -> Result<VType, String> {
        self.stack
            .pop()
            .ok_or_else(|| "operand stack underflow".to_string())
    }

    fn pop_n(&mut self, n: usize) -> Result<(), String> {
        for _ in 0..n {
            self.pop()?;
        }
        Ok(())
    }

    /// Pops entries making up exactly `n` slots (1 or 2), bottom first.
    fn pop_slots(&mut self, n: usize) -> Result<Vec<VType>, String> {
        let mut taken = Vec::new();
        let mut size = 0;
        while size < n {
            let t = self.pop()?;
            size += if t.is_wide() { 2 } else { 1 };
            taken.insert(0, t);
        }
        if size != n {
            return Err("a dup or pop would split a long or double".into());
        }
        Ok(taken)
    }

    fn push_all(&mut self, types: &[VType]) {
        self.stack.extend(types.iter().cloned());
    }

    fn load(&self, index: usize) -> Result<VType, String> {
        self.locals
            .get(index)
            .cloned()
            .ok_or_else(|| format!("load from local {index}, which is unset"))
    }

    fn store(&mut self, index: usize, t: VType, max_locals: u16) -> Result<(), String> {
        let width = if t.is_wide() { 2 } else { 1 };
        if index + width > usize::from(max_locals) {
            return Err(format!("store to local {index} past max_locals"));
        }
        if self.locals.len() < index + width {
            self.locals.resize(index + width, VType::Top);
        }
        // Overwriting the second half of a long or double kills the first.
        if index > 0 && self.locals[index - 1].is_wide() {
            self.locals[index - 1] = VType::Top;
        }
        self.locals[index] = t;
        if width == 2 {
            self.locals[index + 1] = VType::Top;
        }
        Ok(())
    }
}

/// The type `ldc`/`ldc_w`/`ldc2_w` pushes for constant `index`.
fn constant_type(pool: &ConstantPool<'_>, index: u16) -> Result<VType, String> {
    let named = |s: &str| VType::Named(Rc::from(s.as_bytes()));
    Ok(match pool.tag(index) {
        Some(3) => VType::Integer,
        Some(4) => VType::Float,
        Some(5) => VType::Long,
        Some(6) => VType::Double,
        Some(7) => named("java/lang/Class"),
        Some(8) => named("java/lang/String"),
        Some(15) => named("java/lang/invoke/MethodHandle"),
        Some(16) => named("java/lang/invoke/MethodType"),
        Some(17) => field_type(pool.dynamic_descriptor(index)?)?,
        other => return Err(format!("ldc of constant #{index} with tag {other:?}")),
    })
}

/// The element type of an array type, for `aaload`.
fn element_type(pool: &ConstantPool<'_>, array: &VType) -> Result<VType, String> {
    if *array == VType::Null {
        return Ok(VType::Null);
    }
    let name = array.class_name(pool)?;
    match name.strip_prefix(b"[") {
        Some(element @ [b'L' | b'[', ..]) => field_type(element),
        _ => Err("aaload from something not an array of references".into()),
    }
}

/// The array type `newarray atype` makes.
fn primitive_array(atype: u8) -> Result<VType, String> {
    let descriptor: &[u8] = match atype {
        4 => b"[Z",
        5 => b"[C",
        6 => b"[F",
        7 => b"[D",
        8 => b"[B",
        9 => b"[S",
        10 => b"[I",
        11 => b"[J",
        _ => return Err(format!("newarray of bad type {atype}")),
    };
    Ok(VType::Named(Rc::from(descriptor)))
}

/// The types of a local load or store family by its offset from the first
/// opcode: int, long, float, double, reference.
const KINDS: [VType; 4] = [VType::Integer, VType::Long, VType::Float, VType::Double];

/// Applies `insns` in order to `from` and returns the state after the last
/// one (a conditional branch's operands popped, i.e. its fall-through).
pub(crate) fn run(
    ctx: &Context<'_, '_>,
    from: &FrameState,
    insns: &[Insn],
) -> Result<FrameState, String> {
    let mut s = State {
        locals: slots(&from.locals),
        stack: from.stack.clone(),
    };
    for insn in insns {
        step(ctx, &mut s, insn)?;
    }
    Ok(FrameState {
        locals: entries(&s.locals),
        stack: s.stack,
    })
}

fn step(ctx: &Context<'_, '_>, s: &mut State, insn: &Insn) -> Result<(), String> {
    let at = insn.offset as usize;
    let code = ctx.code;
    let u8_operand = || code.get(at + 1).copied().ok_or("truncated operand");
    let u16_operand = || u16_at(code, at + 1).ok_or("truncated operand");
    let pool = ctx.pool;
    let o = insn.opcode;
    match o {
        0 => {}
        1 => s.stack.push(VType::Null),
        2..=8 | 16 | 17 => s.stack.push(VType::Integer),
        9 | 10 => s.stack.push(VType::Long),
        11..=13 => s.stack.push(VType::Float),
        14 | 15 => s.stack.push(VType::Double),
        op::LDC => s.stack.push(constant_type(pool, u16::from(u8_operand()?))?),
        19 | 20 => s.stack.push(constant_type(pool, u16_operand()?)?),
        21..=24 => s.stack.push(KINDS[usize::from(o - 21)].clone()),
        25 => s.stack.push(s.load(usize::from(u8_operand()?))?),
        26..=41 => s.stack.push(KINDS[usize::from((o - 26) / 4)].clone()),
        42..=45 => s.stack.push(s.load(usize::from(o - 42))?),
        46..=53 => {
            s.pop()?; // the index
            let array = s.pop()?;
            s.stack.push(match o {
                46 | 51..=53 => VType::Integer,
                47 => VType::Long,
                48 => VType::Float,
                49 => VType::Double,
                _ => element_type(pool, &array)?,
            });
        }
        54..=58 => {
            let t = s.pop()?;
            s.store(usize::from(u8_operand()?), t, ctx.max_locals)?;
        }
        59..=78 => {
            let t = s.pop()?;
            s.store(usize::from((o - 59) % 4), t, ctx.max_locals)?;
        }
        79..=86 => s.pop_n(3)?,
        87 => {
            s.pop_slots(1)?;
        }
        88 => {
            s.pop_slots(2)?;
        }
        89..=94 => {
            // dup, dup_x1, dup_x2, dup2, dup2_x1, dup2_x2: copy the top
            // `copied` slots under the `skipped` slots beneath them.
            let (copied, skipped) =
                [(1, 0), (1, 1), (1, 2), (2, 0), (2, 1), (2, 2)][usize::from(o - 89)];
            let top = s.pop_slots(copied)?;
            let under = s.pop_slots(skipped)?;
            s.push_all(&top);
            s.push_all(&under);
            s.push_all(&top);
        }
        95 => {
            let a = s.pop_slots(1)?;
            let b = s.pop_slots(1)?;
            s.push_all(&a);
            s.push_all(&b);
        }
        96..=115 => {
            s.pop_n(2)?;
            s.stack.push(KINDS[usize::from((o - 96) % 4)].clone());
        }
        116..=119 => {
            s.pop()?;
            s.stack.push(KINDS[usize::from(o - 116)].clone());
        }
        120..=131 => {
            s.pop_n(2)?;
            s.stack.push(if o % 2 == 0 {
                VType::Integer
            } else {
                VType::Long
            });
        }
        132 => {}
        133..=147 => {
            s.pop()?;
            s.stack.push(match o {
                133 | 140 | 143 => VType::Long,
                134 | 137 | 144 => VType::Float,
                135 | 138 | 141 => VType::Double,
                _ => VType::Integer,
            });
        }
        148..=152 => {
            s.pop_n(2)?;
            s.stack.push(VType::Integer);
        }
        153..=158 | op::IFNULL | op::IFNONNULL | 194 | 195 | 179 => s.pop_n(1)?,
        159..=166 | 181 => s.pop_n(2)?,
        178 | 180 => {
            if o == 180 {
                s.pop()?;
            }
            let (_, _, descriptor) = pool.member_ref(u16_operand()?)?;
            s.stack.push(field_type(descriptor)?);
        }
        182..=186 => invoke(ctx, s, insn, u16_operand()?)?,
        187 => s.stack.push(VType::Uninitialized(insn.offset)),
        188 => {
            s.pop()?;
            s.stack.push(primitive_array(u8_operand()?)?);
        }
        189 => {
            s.pop()?;
            let element = pool.class_name(u16_operand()?)?;
            let mut array = b"[".to_vec();
            if element.first() == Some(&b'[') {
                array.extend_from_slice(element);
            } else {
                array.push(b'L');
                array.extend_from_slice(element);
                array.push(b';');
            }
            s.stack.push(VType::Named(Rc::from(array)));
        }
        190 | 193 => {
            s.pop()?;
            s.stack.push(VType::Integer);
        }
        192 => {
            s.pop()?;
            s.stack.push(VType::Object(u16_operand()?));
        }
        op::WIDE => {
            let modified = u8_operand()?;
            let index = usize::from(u16_at(code, at + 2).ok_or("truncated operand")?);
            match modified {
                21..=24 => s.stack.push(KINDS[usize::from(modified - 21)].clone()),
                25 => s.stack.push(s.load(index)?),
                54..=58 => {
                    let t = s.pop()?;
                    s.store(index, t, ctx.max_locals)?;
                }
                132 => {}
                _ => return Err(format!("wide {modified} in a simulated block")),
            }
        }
        197 => {
            let dims = code.get(at + 3).copied().ok_or("truncated operand")?;
            s.pop_n(usize::from(dims))?;
            s.stack.push(VType::Object(u16_operand()?));
        }
        _ => {
            return Err(format!(
                "opcode {o} at {} ends straight-line code",
                insn.offset
            ));
        }
    }
    Ok(())
}

/// `invoke*`: pops the arguments (and the receiver), pushes the result, and
/// for a constructor call marks the receiver initialised everywhere.
fn invoke(ctx: &Context<'_, '_>, s: &mut State, insn: &Insn, index: u16) -> Result<(), String> {
    let (name, descriptor) = if insn.opcode == 186 {
        (&b""[..], ctx.pool.dynamic_descriptor(index)?)
    } else {
        let (_, name, descriptor) = ctx.pool.member_ref(index)?;
        (name, descriptor)
    };
    let (args, ret) = method_type(descriptor)?;
    s.pop_n(args.len())?;
    if insn.opcode != 184 && insn.opcode != 186 {
        let receiver = s.pop()?;
        if insn.opcode == 183 && name == b"<init>" {
            let initialized = match receiver {
                VType::UninitializedThis => VType::Object(ctx.this_class),
                VType::Uninitialized(new_at) => {
                    let class = u16_at(ctx.code, new_at as usize + 1).ok_or("truncated new")?;
                    if ctx.code.get(new_at as usize) != Some(&187) {
                        return Err(format!("Uninitialized({new_at}) is not a new"));
                    }
                    VType::Object(class)
                }
                _ => return Err("<init> called on an initialised object".into()),
            };
            for t in s.locals.iter_mut().chain(s.stack.iter_mut()) {
                if *t == receiver {
                    *t = initialized.clone();
                }
            }
        }
    }
    if let Some(ret) = ret {
        s.stack.push(ret);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bytes::Reader;
    use crate::code::decode;

    /// #1 Utf8 "C", #2 Class C, #3 Utf8 "<init>", #4 Utf8 "(J)V",
    /// #5 NameAndType, #6 Methodref C.<init>(J)V, #7 Utf8 "[Ljava/lang/String;",
    /// #8 Class [Ljava/lang/String;, #9 String -> #1
    fn pool() -> ConstantPool<'static> {
        static BYTES: &[u8] = &[
            0, 10, //
            1, 0, 1, b'C', //
            7, 0, 1, //
            1, 0, 6, b'<', b'i', b'n', b'i', b't', b'>', //
            1, 0, 4, b'(', b'J', b')', b'V', //
            12, 0, 3, 0, 4, //
            10, 0, 2, 0, 5, //
            1, 0, 19, b'[', b'L', b'j', b'a', b'v', b'a', b'/', b'l', b'a', b'n', b'g', b'/', b'S',
            b't', b'r', b'i', b'n', b'g', b';', //
            7, 0, 7, //
            8, 0, 1,
        ];
        ConstantPool::parse(&mut Reader::new(BYTES)).unwrap()
    }

    fn simulate(code: &[u8], from: FrameState) -> Result<FrameState, String> {
        let pool = pool();
        let insns = decode(code).unwrap();
        let ctx = Context {
            pool: &pool,
            code,
            this_class: 2,
            max_locals: 6,
        };
        run(&ctx, &from, &insns)
    }

    #[test]
    fn tracks_constructor_calls_stores_and_arrays() {
        let code = [
            187, 0, 2,  // 0: new C
            89, // 3: dup
            10, // 4: lconst_1
            183, 0, 6, // 5: invokespecial C.<init>(J)V
            58, 4,  // 8: astore 4
            9,  // 10: lconst_0
            64, // 11: lstore_1 (slots 1-2)
            42, // 12: aload_0 (a String[])
            3,  // 13: iconst_0
            50, // 14: aaload
            18, 9, // 15: ldc "C"
            198, 0, 3, // 17: ifnull +3: falls through with the String popped
            0, // 20: nop, the branch target
        ];
        let from = FrameState {
            locals: vec![VType::Object(8)],
            stack: vec![],
        };
        let got = simulate(&code, from).unwrap();
        assert_eq!(
            got.locals,
            [VType::Object(8), VType::Long, VType::Top, VType::Object(2)]
        );
        assert_eq!(
            got.stack,
            [VType::Named(Rc::from(&b"java/lang/String"[..]))]
        );
    }

    #[test]
    fn initialises_this_and_kills_split_longs() {
        let code = [
            42, // aload_0 (uninitialised this)
            14, // dconst_0
            183, 0, 6,  // invokespecial <init>(J)V: a double passes for the long
            3,  // iconst_0
            62, // istore_3: second half of the long in 2-3
        ];
        let from = FrameState {
            locals: vec![VType::UninitializedThis, VType::Integer, VType::Long],
            stack: vec![],
        };
        let got = simulate(&code, from).unwrap();
        assert_eq!(
            got.locals,
            [VType::Object(2), VType::Integer, VType::Top, VType::Integer]
        );
        assert!(got.stack.is_empty());
    }

    #[test]
    fn dup_forms_respect_categories() {
        // lconst_0, iconst_1, dup_x2 → int long int ; pop ; dup2 → int long long
        let got = simulate(
            &[9, 4, 91, 87, 92],
            FrameState {
                locals: vec![],
                stack: vec![],
            },
        )
        .unwrap();
        assert_eq!(got.stack, [VType::Integer, VType::Long, VType::Long]);
        // iconst_0 lconst_0 swap: would split the long
        assert!(
            simulate(
                &[3, 9, 95],
                FrameState {
                    locals: vec![],
                    stack: vec![]
                }
            )
            .is_err()
        );
    }

    #[test]
    fn refuses_control_flow_and_unknown_states() {
        let empty = || FrameState {
            locals: vec![],
            stack: vec![],
        };
        assert!(simulate(&[177], empty()).is_err(), "return ends the block");
        assert!(simulate(&[43], empty()).is_err(), "aload_1 of nothing");
        assert!(simulate(&[87], empty()).is_err(), "pop of nothing");
        assert!(
            simulate(&[3, 54, 9], empty()).is_err(),
            "istore past max_locals"
        );
    }
}
