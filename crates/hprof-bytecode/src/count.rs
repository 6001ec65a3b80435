//! The allocation-counting rewrite (`heap=sites` from the bytecode): every
//! `new`, `newarray`, `anewarray` and `multianewarray` of a class gets a
//! static call to [`ALLOC_TRACKER_CLASS`] with a site number fixed here, so
//! that a counter is bumped in Java and the compiled code keeps allocating
//! on its fast path (no JVMTI event, no native call, nothing that takes the
//! object, so escape analysis still applies).
//!
//! ```text
//! new C            ->  ldc <site>; invokestatic AllocTracker.object(I)V; new C
//! newarray T       ->  dup; ldc <site << 3 | element>; invokestatic AllocTracker.array(II)V; newarray T
//! anewarray C      ->  dup; ldc <site << 3 | 4>; invokestatic AllocTracker.array(II)V; anewarray C
//! multianewarray   ->  multianewarray ...; dup; ldc <site>; invokestatic AllocTracker.arrays(Ljava/lang/Object;I)V
//! ```
//!
//! Two kinds of call get code after them too (see [`CallRule`]):
//!
//! ```text
//! invoke... <a class file generated at run time, [B>  ->  ...; invokestatic AllocTracker.generated([B)[B
//! invoke... <an object the VM made, unreported>       ->  ...; dup; ldc <site>; invokestatic AllocTracker.made(Ljava/lang/Object;I)V
//! ```
//!
//! `element` is log2 of a primitive element's size (0 to 3), 4 for a
//! reference (whose size the tracker knows from the JVM's flags). A
//! `multianewarray` makes several arrays at once, so its count comes after
//! it, from the new array itself (the arrays it holds are all new). The
//! count comes before the other three: an allocation that throws
//! (`OutOfMemoryError`, a negative length) is still counted, one object
//! too many at a site where the program failed anyway; a negative length
//! is not counted. `max_stack` grows by 2, locals are untouched; all
//! offsets are relocated as for the entry/exit rewrite (`relocate.rs`).

use super::bytes::{Reader, put_u16, u16_at, u32_at};
use super::call_context::{
    self, ContextRefs, ContextScope, HUGE_METHOD_LIMIT, MAX_CALL_SITE, makes_objects_in_the_vm,
};
use super::class_file::{ACC_STATIC, ClassFile, CodeAttribute, read_attributes};
use super::code::{self, Insn, op};
use super::constant_pool::{ConstantPool, decode_modified_utf8, encode_modified_utf8};
use super::inject::{
    ClassFacts, Injected, MethodFacts, add_offset, push_constant, relocate_method,
};
use super::{BciError, MethodInfo, code_attributes, method_reports, name_and_descriptor, writer};
use rustc_hash::FxHashMap;
use std::sync::Arc;

/// Internal name of the class the counting calls go to.
pub const ALLOC_TRACKER_CLASS: &str = "hprof_rs/AllocTracker";

/// `hprof_rs/AllocTracker.class`, compiled by `java-tracker/build.sh`
/// (`javac --release 11`); the agent defines it in the boot loader.
pub const ALLOC_TRACKER_CLASS_FILE: &[u8] =
    include_bytes!("../../../java-tracker/hprof_rs/AllocTracker.class");

/// Internal name of the tracker's nested class of cached made-object
/// sites, defined before the tracker.
pub const ALLOC_TRACKER_MADE_AT_CLASS: &str = "hprof_rs/AllocTracker$MadeAt";

/// `hprof_rs/AllocTracker$MadeAt.class`, compiled with the tracker.
pub const ALLOC_TRACKER_MADE_AT_CLASS_FILE: &[u8] =
    include_bytes!("../../../java-tracker/hprof_rs/AllocTracker$MadeAt.class");

/// The tracker's private static field of counter pages (`long[][]`), which
/// the agent reads at each dump: name and signature.
pub const ALLOC_TRACKER_PAGES_FIELD: (&str, &str) = ("PAGES", "[[J");

/// The tracker's private static field holding the first failure that left
/// allocations uncounted: name and signature.
pub const ALLOC_TRACKER_FAILURE_FIELD: (&str, &str) = ("failure", "Ljava/lang/Throwable;");

/// Sites per counter page of the tracker, and its stripes per page (a
/// page is `2 * STRIPES * SITES_PER_PAGE` longs: per stripe, per site,
/// objects then bytes).
pub const ALLOC_TRACKER_SITES_PER_PAGE: usize = 512;
/// See [`ALLOC_TRACKER_SITES_PER_PAGE`].
pub const ALLOC_TRACKER_STRIPES: usize = 4;

/// The largest site number a rewrite hands out: the tracker counts
/// 16,777,216 sites (32,768 pages of 512). Past it classes load unchanged.
pub const MAX_SITE: u32 = (1 << 24) - 1;

/// The element code of a reference array (primitive ones are log2 of the
/// element's size).
pub const REFERENCE_ELEMENT: u32 = 4;

const NEW: u8 = 187;
const NEWARRAY: u8 = 188;
const ANEWARRAY: u8 = 189;
const MULTIANEWARRAY: u8 = 197;
const DUP: u8 = 89;

