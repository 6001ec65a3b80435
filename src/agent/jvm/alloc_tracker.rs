//! The agent's side of `hprof_rs/AllocTracker` (heap=sites counted in the
//! bytecode, see `java-tracker/hprof_rs/AllocTracker.java`): it defines the
//! class in the boot loader, reads its counters, and asks the JVM the
//! facts the counters lack (instance sizes, live objects per class). Part
//! of the JVM boundary with `jvm/mod.rs`: the unsafe JNI and JVMTI calls live
//! here, behind safe methods.

use crate::agent::jvm::object_tags::is_allocation_tag;
use crate::agent::jvm::{
    self, GlobalRef, Local, LocalClass, LocalObject, OwnedLocal, kind, retransform,
};
use crate::bci;
use jvmti_bindings::prelude::*;
use rustc_hash::FxHashMap;
use std::collections::HashMap;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicI32, Ordering};

/// What the AllocTracker's native methods hand to the agent. Called on a
/// Java thread from Java code: never panics across (the natives catch),
/// never throws.
/// Where the tracker counts the objects of one class made at one call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MadeSite {
    /// Under this site number, in Java.
    Counted(u32),
    /// Each by [`AllocEvents::made`].
    EachByTheAgent,
    /// Nowhere: the call made none (a `clone()` that ran an override,
    /// whose own `super.clone()` is counted).
    NotHere,
}

impl MadeSite {
    /// The tracker's `madeSite` answer: the number, -1 or -2.
    fn as_jint(self) -> jni::jint {
        match self {
            MadeSite::Counted(n) => jni::jint::try_from(n).unwrap_or(-1),
            MadeSite::EachByTheAgent => -1,
            MadeSite::NotHere => -2,
        }
    }
}

pub trait AllocEvents: Send + Sync {
    /// `object` was made by the VM without a VMObjectAlloc event, by the
    /// call at `site` in calling context `context` (0 without contexts; the
    /// tracker's `made`): count it there.
    fn made(&self, jni: &JniEnv, object: LocalObject<'_>, site: u32, context: u64);
    /// Where the tracker counts objects of `object`'s class made at `site`
    /// (the tracker's `madeSite`, once per site and class).
    fn made_site(&self, jni: &JniEnv, object: LocalObject<'_>, site: u32) -> MadeSite;
    /// A class file generated at run time, with its allocations counted,
    /// or None to leave it as it is.
    fn generated(&self, class_file: &[u8]) -> Option<Vec<u8>>;
    /// Whether calling context `context` names the real callers of
    /// `site`'s method (the tracker's `trusted`, once per new key).
    fn trusted(&self, site: u32, context: u64) -> bool;
    /// One allocation at `site` (of `bytes`, 0 for an instance) under a
    /// context not trusted: count it with this thread's stack.
    fn walked(&self, site: u32, bytes: u64);
    /// One of the first allocations at `site` (of `bytes`, 0 for an
    /// instance), or one the tracker's thinning chose, counted already
    /// (`before` counted there on its stripe before it): keep this
    /// thread's stack as one of the site's traces.
    fn walk_for_trace(&self, site: u32, bytes: u64, before: u64);
}

/// `AllocTracker.trusted(int, long)`: true unless the agent says no.
extern "system" fn trusted_native(
    _env: *mut jni::JNIEnv,
    _tracker: jni::jclass,
    site: jni::jint,
    context: jni::jlong,
) -> jni::jboolean {
    let trusted = std::panic::catch_unwind(|| {
        EVENTS
            .get()
            .is_none_or(|events| events.trusted(site as u32, context as u64))
    });
    jni::jboolean::from(trusted.unwrap_or(true))
}

/// `AllocTracker.walked(int, long)`.
extern "system" fn walked_native(
    _env: *mut jni::JNIEnv,
    _tracker: jni::jclass,
    site: jni::jint,
    bytes: jni::jlong,
) {
    tell_events(|events| events.walked(site as u32, bytes.max(0) as u64));
}

/// Tells the natives' receiver something, a panic contained.
fn tell_events(tell: impl FnOnce(&dyn AllocEvents) + std::panic::UnwindSafe) {
    let _ = std::panic::catch_unwind(|| {
        if let Some(events) = EVENTS.get() {
            tell(*events);
        }
    });
}

/// `AllocTracker.walkForTrace(int, long, long)`.
extern "system" fn walk_for_trace_native(
    _env: *mut jni::JNIEnv,
    _tracker: jni::jclass,
    site: jni::jint,
    bytes: jni::jlong,
    before: jni::jlong,
) {
    tell_events(|events| {
        events.walk_for_trace(site as u32, bytes.max(0) as u64, before.max(0) as u64)
    });
}

/// `AllocTracker.firstWalks()`.
extern "system" fn first_walks_native(_env: *mut jni::JNIEnv, _tracker: jni::jclass) -> jni::jint {
    FIRST_WALKS.load(Ordering::Relaxed)
}

/// How many of each site's first allocations per stripe the tracker has
/// walked (its `firstWalks`), set before it is initialised: 0 for none.
static FIRST_WALKS: AtomicI32 = AtomicI32::new(0);

/// Where the natives send what they are told (set once, at definition).
static EVENTS: OnceLock<&'static dyn AllocEvents> = OnceLock::new();

/// The tracker's keyed table size (its `keySlots`), set before it is
/// initialised: 0 without calling contexts.
static KEY_SLOTS: AtomicI32 = AtomicI32::new(0);

/// Keys of (site, calling context) the tracker counts under: 262,144
/// (8 MiB of Java heap: [`KEY_WORDS`] longs per key).
pub const CONTEXT_KEY_SLOTS: i32 = 1 << 18;

/// The tracker's longs per key in `KEYED`: owner (site + 1, or 0 or
/// negative), calling context, objects, bytes.
const KEY_WORDS: usize = 4;

/// `AllocTracker.keySlots()`.
extern "system" fn key_slots_native(_env: *mut jni::JNIEnv, _tracker: jni::jclass) -> jni::jint {
    KEY_SLOTS.load(Ordering::Relaxed)
}

/// `AllocTracker.unsafeLayout(String, Class)`: jdk.internal.misc.Unsafe's
/// `arrayBaseOffset` or `arrayIndexScale` (the name given) of an array
/// class, or -1. Called through JNI, which checks no module's exports;
/// they return an int up to JDK 24 and a long from JDK 25 on.
extern "system" fn unsafe_layout_native(
    env: *mut jni::JNIEnv,
    _tracker: jni::jclass,
    method: jni::jstring,
    array_class: jni::jclass,
) -> jni::jlong {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // SAFETY: the JNIEnv of this native call, on this thread.
        let jni = unsafe { JniEnv::from_raw(env) };
        let value = unsafe_layout(&jni, method, array_class);
        if jvm::clear_exception(&jni) {
            return -1;
        }
        value.unwrap_or(-1)
    }))
    .unwrap_or(-1)
}

