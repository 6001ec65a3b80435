//! The heap=dump collector: asks the JVM to write its own heap dump (the
//! HotSpot dumper behind `jcmd GC.heap_dump`) into a temporary file, which
//! the emitter then carries into our output. The dumper is reached through
//! the JVM's management function table (see `jmm.rs`), so that the dump
//! holds the program's objects only; the HotSpotDiagnostic management bean
//! is the fallback. The JVM's dumper is the fastest way to a complete dump
//! and needs only a few MB of extra memory; see README.md ("heap=dump") for
//! what that choice means for the output.

use super::jmm::HeapDumper;
use jvmti_bindings::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering};

/// Writes the JVM's heap dump of live objects to `path` (which must not
/// exist), through the MXBean if `through_bean` or if the management table
/// is out of reach. On failure, the reason in a few words (the message of
/// the JVM's exception, e.g. `No space left on device`), with the JVM's
/// exception cleared and never printed: it is not the program's.
///
/// `prepared` is `path` as a Java string made ahead of time (a global
/// reference), for a dump at an OutOfMemoryError, when no new string can be
/// made; without it one is made here.
pub fn dump_heap(
    jni: &JniEnv,
    path: &str,
    prepared: Option<jni::jstring>,
    verbose: bool,
    through_bean: bool,
) -> Result<(), String> {
    let failed = |what: &str| take_exception_message(jni).unwrap_or_else(|| what.to_owned());
    let path_string = match prepared {
        Some(string) => string,
        None => jni
            .new_string_utf(path)
            .ok_or_else(|| failed("cannot make the path a Java string"))?,
    };
    let dumper = if through_bean {
        Err("X=0x8000 asks for it".to_string())
    } else {
        HeapDumper::find(jni)
    };
    let result = match dumper {
        Ok(dumper) => {
            if dumper.dump(jni, path_string) {
                Ok(())
            } else {
                Err(failed("the JVM's dumper failed"))
            }
        }
        Err(why) => {
            static SAID: AtomicBool = AtomicBool::new(false);
            if verbose && !SAID.swap(true, Ordering::Relaxed) {
                eprintln!("\nHPROF: {why}; heap dumps go through the HotSpotDiagnostic MXBean");
            }
            dump_heap_through_bean(jni, path_string, &failed)
        }
    };
    if prepared.is_none() {
        // SAFETY: a local reference made above, deleted once.
        unsafe { jni.delete_local_ref(path_string) };
    }
    result.map_err(|reason| {
        format!("cannot dump the heap to {path}: {reason}; no heap dump in this output")
    })
}

/// The message of the exception pending on this thread (cleared here, so
/// that it never reaches the program or stderr), or None if there is none
/// or it has no message.
fn take_exception_message(jni: &JniEnv) -> Option<String> {
    let throwable = jni.exception_occurred()?;
    jni.exception_clear();
    let throwable_class = jni.find_class("java/lang/Throwable");
    // SAFETY: getMessage()Ljava/lang/String; is java.lang.Throwable's public
    // API in every JDK; `throwable` is a live local reference; an exception
    // thrown by the call is cleared below; every local reference made here
    // is deleted once.
    let message = unsafe {
        let message = throwable_class
            .and_then(|class| jni.get_method_id(class, "getMessage", "()Ljava/lang/String;"))
            .map(|get_message| jni.call_object_method(throwable, get_message, &[]))
            .filter(|text| !text.is_null() && !jni.exception_check());
        let text = message.and_then(|text| jni.get_string_utf(text));
        for local in [message, throwable_class, Some(throwable)]
            .into_iter()
            .flatten()
        {
            jni.delete_local_ref(local);
        }
        text
    };
    if jni.exception_check() {
        jni.exception_clear();
    }
    message
}

/// The fallback: `ManagementFactory.getPlatformMXBean(HotSpotDiagnosticMXBean
/// .class).dumpHeap(path, true)`. Its first use builds the platform MXBean
/// machinery, whose objects then show in the dump.
fn dump_heap_through_bean(
    jni: &JniEnv,
    path_string: jni::jstring,
    failed: &dyn Fn(&str) -> String,
) -> Result<(), String> {
    let failed = |what: &str| format!("{} ({what})", failed("the MXBean route failed"));
    let factory = jni
        .find_class("java/lang/management/ManagementFactory")
        .ok_or_else(|| failed("ManagementFactory"))?;
    let bean_class = jni
        .find_class("com/sun/management/HotSpotDiagnosticMXBean")
        .ok_or_else(|| failed("HotSpotDiagnosticMXBean"))?;
    // SAFETY: the class, method identifiers and signatures are those of the
    // public java.lang.management and com.sun.management APIs of every JDK
    // 11+; exceptions are checked after each call.
    unsafe {
        let get_bean = jni
            .get_static_method_id(
                factory,
                "getPlatformMXBean",
                "(Ljava/lang/Class;)Ljava/lang/management/PlatformManagedObject;",
            )
            .ok_or_else(|| failed("getPlatformMXBean"))?;
        let dump = jni
            .get_method_id(bean_class, "dumpHeap", "(Ljava/lang/String;Z)V")
            .ok_or_else(|| failed("dumpHeap"))?;
        let bean =
            jni.call_static_object_method(factory, get_bean, &[jni::jvalue { l: bean_class }]);
        if bean.is_null() || jni.exception_check() {
            return Err(failed("no diagnostic bean"));
        }
        jni.call_void_method(
            bean,
            dump,
            &[jni::jvalue { l: path_string }, jni::jvalue { z: 1 }],
        );
        if jni.exception_check() {
            return Err(failed("HotSpotDiagnosticMXBean.dumpHeap"));
        }
    }
    Ok(())
}
