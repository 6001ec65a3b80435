//! End-to-end tests of [`rewrite_class`] on classes assembled here, read
//! back with the module's own parsers. (That the JVM accepts the output is
//! what `tests/bci_jrt.rs` shows, on every class of a JDK.)

use super::class_file::{ClassFile, CodeAttribute};
use super::code::{Insn, Operands, decode, op};
use super::stackmap::{self, FrameKind};
use super::types::VType;
use super::*;

/// A tiny class-file assembler.
struct ClassBuilder {
    major: u16,
    pool: Vec<u8>,
    count: u16,
    this_class: u16,
    super_class: u16,
    methods: Vec<u8>,
    method_count: u16,
}

/// A method body to assemble.
struct Body {
    max_stack: u16,
    max_locals: u16,
    code: Vec<u8>,
    /// (start, end, handler, catch type)
    handlers: Vec<[u16; 4]>,
    /// (name, body)
    attributes: Vec<(&'static str, Vec<u8>)>,
}

impl Body {
    fn new(max_stack: u16, max_locals: u16, code: Vec<u8>) -> Body {
        Body {
            max_stack,
            max_locals,
            code,
            handlers: vec![],
            attributes: vec![],
        }
    }

    fn with(mut self, name: &'static str, body: Vec<u8>) -> Body {
        self.attributes.push((name, body));
        self
    }
}

const ACC_PUBLIC_STATIC: u16 = 0x0009;

impl ClassBuilder {
    fn new(major: u16, name: &str) -> ClassBuilder {
        let mut b = ClassBuilder {
            major,
            pool: vec![],
            count: 1,
            this_class: 0,
            super_class: 0,
            methods: vec![],
            method_count: 0,
        };
        b.this_class = b.class(name);
        b.super_class = b.class("java/lang/Object");
        b
    }

    fn entry(&mut self, bytes: &[u8]) -> u16 {
        self.pool.extend_from_slice(bytes);
        self.count += 1;
        self.count - 1
    }

    fn utf8(&mut self, s: &str) -> u16 {
        let mut e = vec![1];
        super::bytes::put_u16(&mut e, s.len() as u16);
        e.extend_from_slice(s.as_bytes());
        self.entry(&e)
    }

    fn class(&mut self, name: &str) -> u16 {
        let n = self.utf8(name);
        self.entry(&[7, (n >> 8) as u8, n as u8])
    }

    fn method_ref(&mut self, class: &str, name: &str, descriptor: &str) -> u16 {
        let c = self.class(class);
        let n = self.utf8(name);
        let d = self.utf8(descriptor);
        let nat = self.entry(&[12, (n >> 8) as u8, n as u8, (d >> 8) as u8, d as u8]);
        self.entry(&[10, (c >> 8) as u8, c as u8, (nat >> 8) as u8, nat as u8])
    }

    fn method(&mut self, access: u16, name: &str, descriptor: &str, body: Option<Body>) {
        let n = self.utf8(name);
        let d = self.utf8(descriptor);
        let m = &mut Vec::new();
        bytes::put_u16(m, access);
        bytes::put_u16(m, n);
        bytes::put_u16(m, d);
        match body {
            None => bytes::put_u16(m, 0),
            Some(body) => {
                bytes::put_u16(m, 1);
                let code_name = self.utf8("Code");
                let mut c = Vec::new();
                bytes::put_u16(&mut c, body.max_stack);
                bytes::put_u16(&mut c, body.max_locals);
                bytes::put_u32(&mut c, body.code.len() as u32);
                c.extend_from_slice(&body.code);
                bytes::put_u16(&mut c, body.handlers.len() as u16);
                for h in &body.handlers {
                    for v in h {
                        bytes::put_u16(&mut c, *v);
                    }
                }
                bytes::put_u16(&mut c, body.attributes.len() as u16);
                for (name, a) in &body.attributes {
                    let an = self.utf8(name);
                    bytes::put_attribute(&mut c, an, a).unwrap();
                }
                bytes::put_attribute(m, code_name, &c).unwrap();
            }
        }
        self.methods.extend_from_slice(m);
        self.method_count += 1;
    }

