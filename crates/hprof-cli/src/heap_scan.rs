//! Counting the objects of a binary heap dump per class at the speed of
//! the disk, in bounded memory: the body is read in chunks, each
//! sub-record's length is read from the chunk (`heap_walk::sub_record_len`)
//! and only the fixed head of an object is looked at. An object larger than
//! a chunk (a big array) is counted from its head and its elements are
//! skipped unread, so no object is ever held whole. A class's instance
//! fields are read from its CLASS DUMP (which no chunk cuts: see [`CHUNK`]),
//! for the size of its instances.

use hprof_format::ParseError;
use hprof_format::binary::BasicType;
use hprof_format::binary::heap_walk::{get_id, sub_record_len};
use hprof_format::binary::layout::{self, Extent, Tail};
use std::io::Read;

/// Bytes read at a time; more than the largest CLASS DUMP can take
/// (65535 constants, statics and fields of at most 17 bytes each).
const CHUNK: usize = 8 << 20;

/// The smallest buffer: room for any object's fixed head.
const MIN_CHUNK: usize = 64;

/// What one sub-record of a heap dump counts for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counted {
    /// A CLASS DUMP: the class, its superclass and how many of the
    /// instance fields it declares are references.
    Class {
        class: u64,
        superclass: u64,
        references: u32,
    },
    /// An instance of `class` with `bytes` of field values in the dump.
    Instance { class: u64, bytes: u64 },
    /// An array of `length` elements of `element`; `key` is its class
    /// (an object array's class id, or a primitive array's element type
    /// byte with [`PRIMITIVE_KEY`] set).
    Array {
        key: u64,
        element: BasicType,
        length: u64,
    },
}

/// Marks a key as a primitive array type rather than a class id.
pub const PRIMITIVE_KEY: u64 = 1 << 63;

/// What the sub-record that starts `head` counts for, if it is a class,
/// an instance or an array and `head` holds its fixed head (a class: the
/// whole sub-record).
fn object_of(head: &[u8], id_size: u32) -> Option<Counted> {
    let shape = layout::shape(*head.first()?, id_size)?;
    let head_len = shape.head;
    let count = || {
        Some(u64::from(layout::get_u4(
            head.get(..head_len)?,
            shape.count_at,
        )))
    };
    let class = || {
        Some(get_id(
            head.get(..shape.class_at + id_size as usize)?,
            shape.class_at,
            id_size,
        ))
    };
    Some(match shape.tail {
        Tail::ClassBody => {
            let (superclass, references) = layout::class_reference_fields(head, id_size)?;
            Counted::Class {
                class: get_id(head, 1, id_size),
                superclass,
                references,
            }
        }
        Tail::Bytes => Counted::Instance {
            class: class()?,
            bytes: count()?,
        },
        Tail::Ids => Counted::Array {
            key: class()?,
            element: BasicType::Object,
            length: count()?,
        },
        Tail::Elements => {
            let type_byte = *head.get(shape.element_type_at)?;
            Counted::Array {
                key: PRIMITIVE_KEY | u64::from(type_byte),
                element: BasicType::from_u8(type_byte)?,
                length: count()?,
            }
        }
        Tail::None => return None,
    })
}

/// The whole length of an instance or array sub-record from its head alone.
fn whole_len(head: &[u8], id_size: u32) -> Option<u64> {
    match layout::measure(head, id_size) {
        Ok(Extent::Whole(n)) => Some(n),
        _ => None,
    }
}

/// Calls `count` for every object in the heap dump body of `length` bytes
/// read from `input`; `offset` is the body's file offset, for errors.
pub fn scan(
    input: &mut impl Read,
    length: u64,
    id_size: u32,
    offset: u64,
    count: impl FnMut(Counted),
) -> Result<(), ParseError> {
    scan_in_chunks(input, length, id_size, offset, count, CHUNK)
}

