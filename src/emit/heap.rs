//! Heap dumps: the JVM writes its own heap dump (see `agent/heapdump.rs`);
//! this carries it into our output as a stream, with identifiers and
//! serial numbers made consistent with the rest of the file, or converts it
//! to HPROF's ASCII HEAP DUMP section.
//!
//! What is renumbered, and why: the JVM's dump numbers its classes, stack
//! traces and frames from 1 in every dump, so each is given a serial of this
//! file (classes 100000+, traces 300000+, frames in a range no other
//! identifier uses). Objects keep the JVM's identifiers (their addresses),
//! and the JVM's own thread serials (1, 2, ...) are kept in heap records and
//! stack traces. The JVM's empty trace becomes 300000.

use super::Emitter;
use crate::format::ParseError;
use crate::format::binary::RecordBody;
use crate::format::binary::heap_walk::{self, PresentObjects};
use crate::format::binary::reader::{RecordStream, parse_body};
use crate::format::binary::writer::{encode_record_header, tags};
use crate::model::DumpSerials;
use crate::model::traces::EMPTY_TRACE_SERIAL;
use std::collections::{HashMap, HashSet};
use std::io::{BufReader, Read, Seek};

/// Bytes handed to the output at a time while copying heap records.
const CHUNK: usize = 4 << 20;

/// Frame identifiers of JVM-made dumps live above this (no address and no
/// identifier of ours reaches it); each dump gets its own 2^32 block.
const FRAME_BASE: u64 = 0x0200_0000_0000_0000;

/// What carrying one JVM heap dump over needs to remember across dumps.
#[derive(Debug, Default)]
pub struct DumpMemory {
    /// UTF8 identifiers already written (the JVM's strings keep their ids).
    written_names: HashSet<u64>,
    /// How many dumps have been carried over.
    dumps: u64,
}

/// Per-dump renumbering of the JVM's serials.
#[derive(Default)]
struct Renumbering {
    classes: HashMap<u32, u32>,
    traces: HashMap<u32, u32>,
    frame_base: u64,
}

impl Renumbering {
    fn trace(&self, jvm_serial: u32) -> u32 {
        self.traces
            .get(&jvm_serial)
            .copied()
            .unwrap_or(EMPTY_TRACE_SERIAL)
    }
}

/// The signature for a class name as the JVM's dump writes it
/// (`java/lang/String`, `[I`, `[Ljava/lang/String;`).
fn signature_of(name: &str) -> String {
    if name.starts_with('[') {
        name.to_owned()
    } else {
        format!("L{name};")
    }
}

/// How much of the JVM's dump is read from it at a time.
const READ_BUFFER: usize = 1 << 20;

/// The JVM's heap dump in `input` (from its start) as a record stream,
/// checked to have `id_size`-byte identifiers.
pub(super) fn open_dump<R: Read + Seek>(
    input: &mut R,
    id_size: u32,
) -> Result<RecordStream<BufReader<&mut R>>, ParseError> {
    input.rewind().map_err(|e| ParseError {
        offset: 0,
        message: format!("cannot read the JVM's dump: {e}"),
    })?;
    let stream = RecordStream::new(BufReader::with_capacity(READ_BUFFER, input))?;
    if stream.header().id_size != id_size {
        return Err(ParseError {
            offset: 0,
            message: format!(
                "the JVM's dump has {}-byte identifiers, this file {id_size}",
                stream.header().id_size
            ),
        });
    }
    Ok(stream)
}

/// Reads the current record's body; a body cut short is the file's end
/// come too soon.
pub(super) fn read_body<R: Read>(
    stream: &mut RecordStream<R>,
    body: &mut Vec<u8>,
    offset: u64,
) -> Result<(), ParseError> {
    stream.read_body(body).map_err(|_| ParseError {
        offset,
        message: "record runs past the end of the file".into(),
    })
}

