//! Turning raw JVM stack frames into model traces: frames are resolved to
//! names and lines once per (method, location), then keyed by `depth`,
//! `thread=y` and `lineno`.

use crate::agent::jvm::{self, LocalClass, RawFrame};
use crate::model::traces::EMPTY_TRACE_SERIAL;
use crate::model::{
    ClassTable, FrameFacts, FrameKey, LINE_UNKNOWN, Model, ObjectIds, TraceKey, line_for_location,
};
use crate::options::Options;
use jvmti_bindings::prelude::*;
use std::sync::atomic::{AtomicU32, Ordering};

/// The most frames a trace holds. What a stack walk costs, and what the
/// JVM is asked to fill, grows with the depth: an unbounded `depth=` made
/// the agent ask for 2^31 frames (a 32 GB buffer) at start-up.
pub const MAX_TRACE_DEPTH: u32 = 1024;

/// Caps the options' trace depths at [`MAX_TRACE_DEPTH`], saying so once.
pub fn bound_depth(options: &mut Options) {
    if options.depth > MAX_TRACE_DEPTH {
        eprintln!(
            "HPROF: depth={} is taken as {MAX_TRACE_DEPTH}, the most frames a trace holds",
            options.depth
        );
        options.depth = MAX_TRACE_DEPTH;
    }
    options.prof_trace_depth = options.prof_trace_depth.min(MAX_TRACE_DEPTH);
}

/// The most frames a trace keeps from now on, below the run's depth: a
/// `net=` front end's CONTROL "set depth" (stacks are still taken with
/// the depth the run started with, so the depth can go down, not up).
static DEPTH_LIMIT: AtomicU32 = AtomicU32::new(u32::MAX);

/// Traces made from now on keep at most `depth` frames (up to the run's
/// `depth=`).
pub fn limit_depth(depth: u32) {
    DEPTH_LIMIT.store(depth, Ordering::Relaxed);
}

/// How traces are keyed in this run.
#[derive(Debug, Clone, Copy)]
pub struct TracePolicy {
    pub depth: u32,
    /// `thread=y`: the thread serial is part of the key.
    pub per_thread: bool,
    /// `lineno=y`: frames keep their bytecode location and line.
    pub line_numbers: bool,
}

impl TracePolicy {
    /// The serial of the trace made of `frames` (innermost first) on `thread_serial`.
    pub fn intern(
        &self,
        env: &Jvmti,
        model: &mut Model,
        frames: &[RawFrame],
        thread_serial: u32,
    ) -> u32 {
        let mut ids = Vec::with_capacity(frames.len());
        let depth = self.depth.min(DEPTH_LIMIT.load(Ordering::Relaxed));
        for &(method, location) in frames.iter().take(depth as usize) {
            // Without line numbers the location is dropped from the key, so
            // calls from different lines of one method share a frame.
            let location = if self.line_numbers { location } else { -1 };
            let key = FrameKey { method, location };
            let (classes, objects) = (&mut model.classes, &model.objects);
            ids.push(model.frames.intern(key, || {
                resolve_frame(env, classes, objects, method, location)
            }));
        }
        let key = TraceKey {
            frames: ids,
            thread_serial: self.per_thread.then_some(thread_serial),
            phase: None,
        };
        model.traces.intern(key)
    }
}

/// Key of the pseudo-frame `<no Java frames>.<unknown>`: no jmethodID has
/// this value (like [`TIMED_FRAME`], a bit no pointer sets).
const NO_JAVA_FRAMES: u64 = 1 << 62;

impl TracePolicy {
    /// The trace of a CPU sample whose Java stack could not be taken (the
    /// thread ended or blocked before the sampler looked): one pseudo-frame,
    /// so the sample is counted, visibly, and readers that expect every
    /// CPU SAMPLES row to have frames (hprof2flamegraph) still work.
    pub fn intern_no_java_frames(&self, model: &mut Model, thread_serial: u32) -> u32 {
        self.intern_pseudo(model, "<no Java frames>", 0, thread_serial)
    }

    /// The trace of a CPU sample whose stack could not be walked: one
    /// pseudo-frame `<name>.<unknown>`, keyed by `code` (a small number
    /// per name; 0 is `<no Java frames>`).
    pub fn intern_pseudo(
        &self,
        model: &mut Model,
        name: &str,
        code: u64,
        thread_serial: u32,
    ) -> u32 {
        let key = FrameKey {
            method: NO_JAVA_FRAMES | code,
            location: -1,
        };
        let frame = model.frames.intern(key, || FrameFacts {
            class_serial: 0,
            class_signature: format!("L{name};"),
            method_name: "<unknown>".into(),
            method_signature: "()V".into(),
            source_file: None,
            line: LINE_UNKNOWN,
        });
        model.traces.intern(TraceKey {
            frames: vec![frame],
            thread_serial: self.per_thread.then_some(thread_serial),
            phase: None,
        })
    }
}

fn resolve_frame(
    env: &Jvmti,
    classes: &mut ClassTable,
    objects: &ObjectIds,
    method: u64,
    location: i64,
) -> FrameFacts {
    let (method_name, method_signature) =
        jvm::method_name(env, method).unwrap_or_else(|| ("<Unknown Method>".into(), "()V".into()));
    let class = jvm::declaring_class(env, method).unwrap_or(LocalClass::null());
    let known = if class.is_null() {
        None
    } else {
        crate::agent::run::classes::intern_class(env, classes, objects, class, EMPTY_TRACE_SERIAL)
    };
    let (class_serial, class_signature, source_file) = match known {
        Some(known) => {
            let signature = classes
                .by_serial(known.serial)
                .map(|c| c.signature.clone())
                .unwrap_or_default();
            (known.serial, signature, jvm::source_file(env, class))
        }
        None => (0, "Unknown_class".to_owned(), None),
    };
    let line = if location < 0 {
        LINE_UNKNOWN
    } else {
        line_for_location(&jvm::line_table(env, method), location)
    };
    FrameFacts {
        class_serial,
        class_signature,
        method_name,
        method_signature,
        source_file,
        line,
    }
}