/// [`scan`] with chunks of `chunk` bytes (tests use small ones to reach
/// every chunk boundary).
fn scan_in_chunks(
    input: &mut impl Read,
    length: u64,
    id_size: u32,
    offset: u64,
    mut count: impl FnMut(Counted),
    chunk: usize,
) -> Result<(), ParseError> {
    let mut input = input.take(length);
    // A body shorter than a chunk needs no more (a dump may have thousands
    // of small segments); then no sub-record is ever larger than the buffer.
    // Never smaller than the largest fixed head of an object (25 bytes with
    // 8-byte ids), or a head cut at the end of the buffer could never be read.
    let chunk = chunk
        .min(usize::try_from(length).unwrap_or(usize::MAX))
        .max(MIN_CHUNK);
    let mut buffer = vec![0u8; chunk];
    let (mut start, mut end) = (0usize, 0usize);
    // File offset of buffer[start].
    let mut at = offset;
    let fault = |at: u64, message: String| ParseError {
        offset: at,
        message,
    };
    loop {
        let rest = &buffer[start..end];
        match sub_record_len(rest, id_size).map_err(|m| fault(at, m))? {
            Some(n) => {
                if let Some(object) = object_of(&rest[..n], id_size) {
                    count(object);
                }
                start += n;
                at += n as u64;
                continue;
            }
            None if rest.is_empty() && input.limit() == 0 => return Ok(()),
            None => {}
        }
        // The sub-record goes past the chunk. Larger than a chunk: count it
        // from its head and skip its other bytes.
        if let Some(whole) = whole_len(rest, id_size).filter(|&w| w > chunk as u64) {
            let Some(object) = object_of(rest, id_size) else {
                return Err(fault(at, "unreadable heap dump object head".into()));
            };
            count(object);
            let skip = whole - rest.len() as u64;
            let skipped = std::io::copy(&mut (&mut input).take(skip), &mut std::io::sink())
                .map_err(|e| fault(at, format!("read error: {e}")))?;
            if skipped < skip {
                return Err(fault(
                    at,
                    "heap dump sub-record ends past its record".into(),
                ));
            }
            at += whole;
            (start, end) = (0, 0);
            continue;
        }
        // Otherwise move what is left to the front and read more.
        buffer.copy_within(start..end, 0);
        (start, end) = (0, end - start);
        let got = input
            .read(&mut buffer[end..])
            .map_err(|e| fault(at, format!("read error: {e}")))?;
        if got == 0 {
            return Err(fault(
                at,
                "heap dump sub-record ends past its record".into(),
            ));
        }
        end += got;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hprof_format::big_endian::BigEndianOut;
    use hprof_format::binary::tags::heap;

    fn prim_array(id: u64, elements: u32, kind: BasicType) -> Vec<u8> {
        let mut r = vec![heap::PRIM_ARRAY_DUMP];
        r.put_u4(id as u32);
        r.put_u4(0);
        r.put_u4(elements);
        r.push(kind as u8);
        r.resize(r.len() + elements as usize * kind.size(4), 7);
        r
    }

    fn instance(class: u32, fields: u32) -> Vec<u8> {
        let mut r = vec![heap::INSTANCE_DUMP];
        r.put_u4(1);
        r.put_u4(0);
        r.put_u4(class);
        r.put_u4(fields);
        r.resize(r.len() + fields as usize, 0);
        r
    }

    #[test]
    fn counts_small_objects_and_arrays_larger_than_a_chunk() {
        let mut body = instance(0x10, 12);
        body.extend(prim_array(2, (CHUNK as u32) / 4 * 3, BasicType::Int)); // 3 chunks
        body.extend(instance(0x10, 12));
        body.extend(prim_array(3, 5, BasicType::Long));
        let mut seen = Vec::new();
        scan(&mut body.as_slice(), body.len() as u64, 4, 100, |o| {
            seen.push(o)
        })
        .unwrap();
        let array = |element: BasicType, length: u64| Counted::Array {
            key: PRIMITIVE_KEY | element as u64,
            element,
            length,
        };
        let instance = Counted::Instance {
            class: 0x10,
            bytes: 12,
        };
        assert_eq!(
            seen,
            [
                instance,
                array(BasicType::Int, CHUNK as u64 / 4 * 3),
                instance,
                array(BasicType::Long, 5)
            ]
        );
    }

    /// A CLASS DUMP with 4-byte ids: the class, its superclass, no
    /// constants or statics, and instance fields of these types.
    fn class_dump(class: u32, superclass: u32, fields: &[BasicType]) -> Vec<u8> {
        let mut r = vec![heap::CLASS_DUMP];
        // Class, trace serial, superclass, then loader, signers, domain,
        // two reserved ids and the instance size.
        for value in [class, 1, superclass, 0, 0, 0, 0, 0, 0] {
            r.put_u4(value);
        }
        r.put_u2(0);
        r.put_u2(0);
        r.put_u2(fields.len() as u16);
        for &kind in fields {
            r.put_u4(0x900);
            r.push(kind as u8);
        }
        r
    }

    #[test]
    fn a_class_dump_counts_its_superclass_and_reference_fields() {
        let fields = [BasicType::Object, BasicType::Long, BasicType::Object];
        let body = class_dump(0x100, 0x200, &fields);
        let mut seen = Vec::new();
        scan(&mut body.as_slice(), body.len() as u64, 4, 100, |o| {
            seen.push(o)
        })
        .unwrap();
        let class = Counted::Class {
            class: 0x100,
            superclass: 0x200,
            references: 2,
        };
        assert_eq!(seen, [class]);
    }

    #[test]
    fn a_head_longer_than_the_chunk_asked_for_is_still_read() {
        // 17 bytes of head, a 16-byte chunk: the case the property test found.
        let body = instance(0x10, 0);
        let mut seen = Vec::new();
        scan_in_chunks(
            &mut body.as_slice(),
            body.len() as u64,
            4,
            100,
            |o| seen.push(o),
            16,
        )
        .unwrap();
        assert_eq!(
            seen,
            [Counted::Instance {
                class: 0x10,
                bytes: 0
            }]
        );
    }

    #[test]
    fn a_sub_record_past_the_body_is_an_error_at_its_offset() {
        let body = instance(0x10, 12);
        let cut = &body[..body.len() - 1];
        let error = scan(&mut &cut[..], cut.len() as u64, 4, 100, |_| {}).unwrap_err();
        assert_eq!(error.offset, 100);
        let big = prim_array(2, CHUNK as u32, BasicType::Byte);
        let cut = &big[..big.len() - 1];
        let error = scan(&mut &cut[..], cut.len() as u64, 4, 100, |_| {}).unwrap_err();
        assert_eq!(error.offset, 100);
    }

    use hprof_format::binary::HeapRecord;
    use hprof_format::binary::reader::parse_heap_records;
    use proptest::prelude::*;

    /// What a decoded object counts for, the reference.
    fn decoded(record: &HeapRecord) -> Option<Counted> {
        Some(match record {
            HeapRecord::InstanceDump {
                class_id, values, ..
            } => Counted::Instance {
                class: *class_id,
                bytes: values.len() as u64,
            },
            HeapRecord::PrimitiveArrayDump { elements, .. } => {
                let element = elements.element_type();
                Counted::Array {
                    key: PRIMITIVE_KEY | element as u64,
                    element,
                    length: elements.len() as u64,
                }
            }
            _ => return None,
        })
    }

    proptest! {
        /// Any chunk size, any cut: the counts of the reader that decodes
        /// everything, or an error when (and only when) it fails too.
        #[test]
        fn chunk_boundaries_never_change_the_counts(
            objects in prop::collection::vec((any::<bool>(), 0u32..200, 0u8..3), 0..40),
            chunk in 16usize..300,
            cut in any::<prop::sample::Index>(),
            truncate in any::<bool>(),
        ) {
            let mut body = Vec::new();
            for (is_array, n, kind) in objects {
                let kind = [BasicType::Int, BasicType::Long, BasicType::Byte][kind as usize];
                body.extend(if is_array { prim_array(9, n, kind) } else { instance(0x10 + n, n) });
            }
            if truncate {
                body.truncate(cut.index(body.len() + 1));
            }
            let expected = parse_heap_records(&body, 4, 100)
                .map(|records| records.iter().filter_map(decoded).collect::<Vec<_>>());
            let mut seen = Vec::new();
            let got = scan_in_chunks(&mut body.as_slice(), body.len() as u64, 4, 100, |o| seen.push(o), chunk);
            match expected {
                Ok(expected) => {
                    prop_assert!(got.is_ok(), "{:?}", got);
                    prop_assert_eq!(seen, expected);
                }
                Err(_) => prop_assert!(got.is_err()),
            }
        }
    }
}
