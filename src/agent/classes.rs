//! The class collector: gives every class object an identifier (its JVMTI
//! tag) and a serial number, from the classes loaded before VM init and from
//! ClassLoad events after it.

use super::jvm;
use crate::model::{ClassTable, ObjectIds};
use jvmti_bindings::prelude::*;

/// The serial of `class`, tagging its class object on first sight.
pub fn intern_class(
    env: &Jvmti,
    classes: &mut ClassTable,
    objects: &ObjectIds,
    class: jni::jclass,
    signature: &str,
    trace_serial: u32,
) -> u32 {
    let tag = jvm::tag_of(env, class);
    if tag != 0 {
        if let Some(entry) = classes.get(tag) {
            return entry.serial;
        }
    }
    let object_id = if tag != 0 { tag } else { objects.next() };
    if tag == 0 {
        // A failed tag only costs identity across sightings; the class still
        // gets a serial and a (fresh) identifier.
        let _ = jvm::set_tag(env, class, object_id);
    }
    classes.intern(object_id, signature, trace_serial)
}
