//! heap=sites counted in the bytecode (`alloc_count=bytecode`): every class
//! is rewritten (crates/hprof-bytecode/src/count.rs) so that each allocation bumps a counter
//! of its site in `hprof_rs.AllocTracker`; classes loaded before VM init
//! are retransformed once the tracker exists. At each dump the counters
//! are read and turned into SITES rows, one per (allocated class, site,
//! calling context), whose trace is the site's own frame and, with
//! `depth` above 1, the callers' call sites the context holds (at most
//! three: crates/hprof-bytecode/src/call_context.rs).
//!
//! What the counters lack is found at the dump: an instance's size (from
//! a live instance, else a blank one made by JNI AllocObject, once per
//! class) and the live objects, counted per class by one walk of the heap
//! and shared among that class's sites in proportion to what each
//! allocated, never more than a site allocated (the rows of the objects
//! VMObjectAlloc reported take part in that sharing too). The objects in
//! the heap when counting began are tagged then and left out of the walk:
//! a class allocated at one site only (the common case) gets its exact
//! live count.

use super::counted_clones::CountedClones;
use crate::agent::jvm;
use crate::agent::jvm::alloc_tracker::{self, AllocTracker, SiteCount};
use crate::agent::jvm::shared_archive;
use crate::agent::run::class_reloads::{ClassKey, ClassReloads, FirstNumbers};
use crate::bci::{self, Allocated};
use crate::model::SharedStrings;
use jvmti_bindings::prelude::*;
use parking_lot::Mutex;
use rustc_hash::FxHashMap;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize, Ordering};

/// A class rewritten to count its allocations.
#[derive(Debug)]
pub struct CountedClass {
    /// Internal name, `java/lang/String`.
    pub name: String,
    pub source_file: Option<String>,
}

/// A method's name and descriptor.
pub type MethodName = (Arc<str>, Arc<str>);

/// A place in the code of a rewritten class: what a frame shows. Small (20
/// bytes): a program may number millions of them.
#[derive(Debug, Clone)]
pub struct CodePlace {
    /// Index of its class in [`SiteRegistry::classes`].
    pub class: u32,
    pub method_index: u16,
    /// Its method's name and descriptor: number in [`SiteRegistry::method`].
    pub method: u32,
    /// Bytecode index in the original method.
    pub bci: u32,
    pub line: Option<u16>,
}

/// One numbered site.
#[derive(Debug, Clone)]
pub struct CountedSite {
    pub place: CodePlace,
    /// JVM signature of what it allocates (`Ljava/lang/String;`, `[I`).
    pub allocated: Arc<str>,
    /// True for an instance: its bytes are counted at the dump.
    pub instance: bool,
}

/// One numbered call site (of calling contexts).
#[derive(Debug, Clone)]
pub struct CountedCallSite {
    pub place: CodePlace,
    /// The method the call names (its number in [`SiteRegistry::method`]);
    /// `None`: any method.
    pub target: Option<u32>,
}

/// Every site numbered so far: site number `n` is `sites[n]`, call site
/// number `n` is `call_sites[n]` (number 0, no call site, holds nothing).
#[derive(Debug, Default)]
pub struct SiteRegistry {
    pub classes: Vec<CountedClass>,
    pub sites: Vec<CountedSite>,
    pub call_sites: Vec<Option<CountedCallSite>>,
    /// The numbers each distinct class file got: the same class loaded
    /// again (another loader, a retransformation) gets the same ones.
    reloads: ClassReloads,
    /// The methods places are in and calls name, one copy each.
    methods: MethodNames,
    /// Classes rewritten before VM init with a call that makes objects in
    /// the VM (counted whether or not this JVM reports them).
    early_makers: std::collections::BTreeSet<String>,
    /// The sites of the objects of one class made at one maker call, by
    /// (the call's site, the class's signature): see [`SiteRegistry::made_site`].
    made_sites: FxHashMap<(u32, Arc<str>), u32>,
}

/// Distinct (name, descriptor) pairs, numbered, over strings kept once:
/// `<init>` and `()V` cost their bytes once however many classes have them.
#[derive(Debug, Default)]
struct MethodNames {
    strings: SharedStrings,
    list: Vec<MethodName>,
    /// By the addresses of the two shared strings (one copy per text, kept
    /// by `strings`), so that a pair's text is hashed once, in `strings`.
    numbers: FxHashMap<(usize, usize), u32>,
}

impl MethodNames {
    /// The number of (`name`, `descriptor`), given on first sight.
    fn number(&mut self, name: &str, descriptor: &str) -> u32 {
        let name = self.strings.get(name);
        let descriptor = self.strings.get(descriptor);
        let address = |s: &Arc<str>| Arc::as_ptr(s) as *const u8 as usize;
        let key = (address(&name), address(&descriptor));
        if let Some(&number) = self.numbers.get(&key) {
            return number;
        }
        let number = self.list.len() as u32;
        self.list.push((name, descriptor));
        self.numbers.insert(key, number);
        number
    }
}

/// A caller's frame in a counted trace.
#[derive(Debug, Clone)]
pub struct CallerFrame {
    /// Class internal name, method number, original bytecode index.
    pub place: (String, u16, u32),
    pub method_name: Arc<str>,
    pub method_descriptor: Arc<str>,
    pub source_file: Option<String>,
    pub line: Option<u16>,
}

/// Where an allocation happened, merging the site numbers a class gets
/// each time it is (re)transformed.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SiteIdentity {
    /// Class internal name, method number, original bytecode index.
    pub class_name: String,
    pub method_index: u16,
    pub bci: u32,
    /// JVM signature of the allocated class.
    pub allocated: String,
    /// The callers' places, most recent first (none without contexts).
    pub callers: Vec<(String, u16, u32)>,
    /// The trace serial of a walked stack, for objects counted by one.
    pub walked: Option<u32>,
}

/// The counts of one site identity, with what a frame needs.
#[derive(Debug, Clone)]
pub struct CountedRow {
    pub identity: SiteIdentity,
    pub method_name: Arc<str>,
    pub method_descriptor: Arc<str>,
    pub source_file: Option<String>,
    pub line: Option<u16>,
    pub instance: bool,
    pub count: SiteCount,
    /// The callers' frames, matching `identity.callers`.
    pub callers: Vec<CallerFrame>,
}

/// JVM signature of what a site allocates.
fn allocated_signature(allocated: &Allocated) -> (String, bool) {
    match allocated {
        Allocated::Instance(name) => (format!("L{name};"), true),
        Allocated::Array(descriptor) => (descriptor.clone(), false),
        // Known per object: counted apart, with its bytes.
        Allocated::Made | Allocated::Cloned(_) => (String::new(), false),
    }
}

impl CountedRow {
    /// A row of no counts yet for site `site` of class `class` in method
    /// `method`, allocating what the site allocates.
    fn empty(site: &CountedSite, class: &CountedClass, method: &MethodName) -> Self {
        let place = &site.place;
        Self {
            identity: SiteIdentity {
                class_name: class.name.clone(),
                method_index: place.method_index,
                bci: place.bci,
                allocated: site.allocated.to_string(),
                callers: vec![],
                walked: None,
            },
            method_name: method.0.clone(),
            method_descriptor: method.1.clone(),
            source_file: class.source_file.clone(),
            line: place.line,
            instance: site.instance,
            count: SiteCount::default(),
            callers: vec![],
        }
    }

    /// The row with these callers.
    fn called_by(mut self, callers: Vec<CallerFrame>) -> Self {
        self.identity.callers = callers.iter().map(|c| c.place.clone()).collect();
        self.callers = callers;
        self
    }

    /// A row of class `class_name`'s first site (method 0, bci 0)
    /// allocating `Object`s, with `count`.
    #[cfg(test)]
    pub(super) fn for_test(class_name: &str, count: SiteCount) -> Self {
        Self {
            identity: SiteIdentity {
                class_name: class_name.to_owned(),
                method_index: 0,
                bci: 0,
                allocated: "Ljava/lang/Object;".to_owned(),
                callers: vec![],
                walked: None,
            },
            method_name: Arc::from("m"),
            method_descriptor: Arc::from("()V"),
            source_file: None,
            line: None,
            instance: true,
            count,
            callers: vec![],
        }
    }
}

