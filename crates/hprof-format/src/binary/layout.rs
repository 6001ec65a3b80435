//! The one table of heap dump sub-record layouts. Every walker of heap
//! dump bodies (the parser, the streaming walker, the heap dump copy, the
//! ASCII conversion, `hprof-rs heap`) finds a sub-record's length and the
//! places of its serials and references here, so each layout is spelled
//! out once.
//!
//! A sub-record is its tag byte, a fixed head of identifiers and u4s, and
//! for the four dump kinds a variable part whose length the head gives:
//!
//! | tag  | sub-record         | head after the tag                          | variable part          |
//! |------|--------------------|---------------------------------------------|------------------------|
//! | 0xFF | ROOT UNKNOWN       | object id                                   |                        |
//! | 0x01 | ROOT JNI GLOBAL    | object id, JNI global ref id                |                        |
//! | 0x02 | ROOT JNI LOCAL     | object id, thread serial, frame depth       |                        |
//! | 0x03 | ROOT JAVA FRAME    | object id, thread serial, frame depth       |                        |
//! | 0x04 | ROOT NATIVE STACK  | object id, thread serial                    |                        |
//! | 0x05 | ROOT STICKY CLASS  | object id                                   |                        |
//! | 0x06 | ROOT THREAD BLOCK  | object id, thread serial                    |                        |
//! | 0x07 | ROOT MONITOR USED  | object id                                   |                        |
//! | 0x08 | ROOT THREAD OBJECT | object id, thread serial, trace serial      |                        |
//! | 0x20 | CLASS DUMP         | class id, trace serial, super, loader, signers, protection domain, 2 reserved ids, instance size (u4) | u2 count of (u2 index, type, value) constants; u2 count of (name id, type, value) statics; u2 count of (name id, type) instance fields |
//! | 0x21 | INSTANCE DUMP      | object id, trace serial, class id, byte count (u4) | the field values      |
//! | 0x22 | OBJECT ARRAY DUMP  | array id, trace serial, length (u4), array class id | length ids     |
//! | 0x23 | PRIMITIVE ARRAY DUMP | array id, trace serial, length (u4), element type (u1) | length elements |
//!
//! Identifiers take the file's identifier size (4 or 8 bytes); a value
//! takes the size of its basic type (an object reference: one identifier).

use super::records::BasicType;
use super::tags::heap;
use crate::big_endian;

/// One field of a sub-record's fixed head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    /// An identifier (object, class, name...).
    Id,
    /// A u4 with no role below (frame depth, instance size).
    U4,
    /// The u4 serial of the stack trace that allocated the object.
    TraceSerial,
    /// The u4 serial of the thread the root belongs to.
    ThreadSerial,
    /// The u4 count that sizes the variable part.
    Count,
    /// The class of an instance or object array.
    ClassId,
    /// The u1 basic type of a primitive array's elements.
    ElementType,
}

/// How the variable part after the head is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tail {
    /// No variable part (the roots).
    None,
    /// CLASS DUMP: constants, statics and instance fields, each a u2 count
    /// of typed items.
    ClassBody,
    /// INSTANCE DUMP: `count` bytes of field values.
    Bytes,
    /// OBJECT ARRAY DUMP: `count` identifiers.
    Ids,
    /// PRIMITIVE ARRAY DUMP: `count` elements of the head's element type.
    Elements,
}

use Field::*;

/// Every sub-record: (tag, head fields after the tag byte, variable part).
const LAYOUTS: [(u8, &[Field], Tail); 13] = [
    (heap::ROOT_UNKNOWN, &[Id], Tail::None),
    (heap::ROOT_JNI_GLOBAL, &[Id, Id], Tail::None),
    (heap::ROOT_JNI_LOCAL, &[Id, ThreadSerial, U4], Tail::None),
    (heap::ROOT_JAVA_FRAME, &[Id, ThreadSerial, U4], Tail::None),
    (heap::ROOT_NATIVE_STACK, &[Id, ThreadSerial], Tail::None),
    (heap::ROOT_STICKY_CLASS, &[Id], Tail::None),
    (heap::ROOT_THREAD_BLOCK, &[Id, ThreadSerial], Tail::None),
    (heap::ROOT_MONITOR_USED, &[Id], Tail::None),
    (
        heap::ROOT_THREAD_OBJ,
        &[Id, ThreadSerial, TraceSerial],
        Tail::None,
    ),
    (
        heap::CLASS_DUMP,
        &[Id, TraceSerial, Id, Id, Id, Id, Id, Id, U4],
        Tail::ClassBody,
    ),
    (
        heap::INSTANCE_DUMP,
        &[Id, TraceSerial, ClassId, Count],
        Tail::Bytes,
    ),
    (
        heap::OBJ_ARRAY_DUMP,
        &[Id, TraceSerial, Count, ClassId],
        Tail::Ids,
    ),
    (
        heap::PRIM_ARRAY_DUMP,
        &[Id, TraceSerial, Count, ElementType],
        Tail::Elements,
    ),
];

