//! Calling contexts for exact allocation traces (`heap=sites` counted in
//! the bytecode with `depth` above 1).
//!
//! Each thread carries a window of the last three call sites it passed,
//! 21 bits each, in a field the agent adds to `java.lang.Thread` when the
//! JVM first loads it ([`add_context_field`]). A rewritten method copies the
//! field into a local of its own at entry (and clears the field, so that a
//! method the VM calls with no call site of ours before it, a static
//! initialiser say, starts from an empty window rather than a stale one),
//! stores `local << 21 | call site` into it before each call, and counts its
//! allocations under (site, local). Its site plus the window are the top
//! four frames, HPROF's default depth. Nothing is undone after a call, so an
//! exception unwinding through frames leaves nothing to repair: every frame
//! still holds, in its own local, the window it was called with.
//!
//! ```text
//! entry:        invokestatic HprofRsContext.takeWindow; lstore L
//! before calls: lload L; ldc <base>; [(bi|si)push <offset>; iadd]; invokestatic HprofRsContext.setWindow
//! ```
//!
//! One `long` local is all a frame keeps: every slot added to a method is
//! stack an interpreted frame of it takes, so a recursion that fits its
//! stack without the agent must fit with it (the shift and the call site's
//! addition are the accessor's, which the JIT inlines).
//!
//! The field is package-private: the code reaches it through the accessor
//! class the agent defines in `java.lang` (`context_accessor.rs`), whose two
//! methods the JIT inlines into the field access itself.
//!
//! A class's call sites are numbered in a row from a base, the one
//! constant the class gets (a constant per call site made the JVM's
//! retransformation of the classes loaded before VM init, which merges
//! constant pools, take 0.6 s instead of 0.2 s): each call adds its offset
//! to the base.
//!
//! A method grows by about 10 bytes per call: HotSpot never compiles a
//! method of more than 8,000 bytes of bytecode ([`HUGE_METHOD_LIMIT`]), so
//! the rewrite says when it took one past that size (the agent then lets
//! such methods compile, or the program's hottest loop could stay
//! interpreted for good).

use super::BciError;
use super::bytes::{put_u16, u16_at, u32_at};
use super::class_file::ClassFile;
use super::code::{local_insn, op};
use super::constant_pool::ConstantPool;
use super::context_accessor::{
    CONTEXT_FIELD, CONTEXT_FIELD_ACCESS, SET_WINDOW, SITE_SHIFT, TAKE_WINDOW,
};
use super::inject::{add_offset, push_constant};

/// Bits of one call site in the window (the accessor's shift).
pub const CALL_SITE_BITS: u32 = SITE_SHIFT as u32;

/// The largest call-site number: 2,097,151 (0 means no call site).
pub const MAX_CALL_SITE: u32 = (1 << CALL_SITE_BITS) - 1;

/// Call sites a window holds (with the allocation's own site: 4 frames).
pub const WINDOW_CALL_SITES: usize = 3;

/// HotSpot's `HugeMethodLimit`: a method whose bytecode is longer is never
/// compiled while `DontCompileHugeMethods` is on (the default).
pub const HUGE_METHOD_LIMIT: usize = 8000;

const LLOAD: u8 = 22;
const LLOAD_0: u8 = 30;
const LSTORE: u8 = 55;
const LSTORE_0: u8 = 63;
const POP2: u8 = 88;
const LCONST_0: u8 = 9;
const ICONST_0: u8 = 3;

/// A window as the tracker keys it: its top bit, what is left of a fourth
/// call site that no trace shows, dropped.
pub fn context_key(window: u64) -> u64 {
    window & (u64::MAX >> 1)
}

/// The call-site numbers of a window, most recent first (0: none).
pub fn window_call_sites(window: u64) -> [u32; WINDOW_CALL_SITES] {
    let mask = u64::from(MAX_CALL_SITE);
    std::array::from_fn(|k| ((window >> (k as u32 * CALL_SITE_BITS)) & mask) as u32)
}

/// Which calls write their call site into the thread's field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ContextScope {
    /// Every call, with the caller's window shifted in: the calling
    /// contexts that give counted allocations their traces.
    EveryCall,
    /// Only the calls after which the VM makes an object itself (see
    /// [`makes_objects_in_the_vm`]), with the call site alone, and the field
    /// cleared once the call returns: the agent then places those objects
    /// (reported by a VMObjectAlloc event) by the field instead of a walk
    /// of the thread's stack. No local is added and methods without such a
    /// call are left as they are.
    VmMakerCalls,
}

