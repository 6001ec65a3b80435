//! The gate through which classes rewritten before VM init call the
//! allocation tracker and the calling-context accessor.
//!
//! A class the JVM loads before VM init (String, HashMap, the module
//! system's classes) runs its code long before the tracker can be defined:
//! the tracker's initialiser needs natives registered at VM init and a
//! module read edge from java.base. Rewritten early, such a class calls
//! this gate instead: a class of `java.lang` (so in `java.base`, which
//! needs no read edge to reach it) that the agent defines when the JVM
//! starts, before any Java code runs. Each of its methods does nothing
//! until the agent sets its `on` field at VM init, and from then on calls
//! the tracker's (or the accessor's) method of the same name and
//! descriptor. Allocations before VM init are thus not counted, as with
//! classes retransformed at VM init.
//!
//! ```text
//! object(IJ)V:  getstatic on; ifeq L; iload_0; lload_1; invokestatic AllocTracker.object(IJ)V; L: return
//! generated([B)[B: getstatic on; ifeq L; aload_0; invokestatic AllocTracker.generated; areturn; L: aload_0; areturn
//! takeWindow()J: getstatic on; ifeq L; invokestatic HprofRsContext.takeWindow; lreturn; L: lconst_0; lreturn
//! ```
//!
//! Class version 49, so the branches need no stack map.

use super::code::op;
use super::context_accessor::{CONTEXT_ACCESSOR_CLASS, SET_WINDOW, TAKE_WINDOW};
use super::made_class::{MadeClass, MadeMethod, made_field, made_pool};

/// The gate's internal name.
pub const EARLY_GATE_CLASS: &str = "java/lang/HprofRsGate";

/// The gate's switch: `static boolean on`, false until VM init.
pub const EARLY_GATE_SWITCH: (&str, &str) = ("on", "Z");

/// The tracker's methods the gate passes calls on to (name, descriptor).
const TRACKER_METHODS: &[(&str, &str)] = &[
    ("object", "(I)V"),
    ("object", "(IJ)V"),
    ("array", "(II)V"),
    ("array", "(IIJ)V"),
    ("arrays", "(Ljava/lang/Object;I)V"),
    ("arrays", "(Ljava/lang/Object;IJ)V"),
    ("made", "(Ljava/lang/Object;I)V"),
    ("made", "(Ljava/lang/Object;IJ)V"),
    ("generated", "([B)[B"),
];

const CLASS_VERSION: u16 = 49;
/// `ACC_STATIC | ACC_SYNTHETIC`: package-private.
const FIELD_ACCESS: u16 = 0x0008 | 0x1000;
const GETSTATIC: u8 = 178;
const IFEQ: u8 = 153;
const ILOAD: u8 = 21;
const LLOAD: u8 = 22;
const ALOAD: u8 = 25;
const ALOAD_0: u8 = 42;
const LCONST_0: u8 = 9;
const RETURN: u8 = 177;
const ARETURN: u8 = 176;
const LRETURN: u8 = 173;

/// The gate's class file, passing calls on to `tracker` (the allocation
/// tracker's internal name) and, with `contexts`, the context accessor
/// (without, its two methods do nothing: Thread has no field to keep a
/// context in): `switched`, only once its switch is on (as defined at the
/// JVM's start); or always (as redefined once it is open, so that the JIT
/// inlines a plain call).
pub fn early_gate_class_file(
    tracker: &str,
    switched: bool,
    contexts: bool,
) -> Result<Vec<u8>, String> {
    let (mut pool, this, object) = made_pool(EARLY_GATE_CLASS)?;
    let (switch, switch_field) =
        made_field(&mut pool, EARLY_GATE_CLASS, EARLY_GATE_SWITCH, FIELD_ACCESS)?;
    let code_name = pool.add_utf8(b"Code")?;
    let forwarded = TRACKER_METHODS
        .iter()
        .map(|&m| (tracker, m))
        .chain([TAKE_WINDOW, SET_WINDOW].map(|m| (CONTEXT_ACCESSOR_CLASS, m)));
    let mut methods = Vec::new();
    for (owner, (name, descriptor)) in forwarded {
        let (code, max_stack, max_locals) = if owner == CONTEXT_ACCESSOR_CLASS && !contexts {
            no_context_code(descriptor)
        } else {
            let target =
                pool.add_method_ref(owner.as_bytes(), name.as_bytes(), descriptor.as_bytes())?;
            forwarding_code(descriptor, switched.then_some(switch), target)?
        };
        methods.push(MadeMethod {
            name: pool.add_utf8(name.as_bytes())?,
            descriptor: pool.add_utf8(descriptor.as_bytes())?,
            code,
            max_stack,
            max_locals,
        });
    }
    Ok(MadeClass::helper(
        CLASS_VERSION,
        &pool,
        (this, object),
        &[switch_field],
        code_name,
        &methods,
        None,
    )
    .write())
}

/// A context method's code when there are no contexts: `takeWindow`
/// returns an empty window, `setWindow` does nothing.
fn no_context_code(descriptor: &str) -> (Vec<u8>, u16, u16) {
    if descriptor.ends_with(")J") {
        (vec![LCONST_0, LRETURN], 2, 0)
    } else {
        (vec![RETURN], 0, 3)
    }
}

