//! Whether a loaded class generates classes: its constant pool names a call
//! of [`CALL_RULES`] that returns a class file made at run time (the JDK's
//! lambdas and method handle forms, its string concatenations...). What it
//! makes is defined as a hidden class, which no ClassFileLoadHook sees and
//! no retransformation reaches, so its allocations are counted only when
//! the generator was rewritten before it ran. The agent asks this of the
//! classes loaded before VM init, whose class files it never saw: read
//! through JVMTI's GetConstantPool, which hands the pool without its count.

use super::constant_pool::{ConstantPool, Entry};
use super::count::{CALL_RULES, CallAction};

/// Whether `constant_pool` (its entries, without the count before them)
/// names a method that [`CALL_RULES`] marks [`CallAction::Generated`];
/// false for a pool that does not parse.
pub fn generates_classes(constant_pool: &[u8]) -> bool {
    let Ok(pool) = ConstantPool::parse_uncounted(constant_pool) else {
        return false;
    };
    (1..pool.count()).any(|index| {
        let Some(Entry::MemberRef(_, class, _)) = pool.entry(index) else {
            return false;
        };
        let (Ok(owner), Ok((_, name, descriptor))) =
            (pool.class_name(*class), pool.member_ref(index))
        else {
            return false;
        };
        CALL_RULES.iter().any(|rule| {
            rule.action == CallAction::Generated && rule.matches(owner, name, descriptor)
        })
    })
}

/// Whether `class` (an internal name) is the class a generating call of
/// [`CALL_RULES`] names (`jdk/internal/org/objectweb/asm/ClassWriter`,
/// `java/lang/classfile/ClassFile`...): once it is loaded, a generator may
/// have run.
pub fn is_generator_owner(class: &str) -> bool {
    CALL_RULES
        .iter()
        .any(|rule| rule.action == CallAction::Generated && rule.owner == class)
}

#[cfg(test)]
mod tests {
    use super::{generates_classes, is_generator_owner};

    #[test]
    fn the_classes_generating_calls_name_are_owners() {
        assert!(is_generator_owner(
            "jdk/internal/org/objectweb/asm/ClassWriter"
        ));
        assert!(is_generator_owner("java/lang/classfile/ClassFile"));
        assert!(!is_generator_owner("jdk/internal/misc/Unsafe"));
        assert!(!is_generator_owner(
            "java/lang/invoke/InnerClassLambdaMetafactory"
        ));
    }

    /// A pool's entries (count left out): Utf8 `owner`, Class #1, Utf8
    /// `name`, Utf8 `descriptor`, NameAndType #3 #4, Methodref #2 #5.
    fn pool_calling(owner: &str, name: &str, descriptor: &str) -> Vec<u8> {
        let mut b = Vec::new();
        for (i, text) in [owner, "", name, descriptor].iter().enumerate() {
            if i == 1 {
                b.extend_from_slice(&[7, 0, 1]);
                continue;
            }
            b.push(1);
            b.extend_from_slice(&(text.len() as u16).to_be_bytes());
            b.extend_from_slice(text.as_bytes());
        }
        b.extend_from_slice(&[12, 0, 3, 0, 4, 10, 0, 2, 0, 5]);
        b
    }

    #[test]
    fn a_pool_naming_a_generator_call_generates_classes() {
        let asm = pool_calling(
            "jdk/internal/org/objectweb/asm/ClassWriter",
            "toByteArray",
            "()[B",
        );
        assert!(generates_classes(&asm));
        let api = pool_calling(
            "java/lang/classfile/ClassFile",
            "build",
            "(Ljava/lang/constant/ClassDesc;Ljava/util/function/Consumer;)[B",
        );
        assert!(generates_classes(&api));
    }

    #[test]
    fn other_calls_and_broken_pools_do_not() {
        let other = pool_calling("java/lang/String", "getBytes", "()[B");
        assert!(!generates_classes(&other));
        let made = pool_calling(
            "jdk/internal/misc/Unsafe",
            "allocateInstance",
            "(Ljava/lang/Class;)Ljava/lang/Object;",
        );
        assert!(!generates_classes(&made), "a VM maker is no generator");
        let asm = pool_calling(
            "jdk/internal/org/objectweb/asm/ClassWriter",
            "toByteArray",
            "()[B",
        );
        assert!(!generates_classes(&asm[..asm.len() - 1]));
        assert!(!generates_classes(&[]));
    }
}
