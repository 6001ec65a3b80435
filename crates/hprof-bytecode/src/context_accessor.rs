//! The class through which rewritten code reads and writes the calling
//! context that `java.lang.Thread` carries (see `call_context.rs`).
//!
//! The field is package-private and synthetic, so that `Thread`'s public
//! members stay what the program sees without the agent
//! (`Thread.class.getFields()`) and no class can reach it by name. Rewritten
//! code in every package reaches it through this class, defined by the agent
//! in the boot loader in package `java.lang` (so in `java.base`, whose
//! packages every module reads): two static methods the JIT inlines into a
//! plain field access. Both are marked `@ForceInline`
//! (`jdk.internal.vm.annotation`, which HotSpot honours in boot classes):
//! small as they are, C2 stops inlining into a compilation that holds 8,000
//! bytes of byte code (`DesiredMethodLimit`), which the program's large
//! rewritten methods reach, and then called `setWindow` out of line before
//! each call.
//!
//! ```text
//! takeWindow()J:      invokestatic Thread.currentThread; dup; getfield context; lstore_0; lconst_0; putfield context; lload_0; lreturn
//! setWindow(JI)V:     invokestatic Thread.currentThread; lload_0; bipush 21; lshl; iload_2; i2l; lor; putfield context; return
//! ```

use super::code::array_type::T_LONG;
use super::code::op::{self, *};
use super::made_class::{MadeClass, MadeMethod, made_field, made_pool};

/// The field added to `java.lang.Thread`: name and descriptor.
pub const CONTEXT_FIELD: (&str, &str) = ("hprof_rs$context", "J");

/// The accessor class's internal name.
pub const CONTEXT_ACCESSOR_CLASS: &str = "java/lang/HprofRsContext";

/// `takeWindow()J`: the thread's window, the field cleared.
pub const TAKE_WINDOW: (&str, &str) = ("takeWindow", "()J");

/// `setWindow(JI)V`: the thread's window set to the caller's window
/// shifted by a call site, with the call site's number added.
pub const SET_WINDOW: (&str, &str) = ("setWindow", "(JI)V");

/// Whether `internal_name` is one of the agent's own classes (the
/// trackers in `hprof_rs/`, this accessor), which nothing rewrites.
pub fn is_agent_class(internal_name: &str) -> bool {
    internal_name.starts_with("hprof_rs/") || internal_name == CONTEXT_ACCESSOR_CLASS
}

/// How far `setWindow` shifts the caller's window: the bits of one call
/// site (`call_context::CALL_SITE_BITS`).
pub(crate) const SITE_SHIFT: u8 = 21;

/// `ACC_SYNTHETIC` alone: package-private, marked as made by a tool.
pub(crate) const CONTEXT_FIELD_ACCESS: u16 = 0x1000;

const THREAD_CLASS: &[u8] = b"java/lang/Thread";
/// Class file version 52: no StackMapTable is needed (no branches).
const CLASS_VERSION: u16 = 52;
/// The annotation both methods carry.
const FORCE_INLINE: &[u8] = b"Ljdk/internal/vm/annotation/ForceInline;";

