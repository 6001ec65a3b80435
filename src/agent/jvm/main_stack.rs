//! main() on a thread with the stack the rewritten code takes.
//!
//! Threads the program starts get more stack while rewritten code runs
//! (`thread_stacks`). The main thread cannot: the java launcher makes it,
//! sized by `-Xss` or HotSpot's default (1 MiB on x86-64 Linux), before any
//! agent loads, and a thread's stack cannot grow once it is made. So under
//! the rewriting modes the agent runs main() itself on a thread of its own
//! making with `factor` times the launcher thread's stack, attached to the
//! JVM as a program thread named "main" in the "main" group, while the
//! launcher's thread waits for it:
//!
//! - At VM init (on the launcher's thread) the agent replaces the two JNI
//!   functions the launcher calls main() with, CallStaticVoidMethod and
//!   (an instance main, JDK 21 on) CallVoidMethod, by the ones of
//!   `main_call.c` (C: they take varargs).
//! - The first such call on the launcher's thread of a method named `main`
//!   taking a `String[]` or nothing is taken, and the JVM's table is put
//!   back: every other call, before and after, goes to the JVM's function
//!   unchanged. main()'s class or object and its argument are kept by
//!   global references; the new thread attaches (non-daemon), calls main()
//!   through the JVM's own `...MethodA` function, sets aside what main()
//!   threw (and the uncaught-exception handler main() gave its thread) and
//!   detaches. The launcher's thread gives itself that handler and throws
//!   the exception again, so the launcher reports it and exits with 1 as it
//!   would have; the trace printed is the exception's own, main() at its
//!   bottom as without the agent.
//! - Where any of this fails (no thread could be made or attached,
//!   `-Xcheck:jni`, whose checking table the JVM keeps apart), main() runs
//!   on the launcher's thread as before.
//!
//! What the program can see: main() runs on another `Thread` object than
//! the one that ran its class's static initializer, with another thread
//! id; both are named "main". The profile sees one thread: the new thread
//! has the launcher thread's serial (see [`stand_in_serial`]).

use crate::agent::jvm::libjvm::{self, BoolFlag};
use crate::agent::jvm::{JvmtiHandle, VmHandle, thread_stacks};
use jvmti_bindings::prelude::*;
use std::cell::Cell;
use std::ffi::{c_int, c_void};
use std::mem::offset_of;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

/// `-1`: not the call to take; else how many arguments main() takes.
type MainArguments = extern "C" fn(*mut c_void, *mut c_void) -> c_int;
/// Runs main() elsewhere: env, class or object, method, argument count,
/// the argument, whether main() is static.
type RunMain = extern "C" fn(*mut c_void, *mut c_void, *mut c_void, c_int, *mut c_void, c_int);

unsafe extern "C" {
    fn hprof_main_call_install(
        static_void_v: *const c_void,
        void_v: *const c_void,
        arguments: MainArguments,
        run: RunMain,
    );
    fn hprof_main_call_static_void(env: *mut c_void, cls: *mut c_void, method: *mut c_void, ...);
    fn hprof_main_call_void(env: *mut c_void, object: *mut c_void, method: *mut c_void, ...);
}

type Table = jni::JNINativeInterface_;

/// What the replacements need, set once at VM init.
struct Takeover {
    jvmti: JvmtiHandle,
    vm: VmHandle,
    /// The thread the launcher calls main() on (VM init's).
    launcher: libc::pthread_t,
    /// The new thread's stack.
    stack_bytes: usize,
    /// The launcher thread's serial in the profile, which the new thread
    /// takes over.
    serial: u32,
    /// The JVM's table, put back once main() is taken.
    jvm_table: TableSlots,
}

// SAFETY: the JVMTI and VM handles are process-wide; the table holds the
// JVM's function pointers, valid for the JVM's life; a pthread_t is an
// identifier. Nothing in it is written after it is set.
unsafe impl Send for Takeover {}
// SAFETY: as above.
unsafe impl Sync for Takeover {}

