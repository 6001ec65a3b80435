//! One method's rewrite: the call sequences, the new code, and every table
//! of the `Code` attribute that holds a code offset. Returns the new `Code`
//! attribute body, or the reason the method is better left alone.

use super::LeafCalls;
use super::bytes::{Reader, put_attribute, put_u16, put_u32};
use super::class_file::{Attribute, CodeAttribute};
use super::code::{self, Insn, local_insn, op};
use super::constant_pool::ConstantPool;
use super::constant_pool::encode_modified_utf8;
use super::relocate::Layout;
use super::simulate;
use super::stackmap::{self, FrameKind, FrameState, OutFrame};
use super::types::{VType, initial_locals};

/// The largest code a method may have (JVMS 4.7.3: `code_length < 65536`).
const MAX_CODE: u32 = 65535;

/// What is injected, resolved to constant-pool indices once per class.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Calls {
    /// The `CONSTANT_Integer` holding the class number.
    pub class_number: u16,
    /// `Methodref` of the entry call, if any.
    pub entry: Option<u16>,
    /// `Methodref` of the exit call, if any.
    pub exit: Option<u16>,
    /// The exit call also from a catch-all handler that rethrows.
    pub exit_on_throw: bool,
    /// Widen every 16-bit branch (test knob).
    pub widen_all: bool,
    /// What the calls pass.
    pub passed: Passed,
}

/// What an injected call passes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Passed {
    /// The class number and the method number (`(II)V`).
    Numbers,
    /// The method's first argument, local 0 (`(Ljava/lang/Object;)V`).
    FirstArgument,
}

/// The class facts a method rewrite needs.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ClassFacts {
    /// `major_version`: 50 and up need stack map frames.
    pub major: u16,
    /// `this_class`.
    pub this_class: u16,
}

/// The method being rewritten.
#[derive(Clone, Copy, Debug)]
pub(crate) struct MethodFacts<'m> {
    /// Its name.
    pub name: &'m [u8],
    /// Its descriptor.
    pub descriptor: &'m [u8],
    /// `ACC_STATIC`.
    pub is_static: bool,
    /// Its position in the class's methods table: the method number.
    pub index: u16,
}

/// The pool entries of a class's leaf calls, added at the class's first
/// leaf (a class without one gets none).
pub(crate) struct LeafRefs<'i> {
    tracker_class: &'i str,
    calls: Option<&'i LeafCalls>,
    /// `Methodref`s of the start and the end call, once added.
    resolved: Option<(u16, u16)>,
}

impl<'i> LeafRefs<'i> {
    /// The leaf calls `calls` (`None`: leaves are rewritten like any
    /// method) into `tracker_class`.
    pub(crate) fn new(tracker_class: &'i str, calls: Option<&'i LeafCalls>) -> Self {
        Self {
            tracker_class,
            calls,
            resolved: None,
        }
    }

    /// The start and end `Methodref`s, added to `pool` on first use.
    fn get(&mut self, pool: &mut ConstantPool<'_>) -> Result<Option<(u16, u16)>, String> {
        let Some(calls) = self.calls else {
            return Ok(None);
        };
        if self.resolved.is_none() {
            let start = tracker_method_ref(pool, self.tracker_class, &calls.start)?;
            let end = tracker_method_ref(pool, self.tracker_class, &calls.end)?;
            self.resolved = Some((start, end));
        }
        Ok(self.resolved)
    }
}

/// The `Methodref` of static method `(name, descriptor)` of `tracker_class`,
/// added to `pool` if it is not there yet.
pub(crate) fn tracker_method_ref(
    pool: &mut ConstantPool<'_>,
    tracker_class: &str,
    (name, descriptor): &(String, String),
) -> Result<u16, String> {
    pool.add_method_ref(
        &encode_modified_utf8(tracker_class),
        &encode_modified_utf8(name),
        &encode_modified_utf8(descriptor),
    )
}