fn unsafe_layout(jni: &JniEnv, method: jni::jstring, array_class: jni::jclass) -> Option<i64> {
    // SAFETY: the String argument of a native call, live until it returns.
    let name = unsafe { jni.get_string_utf(method) }?;
    if name != "arrayBaseOffset" && name != "arrayIndexScale" {
        return None;
    }
    let unsafe_class = jvm::find_class(jni, "jdk/internal/misc/Unsafe")?;
    let class = unsafe_class.get().raw() as jni::jclass;
    // SAFETY: `class` is a live local reference; a missing method raises
    // NoSuchMethodError, which the caller clears.
    let get_unsafe =
        unsafe { jni.get_static_method_id(class, "getUnsafe", "()Ljdk/internal/misc/Unsafe;") }?;
    // SAFETY: getUnsafe takes nothing and returns the Unsafe.
    let instance = unsafe { jni.call_static_object_method(class, get_unsafe, &[]) };
    if instance.is_null() || jni.exception_check() {
        return None;
    }
    let args = [jni::jvalue { l: array_class }];
    // SAFETY: `class` is live; a method of the other return type is looked
    // up when this one is missing (its NoSuchMethodError cleared).
    let value = unsafe {
        match jni.get_method_id(class, &name, "(Ljava/lang/Class;)I") {
            Some(m) if !jni.exception_check() => {
                Some(i64::from(jni.call_int_method(instance, m, &args)))
            }
            _ => {
                jvm::clear_exception(jni);
                jni.get_method_id(class, &name, "(Ljava/lang/Class;)J")
                    .filter(|_| !jni.exception_check())
                    .map(|m| jni.call_long_method(instance, m, &args))
            }
        }
    };
    // SAFETY: the local reference made by getUnsafe, deleted once.
    unsafe { jni.delete_local_ref(instance) };
    value
}

/// `AllocTracker.madeSite(Object, int)`: a site number, -1 (each counted by
/// `madeSlow`) or -2 (nothing to count).
extern "system" fn made_site_native(
    env: *mut jni::JNIEnv,
    _tracker: jni::jclass,
    object: jni::jobject,
    site: jni::jint,
) -> jni::jint {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        if object.is_null() {
            return None;
        }
        // SAFETY: the JNIEnv of this native call, on this thread.
        let jni = unsafe { JniEnv::from_raw(env) };
        // SAFETY: the Object argument of a native call, a local reference
        // live until the call returns, on this thread.
        let object: LocalObject<'_> = unsafe { Local::new(object) };
        Some(EVENTS.get()?.made_site(&jni, object, site as u32).as_jint())
    }))
    .ok()
    .flatten()
    .unwrap_or(-1)
}

/// `AllocTracker.madeSlow(Object, int)`.
extern "system" fn made_native(
    env: *mut jni::JNIEnv,
    tracker: jni::jclass,
    object: jni::jobject,
    site: jni::jint,
) {
    made_in_native(env, tracker, object, site, 0);
}

/// `AllocTracker.madeSlow(Object, int, long)`.
extern "system" fn made_in_native(
    env: *mut jni::JNIEnv,
    _tracker: jni::jclass,
    object: jni::jobject,
    site: jni::jint,
    context: jni::jlong,
) {
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        if object.is_null() {
            return;
        }
        // SAFETY: the JNIEnv of this native call, on this thread.
        let jni = unsafe { JniEnv::from_raw(env) };
        // SAFETY: the Object argument of a native call, a local reference
        // live until the call returns, on this thread.
        let object: LocalObject<'_> = unsafe { Local::new(object) };
        if let Some(events) = EVENTS.get() {
            events.made(&jni, object, site as u32, context as u64);
        }
    }));
}

/// `AllocTracker.generated(byte[])`: the bytes it was given when nothing
/// is to change or anything fails.
extern "system" fn generated_native(
    env: *mut jni::JNIEnv,
    _tracker: jni::jclass,
    class_file: jni::jobject,
) -> jni::jobject {
    let rewritten = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        if class_file.is_null() {
            return None;
        }
        // SAFETY: the JNIEnv of this native call, on this thread.
        let jni = unsafe { JniEnv::from_raw(env) };
        // SAFETY: `class_file` is the byte[] argument, live during the call.
        let length = unsafe { jni.get_array_length(class_file) };
        let mut bytes = vec![0i8; usize::try_from(length).ok()?];
        // SAFETY: as above; the buffer holds `length` bytes.
        unsafe { jni.get_byte_array_region(class_file, 0, length, &mut bytes) };
        if jni.exception_check() {
            jni.exception_clear();
            return None;
        }
        let bytes: Vec<u8> = bytes.into_iter().map(|b| b as u8).collect();
        let new = EVENTS.get()?.generated(&bytes)?;
        let new_length = i32::try_from(new.len()).ok()?;
        let array = jni.new_byte_array(new_length);
        if jni.exception_check() {
            jni.exception_clear();
            return None;
        }
        let array = array?;
        let signed: Vec<i8> = new.into_iter().map(|b| b as i8).collect();
        // SAFETY: `array` is the new byte[] of `new_length` bytes, a local
        // reference returned to the caller (the JVM frees it then).
        unsafe { jni.set_byte_array_region(array, 0, new_length, &signed) };
        Some(array)
    }));
    rewritten.ok().flatten().unwrap_or(class_file)
}

