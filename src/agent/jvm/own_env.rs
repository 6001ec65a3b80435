//! JVMTI environments of the agent's own beside its main one, each with
//! one job and one event: `thread_field_env` (Thread's class file at load)
//! and `class_unloads` (the collection of class objects). What they share:
//! getting the environment, its capabilities, its callback table and its
//! one event, through the raw function table (the bindings' wrapper owns
//! only the main environment).

use jvmti_bindings::prelude::*;
use std::ffi::c_void;

/// A new environment of JVMTI `version` in the JVM `vm`.
pub fn create(vm: *mut jni::JavaVM, version: jni::jint) -> Result<*mut jvmti::jvmtiEnv, String> {
    if vm.is_null() {
        return Err("no JavaVM".into());
    }
    let mut raw: *mut c_void = std::ptr::null_mut();
    // SAFETY: `vm` is the process's JavaVM; GetEnv writes one pointer.
    let code = unsafe { ((**vm).GetEnv)(vm, &mut raw, version) };
    if code != jni::JNI_OK || raw.is_null() {
        return Err(format!("GetEnv(JVMTI {version:#x}) returned {code}"));
    }
    Ok(raw as *mut jvmti::jvmtiEnv)
}

/// Gives `env` the capabilities `caps` and the callbacks `callbacks`, then
/// enables `event` for every thread.
pub fn listen(
    env: *mut jvmti::jvmtiEnv,
    caps: &jvmti::jvmtiCapabilities,
    callbacks: &jvmti::jvmtiEventCallbacks,
    event: jvmti::jvmtiEvent,
) -> Result<(), String> {
    // SAFETY: a live JVMTI environment's function table.
    let functions = unsafe { &*(*env).functions };
    let add = functions.AddCapabilities.ok_or("no AddCapabilities")?;
    // SAFETY: `env` is live; `caps` outlives the call.
    check(unsafe { add(env, caps) }, "AddCapabilities")?;
    let set = functions.SetEventCallbacks.ok_or("no SetEventCallbacks")?;
    let size = std::mem::size_of::<jvmti::jvmtiEventCallbacks>() as jni::jint;
    // SAFETY: as above; the JVM copies the table.
    check(unsafe { set(env, callbacks, size) }, "SetEventCallbacks")?;
    let mode = functions
        .SetEventNotificationMode
        .ok_or("no SetEventNotificationMode")?;
    // SAFETY: as above; a null thread enables the event for every thread.
    let enabled = unsafe { mode(env, jvmti::JVMTI_ENABLE, event, std::ptr::null_mut()) };
    check(enabled, "enabling its event")
}

fn check(error: jvmti::jvmtiError, what: &str) -> Result<(), String> {
    if error == jvmti::jvmtiError::NONE {
        Ok(())
    } else {
        Err(format!("{what}: {error:?}"))
    }
}
