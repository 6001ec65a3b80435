//! Naming the virtual threads cpu=samples charges, with `thread=y`. A
//! sample is taken on the carrier (the OS thread the CPU timer belongs
//! to), so the carrier notes which virtual thread it runs: HotSpot's
//! extension events `VirtualThreadMount` / `VirtualThreadUnmount` (JDK 21+)
//! come on the carrier as a virtual thread goes on or off it.
//!
//! A program may start 100,000 virtual threads, so none is registered (no
//! THREAD START, no lock of the model) when it mounts: it gets a key in its
//! JVMTI thread-local slot and a weak reference kept here. The sampler
//! names it (registers it, which writes its THREAD START) the first time
//! one of its samples is counted, so only virtual threads that used CPU
//! appear in the file. What is kept: one entry per live virtual thread that
//! has run, dropped at its VirtualThreadEnd.

use crate::agent::jvm::{self, LocalThread};
use crate::agent::modes::cpu_samples::cpu_timers;
use crate::agent::run::engine::Run;
use crate::agent::run::threads;
use crate::model::Model;
use jvmti_bindings::prelude::*;
use jvmti_bindings::sys::jvmti::{self, jvmtiExtensionEvent};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Keys given to unnamed virtual threads are at or above this, above every
/// thread serial (a `u32`), so a slot holds either a serial or a key.
pub const FIRST_KEY: u64 = 1 << 40;

/// The extension events' identifiers (`prims/jvmtiExtensions.cpp`).
const MOUNT_EVENT: &str = "com.sun.hotspot.events.VirtualThreadMount";
const UNMOUNT_EVENT: &str = "com.sun.hotspot.events.VirtualThreadUnmount";

/// A JNI weak global reference to a virtual thread.
struct Weak(jni::jweak);
// SAFETY: a global (weak) JNI reference may be used from any attached
// thread; it is only dereferenced through JNI, and deleted once.
unsafe impl Send for Weak {}

enum Known {
    /// Not named yet.
    Unnamed(Weak),
    /// Registered with this serial.
    Named(u32),
}

#[derive(Default)]
struct Registry {
    by_key: HashMap<u64, Known>,
    /// The key of each named virtual thread (whose slot now holds its
    /// serial), to drop its entry when it ends.
    key_of_serial: HashMap<u32, u64>,
}

/// The virtual threads that ran on the sampled carriers.
#[derive(Default)]
pub struct VirtualThreads {
    registry: Mutex<Registry>,
    next_key: AtomicU64,
}

/// The run and the registry the extension events' callbacks reach (they
/// have no other way to it), set once when the events are turned on.
static ACTIVE: OnceLock<(&'static Run, &'static VirtualThreads)> = OnceLock::new();

/// Runs a callback's body; a panic stops at this boundary, said once.
fn contained(event: &str, body: impl FnOnce(&'static Run, &'static VirtualThreads)) {
    let Some(&(run, names)) = ACTIVE.get() else {
        return;
    };
    if !run.lifecycle.accepting_events() {
        return;
    }
    if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| body(run, names))).is_err() {
        static SAID: AtomicBool = AtomicBool::new(false);
        if !SAID.swap(true, Ordering::Relaxed) {
            eprintln!("HPROF ERROR: internal error in the {event} callback; the program continues");
        }
    }
}

/// The signature the mount and unmount events call with.
pub type MountCallback = unsafe extern "C" fn(*mut jvmti::jvmtiEnv, *mut jni::JNIEnv, jni::jthread);

/// A [`MountCallback`] as JVMTI's variadic extension event type.
fn as_extension_event(callback: MountCallback) -> jvmtiExtensionEvent {
    // SAFETY: the mount events pass exactly these three pointers (see
    // `on_mount`); only the declared type differs.
    unsafe { std::mem::transmute::<MountCallback, jvmtiExtensionEvent>(callback) }
}

/// The extension event indexes of VirtualThreadMount and Unmount, when
/// the JVM has them (JDK 21 and later).
fn mount_event_indexes(env: &Jvmti) -> Option<(i32, i32)> {
    let events = env.get_extension_events().ok()?;
    let index_of = |id: &str| {
        events
            .iter()
            .find(|e| e.id.as_deref() == Some(id))
            .map(|e| e.extension_event_index)
    };
    Some((index_of(MOUNT_EVENT)?, index_of(UNMOUNT_EVENT)?))
}

/// Whether the JVM has the mount and unmount events.
pub fn has_mount_events(env: &Jvmti) -> bool {
    mount_event_indexes(env).is_some()
}

/// Turns HotSpot's VirtualThreadMount and VirtualThreadUnmount extension
/// events on, calling `mount` and `unmount` on the carrier (only one
/// engine of a run uses them: cpu=samples or cpu=wall).
pub fn enable_mount_events(env: &Jvmti, mount: MountCallback, unmount: MountCallback) -> bool {
    let Some((on, off)) = mount_event_indexes(env) else {
        return false;
    };
    let (mount, unmount) = (as_extension_event(mount), as_extension_event(unmount));
    // HotSpot posts an extension event once it has a callback and is
    // enabled like a standard event, by its index.
    env.set_extension_event_callback(on, Some(mount)).is_ok()
        && env.set_extension_event_callback(off, Some(unmount)).is_ok()
        && env
            .enable_events_global(&[on as jvmti::jvmtiEvent, off as jvmti::jvmtiEvent])
            .is_ok()
}

