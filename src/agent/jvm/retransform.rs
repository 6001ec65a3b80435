//! Loaded classes retransformed (JVMTI RetransformClasses): the
//! ClassFileLoadHook, enabled before, sees each class file again and may
//! change it, or pass it unchanged, which gives the class back its own
//! byte code. Part of the JVM boundary with `jvm/mod.rs`.

use crate::agent::jvm;
use crate::bci;
use jvmti_bindings::prelude::*;

/// What a retransformation of loaded classes did.
pub struct Retransformed {
    /// Classes the JVM retransformed.
    pub classes: usize,
    /// The error of the last class the JVM refused, if any.
    pub refused: Option<jvmti::jvmtiError>,
}

/// Every loaded class that the JVM lets be modified, that is none of the
/// agent's own, and that `wanted` accepts (its internal name, and whether
/// the boot loader defined it) is retransformed.
pub fn loaded_classes(
    env: &Jvmti,
    jni: &JniEnv,
    wanted: impl Fn(&str, bool) -> bool,
) -> Retransformed {
    let classes = jvm::loaded_classes(env, Some(jni));
    let chosen: Vec<jni::jclass> = classes
        .iter()
        .map(|c| c.get())
        // SAFETY: each class is live (owned local references).
        .filter(|c| unsafe { env.is_modifiable_class(c.raw() as jni::jclass) }.unwrap_or(false))
        .filter(|c| {
            jvm::class_signature(env, *c).is_some_and(|s| {
                let internal = s.strip_prefix('L').and_then(|s| s.strip_suffix(';'));
                internal.is_some_and(|name| {
                    !bci::is_agent_class(name) && wanted(name, is_boot_class(env, jni, c.raw()))
                })
            })
        })
        .map(|c| c.raw() as jni::jclass)
        .collect();
    let mut done = Retransformed {
        classes: 0,
        refused: None,
    };
    // In batches: one class the JVM refuses fails its whole batch, which
    // is then retried a class at a time.
    for batch in chosen.chunks(64) {
        // SAFETY: every class of the batch is live (owned above).
        if unsafe { env.retransform_classes(batch) }.is_ok() {
            done.classes += batch.len();
            continue;
        }
        for class in batch {
            // SAFETY: as above.
            match unsafe { env.retransform_classes(std::slice::from_ref(class)) } {
                Ok(()) => done.classes += 1,
                Err(e) => done.refused = Some(e),
            }
        }
    }
    drop(classes);
    done
}

/// Whether the boot loader defined `class` (its loader is null).
fn is_boot_class(env: &Jvmti, jni: &JniEnv, class: jni::jobject) -> bool {
    // SAFETY: `class` is a live local reference to a class, on this thread.
    match unsafe { env.get_class_loader(class as jni::jclass) } {
        Ok(loader) if loader.is_null() => true,
        Ok(loader) => {
            // SAFETY: a local reference GetClassLoader just made on this
            // thread, used by nothing else.
            unsafe { jni.delete_local_ref(loader) };
            false
        }
        Err(_) => false,
    }
}