impl SiteRegistry {
    /// The site number of the objects of class `signature` made at the
    /// maker call numbered `site` (Unsafe.allocateInstance and the like,
    /// which make objects of many classes): a site of their own, at the
    /// call's place, numbered on first sight. None past the last number.
    fn made_site(&mut self, site: u32, signature: &str) -> Option<u32> {
        let allocated = self.methods.strings.get(signature);
        if let Some(&number) = self.made_sites.get(&(site, allocated.clone())) {
            return Some(number);
        }
        if self.made_sites.len() >= MAX_MADE_SITES {
            return None; // each object is then counted by the agent's own keys
        }
        let place = self.sites.get(site as usize)?.place.clone();
        let number = u32::try_from(self.sites.len())
            .ok()
            .filter(|&n| n <= bci::MAX_SITE)?;
        self.sites.push(CountedSite {
            place,
            allocated: allocated.clone(),
            // (An array, a clone's copy, is counted with its bytes.)
            instance: !signature.starts_with('['),
        });
        self.made_sites.insert((site, allocated), number);
        Some(number)
    }

    /// Records the sites of a rewrite that numbered from `self.sites.len()`
    /// (and its call sites from `self.call_sites.len()`).
    fn add(&mut self, name: &str, outcome: &bci::CountingOutcome) {
        let class = self.classes.len() as u32;
        let methods = &mut self.methods;
        // A class's call sites and sites name few methods many times: each
        // is numbered once here (by its index in the class, and a call's
        // target by its two shared strings), not hashed by its text per
        // site (that hashing was 4.6% of Hello's run under heap=sites).
        let mut in_method: Vec<Option<u32>> = vec![None; outcome.methods.len()];
        let mut place_method = |methods: &mut MethodNames, index: u16, fallback: (&str, &str)| {
            let Some(slot) = in_method.get_mut(usize::from(index)) else {
                return methods.number(fallback.0, fallback.1);
            };
            *slot.get_or_insert_with(|| {
                let m = &outcome.methods[usize::from(index)];
                methods.number(&m.name, &m.descriptor)
            })
        };
        let mut targets: FxHashMap<(usize, usize), u32> = FxHashMap::default();
        for call in &outcome.call_sites {
            let method = place_method(methods, call.method_index, ("", ""));
            let target = call.target.as_ref().map(|(name, descriptor)| {
                let address = |s: &Arc<str>| Arc::as_ptr(s) as *const u8 as usize;
                *targets
                    .entry((address(name), address(descriptor)))
                    .or_insert_with(|| methods.number(name, descriptor))
            });
            self.call_sites.push(Some(CountedCallSite {
                place: CodePlace {
                    class,
                    method_index: call.method_index,
                    method,
                    bci: call.bci,
                    line: call.line,
                },
                target,
            }));
        }
        self.classes.push(CountedClass {
            name: name.to_owned(),
            source_file: outcome.source_file.clone(),
        });
        for site in &outcome.sites {
            debug_assert_eq!(site.number as usize, self.sites.len());
            let (allocated, instance) = allocated_signature(&site.allocated);
            let method = place_method(
                methods,
                site.method_index,
                (&site.method_name, &site.method_descriptor),
            );
            self.sites.push(CountedSite {
                place: CodePlace {
                    class,
                    method_index: site.method_index,
                    method,
                    bci: site.bci,
                    line: site.line,
                },
                allocated: methods.strings.get(&allocated),
                instance,
            });
        }
    }

    /// The name and descriptor of method number `number` (of a place or a
    /// call's target).
    pub fn method(&self, number: u32) -> &MethodName {
        &self.methods.list[number as usize]
    }

    /// The counts of every site that allocated, merged per site identity,
    /// in a fixed order: `counts` by site number, `keyed` by (site,
    /// calling context), whose callers (up to `callers` of them) the
    /// context names.
    pub fn rows(
        &self,
        counts: &[SiteCount],
        keyed: &[(u32, u64, SiteCount)],
        callers: usize,
    ) -> Vec<CountedRow> {
        let by_site = counts
            .iter()
            .enumerate()
            .map(|(site, count)| (site as u32, None, *count));
        let by_key = keyed
            .iter()
            .map(|&(site, context, count)| (site, Some(context), count));
        let mut rows: HashMap<SiteIdentity, CountedRow> = HashMap::new();
        for (site, context, count) in by_site.chain(by_key) {
            let Some(counted) = self.sites.get(site as usize) else {
                continue;
            };
            if count.objects == 0 || counted.allocated.is_empty() {
                continue;
            }
            let class = &self.classes[counted.place.class as usize];
            let row = CountedRow::empty(counted, class, self.method(counted.place.method));
            let row = match context {
                Some(context) => row.called_by(self.callers(context, callers, counted)),
                None => row,
            };
            let row = rows.entry(row.identity.clone()).or_insert(row);
            row.count.objects += count.objects;
            row.count.bytes += count.bytes;
        }
        let mut rows: Vec<CountedRow> = rows.into_values().collect();
        rows.sort_by(|a, b| a.identity.cmp(&b.identity));
        rows
    }

    /// The callers a calling context names for an allocation at `site`,
    /// most recent first, at most `most` of them. They end at a call site
    /// of number 0 (none), and where the chain breaks: each call must name
    /// the method the frame below it is in (or be one that may run any
    /// method). A break is a context the method did not get from a call of
    /// ours: the VM called it (a static initialiser, `main`, a class
    /// loader), or native code did, or a call to native code or an
    /// intrinsic left the thread's window as it was.
    pub fn callers(&self, context: u64, most: usize, site: &CountedSite) -> Vec<CallerFrame> {
        self.site_callers(context, most, site).0
    }

    /// [`callers`](Self::callers), and whether the chain held.
    fn site_callers(
        &self,
        context: u64,
        most: usize,
        site: &CountedSite,
    ) -> (Vec<CallerFrame>, bool) {
        let callee = self.method(site.place.method).clone();
        self.callers_below(context, most, callee)
    }

    /// The callers `context` names above a frame in method `callee` (name,
    /// descriptor), at most `most`, and whether the chain held (it ended at
    /// `most` callers or at a call site of number 0, the thread's first
    /// frame).
    pub fn callers_below(
        &self,
        context: u64,
        most: usize,
        mut callee: (Arc<str>, Arc<str>),
    ) -> (Vec<CallerFrame>, bool) {
        let mut frames = Vec::new();
        for number in bci::window_call_sites(context).into_iter().take(most) {
            if number == 0 {
                break;
            }
            let Some(Some(call)) = self.call_sites.get(number as usize) else {
                return (frames, false);
            };
            if call
                .target
                .is_some_and(|target| *self.method(target) != callee)
            {
                return (frames, false);
            }
            let (place, class) = (&call.place, &self.classes[call.place.class as usize]);
            let method = self.method(place.method);
            frames.push(CallerFrame {
                place: (class.name.clone(), place.method_index, place.bci),
                method_name: method.0.clone(),
                method_descriptor: method.1.clone(),
                source_file: class.source_file.clone(),
                line: place.line,
            });
            callee = method.clone();
        }
        (frames, true)
    }
}

/// (maker call, class) pairs given a site of their own, at most (about 80
/// bytes each with the site: a program that makes classes without end,
/// each with objects from such a call, stops here and goes on through the
/// bounded keys below).
const MAX_MADE_SITES: usize = 65_536;

/// Keys (site, calling context, class) of what VM-maker calls made, at
/// most (about 40 bytes each); past it a new key counts under its site
/// with no context.
const MAX_MADE_KEYS: usize = 262_144;

/// Methods named as uncounted (one line each) before the rest go unnamed.
const MAX_UNCOUNTED_NAMED: usize = 100;