/// The AllocTracker, defined and initialised.
#[derive(Clone, Copy)]
pub struct AllocTracker {
    class: GlobalRef<kind::Class>,
    pages: jni::jfieldID,
    failure: jni::jfieldID,
    /// `KEYED`: per slot, [`KEY_WORDS`] longs (owner, context, objects,
    /// bytes).
    keyed: jni::jfieldID,
}

/// The tracker's own methods (jmethodIDs), which head the stacks its
/// natives see.
static TRACKER_METHODS: OnceLock<std::collections::HashSet<u64>> = OnceLock::new();

/// Whether `method` is one of the tracker's own.
pub fn is_tracker_method(method: u64) -> bool {
    TRACKER_METHODS.get().is_some_and(|m| m.contains(&method))
}

// SAFETY: a field identifier stays valid on every thread while its class is
// loaded; the class is in the boot loader, never unloaded, and `class` is a
// global reference to it.
unsafe impl Send for AllocTracker {}
// SAFETY: as above; the identifiers are only read.
unsafe impl Sync for AllocTracker {}

/// Objects and bytes counted at one site.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SiteCount {
    pub objects: u64,
    pub bytes: u64,
}

impl AllocTracker {
    /// Defines the class in the boot loader, exports the JDK's internal
    /// Unsafe to it, registers its natives (reporting to `events`), and
    /// initialises it (looking up a static field does), before any class
    /// that calls it exists. Once per run.
    pub fn define(
        env: &Jvmti,
        jni: &JniEnv,
        events: &'static dyn AllocEvents,
        key_slots: i32,
        first_walks: i32,
    ) -> Result<Self, String> {
        if EVENTS.set(events).is_err() {
            return Err("the allocation tracker is defined already".into());
        }
        KEY_SLOTS.store(key_slots, Ordering::Relaxed);
        FIRST_WALKS.store(first_walks, Ordering::Relaxed);
        // (The bytes are class files of these very names: tests/bci_run.rs.)
        // The nested class first: the boot loader could not find it later.
        jvm::define_boot_class(
            jni,
            bci::ALLOC_TRACKER_MADE_AT_CLASS,
            bci::ALLOC_TRACKER_MADE_AT_CLASS_FILE,
            "allocation tracker's cache",
        )?;
        let class = jvm::define_boot_class(
            jni,
            bci::ALLOC_TRACKER_CLASS,
            bci::ALLOC_TRACKER_CLASS_FILE,
            "allocation tracker",
        )?;
        export_internal_unsafe(env, jni, class)?;
        register_natives(jni, class)?;

        let field = |(name, signature): (&str, &str)| {
            // SAFETY: `class` is the AllocTracker, held by a global
            // reference; the lookup initialises it (JNI GetStaticFieldID).
            let id =
                unsafe { jni.get_static_field_id(class.raw() as jni::jclass, name, signature) };
            if jni.exception_check() {
                let why = jvm::take_exception_message(jni);
                return Err(format!(
                    "the allocation tracker cannot be initialised ({})",
                    why.unwrap_or_default()
                ));
            }
            id.ok_or_else(|| format!("the allocation tracker has no field {name}"))
        };
        let tracker = Self {
            class,
            pages: field(bci::ALLOC_TRACKER_PAGES_FIELD)?,
            failure: field(bci::ALLOC_TRACKER_FAILURE_FIELD)?,
            keyed: field(("KEYED", "[J"))?,
        };
        // (Initialised by the field lookups, so prepared: JVMTI lists the
        // methods of a prepared class only.)
        // SAFETY: `class` is held by a global reference; the local one
        // made from it lives for this call only.
        let local = unsafe { Local::new(class.raw() as jni::jclass) };
        let mut own: std::collections::HashSet<u64> =
            jvm::method_ids(env, local).into_iter().collect();
        // The early gate's methods head the stacks of the classes rewritten
        // before VM init, as the tracker's own do (when it was defined).
        if let Some(gate) = jvm::find_class(jni, bci::EARLY_GATE_CLASS) {
            own.extend(jvm::method_ids(env, gate.get()));
        }
        let _ = TRACKER_METHODS.set(own);
        Ok(tracker)
    }

    /// The keyed counts: (site, calling context, count) of every key
    /// counted so far.
    pub fn read_keyed(&self, jni: &JniEnv) -> Vec<(u32, u64, SiteCount)> {
        let slots = KEY_SLOTS.load(Ordering::Relaxed).max(0) as usize;
        if slots == 0 {
            return Vec::new();
        }
        // SAFETY: the tracker's static `long[]` field KEYED.
        let raw =
            unsafe { jni.get_static_object_field(self.class.raw() as jni::jclass, self.keyed) };
        if raw.is_null() {
            return Vec::new();
        }
        // SAFETY: a local reference just made on this thread, deleted by
        // its owner.
        let table: OwnedLocal<'_, kind::Object> = unsafe { OwnedLocal::new(Some(jni), raw) };
        // Read a block of slots at a time: the table is large (a quarter
        // of a million slots, 8 MiB) and mostly empty, and a copy of it
        // whole cost a short program's exit several milliseconds of page
        // faults.
        const BLOCK: usize = 8192;
        let mut words = vec![0i64; KEY_WORDS * BLOCK.min(slots)];
        let mut keyed = Vec::new();
        for first in (0..slots).step_by(BLOCK) {
            let len = BLOCK.min(slots - first);
            // SAFETY: KEYED is a live array of `KEY_WORDS * slots` longs
            // (the tracker made it from the same KEY_SLOTS); the region read
            // lies inside it and the buffer holds `KEY_WORDS * len` longs.
            unsafe {
                jni.get_long_array_region(
                    table.get().raw(),
                    (KEY_WORDS * first) as i32,
                    (KEY_WORDS * len) as i32,
                    &mut words[..KEY_WORDS * len],
                );
            }
            if jvm::clear_exception(jni) {
                return Vec::new();
            }
            keyed.extend(
                words[..KEY_WORDS * len]
                    .chunks_exact(KEY_WORDS)
                    .filter_map(|slot| {
                        let [owner, context, objects, bytes] = [slot[0], slot[1], slot[2], slot[3]];
                        (owner > 0 && objects > 0).then(|| {
                            let count = SiteCount {
                                objects: objects as u64,
                                bytes: bytes as u64,
                            };
                            ((owner - 1) as u32, context as u64, count)
                        })
                    }),
            );
        }
        keyed
    }

