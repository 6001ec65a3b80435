//! The agent's side of `hprof_rs/LockTracker` (monitor=y's hooks in
//! `LockSupport`, see `java-tracker/hprof_rs/LockTracker.java`): it defines
//! the class in the boot loader, registers its two native methods, engages
//! it, and has `LockSupport` rewritten. Part of the JVM boundary with
//! `jvm/mod.rs`: the unsafe JNI calls live here, behind safe methods.

use crate::agent::jvm::{self, GlobalRef, Local, LocalClass, kind};
use crate::bci;
use jvmti_bindings::prelude::*;
use parking_lot::RwLock;
use std::ffi::CString;

/// Internal name of the class whose park methods the hooks go into.
pub const LOCK_SUPPORT_CLASS: &str = "java/util/concurrent/locks/LockSupport";

/// What the LockTracker's native methods report to the agent. Called on
/// the Java thread that parked, from Java code: never panics across (the
/// natives catch), never throws.
pub trait LockEvents: Send + Sync {
    /// A number for lock class `class`, the same for every class of the
    /// same name, or -1 when it cannot be told.
    fn register(&self, class: LocalClass<'_>) -> i32;
    /// The current thread is about to block on a lock of class number
    /// `lock`: the number of its (stack, lock class) pair, its site, or 0.
    fn site(&self, lock: i32) -> i64;
    /// A thread was blocked `nanos` at site `site`.
    fn blocked(&self, site: i64, nanos: i64);
}

/// Where the natives send what they are told: set before the tracker is
/// engaged, by each profile that times locks (a profile attached to a
/// running JVM after another one stopped sets it again).
static EVENTS: RwLock<Option<&'static dyn LockEvents>> = RwLock::new(None);

fn events() -> Option<&'static dyn LockEvents> {
    *EVENTS.read()
}

/// `LockTracker.register(Class)`.
extern "system" fn register_native(
    _env: *mut jni::JNIEnv,
    _tracker: jni::jclass,
    lock_class: jni::jclass,
) -> jni::jint {
    // SAFETY: `lock_class` is the Class argument of a native call, a local
    // reference live until the call returns, on this thread.
    let class: LocalClass<'_> = unsafe { Local::new(lock_class) };
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        events().map_or(-1, |events| events.register(class))
    }))
    .unwrap_or(-1)
}

/// `LockTracker.site(int)`.
extern "system" fn site_native(
    _env: *mut jni::JNIEnv,
    _tracker: jni::jclass,
    lock: jni::jint,
) -> jni::jlong {
    std::panic::catch_unwind(|| events().map_or(0, |events| events.site(lock))).unwrap_or(0)
}

/// `LockTracker.blocked(long, long)`.
extern "system" fn blocked_native(
    _env: *mut jni::JNIEnv,
    _tracker: jni::jclass,
    site: jni::jlong,
    nanos: jni::jlong,
) {
    let _ = std::panic::catch_unwind(|| {
        if let Some(events) = events() {
            events.blocked(site, nanos);
        }
    });
}

/// The LockTracker, defined and with its natives registered.
#[derive(Clone, Copy)]
pub struct LockTracker {
    class: GlobalRef<kind::Class>,
    engaged: jni::jfieldID,
}

// SAFETY: a field identifier stays valid on every thread while its class is
// loaded; the class is in the boot loader, never unloaded, and `class` is a
// global reference to it.
unsafe impl Send for LockTracker {}
// SAFETY: as above; the identifier is only read.
unsafe impl Sync for LockTracker {}