/// Whether a call of `owner.name descriptor` is one inside which the VM
/// makes objects and reports them with a VMObjectAlloc event: `clone()`
/// (of any class or array: the VM copies the object) and the natives
/// behind `java.lang.reflect.Array.newInstance`.
pub fn makes_objects_in_the_vm(owner: &[u8], name: &[u8], descriptor: &[u8]) -> bool {
    match name {
        b"clone" => descriptor == b"()Ljava/lang/Object;",
        b"newArray" | b"multiNewArray" => owner == b"java/lang/reflect/Array",
        _ => false,
    }
}

/// The pool entries the context code uses.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ContextRefs {
    take_window: u16,
    set_window: u16,
    /// The `CONSTANT_Integer` of the class's first call-site number.
    base: u16,
}

impl ContextRefs {
    /// The entries of a class whose call sites are numbered from `base`.
    pub(crate) fn resolve(
        pool: &mut ConstantPool<'_>,
        base: u32,
        accessor: &str,
    ) -> Result<Self, String> {
        let accessor = accessor.as_bytes();
        let mut method = |(name, descriptor): (&str, &str)| {
            pool.add_method_ref(accessor, name.as_bytes(), descriptor.as_bytes())
        };
        Ok(Self {
            take_window: method(TAKE_WINDOW)?,
            set_window: method(SET_WINDOW)?,
            base: pool.add_integer(base as i32)?,
        })
    }

    fn invoke(out: &mut Vec<u8>, method: u16) {
        out.push(op::INVOKESTATIC);
        put_u16(out, method);
    }

    /// The entry code: the thread's window into `local`, the field
    /// cleared. Needs 2 stack slots.
    pub(crate) fn entry_code(&self, local: u16) -> Vec<u8> {
        let mut out = Vec::with_capacity(8);
        Self::invoke(&mut out, self.take_window);
        local_insn(&mut out, LSTORE, LSTORE_0, local);
        out
    }

    /// The entry code of a program's `main(String[])`: the field cleared,
    /// and an empty window into `local`. The launcher calls main from
    /// native code, after its own Java calls left a window in the field
    /// that names callers main does not have; taken as main's, every
    /// context below main failed the agent's check against the stack, and
    /// each allocation there was walked. (A main called from Java loses its
    /// callers from contexts: their allocations are walked, as before.)
    pub(crate) fn main_entry_code(&self, local: u16) -> Vec<u8> {
        let mut out = Vec::with_capacity(10);
        Self::invoke(&mut out, self.take_window);
        out.push(POP2);
        out.push(LCONST_0);
        local_insn(&mut out, LSTORE, LSTORE_0, local);
        out
    }

    /// The code before the call `offset` places after the class's base:
    /// the callee's window set from `local` and the call's number (the
    /// accessor shifts the one and adds the other). Needs 4 stack slots.
    pub(crate) fn call_code(
        &self,
        pool: &mut ConstantPool<'_>,
        local: u16,
        offset: i32,
    ) -> Result<Vec<u8>, String> {
        let mut out = Vec::with_capacity(16);
        local_insn(&mut out, LLOAD, LLOAD_0, local);
        self.set_window_to(&mut out, pool, offset)?;
        Ok(out)
    }

    /// Appends the rest of a call's window code, with the window on the
    /// stack: the call's number (`offset` after the class's base) and the
    /// accessor's `setWindow`.
    fn set_window_to(
        &self,
        out: &mut Vec<u8>,
        pool: &mut ConstantPool<'_>,
        offset: i32,
    ) -> Result<(), String> {
        push_constant(out, self.base);
        add_offset(out, offset, pool)?;
        Self::invoke(out, self.set_window);
        Ok(())
    }

    /// The code before a call the VM makes objects in, under
    /// [`ContextScope::VmMakerCalls`]: the field set to the call's number
    /// alone (an empty window shifted in). Needs 4 stack slots.
    pub(crate) fn maker_call_code(
        &self,
        pool: &mut ConstantPool<'_>,
        offset: i32,
    ) -> Result<Vec<u8>, String> {
        let mut out = Vec::with_capacity(12);
        out.push(LCONST_0);
        self.set_window_to(&mut out, pool, offset)?;
        Ok(out)
    }