impl Emitter {
    /// Carries the JVM heap dump read from `input` into this file's binary
    /// output, handing bytes to `out` in blocks of a few MiB (so memory
    /// stays bounded whatever the heap size); `out` gives back an empty
    /// buffer to fill next (the one handed over, once written, or a new
    /// one). The dump is read twice (`input` is rewound). `serials` gives
    /// the dump's classes and traces this file's serials. References to
    /// objects the dump lacks are set to null, so that every reference in
    /// our file resolves. Returns the number of heap sub-records and of
    /// references dropped.
    pub fn carry_heap_dump<R: Read + Seek>(
        &self,
        input: &mut R,
        serials: &dyn DumpSerials,
        memory: &mut DumpMemory,
        out: &mut dyn FnMut(Vec<u8>) -> Vec<u8>,
    ) -> Result<(u64, u64), ParseError> {
        let present = present_objects(input, self.id_size)?;
        let mut stream = open_dump(input, self.id_size)?;
        let mut dropped = 0;
        memory.dumps += 1;
        let mut renumber = Renumbering {
            frame_base: FRAME_BASE + (memory.dumps << 32),
            ..Renumbering::default()
        };
        let mut names: HashMap<u64, String> = HashMap::new();
        let mut pending = Vec::with_capacity(CHUNK);
        let mut body = Vec::new();
        let mut sub_records = 0u64;
        while let Some(record) = stream.next_header()? {
            match record.tag {
                tags::HEAP_DUMP | tags::HEAP_DUMP_SEGMENT => {
                    // Our files with heap dumps are 1.0.2: every body is a segment.
                    let length = record.length;
                    encode_record_header(tags::HEAP_DUMP_SEGMENT, self.now(), length, &mut pending);
                    pending = out(pending);
                    let mut patch = PatchForCopy::new(&renumber, &present, self.id_size);
                    sub_records += stream_heap_body(
                        stream.body(),
                        length,
                        record.body_offset(),
                        self.id_size,
                        &mut patch,
                        out,
                    )?;
                    dropped += patch.dropped;
                }
                tags::HEAP_DUMP_END => self.record(RecordBody::HeapDumpEnd, &mut pending),
                tag => {
                    read_body(&mut stream, &mut body, record.offset)?;
                    let parsed = parse_body(tag, &body, self.id_size, record.offset)?;
                    self.carry_record(
                        parsed,
                        serials,
                        memory,
                        &mut renumber,
                        &mut names,
                        &mut pending,
                    );
                }
            }
        }
        out(pending);
        Ok((sub_records, dropped))
    }

    /// Carries one non-heap record of the JVM's dump over, renumbered.
    fn carry_record(
        &self,
        body: RecordBody,
        serials: &dyn DumpSerials,
        memory: &mut DumpMemory,
        renumber: &mut Renumbering,
        names: &mut HashMap<u64, String>,
        out: &mut Vec<u8>,
    ) {
        let body = match body {
            RecordBody::Utf8 { id, text } => {
                names.insert(id, String::from_utf8_lossy(&text).into_owned());
                if !memory.written_names.insert(id) {
                    return;
                }
                RecordBody::Utf8 { id, text }
            }
            RecordBody::LoadClass {
                class_serial,
                class_id,
                name_id,
                ..
            } => {
                let name = names.get(&name_id).map_or("Unknown_class", String::as_str);
                let (serial, new) = serials.announce_class(class_id, &signature_of(name));
                // Its LOAD CLASS goes out here if new; a known class's is
                // written (or left) by `class_loads` no more.
                self.written.lock().class(serial);
                renumber.classes.insert(class_serial, serial);
                if !new {
                    return;
                }
                RecordBody::LoadClass {
                    class_serial: serial,
                    class_id,
                    trace_serial: EMPTY_TRACE_SERIAL,
                    name_id,
                }
            }
            RecordBody::Frame {
                frame_id,
                method_name_id,
                signature_id,
                source_file_id,
                class_serial,
                line,
            } => {
                RecordBody::Frame {
                    frame_id: renumber.frame_base + frame_id,
                    method_name_id,
                    signature_id,
                    source_file_id,
                    class_serial: renumber.classes.get(&class_serial).copied().unwrap_or(0),
                    // A line of 0 is no line number (and some readers reject it).
                    line: if line == 0 { -1 } else { line },
                }
            }
            RecordBody::Trace {
                trace_serial,
                thread_serial,
                frame_ids,
            } => {
                if frame_ids.is_empty() && thread_serial == 0 {
                    renumber.traces.insert(trace_serial, EMPTY_TRACE_SERIAL);
                    return;
                }
                let serial = serials.reserve_trace();
                renumber.traces.insert(trace_serial, serial);
                let frame_ids = frame_ids.iter().map(|f| renumber.frame_base + f).collect();
                RecordBody::Trace {
                    trace_serial: serial,
                    thread_serial,
                    frame_ids,
                }
            }
            // Nothing else is expected in a JVM heap dump; anything that is
            // there would not be ours to carry over.
            _ => return,
        };
        self.record(body, out);
    }
}