    /// The counts of sites `0..sites`, stripes summed.
    pub fn read_counts(&self, jni: &JniEnv, sites: usize) -> Vec<SiteCount> {
        const PER_PAGE: usize = bci::ALLOC_TRACKER_SITES_PER_PAGE;
        const STRIPES: usize = bci::ALLOC_TRACKER_STRIPES;
        let mut counts = vec![SiteCount::default(); sites];
        // SAFETY: `pages` is the tracker's static `long[][]` field.
        let raw =
            unsafe { jni.get_static_object_field(self.class.raw() as jni::jclass, self.pages) };
        if raw.is_null() {
            return counts;
        }
        // SAFETY: a local reference just made on this thread, deleted only
        // by its owner.
        let pages: OwnedLocal<'_, kind::Object> = unsafe { OwnedLocal::new(Some(jni), raw) };
        let mut buffer = vec![0i64; 2 * STRIPES * PER_PAGE];
        for (page, chunk) in counts.chunks_mut(PER_PAGE).enumerate() {
            // SAFETY: `pages` is a live `long[][]`; the index is below its
            // length (the tracker's MAX_PAGES bounds the site numbers).
            let raw = unsafe { jni.get_object_array_element(pages.get().raw(), page as i32) };
            if jni.exception_check() {
                jni.exception_clear();
                break;
            }
            if raw.is_null() {
                continue; // no site of this page has counted yet
            }
            // SAFETY: as for `pages`.
            let counters: OwnedLocal<'_, kind::Object> = unsafe { OwnedLocal::new(Some(jni), raw) };
            // SAFETY: `counters` is a live `long[]` of exactly this length.
            unsafe {
                jni.get_long_array_region(counters.get().raw(), 0, buffer.len() as i32, &mut buffer)
            };
            if jni.exception_check() {
                jni.exception_clear();
                continue;
            }
            for (k, count) in chunk.iter_mut().enumerate() {
                for stripe in 0..STRIPES {
                    let at = 2 * (stripe * PER_PAGE + k);
                    count.objects += buffer[at] as u64;
                    count.bytes += buffer[at + 1] as u64;
                }
            }
        }
        counts
    }

    /// The class of the first failure that left allocations uncounted, if
    /// any (`Ljava/lang/OutOfMemoryError;`).
    pub fn failure(&self, env: &Jvmti, jni: &JniEnv) -> Option<String> {
        // SAFETY: `failure` is the tracker's static Throwable field.
        let raw =
            unsafe { jni.get_static_object_field(self.class.raw() as jni::jclass, self.failure) };
        if raw.is_null() {
            return None;
        }
        // SAFETY: a local reference just made on this thread.
        let throwable: OwnedLocal<'_, kind::Object> = unsafe { OwnedLocal::new(Some(jni), raw) };
        let class = jvm::object_class(jni, throwable.get());
        let name = class
            .as_ref()
            .and_then(|c| jvm::class_signature(env, c.get()))
            .unwrap_or_else(|| "an error".into());
        Some(name)
    }
}

/// `java.lang.Thread`'s calling-context field.
#[derive(Clone, Copy)]
pub struct ContextField(jvm::ThreadLongField);

impl ContextField {
    /// The field, when `java.lang.Thread` has it (added as the JVM loaded
    /// the class: without it, code keeping contexts would fail to link).
    pub fn find(jni: &JniEnv) -> Option<Self> {
        let (name, signature) = bci::CONTEXT_FIELD;
        debug_assert_eq!(signature, "J");
        jvm::ThreadLongField::find(jni, name).map(Self)
    }

    /// The window `thread` holds now.
    pub fn read(&self, jni: &JniEnv, thread: jvm::LocalThread<'_>) -> Option<u64> {
        self.0.read(jni, thread).map(|window| window as u64)
    }
}

/// Defines `bci::CONTEXT_ACCESSOR_CLASS`, the class through which rewritten
/// code reaches Thread's context field (package-private, so only classes of
/// `java.lang` can), in the boot loader, before any class that calls it
/// exists. Once per run, and only when Thread has the field. (Held for the
/// run: a boot class never unloads anyway.)
pub fn define_context_accessor(jni: &JniEnv) -> Result<(), String> {
    let bytes = bci::context_accessor_class_file()?;
    jvm::define_boot_class(
        jni,
        bci::CONTEXT_ACCESSOR_CLASS,
        &bytes,
        "calling-context accessor",
    )
    .map(drop)
}

/// The call sites the maker calls of each thread wrote, in the slot form
/// of the accessor (`bci::slot_accessor_class_file`): for a
/// `java.lang.Thread` without the context field.
#[derive(Clone, Copy)]
pub struct WindowSlots(GlobalRef<kind::Object>);