static TAKEOVER: OnceLock<Takeover> = OnceLock::new();
/// Set when main() is taken: one call only.
static TAKEN: AtomicBool = AtomicBool::new(false);

thread_local! {
    /// On the thread running main() for the launcher: the launcher thread's serial.
    static STAND_IN_FOR: Cell<u32> = const { Cell::new(0) };
}

/// On the thread the agent runs main() on: the serial of the launcher's
/// thread, which this thread stands in for in the profile.
pub fn stand_in_serial() -> Option<u32> {
    Some(STAND_IN_FOR.try_with(Cell::get).unwrap_or(0)).filter(|&s| s != 0)
}

/// Called at VM init on the launcher's thread, whose serial is
/// `launcher_serial`: the launcher's call of main() will run main() on a
/// thread with `factor` times this thread's stack. An error says why
/// main() will stay on this thread.
pub fn run_main_on_larger_stack(
    env: &Jvmti,
    vm: VmHandle,
    factor: u32,
    launcher_serial: u32,
) -> Result<(), String> {
    if TAKEOVER.get().is_some() {
        return Ok(());
    }
    if libjvm::checks_jni() != BoolFlag::Value(false) {
        return Err("-Xcheck:jni keeps the JNI function table apart".into());
    }
    let own = current_stack_bytes().ok_or("this thread's stack size is unknown")?;
    let stack_bytes = thread_stacks::enlarged(own, own, i64::from(factor))
        .ok_or("this thread's stack is as large as a stack gets")?;
    let jvm_table = jvm_table(env)?;
    // SAFETY: main_call.c's install takes the JVM's own `...V` functions
    // (JNIEnv*, object, method, va_list) and two functions of the types it
    // declares; it only stores them.
    unsafe {
        hprof_main_call_install(
            jvm_table.get(offset_of!(Table, CallStaticVoidMethodV)),
            jvm_table.get(offset_of!(Table, CallVoidMethodV)),
            main_arguments,
            run_main,
        );
    }
    let mut replaced = jvm_table.clone();
    replaced.set(
        offset_of!(Table, CallStaticVoidMethod),
        hprof_main_call_static_void as *const c_void,
    );
    replaced.set(
        offset_of!(Table, CallVoidMethod),
        hprof_main_call_void as *const c_void,
    );
    let takeover = Takeover {
        jvmti: JvmtiHandle::new(env),
        vm,
        // SAFETY: pthread_self has no preconditions.
        launcher: unsafe { libc::pthread_self() },
        stack_bytes: usize::try_from(stack_bytes).map_err(|_| "stack size")?,
        serial: launcher_serial,
        jvm_table,
    };
    let takeover = TAKEOVER.get_or_init(|| takeover);
    // The JVM copies the table; it is kept anyway, as the bindings ask.
    let replaced: &'static TableSlots = Box::leak(Box::new(replaced));
    takeover.install(replaced)
}

/// The JNI function table, as many pointer slots as this JVM's has (the
/// bindings' struct has the slots of later JDKs too, past the end of an
/// older JVM's table).
#[derive(Clone)]
struct TableSlots(Vec<*const c_void>);

impl TableSlots {
    const SLOT: usize = std::mem::size_of::<*const c_void>();

    fn get(&self, offset: usize) -> *const c_void {
        self.0[offset / Self::SLOT]
    }

    fn set(&mut self, offset: usize, function: *const c_void) {
        self.0[offset / Self::SLOT] = function;
    }
}

/// A copy of the JVM's JNI function table.
fn jvm_table(env: &Jvmti) -> Result<TableSlots, String> {
    let table = env
        .get_jni_function_table()
        .map_err(|e| format!("GetJNIFunctionTable: {e:?}"))?;
    let bytes = table
        .known_byte_len()
        .ok_or("this JDK's JNI function table has no known size")?;
    let slots = bytes / TableSlots::SLOT;
    if slots <= offset_of!(Table, CallStaticVoidMethodV) / TableSlots::SLOT {
        return Err(format!("a JNI function table of {slots} functions"));
    }
    // SAFETY: GetJNIFunctionTable's copy holds this JVM's table, `bytes`
    // long, pointer slots (the version's size, from the bindings).
    let copied =
        unsafe { std::slice::from_raw_parts(table.as_ptr() as *const *const c_void, slots) };
    Ok(TableSlots(copied.to_vec()))
}

