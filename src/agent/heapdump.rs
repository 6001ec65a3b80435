//! The heap=dump collector: asks the JVM to write its own heap dump (the
//! HotSpot dumper behind `jcmd GC.heap_dump`, reached through the
//! HotSpotDiagnostic management bean) into a temporary file, which the
//! emitter then carries into our output. The JVM's dumper is the fastest
//! way to a complete dump and needs only a few MB of extra memory; see
//! README.md ("heap=dump") for what that choice means for the output.

use jvmti_bindings::prelude::*;

/// Writes the JVM's heap dump of live objects to `path` (which must not exist).
pub fn dump_heap(jni: &JniEnv, path: &str) -> Result<(), String> {
    let failed = |what: &str| {
        if jni.exception_check() {
            jni.exception_describe();
            jni.exception_clear();
        }
        format!("the JVM's heap dumper failed ({what})")
    };
    let factory = jni
        .find_class("java/lang/management/ManagementFactory")
        .ok_or_else(|| failed("ManagementFactory"))?;
    let bean_class = jni
        .find_class("com/sun/management/HotSpotDiagnosticMXBean")
        .ok_or_else(|| failed("HotSpotDiagnosticMXBean"))?;
    let path_string = jni.new_string_utf(path).ok_or_else(|| failed("path"))?;
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
            return Err(failed("dumpHeap threw"));
        }
    }
    Ok(())
}