/// The accessor's class file.
pub fn context_accessor_class_file() -> Result<Vec<u8>, String> {
    let (mut pool, this, object) = made_pool(CONTEXT_ACCESSOR_CLASS)?;
    let mut add = || -> Result<_, String> {
        let current_thread =
            pool.add_method_ref(THREAD_CLASS, b"currentThread", b"()Ljava/lang/Thread;")?;
        let (name, descriptor) = CONTEXT_FIELD;
        let field = pool.add_field_ref(THREAD_CLASS, name.as_bytes(), descriptor.as_bytes())?;
        let code_name = pool.add_utf8(b"Code")?;
        let mut methods = Vec::new();
        for ((name, descriptor), code) in [
            (
                TAKE_WINDOW,
                vec![
                    op::INVOKESTATIC,
                    0,
                    0,
                    DUP,
                    GETFIELD,
                    0,
                    0,
                    LSTORE_0,
                    LCONST_0,
                    PUTFIELD,
                    0,
                    0,
                    LLOAD_0,
                    LRETURN,
                ],
            ),
            (
                SET_WINDOW,
                vec![
                    op::INVOKESTATIC,
                    0,
                    0,
                    LLOAD_0,
                    BIPUSH,
                    SITE_SHIFT,
                    LSHL,
                    ILOAD_2,
                    I2L,
                    LOR,
                    PUTFIELD,
                    0,
                    0,
                    RETURN,
                ],
            ),
        ] {
            let mut code = code;
            // The constant-pool operands, in place.
            let mut at = 0;
            while at < code.len() {
                let operand = match code[at] {
                    op::INVOKESTATIC => Some(current_thread),
                    GETFIELD | PUTFIELD => Some(field),
                    _ => None,
                };
                if let Some(index) = operand {
                    code[at + 1..at + 3].copy_from_slice(&index.to_be_bytes());
                    at += 3;
                } else if code[at] == BIPUSH {
                    at += 2;
                } else {
                    at += 1;
                }
            }
            methods.push((
                pool.add_utf8(name.as_bytes())?,
                pool.add_utf8(descriptor.as_bytes())?,
                code,
            ));
        }
        Ok((code_name, methods))
    };
    let (code_name, methods) = add()?;
    // Both methods always inlined: a rewritten method of the program's
    // that reached C2's inlining budget (8,000 bytes of byte code per
    // compilation) called setWindow out of line at each call site.
    let annotation = (
        pool.add_utf8(b"RuntimeVisibleAnnotations")?,
        pool.add_utf8(FORCE_INLINE)?,
    );
    // A Thread, a long and then a second long; locals a long and an int.
    let methods: Vec<MadeMethod> = methods
        .into_iter()
        .map(|(name, descriptor, code)| MadeMethod {
            name,
            descriptor,
            code,
            max_stack: 5,
            max_locals: 3,
        })
        .collect();
    Ok(MadeClass::helper(
        CLASS_VERSION,
        &pool,
        (this, object),
        &[],
        code_name,
        &methods,
        Some(annotation),
    )
    .write())
}

/// The accessor's static field in its slot form: a `long[]` of
/// [`WINDOW_SLOTS`] words, each `(identity hash of a thread << 32) | call
/// site`, written by `setWindow` for the calling thread.
pub const WINDOW_SLOTS_FIELD: (&str, &str) = ("slots", "[J");

/// Slots of the slot form (a power of two): a thread's is its identity hash
/// modulo this; two threads in one slot each find the other's hash there
/// and are placed by a walk instead.
pub const WINDOW_SLOTS: u16 = 4096;

/// `ACC_PRIVATE | ACC_STATIC | ACC_FINAL | ACC_SYNTHETIC`.
const SLOTS_FIELD_ACCESS: u16 = 0x0002 | 0x0008 | 0x0010 | 0x1000;

/// The accessor in its slot form, for a `java.lang.Thread` without the
/// context field (the classes loaded before VM init left as they loaded):
/// only `setWindow(JI)V`, which keeps the call site alone (the maker calls'
/// scope, `ContextScope::VmMakerCalls`, never has a caller's window) in the
/// calling thread's slot of [`WINDOW_SLOTS_FIELD`]:
///
/// ```text
/// <clinit>:       sipush 4096; newarray long; putstatic slots; return
/// setWindow(JI)V: invokestatic Thread.currentThread; invokestatic System.identityHashCode; istore_3
///                 getstatic slots; iload_3; sipush 4095; iand
///                 iload_3; i2l; bipush 32; lshl; iload_2; i2l; lor; lastore; return
/// ```
pub fn slot_accessor_class_file() -> Result<Vec<u8>, String> {
    let (mut pool, this, object) = made_pool(CONTEXT_ACCESSOR_CLASS)?;
    let current_thread =
        pool.add_method_ref(THREAD_CLASS, b"currentThread", b"()Ljava/lang/Thread;")?;
    let identity_hash = pool.add_method_ref(
        b"java/lang/System",
        b"identityHashCode",
        b"(Ljava/lang/Object;)I",
    )?;
    let (slots, field) = made_field(
        &mut pool,
        CONTEXT_ACCESSOR_CLASS,
        WINDOW_SLOTS_FIELD,
        SLOTS_FIELD_ACCESS,
    )?;
    let code_name = pool.add_utf8(b"Code")?;
    let [size_high, size_low] = WINDOW_SLOTS.to_be_bytes();
    let [mask_high, mask_low] = (WINDOW_SLOTS - 1).to_be_bytes();
    let [slots_high, slots_low] = slots.to_be_bytes();
    let [thread_high, thread_low] = current_thread.to_be_bytes();
    let [hash_high, hash_low] = identity_hash.to_be_bytes();
    let clinit = MadeMethod {
        name: pool.add_utf8(b"<clinit>")?,
        descriptor: pool.add_utf8(b"()V")?,
        code: vec![
            SIPUSH, size_high, size_low, NEWARRAY, T_LONG, PUTSTATIC, slots_high, slots_low, RETURN,
        ],
        max_stack: 1,
        max_locals: 0,
    };
    let (name, descriptor) = SET_WINDOW;
    let set_window = MadeMethod {
        name: pool.add_utf8(name.as_bytes())?,
        descriptor: pool.add_utf8(descriptor.as_bytes())?,
        code: vec![
            op::INVOKESTATIC,
            thread_high,
            thread_low,
            op::INVOKESTATIC,
            hash_high,
            hash_low,
            ISTORE_3,
            GETSTATIC,
            slots_high,
            slots_low,
            ILOAD_3,
            SIPUSH,
            mask_high,
            mask_low,
            IAND,
            ILOAD_3,
            I2L,
            BIPUSH,
            32,
            LSHL,
            ILOAD_2,
            I2L,
            LOR,
            LASTORE,
            RETURN,
        ],
        // The array, its index, then two longs; locals a long, an int and the hash.
        max_stack: 6,
        max_locals: 4,
    };
    let annotation = (
        pool.add_utf8(b"RuntimeVisibleAnnotations")?,
        pool.add_utf8(FORCE_INLINE)?,
    );
    Ok(MadeClass::helper(
        CLASS_VERSION,
        &pool,
        (this, object),
        &[field],
        code_name,
        &[clinit, set_window],
        Some(annotation),
    )
    .write())
}

