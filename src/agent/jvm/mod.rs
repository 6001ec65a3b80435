//! Thin helpers over JVMTI and JNI that the collectors share: the boundary
//! between the agent and the JVM. The unsafe code that talks to the JVM
//! lives here and in two siblings, each block with its reason:
//! `jvm/timing_tracker.rs` (the JNI calls into the cpu=times Tracker class) and
//! `jvm/jmm.rs` (the JVM's heap dumper, through its management table or the
//! HotSpotDiagnostic MXBean). Elsewhere are only the calls of the few
//! `unsafe fn`s here (each caller states what their `# Safety` asks) and
//! the calls to the operating system (`modes/cpu_samples/cpu_timers.rs`).
//!
//! The object references these functions take are [`Local`]s: a raw JNI
//! reference together with the lifetime it is live for, so that a
//! function's `// SAFETY:` note states a fact its argument's type holds,
//! not one about its caller. The JVMTI entry points (`mod.rs`) wrap each
//! event's references once, for the duration of the callback; references
//! JVMTI or JNI make are wrapped here, bound to the environment they came
//! from, or owned by an [`OwnedLocal`] that deletes them. The handles kept
//! longer are [`GlobalRef`]s, [`JvmtiHandle`] and [`VmHandle`], each
//! documented as safe to send between threads.

pub mod alloc_tracker;
pub mod class_unloads;
pub mod clone_target;
pub mod collector;
pub mod exit_collection;
pub mod jmm;
pub mod libjvm;
pub mod lock_tracker;
pub mod main_stack;
pub mod native_thread;
pub mod object_tags;
pub mod own_env;
pub mod retransform;
pub mod shared_archive;
pub mod thread_field_env;
pub mod thread_stacks;
pub mod timing_tracker;

use jvmti_bindings::prelude::*;
use jvmti_bindings::sys::jvmti::jvmtiError;
use std::marker::PhantomData;

/// What a [`Local`] or a [`GlobalRef`] refers to. JVMTI checks the type of
/// each reference it is given and reports a wrong one as an error; JNI does
/// not, so for a `String` argument the kind is what says it is one.
pub mod kind {
    /// A `java.lang.Thread`.
    pub enum Thread {}
    /// A `java.lang.Class`.
    pub enum Class {}
    /// A `java.lang.String`.
    pub enum String {}
    /// A `java.lang.ThreadGroup`.
    pub enum ThreadGroup {}
    /// Any object.
    pub enum Object {}
}

/// A JNI reference (or null) that is live for `'cb`: usable in JNI and
/// JVMTI calls on the thread it belongs to until `'cb` ends. A copyable
/// newtype of the raw pointer, as cheap to pass as the pointer itself; not
/// `Send`, as a local reference is bound to its thread.
#[repr(transparent)]
pub struct Local<'cb, K> {
    raw: jni::jobject,
    _live: PhantomData<&'cb ()>,
    _kind: PhantomData<fn() -> K>,
}

// What `repr(transparent)` promises, checked: a `Local` is exactly its raw
// pointer, so passing one costs what passing the pointer did, and a slice
// of them is a slice of `jobject` (see `stacks_of`).
const _: () = assert!(
    std::mem::size_of::<Local<'static, kind::Thread>>() == std::mem::size_of::<jni::jobject>()
        && std::mem::align_of::<Local<'static, kind::Thread>>()
            == std::mem::align_of::<jni::jobject>()
);

/// A thread reference live for `'cb`.
pub type LocalThread<'cb> = Local<'cb, kind::Thread>;
/// A class reference live for `'cb`.
pub type LocalClass<'cb> = Local<'cb, kind::Class>;
/// An object reference live for `'cb`.
pub type LocalObject<'cb> = Local<'cb, kind::Object>;

impl<K> Clone for Local<'_, K> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<K> Copy for Local<'_, K> {}

impl<'cb, K> Local<'cb, K> {
    /// Wraps a raw reference.
    ///
    /// # Safety
    ///
    /// `raw` is null, or a JNI reference (a local reference of the calling
    /// thread, or a global reference) that nothing deletes before `'cb`
    /// ends, nor uses from another thread, to an object of kind `K`.
    #[inline(always)]
    pub unsafe fn new(raw: jni::jobject) -> Self {
        Self {
            raw,
            _live: PhantomData,
            _kind: PhantomData,
        }
    }

    /// The reference, for a JNI or JVMTI call.
    #[inline(always)]
    pub fn raw(self) -> jni::jobject {
        self.raw
    }

    /// True for the null reference.
    #[inline(always)]
    pub fn is_null(self) -> bool {
        self.raw.is_null()
    }
}

impl<K> Local<'static, K> {
    /// The null reference (for JVMTI's thread functions, the current
    /// thread; for a heap walk's class filter, every class).
    pub fn null() -> Self {
        // SAFETY: null is allowed.
        unsafe { Self::new(std::ptr::null_mut()) }
    }
}

/// A string reference live for `'cb`.
pub type LocalString<'cb> = Local<'cb, kind::String>;

/// A local reference the agent made (or JVMTI made for it) and deletes
/// when this is dropped, if a JNI environment was at hand to delete it
/// with; [`Self::get`] lends it out for no longer than that.
pub struct OwnedLocal<'j, K> {
    local: Local<'j, K>,
    jni: Option<&'j JniEnv>,
}