/// A sub-record's layout for one identifier size: where its fields sit,
/// counting the tag byte (0: the sub-record has no such field).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    /// The length of the tag and the fixed head.
    pub head: usize,
    /// Where the u4 stack trace serial number is.
    pub trace_at: usize,
    /// Where the u4 thread serial number is.
    pub thread_at: usize,
    /// Where the u4 count that sizes the variable part is.
    pub count_at: usize,
    /// Where the class id of an instance or object array is.
    pub class_at: usize,
    /// Where the u1 element type of a primitive array is.
    pub element_type_at: usize,
    /// What follows the head.
    pub tail: Tail,
}

impl Shape {
    /// Whether the sub-record dumps an object (class, instance or array)
    /// whose identifier follows the tag, rather than naming a root.
    pub fn dumps_object(&self) -> bool {
        self.tail != Tail::None
    }
}

const fn compile(id_size: usize) -> [Option<Shape>; 256] {
    let mut shapes = [None; 256];
    let mut i = 0;
    while i < LAYOUTS.len() {
        let (tag, fields, tail) = LAYOUTS[i];
        let mut shape = Shape {
            head: 1,
            trace_at: 0,
            thread_at: 0,
            count_at: 0,
            class_at: 0,
            element_type_at: 0,
            tail,
        };
        let mut f = 0;
        while f < fields.len() {
            let at = shape.head;
            shape.head += match fields[f] {
                Id => id_size,
                U4 => 4,
                TraceSerial => {
                    shape.trace_at = at;
                    4
                }
                ThreadSerial => {
                    shape.thread_at = at;
                    4
                }
                Count => {
                    shape.count_at = at;
                    4
                }
                ClassId => {
                    shape.class_at = at;
                    id_size
                }
                ElementType => {
                    shape.element_type_at = at;
                    1
                }
            };
            f += 1;
        }
        shapes[tag as usize] = Some(shape);
        i += 1;
    }
    shapes
}

static SHAPES_4: [Option<Shape>; 256] = compile(4);
static SHAPES_8: [Option<Shape>; 256] = compile(8);

/// The layout of sub-records with tag `tag` in a file with `id_size`-byte
/// identifiers (4 or 8; any other size has no layouts), or None for an
/// unknown tag.
#[inline]
pub fn shape(tag: u8, id_size: u32) -> Option<&'static Shape> {
    match id_size {
        4 => SHAPES_4[tag as usize].as_ref(),
        8 => SHAPES_8[tag as usize].as_ref(),
        _ => None,
    }
}

/// How far a sub-record reaches, as far as the bytes at hand tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Extent {
    /// The sub-record is this long (tag included).
    Whole(u64),
    /// It is at least this long; more bytes are needed to tell.
    AtLeast(u64),
}

/// Why the bytes at hand cannot start a valid sub-record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// The tag byte is not a sub-record tag this crate knows.
    UnknownTag(u8),
    /// The basic-type byte at `at` (from the tag) is not a known type.
    BadType {
        /// Offset of the byte, counting from the tag.
        at: usize,
        /// The byte.
        byte: u8,
    },
    /// A primitive array claims object elements (its type byte at `at`).
    ObjectElements {
        /// Offset of the element type byte, counting from the tag.
        at: usize,
    },
}