/// A gate method's code for `descriptor` (its arguments passed on as they
/// came; with the switch off, `void` returns, a `byte[]` comes back as it
/// went in, a `long` is 0), with its max_stack and max_locals.
fn forwarding_code(
    descriptor: &str,
    switch: Option<u16>,
    target: u16,
) -> Result<(Vec<u8>, u16, u16), String> {
    let (arguments, result) = descriptor[1..]
        .split_once(')')
        .ok_or_else(|| format!("bad descriptor {descriptor}"))?;
    let mut loads = Vec::new();
    let mut slot: u8 = 0;
    let mut rest = arguments.as_bytes();
    while let Some(&first) = rest.first() {
        let (opcode, width, length) = match first {
            b'I' => (ILOAD, 1, 1),
            b'J' => (LLOAD, 2, 1),
            b'L' => {
                let end = rest
                    .iter()
                    .position(|&b| b == b';')
                    .ok_or("bad descriptor")?;
                (ALOAD, 1, end + 1)
            }
            b'[' => {
                let mut end = 0;
                while rest.get(end) == Some(&b'[') {
                    end += 1;
                }
                if rest.get(end) == Some(&b'L') {
                    end += rest[end..].iter().position(|&b| b == b';').ok_or("bad")?;
                }
                (ALOAD, 1, end + 1)
            }
            other => return Err(format!("argument type {} in {descriptor}", other as char)),
        };
        loads.extend_from_slice(&[opcode, slot]);
        slot += width;
        rest = &rest[length..];
    }
    let (forwarded_return, off): (&[u8], &[u8]) = match result {
        "V" => (&[RETURN], &[RETURN]),
        "J" => (&[LRETURN], &[LCONST_0, LRETURN]),
        "[B" => (&[ARETURN], &[ALOAD_0, ARETURN]),
        other => return Err(format!("return type {other} in {descriptor}")),
    };
    let mut code = Vec::new();
    if let Some(switch) = switch {
        code.push(GETSTATIC);
        code.extend_from_slice(&switch.to_be_bytes());
        // ifeq jumps over the loads, the call and its return.
        let jump = 3 + loads.len() + 3 + forwarded_return.len();
        code.push(IFEQ);
        code.extend_from_slice(&(jump as i16).to_be_bytes());
    }
    code.extend_from_slice(&loads);
    code.push(op::INVOKESTATIC);
    code.extend_from_slice(&target.to_be_bytes());
    code.extend_from_slice(forwarded_return);
    if switch.is_some() {
        code.extend_from_slice(off);
    }
    let result_width = u16::from(result == "J") + 1;
    let max_stack = u16::from(slot).max(result_width).max(1);
    Ok((code, max_stack, u16::from(slot)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::class_file::ClassFile;

    #[test]
    fn the_gate_has_its_switch_and_a_method_per_forwarded_one() {
        for switched in [true, false] {
            let bytes =
                early_gate_class_file("hprof_rs/AllocTracker", switched, true).expect("made");
            let class = ClassFile::parse(&bytes).expect("parses");
            assert_eq!(
                class.pool.class_name(class.this_class).unwrap(),
                EARLY_GATE_CLASS.as_bytes()
            );
            assert_eq!(class.methods.len(), TRACKER_METHODS.len() + 2);
        }
    }

    #[test]
    fn a_gate_method_skips_the_call_while_the_switch_is_off() {
        let (code, max_stack, max_locals) = forwarding_code("(IJ)V", Some(7), 9).unwrap();
        assert_eq!(
            code,
            [
                GETSTATIC,
                0,
                7,
                IFEQ,
                0,
                11,
                ILOAD,
                0,
                LLOAD,
                1,
                op::INVOKESTATIC,
                0,
                9,
                RETURN,
                RETURN
            ]
        );
        assert_eq!((max_stack, max_locals), (3, 3));
        let (code, ..) = forwarding_code("([B)[B", Some(7), 9).unwrap();
        assert_eq!(
            code,
            [
                GETSTATIC,
                0,
                7,
                IFEQ,
                0,
                9,
                ALOAD,
                0,
                op::INVOKESTATIC,
                0,
                9,
                ARETURN,
                ALOAD_0,
                ARETURN
            ]
        );
        let (code, max_stack, _) = forwarding_code("()J", Some(7), 9).unwrap();
        assert_eq!(
            code,
            [
                GETSTATIC,
                0,
                7,
                IFEQ,
                0,
                7,
                op::INVOKESTATIC,
                0,
                9,
                LRETURN,
                LCONST_0,
                LRETURN
            ]
        );
        assert_eq!(max_stack, 2);
        // Without contexts (Thread has no field), the context methods do nothing.
        assert_eq!(no_context_code("()J").0, [LCONST_0, LRETURN]);
        assert_eq!(no_context_code("(JI)V").0, [RETURN]);
        let bytes = early_gate_class_file("hprof_rs/AllocTracker", true, false).expect("made");
        assert!(ClassFile::parse(&bytes).is_ok());
        // Open for good: the call alone.
        let (code, ..) = forwarding_code("(IJ)V", None, 9).unwrap();
        assert_eq!(code, [ILOAD, 0, LLOAD, 1, op::INVOKESTATIC, 0, 9, RETURN]);
    }
}