/// True when no instruction of `insns` calls a method: nothing the tracker
/// times can start inside (but a class initializer or loader the JVM runs
/// for an instruction, which then counts as a callee of the leaf's caller).
fn is_leaf(insns: &[Insn]) -> bool {
    !insns
        .iter()
        .any(|i| (op::INVOKEVIRTUAL..=op::INVOKEDYNAMIC).contains(&i.opcode))
}

/// Code that pushes `value` on the operand stack.
fn push_int(out: &mut Vec<u8>, value: u16, pool: &mut ConstantPool<'_>) -> Result<(), String> {
    match value {
        0..=5 => out.push(op::ICONST_0 + value as u8),
        6..=127 => out.extend_from_slice(&[op::BIPUSH, value as u8]),
        128..=32767 => {
            out.push(op::SIPUSH);
            put_u16(out, value);
        }
        _ => {
            let index = pool.add_integer(i32::from(value))?;
            push_constant(out, index);
        }
    }
    Ok(())
}

/// Code that adds `offset` to the int on top of the operand stack (none for
/// 0): `iconst_<n>`, `bipush` or `sipush` and `iadd`, or past 16 bits an
/// `ldc` of a constant of its own. Base-plus-offset pushes keep a class to
/// one constant for many numbers (call sites, allocation sites).
pub(crate) fn add_offset(
    out: &mut Vec<u8>,
    offset: i32,
    pool: &mut ConstantPool<'_>,
) -> Result<(), String> {
    match offset {
        0 => return Ok(()),
        1..=5 => out.push(op::ICONST_0 + offset as u8),
        -128..=127 => out.extend_from_slice(&[op::BIPUSH, offset as u8]),
        -32768..=32767 => {
            out.push(op::SIPUSH);
            put_u16(out, offset as u16);
        }
        _ => push_constant(out, pool.add_integer(offset)?),
    }
    out.push(op::IADD);
    Ok(())
}

/// `ldc` or `ldc_w` of constant `index`.
pub(crate) fn push_constant(out: &mut Vec<u8>, index: u16) {
    if let Ok(short) = u8::try_from(index) {
        out.extend_from_slice(&[op::LDC, short]);
    } else {
        out.push(op::LDC_W);
        put_u16(out, index);
    }
}

/// `<push class number>; <push method number>; invokestatic method`.
fn call_sequence(
    class_number: u16,
    method_number: u16,
    method: u16,
    pool: &mut ConstantPool<'_>,
) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(9);
    push_constant(&mut out, class_number);
    push_int(&mut out, method_number, pool)?;
    out.push(op::INVOKESTATIC);
    put_u16(&mut out, method);
    Ok(out)
}

/// `aload_0; invokestatic method`.
fn argument_call_sequence(method: u16) -> Vec<u8> {
    let mut out = vec![op::ALOAD_0, op::INVOKESTATIC];
    put_u16(&mut out, method);
    out
}

/// The call sequence of `calls` for method number `method_number`.
fn sequence_of(
    calls: Calls,
    method_number: u16,
    method: u16,
    pool: &mut ConstantPool<'_>,
) -> Result<Vec<u8>, String> {
    match calls.passed {
        Passed::Numbers => call_sequence(calls.class_number, method_number, method, pool),
        Passed::FirstArgument => Ok(argument_call_sequence(method)),
    }
}

/// True for an instruction that writes local 0 (`?store_0`, `?store 0`,
/// `iinc 0`, and their `wide` forms).
fn writes_local_0(insn: &Insn, code: &[u8]) -> bool {
    let at = |k: u32| code.get((insn.offset + k) as usize).copied();
    match insn.opcode {
        op::ISTORE..=op::ASTORE | op::IINC => at(1) == Some(0),
        op::WIDE => {
            matches!(at(1), Some(op::ISTORE..=op::ASTORE | op::IINC))
                && at(2) == Some(0)
                && at(3) == Some(0)
        }
        opcode => [
            op::ISTORE_0,
            op::LSTORE_0,
            op::FSTORE_0,
            op::DSTORE_0,
            op::ASTORE_0,
        ]
        .contains(&opcode),
    }
}