impl WindowSlots {
    /// Defines the accessor in its slot form, in the boot loader, before
    /// any class that calls it exists, and finds its array of slots.
    pub fn define(jni: &JniEnv) -> Result<Self, String> {
        let bytes = bci::slot_accessor_class_file()?;
        let class = jvm::define_boot_class(
            jni,
            bci::CONTEXT_ACCESSOR_CLASS,
            &bytes,
            "maker-call accessor",
        )?;
        let (name, signature) = bci::WINDOW_SLOTS_FIELD;
        // SAFETY: `class` is a live global reference to the class just
        // defined, which declares this static field; JNI initialises the
        // class (its <clinit> makes the array) on GetStaticFieldID.
        let field = unsafe { jni.get_static_field_id(class.raw() as jni::jclass, name, signature) };
        if jvm::clear_exception(jni) {
            return Err("the maker-call accessor's slots cannot be found".into());
        }
        let field = field.ok_or("the maker-call accessor has no slots")?;
        // SAFETY: the class's static `long[]` field, read once.
        let raw = unsafe { jni.get_static_object_field(class.raw() as jni::jclass, field) };
        if raw.is_null() {
            jvm::clear_exception(jni);
            return Err("the maker-call accessor's slots were not made".into());
        }
        // SAFETY: a local reference just made on this thread, deleted by its owner.
        let slots: OwnedLocal<'_, kind::Object> = unsafe { OwnedLocal::new(Some(jni), raw) };
        // (Held for the run: the accessor, a boot class, never unloads.)
        Ok(Self(GlobalRef::new(jni, slots.get())))
    }

    /// The call site of the maker call `thread` is in, when its slot holds
    /// one of its own.
    pub fn read(&self, env: &Jvmti, jni: &JniEnv, thread: jvm::LocalThread<'_>) -> Option<u64> {
        // SAFETY: a thread is an object; the reference stays the caller's.
        let object: jvm::LocalObject<'_> = unsafe { jvm::Local::new(thread.raw()) };
        let hash = jvm::identity_hash(env, object)?;
        let mut word = [0i64];
        // SAFETY: the slots are a live `long[]` of `bci::WINDOW_SLOTS`
        // words, and the index is below that.
        unsafe {
            jni.get_long_array_region(self.0.raw(), bci::slot_index(hash) as i32, 1, &mut word);
        }
        if jvm::clear_exception(jni) {
            return None;
        }
        bci::slot_call_site(word[0] as u64, hash).map(u64::from)
    }
}

/// Registers the tracker's natives: `made` (both), `keySlots`, `trusted`,
/// `walked`, `walkForTrace`, `firstWalks` and `generated`.
fn register_natives(jni: &JniEnv, class: GlobalRef<kind::Class>) -> Result<(), String> {
    let names = [
        (
            c"madeSlow",
            c"(Ljava/lang/Object;I)V",
            made_native as *mut std::ffi::c_void,
        ),
        (
            c"madeSlow",
            c"(Ljava/lang/Object;IJ)V",
            made_in_native as *mut std::ffi::c_void,
        ),
        (
            c"keySlots",
            c"()I",
            key_slots_native as *mut std::ffi::c_void,
        ),
        (
            c"trusted",
            c"(IJ)Z",
            trusted_native as *mut std::ffi::c_void,
        ),
        (c"walked", c"(IJ)V", walked_native as *mut std::ffi::c_void),
        (
            c"walkForTrace",
            c"(IJJ)V",
            walk_for_trace_native as *mut std::ffi::c_void,
        ),
        (
            c"firstWalks",
            c"()I",
            first_walks_native as *mut std::ffi::c_void,
        ),
        (
            c"madeSite",
            c"(Ljava/lang/Object;I)I",
            made_site_native as *mut std::ffi::c_void,
        ),
        (
            c"unsafeLayout",
            c"(Ljava/lang/String;Ljava/lang/Class;)J",
            unsafe_layout_native as *mut std::ffi::c_void,
        ),
        (
            c"generated",
            c"([B)[B",
            generated_native as *mut std::ffi::c_void,
        ),
    ];
    let methods: Vec<jni::JNINativeMethod> = names
        .iter()
        .map(|(name, signature, function)| jni::JNINativeMethod {
            name: name.as_ptr() as *mut _,
            signature: signature.as_ptr() as *mut _,
            fnPtr: *function,
        })
        .collect();
    // SAFETY: `class` is the AllocTracker, held by a global reference; the
    // names and signatures are those of its native methods, and the
    // functions have the matching JNI signatures.
    let registered = unsafe { jni.register_natives(class.raw() as jni::jclass, &methods) };
    if registered.is_err() || jni.exception_check() {
        jni.exception_clear();
        return Err("the allocation tracker's natives cannot be registered".into());
    }
    Ok(())
}