    fn build(&self) -> Vec<u8> {
        let mut out = vec![0xca, 0xfe, 0xba, 0xbe, 0, 0];
        bytes::put_u16(&mut out, self.major);
        bytes::put_u16(&mut out, self.count);
        out.extend_from_slice(&self.pool);
        bytes::put_u16(&mut out, 0x0021); // public super
        bytes::put_u16(&mut out, self.this_class);
        bytes::put_u16(&mut out, self.super_class);
        bytes::put_u16(&mut out, 0); // interfaces
        bytes::put_u16(&mut out, 0); // fields
        bytes::put_u16(&mut out, self.method_count);
        out.extend_from_slice(&self.methods);
        bytes::put_u16(&mut out, 0); // attributes
        out
    }
}

/// A class `name` of version `major` with one method, `static void m()`.
fn one_method(major: u16, name: &str, body: Body) -> Vec<u8> {
    let mut b = ClassBuilder::new(major, name);
    b.method(ACC_PUBLIC_STATIC, "m", "()V", Some(body));
    b.build()
}

/// Why the first method was skipped.
fn skip_reason(out: &RewriteOutcome) -> &str {
    out.methods[0]
        .skip_reason
        .as_deref()
        .unwrap_or("(not skipped)")
}

/// The calls cpu=times injects, without the catch-all handler (which the
/// layout tests would otherwise all have to allow for; see
/// `a_catch_all_handler_reports_exits_by_exception`).
fn tracker() -> Injection {
    Injection {
        tracker_class: "hprof_rs/Tracker".into(),
        entry: Some(("CallSite".into(), "(II)V".into())),
        exit: Some(("ReturnSite".into(), "(II)V".into())),
        exit_on_throw: false,
        leaf: None,
    }
}

/// The rewritten `Code` of method `index`, its decoded instructions and
/// the class (for its pool).
fn code_of(bytes: &[u8], index: usize) -> (ClassFile<'_>, CodeAttribute<'_>, Vec<Insn>) {
    let class = ClassFile::parse(bytes).unwrap();
    let method = &class.methods[index];
    let info = method
        .attributes
        .iter()
        .find(|a| class.pool.utf8(a.name_index).unwrap() == b"Code")
        .unwrap()
        .info;
    let code = CodeAttribute::parse(info).unwrap();
    let insns = decode(code.code).unwrap();
    (class, code, insns)
}

fn sub_attribute<'c>(
    class: &ClassFile<'_>,
    code: &CodeAttribute<'c>,
    name: &str,
) -> Option<&'c [u8]> {
    code.attributes
        .iter()
        .find(|a| class.pool.utf8(a.name_index).unwrap() == name.as_bytes())
        .map(|a| a.info)
}

/// Checks the call sequence starting at instruction `first`:
/// `ldc <class number>; <push method number>; invokestatic Tracker.<method>`.
fn assert_call(
    class: &ClassFile<'_>,
    code: &[u8],
    insns: &[Insn],
    first: usize,
    class_number: i32,
    method: &str,
) {
    assert_eq!(insns[first].opcode, op::LDC);
    let ldc = u16::from(code[insns[first].offset as usize + 1]);
    assert_eq!(
        class.pool.entry(ldc),
        Some(&constant_pool::Entry::Integer(class_number))
    );
    assert_eq!(
        tracker_call(class, code, &insns[first + 2]),
        (method.as_bytes(), &b"(II)V"[..])
    );
}

#[test]
fn injects_entry_and_exit_calls_and_relocates_debug_tables() {
    let mut b = ClassBuilder::new(52, "p/A");
    // static int f(int x) { if (x == 0) return 1; return x; }
    // 0: iload_0  1: ifne +5 (-> 6)  4: iconst_1  5: ireturn  6: iload_0  7: ireturn
    let code = vec![26, 154, 0, 5, 4, 172, 26, 172];
    let lines = vec![0, 3, 0, 0, 0, 10, 0, 4, 0, 11, 0, 6, 0, 12];
    let x = b.utf8("x");
    let int = b.utf8("I");
    let mut locals = vec![0, 1, 0, 0, 0, 8];
    locals.extend_from_slice(&[(x >> 8) as u8, x as u8, (int >> 8) as u8, int as u8, 0, 0]);
    let body = Body::new(1, 1, code)
        .with("LineNumberTable", lines)
        .with("LocalVariableTable", locals)
        .with("StackMapTable", vec![0, 1, 6]);
    b.method(ACC_PUBLIC_STATIC, "f", "(I)I", Some(body));
    b.method(0x0401, "g", "()V", None); // abstract
    let input = b.build();

    let out = rewrite_class(&input, 0x2000_0007, &tracker()).unwrap();
    assert_eq!(out.methods.len(), 2);
    assert!(out.methods[0].rewritten, "{:?}", out.methods[0]);
    assert_eq!(
        (
            out.methods[0].name.as_str(),
            out.methods[0].descriptor.as_str()
        ),
        ("f", "(I)I")
    );
    assert!(!out.methods[1].rewritten);
    assert_eq!(
        out.methods[1].skip_reason.as_deref(),
        Some("no code (abstract or native)")
    );
    assert_eq!(
        rewrite_class(&input, 0x2000_0007, &tracker()).unwrap(),
        out,
        "deterministic"
    );

    let (class, code, insns) = code_of(&out.bytes, 0);
    assert_eq!(code.max_stack, 3);
    assert_eq!(code.max_locals, 1);
    assert_call(&class, code.code, &insns, 0, 0x2000_0007, "CallSite");
    assert_eq!(insns[3].offset, 6, "ldc, iconst_0, invokestatic");
    let opcodes: Vec<u8> = insns.iter().map(|i| i.opcode).collect();
    assert_eq!(
        opcodes,
        [
            op::LDC,
            op::ICONST_0,
            op::INVOKESTATIC,
            26,
            154,
            4,
            op::LDC,
            op::ICONST_0,
            op::INVOKESTATIC,
            172,
            26,
            op::LDC,
            op::ICONST_0,
            op::INVOKESTATIC,
            172
        ]
    );
    assert_call(&class, code.code, &insns, 6, 0x2000_0007, "ReturnSite");
    assert_call(&class, code.code, &insns, 11, 0x2000_0007, "ReturnSite");
    // ifne lands on the block of `iload_0` (old 6), which has no exit call.
    assert_eq!(insns[4].operands, Operands::Branch(insns[10].offset));
    // LineNumberTable: 0 stays 0 (the entry call is on the first line);
    // 4 and 6 move to their blocks.
    let lnt = sub_attribute(&class, &code, "LineNumberTable").unwrap();
    let starts: Vec<u16> = lnt[2..]
        .chunks(4)
        .map(|c| super::bytes::u16_at(c, 0).unwrap())
        .collect();
    assert_eq!(starts, [0, insns[5].offset as u16, insns[10].offset as u16]);
    // LocalVariableTable: x covers the whole new code.
    let lvt = sub_attribute(&class, &code, "LocalVariableTable").unwrap();
    assert_eq!(&lvt[2..6], &[0, 0, 0, code.code.len() as u8]);
    // The frame at old 6 moved with its block.
    let frames = stackmap::decode(sub_attribute(&class, &code, "StackMapTable").unwrap()).unwrap();
    assert_eq!(frames.len(), 1);
    assert_eq!(frames[0].offset, insns[10].offset);
    assert_eq!(frames[0].kind, FrameKind::Same);

    // The unrewritten parts are byte for byte the same.
    let original = ClassFile::parse(&input).unwrap();
    assert_eq!(class.before_methods, original.before_methods);
    assert_eq!(class.after_methods, original.after_methods);
    assert!(out.bytes.len() > input.len());
}

