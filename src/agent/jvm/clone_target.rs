//! Which method a `clone()` call runs for an object: the VM's own copy
//! (`Object.clone`, which the JIT makes without a VMObjectAlloc event) or a
//! class's override (whose `super.clone()` is a call of its own).

use super::{Jvmti, LocalClass, OwnedLocal, class_signature, kind, method_ids, method_name};
use jvmti_bindings::prelude::*;

/// The method `clone()Ljava/lang/Object;`.
const CLONE: (&str, &str) = ("clone", "()Ljava/lang/Object;");

/// Whether a call of `clone()` naming `owner` (internal name, or an
/// array's descriptor) runs `Object.clone` for an object of `class`: no
/// class declares `clone()` from where the lookup starts up to Object. An
/// `invokespecial` (`special`, a `super.clone()`) looks up from `owner`, any
/// other call from the object's class. An array's clone is always the VM's.
/// When the chain cannot be read the answer is yes (the call's site counts
/// the object).
pub fn runs_object_clone(
    jni: &JniEnv,
    env: &Jvmti,
    class: LocalClass<'_>,
    owner: &str,
    special: bool,
) -> bool {
    if owner.starts_with('[') {
        return true;
    }
    let start = special.then(|| format!("L{owner};"));
    let mut looking_up = start.is_none();
    let mut current: Option<OwnedLocal<'_, kind::Class>> = None;
    // (A chain longer than this is not a Java class hierarchy.)
    for _ in 0..1024 {
        let here = current.as_ref().map_or(class, OwnedLocal::get);
        let Some(name) = class_signature(env, here) else {
            return true;
        };
        // (An array's class declares nothing and its superclass is Object.)
        if name == "Ljava/lang/Object;" || name.starts_with('[') {
            return true;
        }
        looking_up = looking_up || start.as_deref() == Some(name.as_str());
        if looking_up && declares_clone(env, here) {
            return false;
        }
        match superclass(jni, here) {
            Some(parent) => current = Some(parent),
            None => return true,
        }
    }
    true
}

/// Whether `class` declares `clone()Ljava/lang/Object;` (an override, or
/// the bridge of a covariant one).
fn declares_clone(env: &Jvmti, class: LocalClass<'_>) -> bool {
    method_ids(env, class).into_iter().any(|method| {
        method_name(env, method)
            .is_some_and(|(name, descriptor)| (name.as_str(), descriptor.as_str()) == CLONE)
    })
}

/// The superclass of `class` (None for Object, an interface or a
/// primitive); its local reference is deleted when the result is dropped.
fn superclass<'j>(jni: &'j JniEnv, class: LocalClass<'_>) -> Option<OwnedLocal<'j, kind::Class>> {
    if class.is_null() {
        return None;
    }
    // SAFETY: `class` is non-null and live on this thread (a `Local`);
    // GetSuperclass returns a new local reference or null.
    let raw = unsafe { jni.get_superclass(class.raw()) }?;
    // SAFETY: a local reference GetSuperclass just made on this thread,
    // deleted only by its owner.
    (!raw.is_null()).then(|| unsafe { OwnedLocal::new(Some(jni), raw) })
}