impl<'j, K> OwnedLocal<'j, K> {
    /// Takes ownership of `raw`, to be deleted with `jni` (when Some).
    ///
    /// # Safety
    ///
    /// `raw` is null or a local reference made on the calling thread in its
    /// current native frame, not deleted by anything else, to an object of
    /// kind `K`; `jni` (when Some) is that thread's environment.
    pub unsafe fn new(jni: Option<&'j JniEnv>, raw: jni::jobject) -> Self {
        Self {
            // SAFETY: live until this owner deletes it, which happens only
            // when it is dropped, after every loan of `get` has ended.
            local: unsafe { Local::new(raw) },
            jni,
        }
    }

    /// The reference, for as long as this owner is borrowed.
    pub fn get(&self) -> Local<'_, K> {
        self.local
    }
}

impl<K> Drop for OwnedLocal<'_, K> {
    fn drop(&mut self) {
        if let (Some(jni), false) = (self.jni, self.local.is_null()) {
            // SAFETY: a local reference of this thread that only this owner
            // deletes, once; no loan of it outlives the owner.
            unsafe { jni.delete_local_ref(self.local.raw) };
        }
    }
}

/// The agent's JVMTI environment, usable from any thread attached to the VM
/// (a `jvmtiEnv*` is not thread-bound, unlike a `JNIEnv*`).
#[derive(Clone, Copy)]
pub struct JvmtiHandle(*mut jvmti::jvmtiEnv);

// SAFETY: the JVMTI specification allows a jvmtiEnv to be used from any
// thread; the pointer stays valid until the environment is disposed, which
// this agent never does.
unsafe impl Send for JvmtiHandle {}
// SAFETY: as above; JVMTI functions are thread-safe.
unsafe impl Sync for JvmtiHandle {}

impl JvmtiHandle {
    /// Wraps the environment obtained at load time.
    pub fn new(env: &Jvmti) -> Self {
        Self(env.raw())
    }

    /// The wrapper with the safe(ish) method surface.
    pub fn env(&self) -> Jvmti {
        // SAFETY: the pointer came from a live Jvmti at load time and is never disposed.
        unsafe { Jvmti::from_raw(self.0) }
    }
}

/// One raw frame: method identifier and bytecode index.
pub type RawFrame = (u64, i64);

/// The top `depth` frames of `thread` (innermost first). Empty on any error,
/// for a thread with no Java frames, or when `depth` is 0.
pub fn stack_frames(env: &Jvmti, thread: LocalThread<'_>, depth: u32) -> Vec<RawFrame> {
    if depth == 0 {
        return Vec::new();
    }
    let max = depth.min(i32::MAX as u32) as i32;
    // SAFETY: `thread` is live (a `Local`) or null for the current thread;
    // JVMTI checks that it is a thread.
    match unsafe { env.get_stack_trace(thread.raw(), 0, max) } {
        Ok(frames) => frames
            .iter()
            .map(|f| (f.method as u64, f.location))
            .collect(),
        Err(_) => Vec::new(),
    }
}

/// Name, group name and parent group name of a thread.
pub struct ThreadFacts {
    pub name: String,
    pub group: String,
    pub parent_group: Option<String>,
}

/// The CPU time `thread` has used, in ns; None when it has ended (or the
/// JVM lacks `can_get_thread_cpu_time`).
pub fn thread_cpu_time(env: &Jvmti, thread: LocalThread<'_>) -> Option<i64> {
    // SAFETY: `thread` is a live reference (a `Local`); JVMTI reports a
    // thread that has ended as an error.
    unsafe { env.get_thread_cpu_time(thread.raw()) }.ok()
}

/// JVMTI's state bits of `thread` (`JVMTI_THREAD_STATE_*`); None when
/// JVMTI cannot tell.
pub fn thread_state(env: &Jvmti, thread: LocalThread<'_>) -> Option<i32> {
    // SAFETY: `thread` is a live reference (a `Local`); a thread that has
    // ended is reported in the bits (TERMINATED), not as an error.
    unsafe { env.get_thread_state(thread.raw()) }.ok()
}

/// What JVMTI says about `thread`; empty names where it cannot tell.
pub fn thread_facts(env: &Jvmti, thread: LocalThread<'_>) -> ThreadFacts {
    // SAFETY: `thread` is live (a `Local`) or null for the current thread.
    let info = unsafe { env.get_thread_info(thread.raw()) }.ok();
    let name = info
        .as_ref()
        .and_then(|i| i.name.clone())
        .unwrap_or_default();
    let group = info.as_ref().map_or(Local::null(), |i| {
        // SAFETY: a local reference GetThreadInfo just made on this thread
        // (or null), which nothing deletes: live as `declaring_class`'s.
        unsafe { Local::new(i.thread_group) }
    });
    let (group, parent) = group_facts(env, group);
    let parent_group = (!parent.is_null()).then(|| group_facts(env, parent).0);
    ThreadFacts {
        name,
        group,
        parent_group,
    }
}

/// The name and the parent (null for none) of a thread group.
fn group_facts<'e>(
    env: &'e Jvmti,
    group: Local<'_, kind::ThreadGroup>,
) -> (String, Local<'e, kind::ThreadGroup>) {
    if group.is_null() {
        return (String::new(), Local::null());
    }
    // SAFETY: `group` is non-null and live (a `Local`).
    match unsafe { env.get_thread_group_info(group.raw()) } {
        Ok(info) => {
            // SAFETY: a local reference GetThreadGroupInfo just made on this
            // thread (or null), which nothing deletes: live as
            // `declaring_class`'s.
            let parent = unsafe { Local::new(info.parent) };
            (info.name.unwrap_or_default(), parent)
        }
        Err(_) => (String::new(), Local::null()),
    }
}

/// The JVMTI tag of `object` (0 = untagged or error).
pub fn tag_of<K>(env: &Jvmti, object: Local<'_, K>) -> u64 {
    if object.is_null() {
        return 0;
    }
    // SAFETY: `object` is non-null and live (a `Local`).
    unsafe { env.get_tag(object.raw()) }.map_or(0, |t| t as u64)
}

