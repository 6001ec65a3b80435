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

use super::bytes::Reader;
use super::code::op;
use super::constant_pool::ConstantPool;
use super::made_class::{MadeClass, MadeMethod};

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
/// `ACC_PUBLIC | ACC_FINAL | ACC_SUPER | ACC_SYNTHETIC`.
const CLASS_ACCESS: u16 = 0x0001 | 0x0010 | 0x0020 | 0x1000;
/// `ACC_PUBLIC | ACC_STATIC`.
const METHOD_ACCESS: u16 = 0x0001 | 0x0008;
const DUP: u8 = 89;
const GETFIELD: u8 = 180;
const PUTFIELD: u8 = 181;
const LSTORE_0: u8 = 63;
const LLOAD_0: u8 = 30;
const LCONST_0: u8 = 9;
const LRETURN: u8 = 173;
const BIPUSH: u8 = 16;
const LSHL: u8 = 121;
const ILOAD_2: u8 = 28;
const I2L: u8 = 133;
const LOR: u8 = 129;
const RETURN: u8 = 177;

/// The accessor's class file.
pub fn context_accessor_class_file() -> Result<Vec<u8>, String> {
    let empty = [0u8, 1];
    let mut pool = ConstantPool::parse(&mut Reader::new(&empty)).map_err(|e| e.to_string())?;
    let mut add = || -> Result<_, String> {
        let this = pool.add_class(CONTEXT_ACCESSOR_CLASS.as_bytes())?;
        let object = pool.add_class(b"java/lang/Object")?;
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
        Ok((this, object, code_name, methods))
    };
    let (this, object, code_name, methods) = add()?;
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
    Ok(MadeClass {
        version: CLASS_VERSION,
        pool: &pool,
        access: CLASS_ACCESS,
        this,
        super_class: object,
        fields: &[],
        method_access: METHOD_ACCESS,
        code_name,
        methods: &methods,
        method_annotation: Some(annotation),
    }
    .write())
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
        let names: Vec<_> = class
            .methods
            .iter()
            .map(|m| class.pool.utf8(m.name_index).unwrap().to_vec())
            .collect();
        assert_eq!(names, [b"takeWindow".to_vec(), b"setWindow".to_vec()]);
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
}