#[test]
fn exception_ranges_keep_their_instructions_and_handlers_get_their_exit_calls() {
    let mut b = ClassBuilder::new(52, "p/B");
    // 0: nop  1: nop  2: return  3: [handler] pop  4: return
    // range [0, 2): ends at a return; handler at 3.
    // range [2, 3): exactly the return.
    let mut body = Body::new(1, 0, vec![0, 0, 177, 87, 177]);
    body.handlers = vec![[0, 2, 3, 0], [2, 3, 3, 0]];
    let frame = vec![0, 1, 64 + 3, 7, 0, 2]; // same_locals_1_stack_item(p/B) at 3
    b.method(
        ACC_PUBLIC_STATIC,
        "h",
        "()V",
        Some(body.with("StackMapTable", frame)),
    );
    let out = rewrite_class(&b.build(), 1, &tracker()).unwrap();
    let (_, code, insns) = code_of(&out.bytes, 0);
    // entry: ldc, iconst_0, invokestatic (0..6)
    // 6: nop  7: nop  8: exit call (8..14)  14: return  15: pop  16: exit  22: return
    let at: Vec<u32> = insns.iter().map(|i| i.offset).collect();
    assert_eq!(at, [0, 2, 3, 6, 7, 8, 10, 11, 14, 15, 16, 18, 19, 22]);
    let ranges: Vec<_> = code
        .handlers
        .iter()
        .map(|h| (h.start, h.end, h.handler))
        .collect();
    assert_eq!(ranges, [(6, 8, 15), (8, 15, 15)]);
}

/// The name and descriptor of the tracker method `insn` (an
/// `invokestatic`) calls.
fn tracker_call<'p>(class: &'p ClassFile<'_>, code: &[u8], insn: &Insn) -> (&'p [u8], &'p [u8]) {
    assert_eq!(insn.opcode, op::INVOKESTATIC);
    let m = super::bytes::u16_at(code, insn.offset as usize + 1).unwrap();
    let (c, name, descriptor) = class.pool.member_ref(m).unwrap();
    assert_eq!(class.pool.class_name(c).unwrap(), b"hprof_rs/Tracker");
    (name, descriptor)
}