/// Top bit of the frame keys of timed methods (their "method" is the
/// timing collector's key, not a jmethodID; no pointer has this bit).
const TIMED_FRAME: u64 = 1 << 63;

/// The serial of the trace of a timed call: the method keys innermost
/// first, resolved with what the rewriter recorded. Timed frames have no
/// line numbers (HPROF printed `Unknown line` for them too).
pub fn intern_timed(
    model: &mut Model,
    keys: &[u64],
    methods: &[Option<crate::agent::modes::cpu_times::timing::TimedMethod>],
    thread_serial: Option<u32>,
) -> u32 {
    let frames = keys
        .iter()
        .zip(methods)
        .map(|(&key, method)| {
            model.frames.intern(
                FrameKey {
                    method: TIMED_FRAME | key,
                    location: -1,
                },
                || {
                    let (class_signature, method_name, method_signature) = match method {
                        Some(m) => (
                            format!("L{};", m.class_name),
                            m.method_name.clone(),
                            m.descriptor.clone(),
                        ),
                        None => (
                            "Unknown_class".into(),
                            "<Unknown Method>".into(),
                            "()V".into(),
                        ),
                    };
                    FrameFacts {
                        class_serial: 0,
                        class_signature,
                        method_name,
                        method_signature,
                        source_file: None,
                        line: LINE_UNKNOWN,
                    }
                },
            )
        })
        .collect();
    model.traces.intern(TraceKey {
        frames,
        thread_serial,
        phase: None,
    })
}

/// Top two bits of the frame keys of allocation sites counted in the
/// bytecode (their "method" is a number of the counting collector's, not a
/// jmethodID; no pointer has these bits).
const COUNTED_FRAME: u64 = 3 << 62;

/// The serial of the trace of an allocation site counted in the bytecode:
/// the allocating method at the site's line, then the callers its calling
/// context named, `depth` frames at most (none with `depth=0`).
/// `method_key` names a method (class internal name, method number)
/// uniquely; with the bytecode index, a frame.
pub fn intern_counted(
    policy: &TracePolicy,
    model: &mut Model,
    row: &crate::agent::modes::heap_sites::counting::CountedRow,
    method_key: impl Fn(&str, u16) -> u64,
) -> u32 {
    let site = crate::agent::modes::heap_sites::counting::CallerFrame {
        place: (
            row.identity.class_name.clone(),
            row.identity.method_index,
            row.identity.bci,
        ),
        method_name: row.method_name.clone(),
        method_descriptor: row.method_descriptor.clone(),
        source_file: row.source_file.clone(),
        line: row.line,
    };
    let frames = std::iter::once(&site)
        .chain(&row.callers)
        .take(policy.depth as usize)
        .map(|frame| intern_counted_frame(policy, model, frame, &method_key))
        .collect();
    model.traces.intern(TraceKey {
        frames,
        thread_serial: None,
        phase: None,
    })
}

/// The serial of the trace of an object the VM made under calling
/// contexts: the method that made it (a JVMTI frame: `Object.clone`,
/// `Array.newArray`...), then the callers the context named.
pub fn intern_vm_made(
    policy: &TracePolicy,
    env: &Jvmti,
    model: &mut Model,
    top: RawFrame,
    callers: &[crate::agent::modes::heap_sites::counting::CallerFrame],
    method_key: impl Fn(&str, u16) -> u64,
) -> u32 {
    let mut frames = Vec::with_capacity(1 + callers.len());
    if policy.depth > 0 {
        let (method, location) = top;
        let location = if policy.line_numbers { location } else { -1 };
        let (classes, objects) = (&mut model.classes, &model.objects);
        frames.push(model.frames.intern(FrameKey { method, location }, || {
            resolve_frame(env, classes, objects, method, location)
        }));
    }
    for frame in callers
        .iter()
        .take((policy.depth as usize).saturating_sub(1))
    {
        frames.push(intern_counted_frame(policy, model, frame, &method_key));
    }
    model.traces.intern(TraceKey {
        frames,
        thread_serial: None,
        phase: None,
    })
}

/// One frame of a rewritten class's code, named by what the rewrite
/// recorded.
fn intern_counted_frame(
    policy: &TracePolicy,
    model: &mut Model,
    frame: &crate::agent::modes::heap_sites::counting::CallerFrame,
    method_key: &impl Fn(&str, u16) -> u64,
) -> u64 {
    let (class_name, method_index, bci) = &frame.place;
    let line = match (policy.line_numbers, frame.line) {
        (true, Some(line)) => i32::from(line),
        _ => LINE_UNKNOWN,
    };
    let location = if policy.line_numbers {
        i64::from(*bci)
    } else {
        -1
    };
    let key = method_key(class_name, *method_index);
    model.frames.intern(
        FrameKey {
            method: COUNTED_FRAME | (key & !(3 << 62)),
            location,
        },
        || FrameFacts {
            class_serial: 0,
            class_signature: format!("L{class_name};"),
            method_name: frame.method_name.to_string(),
            method_signature: frame.method_descriptor.to_string(),
            source_file: frame.source_file.clone(),
            line,
        },
    )
}