/// How long the sub-record at the start of `bytes` is (`bytes` may hold
/// only its beginning, or more than it). Every basic-type byte at hand is
/// checked, so a walker finds a damaged type as the parser does.
#[inline]
pub fn measure(bytes: &[u8], id_size: u32) -> Result<Extent, Fault> {
    let Some(&tag) = bytes.first() else {
        return Ok(Extent::AtLeast(1));
    };
    let shape = shape(tag, id_size).ok_or(Fault::UnknownTag(tag))?;
    let head = shape.head;
    if bytes.len() < head {
        return Ok(Extent::AtLeast(head as u64));
    }
    let count = || u64::from(get_u4(bytes, shape.count_at));
    let whole = |tail: u64| Ok(Extent::Whole(head as u64 + tail));
    match shape.tail {
        Tail::None => whole(0),
        Tail::Bytes => whole(count()),
        Tail::Ids => whole(count() * u64::from(id_size)),
        Tail::Elements => {
            let at = shape.element_type_at;
            match type_at(bytes, at)? {
                BasicType::Object => Err(Fault::ObjectElements { at }),
                kind => whole(count() * kind.size(id_size) as u64),
            }
        }
        Tail::ClassBody => walk_class_body(bytes, head, id_size, |_| {}, |_| {}),
    }
}

/// Walks a CLASS DUMP's variable part, which starts at `at`, calling
/// `object_static` with the offset of each object-typed static value.
fn walk_class_body(
    bytes: &[u8],
    mut at: usize,
    id_size: u32,
    mut object_static: impl FnMut(usize),
    mut instance_field: impl FnMut(BasicType),
) -> Result<Extent, Fault> {
    let id = id_size as usize;
    let short = |needed: usize| Ok(Extent::AtLeast(needed as u64));
    // Constants: u2 index, type, value. Statics: name id, type, value.
    for (index_len, is_static) in [(2, false), (id, true)] {
        let Some(items) = u2_at(bytes, at) else {
            return short(at + 2);
        };
        at += 2;
        for _ in 0..items {
            let type_byte = at + index_len;
            if bytes.len() <= type_byte {
                return short(type_byte + 1);
            }
            let kind = type_at(bytes, type_byte)?;
            if is_static && kind == BasicType::Object {
                object_static(type_byte + 1);
            }
            at = type_byte + 1 + kind.size(id_size);
        }
    }
    // Instance fields: name id, type; the types at hand are checked.
    let Some(fields) = u2_at(bytes, at) else {
        return short(at + 2);
    };
    at += 2;
    for field in 0..fields {
        let type_byte = at + field * (id + 1) + id;
        if type_byte < bytes.len() {
            instance_field(type_at(bytes, type_byte)?);
        }
    }
    Ok(Extent::Whole((at + fields * (id + 1)) as u64))
}

/// Where the object references of a whole sub-record that may point
/// outside the dump sit: the elements of an object array and the
/// reference statics of a class. (Instance fields need the class layout
/// and are not listed.)
pub fn reference_slots(record: &[u8], id_size: u32) -> Vec<usize> {
    let Some(shape) = record.first().and_then(|&tag| shape(tag, id_size)) else {
        return Vec::new();
    };
    match shape.tail {
        Tail::Ids if record.len() >= shape.head => {
            let id = id_size as usize;
            let n = get_u4(record, shape.count_at) as usize;
            (0..n).map(|i| shape.head + i * id).collect()
        }
        Tail::ClassBody => {
            let mut slots = Vec::new();
            let _ = walk_class_body(record, shape.head, id_size, |at| slots.push(at), |_| {});
            slots
        }
        _ => Vec::new(),
    }
}

/// For a whole CLASS DUMP sub-record: its superclass's identifier and how
/// many of the instance fields it declares (its superclasses' not counted)
/// are object references. None for any other or a damaged sub-record.
pub fn class_reference_fields(record: &[u8], id_size: u32) -> Option<(u64, u32)> {
    if *record.first()? != heap::CLASS_DUMP {
        return None;
    }
    let shape = shape(heap::CLASS_DUMP, id_size)?;
    let mut references = 0;
    let extent = walk_class_body(
        record,
        shape.head,
        id_size,
        |_| {},
        |kind| references += u32::from(kind == BasicType::Object),
    );
    match extent {
        Ok(Extent::Whole(n)) if n <= record.len() as u64 => {
            // The superclass follows the class's identifier and trace serial.
            let superclass = get_id(record, 1 + id_size as usize + 4, id_size);
            Some((superclass, references))
        }
        _ => None,
    }
}