#[test]
fn a_leaf_keeps_its_start_in_a_local_and_reports_its_call_once() {
    let mut b = ClassBuilder::new(52, "p/L");
    // static int leaf(int x) { return x; }: calls nothing.
    b.method(
        ACC_PUBLIC_STATIC,
        "leaf",
        "(I)I",
        Some(Body::new(1, 1, vec![26, 172])),
    );
    // static void caller() { leaf(0); }
    let leaf = b.method_ref("p/L", "leaf", "(I)I");
    let (hi, lo) = ((leaf >> 8) as u8, leaf as u8);
    b.method(
        ACC_PUBLIC_STATIC,
        "caller",
        "()V",
        Some(Body::new(1, 0, vec![3, 184, hi, lo, 87, 177])),
    );
    let out = rewrite_class(&b.build(), 7, &Injection::tracker()).unwrap();
    assert!(out.methods.iter().all(|m| m.rewritten), "{:?}", out.methods);

    let (class, code, insns) = code_of(&out.bytes, 0);
    let ops: Vec<u8> = insns.iter().map(|i| i.opcode).collect();
    // leafStart; lstore_1 | iload_0 | ldc 7; iconst_0; lload_1; LeafSite |
    // ireturn | the handler: ldc 7; iconst_0; lload_1; LeafSite; athrow.
    assert_eq!(
        ops,
        [
            184,
            63 + 1,
            26,
            op::LDC,
            3,
            30 + 1,
            184,
            172,
            op::LDC,
            3,
            30 + 1,
            184,
            op::ATHROW
        ]
    );
    assert_eq!(
        tracker_call(&class, code.code, &insns[0]),
        (&b"leafStart"[..], &b"()J"[..])
    );
    for at in [6, 11] {
        assert_eq!(
            tracker_call(&class, code.code, &insns[at]),
            (&b"LeafSite"[..], &b"(IIJ)V"[..])
        );
    }
    let ldc = u16::from(code.code[insns[3].offset as usize + 1]);
    assert_eq!(
        class.pool.entry(ldc),
        Some(&constant_pool::Entry::Integer(7))
    );
    assert_eq!(code.max_locals, 3, "its argument, then the long start");
    assert_eq!(code.max_stack, 5, "the exception, two ints and a long");
    let handler = insns[8].offset;
    let table: Vec<_> = code
        .handlers
        .iter()
        .map(|h| {
            (
                u32::from(h.start),
                u32::from(h.end),
                u32::from(h.handler),
                h.catch_type,
            )
        })
        .collect();
    assert_eq!(table, [(insns[2].offset, handler, handler, 0)]);
    // The handler reads the start: its frame lists it, above a `top`.
    let frames = stackmap::decode(sub_attribute(&class, &code, "StackMapTable").unwrap()).unwrap();
    let last = frames.last().unwrap();
    assert_eq!(last.offset, handler);
    let FrameKind::Full { locals, stack } = &last.kind else {
        panic!("a full frame at the handler: {last:?}");
    };
    assert_eq!(locals[..], [VType::Top, VType::Long]);
    assert_eq!(stack.len(), 1);

    // The caller calls a method: entry and exit calls as before.
    let (class, code, insns) = code_of(&out.bytes, 1);
    assert_call(&class, code.code, &insns, 0, 7, "CallSite");
}

#[test]
fn a_catch_all_handler_reports_exits_by_exception() {
    let with_handler = Injection {
        exit_on_throw: true,
        ..tracker()
    };
    // The method of the test above: its own handler, then ours.
    let mut b = ClassBuilder::new(52, "p/B");
    let mut body = Body::new(1, 0, vec![0, 0, 177, 87, 177]);
    body.handlers = vec![[0, 2, 3, 0], [2, 3, 3, 0]];
    let frame = vec![0, 1, 64 + 3, 7, 0, 2];
    b.method(
        ACC_PUBLIC_STATIC,
        "h",
        "()V",
        Some(body.with("StackMapTable", frame)),
    );
    let init = b.method_ref("java/lang/Object", "<init>", "()V");
    let (hi, lo) = ((init >> 8) as u8, init as u8);
    b.method(
        0x0001,
        "<init>",
        "()V",
        Some(Body::new(1, 1, vec![42, 183, hi, lo, 177])),
    );
    let out = rewrite_class(&b.build(), 1, &with_handler).unwrap();
    let (class, code, insns) = code_of(&out.bytes, 0);
    // As above up to 23, then the handler: the exit call (23..29), athrow.
    let at: Vec<u32> = insns.iter().map(|i| i.offset).collect();
    assert_eq!(
        at,
        [
            0, 2, 3, 6, 7, 8, 10, 11, 14, 15, 16, 18, 19, 22, 23, 25, 26, 29
        ]
    );
    assert_call(&class, code.code, &insns, 14, 1, "ReturnSite");
    assert_eq!(insns[17].opcode, op::ATHROW);
    let table: Vec<_> = code
        .handlers
        .iter()
        .map(|h| (h.start, h.end, h.handler, h.catch_type))
        .collect();
    // The method's own handlers first: the JVM takes the first that covers.
    // Ours covers everything after the entry call, and catches anything.
    assert_eq!(table, [(6, 8, 15, 0), (8, 15, 15, 0), (6, 23, 23, 0)]);
    assert_eq!(
        code.max_stack, 3,
        "the exception and the exit call's two numbers"
    );
    let frames = stackmap::decode(sub_attribute(&class, &code, "StackMapTable").unwrap()).unwrap();
    let last = frames.last().unwrap();
    assert_eq!(last.offset, 23);
    let FrameKind::Full { locals, stack } = &last.kind else {
        panic!("a full frame at the handler: {last:?}");
    };
    assert!(locals.is_empty());
    let [VType::Object(thrown)] = stack[..] else {
        panic!("the exception on the stack: {stack:?}");
    };
    assert_eq!(
        class.pool.class_name(thrown).unwrap(),
        b"java/lang/Throwable"
    );

    // A constructor gets none: its code before super() runs with `this`
    // unmade, which the handler's frame would have to name.
    let (_, init_code, _) = code_of(&out.bytes, 1);
    assert!(init_code.handlers.is_empty());

    // A method that only throws gets its exit call from the handler alone,
    // and a class before version 50 no stack map.
    let throws = one_method(49, "p/Throws", Body::new(1, 0, vec![1, 191]));
    let out = rewrite_class(&throws, 1, &with_handler).unwrap();
    let (class, code, insns) = code_of(&out.bytes, 0);
    assert_eq!(code.handlers.len(), 1);
    assert_eq!(insns.last().unwrap().opcode, op::ATHROW);
    assert_call(&class, code.code, &insns, insns.len() - 4, 1, "ReturnSite");
    assert!(sub_attribute(&class, &code, "StackMapTable").is_none());
}

