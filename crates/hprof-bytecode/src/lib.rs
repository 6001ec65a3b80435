//! Class-file rewriting for `cpu=times`/`cpu=old`: pure, bytes in, bytes out.
//!
//! [`rewrite_class`] injects, like HPROF's `java_crw_demo`, straight-line
//! static calls into every method that has code:
//!
//! ```text
//! entry:          ldc[_w] <class number>; <push method number>; invokestatic Tracker.CallSite(II)V
//! before *return: ldc[_w] <class number>; <push method number>; invokestatic Tracker.ReturnSite(II)V
//! ```
//!
//! and, with [`Injection::leaf`], into a leaf (a method with no invoke
//! instruction) the clock on entry and one call at its end instead:
//!
//! ```text
//! entry:          invokestatic Tracker.leafStart()J; lstore <max_locals>
//! before *return: ldc[_w] <class number>; <push method number>; lload <max_locals>; invokestatic Tracker.LeafSite(IIJ)V
//! ```
//!
//! The class number goes into the constant pool as a `CONSTANT_Integer`
//! (agents use large numbers); the method number, the method's index in the
//! class's `methods` table, is pushed with `iconst_<n>`, `bipush` or
//! `sipush` (`ldc` past 32767). Nothing is injected before `athrow`; with
//! [`Injection::exit_on_throw`] (cpu=times) a method left by an exception
//! runs the exit call too, from a catch-all handler appended to its code
//! (`<exit call>; athrow`, the last entry of its exception table, so the
//! method's own handlers come first), which rethrows the same object:
//! HPROF instead asked the JVM for an event at every catch, which makes
//! HotSpot deoptimize each frame an exception leaves. `max_stack` grows by
//! 2 (to 3 at least with the handler), a leaf's by 4 (5); locals are
//! untouched but a leaf's, which gain the `long` of its start.
//!
//! Everything that holds a code offset is relocated: branch and switch
//! targets (with switch padding recomputed), the exception table,
//! LineNumberTable, LocalVariableTable, LocalVariableTypeTable and the
//! StackMapTable. Branches that no longer reach are widened (`goto_w`, or an
//! inverted conditional over a `goto_w`), adding the stack map frame the
//! new branch target needs. Which new offset each kind of old offset maps to
//! (and why a jump to a `return` lands on its exit call but an exception
//! range ending at one does not cover it) is spelled out in `relocate.rs`;
//! frame re-encoding in `stackmap.rs`.
//!
//! A method is left untouched, and reported with the reason, when it has no
//! code (abstract, native), is an empty `finalize()` (HotSpot registers
//! every instance of a class for finalization unless the `finalize()` it
//! inherits is exactly `return`; `Object`'s is), would pass 65535 bytes of
//! code, holds `jsr`/`ret`
//! in a class of version 51 or later (where they are illegal), or shows
//! anything else unexpected (a branch into the middle of an instruction, a
//! malformed table, …): the rewriter never emits a method it is not sure
//! of. Code type annotations (`Runtime[In]VisibleTypeAnnotations` inside
//! `Code`) are dropped rather than relocated: the JVM never reads them there.
//! Other unknown attributes are copied unchanged. Classes of versions 45
//! (Java 1.1) to 69 (Java 25) are accepted; those before 50 have no stack
//! maps, and their `jsr`/`ret` subroutines are relocated like any branch.
//!
//! Interfaces are instrumented like classes (their static, private and
//! default methods have code; HPROF skipped interfaces altogether). The
//! tracker class itself is never instrumented. Output is deterministic: the
//! same input gives the same bytes.
//!
//! [`Injection::tracker`] is what `cpu=times`/`cpu=old` inject; the class
//! it calls is embedded as [`TRACKER_CLASS_FILE`] (see
//! `java-tracker/hprof_rs/Tracker.java` for what the agent must do).
//!
//! [`rewrite_passing_first_argument`] is the other mode, for `monitor=y`:
//! calls that pass a method's first argument (`aload_0; invokestatic`) go
//! into a few selected static methods only (`LockSupport`'s parks,
//! [`PARK_METHODS`]), calling [`Injection::lock_tracker`]'s class, embedded
//! as [`LOCK_TRACKER_CLASS_FILE`].
//!
//! Modules: `bytes` (byte order), `constant_pool`, `class_file` (structure),
//! `code` (instruction decoding), `types` (verification types,
//! descriptors), `stackmap` (StackMapTable codec), `simulate` (the frame a
//! widened branch needs), `relocate` (new offsets, widening, emission),
//! `inject` (one method), `writer` (the class), `tracker` and `lock_tracker`
//! (the Java sides).