/// State of the bytecode counting.
pub struct BytecodeCounting {
    tracker: OnceLock<AllocTracker>,
    registry: Mutex<SiteRegistry>,
    /// Instance sizes by class signature (None: could not be told).
    sizes: Mutex<HashMap<String, Option<u64>>>,
    /// Set once a failure of the tracker has been reported.
    failure_reported: AtomicBool,
    /// Set once the site numbers ran out (reported once).
    exhausted: AtomicBool,
    /// A number per (class name, method number): the frame key of its sites.
    method_keys: Mutex<HashMap<(String, u16), u64>>,
    /// The calls that make objects in the VM without a VMObjectAlloc
    /// event on this JVM, counted after them (found at start).
    unreported_makers: OnceLock<Vec<bci::CallRule>>,
    /// The calls counted after them in rewritten code: those, and every
    /// `clone()` call (found at start).
    rewrite_makers: OnceLock<Vec<bci::CallRule>>,
    /// The `clone()` calls of the rewritten classes.
    pub clones: CountedClones,
    /// What those calls made, by (site, calling context, tag of the
    /// object's class).
    made: Mutex<HashMap<(u32, u64, u64), SiteCount>>,
    /// Allocations under contexts not trusted, by (site, walked trace).
    walked: Mutex<HashMap<(u32, u32), SiteCount>>,
    /// How many of each site's first allocations per stripe of the
    /// tracker are walked for their trace (0: no walks for traces at all).
    first_walks: i32,
    /// The tracker's walks for traces (its sites' first allocations and
    /// those its thinning chose), by (site, walked trace): not counts (the
    /// site's counters have the allocations), the traces they show and the
    /// objects and bytes they stand for.
    trace_walked: Mutex<HashMap<(u32, u32), SiteCount>>,
    /// How many walks `trace_walked` holds (its objects are weighed).
    trace_walk_count: AtomicU64,
    /// The same for objects the VM made, placed by a maker call's site
    /// (walked the first time each thread sees the class there), by
    /// (class serial, walked trace).
    vm_made_walked: Mutex<HashMap<(u32, u32), SiteCount>>,
    /// Callers a trace shows (`depth` - 1, at most the three a calling
    /// context holds; 0: no contexts are kept).
    callers: usize,
    /// java.lang.Thread's context field (found at VM init).
    context_field: OnceLock<alloc_tracker::ContextField>,
    /// java.lang.Thread turned out to lack the field the windows live in
    /// (checked at the JVM's start and at VM init): neither calling
    /// contexts nor the maker calls' sites are kept.
    field_lost: AtomicBool,
    /// Without contexts, the calls the VM makes objects in write their
    /// call site into the thread's field, which places those objects
    /// without a walk (`bci::ContextScope::VmMakerCalls`; wanted when a
    /// site's rows come from the live sample).
    maker_windows: bool,
    /// Set once a method was rewritten past HotSpot's huge-method limit
    /// (and the limit turned off).
    huge_allowed: AtomicBool,
    /// Set while the classes loaded before VM init are retransformed: their
    /// rewrite pushes site numbers from one base constant per class
    /// (`rewrite_counting_allocations_with`'s compact sites), since HotSpot
    /// scans a class's whole old pool for every constant a retransformation
    /// appends.
    retransforming: AtomicBool,
    /// Methods named as left uncounted so far.
    uncounted_named: AtomicUsize,
    /// `-Xshare:on`: java.lang.Thread comes from the shared archive, which
    /// the early ClassFileLoadHook its field needs would refuse.
    sharing_required: bool,
    /// Calling contexts were asked for and -Xshare:on refused them.
    contexts_refused: bool,
    /// Classes loaded before VM init are rewritten as they load, their
    /// counting calls through the gate (`bci::EARLY_GATE_CLASS`), which
    /// the JVM's start defines and VM init turns on; none is retransformed.
    early: bool,
    /// The classes loaded before VM init are neither rewritten as they load
    /// nor retransformed (the hidden `EARLY_CLASSES_UNCOUNTED` measuring bit).
    early_left_alone: bool,
    /// With `early_left_alone`, the allocations of those classes' methods
    /// are counted from the live sample's events (the default under
    /// `alloc_count=sites`): their methods, found at VM
    /// init, natives left out (what they make is the VM's).
    early_methods: Option<OnceLock<EarlyClasses>>,
    /// With `early_methods`: java.lang.Thread gets no field (it is loaded
    /// before VM init, and its field would need the early hook), so the maker
    /// calls write their sites into the accessor's slots instead.
    windows_in_slots: bool,
    /// Those slots, once the accessor is defined (at VM init).
    window_slots: OnceLock<alloc_tracker::WindowSlots>,
}

/// The classes loaded before VM init, left unchanged, whose allocations
/// are counted from their events; by name (a class loaded then is the boot
/// loader's, or one of the few the JDK's own loaders load at start; no
/// class loaded later can take a boot class's name). Their methods are
/// looked at as allocations report them, not at VM init, where some
/// (from the class-data archive) are loaded but not yet prepared and have
/// no methods to list.
#[derive(Default)]
struct EarlyClasses {
    names: HashSet<String>,
    /// Where the hand-over to the counters stands: [`EarlyPhase`] as a number.
    phase: AtomicU8,
    /// The VM makers that post no VMObjectAlloc on this JVM.
    makers: Vec<bci::CallRule>,
    /// What each method looked at so far is (bounded by the methods of
    /// those classes). Looked up for every object while the live sample
    /// reports them all: Fx, not SipHash.
    methods: Mutex<FxHashMap<u64, EarlyMethod>>,
}

/// Where the classes loaded before VM init stand: counted from events, being
/// retransformed to count in their code, or counting there.
#[derive(Clone, Copy, PartialEq, Debug)]
pub enum EarlyPhase {
    /// Unchanged: every allocation of theirs is counted from its event.
    ByEvents = 0,
    /// Being retransformed: which code made an object is told once it ends.
    HandingOver = 1,
    /// Retransformed: their new code counts; a frame still running the old
    /// code (an obsolete method) is counted from its events.
    HandedOver = 2,
}

/// How long an allocation's event waits for the hand-over to end before
/// it is counted as if it had not begun (which may count an object of the
/// new code twice: said once on standard error).
const HAND_OVER_PATIENCE: std::time::Duration = std::time::Duration::from_secs(10);

/// What a method's allocations are to the counting from events.
#[derive(Clone, Copy, PartialEq)]
enum EarlyMethod {
    /// A method of an early class: what it makes is counted from events.
    Counted,
    /// A VM maker posting no VMObjectAlloc, in an early class: what it
    /// makes for an early class's method is counted from events.
    UnreportedMaker,
    /// Anything else: the counters or VMObjectAlloc count what it makes.
    Other,
}

impl EarlyClasses {
    /// The classes loaded so far (at VM init: those loaded before it), the
    /// agent's own left out; `makers`: the VM makers that post no
    /// VMObjectAlloc. With them, those that generate classes
    /// (`bci::generates_classes`), for [`hand_over_now`](Self::hand_over_now),
    /// looked for only when a generator ran before VM init (the class its
    /// call names is loaded): reading a class's constant pool takes about
    /// 25 µs, 7 to 18 ms for the ~360 classes of a plain start (which the
    /// agent slows by 30 to 70 ms), where none has run. (A generator loaded but
    /// not yet run would be missed: none was, on JDK 11 to 25, under
    /// `-javaagent`, `--add-modules`, `--add-opens` or `--module-path`,
    /// which make them run.) The module-reads path is left out: it makes
    /// no hidden class, and must load unchanged until the hand-over.
    fn loaded(env: &Jvmti, jni: &JniEnv, makers: &[bci::CallRule]) -> (Self, HashSet<String>) {
        let classes: Vec<_> = jvm::loaded_classes(env, Some(jni))
            .into_iter()
            .filter_map(|class| Some((internal_name(env, class.get())?, class)))
            .filter(|(name, _)| !bci::is_agent_class(name))
            .collect();
        let names: HashSet<String> = classes.iter().map(|(name, _)| name.clone()).collect();
        let mut generators = HashSet::new();
        if names.iter().any(|name| bci::is_generator_owner(name)) {
            generators = classes
                .iter()
                .filter(|(name, _)| !jvm::is_module_reads_path(name))
                .filter(|(_, class)| {
                    jvm::constant_pool(env, class.get()).is_some_and(|p| bci::generates_classes(&p))
                })
                .map(|(name, _)| name.clone())
                .collect();
        }
        let early = Self {
            names,
            phase: AtomicU8::new(EarlyPhase::ByEvents as u8),
            makers: makers.to_vec(),
            methods: Mutex::default(),
        };
        (early, generators)
    }