impl AllocTracker {
    /// Turns the early gate on (`bci::EARLY_GATE_CLASS`, defined at the
    /// JVM's start): java.base, the gate's module, is made to read the
    /// tracker's, then the gate passes the counting calls of the classes
    /// rewritten before VM init on to the tracker.
    /// (`contexts`: whether the gate passes on the context calls, as it
    /// was defined.)
    pub fn open_early_gate(&self, env: &Jvmti, jni: &JniEnv, contexts: bool) -> Result<(), String> {
        let failed = |why: String| format!("the early gate cannot be opened: {why}");
        // SAFETY: a null loader names the boot loader, whose java/lang
        // package is java.base's; the module is a local reference, deleted below.
        let java_base = unsafe { env.get_named_module(std::ptr::null_mut(), "java/lang") }
            .map_err(|e| failed(format!("{e:?}")))?;
        let module = module_of(jni, self.class);
        let read = match module {
            Some(module) if !java_base.is_null() => {
                // SAFETY: both modules are live local references.
                let read = unsafe { env.add_module_reads(java_base, module) };
                // SAFETY: a local reference made above, deleted once.
                unsafe { jni.delete_local_ref(module) };
                read.map_err(|e| failed(format!("{e:?}")))
            }
            _ => Err(failed("no module".into())),
        };
        if !java_base.is_null() {
            // SAFETY: as above.
            unsafe { jni.delete_local_ref(java_base) };
        }
        read?;
        let gate = jvm::find_class(jni, bci::EARLY_GATE_CLASS)
            .ok_or_else(|| failed("the gate is not defined".into()))?;
        let (name, signature) = bci::EARLY_GATE_SWITCH;
        // SAFETY: `gate` is a live local reference to a class; a missing
        // field raises NoSuchFieldError, cleared here.
        let switch = unsafe { jni.get_static_field_id(gate.get().raw(), name, signature) };
        if jni.exception_check() {
            jni.exception_clear();
        }
        let switch = switch.ok_or_else(|| failed("the gate has no switch".into()))?;
        // SAFETY: the gate's own static boolean field.
        unsafe { jni.set_static_boolean_field(gate.get().raw(), switch, true) };
        // Then the switch goes: redefined, each method is the call alone,
        // which the JIT inlines as it would the tracker's. (Should that
        // fail, the switched methods work as well, a field test slower.)
        if let Ok(bytes) = bci::early_gate_class_file(bci::ALLOC_TRACKER_CLASS, false, contexts)
            && let Ok(count) = jni::jint::try_from(bytes.len())
        {
            let definition = jvmti::jvmtiClassDefinition {
                klass: gate.get().raw(),
                class_byte_count: count,
                class_bytes: bytes.as_ptr(),
            };
            // SAFETY: the gate is a live local reference to a class, and the
            // bytes outlive the call.
            let _ = unsafe { env.redefine_classes(std::slice::from_ref(&definition)) };
        }
        Ok(())
    }
}

/// The module of `class` (a local reference), if it can be read.
fn module_of(jni: &JniEnv, class: GlobalRef<kind::Class>) -> Option<jni::jobject> {
    // SAFETY: `class` is a live global reference to a Class; getModule is
    // java.lang.Class's public method of this signature (JDK 9 and up).
    let module = unsafe {
        let class_class = jni.get_object_class(class.raw());
        let get_module = jni.get_method_id(class_class, "getModule", "()Ljava/lang/Module;");
        jni.delete_local_ref(class_class);
        get_module.map(|m| jni.call_object_method(class.raw(), m, &[]))
    };
    if jni.exception_check() {
        jni.exception_clear();
        return None;
    }
    module.filter(|m| !m.is_null())
}

/// Exports `jdk.internal.misc` (the JDK's internal Unsafe) from java.base
/// to the module of `class` (the boot loader's unnamed module).
///
/// Through `java.lang.Module.addExports0`, the private native behind
/// `Module.addExports` that tells the JVM, not through JVMTI's
/// AddModuleExports: that one runs `Module.implAddExportsOrOpens`, whose
/// lambda bootstraps java.lang.invoke on the first use, about 20 ms of a
/// small program's start (measured on JDK 17). The JVM's own table is what
/// links the tracker's calls to Unsafe; the Java-side record the JVMTI path
/// also writes serves reflection only, which the tracker does not use.
fn export_internal_unsafe(
    env: &Jvmti,
    jni: &JniEnv,
    class: GlobalRef<kind::Class>,
) -> Result<(), String> {
    let failed = |why: &str| {
        format!("jdk.internal.misc cannot be exported to the allocation tracker ({why})")
    };
    // SAFETY: a null loader names the boot loader, whose java/lang package
    // is java.base's; the module is a local reference, deleted below.
    let java_base = unsafe { env.get_named_module(std::ptr::null_mut(), "java/lang") }
        .map_err(|e| failed(&format!("{e:?}")))?;
    if java_base.is_null() {
        return Err(failed("no java.base"));
    }
    let result = match module_of(jni, class) {
        Some(module) => {
            let exported = add_exports(jni, java_base, "jdk.internal.misc", module);
            // SAFETY: a local reference made by module_of, deleted once.
            unsafe { jni.delete_local_ref(module) };
            exported.map_err(|why| failed(&why))
        }
        None => Err(failed("no module")),
    };
    // SAFETY: as above.
    unsafe { jni.delete_local_ref(java_base) };
    result
}

/// Calls `java.lang.Module.addExports0(from, package, to)` (a private
/// static native of every JDK from 9 on; JNI ignores access), with the
/// package's dotted name.
fn add_exports(
    jni: &JniEnv,
    from: jni::jobject,
    package: &str,
    to: jni::jobject,
) -> Result<(), String> {
    let module_class = jvm::find_class(jni, "java/lang/Module").ok_or("no java.lang.Module")?;
    let class = module_class.get().raw() as jni::jclass;
    // SAFETY: `class` is a live local reference; a missing method raises
    // NoSuchMethodError, cleared below.
    let method = unsafe {
        jni.get_static_method_id(
            class,
            "addExports0",
            "(Ljava/lang/Module;Ljava/lang/String;Ljava/lang/Module;)V",
        )
    };
    let method = method
        .filter(|_| !jvm::clear_exception(jni))
        .ok_or("no Module.addExports0")?;
    let name = jni.new_string_utf(package).ok_or("no string")?;
    let args = [
        jni::jvalue { l: from },
        jni::jvalue { l: name },
        jni::jvalue { l: to },
    ];
    // SAFETY: the method takes (Module, String, Module) and returns void;
    // `from` and `to` are live Module references and `name` a String.
    unsafe { jni.call_static_void_method(class, method, &args) };
    let thrown = jvm::clear_exception(jni);
    // SAFETY: the local reference made above, deleted once.
    unsafe { jni.delete_local_ref(name) };
    if thrown {
        return Err("Module.addExports0 threw".into());
    }
    Ok(())
}