#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod bytes;
mod call_context;
mod class_file;
mod code;
mod constant_pool;
mod context_accessor;
mod count;
mod early_gate;
mod generators;
mod inject;
mod lock_tracker;
mod made_class;
mod relocate;
mod simulate;
mod stackmap;
#[cfg(test)]
mod tests;
mod tracker;
mod types;
mod uncounted;
mod writer;

pub use call_context::{
    CALL_SITE_BITS, ContextScope, HUGE_METHOD_LIMIT, MAX_CALL_SITE, WINDOW_CALL_SITES,
    add_context_field, context_key, makes_objects_in_the_vm, window_call_sites,
};
pub use context_accessor::{
    CONTEXT_ACCESSOR_CLASS, CONTEXT_FIELD, SET_WINDOW, TAKE_WINDOW, WINDOW_SLOTS_FIELD,
    context_accessor_class_file, is_agent_class, slot_accessor_class_file, slot_call_site,
    slot_index,
};
pub use count::{
    ALLOC_TRACKER_CLASS, ALLOC_TRACKER_CLASS_FILE, ALLOC_TRACKER_FAILURE_FIELD,
    ALLOC_TRACKER_MADE_AT_CLASS, ALLOC_TRACKER_MADE_AT_CLASS_FILE, ALLOC_TRACKER_PAGES_FIELD,
    ALLOC_TRACKER_SITES_PER_PAGE, ALLOC_TRACKER_STRIPES, Allocated, AllocationSite, CALL_RULES,
    CLONE_RULE, CallAction, CallRule, CallSite, CloneCall, CountingOutcome, MAX_SITE,
    REFERENCE_ELEMENT, VM_MAKER_RULES, rewrite_counting_allocations,
    rewrite_counting_allocations_through_gate, rewrite_counting_allocations_with,
};
pub use early_gate::{EARLY_GATE_CLASS, EARLY_GATE_SWITCH, early_gate_class_file};
pub use generators::{generates_classes, is_generator_owner};
pub use lock_tracker::{
    LOCK_TRACKER_BLOCKED, LOCK_TRACKER_CLASS, LOCK_TRACKER_CLASS_FILE, LOCK_TRACKER_ENGAGED_FIELD,
    LOCK_TRACKER_REGISTER, LOCK_TRACKER_SITE, PARK_METHODS,
};
pub use tracker::{
    TRACKER_CLASS, TRACKER_CLASS_FILE, TRACKER_CLOCK_FIELD, TRACKER_DEPTH_FIELD, TRACKER_DRAIN,
    TRACKER_ENDED, TRACKER_ENGAGED_FIELD, TRACKER_FIRST_CALL_NATIVE, TRACKER_PRIME,
    TRACKER_REPORTS_FIRST_CALLS_FIELD, TRACKER_RESET,
};
pub use uncounted::uncounted_methods;

use std::fmt;

use class_file::{ACC_STATIC, ClassFile};
use constant_pool::{decode_modified_utf8, encode_modified_utf8};
use inject::{Calls, ClassFacts, MethodFacts, Passed};

/// The descriptor every injected method must have: it is called with the
/// class number and the method number.
pub const CALL_DESCRIPTOR: &str = "(II)V";

/// The descriptor of the injected methods of
/// [`rewrite_passing_first_argument`]: they are called with the
/// instrumented method's first argument.
pub const ARGUMENT_CALL_DESCRIPTOR: &str = "(Ljava/lang/Object;)V";

/// What to inject.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Injection {
    /// Internal name of the class holding the static methods called, e.g.
    /// `hprof_rs/Tracker`. Never instrumented itself.
    pub tracker_class: String,
    /// Name and descriptor (`(II)V`) of the static method called on entry,
    /// e.g. `("CallSite", "(II)V")`; `None` for no entry call.
    pub entry: Option<(String, String)>,
    /// Name and descriptor (`(II)V`) of the static method called before
    /// each return instruction, e.g. `("ReturnSite", "(II)V")`.
    pub exit: Option<(String, String)>,
    /// Call `exit` also when the method is left by an exception: a
    /// catch-all handler, after every handler of the method's own and
    /// covering its code from after the entry call, calls `exit` and
    /// rethrows. Constructors get none (their code before `super()` runs
    /// with `this` unmade, which a handler over it would have to repeat).
    pub exit_on_throw: bool,
    /// How to time a method that calls no other (a leaf), if differently:
    /// see [`LeafCalls`]. `None`: leaves get `entry` and `exit` like every
    /// other method.
    pub leaf: Option<LeafCalls>,
}