    /// The class generators among them are retransformed at VM init, not
    /// at the hand-over, and leave the classes counted from events: what
    /// they generate is defined as a hidden class, which only their own
    /// rewritten code hands the counting (no ClassFileLoadHook sees it, no
    /// retransformation reaches it), so a lambda spun before the hand-over
    /// would stay uncounted for good (`Supplier<P> s = P::new`: no row for
    /// P). They load before VM init when the JVM builds the module graph
    /// itself rather than take its archived one (`-javaagent`,
    /// `--add-modules`). A frame of theirs still in the old code at this
    /// moment (a thread the java agent started) counts its objects nowhere.
    fn hand_over_now(
        &mut self,
        env: &Jvmti,
        jni: &JniEnv,
        generators: &HashSet<String>,
    ) -> Option<jvmti::jvmtiError> {
        if generators.is_empty() {
            return None;
        }
        let done = crate::agent::jvm::retransform::loaded_classes(env, jni, |name, _| {
            generators.contains(name)
        });
        self.names.retain(|name| !generators.contains(name));
        done.refused
    }

    /// Whether the class of this internal name is left as it loaded, and
    /// counted from events until the hand-over: loaded before VM init, or on
    /// the path the JVM runs when an agent changes a class of a named module
    /// (`jvm::is_module_reads_path`), which must load unchanged.
    fn counts_by_events(&self, class: &str) -> bool {
        self.names.contains(class) || jvm::is_module_reads_path(class)
    }

    fn kind(&self, env: &Jvmti, method: u64) -> EarlyMethod {
        if let Some(&known) = self.methods.lock().get(&method) {
            return known;
        }
        let kind = self.look_at(env, method);
        self.methods.lock().insert(method, kind);
        kind
    }

    fn look_at(&self, env: &Jvmti, method: u64) -> EarlyMethod {
        let Some(class) = jvm::declaring_class(env, method).and_then(|c| internal_name(env, c))
        else {
            return EarlyMethod::Other;
        };
        if !self.counts_by_events(&class) {
            return EarlyMethod::Other;
        }
        if !jvm::is_native_method(env, method) {
            return EarlyMethod::Counted;
        }
        let unreported = jvm::method_name(env, method).is_some_and(|(name, descriptor)| {
            self.makers.iter().any(|rule| {
                rule.owner == class && rule.name == name && rule.descriptor == descriptor
            })
        });
        if unreported {
            EarlyMethod::UnreportedMaker
        } else {
            EarlyMethod::Other
        }
    }
}

/// `java/lang/String` for the class `Ljava/lang/String;`; None for arrays
/// and primitives.
fn internal_name(env: &Jvmti, class: jvm::LocalClass<'_>) -> Option<String> {
    let signature = jvm::class_signature(env, class)?;
    Some(signature.strip_prefix('L')?.strip_suffix(';')?.to_owned())
}

/// Allocations walked first per site and stripe (the tracker has four
/// stripes, by thread id) once the live sample samples: with the sample's
/// rows, a site the live sample misses (one that allocates little once the
/// sample thins out) still gets the traces of its first allocations,
/// instead of its frame alone. Each walk is a JVMTI stack walk (a few
/// microseconds).
pub const FIRST_WALKS_PER_STRIPE: i32 = 4;

/// After its first walks, the tracker walks about one allocation of a site
/// in this many (`AllocTracker.THINNING_SHIFT`), chosen by a hash of the
/// site and its count, so that a deterministic program has the same ones
/// walked in every run. javac: about 11,500 walks for 47 million objects.
pub const THINNING: u64 = 1 << 12;

thread_local! {
    /// Set while this thread tries whether a VM maker posts VMObjectAlloc;
    /// the event handler sets it to `Some(true)` and counts nothing.
    static PROBE: std::cell::Cell<Option<bool>> = const { std::cell::Cell::new(None) };
}

/// For the VMObjectAlloc handler: true (the event is then not counted)
/// when the agent is trying a VM maker on this thread.
pub fn probing_noted() -> bool {
    PROBE.with(|p| {
        let probing = p.get().is_some();
        if probing {
            p.set(Some(true));
        }
        probing
    })
}

/// For the SampledObjectAlloc handler: true when the agent is trying a VM
/// maker on this thread (the event then says nothing of the program).
pub fn probing() -> bool {
    PROBE.with(|p| p.get().is_some())
}

impl BytecodeCounting {
    /// Counting with traces of `depth` frames: the site's, and with `depth`
    /// above 1 its callers' from calling contexts (at most 3 of them).
    pub fn new(depth: usize) -> Self {
        let callers = depth.saturating_sub(1).min(bci::WINDOW_CALL_SITES);
        // (Asked whatever the depth: the early class-load hook, which the
        // classes loaded before VM init and the field need, is what -Xshare:on
        // refuses.)
        let sharing_required = shared_archive::sharing_required();
        let contexts_refused = callers > 0 && sharing_required;
        // Without the field, the counting is depth 1's.
        let callers = if sharing_required { 0 } else { callers };
        Self {
            tracker: OnceLock::new(),
            registry: Mutex::default(),
            sizes: Mutex::default(),
            failure_reported: AtomicBool::new(false),
            exhausted: AtomicBool::new(false),
            method_keys: Mutex::default(),
            unreported_makers: OnceLock::new(),
            rewrite_makers: OnceLock::new(),
            clones: CountedClones::default(),
            made: Mutex::default(),
            walked: Mutex::default(),
            first_walks: 0,
            trace_walked: Mutex::default(),
            trace_walk_count: AtomicU64::new(0),
            vm_made_walked: Mutex::default(),
            callers,
            context_field: OnceLock::new(),
            field_lost: AtomicBool::new(false),
            maker_windows: false,
            huge_allowed: AtomicBool::new(false),
            retransforming: AtomicBool::new(false),
            uncounted_named: AtomicUsize::new(0),
            sharing_required,
            contexts_refused,
            early: false,
            early_left_alone: false,
            early_methods: None,
            windows_in_slots: false,
            window_slots: OnceLock::new(),
        }
    }

    /// With `on` (and no calling contexts), the calls the VM makes objects
    /// in write their call site into the thread's field, so that those
    /// objects are placed without a walk of the stack (not under
    /// `-Xshare:on`, which keeps the field away).
    pub fn placing_vm_made_objects_by_call(mut self, on: bool) -> Self {
        self.maker_windows = on && self.callers == 0 && !self.sharing_required;
        self
    }

    /// With `on`, each site's first [`FIRST_WALKS_PER_STRIPE`] allocations
    /// of each stripe of the tracker's counters, and about one in
    /// [`THINNING`] after them, are walked for their trace (see
    /// [`Self::trace_walk_rows`]).
    pub fn walking_for_traces(mut self, on: bool) -> Self {
        self.first_walks = if on { FIRST_WALKS_PER_STRIPE } else { 0 };
        self
    }

    /// With `early`, the classes loaded before VM init are rewritten as
    /// they load (not under `-Xshare:on`, which keeps the early hook away).
    pub fn rewriting_early(mut self, early: bool) -> Self {
        self.early = early && !self.sharing_required;
        self
    }

    /// The classes loaded before VM init are left as they are: no early
    /// hook, no field in java.lang.Thread, no retransformation at VM init
    /// (a measuring aid: their allocations go uncounted).
    pub fn leaving_early_classes_alone(mut self) -> Self {
        self.early = false;
        self.maker_windows = false;
        self.early_left_alone = true;
        self
    }

    /// The classes loaded before VM init are left as they load, their
    /// allocations counted from the live sample's events until they are
    /// handed over to the counters (`early_hand_over.rs`); the maker calls'
    /// sites go into the accessor's slots. Not with calling contexts, which
    /// need java.lang.Thread's field (they are then counted as before).
    pub fn counting_early_by_events(mut self) -> Self {
        if self.callers > 0 {
            return self;
        }
        self.early = false;
        self.early_left_alone = true;
        self.windows_in_slots = self.maker_windows;
        self.early_methods = Some(OnceLock::new());
        self
    }

