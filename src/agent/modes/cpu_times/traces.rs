//! The traces of timed calls: each frame is a method the rewriter
//! recorded, keyed by the Tracker's method key.

use crate::agent::modes::cpu_times::timing::TimedMethod;
use crate::agent::run::traces::TIMED_FRAME;
use crate::emit::times::TraceTime;
use crate::model::{FrameFacts, FrameKey, LINE_UNKNOWN, Model, TraceKey};

/// The serial of the trace of a timed call: the method keys innermost
/// first, resolved with what the rewriter recorded. Timed frames have no
/// line numbers (HPROF printed `Unknown line` for them too).
pub fn intern_timed(
    model: &mut Model,
    keys: &[u64],
    methods: &[Option<TimedMethod>],
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

/// `java.lang.String.indexOf`, or with `with_descriptor`
/// `java.lang.String.indexOf(I)I`.
fn display_name(method: &TimedMethod, with_descriptor: bool) -> String {
    let class = method.class_name.replace('/', ".");
    if with_descriptor {
        format!("{class}.{}{}", method.method_name, method.descriptor)
    } else {
        format!("{class}.{}", method.method_name)
    }
}

/// The row of a trace whose frames are `methods` (innermost first; None
/// for a method the rewriter has no record of).
pub fn trace_time(trace_serial: u32, methods: &[Option<TimedMethod>]) -> TraceTime {
    let name = |i: usize, with_descriptor: bool| {
        methods
            .get(i)
            .and_then(Option::as_ref)
            .map(|m| display_name(m, with_descriptor))
    };
    TraceTime {
        trace_serial,
        method: name(0, false).unwrap_or_else(|| "<Unknown Method>".into()),
        callee: name(0, true).unwrap_or_else(|| "<unknown callee>".into()),
        caller: name(1, true),
        calls: 0,
        self_ns: 0,
        total_ns: 0,
    }
}