/// The calls injected into a leaf, a method with no invoke instruction
/// (cpu=times): no tracked method can start while it runs, so the tracker
/// need not know it has begun. On entry the clock is read into a local of
/// its own (`invokestatic start; lstore`); before each return, and from the
/// catch-all handler when [`Injection::exit_on_throw`] is set, one call
/// passes the class number, the method number and that reading. One call
/// into the tracker per leaf call instead of two, and no push and pop of
/// its shadow stack.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeafCalls {
    /// Name and descriptor ([`LEAF_START_DESCRIPTOR`]) of the static method
    /// whose result, the clock on entry, the leaf keeps.
    pub start: (String, String),
    /// Name and descriptor ([`LEAF_END_DESCRIPTOR`]) of the static method
    /// called with the class number, the method number and the clock on
    /// entry when the leaf ends.
    pub end: (String, String),
}

/// The descriptor of [`LeafCalls::start`]: it returns the clock.
pub const LEAF_START_DESCRIPTOR: &str = "()J";

/// The descriptor of [`LeafCalls::end`]: class number, method number, the
/// clock on entry.
pub const LEAF_END_DESCRIPTOR: &str = "(IIJ)V";

/// Knobs of [`rewrite_class_with`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RewriteOptions {
    /// Widen every 16-bit branch, whether it needs it or not. Real code
    /// rarely needs widening; tests use this to put every class through the
    /// widening and frame-insertion paths.
    pub widen_all_branches: bool,
}

/// What happened to one method.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MethodInfo {
    /// The method's name (`<init>`, `<clinit>`, …).
    pub name: String,
    /// Its descriptor, e.g. `(I)Ljava/lang/String;`.
    pub descriptor: String,
    /// Its position in the class's `methods` table: the method number the
    /// injected calls pass.
    pub index: u16,
    /// True when the calls were injected.
    pub rewritten: bool,
    /// Why the method was left untouched, when it was.
    pub skip_reason: Option<String>,
}

/// The rewritten class and a report on each method.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RewriteOutcome {
    /// The new class file; the input unchanged when no method was rewritten.
    pub bytes: Vec<u8>,
    /// One entry per method, in class-file order.
    pub methods: Vec<MethodInfo>,
}

/// Why a class could not be rewritten at all (it should then be loaded as
/// it is).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BciError {
    /// The class file ends early (offset of the read that failed).
    Truncated {
        /// Where the missing bytes should have been.
        offset: usize,
    },
    /// The first four bytes are not `CAFEBABE`.
    BadMagic(u32),
    /// A class-file version outside 45..=69.
    UnsupportedVersion {
        /// `major_version`.
        major: u16,
        /// `minor_version`.
        minor: u16,
    },
    /// Something in the class file does not parse.
    Malformed {
        /// Where (0 when not tied to an offset).
        offset: usize,
        /// What.
        what: String,
    },
    /// The [`Injection`] itself is unusable (e.g. a descriptor other than
    /// `(II)V`).
    BadInjection(String),
}

impl fmt::Display for BciError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BciError::Truncated { offset } => write!(f, "class file truncated at offset {offset}"),
            BciError::BadMagic(magic) => write!(f, "not a class file (magic {magic:#010x})"),
            BciError::UnsupportedVersion { major, minor } => {
                write!(f, "unsupported class file version {major}.{minor}")
            }
            BciError::Malformed { offset, what } => {
                write!(f, "malformed class file at offset {offset}: {what}")
            }
            BciError::BadInjection(why) => write!(f, "bad injection: {why}"),
        }
    }
}

impl std::error::Error for BciError {}

/// Injects `injection`'s calls into every method of `class_file` that has
/// code, passing `class_number` and the method's index. Methods that cannot
/// be rewritten safely are left as they are and reported in
/// [`RewriteOutcome::methods`]. Fails only when the class file does not
/// parse (or `injection` is unusable); the class should then be loaded
/// unchanged.
pub fn rewrite_class(
    class_file: &[u8],
    class_number: u32,
    injection: &Injection,
) -> Result<RewriteOutcome, BciError> {
    rewrite_class_with(
        class_file,
        class_number,
        injection,
        &RewriteOptions::default(),
    )
}