#[test]
fn constructors_keep_uninitialized_this_and_remap_uninitialized_offsets() {
    let mut b = ClassBuilder::new(52, "p/C");
    let init = b.method_ref("java/lang/Object", "<init>", "()V");
    let x_init = b.method_ref("p/X", "<init>", "(I)V");
    let x = b.class("p/X");
    // <init>(Z)V: new X before super() is legal; its frame names the `new`.
    // 0: new X  3: dup  4: iload_1  5: ifeq +7 (-> 12)  8: iconst_1  9: goto +4 (-> 13)
    // 12: iconst_0  13: invokespecial X.<init>(I)V  16: pop  17: aload_0
    // 18: invokespecial Object.<init>  21: return
    let code = vec![
        187,
        (x >> 8) as u8,
        x as u8,
        89,
        27,
        153,
        0,
        7,
        4,
        167,
        0,
        4,
        3,
        183,
        (x_init >> 8) as u8,
        x_init as u8,
        87,
        42,
        183,
        (init >> 8) as u8,
        init as u8,
        177,
    ];
    let u = |o: u8| [8, 0, o];
    let mut frames = vec![0, 2];
    // full_frame at 12: locals [UninitializedThis, int], stack [Uninit(0), Uninit(0)]
    frames.extend_from_slice(&[255, 0, 12, 0, 2, 6, 1, 0, 2]);
    frames.extend_from_slice(&u(0));
    frames.extend_from_slice(&u(0));
    // full_frame at 13 (delta 0): the same plus an int on the stack
    frames.extend_from_slice(&[255, 0, 0, 0, 2, 6, 1, 0, 3]);
    frames.extend_from_slice(&u(0));
    frames.extend_from_slice(&u(0));
    frames.push(1);
    let body = Body::new(4, 2, code).with("StackMapTable", frames);
    b.method(0x0001, "<init>", "(Z)V", Some(body));
    let out = rewrite_class(&b.build(), 3, &tracker()).unwrap();
    assert!(out.methods[0].rewritten);
    let (class, code, insns) = code_of(&out.bytes, 0);
    let new_at = insns.iter().find(|i| i.opcode == 187).unwrap().offset;
    assert_eq!(new_at, 6, "the entry call comes first, before super()");
    let frames = stackmap::decode(sub_attribute(&class, &code, "StackMapTable").unwrap()).unwrap();
    let FrameKind::Full { locals, stack } = &frames[0].kind else {
        panic!("{frames:?}")
    };
    assert_eq!(locals, &[VType::UninitializedThis, VType::Integer]);
    assert_eq!(
        stack,
        &[VType::Uninitialized(new_at), VType::Uninitialized(new_at)]
    );
    assert_eq!(frames[0].offset, 18);
    assert_eq!(frames[1].offset, 19);
}

/// `static int big(int x)` whose `ifeq` reaches 32767 bytes ahead, so that
/// the exit call injected in between makes it overflow; its fall-through has
/// no stack map frame.
fn big_method_class() -> Vec<u8> {
    let mut b = ClassBuilder::new(52, "p/Big");
    let mut code = vec![
        26, // 0: iload_0
        153, 0x7f, 0xff, // 1: ifeq +32767 (-> 32768)
        26,   // 4: iload_0
        60,   // 5: istore_1
        27,   // 6: iload_1
        154, 0, 5,   // 7: ifne +5 (-> 12)
        4,   // 10: iconst_1
        172, // 11: ireturn
    ];
    code.resize(32768, 0); // 12..32768: nops
    code.extend_from_slice(&[3, 172]); // 32768: iconst_0  32769: ireturn
    // Frames: append(int) at 12, chop(1) at 32768.
    let frames = vec![
        0,
        2,
        252,
        0,
        12,
        1,
        250,
        (32755u16 >> 8) as u8,
        32755u16 as u8,
    ];
    let body = Body::new(1, 2, code).with("StackMapTable", frames);
    b.method(ACC_PUBLIC_STATIC, "big", "(I)I", Some(body));
    b.build()
}

#[test]
fn widens_an_overflowing_conditional_and_adds_the_frame_it_needs() {
    let input = big_method_class();
    let out = rewrite_class(&input, 0x2000_0000, &tracker()).unwrap();
    assert!(out.methods[0].rewritten, "{:?}", out.methods[0]);
    let (class, code, insns) = code_of(&out.bytes, 0);
    // entry (6 bytes), iload_0, then ifne +8; goto_w
    assert_eq!(insns[4].opcode, 154);
    assert_eq!(insns[4].operands, Operands::Branch(insns[4].offset + 8));
    assert_eq!(insns[5].opcode, op::GOTO_W);
    let Operands::BranchWide(target) = insns[5].operands else {
        panic!()
    };
    let target_insn = insns.iter().position(|i| i.offset == target).unwrap();
    assert_eq!(insns[target_insn].opcode, 3, "lands on iconst_0");
    let frames = stackmap::decode(sub_attribute(&class, &code, "StackMapTable").unwrap()).unwrap();
    let offsets: Vec<u32> = frames.iter().map(|f| f.offset).collect();
    let fall_through = insns[6].offset;
    let after_return = insns.iter().find(|i| i.opcode == 0).unwrap().offset;
    assert_eq!(offsets, [fall_through, after_return, target]);
    // The new frame: x only, empty stack. The next one, written in full
    // since its append_frame would now be read against the new frame.
    assert_eq!(
        frames[0].kind,
        FrameKind::Full {
            locals: vec![VType::Integer],
            stack: vec![]
        }
    );
    assert_eq!(
        frames[1].kind,
        FrameKind::Full {
            locals: vec![VType::Integer, VType::Integer],
            stack: vec![]
        }
    );
    assert_eq!(frames[2].kind, FrameKind::Chop(1));
}