/// What the code after a matching call does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallAction {
    /// The call returns an object the VM made without a JVMTI
    /// VMObjectAlloc event: the tracker's native `made` counts it at the
    /// call's site, under its class.
    Made,
    /// The call returns the bytes of a class generated at run time, which
    /// will be defined as a hidden class (lambdas, method handle forms),
    /// whose loading no ClassFileLoadHook sees: the tracker's native
    /// `generated` returns them with their allocations counted.
    Generated,
}

/// A call that gets code after it: owner (internal name), method name (a
/// prefix when it ends with `*`), descriptor (its return type alone when
/// it starts with `)`).
#[derive(Clone, Copy, Debug)]
pub struct CallRule {
    /// Internal name of the class or interface the call names.
    pub owner: &'static str,
    /// Method name; `build*` matches every name starting with `build`.
    pub name: &'static str,
    /// Full descriptor, or `)[B` to match the return type only.
    pub descriptor: &'static str,
    /// What to do with the result.
    pub action: CallAction,
}

/// The calls that make objects in the VM, which some JDKs report with a
/// VMObjectAlloc event and some do not (the agent tries each once and
/// passes [`rewrite_counting_allocations`] the rules of those that do not).
pub const VM_MAKER_RULES: &[CallRule] = &[
    // Method-handle constructors, and reflection from JDK 18 on.
    CallRule {
        owner: "jdk/internal/misc/Unsafe",
        name: "allocateInstance",
        descriptor: "(Ljava/lang/Class;)Ljava/lang/Object;",
        action: CallAction::Made,
    },
    // Reflection's first objects per constructor up to JDK 17 (and during
    // start-up later).
    CallRule {
        owner: "jdk/internal/reflect/NativeConstructorAccessorImpl",
        name: "newInstance0",
        descriptor: "(Ljava/lang/reflect/Constructor;[Ljava/lang/Object;)Ljava/lang/Object;",
        action: CallAction::Made,
    },
];

/// The calls whose results always get code after them, JDK 11 to 25.
pub const CALL_RULES: &[CallRule] = &[
    // Classes the JDK generates: with its copy of ASM (lambdas up to JDK
    // 23, method handle forms) or its class-file API (JDK 22 and up).
    CallRule {
        owner: "jdk/internal/org/objectweb/asm/ClassWriter",
        name: "toByteArray",
        descriptor: "()[B",
        action: CallAction::Generated,
    },
    CallRule {
        owner: "java/lang/classfile/ClassFile",
        name: "build*",
        descriptor: ")[B",
        action: CallAction::Generated,
    },
    CallRule {
        owner: "jdk/internal/classfile/Classfile",
        name: "build*",
        descriptor: ")[B",
        action: CallAction::Generated,
    },
    CallRule {
        owner: "jdk/internal/classfile/ClassFile",
        name: "build*",
        descriptor: ")[B",
        action: CallAction::Generated,
    },
];

impl CallRule {
    /// Whether a call of `owner.name descriptor` matches.
    pub(crate) fn matches(&self, owner: &[u8], name: &[u8], descriptor: &[u8]) -> bool {
        // The owner first: it rules out almost every call at once.
        if owner != self.owner.as_bytes() && self.owner != "*" {
            return false;
        }
        let name_matches = match self.name.strip_suffix('*') {
            Some(prefix) => name.starts_with(prefix.as_bytes()),
            None => name == self.name.as_bytes(),
        };
        let descriptor_matches = if self.descriptor.starts_with(')') {
            descriptor.ends_with(self.descriptor.as_bytes())
        } else {
            descriptor == self.descriptor.as_bytes()
        };
        name_matches && descriptor_matches
    }
}

/// What an allocation site makes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Allocated {
    /// An instance of this class (internal name, `java/lang/String`).
    Instance(String),
    /// One array of this type (descriptor, `[I`, `[Ljava/lang/String;`).
    /// A `multianewarray` of `d` dimensions has `d` sites, one per level
    /// (`[[I` then `[I`), numbered in a row.
    Array(String),
    /// Whatever the call at this site returns, an object the VM made
    /// ([`CallAction::Made`]): its class is known when it is made.
    Made,
    /// What a `clone()` call returns when it reaches `Object.clone`, the
    /// VM's copy (counted as [`Allocated::Made`]; whether a call reaches it
    /// is known only at run time, from [`CloneCall`]).
    Cloned(CloneCall),
}

/// A call of `clone()Ljava/lang/Object;`, as the instruction names it: the
/// VM copies the object when the method it selects is `Object.clone`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CloneCall {
    /// The class the instruction names (internal name, or an array's
    /// descriptor: `[I`).
    pub owner: String,
    /// `invokespecial` (a `super.clone()`): the method is looked up from
    /// `owner`; otherwise from the receiver's class.
    pub special: bool,
    /// The call's number in the calling contexts' numbering, when it has
    /// one (the thread's field names it while the call runs).
    pub call_site: Option<u32>,
}

/// The rule that counts what `clone()` calls make after they return
/// (listed among a rewrite's `makers` when the intrinsic that copies
/// without a VMObjectAlloc event is left on): any owner.
pub const CLONE_RULE: CallRule = CallRule {
    owner: "*",
    name: "clone",
    descriptor: "()Ljava/lang/Object;",
    action: CallAction::Made,
};

