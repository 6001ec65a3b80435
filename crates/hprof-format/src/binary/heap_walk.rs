//! Walking a heap dump record body one sub-record at a time, in bounded
//! memory: each sub-record is read whole into a reusable buffer (tag byte
//! first) without decoding its values, so that a dump of any size can be
//! copied, patched or converted as a stream.

use super::layout::{self, Extent, Fault, Tail, measure};
use crate::ParseError;
use crate::big_endian;
use std::io::Read;

/// Reads the sub-records of one HEAP DUMP / HEAP DUMP SEGMENT body.
pub struct SubRecords<R: Read> {
    input: std::io::Take<R>,
    id_size: u32,
    /// File offset of the next sub-record (for error messages).
    offset: u64,
}

impl<R: Read> SubRecords<R> {
    /// The sub-records of a body of `length` bytes starting at file offset `offset`.
    pub fn new(input: R, length: u64, id_size: u32, offset: u64) -> Self {
        Self {
            input: input.take(length),
            id_size,
            offset,
        }
    }

    /// File offset of the next sub-record.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Reads the next sub-record into `buffer` (cleared first); false at
    /// the end of the body. The layout table says how many bytes to read
    /// next, until the sub-record is whole.
    pub fn next_into(&mut self, buffer: &mut Vec<u8>) -> Result<bool, ParseError> {
        buffer.clear();
        let start = self.offset;
        let mut tag = [0u8; 1];
        match self.input.read(&mut tag) {
            Ok(0) => return Ok(false),
            Ok(_) => {}
            Err(e) => return Err(err(start, format!("read error: {e}"))),
        }
        buffer.push(tag[0]);
        loop {
            let wanted = match measure(buffer, self.id_size) {
                Ok(Extent::Whole(n)) if n <= buffer.len() as u64 => break,
                Ok(Extent::Whole(n) | Extent::AtLeast(n)) => n - buffer.len() as u64,
                Err(fault) => return Err(err(start, fault_message(fault))),
            };
            self.append(buffer, wanted, start)?;
        }
        self.offset += buffer.len() as u64;
        Ok(true)
    }

    /// Appends the next `n` bytes. A count field can ask for gigabytes:
    /// past the end of the record is an error before anything is
    /// allocated, and the buffer grows only with the bytes that arrive.
    fn append(&mut self, buffer: &mut Vec<u8>, n: u64, start: u64) -> Result<(), ParseError> {
        let had = buffer.len() as u64;
        if n <= self.input.limit() {
            let got = (&mut self.input).take(n).read_to_end(buffer);
            if got.is_ok() && buffer.len() as u64 - had == n {
                return Ok(());
            }
        }
        Err(err(
            start,
            format!(
                "heap dump sub-record (tag 0x{:02x}) runs past the end of its record",
                buffer[0]
            ),
        ))
    }
}

/// The walkers' words for a damaged sub-record.
fn fault_message(fault: Fault) -> String {
    match fault {
        Fault::UnknownTag(tag) => format!("unknown heap dump sub-record tag 0x{tag:02x}"),
        Fault::BadType { byte, .. } => format!("invalid basic type {byte}"),
        Fault::ObjectElements { .. } => "object element type in a primitive array".into(),
    }
}

/// The length of the sub-record at the start of `bytes` (tag included), or
/// None when `bytes` ends before it does. The fast path of copying a dump:
/// it reads only the counts it needs, straight from the slice.
#[inline]
pub fn sub_record_len(bytes: &[u8], id_size: u32) -> Result<Option<usize>, String> {
    match measure(bytes, id_size).map_err(fault_message)? {
        Extent::Whole(n) if n <= bytes.len() as u64 => Ok(Some(n as usize)),
        _ => Ok(None),
    }
}