/// True for `jsr`, `jsr_w`, `ret` and `wide ret`.
fn is_subroutine_insn(insn: &Insn, code: &[u8]) -> bool {
    matches!(insn.opcode, op::JSR | op::JSR_W | op::RET)
        || (insn.opcode == op::WIDE && code.get(insn.offset as usize + 1) == Some(&op::RET))
}

/// The Code sub-attributes the rewriter understands.
enum Known {
    StackMapTable,
    LineNumbers,
    LocalVariables,
    TypeAnnotations,
    Other,
}

fn classify(pool: &ConstantPool<'_>, attribute: &Attribute<'_>) -> Known {
    match pool.utf8(attribute.name_index) {
        Ok(b"StackMapTable") => Known::StackMapTable,
        Ok(b"LineNumberTable") => Known::LineNumbers,
        Ok(b"LocalVariableTable" | b"LocalVariableTypeTable") => Known::LocalVariables,
        Ok(b"RuntimeVisibleTypeAnnotations" | b"RuntimeInvisibleTypeAnnotations") => {
            Known::TypeAnnotations
        }
        _ => Known::Other,
    }
}

fn malformed(what: &str) -> impl Fn(super::BciError) -> String + '_ {
    move |e| format!("{what}: {e}")
}

/// A table of `u2 count` entries (LineNumberTable, LocalVariableTable, …),
/// each copied with `map_entry`, which reads one entry and writes it back.
fn map_table(
    body: &[u8],
    what: &str,
    mut map_entry: impl FnMut(&mut Reader<'_>, &mut Vec<u8>) -> Result<(), String>,
) -> Result<Vec<u8>, String> {
    let r = &mut Reader::new(body);
    let count = r.u16().map_err(malformed(what))?;
    let mut out = Vec::with_capacity(body.len());
    put_u16(&mut out, count);
    for _ in 0..count {
        map_entry(r, &mut out)?;
    }
    if !r.at_end() {
        return Err(format!("{what}: trailing bytes"));
    }
    Ok(out)
}

/// A LineNumberTable with its `start_pc`s mapped.
fn line_numbers(body: &[u8], layout: &Layout<'_>) -> Result<Vec<u8>, String> {
    let bad = malformed("LineNumberTable");
    map_table(body, "LineNumberTable", |r, out| {
        let start = r.u16().map_err(&bad)?;
        let line = r.u16().map_err(&bad)?;
        put_u16(out, layout.debug_start(u32::from(start))? as u16);
        put_u16(out, line);
        Ok(())
    })
}

/// A LocalVariableTable or LocalVariableTypeTable with each range mapped.
fn local_variables(body: &[u8], layout: &Layout<'_>) -> Result<Vec<u8>, String> {
    let bad = malformed("LocalVariableTable");
    map_table(body, "LocalVariableTable", |r, out| {
        let start = u32::from(r.u16().map_err(&bad)?);
        let end = start + u32::from(r.u16().map_err(&bad)?);
        let rest = r.bytes(6).map_err(&bad)?; // name, descriptor or signature, slot
        let new_start = layout.debug_start(start)?;
        let new_end = layout.block_of(end)?;
        put_u16(out, new_start as u16);
        put_u16(out, (new_end - new_start) as u16);
        out.extend_from_slice(rest);
        Ok(())
    })
}

/// The exception table with start, end and handler mapped to block starts,
/// and last, when given, a catch-all handler at `.1` over `.0..` up to it.
fn exception_table(
    code: &CodeAttribute<'_>,
    layout: &Layout<'_>,
    catch_all: Option<(u16, u16)>,
    out: &mut Vec<u8>,
) -> Result<(), String> {
    let count = code.handlers.len() + usize::from(catch_all.is_some());
    put_u16(
        out,
        u16::try_from(count).map_err(|_| "too many exception handlers")?,
    );
    for h in &code.handlers {
        let start = layout.target(u32::from(h.start))?;
        let end = layout.block_of(u32::from(h.end))?;
        if start >= end {
            return Err(format!("exception range {}..{} is empty", h.start, h.end));
        }
        put_u16(out, start as u16);
        put_u16(out, end as u16);
        put_u16(out, layout.target(u32::from(h.handler))? as u16);
        put_u16(out, h.catch_type);
    }
    if let Some((start, handler)) = catch_all {
        put_u16(out, start);
        put_u16(out, handler);
        put_u16(out, handler);
        put_u16(out, 0); // any exception
    }
    Ok(())
}

/// A StackMapTable `body` (new offsets) with one more frame, at the
/// catch-all handler `at` past every other, with the exception on the
/// stack and no locals (whatever the method held is assignable to that)
/// but the `long`s the injected code added, `added_longs` (first slot,
/// count), which the handler reads: the slots below them are `top`.
fn with_handler_frame(
    mut body: Vec<u8>,
    at: u32,
    added_longs: Option<(u16, u16)>,
    pool: &mut ConstantPool<'_>,
) -> Result<Vec<u8>, String> {
    let frames = stackmap::decode(&body)?;
    let delta = match frames.last().map(|f| f.offset) {
        Some(last) if at > last => at - last - 1,
        Some(_) => return Err("a stack map frame past the end of the code".into()),
        None => at,
    };
    let count = u16::try_from(frames.len() + 1).map_err(|_| "too many frames")?;
    body[..2].copy_from_slice(&count.to_be_bytes());
    let throwable = pool.add_class(b"java/lang/Throwable")?;
    body.push(255); // full_frame
    put_u16(
        &mut body,
        u16::try_from(delta).map_err(|_| "offset past 65535")?,
    );
    match added_longs {
        None => put_u16(&mut body, 0),
        Some((first, count)) => {
            let locals = first.checked_add(count).ok_or("too many locals")?;
            put_u16(&mut body, locals);
            body.extend(std::iter::repeat_n(0, usize::from(first))); // Top_variable_info
            body.extend(std::iter::repeat_n(4, usize::from(count))); // Long_variable_info
        }
    }
    put_u16(&mut body, 1);
    body.push(7); // Object_variable_info
    put_u16(&mut body, throwable);
    Ok(body)
}

/// One method being rewritten: what the StackMapTable needs to know.
struct Rewrite<'r, 'c> {
    code: &'r CodeAttribute<'c>,
    insns: &'r [Insn],
    layout: &'r Layout<'r>,
    class: ClassFacts,
    method: MethodFacts<'r>,
    /// Instruction indices of the widened conditionals whose fall-through
    /// needs a frame (from class version 50).
    needed: Vec<usize>,
    /// The first slot and the number of the `long` locals added after the
    /// method's own, which every frame must then list.
    added_longs: Option<(u16, u16)>,
}

impl Rewrite<'_, '_> {
    /// The new StackMapTable body (`None`: there was none and none is
    /// needed): the `original` frames moved, plus a frame after each widened
    /// conditional that has none yet.
    fn stack_map(
        &self,
        original: Option<&[u8]>,
        pool: &mut ConstantPool<'_>,
    ) -> Result<Option<Vec<u8>>, String> {
        let (insns, code, class, method) = (self.insns, self.code, self.class, self.method);
        let frames = match original {
            Some(body) => stackmap::decode(body)?,
            None => vec![],
        };
        // Conditionals (by instruction index) whose fall-through has no frame.
        let missing: Vec<usize> = self
            .needed
            .iter()
            .copied()
            .filter(|&i| {
                let next = insns[i].offset + insns[i].len;
                !frames.iter().any(|f| f.offset == next)
            })
            .collect();
        if original.is_none() && missing.is_empty() {
            return Ok(None);
        }
        let mut added: Vec<(u32, FrameState)> = Vec::new();
        let states = if missing.is_empty() && self.added_longs.is_none() {
            vec![]
        } else {
            let initial = initial_locals(
                pool,
                class.this_class,
                method.is_static,
                method.name,
                method.descriptor,
            )?;
            // Room for the added locals, so that adding them moves nothing.
            let room = self
                .added_longs
                .map_or(0, |(slot, count)| usize::from(slot) + usize::from(count));
            let states = stackmap::expand(&frames, &initial, room)?;
            let ctx = simulate::Context {
                pool,
                code: code.code,
                this_class: class.this_class,
                max_locals: code.max_locals,
            };
            for &i in &missing {
                let branch = &insns[i];
                // Start from the last frame at or before the branch, else the
                // method's implicit first frame.
                let (from_offset, from) =
                    match frames.iter().rposition(|f| f.offset <= branch.offset) {
                        Some(k) => (frames[k].offset, states[k].clone()),
                        None => (
                            0,
                            FrameState {
                                locals: initial.clone(),
                                stack: vec![],
                            },
                        ),
                    };
                let first = insns
                    .iter()
                    .position(|insn| insn.offset == from_offset)
                    .ok_or_else(|| {
                        format!("stack map frame at {from_offset}, not an instruction")
                    })?;
                let state = simulate::run(&ctx, &from, &insns[first..=i])?;
                added.push((branch.offset + branch.len, state));
            }
            states
        };
        if let Some((slot, count)) = self.added_longs {
            // Every frame in full, each with the added locals.
            let mut all: Vec<(u32, FrameState)> = frames
                .iter()
                .map(|f| f.offset)
                .zip(states)
                .chain(added)
                .collect();
            all.sort_by_key(|(offset, _)| *offset);
            for (_, state) in &mut all {
                append_long_locals(state, slot, count)?;
            }
            let kinds = compact_kinds(&all);
            let out: Vec<OutFrame<'_>> = all
                .iter()
                .zip(&kinds)
                .map(|((offset, state), kind)| OutFrame {
                    offset: *offset,
                    kind: kind.as_ref(),
                    state: Some(state),
                })
                .collect();
            return Ok(Some(stackmap::encode(&out, self.layout, pool)?));
        }
        // Merge by original offset; an original frame right after an added one
        // is written in full.
        let mut out: Vec<OutFrame<'_>> = Vec::with_capacity(frames.len() + added.len());
        let (mut f, mut a) = (0, 0);
        let mut after_added = false;
        while f < frames.len() || a < added.len() {
            if a < added.len() && (f == frames.len() || added[a].0 < frames[f].offset) {
                out.push(OutFrame {
                    offset: added[a].0,
                    kind: None,
                    state: Some(&added[a].1),
                });
                a += 1;
                after_added = true;
            } else {
                out.push(OutFrame {
                    offset: frames[f].offset,
                    kind: if after_added {
                        None
                    } else {
                        Some(&frames[f].kind)
                    },
                    state: states.get(f),
                });
                f += 1;
                after_added = false;
            }
        }
        Ok(Some(stackmap::encode(&out, self.layout, pool)?))
    }
}

/// The short encodings that hold for `frames` (their full states, in
/// order): a frame whose locals are its predecessor's is `same` (or `same
/// locals, 1 stack item`); any other is left to be written in full (`None`).
/// The added locals sit past every other local, where `append` and `chop`,
/// which work at the end of the list, cannot describe a change before
/// them; but most frames change no local, and written in full they made
/// the StackMapTable of a rewritten class three times its size, which the
/// rewrite and the JVM's parser both paid for.
fn compact_kinds(frames: &[(u32, FrameState)]) -> Vec<Option<FrameKind>> {
    let mut kinds = Vec::with_capacity(frames.len());
    let mut previous: Option<&FrameState> = None;
    for (_, state) in frames {
        let kind = match (previous, state.stack.as_slice()) {
            (Some(p), []) if p.locals == state.locals => Some(FrameKind::Same),
            (Some(p), [item]) if p.locals == state.locals => {
                Some(FrameKind::SameLocals1(item.clone()))
            }
            _ => None,
        };
        kinds.push(kind);
        previous = Some(state);
    }
    kinds
}

/// Adds `count` `long` locals from `slot` on to a frame's locals, after
/// `top`s up to it.
fn append_long_locals(state: &mut FrameState, slot: u16, count: u16) -> Result<(), String> {
    let mut used: u32 = state
        .locals
        .iter()
        .map(|t| if t.is_wide() { 2 } else { 1 })
        .sum();
    if used > u32::from(slot) {
        return Err(format!(
            "a frame lists locals past max_locals ({used} > {slot})"
        ));
    }
    while used < u32::from(slot) {
        state.locals.push(VType::Top);
        used += 1;
    }
    state
        .locals
        .extend(std::iter::repeat_n(VType::Long, usize::from(count)));
    Ok(())
}

/// Rewrites the body of one `Code` attribute. `Ok(None)`: nothing to inject
/// (an exit call was asked for alone and the method never returns).
pub(crate) fn rewrite_code(
    info: &[u8],
    pool: &mut ConstantPool<'_>,
    calls: Calls,
    leaf_refs: &mut LeafRefs<'_>,
    class: ClassFacts,
    method: MethodFacts<'_>,
) -> Result<Option<Vec<u8>>, String> {
    let code = CodeAttribute::parse(info).map_err(malformed("Code"))?;
    if method.name == b"finalize" && method.descriptor == b"()V" && code.code == [op::RETURN] {
        // HotSpot registers an object for finalization unless the finalize()
        // it inherits is exactly `return` (Method::is_empty_method), as
        // Object's is: instrumenting it would make every object finalizable.
        return Err("empty finalize(): instrumented, every instance would be finalizable".into());
    }
    let insns = code::decode(code.code)?;
    let subroutines = insns.iter().any(|i| is_subroutine_insn(i, code.code));
    if subroutines && class.major >= 51 {
        return Err(format!(
            "jsr/ret, which class version {} forbids",
            class.major
        ));
    }
    if calls.passed == Passed::FirstArgument && insns.iter().any(|i| writes_local_0(i, code.code)) {
        return Err("it writes local 0, the argument the calls pass".into());
    }
    // (Leaf calls are refused with calls that pass the first argument.)
    let leaf = if is_leaf(&insns) && !subroutines {
        leaf_refs.get(pool)?
    } else {
        None
    };
    let injected = match leaf {
        Some(refs) => leaf_injection(&code, &insns, pool, calls, refs, method)?,
        None => match call_injection(&insns, pool, calls, method)? {
            Some(injected) => injected,
            None => return Ok(None),
        },
    };
    relocate_method(
        &code,
        &insns,
        pool,
        class,
        method,
        &injected,
        calls.widen_all,
    )
    .map(Some)
}

/// What any other method gets: the entry call, the exit call before each
/// return and, with `exit_on_throw`, from the catch-all handler (not in
/// constructors). `None`: nothing to inject.
fn call_injection(
    insns: &[Insn],
    pool: &mut ConstantPool<'_>,
    calls: Calls,
    method: MethodFacts<'_>,
) -> Result<Option<Injected>, String> {
    let returns = insns.iter().any(Insn::is_return);
    let entry = match calls.entry {
        Some(m) => sequence_of(calls, method.index, m, pool)?,
        None => vec![],
    };
    let exit = match calls.exit {
        Some(m) if returns => sequence_of(calls, method.index, m, pool)?,
        _ => vec![],
    };
    let on_throw = match calls.exit {
        Some(m) if handler_wanted(calls, method) => sequence_of(calls, method.index, m, pool)?,
        _ => vec![],
    };
    if entry.is_empty() && exit.is_empty() && on_throw.is_empty() {
        return Ok(None);
    }
    Ok(Some(Injected::around_returns(
        insns, entry, &exit, on_throw, 2, 0,
    )))
}

/// Whether the method gets the catch-all handler: asked for, and not a
/// constructor (its code before `super()` runs with `this` unmade, which
/// the handler's frame would have to name).
fn handler_wanted(calls: Calls, method: MethodFacts<'_>) -> bool {
    calls.exit_on_throw && method.name != b"<init>"
}

/// What a leaf gets (see [`LeafCalls`]): the clock into a `long` local
/// after the method's own on entry; the end call with the numbers and that
/// local before each return and from the catch-all handler, when the
/// method gets one.
fn leaf_injection(
    code: &CodeAttribute<'_>,
    insns: &[Insn],
    pool: &mut ConstantPool<'_>,
    calls: Calls,
    (start, end): (u16, u16),
    method: MethodFacts<'_>,
) -> Result<Injected, String> {
    let local = code.max_locals;
    let mut entry = vec![op::INVOKESTATIC];
    put_u16(&mut entry, start);
    local_insn(&mut entry, op::LSTORE, op::LSTORE_0, local);
    let mut exit = Vec::with_capacity(12);
    push_constant(&mut exit, calls.class_number);
    push_int(&mut exit, method.index, pool)?;
    local_insn(&mut exit, op::LLOAD, op::LLOAD_0, local);
    exit.push(op::INVOKESTATIC);
    put_u16(&mut exit, end);
    let on_throw = if handler_wanted(calls, method) {
        exit.clone()
    } else {
        vec![]
    };
    // The end call takes two ints and a long.
    Ok(Injected::around_returns(
        insns, entry, &exit, on_throw, 4, 1,
    ))
}

/// The code injected into one method: a sequence at entry, and per
/// instruction one before and one after it; the operand stack they need
/// beyond the method's own.
pub(crate) struct Injected {
    pub entry: Vec<u8>,
    pub before: Vec<Vec<u8>>,
    pub after: Vec<Vec<u8>>,
    pub extra_stack: u16,
    /// `long` locals the injected code keeps after the method's own (from
    /// slot `max_locals` on), set by the entry code before anything else
    /// runs: every stack map frame then lists them.
    pub extra_long_locals: u16,
    /// A sequence (taking no stack) run when the method is left by an
    /// exception, if not empty: appended after the code as a catch-all
    /// handler over everything after the entry sequence, then `athrow`.
    pub on_throw: Vec<u8>,
}

impl Injected {
    /// `entry` on entry, `exit` before each return instruction of `insns`
    /// and nothing else between them, `on_throw` from the handler.
    fn around_returns(
        insns: &[Insn],
        entry: Vec<u8>,
        exit: &[u8],
        on_throw: Vec<u8>,
        extra_stack: u16,
        extra_long_locals: u16,
    ) -> Injected {
        let before = insns
            .iter()
            .map(|i| if i.is_return() { exit.to_vec() } else { vec![] })
            .collect();
        Injected {
            entry,
            before,
            after: vec![vec![]; insns.len()],
            extra_stack,
            extra_long_locals,
            on_throw,
        }
    }
}

/// The new `Code` attribute body of `code` (decoded as `insns`) with
/// `injected` in place and every offset-holding table relocated.
pub(crate) fn relocate_method(
    code: &CodeAttribute<'_>,
    insns: &[Insn],
    pool: &mut ConstantPool<'_>,
    class: ClassFacts,
    method: MethodFacts<'_>,
    injected: &Injected,
    widen_all: bool,
) -> Result<Vec<u8>, String> {
    let subroutines = insns.iter().any(|i| is_subroutine_insn(i, code.code));
    let lengths = |seqs: &[Vec<u8>]| seqs.iter().map(|s| s.len() as u32).collect();
    let layout = Layout::with_injections(
        insns,
        code.code.len(),
        injected.entry.len() as u32,
        lengths(&injected.before),
        lengths(&injected.after),
        widen_all,
    )?;
    let handler = (!injected.on_throw.is_empty()).then(|| layout.len());
    let new_len = layout.len() + handler.map_or(0, |_| injected.on_throw.len() as u32 + 1);
    if new_len > MAX_CODE {
        return Err(format!("code would grow past 65535 bytes (to {new_len})"));
    }
    let mut max_stack = code
        .max_stack
        .checked_add(injected.extra_stack)
        .ok_or("max_stack would pass 65535")?;
    if handler.is_some() {
        // The exception, and what the exit call takes.
        max_stack = max_stack.max(1 + injected.extra_stack);
    }

    // Offsets after widened conditionals become branch targets; from class
    // version 50 on they need a stack map frame.
    let needed: Vec<usize> = if class.major >= 50 {
        layout.widened_conditionals().collect()
    } else {
        vec![]
    };
    if needed.iter().any(|&i| i + 1 == insns.len()) {
        return Err("a conditional branch ends the code".into());
    }
    if !needed.is_empty() && subroutines {
        return Err("a widened branch in code with jsr/ret".into());
    }

    let max_locals = code
        .max_locals
        .checked_add(2 * injected.extra_long_locals)
        .ok_or("max_locals would pass 65535")?;
    let rewrite = Rewrite {
        code,
        insns,
        layout: &layout,
        class,
        method,
        needed,
        added_longs: (injected.extra_long_locals > 0)
            .then_some((code.max_locals, injected.extra_long_locals)),
    };
    let mut stack_map_seen = false;
    let mut attributes = Vec::new();
    let mut attribute_count: u16 = 0;
    for attribute in &code.attributes {
        let body = match classify(pool, attribute) {
            Known::StackMapTable => {
                if stack_map_seen {
                    return Err("several StackMapTable attributes".into());
                }
                stack_map_seen = true;
                let body = rewrite.stack_map(Some(attribute.info), pool)?;
                let body = body.ok_or("StackMapTable vanished")?;
                match handler {
                    Some(at) => with_handler_frame(body, at, rewrite.added_longs, pool)?,
                    None => body,
                }
            }
            Known::LineNumbers => line_numbers(attribute.info, &layout)?,
            Known::LocalVariables => local_variables(attribute.info, &layout)?,
            // Their code offsets would go stale, and the JVM never reads
            // them inside Code: dropping them is safe.
            Known::TypeAnnotations => continue,
            Known::Other => attribute.info.to_vec(),
        };
        put_attribute(&mut attributes, attribute.name_index, &body)?;
        attribute_count += 1;
    }
    if !stack_map_seen {
        let body = rewrite.stack_map(None, pool)?;
        let body = match (body, handler) {
            (body, Some(at)) if class.major >= 50 => Some(with_handler_frame(
                body.unwrap_or_else(|| vec![0, 0]),
                at,
                rewrite.added_longs,
                pool,
            )?),
            (body, _) => body,
        };
        if let Some(body) = body {
            let name = pool.add_utf8(b"StackMapTable")?;
            put_attribute(&mut attributes, name, &body)?;
            attribute_count += 1;
        }
    }

    let mut new_code = layout.emit_with(code.code, &injected.entry, |i| {
        (&injected.before[i][..], &injected.after[i][..])
    });
    if handler.is_some() {
        new_code.extend_from_slice(&injected.on_throw);
        new_code.push(op::ATHROW);
    }
    let mut out = Vec::with_capacity(code.code.len() + new_code.len() + 64);
    put_u16(&mut out, max_stack);
    put_u16(&mut out, max_locals);
    put_u32(&mut out, new_code.len() as u32);
    out.extend_from_slice(&new_code);
    let catch_all = handler.map(|at| (injected.entry.len() as u16, at as u16));
    exception_table(code, &layout, catch_all, &mut out)?;
    put_u16(&mut out, attribute_count);
    out.extend_from_slice(&attributes);
    Ok(out)
}