/// One allocation site the rewrite numbered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AllocationSite {
    /// The number its calls pass.
    pub number: u32,
    /// The method's position in the class's `methods` table.
    pub method_index: u16,
    /// The method's name (`<init>`, `main`, ...).
    pub method_name: String,
    /// The method's descriptor, e.g. `(I)Ljava/lang/String;`.
    pub method_descriptor: String,
    /// Byte-code index of the allocation in the original method.
    pub bci: u32,
    /// Source line of that index, from the LineNumberTable.
    pub line: Option<u16>,
    /// What it allocates.
    pub allocated: Allocated,
}

/// One call site numbered for calling contexts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallSite {
    /// The number the window holds (1 to [`MAX_CALL_SITE`]).
    pub number: u32,
    /// The calling method's position in the class's `methods` table.
    pub method_index: u16,
    /// Byte-code index of the call in the original method.
    pub bci: u32,
    /// Source line of that index.
    pub line: Option<u16>,
    /// The method the call names (name, descriptor); `None` when its
    /// callee can be any method (`invokedynamic`, a method handle's
    /// signature-polymorphic `invoke*`).
    pub target: Option<(Arc<str>, Arc<str>)>,
}

/// The owners whose `native` methods are signature polymorphic: a call of
/// one runs whatever the handle links to.
const POLYMORPHIC_OWNERS: [&[u8]; 2] = [
    b"java/lang/invoke/MethodHandle",
    b"java/lang/invoke/VarHandle",
];

/// The method a call instruction names (name, descriptor).
type CallTarget = Option<(Arc<str>, Arc<str>)>;

/// The method a call instruction names, or `None` when it may run any;
/// decoded once per constant of the class (`seen`).
fn call_target(
    pool: &ConstantPool<'_>,
    code: &[u8],
    insn: &Insn,
    seen: &mut FxHashMap<u16, CallTarget>,
) -> CallTarget {
    if insn.opcode == 186 {
        return None; // invokedynamic
    }
    let index = u16_at(code, insn.offset as usize + 1)?;
    seen.entry(index)
        .or_insert_with(|| {
            let (class, name, descriptor) = pool.member_ref(index).ok()?;
            let owner = pool.class_name(class).ok()?;
            if POLYMORPHIC_OWNERS.contains(&owner) {
                return None;
            }
            Some((
                Arc::from(decode_modified_utf8(name)),
                Arc::from(decode_modified_utf8(descriptor)),
            ))
        })
        .clone()
}

/// Whether `method` is a program's entry point, `static void main(String[])`,
/// which the launcher calls from native code.
fn is_program_main(method: MethodFacts<'_>) -> bool {
    method.is_static && method.name == b"main" && method.descriptor == b"([Ljava/lang/String;)V"
}

/// The class rewritten to count its allocations.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CountingOutcome {
    /// The new class file; the input unchanged when no method was.
    pub bytes: Vec<u8>,
    /// The class's internal name, from the class file.
    pub class_name: String,
    /// The class's `SourceFile`, if it names one.
    pub source_file: Option<String>,
    /// The sites of the methods rewritten, in code order.
    pub sites: Vec<AllocationSite>,
    /// The call sites numbered for calling contexts, in code order.
    pub call_sites: Vec<CallSite>,
    /// Methods (name and descriptor) the rewrite took past HotSpot's
    /// huge-method limit.
    pub grown_huge: Vec<String>,
    /// One entry per method, in class-file order.
    pub methods: Vec<MethodInfo>,
    /// The class calls the tracker already: counted when it was generated,
    /// before it was defined.
    pub counted_already: bool,
}

/// Rewrites `class_file` so that each allocation bumps its site's counter,
/// numbering sites from `first_site` on (the next free number is
/// `first_site + sites.len()`, gaps aside: numbers of a method that could
/// not be rewritten are not reused), and adds code after each call that
/// [`CALL_RULES`] or `makers` (some of [`VM_MAKER_RULES`]) names. Methods that cannot be rewritten
/// safely are left as they are and reported; classes named `hprof_rs/...`
/// are never rewritten. With `first_call_site` the calls keep calling
/// contexts too (`call_context.rs`), their sites numbered from it on, and
/// the allocations are counted under the context.
pub fn rewrite_counting_allocations(
    class_file: &[u8],
    first_site: u32,
    makers: &[CallRule],
    first_call_site: Option<u32>,
) -> Result<CountingOutcome, BciError> {
    rewrite_counting_allocations_with(
        class_file,
        first_site,
        makers,
        first_call_site,
        ContextScope::EveryCall,
        false,
    )
}

/// [`rewrite_counting_allocations`]; with `compact_sites` each site's number
/// is pushed as the class's first number plus an offset, so that the class
/// gains two constants rather than one per site (for a retransformation,
/// where each new constant costs the JVM a scan of the old pool), at 2 to
/// 4 bytes of code per site. `scope`: which calls get the context code.
pub fn rewrite_counting_allocations_with(
    class_file: &[u8],
    first_site: u32,
    makers: &[CallRule],
    first_call_site: Option<u32>,
    scope: ContextScope,
    compact_sites: bool,
) -> Result<CountingOutcome, BciError> {
    rewrite_counting(
        class_file,
        first_site,
        makers,
        first_call_site.map(|first| (first, scope)),
        compact_sites,
        Targets::DIRECT,
    )
}