/// For an array sub-record at the start of `bytes` whose head (everything
/// before the elements) is there: the head's length, the whole sub-record's
/// length, and whether the elements are object identifiers. Lets a copy
/// stream a large array's elements instead of holding the array whole.
pub fn array_head_len(bytes: &[u8], id_size: u32) -> Option<(usize, u64, bool)> {
    let shape = layout::shape(*bytes.first()?, id_size)?;
    let ids = match shape.tail {
        Tail::Ids => true,
        Tail::Elements => false,
        _ => return None,
    };
    match measure(bytes, id_size) {
        Ok(Extent::Whole(whole)) => Some((shape.head, whole, ids)),
        _ => None,
    }
}

/// The identifier of the object a sub-record dumps (instance, array or
/// class), if it dumps one.
pub fn dumped_object(record: &[u8], id_size: u32) -> Option<u64> {
    layout::shape(*record.first()?, id_size)
        .filter(|shape| shape.dumps_object())
        .map(|_| get_id(record, 1, id_size))
}

pub use super::layout::{get_id, get_u4, reference_slots};

/// An identifier could not be written: its size is not 4 or 8 bytes, or
/// the record ends before the identifier does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BadIdSlot {
    /// Where the identifier was to be written.
    pub at: usize,
    /// The identifier size asked for.
    pub id_size: u32,
}

/// Writes an identifier of `id_size` bytes at `at`; the high bytes of
/// `value` that do not fit are dropped (identifiers are addresses).
pub fn put_id(record: &mut [u8], at: usize, id_size: u32, value: u64) -> Result<(), BadIdSlot> {
    big_endian::set_id_at(record, at, id_size, value).ok_or(BadIdSlot { at, id_size })
}

/// A set of the objects a dump holds, asked for each reference.
pub trait ObjectSet {
    /// Whether the dump holds object `id`.
    fn contains(&self, id: u64) -> bool;
}

impl ObjectSet for PresentObjects {
    fn contains(&self, id: u64) -> bool {
        PresentObjects::contains(self, id)
    }
}

/// The objects a dump holds, as a sparse bitmap over addresses: one bit
/// per 16 bytes (a Java object takes at least 16, so two never share a
/// bit; except with HotSpot's compact object headers, JDK 24+ and off by
/// default, where an object without fields takes 8: see docs/heap-dump.md), about
/// 8 MB per GB of heap, where a set of identifiers would take hundreds.
#[derive(Default)]
pub struct PresentObjects {
    /// 2 MiB of address space per block.
    blocks: std::collections::HashMap<u64, Box<[u64; 2048]>, BlockHashing>,
}

/// Hashing for block numbers: one multiplication (Fibonacci hashing)
/// instead of SipHash, which took a fifth of a 2 GB dump's copy. The keys
/// are addresses from the dump, not input an attacker picks per lookup.
#[derive(Default, Clone, Copy)]
pub struct BlockHashing;

impl std::hash::BuildHasher for BlockHashing {
    type Hasher = BlockHasher;
    fn build_hasher(&self) -> BlockHasher {
        BlockHasher(0)
    }
}

/// The hasher [`BlockHashing`] builds.
pub struct BlockHasher(u64);

impl std::hash::Hasher for BlockHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0 ^ n).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

impl PresentObjects {
    fn place(id: u64) -> (u64, usize, u64) {
        let slot = id >> 4;
        let bit = slot & ((1 << 17) - 1);
        (id >> 21, (bit >> 6) as usize, 1 << (bit & 63))
    }

    /// Records that the dump holds object `id`.
    pub fn insert(&mut self, id: u64) {
        let (block, word, mask) = Self::place(id);
        self.blocks
            .entry(block)
            .or_insert_with(|| Box::new([0; 2048]))[word] |= mask;
    }

    /// The 2 MiB block of address space that holds `id`.
    pub fn block_of(id: u64) -> u64 {
        id >> 21
    }

    /// Every block with an object, and its bits (one per 16 bytes).
    pub fn blocks(&self) -> impl Iterator<Item = (u64, &[u64; 2048])> {
        self.blocks.iter().map(|(block, bits)| (*block, &**bits))
    }

    /// The bits of one block, if it has an object.
    pub fn block_bits(&self, block: u64) -> Option<&[u64; 2048]> {
        self.blocks.get(&block).map(|bits| &**bits)
    }