/// What a pass over heap dump sub-records does with them. Arrays that do
/// not fit in the current block come in pieces (their head, then their
/// elements), so no array is ever held whole: a 6-million-element object
/// array is 48 MB.
trait SubRecordVisitor {
    /// A whole sub-record, which may be patched in place (lengths unchanged).
    fn record(&mut self, record: &mut [u8]);
    /// The head of an array whose elements follow in pieces: the sub-record
    /// up to its element type (primitive) or class (object array).
    fn array_head(&mut self, head: &mut [u8]);
    /// Whole elements of the object array whose head came last.
    fn object_ids(&mut self, _ids: &mut [u8]) {}
}

/// Streams one heap dump body of `length` bytes in blocks of about
/// [`CHUNK`]: hands every sub-record to `visit` (whole, or an array in
/// pieces), then the patched bytes to `out`. Returns the number of
/// sub-records.
fn stream_heap_body(
    input: &mut impl Read,
    length: u32,
    offset: u64,
    id_size: u32,
    visit: &mut dyn SubRecordVisitor,
    out: &mut dyn FnMut(Vec<u8>) -> Vec<u8>,
) -> Result<u64, ParseError> {
    let fail = |message: String| ParseError { offset, message };
    let id = id_size as usize;
    let mut left = u64::from(length);
    let mut block: Vec<u8> = Vec::with_capacity(2 * CHUNK);
    let mut tail = Vec::new();
    let mut count = 0;
    // The element bytes still to come of an array being streamed, and
    // whether they are object identifiers.
    let mut array_rest: Option<(u64, bool)> = None;
    loop {
        if left > 0 {
            let want = (CHUNK as u64).min(left) as usize;
            let had = block.len();
            block.resize(had + want, 0);
            input
                .read_exact(&mut block[had..])
                .map_err(|_| fail("heap dump record runs past the end of the file".into()))?;
            left -= want as u64;
        }
        // Every complete sub-record or array piece is handled; a partial
        // one waits for more bytes.
        let mut scanned = 0;
        loop {
            let rest = &mut block[scanned..];
            if let Some((bytes_left, ids)) = array_rest {
                let mut take = bytes_left.min(rest.len() as u64) as usize;
                if ids {
                    take -= take % id;
                    visit.object_ids(&mut rest[..take]);
                }
                scanned += take;
                let bytes_left = bytes_left - take as u64;
                array_rest = (bytes_left > 0).then_some((bytes_left, ids));
                if bytes_left > 0 {
                    break;
                }
            } else if let Some(n) = heap_walk::sub_record_len(rest, id_size).map_err(fail)? {
                visit.record(&mut rest[..n]);
                scanned += n;
                count += 1;
            } else if let Some((head, whole, ids)) = heap_walk::array_head_len(rest, id_size) {
                visit.array_head(&mut rest[..head]);
                scanned += head;
                count += 1;
                array_rest = Some((whole - head as u64, ids)).filter(|&(n, _)| n > 0);
            } else {
                break;
            }
        }
        if scanned > 0 {
            // The unfinished sub-record at the end (a few bytes: arrays
            // come in pieces) moves to the front of the next block.
            tail.clear();
            tail.extend_from_slice(&block[scanned..]);
            block.truncate(scanned);
            block = out(block);
            block.clear();
            block.extend_from_slice(&tail);
        }
        if left == 0 {
            if !block.is_empty() || array_rest.is_some() {
                return Err(fail(
                    "a heap dump sub-record runs past the end of its record".into(),
                ));
            }
            return Ok(count);
        }
    }
}