/// Tags `object` with `tag`.
pub fn set_tag<K>(env: &Jvmti, object: Local<'_, K>, tag: u64) -> Result<(), jvmtiError> {
    if object.is_null() {
        return Err(jvmtiError::NULL_POINTER);
    }
    // SAFETY: `object` is non-null and live (a `Local`).
    unsafe { env.set_tag(object.raw(), tag as jni::jlong) }
}

/// The identity hash code of `object` (the one `System.identityHashCode`
/// returns; asking installs it, which changes nothing the program sees).
pub fn identity_hash(env: &Jvmti, object: LocalObject<'_>) -> Option<i32> {
    if object.is_null() {
        return None;
    }
    // SAFETY: `object` is non-null and live (a `Local`).
    unsafe { env.get_object_hash_code(object.raw()) }.ok()
}

/// The tag a census gives for a moment to the arrays it finds (bit 62:
/// not an allocation tag, and above every identifier the agent makes).
const CENSUS_TAG: i64 = 1 << 62;

/// Every untagged primitive array of `class` (an array class; null for
/// all) of at least `min_bytes` alive now, as (identity hash, size). Walks
/// the heap (a pause, as any heap walk; naming the class spares the JVM a
/// tag lookup for every other object), tags what it finds for a moment to
/// get references to it, and clears the tags.
pub fn census_large_arrays(
    env: &Jvmti,
    jni: &JniEnv,
    class: LocalClass<'_>,
    min_bytes: u64,
) -> Result<Vec<(i32, u64)>, jvmtiError> {
    unsafe extern "system" fn mark(
        _class_tag: jni::jlong,
        size: jni::jlong,
        tag_ptr: *mut jni::jlong,
        _elements: jni::jint,
        _element_type: jvmti::jvmtiPrimitiveType,
        _values: *const std::ffi::c_void,
        user_data: *mut std::ffi::c_void,
    ) -> jni::jint {
        // SAFETY: `user_data` is the `min_bytes` passed to IterateThroughHeap
        // below, alive for the whole walk; `tag_ptr` is the JVM's pointer
        // to this object's tag, writable during the callback.
        unsafe {
            if size as u64 >= *(user_data as *const u64) {
                *tag_ptr = CENSUS_TAG;
            }
        }
        0
    }
    let callbacks = jvmti::jvmtiHeapCallbacks {
        array_primitive_value_callback: Some(mark),
        ..Default::default()
    };
    // SAFETY: the callback table and `min_bytes` outlive the call; the
    // callback only writes the tag the JVM hands it; `class` is live (a
    // `Local`) or null for every class.
    unsafe {
        env.iterate_through_heap(
            jvmti::JVMTI_HEAP_FILTER_TAGGED,
            class.raw(),
            &callbacks,
            &min_bytes as *const u64 as *const std::ffi::c_void,
        )?;
    }
    let (objects, _) = env.get_objects_with_tags(&[CENSUS_TAG])?;
    let mut found = Vec::with_capacity(objects.len());
    for raw in objects {
        // SAFETY: a local reference GetObjectsWithTags just made on this
        // thread, deleted only by this owner.
        let owned: OwnedLocal<'_, kind::Object> = unsafe { OwnedLocal::new(Some(jni), raw) };
        let object = owned.get();
        if let (Some(hash), Some(size)) = (identity_hash(env, object), object_size(env, object)) {
            found.push((hash, size));
        }
        let _ = set_tag(env, object, 0);
    }
    Ok(found)
}

/// The size in bytes of `object` as the JVM counts it (JVMTI
/// GetObjectSize); None if the JVM cannot say.
pub fn object_size(env: &Jvmti, object: LocalObject<'_>) -> Option<u64> {
    // SAFETY: `object` is live (a `Local`).
    let size = unsafe { env.get_object_size(object.raw()) }.ok()?;
    u64::try_from(size).ok()
}

/// `System.exit(status)` on this thread: shutdown hooks run and VM death
/// follows. Returns only if it could not be called or threw (a security
/// manager may forbid it); its exception is then cleared, never left to
/// the program.
pub fn call_system_exit(jni: &JniEnv, status: i32) {
    if let Some(system) = find_class(jni, "java/lang/System") {
        let class = system.get().raw() as jni::jclass;
        // SAFETY: `class` is java.lang.System, live while `system` is held;
        // exit(I)V is its public static method in every JDK; an exception
        // it throws is cleared below.
        unsafe {
            if let Some(exit) = jni.get_static_method_id(class, "exit", "(I)V") {
                jni.call_static_void_method(class, exit, &[jni::jvalue { i: status }]);
            }
        }
    }
    if jni.exception_check() {
        jni.exception_clear();
    }
}

/// The JVM signature of a class, e.g. `Ljava/lang/String;`.
pub fn class_signature(env: &Jvmti, class: LocalClass<'_>) -> Option<String> {
    // SAFETY: `class` is live (a `Local`) or null, which JVMTI reports as
    // an invalid class.
    unsafe { env.get_class_signature(class.raw()) }
        .ok()
        .map(|(sig, _)| sig)
}

/// The constant pool of a class, its entries as a class file holds them
/// (without their count); None when JVMTI gives none (an array, a class not
/// yet prepared, no `can_get_constant_pool`).
pub fn constant_pool(env: &Jvmti, class: LocalClass<'_>) -> Option<Vec<u8>> {
    // SAFETY: as in `class_signature`.
    unsafe { env.get_constant_pool(class.raw()) }.ok()
}