#[test]
fn widen_all_branches_rewrites_every_short_branch() {
    let mut b = ClassBuilder::new(52, "p/W");
    // 0: iload_0  1: ifne +5 (-> 6)  4: iconst_1  5: ireturn  6: [same_frame] iload_0  7: ireturn
    let body =
        Body::new(1, 1, vec![26, 154, 0, 5, 4, 172, 26, 172]).with("StackMapTable", vec![0, 1, 6]);
    b.method(ACC_PUBLIC_STATIC, "f", "(I)I", Some(body));
    let options = RewriteOptions {
        widen_all_branches: true,
    };
    let out = rewrite_class_with(&b.build(), 1, &tracker(), &options).unwrap();
    let (class, code, insns) = code_of(&out.bytes, 0);
    assert_eq!(insns[4].opcode, 153, "ifne became ifeq over a goto_w");
    assert_eq!(insns[5].opcode, op::GOTO_W);
    let frames = stackmap::decode(sub_attribute(&class, &code, "StackMapTable").unwrap()).unwrap();
    assert_eq!(frames.len(), 2, "a new frame after the goto_w");
    assert_eq!(frames[0].offset, insns[6].offset);
}

#[test]
fn old_classes_with_subroutines_are_relocated() {
    // 0: jsr +4 (-> 4)  3: return  4: astore_0  5: ret 0
    let subroutine = || Body::new(1, 1, vec![168, 0, 4, 177, 75, 169, 0]);
    let out = rewrite_class(&one_method(49, "p/Old", subroutine()), 1, &tracker()).unwrap();
    assert!(out.methods[0].rewritten, "{:?}", out.methods[0]);
    let (_, _, insns) = code_of(&out.bytes, 0);
    // entry 0..6, jsr at 6 -> astore_0 past the exit call and return.
    assert_eq!(insns[3].opcode, 168);
    let astore = insns.iter().find(|i| i.opcode == 75).unwrap().offset;
    assert_eq!(insns[3].operands, Operands::Branch(astore));

    // The same code in a Java 7 class is illegal: left alone.
    let input = one_method(51, "p/New", subroutine());
    let out = rewrite_class(&input, 1, &tracker()).unwrap();
    assert!(!out.methods[0].rewritten);
    assert!(skip_reason(&out).contains("jsr/ret"));
    assert_eq!(out.bytes, input, "nothing rewritten: the input comes back");
}

#[test]
fn leaves_alone_what_it_should() {
    // The tracker class itself.
    let input = one_method(52, "hprof_rs/Tracker", Body::new(0, 0, vec![177]));
    let out = rewrite_class(&input, 1, &tracker()).unwrap();
    assert_eq!(out.bytes, input);
    assert_eq!(skip_reason(&out), "the tracker class itself");

    // Code that would pass 65535 bytes.
    let mut code = vec![0; 65530];
    code.push(177);
    let out = rewrite_class(
        &one_method(52, "p/Huge", Body::new(0, 0, code)),
        1,
        &tracker(),
    )
    .unwrap();
    assert!(skip_reason(&out).contains("65535"));

    // A branch into the middle of an instruction.
    let odd = Body::new(1, 0, vec![16, 1, 167, 0xff, 0xff, 177]);
    let out = rewrite_class(&one_method(52, "p/Odd", odd), 1, &tracker()).unwrap();
    assert!(skip_reason(&out).contains("not an instruction"));

    // Only an exit call asked for, and the method never returns.
    let exit_only = Injection {
        entry: None,
        ..tracker()
    };
    let throws = one_method(52, "p/Throws", Body::new(1, 0, vec![1, 191]));
    let out = rewrite_class(&throws, 1, &exit_only).unwrap();
    assert!(skip_reason(&out).starts_with("nothing to inject"));

    // An empty finalize(): Object's; instrumented, it would make every
    // object finalizable.
    let mut b = ClassBuilder::new(52, "p/Fin");
    b.method(0x0004, "finalize", "()V", Some(Body::new(0, 1, vec![177])));
    let input = b.build();
    let out = rewrite_class(&input, 1, &tracker()).unwrap();
    assert!(skip_reason(&out).contains("finalizable"));
    assert_eq!(out.bytes, input);
}