/// The call site a slot of the slot form holds for the thread whose
/// identity hash is `hash` (None: another thread's, or no call's).
pub fn slot_call_site(slot: u64, hash: i32) -> Option<u32> {
    let site = (slot & 0xFFFF_FFFF) as u32;
    ((slot >> 32) as u32 == hash as u32 && site != 0).then_some(site)
}

/// The index of the slot of the thread whose identity hash is `hash`.
pub fn slot_index(hash: i32) -> usize {
    (hash as u32 as usize) & (usize::from(WINDOW_SLOTS) - 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::class_file::ClassFile;

    #[test]
    fn the_accessor_is_a_class_of_its_name_with_two_static_methods() {
        let bytes = context_accessor_class_file().expect("made");
        let class = ClassFile::parse(&bytes).expect("parses");
        assert_eq!(
            class.pool.class_name(class.this_class).unwrap(),
            CONTEXT_ACCESSOR_CLASS.as_bytes()
        );
        assert_eq!(method_names(&class), [&b"takeWindow"[..], b"setWindow"]);
        for method in &class.methods {
            let annotations: Vec<_> = method
                .attributes
                .iter()
                .filter(|a| class.pool.utf8(a.name_index).unwrap() == b"RuntimeVisibleAnnotations")
                .collect();
            let [annotations] = annotations.as_slice() else {
                panic!("one RuntimeVisibleAnnotations attribute per method");
            };
            // One annotation, no elements, of type ForceInline.
            let info = annotations.info;
            assert_eq!(
                (info.len(), &info[..2], &info[4..]),
                (6, &[0, 1][..], &[0, 0][..])
            );
            let type_index = u16::from_be_bytes([info[2], info[3]]);
            assert_eq!(class.pool.utf8(type_index).unwrap(), FORCE_INLINE);
        }
    }

    fn method_names<'c>(class: &'c ClassFile<'_>) -> Vec<&'c [u8]> {
        let names = class.methods.iter().map(|m| class.pool.utf8(m.name_index));
        names.map(|name| name.expect("a name")).collect()
    }

    #[test]
    fn the_slot_accessor_has_a_slot_array_and_set_window_only() {
        let bytes = slot_accessor_class_file().expect("made");
        let class = ClassFile::parse(&bytes).expect("parses");
        assert_eq!(method_names(&class), [&b"<clinit>"[..], b"setWindow"]);
        assert_eq!(slot_index(4097), 1);
        assert_eq!(slot_index(-1), 4095);
        let slot = (u64::from(0xDEAD_BEEFu32) << 32) | 77;
        assert_eq!(slot_call_site(slot, 0xDEAD_BEEFu32 as i32), Some(77));
        assert_eq!(slot_call_site(slot, 5), None, "another thread's");
        assert_eq!(slot_call_site(u64::from(5u32) << 32, 5), None, "cleared");
    }
}