    /// How many of the top frames of an allocation's stack (`top`, then
    /// `caller`) to leave out of its trace when it is counted from its
    /// event: 0 when made in a method of a class loaded before VM init and
    /// left unchanged, 1 when made by a VM maker (that posts no
    /// VMObjectAlloc) such a method called; None when the counters or
    /// VMObjectAlloc count it.
    pub fn counts_by_event(&self, env: &Jvmti, top: u64, caller: Option<u64>) -> Option<usize> {
        let early = self.early_methods.as_ref()?.get()?;
        match early.kind(env, top) {
            EarlyMethod::Counted => Some(0),
            EarlyMethod::UnreportedMaker
                if caller.is_some_and(|c| early.kind(env, c) == EarlyMethod::Counted) =>
            {
                Some(1)
            }
            _ => None,
        }
    }

    /// Whether the class `name` is to load unchanged (a first load, not a
    /// retransformation): before the hand-over, a class on the path the JVM
    /// runs when an agent changes a class of a named module, which the
    /// change of such a class starts again inside itself (a
    /// ClassCircularityError for `java/lang/WeakPairMap$Pair$Weak`, as
    /// another agent's first class change met); counted from events.
    pub fn loads_unchanged(&self, name: &str) -> bool {
        self.early_phase() == Some(EarlyPhase::ByEvents) && jvm::is_module_reads_path(name)
    }

    /// Where the hand-over of the classes loaded before VM init stands
    /// (None: they are not counted from events).
    pub fn early_phase(&self) -> Option<EarlyPhase> {
        let early = self.early_methods.as_ref()?.get()?;
        Some(match early.phase.load(Ordering::SeqCst) {
            0 => EarlyPhase::ByEvents,
            1 => EarlyPhase::HandingOver,
            _ => EarlyPhase::HandedOver,
        })
    }