impl LockTracker {
    /// Defines the class in the boot loader, sends its natives' reports to
    /// `events` and looks up its `engaged` field. Once per run.
    pub fn define(jni: &JniEnv, events: &'static dyn LockEvents) -> Result<Self, String> {
        *EVENTS.write() = Some(events);
        // (The bytes are a class file of this very name: a unit test checks.)
        // A profile attached after another one stopped finds the class that
        // one defined (a class is defined once).
        let class = jvm::define_boot_class(
            jni,
            bci::LOCK_TRACKER_CLASS,
            bci::LOCK_TRACKER_CLASS_FILE,
            "lock tracker",
        )
        .or_else(|why| {
            jvm::find_class(jni, bci::LOCK_TRACKER_CLASS)
                .map(|found| GlobalRef::new(jni, found.get()))
                .ok_or(why)
        })?;
        let names = |(name, signature): (&str, &str)| {
            (
                CString::new(name).unwrap_or_default(),
                CString::new(signature).unwrap_or_default(),
            )
        };
        let (register_name, register_signature) = names(bci::LOCK_TRACKER_REGISTER);
        let (site_name, site_signature) = names(bci::LOCK_TRACKER_SITE);
        let (blocked_name, blocked_signature) = names(bci::LOCK_TRACKER_BLOCKED);
        let methods = [
            jni::JNINativeMethod {
                name: register_name.as_ptr(),
                signature: register_signature.as_ptr(),
                fnPtr: register_native as *mut std::ffi::c_void,
            },
            jni::JNINativeMethod {
                name: site_name.as_ptr(),
                signature: site_signature.as_ptr(),
                fnPtr: site_native as *mut std::ffi::c_void,
            },
            jni::JNINativeMethod {
                name: blocked_name.as_ptr(),
                signature: blocked_signature.as_ptr(),
                fnPtr: blocked_native as *mut std::ffi::c_void,
            },
        ];
        let (field_name, field_signature) = bci::LOCK_TRACKER_ENGAGED_FIELD;
        // SAFETY: `class` is the LockTracker, held by a global reference;
        // the names and signatures are those of its three native methods and of
        // its static int field (checked by a unit test against the
        // embedded class), and the functions have the matching JNI
        // signatures.
        unsafe {
            let registered = jni.register_natives(class.raw() as jni::jclass, &methods);
            if registered.is_err() || jni.exception_check() {
                jni.exception_clear();
                return Err("the lock tracker's natives cannot be registered".into());
            }
            let engaged = jni
                .get_static_field_id(class.raw() as jni::jclass, field_name, field_signature)
                .ok_or("the lock tracker has no engaged field")?;
            let tracker = Self { class, engaged };
            tracker.forget_lock_classes(jni)?;
            Ok(tracker)
        }
    }

    /// Empties the tracker's own cache of lock class numbers
    /// (`lockClasses`): a profile attached after another one stopped
    /// numbers the lock classes anew.
    fn forget_lock_classes(&self, jni: &JniEnv) -> Result<(), String> {
        let class_class =
            jvm::find_class(jni, "java/lang/Class").ok_or("java.lang.Class cannot be found")?;
        // SAFETY: `class` is the LockTracker, held by a global reference;
        // `lockClasses` is its static Class[] field (java-tracker's source),
        // given a new empty Class[]; an exception is cleared.
        unsafe {
            let class = self.class.raw() as jni::jclass;
            let Some(field) = jni.get_static_field_id(class, "lockClasses", "[Ljava/lang/Class;")
            else {
                jni.exception_clear();
                return Err("the lock tracker has no lockClasses field".into());
            };
            let empty = jni.new_object_array(
                0,
                class_class.get().raw() as jni::jclass,
                std::ptr::null_mut(),
            );
            match empty {
                Some(empty) if !jni.exception_check() => {
                    jni.set_static_object_field(class, field, empty);
                    jni.delete_local_ref(empty);
                    Ok(())
                }
                _ => {
                    jni.exception_clear();
                    Err("the lock tracker's cache cannot be emptied".into())
                }
            }
        }
    }

    /// Makes the hooks time parks (`true`) or do nothing.
    pub fn set_engaged(&self, jni: &JniEnv, engaged: bool) {
        // SAFETY: `engaged` is the LockTracker's static int field.
        unsafe {
            jni.set_static_int_field(
                self.class.raw() as jni::jclass,
                self.engaged,
                i32::from(engaged),
            )
        };
    }
}

/// Loads `LockSupport` if it is not yet and has it rewritten: the
/// ClassFileLoadHook, enabled before, sees it again.
pub fn retransform_lock_support(env: &Jvmti, jni: &JniEnv) -> Result<(), String> {
    let class = jvm::find_class(jni, LOCK_SUPPORT_CLASS).ok_or("LockSupport cannot be loaded")?;
    // SAFETY: `class` is a live local reference to a class, on this thread.
    unsafe { env.retransform_classes(&[class.get().raw() as jni::jclass]) }
        .map_err(|e| format!("LockSupport cannot be retransformed ({e:?})"))
}