/// Makes one `java.lang.Object` with the call `rule` names (one of
/// `bci::VM_MAKER_RULES`), on this thread, and drops it; false when this
/// JVM has no such call (nothing calls it then) or it failed.
pub fn make_one_with(jni: &JniEnv, rule: &bci::CallRule) -> bool {
    let Some(object_class) = jvm::find_class(jni, "java/lang/Object") else {
        return false;
    };
    let Some(owner) = jvm::find_class(jni, rule.owner) else {
        jni.exception_clear();
        return false;
    };
    let (object_class, owner) = (object_class.get().raw(), owner.get().raw());
    // SAFETY: both classes are live local references owned above; the
    // methods are looked up by the exact name and descriptor of the rule
    // and called with arguments of those types (JNI ignores the module
    // boundary); each result is a local reference deleted here; a pending
    // exception is cleared.
    let made = unsafe {
        match rule.name {
            "allocateInstance" => jni
                .get_static_method_id(owner, "getUnsafe", "()Ljdk/internal/misc/Unsafe;")
                .map(|get| jni.call_static_object_method(owner, get, &[]))
                // (Checked before the next call, as -Xcheck:jni asks.)
                .filter(|unsafe_object| !unsafe_object.is_null() && !jni.exception_check())
                .and_then(|unsafe_object| {
                    let made = jni
                        .get_method_id(owner, rule.name, rule.descriptor)
                        .map(|m| {
                            jni.call_object_method(
                                unsafe_object,
                                m,
                                &[jni::jvalue { l: object_class }],
                            )
                        });
                    jni.delete_local_ref(unsafe_object);
                    made
                }),
            "newInstance0" => jni
                .get_method_id(object_class, "<init>", "()V")
                .and_then(|init| jni.to_reflected_method(object_class, init, false))
                .and_then(|constructor| {
                    let made = jni
                        .get_static_method_id(owner, rule.name, rule.descriptor)
                        .map(|m| {
                            jni.call_static_object_method(
                                owner,
                                m,
                                &[
                                    jni::jvalue { l: constructor },
                                    jni::jvalue {
                                        l: std::ptr::null_mut(),
                                    },
                                ],
                            )
                        });
                    jni.delete_local_ref(constructor);
                    made
                }),
            _ => None,
        }
    };
    if jni.exception_check() {
        jni.exception_clear();
        return false;
    }
    match made {
        Some(object) if !object.is_null() => {
            // SAFETY: a local reference the call just returned.
            unsafe { jni.delete_local_ref(object) };
            true
        }
        _ => false,
    }
}

/// The size of an instance of `class`, from a blank one made for the
/// purpose (JNI AllocObject runs no constructor) when that is harmless:
/// not for a class that overrides `finalize()` (the blank object would be
/// finalized), nor an abstract one. None when it cannot be told.
pub fn instance_size(env: &Jvmti, jni: &JniEnv, class: LocalClass<'_>) -> Option<u64> {
    if overrides_finalize(env, jni, class) {
        return None;
    }
    // SAFETY: `class` is live (a `Local`); AllocObject makes an object
    // without running any Java code of the class beyond its initialiser,
    // which ran already (the program allocated an instance).
    let raw = unsafe { jni.alloc_object(class.raw() as jni::jclass) };
    if jni.exception_check() {
        jni.exception_clear();
        return None;
    }
    // SAFETY: a local reference just made on this thread.
    let object: OwnedLocal<'_, kind::Object> = unsafe { OwnedLocal::new(Some(jni), raw?) };
    // SAFETY: `object` is live.
    let size = unsafe { env.get_object_size(object.get().raw()) }.ok()?;
    u64::try_from(size).ok()
}

/// Whether `class` or a superclass other than `Object` declares
/// `finalize()` (or it cannot be told).
fn overrides_finalize(env: &Jvmti, jni: &JniEnv, class: LocalClass<'_>) -> bool {
    // SAFETY: `class` is live; a missing method is reported as null plus a
    // pending NoSuchMethodError, cleared here.
    let method = unsafe { jni.get_method_id(class.raw() as jni::jclass, "finalize", "()V") };
    if jni.exception_check() {
        jni.exception_clear();
        return true;
    }
    let Some(method) = method else {
        return true;
    };
    jvm::declaring_class(env, method as u64)
        .and_then(|declaring| jvm::class_signature(env, declaring))
        .is_none_or(|signature| signature != "Ljava/lang/Object;")
}

/// The tag of the objects that were in the heap when the counting began
/// (bit 62, like the large-array census's, plus a low bit of its own:
/// neither an allocation tag nor an identifier the agent makes).
const PRESENT_AT_START: i64 = (1 << 62) | 2;

/// Tags every untagged object in the heap now as [`PRESENT_AT_START`], so
/// that [`live_by_class`] leaves out what was made before the counting
/// began; all but class objects (instances of the class tagged
/// `class_class_tag`), whose tags are the agent's identifiers for them.
/// One walk of the heap (a pause; the heap is small at VM init).
pub fn mark_present_objects(env: &Jvmti, class_class_tag: u64) -> Result<(), jvmti::jvmtiError> {
    unsafe extern "system" fn mark(
        class_tag: jni::jlong,
        _size: jni::jlong,
        tag_ptr: *mut jni::jlong,
        _length: jni::jint,
        user_data: *mut std::ffi::c_void,
    ) -> jni::jint {
        // SAFETY: `user_data` is the tag passed to IterateThroughHeap below,
        // alive for the whole walk; `tag_ptr` is the JVM's pointer to this
        // object's tag, writable during the callback.
        unsafe {
            if class_tag as u64 != *(user_data as *const u64) {
                *tag_ptr = PRESENT_AT_START;
            }
        }
        0
    }
    let callbacks = jvmti::jvmtiHeapCallbacks {
        heap_iteration_callback: Some(mark),
        ..Default::default()
    };
    // SAFETY: the callback table and the tag outlive the call; the
    // callback only writes the tag the JVM hands it.
    unsafe {
        env.iterate_through_heap(
            jvmti::JVMTI_HEAP_FILTER_TAGGED,
            std::ptr::null_mut(),
            &callbacks,
            &class_class_tag as *const u64 as *const std::ffi::c_void,
        )
    }
}