/// As [`rewrite_counting_allocations_with`], for a class the JVM loads
/// before VM init: the code calls the tracker and the context accessor
/// through the gate ([`crate::EARLY_GATE_CLASS`]), which passes nothing
/// on until the agent turns it on.
pub fn rewrite_counting_allocations_through_gate(
    class_file: &[u8],
    first_site: u32,
    makers: &[CallRule],
    first_call_site: Option<u32>,
    scope: ContextScope,
) -> Result<CountingOutcome, BciError> {
    rewrite_counting(
        class_file,
        first_site,
        makers,
        first_call_site.map(|first| (first, scope)),
        false,
        Targets::GATE,
    )
}

/// The classes the rewritten code calls: the tracker's methods, and the
/// accessor's.
#[derive(Clone, Copy)]
pub(crate) struct Targets {
    pub(crate) tracker: &'static str,
    pub(crate) accessor: &'static str,
}

impl Targets {
    const DIRECT: Targets = Targets {
        tracker: ALLOC_TRACKER_CLASS,
        accessor: super::context_accessor::CONTEXT_ACCESSOR_CLASS,
    };
    const GATE: Targets = Targets {
        tracker: super::early_gate::EARLY_GATE_CLASS,
        accessor: super::early_gate::EARLY_GATE_CLASS,
    };
}

fn rewrite_counting(
    class_file: &[u8],
    first_site: u32,
    makers: &[CallRule],
    contexts: Option<(u32, ContextScope)>,
    compact_sites: bool,
    targets: Targets,
) -> Result<CountingOutcome, BciError> {
    let first_call_site = contexts.map(|(first, _)| first);
    let scope = contexts.map_or(ContextScope::EveryCall, |(_, scope)| scope);
    let mut class = ClassFile::parse(class_file)?;
    let malformed = |what: String| BciError::Malformed { offset: 0, what };
    let this_name = class.this_name()?;
    let source_file = source_file(&class);
    let mut methods = method_reports(&class)?;
    let class_name = decode_modified_utf8(&this_name);
    let unchanged = |methods: Vec<MethodInfo>, sites| CountingOutcome {
        bytes: class_file.to_vec(),
        class_name: class_name.clone(),
        source_file: source_file.clone(),
        sites,
        call_sites: vec![],
        grown_huge: vec![],
        methods,
        counted_already: false,
    };
    if super::context_accessor::is_agent_class(&class_name) {
        return Ok(unchanged(methods, vec![]));
    }
    if calls_the_tracker(&class.pool) {
        // Counted already (a generated class counted before it was
        // defined, then seen by the ClassFileLoadHook).
        return Ok(CountingOutcome {
            counted_already: true,
            ..unchanged(methods, vec![])
        });
    }
    // The counting calls pass a context only when every call keeps one.
    let contexts = first_call_site.is_some() && scope == ContextScope::EveryCall;
    let resolved =
        TrackerCalls::resolve(&mut class.pool, contexts, targets.tracker).and_then(|calls| {
            let refs = match first_call_site {
                Some(base) => Some(ContextRefs::resolve(
                    &mut class.pool,
                    base,
                    targets.accessor,
                )?),
                None => None,
            };
            Ok((calls, refs))
        });
    let (mut calls, context_refs) = match resolved {
        Ok(resolved) => resolved,
        Err(why) => {
            for m in &mut methods {
                m.skip_reason = Some(why.clone());
            }
            return Ok(unchanged(methods, vec![]));
        }
    };
    let facts = ClassFacts {
        major: class.major,
        this_class: class.this_class,
    };
    let mut next_site = first_site;
    let base = first_call_site.unwrap_or(0);
    let mut next_call_site = base;
    let mut sites = Vec::new();
    let mut call_sites = Vec::new();
    let mut grown_huge = Vec::new();
    let mut new_code = vec![None; class.methods.len()];
    let mut call_targets = FxHashMap::default();
    for (index, method) in class.methods.iter().enumerate() {
        let code = code_attributes(&class, method);
        let [code] = code.as_slice() else {
            methods[index].skip_reason = Some("no code, or several Code attributes".into());
            continue;
        };
        let (name, descriptor) = name_and_descriptor(&class, method)?;
        let target = MethodFacts {
            name: &name,
            descriptor: &descriptor,
            is_static: method.access_flags & ACC_STATIC != 0,
            index: index as u16,
        };
        let report = &mut methods[index];
        let numbering = Numbering {
            first_site: next_site,
            site_push: if compact_sites {
                SitePush::FromBase(first_site)
            } else {
                SitePush::Constant
            },
            first_call_site: next_call_site,
            call_site_base: base,
            makers,
            contexts: context_refs,
            scope,
        };
        match count_in_method(
            code.info,
            &mut class.pool,
            &mut calls,
            facts,
            target,
            &numbering,
            &mut call_targets,
        ) {
            Ok(None) => report.skip_reason = Some("no allocation".into()),
            Ok(Some(counted)) => {
                let CountedMethod {
                    body,
                    sites: found,
                    call_sites: calls_found,
                    grew_huge,
                } = counted;
                next_site += found.len() as u32;
                next_call_site += calls_found.len() as u32;
                call_sites.extend(calls_found.into_iter().map(|(number, bci, line, target)| {
                    CallSite {
                        number,
                        method_index: index as u16,
                        bci,
                        line,
                        target,
                    }
                }));
                if grew_huge {
                    grown_huge.push(format!("{}{}", report.name, report.descriptor));
                }
                sites.extend(found.into_iter().map(|(number, bci, line, allocated)| {
                    AllocationSite {
                        number,
                        method_index: index as u16,
                        method_name: report.name.clone(),
                        method_descriptor: report.descriptor.clone(),
                        bci,
                        line,
                        allocated,
                    }
                }));
                new_code[index] = Some(body);
                report.rewritten = true;
            }
            Err(why) => report.skip_reason = Some(why),
        }
    }
    if new_code.iter().all(Option::is_none) {
        return Ok(unchanged(methods, vec![]));
    }
    let bytes = writer::write_class(&class, &new_code).map_err(malformed)?;
    Ok(CountingOutcome {
        bytes,
        class_name,
        source_file,
        sites,
        call_sites,
        grown_huge,
        methods,
        counted_already: false,
    })
}