    /// Whether the dump holds object `id` (identifiers that are not
    /// 8-byte aligned are taken at their aligned address).
    pub fn contains(&self, id: u64) -> bool {
        let (block, word, mask) = Self::place(id);
        self.blocks.get(&block).is_some_and(|b| b[word] & mask != 0)
    }
}

/// Where the trace serial (u4) of a sub-record starts, counting the tag
/// byte; None for sub-records without one.
#[inline]
pub fn trace_field_offset(tag: u8, id_size: u32) -> Option<usize> {
    layout::shape(tag, id_size)
        .map(|shape| shape.trace_at)
        .filter(|&at| at > 0)
}

/// Where the thread serial (u4) of a sub-record starts, counting the tag byte.
pub fn thread_field_offset(tag: u8, id_size: u32) -> Option<usize> {
    layout::shape(tag, id_size)
        .map(|shape| shape.thread_at)
        .filter(|&at| at > 0)
}

/// Overwrites the u4 at `at` in a sub-record.
pub fn put_u4(record: &mut [u8], at: usize, value: u32) {
    big_endian::set_u4_at(record, at, value).expect("a u4 within the sub-record");
}

fn err(offset: u64, message: String) -> ParseError {
    ParseError { offset, message }
}

/// What a pass over heap dump sub-records does with them. Arrays that do
/// not fit in the current block come in pieces (their head, then their
/// elements), so no array is ever held whole: a 6-million-element object
/// array is 48 MB.
pub trait SubRecordVisitor {
    /// A whole sub-record, which may be patched in place (lengths unchanged).
    fn record(&mut self, record: &mut [u8]);
    /// The head of an array whose elements follow in pieces: the sub-record
    /// up to its element type (primitive) or class (object array).
    fn array_head(&mut self, head: &mut [u8]);
    /// Whole elements of the object array whose head came last.
    fn object_ids(&mut self, _ids: &mut [u8]) {}
    /// The block of `len` bytes just visited goes out next; its walk began
    /// in state `start`.
    fn block_done(&mut self, _start: ArrayRest, _len: usize) {}
}

/// Where a walk of a heap dump body stands between blocks: the element
/// bytes still to come of an array being streamed, and whether they are
/// object identifiers.
pub type ArrayRest = Option<(u64, bool)>;

/// Visits every complete sub-record or array piece at the start of `block`
/// (an array's elements continue from `array_rest`, which is updated).
/// Returns the number of bytes visited; a partial sub-record at the end is
/// left for the next block.
pub fn scan_block(
    block: &mut [u8],
    array_rest: &mut ArrayRest,
    id_size: u32,
    visit: &mut dyn SubRecordVisitor,
    count: &mut u64,
) -> Result<usize, String> {
    let id = id_size as usize;
    let mut scanned = 0;
    loop {
        let rest = &mut block[scanned..];
        if let Some((bytes_left, ids)) = *array_rest {
            let mut take = bytes_left.min(rest.len() as u64) as usize;
            if ids {
                take -= take % id;
                visit.object_ids(&mut rest[..take]);
            }
            scanned += take;
            let bytes_left = bytes_left - take as u64;
            *array_rest = (bytes_left > 0).then_some((bytes_left, ids));
            if bytes_left > 0 {
                return Ok(scanned);
            }
        } else if let Some(n) = sub_record_len(rest, id_size)? {
            visit.record(&mut rest[..n]);
            scanned += n;
            *count += 1;
        } else if let Some((head, whole, ids)) = array_head_len(rest, id_size) {
            visit.array_head(&mut rest[..head]);
            scanned += head;
            *count += 1;
            *array_rest = Some((whole - head as u64, ids)).filter(|&(n, _)| n > 0);
        } else {
            return Ok(scanned);
        }
    }
}

/// A visitor that nulls references to objects the dump lacks (the patch
/// pass over bytes already copied), counting them in `dropped`.
pub struct NullAbsent<'a, S: ObjectSet> {
    /// The objects the dump holds.
    pub present: &'a S,
    /// The dump's identifier size (4 or 8).
    pub id_size: u32,
    /// References set to null so far.
    pub dropped: u64,
}