/// The source file attribute of a class, if it has one.
pub fn source_file(env: &Jvmti, class: LocalClass<'_>) -> Option<String> {
    // SAFETY: as in `class_signature`.
    unsafe { env.get_source_file_name(class.raw()) }.ok()
}

/// Name and signature of a method.
pub fn method_name(env: &Jvmti, method: u64) -> Option<(String, String)> {
    // SAFETY: `method` is a jmethodID taken from a stack trace of a loaded
    // class; JVMTI reports an error (not a crash) for a stale one.
    unsafe { env.get_method_name(method as jni::jmethodID) }
        .ok()
        .map(|(name, sig, _)| (name, sig))
}

/// The class declaring a method: a local reference JVMTI makes on this
/// thread, live until the thread's current native frame ends (the
/// callback returns, or the agent's thread detaches), which is after any
/// borrow of `env` taken within it. Nothing deletes it.
pub fn declaring_class(env: &Jvmti, method: u64) -> Option<LocalClass<'_>> {
    // SAFETY: as in `method_name`.
    let raw = unsafe { env.get_method_declaring_class(method as jni::jmethodID) }.ok()?;
    // SAFETY: a local reference just made on this thread, live as said
    // above; the agent never deletes it.
    Some(unsafe { Local::new(raw) })
}

/// A method's line table as (start location, line) pairs; empty when absent.
pub fn line_table(env: &Jvmti, method: u64) -> Vec<(i64, i32)> {
    // SAFETY: as in `method_name`.
    match unsafe { env.get_line_number_table(method as jni::jmethodID) } {
        Ok(table) => table
            .iter()
            .map(|e| (e.start_location, e.line_number))
            .collect(),
        Err(_) => Vec::new(),
    }
}

/// Every class currently loaded, as local references deleted (with `jni`,
/// when there is one) as each is dropped.
pub fn loaded_classes<'e>(
    env: &'e Jvmti,
    jni: Option<&'e JniEnv>,
) -> Vec<OwnedLocal<'e, kind::Class>> {
    let classes = env.get_loaded_classes().unwrap_or_default();
    if let Some(jni) = jni {
        // The frame now holds a local reference per class: room for them
        // and a few more (-Xcheck:jni warns past the 16 every frame has).
        let room = jni::jint::try_from(classes.len()).unwrap_or(jni::jint::MAX);
        if jni.ensure_local_capacity(room.saturating_add(32)).is_err() {
            clear_exception(jni);
        }
    }
    classes
        .into_iter()
        // SAFETY: local references GetLoadedClasses just made on this
        // thread, each deleted only by its owner.
        .map(|raw| unsafe { OwnedLocal::new(jni, raw) })
        .collect()
}

/// Gives every method of `class` its jmethodID now (JVMTI's
/// GetClassMethods creates them), so that a stack walked in a signal
/// handler, where none can be created, can name them. A class not yet
/// prepared is an error JVMTI reports, ignored: its ClassPrepare comes.
pub fn create_method_ids(env: &Jvmti, class: LocalClass<'_>) {
    // SAFETY: `class` is live (a `Local`) or null, which JVMTI reports as
    // an invalid class; the returned array is freed by the wrapper.
    let _ = unsafe { env.get_class_methods(class.raw()) };
}

/// The jmethodIDs of `class`'s methods (none when JVMTI refuses).
pub fn method_ids(env: &Jvmti, class: LocalClass<'_>) -> Vec<u64> {
    // SAFETY: `class` is live (a `Local`) or null, which JVMTI reports as
    // an invalid class; the returned array is freed by the wrapper.
    let methods = unsafe { env.get_class_methods(class.raw()) };
    methods
        .map(|m| m.into_iter().map(|id| id as u64).collect())
        .unwrap_or_default()
}

/// Classes on the path the JVM runs after an agent transforms a class of a
/// named module: `jdk.internal.module.Modules.transformedByAgent` makes the
/// module read the unnamed modules, through `Module.implAddReads` and a
/// `WeakPairMap`. Transforming one of them while it is first loaded on that
/// path starts the path again, inside itself: a ClassCircularityError for
/// `java/lang/WeakPairMap$Pair$Weak`, remembered by the JVM for good, so
/// every later `Module.addReads` fails with it (JFR's start-up among them:
/// "Failure when starting JFR on_create_vm_3").
pub fn is_module_reads_path(name: &str) -> bool {
    const PREFIXES: [&str; 3] = [
        "java/lang/WeakPairMap",
        "java/lang/Module",
        "jdk/internal/module/Modules",
    ];
    PREFIXES.iter().any(|prefix| name.starts_with(prefix))
}

/// Whether `method` (a jmethodID) is native; false when JVMTI cannot tell.
pub fn is_native_method(env: &Jvmti, method: u64) -> bool {
    // SAFETY: `method` is a jmethodID of a loaded class (JVMTI reports an
    // invalid one as an error, taken as false).
    unsafe { env.is_method_native(method as jni::jmethodID) }.unwrap_or(false)
}

/// Whether `method` (a jmethodID) runs the code its class had before a
/// redefinition changed it; false when JVMTI cannot tell.
pub fn is_method_obsolete(env: &Jvmti, method: u64) -> bool {
    // SAFETY: as `is_native_method`.
    unsafe { env.is_method_obsolete(method as jni::jmethodID) }.unwrap_or(false)
}

/// A new `byte[length]`; its local reference is deleted when the result is
/// dropped. None if the JVM could not make it (an exception is pending).
pub fn new_byte_array(jni: &JniEnv, length: i32) -> Option<OwnedLocal<'_, kind::Object>> {
    let raw = jni.new_byte_array(length)?;
    // SAFETY: a local reference NewByteArray just made on this thread,
    // deleted only by its owner.
    Some(unsafe { OwnedLocal::new(Some(jni), raw) })
}