/// The class's `SourceFile` attribute, if any.
fn source_file(class: &ClassFile<'_>) -> Option<String> {
    let r = &mut Reader::new(class.after_methods);
    let attributes = read_attributes(r).ok()?;
    let attribute = attributes.iter().find(|a| {
        class
            .pool
            .utf8(a.name_index)
            .is_ok_and(|n| n == b"SourceFile")
    })?;
    let index = u16_at(attribute.info, 0)?;
    Some(decode_modified_utf8(class.pool.utf8(index).ok()?))
}

/// Whether the pool names the tracker class (or the gate to it).
fn calls_the_tracker(pool: &ConstantPool<'_>) -> bool {
    let tracker = ALLOC_TRACKER_CLASS.as_bytes();
    let gate = super::early_gate::EARLY_GATE_CLASS.as_bytes();
    (1..pool.count()).any(|index| {
        pool.tag(index) == Some(7)
            && pool
                .class_name(index)
                .is_ok_and(|n| n == tracker || n == gate)
    })
}

/// The tracker's methods, as `Methodref`s of the class's pool, each added
/// when the first allocation or call that needs it is rewritten: a
/// retransformation costs the JVM a scan of the class's old pool for every
/// constant appended, so a class gains only the references it uses.
#[derive(Clone, Copy)]
struct TrackerCalls {
    /// The class the calls name: the tracker, or the gate to it.
    class: &'static str,
    object: Option<u16>,
    array: Option<u16>,
    arrays: Option<u16>,
    made: Option<u16>,
    generated: Option<u16>,
    /// The counting calls take the calling context too (a `long` after
    /// the site).
    contexts: bool,
}

/// The tracker's methods the rewritten code calls.
#[derive(Clone, Copy)]
enum Counter {
    Object,
    Array,
    Arrays,
    Made,
    Generated,
}

impl TrackerCalls {
    /// Adds the tracker's class (a pool with no room for it leaves the
    /// class alone); its methods are added as they are needed.
    fn resolve(
        pool: &mut ConstantPool<'_>,
        contexts: bool,
        class: &'static str,
    ) -> Result<Self, String> {
        pool.add_class(&encode_modified_utf8(class))?;
        Ok(Self {
            class,
            object: None,
            array: None,
            arrays: None,
            made: None,
            generated: None,
            contexts,
        })
    }

    /// The `Methodref` of `counter`, added on first use. The counting
    /// methods take the context after their own arguments when contexts
    /// are kept; `generated` never does.
    fn counter(&mut self, pool: &mut ConstantPool<'_>, counter: Counter) -> Result<u16, String> {
        let (slot, name, descriptor): (&mut Option<u16>, &[u8], &str) = match counter {
            Counter::Object => (&mut self.object, b"object", "(I)V"),
            Counter::Array => (&mut self.array, b"array", "(II)V"),
            Counter::Arrays => (&mut self.arrays, b"arrays", "(Ljava/lang/Object;I)V"),
            Counter::Made => (&mut self.made, b"made", "(Ljava/lang/Object;I)V"),
            Counter::Generated => (&mut self.generated, b"generated", "([B)[B"),
        };
        if let Some(method) = *slot {
            return Ok(method);
        }
        let contexts = self.contexts && !matches!(counter, Counter::Generated);
        let descriptor = with_context(descriptor, contexts);
        let class = encode_modified_utf8(self.class);
        Ok(*slot.insert(pool.add_method_ref(&class, name, descriptor.as_bytes())?))
    }

    /// The code after a call that `action` names (`site`: the number of
    /// a [`CallAction::Made`] call).
    fn after_call(
        &mut self,
        pool: &mut ConstantPool<'_>,
        action: CallAction,
        (site, push): (u32, SitePush),
        context: Option<u16>,
    ) -> Result<Vec<u8>, String> {
        match action {
            CallAction::Made => {
                let method = self.counter(pool, Counter::Made)?;
                counting_call(pool, true, push, (site, 0), method, context)
            }
            CallAction::Generated => {
                let method = self.counter(pool, Counter::Generated)?;
                let mut out = Vec::with_capacity(3);
                out.push(op::INVOKESTATIC);
                put_u16(&mut out, method);
                Ok(out)
            }
        }
    }
}

