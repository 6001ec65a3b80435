//! The traces of allocation sites counted in the bytecode: the allocating
//! method at the site's line, then the callers its calling context named,
//! each frame named by what the rewriter recorded.

use crate::agent::jvm::RawFrame;
use crate::agent::modes::heap_sites::counting::{CallerFrame, CountedRow};
use crate::agent::run::traces::{COUNTED_FRAME, TracePolicy, resolve_frame};
use crate::model::{FrameFacts, FrameKey, LINE_UNKNOWN, Model, TraceKey};
use jvmti_bindings::prelude::*;

/// The serial of the trace of an allocation site counted in the bytecode:
/// the allocating method at the site's line, then the callers its calling
/// context named, `depth` frames at most (none with `depth=0`).
/// `method_key` names a method (class internal name, method number)
/// uniquely; with the bytecode index, a frame.
pub fn intern_counted(
    policy: &TracePolicy,
    model: &mut Model,
    row: &CountedRow,
    method_key: impl Fn(&str, u16) -> u64,
) -> u32 {
    let site = CallerFrame {
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
    callers: &[CallerFrame],
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
    frame: &CallerFrame,
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