/// `Runtime.getRuntime().maxMemory()`, or None if it cannot be called.
pub fn max_heap_bytes(jni: &JniEnv) -> Option<i64> {
    let runtime_class = jni.find_class("java/lang/Runtime")?;
    // SAFETY: the class, method identifiers and signatures match
    // java.lang.Runtime's public API, present in every JDK; exceptions are
    // checked and cleared before returning.
    unsafe {
        let get_runtime =
            jni.get_static_method_id(runtime_class, "getRuntime", "()Ljava/lang/Runtime;")?;
        let max_memory = jni.get_method_id(runtime_class, "maxMemory", "()J")?;
        let runtime = jni.call_static_object_method(runtime_class, get_runtime, &[]);
        // (Checked before the next call, as -Xcheck:jni asks.)
        let result = if runtime.is_null() || jni.exception_check() {
            None
        } else {
            Some(jni.call_long_method(runtime, max_memory, &[]))
        };
        if jni.exception_check() {
            jni.exception_clear();
            return None;
        }
        result
    }
}

/// The top frames of `thread` written into `buffer` (innermost first);
/// returns how many. This is the allocation hot path's variant of
/// [`stack_frames`]: it calls JVMTI straight through its function table,
/// with no allocation.
pub fn stack_frames_into(
    env: &Jvmti,
    thread: LocalThread<'_>,
    buffer: &mut [jvmti::jvmtiFrameInfo],
) -> usize {
    if buffer.is_empty() {
        return 0;
    }
    let max = buffer.len().min(i32::MAX as usize) as jni::jint;
    let mut count: jni::jint = 0;
    let raw = env.raw();
    // SAFETY: `raw` is a live jvmtiEnv; its first word is the JVMTI function
    // table, which GetStackTrace is part of from JVMTI 1.0 on. `buffer` has
    // room for `max` frames and `count` is a valid out-pointer; `thread` is
    // live (a `Local`) or null for the current thread.
    let error = unsafe {
        let table = *(raw as *const *const jvmti::jvmtiInterface_1_);
        match (*table).GetStackTrace {
            Some(get_stack_trace) => {
                get_stack_trace(raw, thread.raw(), 0, max, buffer.as_mut_ptr(), &mut count)
            }
            None => return 0,
        }
    };
    if error != jvmtiError::NONE {
        return 0;
    }
    (count.max(0) as usize).min(buffer.len())
}

/// The calling thread's stack below the frames of a tracker class of the
/// agent's (`is_tracker`, at most `tracker_frames` of them on top): the
/// `depth` frames of the program that called into it, innermost first.
pub fn stack_below_tracker(
    env: &Jvmti,
    depth: usize,
    tracker_frames: usize,
    is_tracker: impl Fn(u64) -> bool,
) -> Vec<RawFrame> {
    let mut buffer = vec![jvmti::jvmtiFrameInfo::default(); depth + tracker_frames];
    let count = stack_frames_into(env, LocalThread::null(), &mut buffer);
    buffer[..count]
        .iter()
        .map(|f| (f.method as u64, f.location))
        .skip_while(|&(method, _)| is_tracker(method))
        .take(depth)
        .collect()
}

/// The value this agent stored for `thread` with [`set_thread_value`] (0 if none).
pub fn thread_value(env: &Jvmti, thread: LocalThread<'_>) -> u64 {
    // SAFETY: `thread` is live (a `Local`) or null for the current thread.
    unsafe { env.get_thread_local_storage(thread.raw()) }.map_or(0, |p| p as u64)
}

/// The serial the run registered `thread` under (its thread-local slot
/// holds it, see `run/threads.rs`), 0 if none.
pub fn thread_serial(env: &Jvmti, thread: LocalThread<'_>) -> u32 {
    u32::try_from(thread_value(env, thread)).unwrap_or(0)
}

/// Stores a number in the agent's thread-local slot of `thread`.
pub fn set_thread_value(env: &Jvmti, thread: LocalThread<'_>, value: u64) {
    let value = value as usize as *const std::ffi::c_void;
    // SAFETY: as above; the stored pointer is only ever read back as a number.
    let _ = unsafe { env.set_thread_local_storage(thread.raw(), value) };
}

/// The Java feature release of the running JVM (11, 17, 21...), from the
/// `java.vm.specification.version` property (one of the few JVMTI sees).
pub fn java_feature_version(env: &Jvmti) -> Option<u32> {
    let version = env
        .get_system_property("java.vm.specification.version")
        .ok()?;
    version
        .strip_prefix("1.")
        .unwrap_or(&version)
        .split('.')
        .next()?
        .parse()
        .ok()
}

/// Loads a class by JNI name (e.g. `java/lang/Class`) from the current
/// thread; its local reference is deleted when the result is dropped.
pub fn find_class<'j>(jni: &'j JniEnv, name: &str) -> Option<OwnedLocal<'j, kind::Class>> {
    let class = jni.find_class(name);
    if jni.exception_check() {
        jni.exception_clear();
        return None;
    }
    // SAFETY: a local reference FindClass just made on this thread, deleted
    // only by its owner.
    class.map(|raw| unsafe { OwnedLocal::new(Some(jni), raw) })
}

/// The `JavaVM*` of this process, kept to attach the agent's own threads.
#[derive(Clone, Copy)]
pub struct VmHandle(*mut jni::JavaVM);