    /// Waits until the hand-over has ended; false when it took longer than
    /// [`HAND_OVER_PATIENCE`].
    pub fn wait_for_hand_over(&self) -> bool {
        let started = std::time::Instant::now();
        while self.early_phase() == Some(EarlyPhase::HandingOver) {
            if started.elapsed() > HAND_OVER_PATIENCE {
                return false;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        true
    }

    /// On an agent thread: the classes loaded before VM init are
    /// retransformed, so that their code counts from now on; the events of
    /// their allocations meanwhile wait for the end (see
    /// `events::count_early_by_event`).
    pub fn hand_over_early_classes(&self, env: &Jvmti, jni: &JniEnv) {
        let Some(early) = self.early_methods.as_ref().and_then(OnceLock::get) else {
            return;
        };
        if early
            .phase
            .compare_exchange(
                EarlyPhase::ByEvents as u8,
                EarlyPhase::HandingOver as u8,
                Ordering::SeqCst,
                Ordering::SeqCst,
            )
            .is_err()
        {
            return;
        }
        self.retransforming.store(true, Ordering::Relaxed);
        let done = crate::agent::jvm::retransform::loaded_classes(env, jni, |name, boot| {
            boot && early.counts_by_events(name)
        });
        self.retransforming.store(false, Ordering::Relaxed);
        early
            .phase
            .store(EarlyPhase::HandedOver as u8, Ordering::SeqCst);
        if let Some(error) = done.refused {
            eprintln!(
                "HPROF ERROR: heap=sites could not count the allocations of some classes loaded before VM init in their code ({error:?}); counted from events until the sample thins out"
            );
        }
    }

    /// Whether the rewritten code counts the copies of its `clone()` calls
    /// after them (known from VM init on).
    pub fn counts_clones_after_calls(&self) -> bool {
        self.rewrite_makers
            .get()
            .is_some_and(|makers| makers.iter().any(|m| m.owner == bci::CLONE_RULE.owner))
    }

    /// Whether any allocation is counted from its event by
    /// [`counts_by_event`](Self::counts_by_event).
    pub fn counts_early_by_events(&self) -> bool {
        self.early_methods.is_some()
    }

    /// No class is rewritten as it loads (attached: they are all loaded).
    pub fn rewrite_nothing_early(&mut self) {
        self.early = false;
    }

    /// Whether classes loaded before VM init are rewritten as they load.
    pub fn rewrites_early(&self) -> bool {
        self.early
    }

    /// At the JVM's start, before any Java code runs: the context accessor
    /// and the gate the early classes call are defined in the boot loader.
    /// Should java.lang.Thread lack its field (another agent's doing), the
    /// gate's context methods do nothing and contexts are off.
    pub fn define_early_classes(&self, jni: &JniEnv) -> Result<(), String> {
        let field =
            self.wants_thread_field() && crate::agent::jvm::thread_field_env::thread_has_field();
        if self.wants_thread_field() && !field {
            self.field_lost.store(true, Ordering::Relaxed);
            eprintln!(
                "HPROF ERROR: heap=sites cannot keep calling contexts (java.lang.Thread was loaded without its field); traces stop at the allocating frame"
            );
        }
        if field {
            alloc_tracker::define_context_accessor(jni)?;
        }
        let bytes = bci::early_gate_class_file(bci::ALLOC_TRACKER_CLASS, true, field)?;
        crate::agent::jvm::define_boot_class(jni, bci::EARLY_GATE_CLASS, &bytes, "early gate")
            .map(drop)
    }

    /// Frames a counted row's trace shows: the site's and its callers'
    /// from the calling context.
    pub fn trace_frames(&self) -> usize {
        match self.keeps_contexts() {
            true => 1 + self.callers,
            false => 1,
        }
    }

    /// Whether calling contexts, or the maker calls' sites, are wanted:
    /// java.lang.Thread then needs its field from the moment the JVM
    /// loads it.
    pub fn wants_thread_field(&self) -> bool {
        !self.windows_in_slots && (self.callers > 0 || self.maker_windows)
    }

    /// Why contexts that `depth` asked for are not kept from the start,
    /// if that is so (said once, at load time).
    pub fn contexts_refused(&self) -> Option<&'static str> {
        self.contexts_refused.then_some(
            "-Xshare:on keeps java.lang.Thread from the shared archive, so heap=sites cannot give it the field calling contexts live in: counts are exact, traces stop at the allocating frame (-Xshare:auto or alloc_count=events keeps whole traces)",
        )
    }

    /// Which calls the rewrite gives context code: every call with
    /// contexts, else the calls the VM makes objects in.
    fn context_scope(&self) -> bci::ContextScope {
        match self.keeps_contexts() {
            true => bci::ContextScope::EveryCall,
            false => bci::ContextScope::VmMakerCalls,
        }
    }

    /// Whether calling contexts are kept (wanted, and the field is there).
    pub fn keeps_contexts(&self) -> bool {
        self.callers > 0 && !self.field_lost.load(Ordering::Relaxed)
    }

    /// Whether the rewritten code writes the thread's field: calling
    /// contexts, or the maker calls' sites (wanted, and the field is there).
    fn writes_field(&self) -> bool {
        if self.windows_in_slots {
            return self.window_slots.get().is_some();
        }
        self.wants_thread_field() && !self.field_lost.load(Ordering::Relaxed)
    }

    /// The calling context `thread` holds now (its top bit dropped, as the
    /// tracker keys it), when contexts are kept (or, without them, the
    /// site of the maker call it is in).
    pub fn thread_context(
        &self,
        env: &Jvmti,
        jni: &JniEnv,
        thread: crate::agent::jvm::LocalThread<'_>,
    ) -> Option<u64> {
        if !self.writes_field() {
            return None;
        }
        let window = match self.window_slots.get() {
            Some(slots) => slots.read(env, jni, thread)?,
            None => self.context_field.get()?.read(jni, thread)?,
        };
        Some(bci::context_key(window))
    }

    /// The callers `context` names for an allocation at `site`, and
    /// whether the chain held (see [`SiteRegistry::callers_below`]); None
    /// for an unknown site.
    pub fn site_callers(&self, site: u32, context: u64) -> Option<(Vec<CallerFrame>, bool)> {
        let registry = self.registry.lock();
        let counted = registry.sites.get(site as usize)?;
        Some(registry.site_callers(context, self.callers, counted))
    }

    /// One allocation at `site`, of `bytes` (0 for an instance), counted
    /// under the walked trace `trace_serial`.
    pub fn count_walked(&self, site: u32, trace_serial: u32, bytes: u64) {
        let mut walked = self.walked.lock();
        let count = walked.entry((site, trace_serial)).or_default();
        count.objects += 1;
        count.bytes += bytes;
    }

    /// An allocation at `site`, of `bytes` (0 for an instance), the one
    /// numbered `before` on its stripe, seen on the walked trace
    /// `trace_serial`: one of the site's first (it stands for itself) or
    /// one the tracker's thinning chose (it stands for [`THINNING`]).
    pub fn count_trace_walk(&self, site: u32, trace_serial: u32, bytes: u64, before: u64) {
        let weight = if before < self.first_walks.max(0) as u64 {
            1
        } else {
            THINNING
        };
        self.trace_walk_count.fetch_add(1, Ordering::Relaxed);
        let mut walked = self.trace_walked.lock();
        let count = walked.entry((site, trace_serial)).or_default();
        count.objects += weight;
        count.bytes += bytes * weight;
    }

    /// Whether allocations are walked for their sites' traces.
    pub fn walks_for_traces(&self) -> bool {
        self.first_walks > 0
    }

    /// An object the VM made, of class `class_serial` and `bytes`, seen on
    /// the walked trace `trace_serial` (see `vm_made_walked`).
    pub fn count_vm_made_walk(&self, class_serial: u32, trace_serial: u32, bytes: u64) {
        let mut walked = self.vm_made_walked.lock();
        let count = walked.entry((class_serial, trace_serial)).or_default();
        count.objects += 1;
        count.bytes += bytes;
    }

    /// What the walks of objects the VM made saw: by (class serial, trace
    /// serial), the objects and bytes.
    pub fn vm_made_walks(&self) -> Vec<((u32, u32), SiteCount)> {
        let walked = self.vm_made_walked.lock();
        walked.iter().map(|(&key, &count)| (key, count)).collect()
    }

    /// What the first walks of each site saw, as rows of their walked
    /// traces: not counts to add, but the traces a site's counts may be
    /// shared among where the live sample saw none of them.
    pub fn trace_walk_rows(&self) -> Vec<CountedRow> {
        let walked = self.trace_walked.lock().clone();
        let registry = self.registry.lock();
        walked
            .into_iter()
            .filter_map(|((site, trace_serial), count)| {
                let counted = registry.sites.get(site as usize)?;
                let class = &registry.classes[counted.place.class as usize];
                let mut row =
                    CountedRow::empty(counted, class, registry.method(counted.place.method));
                row.identity.walked = Some(trace_serial);
                Some(CountedRow { count, ..row })
            })
            .collect()
    }

    /// The callers `context` names for a frame in method `(name,
    /// descriptor)`, and whether the chain held: false when a call does not
    /// name the method below it (see [`SiteRegistry::callers`]).
    pub fn callers_of(&self, context: u64, method: (&str, &str)) -> (Vec<CallerFrame>, bool) {
        let registry = self.registry.lock();
        let callee = (Arc::from(method.0), Arc::from(method.1));
        registry.callers_below(context, self.callers, callee)
    }

    /// At VM init: defines and initialises the tracker, whose natives
    /// report to `events`.
    pub fn define_tracker(
        &self,
        env: &Jvmti,
        jni: &JniEnv,
        events: &'static dyn alloc_tracker::AllocEvents,
    ) -> Result<(), String> {
        let field = alloc_tracker::ContextField::find(jni);
        if let Some(field) = field {
            let _ = self.context_field.set(field);
        }
        if self.wants_thread_field() && !self.early {
            let accessor = match field {
                Some(_) => alloc_tracker::define_context_accessor(jni),
                None => Err("java.lang.Thread was loaded without its field".into()),
            };
            if let Err(why) = accessor {
                self.field_lost.store(true, Ordering::Relaxed);
                eprintln!(
                    "HPROF ERROR: heap=sites cannot keep calling contexts ({why}); traces stop at the allocating frame"
                );
            }
        }
        if self.windows_in_slots {
            match alloc_tracker::WindowSlots::define(jni) {
                Ok(slots) => {
                    let _ = self.window_slots.set(slots);
                }
                Err(why) => eprintln!(
                    "HPROF ERROR: heap=sites cannot place the objects the VM makes by their calls ({why}); it walks their stacks instead"
                ),
            }
        }
        let key_slots = if self.keeps_contexts() {
            alloc_tracker::CONTEXT_KEY_SLOTS
        } else {
            0
        };
        let tracker = AllocTracker::define(env, jni, events, key_slots, self.first_walks)?;
        let unreported = unreported_makers(jni);
        let mut rewrite_makers = unreported.clone();
        if self.writes_field() {
            // (The field tells the VM's event for a copy the call counts:
            // without it the VM's events count clones, as before.)
            rewrite_makers.push(bci::CLONE_RULE);
        }
        let _ = self.rewrite_makers.set(rewrite_makers);
        let _ = self.unreported_makers.set(unreported);
        let _ = self.tracker.set(tracker);
        Ok(())
    }

    /// What `verbose=y` says at a dump of the rewriting once a class was
    /// defined again: the distinct class files, the definitions that
    /// reused their numbers, the sites.
    pub fn describe(&self) -> Option<String> {
        let registry = self.registry.lock();
        let reloads = registry.reloads.describe()?;
        Some(format!(
            "heap=sites: {reloads}, {} allocation sites numbered",
            registry.sites.len()
        ))
    }

    /// Allocations counted by walking their stack so far (their calling
    /// context did not hold).
    pub fn walked_allocations(&self) -> u64 {
        self.walked.lock().values().map(|c| c.objects).sum()
    }

    /// The tracker's walks so far, and the sites they were at.
    pub fn trace_walks_made(&self) -> (u64, usize) {
        let walked = self.trace_walked.lock();
        let sites: HashSet<u32> = walked.keys().map(|&(site, _)| site).collect();
        (self.trace_walk_count.load(Ordering::Relaxed), sites.len())
    }

    /// Whether the tracker is there to be called.
    pub fn ready(&self) -> bool {
        self.tracker.get().is_some()
    }

    /// ClassFileLoadHook: the class with its allocations counted, or None
    /// to load it unchanged (no tracker yet, the agent's own classes, no
    /// allocation, no site numbers left, a class file the rewriter does not
    /// take).
    pub fn rewrite(&self, name: Option<&str>, bytes: &[u8]) -> Option<Vec<u8>> {
        if self.wants_thread_field() && name == Some("java/lang/Thread") {
            // From its first load on (and again at each retransformation,
            // which starts from the bytes before this change).
            let with_field = bci::add_context_field(bytes).ok()?;
            return Some(
                self.rewrite_counted(name, &with_field)
                    .unwrap_or(with_field),
            );
        }
        self.rewrite_counted(name, bytes)
    }

    fn rewrite_counted(&self, name: Option<&str>, bytes: &[u8]) -> Option<Vec<u8>> {
        let through_gate = !self.ready() && self.early;
        if (!self.ready() && !through_gate)
            || bytes.is_empty()
            || name.is_some_and(|n| bci::is_agent_class(n) || n == bci::EARLY_GATE_CLASS)
        {
            return None;
        }
        let key = name.map(|name| ClassKey::of(name, bytes));
        let mut registry = self.registry.lock();
        let first = registry.sites.len() as u32;
        if first > bci::MAX_SITE {
            if !self.exhausted.swap(true, Ordering::Relaxed) {
                eprintln!(
                    "HPROF ERROR: heap=sites numbered {} allocation sites, its most: classes loaded from now on are not counted",
                    bci::MAX_SITE as u64 + 1
                );
            }
            return None;
        }
        // Before VM init this JVM's unreported makers are not known yet:
        // every maker call is counted, and the classes that have one are
        // rewritten again at VM init if the JVM reports some itself.
        let makers = match self.rewrite_makers.get() {
            Some(makers) => makers.as_slice(),
            None if through_gate => bci::VM_MAKER_RULES,
            None => &[],
        };
        let compact = self.retransforming.load(Ordering::Relaxed);
        if let Some(again) = key
            .as_ref()
            .filter(|_| !through_gate)
            .and_then(|key| self.rewrite_again(&registry, key, bytes, makers, compact))
        {
            registry.reloads.note_reused();
            return Some(again);
        }
        let scope = self.context_scope();
        let first_call_site = self.writes_field().then(|| {
            if registry.call_sites.is_empty() {
                registry.call_sites.push(None); // number 0: no call site
            }
            registry.call_sites.len() as u32
        });
        let outcome = if through_gate {
            bci::rewrite_counting_allocations_through_gate(
                bytes,
                first,
                makers,
                first_call_site,
                scope,
            )
        } else {
            bci::rewrite_counting_allocations_with(
                bytes,
                first,
                makers,
                first_call_site,
                scope,
                compact,
            )
        }
        .ok()?;
        self.say_uncounted(name, &outcome, bytes);
        if outcome.counted_already && name.is_some() {
            // Returned as they are, but returned: a class the hook changed
            // is one the JVM makes its named module read the unnamed
            // modules for (the tracker's among them). A proxy class of a
            // dynamic module, counted when generated, needs that to call
            // the tracker (JDK 25 under JFR: IllegalAccessError without).
            return Some(outcome.bytes);
        }
        if outcome.sites.is_empty() && outcome.call_sites.is_empty() {
            return None;
        }
        if !outcome.grown_huge.is_empty() {
            self.allow_huge_methods(&outcome.grown_huge);
        }
        let numbers = FirstNumbers {
            first,
            first_call_site,
            taken: (outcome.sites.len() as u32, outcome.call_sites.len() as u32),
        };
        if let Some(key) = key {
            registry.reloads.insert(key, numbers);
        }
        let name = name.map_or_else(|| outcome.class_name.clone(), str::to_owned);
        if through_gate
            && outcome
                .sites
                .iter()
                .any(|site| matches!(site.allocated, bci::Allocated::Made))
        {
            registry.early_makers.insert(name.clone());
        }
        registry.add(&name, &outcome);
        self.clones.note(&outcome.sites);
        Some(outcome.bytes)
    }

    /// Names, on standard error, each method whose allocations the rewrite
    /// had to leave uncounted (their objects are in no row): the first
    /// [`MAX_UNCOUNTED_NAMED`], then once that there are more.
    fn say_uncounted(&self, name: Option<&str>, outcome: &bci::CountingOutcome, bytes: &[u8]) {
        for (method, why) in bci::uncounted_methods(bytes, outcome) {
            let named = self.uncounted_named.fetch_add(1, Ordering::Relaxed);
            let class = name.unwrap_or(&outcome.class_name).replace('/', ".");
            if named < MAX_UNCOUNTED_NAMED {
                eprintln!(
                    "HPROF: heap=sites cannot count the allocations of {class}.{method} ({why}): its objects are in no row (alloc_count=events counts them)"
                );
            } else if named == MAX_UNCOUNTED_NAMED {
                eprintln!(
                    "HPROF: heap=sites cannot count the allocations of more methods; those are not named"
                );
            }
        }
    }

    /// A class file rewritten before (the same bytes under the same name),
    /// rewritten again with the numbers it got then: its sites are in the
    /// registry already. None when it was not seen, or the rewrite now
    /// differs (calling contexts since turned off, a hash collision).
    /// `compact`: site numbers pushed as a base and an offset.
    fn rewrite_again(
        &self,
        registry: &SiteRegistry,
        key: &ClassKey,
        bytes: &[u8],
        makers: &[bci::CallRule],
        compact: bool,
    ) -> Option<Vec<u8>> {
        let before = registry.reloads.get(key)?;
        if before.first_call_site.is_some() != self.writes_field() {
            return None;
        }
        let outcome = bci::rewrite_counting_allocations_with(
            bytes,
            before.first,
            makers,
            before.first_call_site,
            self.context_scope(),
            compact,
        )
        .ok()?;
        let taken = (outcome.sites.len() as u32, outcome.call_sites.len() as u32);
        (taken == before.taken && !outcome.counted_already).then_some(outcome.bytes)
    }

    /// HotSpot never compiles a method of more than 8,000 bytes of
    /// bytecode; the calling-context code took one past that, so the limit
    /// goes (`-XX:-DontCompileHugeMethods`), or the program's hottest loop
    /// (Rhino's interpreter, say) could stay interpreted for good.
    fn allow_huge_methods(&self, methods: &[String]) {
        if self.huge_allowed.swap(true, Ordering::Relaxed) {
            return;
        }
        if !crate::agent::jvm::libjvm::set_bool_flag(c"DontCompileHugeMethods", false) {
            eprintln!(
                "HPROF ERROR: heap=sites made {} longer than the JIT compiles, and could not lift that limit; it may run slower",
                methods.join(", ")
            );
        }
    }

    /// At VM init, once the ClassFileLoadHook is enabled: the classes
    /// loaded so far are rewritten too.
    /// Then the objects in the heap are marked, so that live counts leave
    /// them out.
    /// (`class_class_tag`: the tag of `java.lang.Class`, whose instances
    /// keep the tags the agent names classes by.)
    pub fn retransform_loaded(&self, env: &Jvmti, jni: &JniEnv, class_class_tag: u64) {
        self.retransforming.store(true, Ordering::Relaxed);
        let failed = if self.early {
            self.settle_early_classes(env, jni)
        } else if self.early_left_alone {
            let mut failed = None;
            if let Some(methods) = &self.early_methods {
                let makers = self.unreported_makers.get().map_or(&[][..], Vec::as_slice);
                let (mut early, generators) = EarlyClasses::loaded(env, jni, makers);
                failed = early.hand_over_now(env, jni, &generators);
                let _ = methods.set(early);
            }
            failed
        } else {
            alloc_tracker::retransform_loaded_classes(env, jni)
        };
        self.retransforming.store(false, Ordering::Relaxed);
        if let Some(error) = failed {
            eprintln!(
                "HPROF ERROR: heap=sites could not count the allocations of some classes loaded before VM init ({error:?})"
            );
        }
        if class_class_tag == 0 {
            eprintln!(
                "HPROF ERROR: heap=sites cannot tell class objects apart; live counts may be high"
            );
        } else if let Err(error) = alloc_tracker::mark_present_objects(env, class_class_tag) {
            eprintln!(
                "HPROF ERROR: heap=sites could not mark the objects made before it began ({error:?}); live counts may be high"
            );
        }
    }

    /// The classes rewritten as they loaded before VM init: those that
    /// count a call this JVM reports objects of itself (VMObjectAlloc) are
    /// rewritten again without it, then the gate they call opens.
    fn settle_early_classes(&self, env: &Jvmti, jni: &JniEnv) -> Option<jvmti::jvmtiError> {
        let reported_some = self
            .unreported_makers
            .get()
            .is_some_and(|makers| makers.len() < bci::VM_MAKER_RULES.len());
        let again = std::mem::take(&mut self.registry.lock().early_makers);
        let mut failed = None;
        if reported_some && !again.is_empty() {
            failed = crate::agent::jvm::retransform::loaded_classes(env, jni, |name, _| {
                again.contains(name)
            })
            .refused;
        }
        let contexts = self.keeps_contexts();
        if let Some(Err(why)) = self
            .tracker
            .get()
            .map(|t| t.open_early_gate(env, jni, contexts))
        {
            eprintln!(
                "HPROF ERROR: heap=sites cannot count the classes loaded before VM init ({why})"
            );
        }
        failed
    }

    /// The counts so far, per site identity (JNI reads of the tracker).
    pub fn counted_rows(&self, env: &Jvmti, jni: &JniEnv) -> Vec<CountedRow> {
        let Some(tracker) = self.tracker.get() else {
            return Vec::new();
        };
        if let Some(failure) = tracker.failure(env, jni)
            && !self.failure_reported.swap(true, Ordering::Relaxed)
        {
            eprintln!(
                "HPROF ERROR: heap=sites left some allocations uncounted after {failure} in its tracker"
            );
        }
        let sites = self.registry.lock().sites.len();
        let counts = tracker.read_counts(jni, sites);
        let keyed = tracker.read_keyed(jni);
        let walked = self.walked.lock().clone();
        let registry = self.registry.lock();
        let mut rows = registry.rows(&counts, &keyed, self.callers);
        for ((site, trace_serial), count) in walked {
            let Some(counted) = registry.sites.get(site as usize) else {
                continue;
            };
            let class = &registry.classes[counted.place.class as usize];
            let mut row = CountedRow::empty(counted, class, registry.method(counted.place.method));
            row.identity.walked = Some(trace_serial);
            rows.push(CountedRow { count, ..row });
        }
        rows
    }

    /// The instance size of each class named in `signatures` that has no
    /// known size yet, found from `live` (bytes / objects of a class with
    /// live instances) or a blank instance.
    pub fn learn_sizes(
        &self,
        env: &Jvmti,
        jni: &JniEnv,
        classes: &HashMap<String, (crate::agent::jvm::LocalClass<'_>, u64)>,
        live: &FxHashMap<u64, (u64, u64)>,
    ) {
        let mut sizes = self.sizes.lock();
        for (signature, (class, tag)) in classes {
            if sizes.contains_key(signature) || signature.starts_with('[') {
                continue;
            }
            let from_live = live
                .get(tag)
                .filter(|(objects, _)| *objects > 0)
                .map(|(objects, bytes)| bytes / objects);
            let size = from_live.or_else(|| {
                crate::agent::run::threads::as_agent(|| {
                    alloc_tracker::instance_size(env, jni, *class)
                })
            });
            sizes.insert(signature.clone(), size);
        }
    }

    /// The instance size of class `signature`, if known.
    pub fn instance_size(&self, signature: &str) -> Option<u64> {
        self.sizes.lock().get(signature).copied().flatten()
    }

    /// The number naming a method (class internal name, method number) in
    /// frame keys.
    pub fn method_key(&self, class_name: &str, method_index: u16) -> u64 {
        let mut keys = self.method_keys.lock();
        let next = keys.len() as u64 + 1;
        *keys
            .entry((class_name.to_owned(), method_index))
            .or_insert(next)
    }

    /// The site number the tracker counts the objects of class
    /// `signature` made at the maker call `site` under (see
    /// [`SiteRegistry::made_site`]).
    pub fn made_site(&self, site: u32, signature: &str) -> Option<u32> {
        self.registry.lock().made_site(site, signature)
    }

    /// The tracker's `madeSlow` (a class the tracker got no site number
    /// for): an object of the class tagged `class_tag`, `size` bytes, made
    /// by the call at `site` in calling context `context`.
    pub fn count_made(&self, site: u32, context: u64, class_tag: u64, size: u64) {
        let mut key = (site, bci::context_key(context), class_tag);
        let mut made = self.made.lock();
        if made.len() >= MAX_MADE_KEYS && !made.contains_key(&key) {
            // Full: counted under the site alone, as the tracker's keyed
            // table does (the trace stops at the site).
            key.1 = 0;
        }
        let count = made.entry(key).or_default();
        count.objects += 1;
        count.bytes += size;
    }

    /// The rows of what the VM-maker calls made, each class named by
    /// `signature_of` its tag.
    pub fn made_rows(&self, signature_of: impl Fn(u64) -> Option<String>) -> Vec<CountedRow> {
        let made = self.made.lock().clone();
        let registry = self.registry.lock();
        made.into_iter()
            .filter_map(|((site, context, class_tag), count)| {
                let counted = registry.sites.get(site as usize)?;
                let class = &registry.classes[counted.place.class as usize];
                let mut row =
                    CountedRow::empty(counted, class, registry.method(counted.place.method));
                // What a VM maker made is known per object, not per site.
                row.identity.allocated = signature_of(class_tag)?;
                let row = row.called_by(registry.callers(context, self.callers, counted));
                Some(CountedRow { count, ..row })
            })
            .collect()
    }

    /// The classes the rows allocate, by JVM signature.
    pub fn allocated_signatures(rows: &[CountedRow]) -> HashSet<String> {
        rows.iter().map(|r| r.identity.allocated.clone()).collect()
    }

    /// The JVM signatures of the classes the rows' frames are in.
    pub fn frame_signatures(rows: &[CountedRow]) -> HashSet<String> {
        let mut names: HashSet<&str> = HashSet::new();
        for row in rows {
            names.insert(&row.identity.class_name);
            names.extend(row.identity.callers.iter().map(|c| c.0.as_str()));
        }
        names.into_iter().map(|n| format!("L{n};")).collect()
    }
}

/// The VM makers of `bci::VM_MAKER_RULES` that post no VMObjectAlloc
/// event on this JVM: each is called once on this thread to see (JDK 17's
/// `Unsafe.allocateInstance` posts none, JDK 21's does).
fn unreported_makers(jni: &JniEnv) -> Vec<bci::CallRule> {
    bci::VM_MAKER_RULES
        .iter()
        .filter(|rule| {
            PROBE.with(|p| p.set(Some(false)));
            let called = alloc_tracker::make_one_with(jni, rule);
            let reported = PROBE.with(|p| p.replace(None)) == Some(true);
            called && !reported
        })
        .copied()
        .collect()
}

#[cfg(test)]
mod tests {

    #[test]
    fn objects_of_a_maker_call_get_a_site_per_class_up_to_a_bound() {
        let mut registry = SiteRegistry::default();
        registry.sites.push(CountedSite {
            place: CodePlace {
                class: 0,
                method_index: 0,
                method: 0,
                bci: 3,
                line: Some(7),
            },
            allocated: Arc::from("Ljava/lang/Object;"),
            instance: true,
        });
        assert_eq!(registry.made_site(0, "LFoo;"), Some(1));
        assert_eq!(
            registry.made_site(0, "LFoo;"),
            Some(1),
            "the same pair, the same site"
        );
        assert_eq!(registry.sites[1].place.bci, 3, "at the call's place");
        assert_eq!(&*registry.sites[1].allocated, "LFoo;");
        assert!(registry.sites[1].instance);
        assert_eq!(registry.made_site(9, "LFoo;"), None, "no such call");
        for n in 1..MAX_MADE_SITES {
            assert!(registry.made_site(0, &format!("LC{n};")).is_some());
        }
        assert_eq!(
            registry.made_site(0, "LOneTooMany;"),
            None,
            "past the bound"
        );
        assert_eq!(
            registry.made_site(0, "LFoo;"),
            Some(1),
            "known pairs still answer"
        );
    }

    #[test]
    fn what_vm_makers_made_is_kept_under_a_bounded_number_of_keys() {
        let counting = BytecodeCounting::new(4);
        for context in 0..MAX_MADE_KEYS as u64 {
            counting.count_made(1, context + 1, 7, 16);
        }
        counting.count_made(2, 99, 7, 16);
        counting.count_made(1, 5, 7, 16);
        let made = counting.made.lock();
        assert_eq!(made.len(), MAX_MADE_KEYS + 1, "one key more: site 2 alone");
        assert_eq!(
            made[&(2, 0, 7)].objects,
            1,
            "a new key past the bound has no context"
        );
        assert_eq!(
            made[&(1, bci::context_key(5), 7)].objects,
            2,
            "a known key still counts"
        );
    }
    use super::*;

    #[test]
    fn sites_of_a_retransformed_class_merge_by_method_and_bytecode_index() {
        let mut registry = SiteRegistry::default();
        let site = |number, bci| bci::AllocationSite {
            number,
            method_index: 2,
            method_name: "run".into(),
            method_descriptor: "()V".into(),
            bci,
            line: Some(7),
            allocated: Allocated::Array("[I".into()),
        };
        let outcome = |sites| bci::CountingOutcome {
            bytes: vec![],
            class_name: "p/A".into(),
            source_file: Some("A.java".into()),
            sites,
            call_sites: vec![],
            grown_huge: vec![],
            methods: vec![],
            counted_already: false,
        };
        registry.add("p/A", &outcome(vec![site(0, 4), site(1, 9)]));
        // Retransformed: the same two sites get new numbers.
        registry.add("p/A", &outcome(vec![site(2, 4), site(3, 9)]));
        let count = |objects, bytes| SiteCount { objects, bytes };
        let counts = [count(1, 80), count(0, 0), count(2, 160), count(5, 400)];
        let rows = registry.rows(&counts, &[], 0);
        let summary: Vec<_> = rows
            .iter()
            .map(|r| (r.identity.bci, r.count.objects, r.count.bytes))
            .collect();
        assert_eq!(summary, [(4, 3, 240), (9, 5, 400)]);
        assert_eq!(rows[0].identity.allocated, "[I");
        assert!(!rows[0].instance);
    }
}