/// The first pass: every object the dump holds. (With class data sharing on,
/// JDK 17+ dumps refer to archived objects they do not contain.)
pub fn present_objects<R: Read + Seek>(
    input: &mut R,
    id_size: u32,
) -> Result<PresentObjects, ParseError> {
    let mut stream = open_dump(input, id_size)?;
    let mut present = PresentObjects::default();
    let mut body = Vec::new();
    while let Some(record) = stream.next_header()? {
        if record.is_heap_dump() {
            let mut note = NotePresent {
                present: &mut present,
                id_size,
            };
            stream_heap_body(
                stream.body(),
                record.length,
                record.body_offset(),
                id_size,
                &mut note,
                &mut |block| block,
            )?;
        } else {
            read_body(&mut stream, &mut body, record.offset)?;
        }
    }
    Ok(present)
}

/// The presence pass's visitor: notes every object dumped.
struct NotePresent<'a> {
    present: &'a mut PresentObjects,
    id_size: u32,
}

impl SubRecordVisitor for NotePresent<'_> {
    fn record(&mut self, record: &mut [u8]) {
        if let Some(id) = heap_walk::dumped_object(record, self.id_size) {
            self.present.insert(id);
        }
    }

    fn array_head(&mut self, head: &mut [u8]) {
        self.record(head);
    }
}

/// The copy's visitor: gives trace serials this file's numbers and nulls
/// references to objects the dump lacks, counting them.
struct PatchForCopy<'a> {
    renumber: &'a Renumbering,
    present: &'a PresentObjects,
    id_size: u32,
    dropped: u64,
    /// The last trace renumbered, (JVM's serial, ours): nearly every
    /// object of a JVM dump carries the same trace.
    last_trace: Option<(u32, u32)>,
}

impl<'a> PatchForCopy<'a> {
    fn new(renumber: &'a Renumbering, present: &'a PresentObjects, id_size: u32) -> Self {
        Self {
            renumber,
            present,
            id_size,
            dropped: 0,
            last_trace: None,
        }
    }

    fn renumber_trace(&mut self, record: &mut [u8]) {
        if let Some(at) = heap_walk::trace_field_offset(record[0], self.id_size) {
            let jvm_serial = heap_walk::get_u4(record, at);
            let serial = match self.last_trace {
                Some((jvm, ours)) if jvm == jvm_serial => ours,
                _ => {
                    let ours = self.renumber.trace(jvm_serial);
                    self.last_trace = Some((jvm_serial, ours));
                    ours
                }
            };
            heap_walk::put_u4(record, at, serial);
        }
    }
}

impl SubRecordVisitor for PatchForCopy<'_> {
    fn record(&mut self, record: &mut [u8]) {
        self.renumber_trace(record);
        self.dropped += drop_dangling(record, self.id_size, self.present);
    }

    fn array_head(&mut self, head: &mut [u8]) {
        self.renumber_trace(head);
    }

    fn object_ids(&mut self, ids: &mut [u8]) {
        let size = self.id_size as usize;
        for at in (0..ids.len()).step_by(size) {
            self.dropped += u64::from(null_if_absent(ids, at, self.id_size, self.present));
        }
    }
}

/// Sets the reference at `at` to null when the dump lacks its object.
fn null_if_absent(bytes: &mut [u8], at: usize, id_size: u32, present: &PresentObjects) -> bool {
    let id = heap_walk::get_id(bytes, at, id_size);
    // (The slot was read just above with the dump's checked identifier
    // size, so writing it cannot fail.)
    id != 0 && !present.contains(id) && heap_walk::put_id(bytes, at, id_size, 0).is_ok()
}