impl Takeover {
    /// Makes `table` the JNI function table of every thread.
    fn install(&self, table: &TableSlots) -> Result<(), String> {
        // SAFETY: a complete table of this JVM's functions (its length),
        // at most two of them replaced by functions of the same C
        // signatures.
        unsafe {
            self.jvmti
                .env()
                .set_jni_function_table(table.0.as_ptr() as *const Table)
        }
        .map_err(|e| format!("SetJNIFunctionTable: {e:?}"))
    }

    /// The JVM's own CallStaticVoidMethod and CallVoidMethod again.
    fn put_back_jvm_table(&self) {
        let _ = self.install(&self.jvm_table);
    }
}

/// The size of the calling thread's stack, in bytes.
fn current_stack_bytes() -> Option<i64> {
    // SAFETY: pthread_getattr_np fills `attr` for the calling thread, read
    // by pthread_attr_getstack and then destroyed; all three get pointers
    // to locals that outlive the calls.
    unsafe {
        let mut attr: libc::pthread_attr_t = std::mem::zeroed();
        if libc::pthread_getattr_np(libc::pthread_self(), &mut attr) != 0 {
            return None;
        }
        let mut address: *mut c_void = std::ptr::null_mut();
        let mut size: libc::size_t = 0;
        let read = libc::pthread_attr_getstack(&attr, &mut address, &mut size);
        libc::pthread_attr_destroy(&mut attr);
        (read == 0 && size > 0)
            .then(|| i64::try_from(size).ok())
            .flatten()
    }
}

/// The call to take: the first one on the launcher's thread of a method
/// named `main` taking a `String[]` (1) or nothing (0); -1 for any other.
extern "C" fn main_arguments(_env: *mut c_void, method: *mut c_void) -> c_int {
    std::panic::catch_unwind(|| {
        let Some(takeover) = TAKEOVER.get() else {
            return -1;
        };
        // SAFETY: pthread_self and pthread_equal have no preconditions.
        let on_launcher = unsafe { libc::pthread_equal(libc::pthread_self(), takeover.launcher) };
        if on_launcher == 0 || TAKEN.load(Ordering::Acquire) {
            return -1;
        }
        // SAFETY: `method` is the jmethodID the launcher passed to JNI.
        let named = unsafe {
            takeover
                .jvmti
                .env()
                .get_method_name(method as jni::jmethodID)
        };
        let arguments = match named {
            Ok((name, signature, _)) if name == "main" => match signature.as_str() {
                "([Ljava/lang/String;)V" => 1,
                "()V" => 0,
                _ => return -1,
            },
            _ => return -1,
        };
        if TAKEN.swap(true, Ordering::AcqRel) {
            return -1;
        }
        takeover.put_back_jvm_table();
        arguments
    })
    .unwrap_or(-1)
}

/// main()'s call as the launcher made it, its references global so that
/// another thread can use them.
#[derive(Clone, Copy)]
struct MainCall {
    /// The class (static main) or the object (instance main).
    target: jni::jobject,
    method: jni::jmethodID,
    /// None: main() takes no argument.
    argument: Option<jni::jobject>,
    is_static: bool,
}

// SAFETY: global references and a method ID, valid on every thread.
unsafe impl Send for MainCall {}

/// Set when the new thread is about to call main().
static MAIN_BEGAN: AtomicBool = AtomicBool::new(false);

/// Detaches the calling thread from the JVM when dropped.
struct Attached(VmHandle);

impl Drop for Attached {
    fn drop(&mut self) {
        self.0.detach();
    }
}

/// A global reference (or null) handed to the new thread.
#[derive(Clone, Copy)]
struct Shared(jni::jobject);

// SAFETY: a global reference, valid on every thread.
unsafe impl Send for Shared {}

