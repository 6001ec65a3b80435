//! A second JVMTI environment, of JVMTI 1.0, whose one job is to give
//! `java.lang.Thread` heap=sites' calling-context field as the JVM first
//! loads the class (and whenever another agent redefines it).
//!
//! Why not the agent's own environment: a JVMTI 1.1+ environment is a
//! retransformable one, and when a retransformable environment changes a
//! class at load, HotSpot keeps the class file as it was before the change
//! (its "cached class file") to start each later retransformation from.
//! Thread's, cached in the primordial phase, went wrong once another agent
//! (a java.lang.instrument one) retransformed Thread before the agent's own
//! retransformation of the classes loaded before VM init: HotSpot then
//! handed Thread's cached bytes as the class file of other classes
//! (`java.lang.WeakPairMap$Pair$Weak`), so whole batches failed with
//! NAMES_DONT_MATCH on JDK 11 to 17, libinstrument asserted "can't create
//! byte array" on JDK 21, and crashed copying freed memory on JDK 25. A 1.0
//! environment is not retransformable: its change is not cached, a later
//! retransformation starts from the class as it is (field included), and
//! a redefinition by another agent, which hands the hook the class file
//! without the field, passes through this hook first.

use super::own_env;
use crate::bci;
use jvmti_bindings::prelude::*;
use std::ffi::{CStr, c_char, c_uchar};
use std::sync::atomic::{AtomicBool, Ordering};

/// Set once java.lang.Thread was loaded with the field (given here, or had).
static FIELD_GIVEN: AtomicBool = AtomicBool::new(false);

/// Whether java.lang.Thread was loaded with the context field. Known
/// without asking the JVM about the class (JNI's FindClass initialises
/// it, which at the JVM's start would run Thread's initialiser before the
/// JDK's own order).
pub fn thread_has_field() -> bool {
    FIELD_GIVEN.load(Ordering::Acquire)
}

/// Creates the environment, asks the early ClassFileLoadHook and enables
/// it. Called from Agent_OnLoad, before the JVM loads any class.
pub fn install(vm: *mut jni::JavaVM) -> Result<(), String> {
    let env = own_env::create(vm, jvmti::JVMTI_VERSION_1_0)?;
    let mut caps = jvmti::jvmtiCapabilities::default();
    caps.set_can_generate_early_class_hook_events(true);
    caps.set_can_generate_all_class_hook_events(true);
    let mut callbacks = jvmti::jvmtiEventCallbacks::default();
    callbacks.ClassFileLoadHook = Some(class_file_load_hook);
    own_env::listen(
        env,
        &caps,
        &callbacks,
        jvmti::JVMTI_EVENT_CLASS_FILE_LOAD_HOOK,
    )
}

/// Thread's class file with the field (unchanged when it has it already);
/// every other class passes through.
#[allow(clippy::too_many_arguments)]
unsafe extern "system" fn class_file_load_hook(
    env: *mut jvmti::jvmtiEnv,
    _jni: *mut jni::JNIEnv,
    _class_being_redefined: jni::jclass,
    _loader: jni::jobject,
    name: *const c_char,
    _protection_domain: jni::jobject,
    class_data_len: jni::jint,
    class_data: *const c_uchar,
    new_class_data_len: *mut jni::jint,
    new_class_data: *mut *mut c_uchar,
) {
    let _ = std::panic::catch_unwind(|| {
        // SAFETY: the JVM passes a C string or null.
        if name.is_null() || unsafe { CStr::from_ptr(name) }.to_bytes() != b"java/lang/Thread" {
            return;
        }
        let Ok(length) = usize::try_from(class_data_len) else {
            return;
        };
        if class_data.is_null() || new_class_data.is_null() || new_class_data_len.is_null() {
            return;
        }
        // SAFETY: the JVM's class file of `class_data_len` bytes, live for
        // the callback.
        let bytes = unsafe { std::slice::from_raw_parts(class_data, length) };
        let Ok(with_field) = bci::add_context_field(bytes) else {
            return;
        };
        if with_field.len() == bytes.len() {
            FIELD_GIVEN.store(true, Ordering::Release);
            return; // it had the field
        }
        let Ok(new_length) = jni::jint::try_from(with_field.len()) else {
            return;
        };
        // SAFETY: `env` is this callback's live environment.
        let Some(allocate) = (unsafe { (*(*env).functions).Allocate }) else {
            return;
        };
        let mut memory: *mut c_uchar = std::ptr::null_mut();
        // SAFETY: Allocate writes one pointer to `new_length` bytes.
        if unsafe { allocate(env, jni::jlong::from(new_length), &mut memory) }
            != jvmti::jvmtiError::NONE
            || memory.is_null()
        {
            return;
        }
        // SAFETY: `memory` holds `new_length` bytes; the JVM takes it over
        // (and frees it) through the two out-pointers.
        unsafe {
            std::ptr::copy_nonoverlapping(with_field.as_ptr(), memory, with_field.len());
            *new_class_data = memory;
            *new_class_data_len = new_length;
        }
        FIELD_GIVEN.store(true, Ordering::Release);
    });
}