#[test]
fn promotes_same_frames_whose_delta_passes_63() {
    let mut b = ClassBuilder::new(52, "p/Delta");
    // 0: iload_0  1: ifeq +62 (-> 63)  4..63: nops  63: [same_frame delta 63] return
    let mut code = vec![26, 153, 0, 62];
    code.resize(63, 0);
    code.push(177);
    let body = Body::new(1, 1, code).with("StackMapTable", vec![0, 1, 63]);
    b.method(ACC_PUBLIC_STATIC, "d", "(I)V", Some(body));
    let out = rewrite_class(&b.build(), 1, &tracker()).unwrap();
    let (class, code, _) = code_of(&out.bytes, 0);
    let table = sub_attribute(&class, &code, "StackMapTable").unwrap();
    assert_eq!(table, [0, 1, 251, 0, 69], "same_frame_extended at 69");
}

#[test]
fn rejects_what_is_not_a_usable_class() {
    let good = big_method_class();
    assert!(matches!(
        rewrite_class(&good[..100], 1, &tracker()),
        Err(BciError::Truncated { .. })
    ));
    let mut bad = good.clone();
    bad[0] = 0;
    assert!(matches!(
        rewrite_class(&bad, 1, &tracker()),
        Err(BciError::BadMagic(_))
    ));
    let mut new = good.clone();
    new[7] = 70;
    assert_eq!(
        rewrite_class(&new, 1, &tracker()).unwrap_err(),
        BciError::UnsupportedVersion {
            major: 70,
            minor: 0
        }
    );
    let mut wrong = tracker();
    wrong.exit = Some(("ReturnSite".into(), "()V".into()));
    assert!(matches!(
        rewrite_class(&good, 1, &wrong),
        Err(BciError::BadInjection(_))
    ));
    let mut trailing = good;
    trailing.push(0);
    assert!(matches!(
        rewrite_class(&trailing, 1, &tracker()),
        Err(BciError::Malformed { .. })
    ));
}

/// A small deterministic xorshift generator, for mutations.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

#[test]
fn never_panics_on_truncated_or_mutated_classes() {
    let options = RewriteOptions {
        widen_all_branches: true,
    };
    let mut samples = vec![big_method_class(), TRACKER_CLASS_FILE.to_vec()];
    let mut b = ClassBuilder::new(52, "p/Lines");
    let lines = Body::new(1, 1, vec![26, 154, 0, 5, 4, 172, 26, 172])
        .with("LineNumberTable", vec![0, 2, 0, 0, 0, 1, 0, 6, 0, 2])
        .with("StackMapTable", vec![0, 1, 6]);
    b.method(ACC_PUBLIC_STATIC, "f", "(I)I", Some(lines));
    samples.push(b.build());
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for sample in &samples {
        for len in 0..sample.len().min(2000) {
            let _ = rewrite_class_with(&sample[..len], 1, &tracker(), &options);
        }
        for _ in 0..3000 {
            let mut mutated = sample.clone();
            for _ in 0..1 + rng.below(4) {
                let at = rng.below(mutated.len());
                mutated[at] = rng.next() as u8;
            }
            if let Ok(out) = rewrite_class_with(&mutated, 1, &tracker(), &options) {
                // Whatever comes out parses again.
                ClassFile::parse(&out.bytes).unwrap();
            }
        }
    }
}

/// Checks `aload_0; invokestatic hprof_rs/LockTracker.<method>(Object)V`
/// starting at instruction `first`.
fn assert_argument_call(
    class: &ClassFile<'_>,
    code: &[u8],
    insns: &[Insn],
    first: usize,
    method: &str,
) {
    assert_eq!(insns[first].opcode, op::ALOAD_0);
    let invoke = &insns[first + 1];
    assert_eq!(invoke.opcode, op::INVOKESTATIC);
    let m = super::bytes::u16_at(code, invoke.offset as usize + 1).unwrap();
    let (c, name, descriptor) = class.pool.member_ref(m).unwrap();
    assert_eq!(class.pool.class_name(c).unwrap(), b"hprof_rs/LockTracker");
    assert_eq!(name, method.as_bytes());
    assert_eq!(descriptor, ARGUMENT_CALL_DESCRIPTOR.as_bytes());
}