/// What main() left on the thread it ran on (global references, or null).
struct Outcome {
    ran: bool,
    thrown: jni::jobject,
    handler: jni::jobject,
}

// SAFETY: global references, valid on every thread.
unsafe impl Send for Outcome {}

/// On the launcher's thread, for the call taken: main() runs on a new
/// thread and its exception is thrown here, or main() runs here when no
/// thread could take it.
extern "C" fn run_main(
    env: *mut c_void,
    target: *mut c_void,
    method: *mut c_void,
    arguments: c_int,
    argument: *mut c_void,
    is_static: c_int,
) {
    // SAFETY: the launcher's JNIEnv, on its own thread.
    let jni = unsafe { JniEnv::from_raw(env as *mut jni::JNIEnv) };
    let here = MainCall {
        target: target as jni::jobject,
        method: method as jni::jmethodID,
        argument: (arguments > 0).then_some(argument as jni::jobject),
        is_static: is_static != 0,
    };
    let elsewhere = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        TAKEOVER
            .get()
            .is_some_and(|takeover| takeover.run_elsewhere(&jni, here))
    }));
    if !matches!(elsewhere, Ok(true)) {
        call_main(&jni, here);
    }
}

/// Calls main() on this thread, through the JVM's `...MethodA` functions
/// (not replaced).
fn call_main(jni: &JniEnv, call: MainCall) {
    let arguments: Vec<jni::jvalue> = call
        .argument
        .map(|l| jni::jvalue { l })
        .into_iter()
        .collect();
    // SAFETY: the method ID and target the launcher passed, with main()'s
    // arguments as it passed them.
    unsafe {
        if call.is_static {
            jni.call_static_void_method(call.target as jni::jclass, call.method, &arguments);
        } else {
            jni.call_void_method(call.target, call.method, &arguments);
        }
    }
}

impl Takeover {
    /// Runs `call` on a new thread and waits for it; false when main() did
    /// not run (the caller runs it here).
    fn run_elsewhere(&'static self, jni: &JniEnv, call: MainCall) -> bool {
        let global = |object: jni::jobject| {
            // SAFETY: a live local reference of this thread (or null).
            unsafe { jni.new_global_ref(object) }
        };
        let shared = MainCall {
            target: global(call.target),
            argument: call.argument.map(global),
            ..call
        };
        let loader = Shared(self.read_own(jni, ThreadField::ContextClassLoader));
        let outcome = std::thread::Builder::new()
            .stack_size(self.stack_bytes)
            .spawn(move || self.stand_in(shared, loader))
            .ok()
            .map(|thread| {
                // A panic on the thread after main() began (its outcome
                // lost) must not run main() a second time here.
                thread.join().unwrap_or(Outcome {
                    ran: MAIN_BEGAN.load(Ordering::Acquire),
                    thrown: std::ptr::null_mut(),
                    handler: std::ptr::null_mut(),
                })
            });
        let delete = |object: jni::jobject| {
            if !object.is_null() {
                // SAFETY: a global reference made here or by the thread,
                // used by nothing else.
                unsafe { jni.delete_global_ref(object) };
            }
        };
        delete(loader.0);
        delete(shared.target);
        if let Some(argument) = shared.argument {
            delete(argument);
        }
        let Some(outcome) = outcome.filter(|o| o.ran) else {
            return false;
        };
        if !outcome.handler.is_null() {
            self.write_own(jni, ThreadField::UncaughtExceptionHandler, outcome.handler);
            delete(outcome.handler);
        }
        if !outcome.thrown.is_null() {
            // SAFETY: a live throwable, thrown on this thread.
            let _ = unsafe { jni.throw(outcome.thrown) };
            delete(outcome.thrown);
        }
        true
    }