fn type_at(bytes: &[u8], at: usize) -> Result<BasicType, Fault> {
    let byte = bytes[at];
    BasicType::from_u8(byte).ok_or(Fault::BadType { at, byte })
}

fn u2_at(bytes: &[u8], at: usize) -> Option<usize> {
    big_endian::u2_at(bytes, at).map(usize::from)
}

/// Reads the u4 at `at` in a sub-record (the caller knows it is within).
pub fn get_u4(record: &[u8], at: usize) -> u32 {
    big_endian::u4_at(record, at).expect("a u4 within the sub-record")
}

/// Reads an identifier of `id_size` bytes at `at`.
pub fn get_id(record: &[u8], at: usize, id_size: u32) -> u64 {
    big_endian::id_at(record, at, id_size).expect("an identifier within the sub-record")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::binary::records::*;
    use crate::binary::writer::encode_heap_record;

    #[test]
    fn head_lengths_and_field_places_follow_the_table() {
        for (id_size, id) in [(4u32, 4usize), (8, 8)] {
            let of = |tag| *shape(tag, id_size).unwrap();
            assert_eq!(of(heap::ROOT_UNKNOWN).head, 1 + id);
            assert_eq!(of(heap::ROOT_JNI_GLOBAL).head, 1 + 2 * id);
            let thread_obj = of(heap::ROOT_THREAD_OBJ);
            assert_eq!(
                (thread_obj.head, thread_obj.thread_at, thread_obj.trace_at),
                (1 + id + 8, 1 + id, 1 + id + 4)
            );
            let class = of(heap::CLASS_DUMP);
            assert_eq!((class.head, class.trace_at), (1 + 7 * id + 8, 1 + id));
            let instance = of(heap::INSTANCE_DUMP);
            assert_eq!(
                (instance.head, instance.count_at),
                (1 + 2 * id + 8, 1 + 2 * id + 4)
            );
            assert_eq!(instance.class_at, 1 + id + 4);
            let objects = of(heap::OBJ_ARRAY_DUMP);
            assert_eq!(objects.class_at, 1 + id + 8);
            assert_eq!(
                (objects.head, objects.count_at),
                (1 + 2 * id + 8, 1 + id + 4)
            );
            let prims = of(heap::PRIM_ARRAY_DUMP);
            assert_eq!(
                (prims.head, prims.element_type_at),
                (1 + id + 9, 1 + id + 8)
            );
            assert!(class.dumps_object() && !thread_obj.dumps_object());
            assert_eq!(shape(0x99, id_size), None);
        }
        assert_eq!(shape(heap::ROOT_UNKNOWN, 5), None);
    }

    /// One sub-record of every kind, with serials and classes that tell
    /// the fields apart: trace 0x7777, thread 0x5555, class 0xC1A5.
    fn one_of_each() -> Vec<HeapRecord> {
        let (object_id, thread_serial, trace_serial) = (0x0B, 0x5555, 0x7777);
        vec![
            HeapRecord::RootUnknown { object_id },
            HeapRecord::RootJniGlobal {
                object_id,
                jni_global_ref_id: 9,
            },
            HeapRecord::RootJniLocal {
                object_id,
                thread_serial,
                frame_depth: 2,
            },
            HeapRecord::RootJavaFrame {
                object_id,
                thread_serial,
                frame_depth: 3,
            },
            HeapRecord::RootNativeStack {
                object_id,
                thread_serial,
            },
            HeapRecord::RootStickyClass { object_id },
            HeapRecord::RootThreadBlock {
                object_id,
                thread_serial,
            },
            HeapRecord::RootMonitorUsed { object_id },
            HeapRecord::RootThreadObject {
                object_id,
                thread_serial,
                trace_serial,
            },
            HeapRecord::ClassDump {
                class_id: object_id,
                trace_serial,
                super_id: 1,
                loader_id: 2,
                signers_id: 3,
                protection_domain_id: 4,
                reserved1: 0,
                reserved2: 0,
                instance_size: 24,
                constant_pool: vec![ConstantPoolEntry {
                    index: 1,
                    value: Value::Double(0),
                }],
                static_fields: vec![
                    StaticField {
                        name_id: 5,
                        value: Value::Char(7),
                    },
                    StaticField {
                        name_id: 6,
                        value: Value::Object(0xAB),
                    },
                ],
                instance_fields: vec![FieldDescriptor {
                    name_id: 7,
                    field_type: BasicType::Long,
                }],
            },
            HeapRecord::InstanceDump {
                object_id,
                trace_serial,
                class_id: 0xC1A5,
                values: vec![1, 2, 3],
            },
            HeapRecord::ObjectArrayDump {
                array_id: object_id,
                trace_serial,
                array_class_id: 0xC1A5,
                elements: vec![0xAB, 0xAB],
            },
            HeapRecord::PrimitiveArrayDump {
                array_id: object_id,
                trace_serial,
                elements: PrimitiveArray::Short(vec![1, 2, 3]),
            },
        ]
    }

    /// The table, the encoder and the decoder spell each layout once each;
    /// this holds them to the same bytes.
    #[test]
    fn the_table_agrees_with_the_encoder_and_the_decoder() {
        for id_size in [4, 8] {
            let records = one_of_each();
            let mut body = Vec::new();
            for record in &records {
                let mut bytes = Vec::new();
                encode_heap_record(record, id_size, &mut bytes);
                let shape = shape(bytes[0], id_size).unwrap();
                assert_eq!(
                    measure(&bytes, id_size),
                    Ok(Extent::Whole(bytes.len() as u64))
                );
                let u4 = |at: usize| (at > 0).then(|| get_u4(&bytes, at));
                assert_eq!(u4(shape.trace_at), record_trace(record), "{record:?}");
                assert_eq!(u4(shape.thread_at), record_thread(record), "{record:?}");
                if shape.class_at > 0 {
                    let class = &bytes[shape.class_at..shape.class_at + id_size as usize];
                    assert_eq!(
                        class.iter().fold(0, |v, &b| (v << 8) | u64::from(b)),
                        0xC1A5
                    );
                }
                for slot in reference_slots(&bytes, id_size) {
                    assert_eq!(bytes[slot + id_size as usize - 1], 0xAB, "{record:?}");
                }
                body.extend_from_slice(&bytes);
            }
            let decoded = crate::binary::reader::parse_heap_records(&body, id_size, 0);
            assert_eq!(decoded.unwrap(), records);
        }
    }

    fn record_trace(record: &HeapRecord) -> Option<u32> {
        match record {
            HeapRecord::RootThreadObject { trace_serial, .. }
            | HeapRecord::ClassDump { trace_serial, .. }
            | HeapRecord::InstanceDump { trace_serial, .. }
            | HeapRecord::ObjectArrayDump { trace_serial, .. }
            | HeapRecord::PrimitiveArrayDump { trace_serial, .. } => Some(*trace_serial),
            _ => None,
        }
    }

    fn record_thread(record: &HeapRecord) -> Option<u32> {
        match record {
            HeapRecord::RootJniLocal { thread_serial, .. }
            | HeapRecord::RootJavaFrame { thread_serial, .. }
            | HeapRecord::RootNativeStack { thread_serial, .. }
            | HeapRecord::RootThreadBlock { thread_serial, .. }
            | HeapRecord::RootThreadObject { thread_serial, .. } => Some(*thread_serial),
            _ => None,
        }
    }

    #[test]
    fn measuring_a_partial_sub_record_asks_for_more() {
        // PRIMITIVE ARRAY DUMP of 3 ints, 4-byte ids.
        let array = [0x23, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 3, 10];
        assert_eq!(measure(&array[..5], 4), Ok(Extent::AtLeast(14)));
        assert_eq!(measure(&array, 4), Ok(Extent::Whole(14 + 12)));
        let mut object = array;
        object[13] = 2;
        assert_eq!(measure(&object, 4), Err(Fault::ObjectElements { at: 13 }));
        object[13] = 3;
        assert_eq!(measure(&object, 4), Err(Fault::BadType { at: 13, byte: 3 }));
        assert_eq!(measure(&[0x42], 4), Err(Fault::UnknownTag(0x42)));
        assert_eq!(measure(&[], 4), Ok(Extent::AtLeast(1)));
    }
}