/// The owner, name and descriptor a call instruction (not
/// `invokedynamic`) names; None for other instructions.
fn called_method<'p>(
    pool: &'p ConstantPool<'_>,
    code: &[u8],
    insn: &Insn,
) -> Option<(&'p [u8], &'p [u8], &'p [u8])> {
    if !(182..=185).contains(&insn.opcode) {
        return None;
    }
    let index = u16_at(code, insn.offset as usize + 1)?;
    let (class, name, descriptor) = pool.member_ref(index).ok()?;
    Some((pool.class_name(class).ok()?, name, descriptor))
}

/// The rule a call instruction matches, if any.
fn call_rule(
    pool: &ConstantPool<'_>,
    code: &[u8],
    insn: &Insn,
    makers: &[CallRule],
) -> Option<CallAction> {
    let (owner, name, descriptor) = called_method(pool, code, insn)?;
    CALL_RULES
        .iter()
        .chain(makers)
        .find(|rule| rule.matches(owner, name, descriptor))
        .map(|rule| rule.action)
}

/// The owner a `clone()Ljava/lang/Object;` call names and whether it is an
/// `invokespecial`; None for any other instruction.
fn clone_call(pool: &ConstantPool<'_>, code: &[u8], insn: &Insn) -> Option<(String, bool)> {
    const INVOKESPECIAL: u8 = 183;
    if !matches!(insn.opcode, 182 | INVOKESPECIAL | 185) {
        return None;
    }
    let (owner, name, descriptor) = called_method(pool, code, insn)?;
    let rule = CLONE_RULE;
    (name == rule.name.as_bytes() && descriptor == rule.descriptor.as_bytes())
        .then(|| (decode_modified_utf8(owner), insn.opcode == INVOKESPECIAL))
}

/// A site found in one method: number, bci, line, what it allocates.
type FoundSite = (u32, u32, Option<u16>, Allocated);

/// A call site found in one method: number, bci, line, the method named.
type FoundCall = (u32, u32, Option<u16>, CallTarget);

/// A method's new `Code` body and the sites found in it.
struct CountedMethod {
    body: Vec<u8>,
    sites: Vec<FoundSite>,
    call_sites: Vec<FoundCall>,
    /// The rewrite took the method past [`HUGE_METHOD_LIMIT`].
    grew_huge: bool,
}

/// Where a method's numbering starts, and what else it rewrites.
struct Numbering<'r> {
    first_site: u32,
    /// How the counting calls push site numbers.
    site_push: SitePush,
    first_call_site: u32,
    /// The class's first call-site number, which the code adds offsets to.
    call_site_base: u32,
    makers: &'r [CallRule],
    /// Calling contexts kept, with these pool entries.
    contexts: Option<ContextRefs>,
    /// Which calls get the context code.
    scope: ContextScope,
}

/// The element code and array descriptor of `newarray`'s `atype`.
fn primitive_array(atype: u8) -> Option<(u32, &'static str)> {
    Some(match atype {
        4 => (0, "[Z"),
        5 => (1, "[C"),
        6 => (2, "[F"),
        7 => (3, "[D"),
        8 => (0, "[B"),
        9 => (1, "[S"),
        10 => (2, "[I"),
        11 => (3, "[J"),
        _ => return None,
    })
}

/// The descriptor of an array whose component is the class entry `name`
/// (an internal name, or an array descriptor).
fn array_of(name: &str) -> String {
    if name.starts_with('[') {
        format!("[{name}")
    } else {
        format!("[L{name};")
    }
}

/// A counting call's descriptor, with the context's `long` after the
/// site when `contexts`.
fn with_context(descriptor: &str, contexts: bool) -> String {
    match contexts {
        true => descriptor.replace(")V", "J)V"),
        false => descriptor.to_owned(),
    }
}

/// How a counting call pushes its site value: its own constant, or (with
/// a class base) the base's constant plus the offset (`ldc base; bipush
/// k; iadd`), so that a class appends two constants, not one per site.
/// Every constant a retransformation appends costs HotSpot a scan of the
/// class's old pool (VM_RedefineClasses::merge_constant_pools), which made
/// retransforming the classes loaded before VM init most of heap=sites'
/// start-up; the price is 2 to 4 bytes of code per site.
#[derive(Clone, Copy)]
enum SitePush {
    Constant,
    FromBase(u32),
}

impl SitePush {
    /// For `value`, a site number (`shift` 0) or a site number shifted
    /// left by `shift` with bits below.
    fn code(
        self,
        pool: &mut ConstantPool<'_>,
        out: &mut Vec<u8>,
        value: u32,
        shift: u32,
    ) -> Result<(), String> {
        match self {
            SitePush::Constant => push_constant(out, pool.add_integer(value as i32)?),
            SitePush::FromBase(base) => {
                let base_value = base << shift;
                let offset = value
                    .checked_sub(base_value)
                    .ok_or("a site numbered below its class's first")?;
                push_constant(out, pool.add_integer(base_value as i32)?);
                add_offset(out, offset as i32, pool)?;
            }
        }
        Ok(())
    }
}