/// What one walk of the heap finds of the objects made since the counting
/// began: those that carry no tag or a sample's allocation tag (not the
/// mark of those present at start, nor an identifier of the agent's).
#[derive(Default)]
pub struct LiveInHeap {
    /// Live objects and bytes per tagged class, by class tag (Fx: the walk
    /// updates it once per object in the heap).
    pub by_class: FxHashMap<u64, (u64, u64)>,
    /// Live objects per sample tag.
    pub sample_tags: FxHashMap<u64, u64>,
}

/// The live objects made since the counting began: one walk of the heap
/// (a pause, as any heap walk).
pub fn live_by_class(env: &Jvmti) -> Result<LiveInHeap, jvmti::jvmtiError> {
    unsafe extern "system" fn count(
        class_tag: jni::jlong,
        size: jni::jlong,
        tag_ptr: *mut jni::jlong,
        _length: jni::jint,
        user_data: *mut std::ffi::c_void,
    ) -> jni::jint {
        // SAFETY: `tag_ptr` is the JVM's pointer to this object's tag,
        // readable during the callback.
        let tag = unsafe { *tag_ptr } as u64;
        if tag != 0 && !is_allocation_tag(tag) {
            return 0;
        }
        // SAFETY: `user_data` is the LiveInHeap passed to IterateThroughHeap
        // below, alive and used by nothing else for the whole walk, which
        // runs the callback on this thread.
        let live = unsafe { &mut *(user_data as *mut LiveInHeap) };
        let entry = live.by_class.entry(class_tag as u64).or_default();
        entry.0 += 1;
        entry.1 += size.max(0) as u64;
        if tag != 0 {
            *live.sample_tags.entry(tag).or_default() += 1;
        }
        0
    }
    let mut live = LiveInHeap::default();
    let callbacks = jvmti::jvmtiHeapCallbacks {
        heap_iteration_callback: Some(count),
        ..Default::default()
    };
    // SAFETY: the callback table and the result outlive the call; the
    // callback only updates the result.
    unsafe {
        env.iterate_through_heap(
            jvmti::JVMTI_HEAP_FILTER_CLASS_UNTAGGED,
            std::ptr::null_mut(),
            &callbacks,
            &mut live as *mut LiveInHeap as *const std::ffi::c_void,
        )?;
    }
    Ok(live)
}

/// Every loaded class the JVM lets be modified is retransformed (the
/// ClassFileLoadHook, enabled before, sees each again); returns the error
/// of the last class the JVM refused, if any.
pub fn retransform_loaded_classes(env: &Jvmti, jni: &JniEnv) -> Option<jvmti::jvmtiError> {
    retransform::loaded_classes(env, jni, |_, _| true).refused
}

/// Loaded classes by JVM signature (`Ljava/lang/String;`, `[I`), for the
/// signatures `wanted` only; the first class of each name wins. A class
/// defined from generated bytes under a name of its own (a hidden class,
/// `LFoo$$Lambda.0x0000000800c0b000;`, or on JDK 11 a VM-anonymous one,
/// `LFoo$$Lambda$14/380894366;`) also answers for the name its class file
/// gave it, which its own `new`s were counted under, when no class has
/// that name.
pub fn classes_named<'e>(
    env: &'e Jvmti,
    jni: &'e JniEnv,
    wanted: &std::collections::HashSet<String>,
) -> HashMap<String, OwnedLocal<'e, kind::Class>> {
    let mut found = HashMap::new();
    let mut generated = HashMap::new();
    for class in jvm::loaded_classes(env, Some(jni)) {
        let Some(signature) = jvm::class_signature(env, class.get()) else {
            continue;
        };
        if wanted.contains(&signature) {
            found.entry(signature).or_insert(class);
        } else if let Some(named) = class_file_name_of_generated(&signature)
            && wanted.contains(&named)
        {
            generated.entry(named).or_insert(class);
        }
    }
    for (named, class) in generated {
        found.entry(named).or_insert(class);
    }
    found
}

/// The signature a generated class's file named it by, from the name the
/// JVM gave it: `LFoo$$Lambda.0x0000000800c0b000;` (hidden, JDK 15 and
/// up) and `LFoo$$Lambda$14/380894366;` (VM-anonymous, JDK 11) give
/// `LFoo$$Lambda;` and `LFoo$$Lambda$14;`; None for any other name.
fn class_file_name_of_generated(signature: &str) -> Option<String> {
    let name = signature.strip_prefix('L')?.strip_suffix(';')?;
    let (package, simple) = name.rsplit_once('/').unwrap_or(("", name));
    let base = if let Some((base, _)) = simple.split_once(".0x") {
        if package.is_empty() {
            base.to_owned()
        } else {
            format!("{package}/{base}")
        }
    } else if !package.is_empty() && simple.bytes().all(|b| b.is_ascii_digit()) {
        // A Java name never starts with a digit: this is the JVM's suffix.
        package.to_owned()
    } else {
        return None;
    };
    Some(format!("L{base};"))
}

#[cfg(test)]
mod tests {
    use super::class_file_name_of_generated;

    #[test]
    fn generated_classes_answer_for_their_class_files_names() {
        let named = |s: &str| class_file_name_of_generated(s);
        assert_eq!(
            named("Lcom/acme/Foo$$Lambda.0x0000000800c0b000;").as_deref(),
            Some("Lcom/acme/Foo$$Lambda;")
        );
        assert_eq!(
            named("LFoo$$Lambda.0x0000000800c0b000;").as_deref(),
            Some("LFoo$$Lambda;")
        );
        assert_eq!(
            named("Lcom/acme/Foo$$Lambda$14/380894366;").as_deref(),
            Some("Lcom/acme/Foo$$Lambda$14;")
        );
        assert_eq!(named("Lcom/acme/Foo;"), None);
        assert_eq!(named("Ljava/lang/String;"), None);
        assert_eq!(named("[I"), None);
    }
}