// SAFETY: a JavaVM* is process-global and valid until the VM is destroyed;
// the JNI invocation API may be called from any thread.
unsafe impl Send for VmHandle {}
// SAFETY: as above.
unsafe impl Sync for VmHandle {}

impl VmHandle {
    /// Wraps the VM pointer given at load time.
    pub fn new(vm: *mut jni::JavaVM) -> Self {
        Self(vm)
    }

    /// The VM pointer, for an environment of the agent's own.
    pub fn raw(&self) -> *mut jni::JavaVM {
        self.0
    }

    /// Attaches the calling (native) thread as a daemon Java thread named
    /// `name`; returns its JNI environment.
    pub fn attach_daemon(&self, name: &str) -> Option<JniEnv> {
        self.attach_as(name, true)
    }

    /// Attaches the calling (native) thread as a Java thread of the
    /// program, not a daemon, named `name` in the main group.
    pub fn attach(&self, name: &str) -> Option<JniEnv> {
        self.attach_as(name, false)
    }

    fn attach_as(&self, name: &str, daemon: bool) -> Option<JniEnv> {
        let name = std::ffi::CString::new(name).ok()?;
        let mut args = jni::JavaVMAttachArgs {
            version: jni::JNI_VERSION_1_8,
            name: name.as_ptr() as *mut _,
            group: std::ptr::null_mut(),
        };
        let mut env: *mut std::ffi::c_void = std::ptr::null_mut();
        // SAFETY: the VM pointer is live for the whole run (the thread is
        // detached before VM death returns); `args` and `env` outlive the call.
        let result = unsafe {
            let attach = if daemon {
                (**self.0).AttachCurrentThreadAsDaemon
            } else {
                (**self.0).AttachCurrentThread
            };
            attach(
                self.0,
                &mut env,
                &mut args as *mut _ as *mut std::ffi::c_void,
            )
        };
        if result != jni::JNI_OK || env.is_null() {
            return None;
        }
        // SAFETY: a JNIEnv* just returned for this thread by the VM.
        Some(unsafe { JniEnv::from_raw(env as *mut jni::JNIEnv) })
    }

    /// The JNI environment of the calling thread, if it is a Java thread.
    pub fn current_env(&self) -> Option<JniEnv> {
        let mut env: *mut std::ffi::c_void = std::ptr::null_mut();
        // SAFETY: GetEnv only reads the calling thread's attachment state.
        let result = unsafe {
            let get_env = (**self.0).GetEnv;
            get_env(self.0, &mut env, jni::JNI_VERSION_1_8)
        };
        if result != jni::JNI_OK || env.is_null() {
            return None;
        }
        // SAFETY: a JNIEnv* the VM just returned for this thread.
        Some(unsafe { JniEnv::from_raw(env as *mut jni::JNIEnv) })
    }

    /// Detaches the calling thread (attached with [`Self::attach_daemon`]).
    pub fn detach(&self) {
        // SAFETY: called on a thread this agent attached, once, before it ends.
        unsafe {
            let detach = (**self.0).DetachCurrentThread;
            detach(self.0);
        }
    }
}

/// A JNI global reference the agent keeps between callbacks, to an object
/// of kind `K`. Unlike a local reference (bound to one thread and one
/// native frame), a global reference is valid on every thread attached to
/// the VM until it is deleted.
pub struct GlobalRef<K> {
    raw: jni::jobject,
    _kind: PhantomData<fn() -> K>,
}

impl<K> Clone for GlobalRef<K> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<K> Copy for GlobalRef<K> {}

// SAFETY: JNI allows a global reference to be used from any attached thread;
// the agent deletes one only once no other thread can still use it (see
// each owner).
unsafe impl<K> Send for GlobalRef<K> {}
// SAFETY: as above; using a global reference does not mutate it.
unsafe impl<K> Sync for GlobalRef<K> {}

impl<K> GlobalRef<K> {
    /// A new global reference to `object`.
    pub fn new(jni: &JniEnv, object: Local<'_, K>) -> Self {
        Self {
            // SAFETY: `object` is live on this thread (a `Local`).
            raw: unsafe { jni.new_global_ref(object.raw()) },
            _kind: PhantomData,
        }
    }

    /// The reference, for JNI and JVMTI calls.
    pub fn raw(self) -> jni::jobject {
        self.raw
    }

    /// The reference as a [`Local`] for as long as this copy is borrowed:
    /// [`delete_global`] forbids using any copy after it.
    pub fn local(&self) -> Local<'_, K> {
        // SAFETY: a global reference to a `K`, usable on every attached
        // thread until it is deleted; deleting it is `delete_global`'s,
        // whose caller guarantees no copy is used afterwards.
        unsafe { Local::new(self.raw) }
    }
}

/// Drops a global reference.
///
/// # Safety
///
/// No copy of `global` may be used afterwards, and it is deleted once:
/// the JVM may reuse the slot for another object.
pub unsafe fn delete_global<K>(jni: &JniEnv, global: GlobalRef<K>) {
    if !global.raw.is_null() {
        // SAFETY: a global reference this agent created; the caller
        // guarantees it is deleted once and not used after.
        unsafe { jni.delete_global_ref(global.raw) };
    }
}

/// A `long` field of `java.lang.Thread`, found once and read on any
/// thread.
#[derive(Clone, Copy)]
pub struct ThreadLongField(jni::jfieldID);

// SAFETY: a field identifier stays valid on every thread while its class
// is loaded; java.lang.Thread never unloads.
unsafe impl Send for ThreadLongField {}
// SAFETY: as above; the identifier is only read.
unsafe impl Sync for ThreadLongField {}