    /// The code after it: the field cleared, so that an object the VM
    /// makes later on the thread, outside such a call, is not taken for
    /// this call's. Needs 3 stack slots.
    pub(crate) fn maker_return_code(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(5);
        out.push(LCONST_0);
        out.push(ICONST_0);
        Self::invoke(&mut out, self.set_window);
        out
    }
}

/// `lload L`.
pub(crate) fn load_context(local: u16) -> Vec<u8> {
    let mut out = Vec::with_capacity(4);
    local_insn(&mut out, LLOAD, LLOAD_0, local);
    out
}

/// `java/lang/Thread`'s class file with the context field added (a class
/// that has it already comes back unchanged). Done when the JVM first loads
/// the class, and again at each retransformation, which is handed the bytes
/// from before this agent's change and must not drop the field.
pub fn add_context_field(class_file: &[u8]) -> Result<Vec<u8>, BciError> {
    let mut class = ClassFile::parse(class_file)?;
    let malformed = |what: String| BciError::Malformed { offset: 0, what };
    let (name, descriptor) = CONTEXT_FIELD;
    let before = class.before_methods;
    // access, this, super, interfaces, then the fields.
    let interfaces = usize::from(
        u16_at(before, 6).ok_or_else(|| malformed("interfaces_count past the end".into()))?,
    );
    let fields_at = 8 + 2 * interfaces;
    let fields =
        u16_at(before, fields_at).ok_or_else(|| malformed("fields_count past the end".into()))?;
    if has_field(&class, fields_at + 2, fields, name.as_bytes()) {
        return Ok(class_file.to_vec());
    }
    let name_index = class.pool.add_utf8(name.as_bytes()).map_err(malformed)?;
    let descriptor_index = class
        .pool
        .add_utf8(descriptor.as_bytes())
        .map_err(malformed)?;
    let mut members = Vec::with_capacity(before.len() + 8);
    members.extend_from_slice(&before[..fields_at]);
    put_u16(
        &mut members,
        fields
            .checked_add(1)
            .ok_or_else(|| malformed("65535 fields".into()))?,
    );
    members.extend_from_slice(&before[fields_at + 2..]);
    put_u16(&mut members, CONTEXT_FIELD_ACCESS);
    put_u16(&mut members, name_index);
    put_u16(&mut members, descriptor_index);
    put_u16(&mut members, 0);
    let unchanged = vec![None; class.methods.len()];
    super::writer::write_class_with_members(&class, &members, &unchanged).map_err(malformed)
}

/// Whether the fields table (`count` fields from `at` in
/// `before_methods`) has one named `name`.
fn has_field(class: &ClassFile<'_>, mut at: usize, count: u16, name: &[u8]) -> bool {
    let before = class.before_methods;
    for _ in 0..count {
        let (Some(name_index), Some(attributes)) = (u16_at(before, at + 2), u16_at(before, at + 6))
        else {
            return false;
        };
        if class.pool.utf8(name_index).is_ok_and(|n| n == name) {
            return true;
        }
        let mut attributes = usize::from(attributes);
        at += 8;
        while attributes > 0 {
            let Some(length) = u32_at(before, at + 2) else {
                return false;
            };
            at += 6 + length as usize;
            attributes -= 1;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_holds_the_last_three_call_sites_most_recent_first() {
        let push = |window: u64, site: u32| window << CALL_SITE_BITS | u64::from(site);
        let window = [7, 9, 11, 13].into_iter().fold(0, push);
        assert_eq!(window_call_sites(window), [13, 11, 9]);
        assert_eq!(window_call_sites(push(0, 5)), [5, 0, 0]);
        assert_eq!(
            window_call_sites(push(0, MAX_CALL_SITE)),
            [MAX_CALL_SITE, 0, 0]
        );
    }

    #[test]
    fn long_locals_take_their_short_wide_and_plain_forms() {
        assert_eq!(load_context(2), [LLOAD_0 + 2]);
        assert_eq!(load_context(200), [LLOAD, 200]);
        assert_eq!(load_context(300), [op::WIDE, LLOAD, 1, 44]);
    }
}