/// [`rewrite_class`] with [`RewriteOptions`].
pub fn rewrite_class_with(
    class_file: &[u8],
    class_number: u32,
    injection: &Injection,
    options: &RewriteOptions,
) -> Result<RewriteOutcome, BciError> {
    rewrite(class_file, class_number, injection, options, None)
}

/// Injects `injection`'s calls into the static methods `selected` (name,
/// descriptor) of `class_file` only, passing each call the method's first
/// argument, a reference: `aload_0; invokestatic <entry>` on entry and
/// `aload_0; invokestatic <exit>` before each return. The injected methods
/// take [`ARGUMENT_CALL_DESCRIPTOR`]. A selected method is left untouched
/// (and reported) unless it is static, its first parameter is a reference
/// and its code never stores into local 0, so that local 0 still holds the
/// argument at every return. Every other method is left untouched.
pub fn rewrite_passing_first_argument(
    class_file: &[u8],
    injection: &Injection,
    selected: &[(&str, &str)],
) -> Result<RewriteOutcome, BciError> {
    rewrite(
        class_file,
        0,
        injection,
        &RewriteOptions::default(),
        Some(selected),
    )
}

/// Whether a method takes part in a rewrite that passes the first argument
/// (`None`: it does), or why not.
fn first_argument_refusal(
    name: &str,
    descriptor: &str,
    is_static: bool,
    selected: &[(&str, &str)],
) -> Option<&'static str> {
    if !selected.contains(&(name, descriptor)) {
        Some("not selected")
    } else if !is_static {
        Some("not static: local 0 is `this`")
    } else if !(descriptor.starts_with("(L") || descriptor.starts_with("([")) {
        Some("its first parameter is not a reference")
    } else {
        None
    }
}

/// [`rewrite_class_with`], or with `selected` [`rewrite_passing_first_argument`].
fn rewrite(
    class_file: &[u8],
    class_number: u32,
    injection: &Injection,
    options: &RewriteOptions,
    selected: Option<&[(&str, &str)]>,
) -> Result<RewriteOutcome, BciError> {
    let (passed, wanted) = match selected {
        None => (Passed::Numbers, CALL_DESCRIPTOR),
        Some(_) => (Passed::FirstArgument, ARGUMENT_CALL_DESCRIPTOR),
    };
    for (name, descriptor) in injection.entry.iter().chain(&injection.exit) {
        if descriptor != wanted || name.is_empty() {
            return Err(BciError::BadInjection(format!(
                "{name}{descriptor}: the injected methods take {wanted}"
            )));
        }
    }
    if injection.tracker_class.is_empty() {
        return Err(BciError::BadInjection("no tracker class".into()));
    }
    if let Some(leaf) = &injection.leaf {
        let (start, end) = (&leaf.start, &leaf.end);
        if selected.is_some()
            || start.0.is_empty()
            || end.0.is_empty()
            || start.1 != LEAF_START_DESCRIPTOR
            || end.1 != LEAF_END_DESCRIPTOR
        {
            return Err(BciError::BadInjection(format!(
                "leaf calls {}{} and {}{}: they take {LEAF_START_DESCRIPTOR} and \
                 {LEAF_END_DESCRIPTOR}, with class and method numbers",
                start.0, start.1, end.0, end.1
            )));
        }
    }
    let mut class = ClassFile::parse(class_file)?;
    let malformed = |what: String| BciError::Malformed { offset: 0, what };
    let this_name = class.this_name()?;

    let mut methods = method_reports(&class)?;
    let unchanged = |methods: Vec<MethodInfo>, why: &str| {
        let methods = methods
            .into_iter()
            .map(|m| MethodInfo {
                skip_reason: Some(why.to_string()),
                ..m
            })
            .collect();
        Ok(RewriteOutcome {
            bytes: class_file.to_vec(),
            methods,
        })
    };
    if this_name == encode_modified_utf8(&injection.tracker_class) {
        return unchanged(methods, "the tracker class itself");
    }
    if injection.entry.is_none() && injection.exit.is_none() {
        return unchanged(methods, "nothing to inject");
    }

    let calls = match resolve_calls(&mut class, class_number, injection, options, passed) {
        Ok(calls) => calls,
        Err(why) => return unchanged(methods, &why),
    };
    let facts = ClassFacts {
        major: class.major,
        this_class: class.this_class,
    };
    let mut leaf_refs = inject::LeafRefs::new(&injection.tracker_class, injection.leaf.as_ref());
    let mut new_code = vec![None; class.methods.len()];
    for (index, method) in class.methods.iter().enumerate() {
        let report = &mut methods[index];
        let code = code_attributes(&class, method);
        let refusal = selected.and_then(|selected| {
            first_argument_refusal(
                &report.name,
                &report.descriptor,
                method.access_flags & ACC_STATIC != 0,
                selected,
            )
        });
        let result = match (refusal, code.as_slice()) {
            (Some(why), _) => Err(why.to_string()),
            (None, []) => Err("no code (abstract or native)".to_string()),
            (None, [code]) => {
                let (name, descriptor) = name_and_descriptor(&class, method)?;
                let target = MethodFacts {
                    name: &name,
                    descriptor: &descriptor,
                    is_static: method.access_flags & ACC_STATIC != 0,
                    index: index as u16,
                };
                inject::rewrite_code(
                    code.info,
                    &mut class.pool,
                    calls,
                    &mut leaf_refs,
                    facts,
                    target,
                )
            }
            (None, _) => Err("several Code attributes".to_string()),
        };
        match result {
            Ok(Some(body)) => {
                new_code[index] = Some(body);
                report.rewritten = true;
            }
            Ok(None) => {
                report.skip_reason = Some("nothing to inject (no return instruction)".into())
            }
            Err(why) => report.skip_reason = Some(why),
        }
    }
    if new_code.iter().all(Option::is_none) {
        return Ok(RewriteOutcome {
            bytes: class_file.to_vec(),
            methods,
        });
    }
    let bytes = writer::write_class(&class, &new_code).map_err(malformed)?;
    Ok(RewriteOutcome { bytes, methods })
}