impl ThreadLongField {
    /// Thread's `long` field `name`, when it has one.
    pub fn find(jni: &JniEnv, name: &str) -> Option<Self> {
        let Some(thread) = find_class(jni, "java/lang/Thread") else {
            jni.exception_clear();
            return None;
        };
        // SAFETY: `thread` is a live local reference to a class; a missing
        // field raises NoSuchFieldError, cleared here.
        let field = unsafe { jni.get_field_id(thread.get().raw(), name, "J") };
        if clear_exception(jni) {
            return None;
        }
        field.map(Self)
    }

    /// Its value in `thread` (None for a null reference).
    pub fn read(&self, jni: &JniEnv, thread: LocalThread<'_>) -> Option<i64> {
        if thread.is_null() {
            return None;
        }
        // SAFETY: `thread` is a live reference to a java.lang.Thread, and
        // the field is Thread's own `long` field.
        Some(unsafe { jni.get_long_field(thread.raw(), self.0) })
    }
}

/// `text` as a Java string held by a global reference (made ahead of the
/// moment it is needed, when the JVM may not be able to make one).
pub fn new_global_string(jni: &JniEnv, text: &str) -> Option<GlobalRef<kind::String>> {
    let local = new_string(jni, text)?;
    Some(GlobalRef::new(jni, local.get()))
}

/// `text` as a Java string; its local reference is deleted when the result
/// is dropped.
pub fn new_string<'j>(jni: &'j JniEnv, text: &str) -> Option<OwnedLocal<'j, kind::String>> {
    let raw = jni.new_string_utf(text)?;
    // SAFETY: a local reference to a String NewStringUTF just made on this
    // thread, deleted only by its owner.
    Some(unsafe { OwnedLocal::new(Some(jni), raw) })
}

/// The state (JVMTI's thread state bits) and top frames of one thread.
pub struct ThreadStack {
    /// 0 when the thread could not be looked at.
    pub state: i32,
    /// Innermost first.
    pub frames: Vec<RawFrame>,
}

/// The state and top `depth` frames of each of `threads`, in the same
/// order, taken in one call (one pause of the JVM, not one per thread).
pub fn stacks_of(env: &Jvmti, threads: &[LocalThread<'_>], depth: u32) -> Vec<ThreadStack> {
    let max = depth.min(i32::MAX as u32) as i32;
    // SAFETY: `Local` is a `repr(transparent)` wrapper of a `jthread` (its
    // other fields are zero-sized), so the slice's memory is a `[jthread]`.
    let raw: &[jni::jthread] =
        unsafe { std::slice::from_raw_parts(threads.as_ptr().cast(), threads.len()) };
    // SAFETY: the references are live (`Local`s); the JVMTI call reports a
    // thread that has ended in its per-thread state.
    match unsafe { env.get_thread_list_stack_traces(raw, max) } {
        Ok(infos) => infos
            .iter()
            .map(|i| ThreadStack {
                state: i.state,
                frames: i
                    .frames
                    .iter()
                    .map(|f| (f.method as u64, f.location))
                    .collect(),
            })
            .collect(),
        Err(_) => threads
            .iter()
            .map(|_| ThreadStack {
                state: 0,
                frames: Vec::new(),
            })
            .collect(),
    }
}

/// The top `depth` frames of each of `threads` (innermost first), in the
/// same order; an empty list for a thread that cannot be traced or that is
/// not runnable now (sleeping, waiting, blocked on a monitor, parked).
pub fn runnable_stacks_of(
    env: &Jvmti,
    threads: &[LocalThread<'_>],
    depth: u32,
) -> Vec<Vec<RawFrame>> {
    stacks_of(env, threads, depth)
        .into_iter()
        .map(|stack| {
            if stack.state & jvmti::JVMTI_THREAD_STATE_RUNNABLE == 0 {
                Vec::new()
            } else {
                stack.frames
            }
        })
        .collect()
}

/// Threads paused with JVMTI's SuspendThreadList, resumed when this is
/// dropped (also while unwinding). Only JVMTI and JNI may be called while
/// they are paused: a paused thread may hold any of the agent's locks.
pub struct Paused<'a> {
    env: &'a Jvmti,
    /// The threads this pause suspended (not those suspended before).
    threads: Vec<jni::jthread>,
    /// For each thread given, whether this pause suspended it.
    pub by_us: Vec<bool>,
}

/// Pauses `threads`, leaving out the calling thread (which would never be
/// resumed). Nothing is paused when the JVM lacks `can_suspend`.
pub fn pause<'a>(jni: &JniEnv, env: &'a Jvmti, threads: &'a [LocalThread<'_>]) -> Paused<'a> {
    let current = env.get_current_thread().unwrap_or(std::ptr::null_mut());
    let targets: Vec<usize> = (0..threads.len())
        // SAFETY: both references are live or null, which JNI allows here.
        .filter(|&i| current.is_null() || !unsafe { jni.is_same_object(threads[i].raw(), current) })
        .collect();
    if !current.is_null() {
        // SAFETY: a local reference GetCurrentThread made on this thread.
        unsafe { jni.delete_local_ref(current) };
    }
    let raw: Vec<jni::jthread> = targets.iter().map(|&i| threads[i].raw()).collect();
    // SAFETY: live thread references (`Local`s) of this JVM.
    let results = unsafe { env.suspend_thread_list(&raw) }.unwrap_or_default();
    let mut by_us = vec![false; threads.len()];
    let mut paused = Vec::new();
    for ((&index, &thread), result) in targets.iter().zip(&raw).zip(&results) {
        if *result == jvmti::jvmtiError::NONE {
            by_us[index] = true;
            paused.push(thread);
        }
    }
    Paused {
        env,
        threads: paused,
        by_us,
    }
}