impl<S: ObjectSet> SubRecordVisitor for NullAbsent<'_, S> {
    fn record(&mut self, record: &mut [u8]) {
        self.dropped += drop_dangling(record, self.id_size, self.present);
    }

    fn array_head(&mut self, _head: &mut [u8]) {}

    fn object_ids(&mut self, ids: &mut [u8]) {
        let size = self.id_size as usize;
        for at in (0..ids.len()).step_by(size) {
            self.dropped += u64::from(null_if_absent(ids, at, self.id_size, self.present));
        }
    }
}

/// Sets the reference at `at` to null when the dump lacks its object.
pub fn null_if_absent(bytes: &mut [u8], at: usize, id_size: u32, present: &impl ObjectSet) -> bool {
    let id = get_id(bytes, at, id_size);
    // (The slot was read just above with the dump's checked identifier
    // size, so writing it cannot fail.)
    id != 0 && !present.contains(id) && put_id(bytes, at, id_size, 0).is_ok()
}

/// Sets the references of `record` to objects the dump lacks to null.
/// Returns how many there were.
pub fn drop_dangling(record: &mut [u8], id_size: u32, present: &impl ObjectSet) -> u64 {
    reference_slots(record, id_size)
        .into_iter()
        .map(|slot| u64::from(null_if_absent(record, slot, id_size, present)))
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::binary::records::*;
    use crate::binary::tags::heap;
    use crate::binary::writer::encode_heap_record;

    fn sample_records() -> Vec<HeapRecord> {
        vec![
            HeapRecord::RootThreadObject {
                object_id: 7,
                thread_serial: 3,
                trace_serial: 2,
            },
            HeapRecord::RootJavaFrame {
                object_id: 8,
                thread_serial: 3,
                frame_depth: 1,
            },
            HeapRecord::ClassDump {
                class_id: 100,
                trace_serial: 1,
                super_id: 0,
                loader_id: 0,
                signers_id: 0,
                protection_domain_id: 0,
                reserved1: 0,
                reserved2: 0,
                instance_size: 12,
                constant_pool: vec![ConstantPoolEntry {
                    index: 3,
                    value: Value::Int(5),
                }],
                static_fields: vec![StaticField {
                    name_id: 9,
                    value: Value::Long(-1),
                }],
                instance_fields: vec![FieldDescriptor {
                    name_id: 10,
                    field_type: BasicType::Object,
                }],
            },
            HeapRecord::InstanceDump {
                object_id: 200,
                trace_serial: 1,
                class_id: 100,
                values: vec![0, 0, 0, 0, 0, 0, 0, 9],
            },
            HeapRecord::ObjectArrayDump {
                array_id: 300,
                trace_serial: 1,
                array_class_id: 101,
                elements: vec![0, 200, 0],
            },
            HeapRecord::PrimitiveArrayDump {
                array_id: 400,
                trace_serial: 1,
                elements: PrimitiveArray::Int(vec![1, 2, 3]),
            },
        ]
    }

    #[test]
    fn walks_every_kind_and_patches_traces_in_place() {
        for id_size in [4, 8] {
            let mut body = Vec::new();
            for record in sample_records() {
                encode_heap_record(&record, id_size, &mut body);
            }
            let mut walker = SubRecords::new(&body[..], body.len() as u64, id_size, 0);
            let mut buffer = Vec::new();
            let mut patched = Vec::new();
            while walker.next_into(&mut buffer).unwrap() {
                if let Some(at) = trace_field_offset(buffer[0], id_size) {
                    let old = get_u4(&buffer, at);
                    put_u4(&mut buffer, at, old + 300_000);
                }
                patched.extend_from_slice(&buffer);
            }
            assert_eq!(patched.len(), body.len());
            let records = crate::binary::reader::parse_heap_records(&patched, id_size, 0).unwrap();
            assert_eq!(records.len(), 6);
            assert!(matches!(
                records[0],
                HeapRecord::RootThreadObject {
                    trace_serial: 300_002,
                    thread_serial: 3,
                    ..
                }
            ));
            assert!(matches!(
                records[3],
                HeapRecord::InstanceDump {
                    trace_serial: 300_001,
                    ..
                }
            ));
            assert_eq!(
                thread_field_offset(records[1].tag(), id_size),
                Some(1 + id_size as usize)
            );
        }
    }

    #[test]
    fn finds_dumped_objects_and_reference_slots() {
        let mut body = Vec::new();
        for record in sample_records() {
            encode_heap_record(&record, 8, &mut body);
        }
        let mut at = 0;
        let mut dumped = Vec::new();
        let mut slots = Vec::new();
        while at < body.len() {
            let n = sub_record_len(&body[at..], 8).unwrap().unwrap();
            let record = &body[at..at + n];
            dumped.extend(dumped_object(record, 8));
            slots.extend(
                reference_slots(record, 8)
                    .into_iter()
                    .map(|s| get_id(record, s, 8)),
            );
            at += n;
        }
        assert_eq!(dumped, vec![100, 200, 300, 400]);
        // The class's one reference static is a long here; the array holds 0, 200, 0.
        assert_eq!(slots, vec![0, 200, 0]);
        let mut present = PresentObjects::default();
        for id in [0x6_8741_6308u64, 0x7_ffb0_08c8, 16] {
            present.insert(id);
        }
        assert!(
            present.contains(0x6_8741_6308)
                && present.contains(0x7_ffb0_08c8)
                && present.contains(16)
        );
        assert!(!present.contains(0x6_8741_6310) && !present.contains(32));
        let mut record = vec![0u8; 9];
        put_id(&mut record, 1, 8, 0x1122).unwrap();
        assert_eq!(get_id(&record, 1, 8), 0x1122);
    }

    #[test]
    fn put_id_refuses_a_bad_size_or_a_slot_past_the_end() {
        let mut record = vec![0u8; 9];
        for (at, id_size) in [(1, 16), (1, 5), (6, 4), (2, 8)] {
            assert_eq!(
                put_id(&mut record, at, id_size, 7),
                Err(BadIdSlot { at, id_size })
            );
        }
        assert_eq!(record, [0; 9], "nothing written");
        put_id(&mut record, 5, 4, 0x1_0000_0007).unwrap();
        assert_eq!(record, [0, 0, 0, 0, 0, 0, 0, 0, 7]);
    }

    /// Found by fuzzing the heap dump copy: it passed on sub-records the
    /// reader rejects, so a damaged dump made a file we could not read.
    #[test]
    fn sub_record_len_rejects_the_types_the_reader_rejects() {
        let class = sample_records().swap_remove(2);
        let mut bytes = Vec::new();
        encode_heap_record(&class, 4, &mut bytes);
        assert_eq!(sub_record_len(&bytes, 4), Ok(Some(bytes.len())));
        *bytes.last_mut().unwrap() = 0xFF; // the one instance field's type
        assert!(sub_record_len(&bytes, 4).is_err());
        let array = [heap::PRIM_ARRAY_DUMP, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0];
        assert!(sub_record_len(&[&array[..], &[BasicType::Object as u8]].concat(), 4).is_err());
        assert!(sub_record_len(&[&array[..], &[BasicType::Int as u8]].concat(), 4).is_ok());
    }

    #[test]
    fn a_truncated_sub_record_is_an_error_with_its_offset() {
        let mut body = Vec::new();
        encode_heap_record(&HeapRecord::RootUnknown { object_id: 1 }, 8, &mut body);
        encode_heap_record(&HeapRecord::RootUnknown { object_id: 2 }, 8, &mut body);
        let mut walker = SubRecords::new(&body[..], body.len() as u64 - 3, 8, 1000);
        let mut buffer = Vec::new();
        assert!(walker.next_into(&mut buffer).unwrap());
        let error = walker.next_into(&mut buffer).unwrap_err();
        assert_eq!(error.offset, 1009);
    }
}