/// Sets the references of `record` to objects the dump lacks to null.
/// Returns how many there were.
pub fn drop_dangling(record: &mut [u8], id_size: u32, present: &PresentObjects) -> u64 {
    heap_walk::reference_slots(record, id_size)
        .into_iter()
        .map(|slot| u64::from(null_if_absent(record, slot, id_size, present)))
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::binary::records::{HeapRecord, PrimitiveArray};
    use crate::format::binary::writer::encode_heap_record;

    /// Records around arrays far larger than a block, one of them with
    /// references to objects that are not in the dump.
    fn body_with_large_arrays(id_size: u32) -> Vec<u8> {
        let big = 3 * CHUNK / id_size as usize + 5;
        let records = [
            HeapRecord::InstanceDump {
                object_id: 0x100,
                trace_serial: 7,
                class_id: 0x50,
                values: vec![1, 2, 3, 4],
            },
            HeapRecord::ObjectArrayDump {
                array_id: 0x200,
                trace_serial: 7,
                array_class_id: 0x60,
                // present, null, absent (0x999 is dumped nowhere), ...
                elements: (0..big as u64)
                    .map(|i| [0x100, 0, 0x990 + i % 16, 0x300][i as usize % 4])
                    .collect(),
            },
            HeapRecord::PrimitiveArrayDump {
                array_id: 0x300,
                trace_serial: 7,
                elements: PrimitiveArray::Byte((0..2 * CHUNK + 3).map(|i| i as i8).collect()),
            },
            HeapRecord::ObjectArrayDump {
                array_id: 0x400,
                trace_serial: 8,
                array_class_id: 0x60,
                elements: vec![0x200, 0x777],
            },
        ];
        let mut body = Vec::new();
        for record in &records {
            encode_heap_record(record, id_size, &mut body);
        }
        body
    }

    #[test]
    fn large_arrays_stream_in_pieces_with_the_same_result_as_whole() {
        for id_size in [4, 8] {
            let body = body_with_large_arrays(id_size);
            let length = body.len() as u32;
            let mut present = PresentObjects::default();
            let mut note = NotePresent {
                present: &mut present,
                id_size,
            };
            let count = stream_heap_body(&mut &body[..], length, 0, id_size, &mut note, &mut |b| b)
                .unwrap();
            assert_eq!(count, 4);
            for id in [0x100, 0x200, 0x300, 0x400] {
                assert!(present.contains(id), "{id:#x} noted");
            }
            assert!(!present.contains(0x990) && !present.contains(0x777));

            // The same patching applied to whole records, for comparison.
            let renumber = Renumbering {
                traces: HashMap::from([(7, 300_007), (8, 300_008)]),
                ..Renumbering::default()
            };
            let mut expected = body.clone();
            let mut whole = PatchForCopy::new(&renumber, &present, id_size);
            let mut at = 0;
            while at < expected.len() {
                let n = heap_walk::sub_record_len(&expected[at..], id_size)
                    .unwrap()
                    .unwrap();
                whole.record(&mut expected[at..at + n]);
                at += n;
            }

            let mut patch = PatchForCopy::new(&renumber, &present, id_size);
            let mut copied = Vec::new();
            let mut largest = 0;
            stream_heap_body(&mut &body[..], length, 0, id_size, &mut patch, &mut |b| {
                largest = largest.max(b.len());
                copied.extend_from_slice(&b);
                b
            })
            .unwrap();
            assert_eq!(patch.dropped, whole.dropped);
            assert!(patch.dropped > (3 * CHUNK / id_size as usize / 4) as u64);
            assert!(
                copied == expected,
                "streamed copy equals whole-record patching"
            );
            assert!(
                largest <= 2 * CHUNK,
                "no piece larger than two blocks: {largest}"
            );
        }
    }

    #[test]
    fn an_array_cut_short_by_its_record_is_an_error() {
        let body = body_with_large_arrays(8);
        let cut = (body.len() - 100) as u32;
        let result = stream_heap_body(
            &mut &body[..],
            cut,
            0,
            8,
            &mut NotePresent {
                present: &mut PresentObjects::default(),
                id_size: 8,
            },
            &mut |b| b,
        );
        assert!(result.is_err());
    }
}
