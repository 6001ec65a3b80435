//! A garbage collection in the JVM's last system shutdown hook, for the
//! collectors that cannot collect at VM death (`jvm::collector`).
//!
//! HotSpot runs `java.lang.Shutdown`'s hooks (slot 0: the console, 1: the
//! program's own hooks, which it waits for, 2: delete-on-exit; ten slots in
//! all) before `before_exit` stops the collectors' threads and posts VM
//! death. The agent puts an `hprof_rs/ExitCollection` (defined in the boot
//! loader) in the last slot, whose `run()` forces a collection: the exit
//! dump then walks the heap as the program left it, collected. The hook runs
//! on the thread that exits, after the program's hooks; the program's API
//! (`Runtime.addShutdownHook`) does not list system hooks, and nothing the
//! program can reach refers to it. `Runtime.halt()` runs no hook: the exit
//! dump then holds what was not collected (the file's prelude says so).
//! Only for an agent loaded with the JVM: an attached profile can stop while
//! the JVM runs on, and a system hook cannot be taken back.

use crate::agent::jvm::{self, GlobalRef, JvmtiHandle, kind};
use jvmti_bindings::prelude::*;
use std::sync::OnceLock;

/// The last of `java.lang.Shutdown`'s system hook slots (MAX_SYSTEM_HOOKS
/// is 10 from JDK 11 to 25; the JDK uses slots 0 to 2).
const LAST_SLOT: i32 = 9;

/// `hprof_rs/ExitCollection`, compiled by `java-tracker/build.sh` (`javac
/// --release 11`; `tests/bci_run.rs` checks it is fresh).
const EXIT_COLLECTION_CLASS_FILE: &[u8] =
    include_bytes!("../../../java-tracker/hprof_rs/ExitCollection.class");

/// What the hook needs: the environment that forces the collection, and
/// the hook itself (held for the JVM's life, as the JVM holds it).
struct Installed {
    jvmti: JvmtiHandle,
    _hook: GlobalRef<kind::Object>,
}

static INSTALLED: OnceLock<Installed> = OnceLock::new();

/// Whether the hook is in place (it then runs at every exit but a halt).
pub fn installed() -> bool {
    INSTALLED.get().is_some()
}

/// Puts the collecting hook in the last system slot, with `jvmti` to force
/// the collection. An error says why not (a slot taken, a JDK without
/// `Shutdown.add`): the exit dump then goes without.
pub fn install(jni: &JniEnv, jvmti: &Jvmti) -> Result<(), String> {
    if installed() {
        return Ok(());
    }
    let class = jvm::define_boot_class(
        jni,
        "hprof_rs/ExitCollection",
        EXIT_COLLECTION_CLASS_FILE,
        "exit collection",
    )?;
    let class_raw = class.raw() as jni::jclass;
    let collect = jni::JNINativeMethod {
        name: c"collect".as_ptr() as *mut _,
        signature: c"()V".as_ptr() as *mut _,
        fnPtr: collect_native as *mut std::ffi::c_void,
    };
    // SAFETY: `class_raw` is the ExitCollection (held by a global
    // reference); `collect_native` implements its `collect()V`.
    let registered = unsafe { jni.register_natives(class_raw, &[collect]) };
    jvm::clear_exception(jni);
    registered.map_err(|code| format!("ExitCollection.collect not bound (JNI error {code})"))?;
    // SAFETY: a class just defined; AllocObject makes an instance without
    // running a constructor (ExitCollection's does nothing).
    let hook = unsafe { jni.alloc_object(class_raw) }.ok_or("no ExitCollection made")?;
    // SAFETY: `hook` is the live local reference AllocObject returned.
    let local: jvm::OwnedLocal<'_, kind::Object> = unsafe { jvm::OwnedLocal::new(Some(jni), hook) };
    let shutdown = jvm::find_class(jni, "java/lang/Shutdown").ok_or("no java.lang.Shutdown")?;
    let shutdown_raw = shutdown.get().raw() as jni::jclass;
    // SAFETY: java.lang.Shutdown's static `add(int, boolean, Runnable)`,
    // package-private (JNI does not check access), every JDK from 11 to 25;
    // the arguments are an int, a boolean and a live Runnable.
    unsafe {
        let add = jni
            .get_static_method_id(shutdown_raw, "add", "(IZLjava/lang/Runnable;)V")
            .ok_or("no Shutdown.add")?;
        jni.call_static_void_method(
            shutdown_raw,
            add,
            &[
                jni::jvalue { i: LAST_SLOT },
                jni::jvalue { z: 0 },
                jni::jvalue {
                    l: local.get().raw(),
                },
            ],
        );
    }
    if jni.exception_check() {
        let why = jvm::take_exception_message(jni).unwrap_or_default();
        return Err(format!("shutdown slot {LAST_SLOT} not taken ({why})"));
    }
    let _ = INSTALLED.set(Installed {
        jvmti: JvmtiHandle::new(jvmti),
        _hook: GlobalRef::new(jni, local.get()),
    });
    Ok(())
}

/// `ExitCollection.collect()`: the collection, on the exiting thread.
extern "system" fn collect_native(_env: *mut jni::JNIEnv, _class: jni::jclass) {
    let _ = std::panic::catch_unwind(|| {
        if let Some(installed) = INSTALLED.get() {
            // A failure leaves the exit dump's figures as they would be
            // without the hook: nothing to report on the program's stream.
            let _ = installed.jvmti.env().force_garbage_collection();
        }
    });
}
