//! Which classes the JVM has unloaded: a JVMTI environment of its own tags
//! each class object the model knows with the class's serial number, and
//! its ObjectFree event hands the serial back once the class object is
//! collected, which is when its class unloads. The model then lets go of
//! what it keeps by the class's identity (its class object, its methods'
//! jmethodIDs), and a binary file gets its UNLOAD CLASS record, as HPROF
//! wrote one when a class loader went away.
//!
//! Why an environment of its own: the agent's own environment tags objects
//! for other reasons (the class object's identifier, the live sample of
//! heap=sites), and turning ObjectFree on there would post an event for
//! each of those too. Here only class objects carry tags.
//!
//! The ObjectFree callback may run inside a garbage collection, where it
//! must not call JNI or wait on anything a stopped Java thread could hold:
//! it only sends the serial down a lock-free channel, which the agent
//! drains when it next works on the model (a class load, a trace, a dump).
//! The channel holds at most one serial per class ever watched.

use super::own_env;
use crossbeam_channel::{Receiver, Sender};
use jvmti_bindings::prelude::*;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};

/// How many class objects were collected since the process began.
static UNLOADS: AtomicU64 = AtomicU64::new(0);

/// The environment while classes are watched; null otherwise.
static ENV: AtomicPtr<jvmti::jvmtiEnv> = AtomicPtr::new(std::ptr::null_mut());

/// Serials of the unloaded classes, from the ObjectFree callback.
fn channel() -> &'static (Sender<u32>, Receiver<u32>) {
    static CHANNEL: OnceLock<(Sender<u32>, Receiver<u32>)> = OnceLock::new();
    CHANNEL.get_or_init(crossbeam_channel::unbounded)
}

/// Creates the environment and turns its ObjectFree event on. Called as a
/// profile begins (VM init or an attach), before the classes loaded so far
/// are taken into the model. An error leaves classes unwatched: the model
/// then keeps what it holds of unloaded classes, as it did before.
pub fn install(vm: *mut jni::JavaVM) -> Result<(), String> {
    // Serials of an earlier profile of this JVM mean nothing to this one.
    while channel().1.try_recv().is_ok() {}
    let env = own_env::create(vm, jvmti::JVMTI_VERSION_1_2)?;
    let mut caps = jvmti::jvmtiCapabilities::default();
    caps.set_can_tag_objects(true);
    caps.set_can_generate_object_free_events(true);
    let mut callbacks = jvmti::jvmtiEventCallbacks::default();
    callbacks.ObjectFree = Some(class_object_freed);
    if let Err(why) = own_env::listen(env, &caps, &callbacks, jvmti::JVMTI_EVENT_OBJECT_FREE) {
        dispose(env);
        return Err(why);
    }
    let earlier = ENV.swap(env, Ordering::AcqRel);
    if !earlier.is_null() {
        dispose(earlier);
    }
    Ok(())
}

/// Disposes of `env`: its event stops and the JVM drops its tags.
fn dispose(env: *mut jvmti::jvmtiEnv) {
    // SAFETY: `env` is a live environment this module created, disposed of
    // once (it was just taken out of ENV, or never put there).
    unsafe {
        if let Some(dispose) = (*(*env).functions).DisposeEnvironment {
            dispose(env);
        }
    }
}

/// The profile ends while the JVM runs on (an attached profile stops): no
/// more tags on class objects, no more events.
pub fn uninstall() {
    let env = ENV.swap(std::ptr::null_mut(), Ordering::AcqRel);
    if !env.is_null() {
        dispose(env);
    }
    while channel().1.try_recv().is_ok() {}
}

/// Watches `class` (a live reference to a class object), known to the
/// model as `serial`. Nothing happens while no environment is installed.
pub fn watch(class: jni::jclass, serial: u32) {
    let env = ENV.load(Ordering::Acquire);
    if env.is_null() || class.is_null() {
        return;
    }
    // SAFETY: `env` is live (it is disposed of only when a profile ends, after
    // its last event) and `class` is a live reference the caller holds.
    unsafe {
        if let Some(set_tag) = (*(*env).functions).SetTag {
            let _ = set_tag(env, class, jni::jlong::from(serial));
        }
    }
}

/// Whether unloaded classes wait to be taken (one atomic look: cheap
/// enough for every trace).
pub fn any_unloaded() -> bool {
    !channel().1.is_empty()
}

/// How many watched classes have unloaded so far (it only grows): a cache
/// keyed by jmethodIDs compares it with the count it last saw.
pub fn unload_count() -> u64 {
    UNLOADS.load(Ordering::Acquire)
}

/// The serials of the classes unloaded since the last call.
pub fn take_unloaded() -> Vec<u32> {
    channel().1.try_iter().collect()
}

/// Makes the JVM post the ObjectFree events the last collections found:
/// from JDK 16 on it posts them lazily, and a look at the tags posts the
/// pending ones first. For a dump, which must know every unloaded class.
pub fn post_pending() {
    let env = ENV.load(Ordering::Acquire);
    if !env.is_null() {
        // SAFETY: `env` is live; the JVM writes a count of 0 and no
        // arrays (no object carries this tag), each freed if written.
        unsafe {
            let functions = &*(*env).functions;
            if let Some(get) = functions.GetObjectsWithTags {
                let wanted = [jni::jlong::MAX];
                let mut count: jni::jint = 0;
                let _ = get(
                    env,
                    1,
                    wanted.as_ptr(),
                    &mut count,
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                );
            }
        }
    }
}

/// ObjectFree: a class object tagged here was collected; its tag is the
/// class's serial.
unsafe extern "system" fn class_object_freed(_env: *mut jvmti::jvmtiEnv, tag: jni::jlong) {
    let _ = std::panic::catch_unwind(|| {
        UNLOADS.fetch_add(1, Ordering::Release);
        if let Ok(serial) = u32::try_from(tag) {
            let _ = channel().0.send(serial);
        }
    });
}