/// `VirtualThreadMount(jvmtiEnv*, JNIEnv*, jthread)`, called through
/// JVMTI's variadic `jvmtiExtensionEvent` type: on x86-64 and AArch64
/// Linux these three pointer arguments are passed as for a fixed signature.
unsafe extern "C" fn on_mount(
    _: *mut jvmti::jvmtiEnv,
    jni: *mut jni::JNIEnv,
    thread: jni::jthread,
) {
    contained("VirtualThreadMount", |run, names| {
        if jni.is_null() || thread.is_null() {
            return;
        }
        // SAFETY: the JNIEnv of the calling thread and the event's thread
        // reference, live for the callback.
        let (jni, thread) = unsafe { (JniEnv::from_raw(jni), jvm::Local::new(thread)) };
        names.mounted(&run.jvmti.env(), &jni, thread);
    });
}

/// `VirtualThreadUnmount(jvmtiEnv*, JNIEnv*, jthread)`, as [`on_mount`].
unsafe extern "C" fn on_unmount(_: *mut jvmti::jvmtiEnv, _: *mut jni::JNIEnv, _: jni::jthread) {
    contained("VirtualThreadUnmount", |_, names| names.unmounted());
}

impl VirtualThreads {
    /// Turns the mount and unmount events on for `self`. False when the JVM
    /// has no such events (before JDK 21) or they are on already.
    pub fn enable(&'static self, run: &'static Run) -> bool {
        if !has_mount_events(&run.jvmti.env()) || ACTIVE.set((run, self)).is_err() {
            return false;
        }
        enable_mount_events(&run.jvmti.env(), on_mount, on_unmount)
    }

    /// VirtualThreadMount, on the carrier: its samples are `thread`'s now.
    pub fn mounted(&self, env: &Jvmti, jni: &JniEnv, thread: LocalThread<'_>) {
        let value = jvm::thread_value(env, thread);
        let key = if value != 0 {
            value
        } else {
            let key = FIRST_KEY + self.next_key.fetch_add(1, Ordering::Relaxed);
            // SAFETY: `thread` is live (the event's reference).
            let weak = unsafe { jni.new_weak_global_ref(thread.raw()) };
            if weak.is_null() {
                return;
            }
            jvm::set_thread_value(env, thread, key);
            self.registry
                .lock()
                .by_key
                .insert(key, Known::Unnamed(Weak(weak)));
            key
        };
        cpu_timers::note_mounted(key);
    }

    /// VirtualThreadUnmount, on the carrier: its samples are its own again.
    pub fn unmounted(&self) {
        cpu_timers::note_mounted(0);
    }

    /// VirtualThreadEnd: its entry goes; a named one gets its THREAD END.
    pub fn ended(&self, run: &Run, env: &Jvmti, jni: &JniEnv, thread: LocalThread<'_>) {
        let value = jvm::thread_value(env, thread);
        let serial = {
            let mut registry = self.registry.lock();
            if value >= FIRST_KEY {
                if let Some(Known::Unnamed(weak)) = registry.by_key.remove(&value) {
                    // SAFETY: a weak reference made in `mounted`, deleted once.
                    unsafe { jni.delete_weak_global_ref(weak.0) };
                }
                None
            } else {
                let serial = value as u32;
                if let Some(key) = registry.key_of_serial.remove(&serial) {
                    registry.by_key.remove(&key);
                }
                (serial != 0).then_some(serial)
            }
        };
        if let Some(serial) = serial {
            threads::end(run, serial);
        }
    }

    /// The serial of the virtual thread behind `key`, named now if it was
    /// not; None when it has ended (its samples stay the carrier's).
    pub fn serial_of(
        &self,
        run: &Run,
        env: &Jvmti,
        jni: &JniEnv,
        model: &mut Model,
        key: u64,
    ) -> Option<u32> {
        if key < FIRST_KEY {
            return Some(key as u32);
        }
        // The thread is held by a local reference made under the lock (the
        // weak one may be deleted at its end as soon as the lock is let go);
        // it is registered without the lock, which the carriers' mount
        // events take.
        let local = {
            let registry = self.registry.lock();
            let weak = match registry.by_key.get(&key)? {
                Known::Named(serial) => return Some(*serial),
                Known::Unnamed(weak) => weak.0,
            };
            // SAFETY: a live weak reference (deleted only under this lock);
            // the result is null once the thread is collected.
            unsafe { jni.new_local_ref(weak) }
        };
        if local.is_null() {
            return None;
        }
        // SAFETY: a local reference just made on this thread, deleted
        // below, after its last use.
        let thread: LocalThread<'_> = unsafe { jvm::Local::new(local) };
        let serial = threads::thread_serial(run, env, model, thread, &[]);
        // SAFETY: made above on this thread, deleted once.
        unsafe { jni.delete_local_ref(local) };
        let mut registry = self.registry.lock();
        // (Unless the thread ended meanwhile: its entry is gone then.)
        if let Some(Known::Unnamed(weak)) = registry.by_key.insert(key, Known::Named(serial)) {
            // SAFETY: the weak reference made in `mounted`, deleted once.
            unsafe { jni.delete_weak_global_ref(weak.0) };
            registry.key_of_serial.insert(serial, key);
        } else {
            registry.by_key.remove(&key);
        }
        Some(serial)
    }
}