/// `<push value>; invokestatic method`, with `dup` first when `dup` and
/// `lload <context>` before the call when there is a context local.
fn counting_call(
    pool: &mut ConstantPool<'_>,
    dup: bool,
    push: SitePush,
    (value, shift): (u32, u32),
    method: u16,
    context: Option<u16>,
) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(10);
    if dup {
        out.push(DUP);
    }
    push.code(pool, &mut out, value, shift)?;
    if let Some(local) = context {
        out.extend_from_slice(&call_context::load_context(local));
    }
    out.push(op::INVOKESTATIC);
    put_u16(&mut out, method);
    Ok(out)
}

/// A method's LineNumberTable, sorted by start (entries of the same
/// start in table order, the last of them the one that counts).
struct Lines(Vec<(u16, u16)>);

impl Lines {
    /// The table of a LineNumberTable body (empty when it is cut short).
    fn of(table: &[u8]) -> Self {
        let count = u16_at(table, 0).map_or(0, usize::from);
        let mut entries: Vec<(u16, u16)> = (0..count)
            .map_while(|k| Some((u16_at(table, 2 + 4 * k)?, u16_at(table, 4 + 4 * k)?)))
            .collect();
        if entries.len() < count {
            entries.clear();
        }
        entries.sort_by_key(|&(start, _)| start);
        Lines(entries)
    }

    /// The line of `bci`: that of the last entry starting at or before it.
    fn line_of(&self, bci: u32) -> Option<u16> {
        let after = self
            .0
            .partition_point(|&(start, _)| u32::from(start) <= bci);
        after.checked_sub(1).map(|k| self.0[k].1)
    }
}