/// One report per method of `class`, none rewritten yet.
pub(crate) fn method_reports(class: &ClassFile<'_>) -> Result<Vec<MethodInfo>, BciError> {
    let mut methods = Vec::with_capacity(class.methods.len());
    for (index, method) in class.methods.iter().enumerate() {
        let (name, descriptor) = name_and_descriptor(class, method)?;
        methods.push(MethodInfo {
            name: decode_modified_utf8(&name),
            descriptor: decode_modified_utf8(&descriptor),
            index: index as u16,
            rewritten: false,
            skip_reason: None,
        });
    }
    Ok(methods)
}

/// A method's name and descriptor, copied out of the pool (which grows
/// while the method is rewritten).
pub(crate) fn name_and_descriptor(
    class: &ClassFile<'_>,
    method: &class_file::Method<'_>,
) -> Result<(Vec<u8>, Vec<u8>), BciError> {
    let malformed = |what: String| BciError::Malformed { offset: 0, what };
    let name = class.pool.utf8(method.name_index).map_err(malformed)?;
    let descriptor = class
        .pool
        .utf8(method.descriptor_index)
        .map_err(malformed)?;
    Ok((name.to_vec(), descriptor.to_vec()))
}

/// A method's `Code` attributes (one, or none for abstract and native
/// methods; more is malformed).
pub(crate) fn code_attributes<'c>(
    class: &ClassFile<'c>,
    method: &'c class_file::Method<'c>,
) -> Vec<&'c class_file::Attribute<'c>> {
    method
        .attributes
        .iter()
        .filter(|a| class.pool.utf8(a.name_index).is_ok_and(|n| n == b"Code"))
        .collect()
}

/// Adds the class number (when the calls pass it) and the called methods
/// to the pool.
fn resolve_calls(
    class: &mut ClassFile<'_>,
    class_number: u32,
    injection: &Injection,
    options: &RewriteOptions,
    passed: Passed,
) -> Result<Calls, String> {
    // The agent's class numbers are u32 serials; the JVM sees the same bits
    // as an int.
    let class_number = match passed {
        Passed::Numbers => class.pool.add_integer(class_number as i32)?,
        Passed::FirstArgument => 0,
    };
    let mut method_ref = |call: &Option<(String, String)>| -> Result<Option<u16>, String> {
        call.as_ref()
            .map(|call| inject::tracker_method_ref(&mut class.pool, &injection.tracker_class, call))
            .transpose()
    };
    let entry = method_ref(&injection.entry)?;
    let exit = method_ref(&injection.exit)?;
    Ok(Calls {
        class_number,
        entry,
        exit,
        exit_on_throw: injection.exit_on_throw,
        widen_all: options.widen_all_branches,
        passed,
    })
}
