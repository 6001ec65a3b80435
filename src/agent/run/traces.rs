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
        // Before a frame is looked up: a key of an unloaded method must not
        // name a new method given the same identifier.
        crate::agent::run::classes::retire_unloaded(model);
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

// Frame keys are jmethodIDs, which are pointers, except where the top bits
// are set: a mode that names frames itself (not through a jmethodID) keys
// them in a space of its own here, so that no two kinds ever share a key.

/// Key of the pseudo-frame `<no Java frames>.<unknown>` (and the other
/// pseudo-frames of cpu=samples): no pointer sets this bit.
const NO_JAVA_FRAMES: u64 = 1 << 62;

/// Top bit of the frame keys of timed methods (cpu=times: their "method" is
/// the Tracker's method key, not a jmethodID).
pub const TIMED_FRAME: u64 = 1 << 63;

/// Top two bits of the frame keys of allocation sites counted in the
/// bytecode (heap=sites: their "method" is a number of the counting's, not a
/// jmethodID).
pub const COUNTED_FRAME: u64 = 3 << 62;

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

/// The names and line of the JVM frame `(method, location)`.
pub fn resolve_frame(
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