#[test]
fn passes_the_first_argument_into_the_selected_methods_only() {
    let mut b = ClassBuilder::new(52, "p/Parks");
    // static void park(Object o) { o.getClass()-like: aload_0; pop; return }
    b.method(
        ACC_PUBLIC_STATIC,
        "park",
        "(Ljava/lang/Object;)V",
        Some(Body::new(1, 1, vec![42, 87, 177])),
    );
    // Not selected.
    b.method(
        ACC_PUBLIC_STATIC,
        "unpark",
        "(Ljava/lang/Object;)V",
        Some(Body::new(1, 1, vec![42, 87, 177])),
    );
    // Selected, but overwrites its argument (aconst_null; astore_0; return).
    b.method(
        ACC_PUBLIC_STATIC,
        "parkNanos",
        "(Ljava/lang/Object;J)V",
        Some(Body::new(1, 3, vec![1, 75, 177])),
    );
    // Selected, but its first parameter is a long.
    b.method(
        ACC_PUBLIC_STATIC,
        "parkUntil",
        "(J)V",
        Some(Body::new(0, 2, vec![177])),
    );
    let input = b.build();
    let selected = [
        ("park", "(Ljava/lang/Object;)V"),
        ("parkNanos", "(Ljava/lang/Object;J)V"),
        ("parkUntil", "(J)V"),
    ];
    let out =
        rewrite_passing_first_argument(&input, &Injection::lock_tracker(), &selected).unwrap();
    let rewritten: Vec<bool> = out.methods.iter().map(|m| m.rewritten).collect();
    assert_eq!(rewritten, [true, false, false, false]);
    let reasons: Vec<&str> = out.methods[1..]
        .iter()
        .map(|m| m.skip_reason.as_deref().unwrap_or_default())
        .collect();
    assert_eq!(
        reasons,
        [
            "not selected",
            "it writes local 0, the argument the calls pass",
            "its first parameter is not a reference"
        ]
    );
    let (class, code, insns) = code_of(&out.bytes, 0);
    // Entry call, aload_0, pop, exit call, return.
    assert_eq!(insns.len(), 7);
    assert_argument_call(&class, code.code, &insns, 0, "parking");
    assert_eq!((insns[2].opcode, insns[3].opcode), (op::ALOAD_0, 87));
    assert_argument_call(&class, code.code, &insns, 4, "parked");
    assert_eq!(insns[6].opcode, op::RETURN);
    assert_eq!(code.max_stack, 3);
    // The untouched methods keep their code.
    let (_, unpark, _) = code_of(&out.bytes, 1);
    assert_eq!(unpark.code, [42, 87, 177]);

    // The calls must take the argument; (II)V calls are refused.
    assert!(matches!(
        rewrite_passing_first_argument(&input, &tracker(), &selected),
        Err(BciError::BadInjection(_))
    ));
}

#[test]
fn a_method_too_large_to_count_is_named_as_uncounted() {
    // iconst_1; newarray int; pop; return, after nops up to 65,530 bytes.
    let mut code = vec![0; 65525];
    code.extend_from_slice(&[4, 188, 10, 87, 177]);
    let input = one_method(52, "p/Huge", Body::new(1, 0, code));
    let out = crate::rewrite_counting_allocations(&input, 1, &[], None).unwrap();
    assert_eq!(
        crate::uncounted_methods(&input, &out),
        [(
            "m()V".to_string(),
            out.methods[0].skip_reason.clone().unwrap()
        )]
    );
    // The same size without an allocation: nothing left uncounted.
    let mut code = vec![0; 65529];
    code.push(177);
    let input = one_method(52, "p/Quiet", Body::new(0, 0, code));
    let out = crate::rewrite_counting_allocations(&input, 1, &[], None).unwrap();
    assert!(crate::uncounted_methods(&input, &out).is_empty());
}

#[test]
fn compact_sites_push_a_base_and_an_offset_instead_of_a_constant_each() {
    // 200 times `iconst_1; newarray int; pop`, then return.
    let mut code = Vec::new();
    for _ in 0..200 {
        code.extend_from_slice(&[4, 188, 10, 87]);
    }
    code.push(177);
    let input = one_method(52, "p/Many", Body::new(1, 0, code));
    let constants = |bytes: &[u8]| ClassFile::parse(bytes).unwrap().pool.count();
    let first = 1000;
    let plain = crate::rewrite_counting_allocations(&input, first, &[], None).unwrap();
    let compact = crate::rewrite_counting_allocations_with(
        &input,
        first,
        &[],
        None,
        crate::ContextScope::EveryCall,
        true,
    )
    .unwrap();
    assert_eq!(plain.sites, compact.sites, "the same numbering");
    // One constant per site before; now the base (shifted, for arrays)
    // alone beside the tracker's references (15 in all here).
    let added = |out: &crate::CountingOutcome| constants(&out.bytes) - constants(&input);
    assert_eq!(added(&plain) - added(&compact), 199);
    assert!(added(&compact) < 20, "{}", added(&compact));
    // Site k pushes `ldc (first << 3)`, its offset `(k << 3) | int`, `iadd`.
    let (class, code, insns) = code_of(&compact.bytes, 0);
    let ldc = insns.iter().position(|i| i.opcode == op::LDC).unwrap();
    let index = u16::from(code.code[insns[ldc].offset as usize + 1]);
    assert_eq!(
        class.pool.entry(index),
        Some(&constant_pool::Entry::Integer((first << 3) as i32))
    );
    let third = insns
        .iter()
        .filter(|i| i.opcode == op::LDC)
        .nth(2)
        .map(|i| i.offset as usize)
        .unwrap();
    // Site 1002: offset 2 << 3 | 2 (int) = 18, bipush.
    assert_eq!(
        &code.code[third + 2..third + 5],
        &[op::BIPUSH, 18, op::IADD]
    );
    // The count, its `dup`, the base and the offset: one slot more than a
    // site of its own constant needs (a JDK 25 class failed verification
    // when this was left at two).
    assert_eq!(code.max_stack, 4);
    let (_, plain_code, _) = code_of(&plain.bytes, 0);
    assert_eq!(plain_code.max_stack, 3);
}
