//! The class collector: gives every class object an identifier (its JVMTI
//! tag) and a serial number, from the classes loaded before VM init, from
//! ClassLoad events after it, and from the first allocation of an instance.

use crate::agent::jvm::object_tags::is_allocation_tag;
use crate::agent::jvm::{self, LocalClass, class_unloads};
use crate::model::{ClassTable, Model, ObjectIds};
use jvmti_bindings::prelude::*;

/// A class as the model knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KnownClass {
    pub serial: u32,
    /// The identifier of its class object, which is also the object's tag.
    pub object_id: u64,
}

/// The serial and identifier of `class`, tagging its class object on first
/// sight. `trace_serial` is recorded as the class's load trace when new.
pub fn intern_class(
    env: &Jvmti,
    classes: &mut ClassTable,
    objects: &ObjectIds,
    class: LocalClass<'_>,
    trace_serial: u32,
) -> Option<KnownClass> {
    let tag = jvm::tag_of(env, class);
    if let Some(entry) = classes.get(tag) {
        return Some(KnownClass {
            serial: entry.serial,
            object_id: entry.object_id,
        });
    }
    let signature = jvm::class_signature(env, class)?;
    // A class object tagged by the allocation collector (it was allocated
    // after VM init and not recognised as a class then) gets a proper
    // identifier; its allocation then simply stays counted as live.
    let object_id = if tag == 0 || is_allocation_tag(tag) {
        objects.next()
    } else {
        tag
    };
    if object_id != tag {
        // A failed tag only costs identity across sightings; the class still
        // gets a serial and an identifier.
        let _ = jvm::set_tag(env, class, object_id);
    }
    let (serial, new) = classes.intern_announced(object_id, &signature, trace_serial);
    if new {
        class_unloads::watch(class.raw() as jni::jclass, serial);
    }
    Some(KnownClass { serial, object_id })
}

/// Takes the classes unloaded since the last look out of the model's
/// tables keyed by class or method; returns how many. Cheap when there
/// are none (one atomic look), so it runs wherever the model is worked on.
pub fn retire_unloaded(model: &mut Model) -> usize {
    if !class_unloads::any_unloaded() {
        return 0;
    }
    class_unloads::take_unloaded()
        .into_iter()
        .filter(|&serial| model.unload_class(serial))
        .count()
}