/// One method's allocations counted: the new `Code` body and its sites, or
/// `None` when it allocates nothing.
fn count_in_method(
    info: &[u8],
    pool: &mut ConstantPool<'_>,
    calls: &mut TrackerCalls,
    class: ClassFacts,
    method: MethodFacts<'_>,
    numbering: &Numbering<'_>,
    targets: &mut FxHashMap<u16, CallTarget>,
) -> Result<Option<CountedMethod>, String> {
    let (first_site, makers) = (numbering.first_site, numbering.makers);
    let push = numbering.site_push;
    let code = CodeAttribute::parse(info).map_err(|e| format!("Code: {e}"))?;
    let insns = code::decode(code.code)?;
    let rules: Vec<Option<CallAction>> = insns
        .iter()
        .map(|i| call_rule(pool, code.code, i, makers))
        .collect();
    let allocations = insns
        .iter()
        .filter(|i| matches!(i.opcode, NEW | NEWARRAY | ANEWARRAY | MULTIANEWARRAY))
        .count();
    let every_call = numbering.scope == ContextScope::EveryCall;
    let is_call = |insn: &Insn| (182..=186).contains(&insn.opcode);
    let makes_in_vm = |insn: &Insn| {
        called_method(pool, code.code, insn).is_some_and(|(owner, name, descriptor)| {
            makes_objects_in_the_vm(owner, name, descriptor)
        })
    };
    let context_calls: Vec<bool> = match numbering.contexts {
        None => vec![false; insns.len()],
        Some(_) if every_call => insns.iter().map(is_call).collect(),
        Some(_) => insns.iter().map(makes_in_vm).collect(),
    };
    let keeps_contexts = context_calls.contains(&true);
    if allocations == 0 && rules.iter().all(Option::is_none) && !keeps_contexts {
        return Ok(None);
    }
    // The context local comes after the method's own (every call only).
    let context = numbering
        .contexts
        .filter(|_| every_call)
        .map(|_| code.max_locals);
    let subroutines = insns.iter().any(|i| {
        matches!(i.opcode, 168 | 169 | 201)
            || (i.opcode == op::WIDE && code.code.get(i.offset as usize + 1) == Some(&169))
    });
    if subroutines && class.major >= 51 {
        return Err(format!(
            "jsr/ret, which class version {} forbids",
            class.major
        ));
    }
    let lines = code
        .attributes
        .iter()
        .find(|a| {
            pool.utf8(a.name_index)
                .is_ok_and(|n| n == b"LineNumberTable")
        })
        .map(|a| Lines::of(a.info));
    let operand_u16 = |insn: &Insn| {
        u16_at(code.code, insn.offset as usize + 1)
            .ok_or_else(|| format!("truncated instruction at {}", insn.offset))
    };
    let mut injected = Injected {
        entry: vec![],
        before: vec![vec![]; insns.len()],
        after: vec![vec![]; insns.len()],
        // A call's context code needs 4 slots (long, int, int), a
        // counting call 2 (a `dup` and the site), 3 when the site is a base
        // and an offset, 4 with the context (pushed after the two are
        // added).
        extra_stack: match (context, push) {
            (Some(_), _) => 4,
            // A maker call's code: a long and two ints.
            (None, _) if keeps_contexts => 4,
            (None, SitePush::FromBase(_)) => 3,
            (None, SitePush::Constant) => 2,
        },
        // The context.
        extra_long_locals: u16::from(context.is_some()),
        on_throw: vec![],
    };
    let mut found = Vec::with_capacity(allocations);
    let mut calls_found = Vec::new();
    // The context number of each numbered call, by instruction.
    let mut call_numbers: FxHashMap<usize, u32> = FxHashMap::default();
    if let Some(refs) = numbering.contexts {
        // (Every method that counts under a context takes its window, calls
        // or none.)
        if let Some(local) = context {
            injected.entry = if is_program_main(method) {
                refs.main_entry_code(local)
            } else {
                refs.entry_code(local)
            };
        }
        for (k, insn) in insns.iter().enumerate().filter(|&(k, _)| context_calls[k]) {
            let number = numbering.first_call_site + calls_found.len() as u32;
            // Past the last number, calls pass 0 (the offset that brings
            // the base back to it): their callees' traces stop there.
            let number = if number <= MAX_CALL_SITE { number } else { 0 };
            let offset = (i64::from(number) - i64::from(numbering.call_site_base)) as i32;
            match context {
                Some(local) => injected.before[k] = refs.call_code(pool, local, offset)?,
                None => {
                    injected.before[k] = refs.maker_call_code(pool, offset)?;
                    injected.after[k] = refs.maker_return_code();
                }
            }
            let line = lines.as_ref().and_then(|table| table.line_of(insn.offset));
            let target = call_target(pool, code.code, insn, targets);
            calls_found.push((number, insn.offset, line, target));
            call_numbers.insert(k, number);
        }
    }
    for (k, insn) in insns.iter().enumerate() {
        let allocates = matches!(insn.opcode, NEW | NEWARRAY | ANEWARRAY | MULTIANEWARRAY);
        if rules[k].is_none() && !allocates {
            continue;
        }
        let site = first_site
            .checked_add(found.len() as u32)
            .filter(|&s| s <= MAX_SITE)
            .ok_or("no site numbers left")?;
        let line = lines.as_ref().and_then(|table| table.line_of(insn.offset));
        if let Some(action) = rules[k] {
            // (After a maker call's own code, which clears the field.)
            let counting = calls.after_call(pool, action, (site, push), context)?;
            injected.after[k].extend(counting);
            if action == CallAction::Made {
                let allocated = match clone_call(pool, code.code, insn) {
                    Some((owner, special)) => Allocated::Cloned(CloneCall {
                        owner,
                        special,
                        call_site: call_numbers.get(&k).copied(),
                    }),
                    None => Allocated::Made,
                };
                found.push((site, insn.offset, line, allocated));
            }
            continue;
        }
        let class_name = |index: u16| -> Result<String, String> {
            Ok(decode_modified_utf8(pool.class_name(index)?))
        };
        let allocated = match insn.opcode {
            NEW => {
                let name = class_name(operand_u16(insn)?)?;
                injected.before[k] = {
                    let method = calls.counter(pool, Counter::Object)?;
                    counting_call(pool, false, push, (site, 0), method, context)?
                };
                Allocated::Instance(name)
            }
            NEWARRAY => {
                let atype = code.code.get(insn.offset as usize + 1).copied();
                let (element, descriptor) = atype
                    .and_then(primitive_array)
                    .ok_or_else(|| format!("newarray of unknown type at {}", insn.offset))?;
                let value = site << 3 | element;
                injected.before[k] = {
                    let method = calls.counter(pool, Counter::Array)?;
                    counting_call(pool, true, push, (value, 3), method, context)?
                };
                Allocated::Array(descriptor.to_owned())
            }
            ANEWARRAY => {
                let descriptor = array_of(&class_name(operand_u16(insn)?)?);
                let value = site << 3 | REFERENCE_ELEMENT;
                injected.before[k] = {
                    let method = calls.counter(pool, Counter::Array)?;
                    counting_call(pool, true, push, (value, 3), method, context)?
                };
                Allocated::Array(descriptor)
            }
            _ => {
                // One site per dimension made: the outer array's type at
                // `site`, each level down at the next number.
                let descriptor = class_name(operand_u16(insn)?)?;
                let dimensions = code
                    .code
                    .get(insn.offset as usize + 3)
                    .copied()
                    .unwrap_or(1);
                let levels = usize::from(dimensions.max(1)).min(descriptor.len());
                if site + levels as u32 - 1 > MAX_SITE {
                    return Err("no site numbers left".into());
                }
                injected.after[k] = {
                    let method = calls.counter(pool, Counter::Arrays)?;
                    counting_call(pool, true, push, (site, 0), method, context)?
                };
                for level in 0..levels {
                    let allocated = Allocated::Array(descriptor[level..].to_owned());
                    found.push((site + level as u32, insn.offset, line, allocated));
                }
                continue;
            }
        };
        found.push((site, insn.offset, line, allocated));
    }
    let body = relocate_method(&code, &insns, pool, class, method, &injected, false)?;
    let new_length = u32_at(&body, 4).unwrap_or(0) as usize;
    Ok(Some(CountedMethod {
        body,
        sites: found,
        call_sites: calls_found,
        grew_huge: code.code.len() <= HUGE_METHOD_LIMIT && new_length > HUGE_METHOD_LIMIT,
    }))
}