    /// The new thread: attached as "main", it calls main() and keeps what
    /// main() threw, then detaches.
    fn stand_in(&self, call: MainCall, loader: Shared) -> Outcome {
        let mut outcome = Outcome {
            ran: false,
            thrown: std::ptr::null_mut(),
            handler: std::ptr::null_mut(),
        };
        STAND_IN_FOR.with(|s| s.set(self.serial));
        let Some(jni) = self.vm.attach("main") else {
            return outcome;
        };
        // Detached however this function ends: a thread left attached
        // would keep the JVM from ending (DestroyJavaVM waits for it).
        let _attached = Attached(self.vm);
        MAIN_BEGAN.store(true, Ordering::Release);
        outcome.ran = true;
        if !loader.0.is_null() {
            self.write_own(&jni, ThreadField::ContextClassLoader, loader.0);
        }
        call_main(&jni, call);
        let kept = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            if let Some(thrown) = jni.exception_occurred() {
                jni.exception_clear();
                // SAFETY: the live throwable ExceptionOccurred returned;
                // its local reference goes once a global one holds it.
                unsafe {
                    outcome.thrown = jni.new_global_ref(thrown);
                    jni.delete_local_ref(thrown);
                }
                outcome.handler = self.read_own(&jni, ThreadField::UncaughtExceptionHandler);
            }
        }));
        if kept.is_err() {
            jni.exception_clear();
        }
        outcome
    }

    /// The object in the calling thread's `Thread` field `field` (a
    /// global reference), or null.
    fn read_own(&self, jni: &JniEnv, field: ThreadField) -> jni::jobject {
        let Some((thread, id)) = self.own_field(jni, field) else {
            return std::ptr::null_mut();
        };
        // SAFETY: `thread` is this thread's live Thread, `id` one of its
        // object fields; the local references go once a global one holds
        // the value.
        unsafe {
            let value = jni.get_object_field(thread, id);
            jni.delete_local_ref(thread);
            if value.is_null() {
                return value;
            }
            let global = jni.new_global_ref(value);
            jni.delete_local_ref(value);
            global
        }
    }

    /// Writes `value` into the calling thread's `Thread` field `field`
    /// (in the field, as the setter would, without running the program's
    /// security checks).
    fn write_own(&self, jni: &JniEnv, field: ThreadField, value: jni::jobject) {
        if let Some((thread, id)) = self.own_field(jni, field) {
            // SAFETY: `thread` is this thread's live Thread, `id` its field
            // of `value`'s type.
            unsafe {
                jni.set_object_field(thread, id, value);
                jni.delete_local_ref(thread);
            }
        }
    }

    /// The calling thread's `Thread` (a local reference) and its field.
    fn own_field(&self, jni: &JniEnv, field: ThreadField) -> Option<(jni::jobject, jni::jfieldID)> {
        let thread = self.jvmti.env().get_current_thread().ok()?;
        if thread.is_null() {
            return None;
        }
        let (name, signature) = field.name_and_signature();
        // SAFETY: `thread` is a live local reference to a Thread; GetFieldID
        // searches its class and the superclasses.
        let id = unsafe {
            let class = jni.get_object_class(thread);
            let id = jni.get_field_id(class, name, signature);
            jni.delete_local_ref(class);
            id
        };
        if id.is_none() {
            jni.exception_clear();
            // SAFETY: the local reference GetCurrentThread made.
            unsafe { jni.delete_local_ref(thread) };
        }
        Some((thread, id?))
    }
}

/// The fields of `java.lang.Thread` (JDK 11 to 25) the thread running
/// main() shares with the launcher's.
#[derive(Clone, Copy)]
enum ThreadField {
    /// What `getContextClassLoader` returns: the launcher's thread has the
    /// application class loader, an attached thread none.
    ContextClassLoader,
    /// What `setUncaughtExceptionHandler` sets.
    UncaughtExceptionHandler,
}

impl ThreadField {
    fn name_and_signature(self) -> (&'static str, &'static str) {
        match self {
            Self::ContextClassLoader => ("contextClassLoader", "Ljava/lang/ClassLoader;"),
            Self::UncaughtExceptionHandler => (
                "uncaughtExceptionHandler",
                "Ljava/lang/Thread$UncaughtExceptionHandler;",
            ),
        }
    }
}