impl Drop for Paused<'_> {
    fn drop(&mut self) {
        if !self.threads.is_empty() {
            // SAFETY: the references are those suspended above, still live:
            // the guard borrows the caller's `Local`s.
            let _ = unsafe { self.env.resume_thread_list(&self.threads) };
        }
    }
}

/// Every live Java thread (platform threads: JVMTI does not list virtual
/// ones), as local references deleted as each is dropped.
pub fn all_threads<'j>(jni: &'j JniEnv, env: &Jvmti) -> Vec<OwnedLocal<'j, kind::Thread>> {
    env.get_all_threads()
        .unwrap_or_default()
        .into_iter()
        // SAFETY: local references GetAllThreads just made on this thread,
        // each deleted only by its owner.
        .map(|raw| unsafe { OwnedLocal::new(Some(jni), raw) })
        .collect()
}

/// The class of `object`; its local reference is deleted when the result
/// is dropped. None for null.
pub fn object_class<'j>(
    jni: &'j JniEnv,
    object: LocalObject<'_>,
) -> Option<OwnedLocal<'j, kind::Class>> {
    if object.is_null() {
        return None;
    }
    // SAFETY: `object` is non-null and live on this thread (a `Local`).
    let raw = unsafe { jni.get_object_class(object.raw()) };
    // SAFETY: a local reference GetObjectClass just made on this thread (or
    // null), deleted only by its owner.
    (!raw.is_null()).then(|| unsafe { OwnedLocal::new(Some(jni), raw) })
}

/// The monitors `thread` owns now (its `synchronized` blocks and methods),
/// as local references deleted as each is dropped.
pub fn owned_monitors<'j>(
    jni: &'j JniEnv,
    env: &Jvmti,
    thread: LocalThread<'_>,
) -> Vec<OwnedLocal<'j, kind::Object>> {
    // SAFETY: `thread` is live (a `Local`); JVMTI checks it is a thread.
    unsafe { env.get_owned_monitor_info(thread.raw()) }
        .unwrap_or_default()
        .into_iter()
        // SAFETY: local references GetOwnedMonitorInfo just made on this
        // thread, each deleted only by its owner.
        .map(|raw| unsafe { OwnedLocal::new(Some(jni), raw) })
        .collect()
}

/// Who owns a monitor and who waits for it, as JVMTI tells it.
pub struct MonitorUsage<'j> {
    /// Null when nobody owns it.
    pub owner: OwnedLocal<'j, kind::Thread>,
    pub entry_count: i32,
    /// Threads waiting to own it. (Up to JDK 22 this list also holds the
    /// threads waiting to be notified.)
    pub waiting_to_enter: Vec<OwnedLocal<'j, kind::Thread>>,
    /// Threads in `Object.wait` on it.
    pub waiting_to_be_notified: Vec<OwnedLocal<'j, kind::Thread>>,
}

/// The usage of the monitor of `object`, or None if JVMTI cannot tell.
/// (HotSpot stops the threads to look, with a safepoint or a handshake.)
pub fn monitor_usage<'j>(
    jni: &'j JniEnv,
    env: &Jvmti,
    object: LocalObject<'_>,
) -> Option<MonitorUsage<'j>> {
    if object.is_null() {
        return None;
    }
    // SAFETY: `object` is non-null and live (a `Local`).
    let usage = unsafe { env.get_object_monitor_usage(object.raw()) }.ok()?;
    // SAFETY: local references GetObjectMonitorUsage just made on this
    // thread (or null), each deleted only by its owner.
    let own = |raw| unsafe { OwnedLocal::new(Some(jni), raw) };
    Some(MonitorUsage {
        owner: own(usage.owner),
        entry_count: usage.entry_count,
        waiting_to_enter: usage.waiters.into_iter().map(own).collect(),
        waiting_to_be_notified: usage.notify_waiters.into_iter().map(own).collect(),
    })
}

/// True when two references are to the same object.
pub fn same_object<K>(jni: &JniEnv, a: Local<'_, K>, b: Local<'_, K>) -> bool {
    // SAFETY: both are live (`Local`s) or null, which JNI allows here.
    unsafe { jni.is_same_object(a.raw(), b.raw()) }
}

/// The message of the exception pending on this thread (cleared here, so
/// that it never reaches the program or stderr), or None if there is none
/// or it has no message.
pub fn take_exception_message(jni: &JniEnv) -> Option<String> {
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

/// Clears a pending Java exception; true if there was one.
pub fn clear_exception(jni: &JniEnv) -> bool {
    let pending = jni.exception_check();
    if pending {
        jni.exception_clear();
    }
    pending
}

/// Defines class `name` from `bytes` in the boot loader and holds it by a
/// global reference; `what` names it in the error.
pub fn define_boot_class(
    jni: &JniEnv,
    name: &str,
    bytes: &[u8],
    what: &str,
) -> Result<GlobalRef<kind::Class>, String> {
    // SAFETY: a null loader is the boot loader; the caller passes a class
    // file of this very name.
    let raw = unsafe { jni.define_class(name, std::ptr::null_mut(), bytes) };
    if jni.exception_check() {
        let why = take_exception_message(jni);
        return Err(format!(
            "the {what} class cannot be defined ({})",
            why.unwrap_or_default()
        ));
    }
    let raw = raw.ok_or_else(|| format!("the {what} class cannot be defined"))?;
    // SAFETY: a local reference DefineClass just made on this thread,
    // deleted only by its owner.
    let local: OwnedLocal<'_, kind::Class> = unsafe { OwnedLocal::new(Some(jni), raw) };
    Ok(GlobalRef::new(jni, local.get()))
}
