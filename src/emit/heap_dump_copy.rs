//! Heap dumps: the JVM writes its own heap dump (see `agent/modes/heap_dump/jvm_dumper.rs`);
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
use super::heap_dump_refs::{OnePassOutcome, OnePassRefs};
use crate::format::ParseError;
use crate::format::big_endian;
use crate::format::binary::RecordBody;
use crate::format::binary::heap_walk::{
    self, ArrayRest, BlockHashing, PresentObjects, SubRecordVisitor, drop_dangling, null_if_absent,
    scan_block,
};
use crate::format::binary::object_layout::ObjectLayout;
use crate::format::binary::reader::{RecordHeader, RecordStream, parse_body};
use crate::format::binary::writer::{encode_record_header, tags};
use crate::model::traces::EMPTY_TRACE_SERIAL;
use crate::model::{DumpSerials, Model};
use crate::options::Format;
use std::collections::{HashMap, HashSet};
use std::io::{BufReader, Read, Seek};

/// Bytes handed to the output at a time while copying heap records (three
/// buffers of up to twice this cycle through the writer thread).
const CHUNK: usize = 1 << 18;

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

/// What carrying the non-heap records of one dump needs.
struct NonHeap<'a> {
    serials: &'a dyn DumpSerials,
    memory: &'a mut DumpMemory,
    renumber: Renumbering,
    /// The dump's UTF8 records by identifier (class names are looked up).
    names: DumpNames,
    /// The current record's body.
    body: Vec<u8>,
}

/// A dump's UTF8 records by identifier, their text in pages of 64 KiB: a
/// dump holds tens of thousands (40,862 with 1.2 MB of text in
/// HeapHolder's: HotSpot writes its whole symbol table), which as a
/// `String` each in a map took about three times their size while the copy
/// ran. Only class names are looked up.
#[derive(Default)]
struct DumpNames {
    /// Where each name is: (page, offset in the page, length).
    index: HashMap<u64, (u32, u32, u32), BlockHashing>,
    pages: Vec<Vec<u8>>,
}

/// Bytes of text per page (a longer name gets a page of its own).
const NAME_PAGE: usize = 64 << 10;

impl DumpNames {
    fn insert(&mut self, id: u64, name: &[u8]) {
        let fits = self
            .pages
            .last()
            .is_some_and(|page| page.capacity() - page.len() >= name.len());
        if !fits {
            self.pages
                .push(Vec::with_capacity(NAME_PAGE.max(name.len())));
        }
        let page_number = self.pages.len() - 1;
        let page = &mut self.pages[page_number];
        let (Ok(at), Ok(len)) = (u32::try_from(page.len()), u32::try_from(name.len())) else {
            return;
        };
        page.extend_from_slice(name);
        self.index.insert(id, (page_number as u32, at, len));
    }

    fn get(&self, id: u64) -> Option<std::borrow::Cow<'_, str>> {
        let &(page, at, len) = self.index.get(&id)?;
        let at = at as usize;
        Some(String::from_utf8_lossy(
            &self.pages[page as usize][at..at + len as usize],
        ))
    }
}

impl<'a> NonHeap<'a> {
    /// Starts a dump: its frames get their own block of identifiers.
    fn new(serials: &'a dyn DumpSerials, memory: &'a mut DumpMemory) -> Self {
        memory.dumps += 1;
        let renumber = Renumbering {
            frame_base: FRAME_BASE + (memory.dumps << 32),
            ..Renumbering::default()
        };
        Self {
            serials,
            memory,
            renumber,
            names: DumpNames::default(),
            body: Vec::new(),
        }
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
const READ_BUFFER: usize = 64 << 10;

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
    /// The layout note (a UTF8 record, written once per file) by which
    /// readers size a binary dump's objects as the JVM does (see
    /// `ObjectLayout`); nothing in ASCII, whose entries carry their sizes.
    pub fn object_layout_note(&self, model: &mut Model, layout: &ObjectLayout, out: &mut Vec<u8>) {
        if self.format == Format::Binary {
            self.name(model, &layout.note(), out);
        }
    }

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
        let mut carry = NonHeap::new(serials, memory);
        let mut pending = Vec::with_capacity(CHUNK);
        let mut sub_records = 0u64;
        while let Some(record) = stream.next_header()? {
            match record.tag {
                tags::HEAP_DUMP | tags::HEAP_DUMP_SEGMENT => {
                    // Our files with heap dumps are 1.0.2: every body is a segment.
                    let length = record.length;
                    encode_record_header(tags::HEAP_DUMP_SEGMENT, self.now(), length, &mut pending);
                    pending = out(pending);
                    let mut patch = PatchForCopy::new(&carry.renumber, &present, self.id_size);
                    sub_records += stream_heap_body(
                        stream.body(),
                        length,
                        record.body_offset(),
                        self.id_size,
                        &mut patch,
                        out,
                        &mut 0,
                    )?;
                    dropped += patch.dropped;
                }
                tags::HEAP_DUMP_END => self.record(RecordBody::HeapDumpEnd, &mut pending),
                _ => self.carry_non_heap(&mut stream, &record, &mut carry, &mut pending, out)?,
            }
        }
        out(pending);
        Ok((sub_records, dropped))
    }

    /// Carries the JVM heap dump read from `input` into this file's binary
    /// output in one pass, as the JVM writes it (`input` may be a file that
    /// is still growing): like [`carry_heap_dump`](Self::carry_heap_dump),
    /// except that references to objects the dump lacks cannot be known
    /// until its end; they are nulled afterwards in the output file by the
    /// outcome's patch (see `OnePassRefs`). When `input` fails before the
    /// dump's end (the JVM's dump stopped), what was carried is closed into
    /// valid records: the array being copied is completed with zeros (null
    /// references), the patch sets the open segment's length to what it
    /// holds, and HEAP DUMP END follows.
    pub fn carry_heap_dump_one_pass<R: Read>(
        &self,
        input: R,
        layout: ObjectLayout,
        serials: &dyn DumpSerials,
        memory: &mut DumpMemory,
        out: &mut dyn FnMut(Vec<u8>) -> Vec<u8>,
    ) -> OnePassOutcome {
        let handed = std::cell::Cell::new(0u64);
        let mut send = |bytes: Vec<u8>| {
            handed.set(handed.get() + bytes.len() as u64);
            out(bytes)
        };
        let mut refs = OnePassRefs::new(layout, self.id_size);
        let mut outcome = OnePassOutcome::default();
        let mut pending = Vec::with_capacity(CHUNK);
        let mut in_heap = false;
        let result = (|| -> Result<(), ParseError> {
            let mut stream = RecordStream::new(BufReader::with_capacity(READ_BUFFER, input))?;
            if stream.header().id_size != self.id_size {
                return Err(ParseError {
                    offset: 0,
                    message: format!(
                        "the JVM's dump has {}-byte identifiers, this file {}",
                        stream.header().id_size,
                        self.id_size
                    ),
                });
            }
            let mut carry = NonHeap::new(serials, memory);
            while let Some(record) = stream.next_header()? {
                match record.tag {
                    tags::HEAP_DUMP | tags::HEAP_DUMP_SEGMENT => {
                        let length = record.length;
                        encode_record_header(
                            tags::HEAP_DUMP_SEGMENT,
                            self.now(),
                            length,
                            &mut pending,
                        );
                        pending = send(std::mem::take(&mut pending));
                        in_heap = true;
                        let header_at = handed.get() - 9;
                        let mut visit = CopyOnePass {
                            traces: TraceRenumberer::new(&carry.renumber),
                            refs: &mut refs,
                            id_size: self.id_size,
                            offset: handed.get(),
                        };
                        let mut unfinished = 0;
                        match stream_heap_body(
                            stream.body(),
                            length,
                            record.body_offset(),
                            self.id_size,
                            &mut visit,
                            &mut send,
                            &mut unfinished,
                        ) {
                            Ok(n) => outcome.sub_records += n,
                            Err(error) => {
                                while unfinished > 0 {
                                    let n = unfinished.min(CHUNK as u64);
                                    pending.resize(n as usize, 0);
                                    pending = send(std::mem::take(&mut pending));
                                    pending.clear();
                                    unfinished -= n;
                                }
                                let held = handed.get() - (header_at + 9);
                                outcome
                                    .fixes
                                    .push((header_at + 5, big_endian::u4_bytes(held as u32)));
                                return Err(error);
                            }
                        }
                    }
                    tags::HEAP_DUMP_END => {
                        in_heap = false;
                        self.record(RecordBody::HeapDumpEnd, &mut pending);
                    }
                    _ => self.carry_non_heap(
                        &mut stream,
                        &record,
                        &mut carry,
                        &mut pending,
                        &mut send,
                    )?,
                }
            }
            Ok(())
        })();
        if let Err(error) = result {
            outcome.error = Some(error);
            if in_heap {
                outcome.incomplete = true;
                self.record(RecordBody::HeapDumpEnd, &mut pending);
            }
        }
        send(pending);
        outcome.notes = refs.memory();
        outcome.dangling = refs.finish(self.id_size);
        outcome
    }

    /// Reads the body of the non-heap record `record` and carries it over.
    /// Once `pending` holds a block, it goes to `out`: the dump's names
    /// come before its heap, and no buffer must grow to hold them all (2
    /// MiB for a 2 GB heap's).
    fn carry_non_heap<R: Read>(
        &self,
        stream: &mut RecordStream<R>,
        record: &RecordHeader,
        carry: &mut NonHeap,
        pending: &mut Vec<u8>,
        out: &mut dyn FnMut(Vec<u8>) -> Vec<u8>,
    ) -> Result<(), ParseError> {
        read_body(stream, &mut carry.body, record.offset)?;
        let parsed = parse_body(record.tag, &carry.body, self.id_size, record.offset)?;
        self.carry_record(
            parsed,
            carry.serials,
            carry.memory,
            &mut carry.renumber,
            &mut carry.names,
            pending,
        );
        if pending.len() >= CHUNK {
            *pending = out(std::mem::take(pending));
        }
        Ok(())
    }

    /// Carries one non-heap record of the JVM's dump over, renumbered.
    fn carry_record(
        &self,
        body: RecordBody,
        serials: &dyn DumpSerials,
        memory: &mut DumpMemory,
        renumber: &mut Renumbering,
        names: &mut DumpNames,
        out: &mut Vec<u8>,
    ) {
        let body = match body {
            RecordBody::Utf8 { id, text } => {
                names.insert(id, &text);
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
                let name = names.get(name_id);
                let name = name.as_deref().unwrap_or("Unknown_class");
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

/// Streams one heap dump body of `length` bytes in blocks of about
/// [`CHUNK`]: hands every sub-record to `visit` (whole, or an array in
/// pieces), then the patched bytes to `out`. Returns the number of
/// sub-records. When the input ends too soon, `unfinished` is set to the
/// element bytes missing from the array being streamed (0 if none), so
/// that a caller can complete it.
pub(super) fn stream_heap_body(
    input: &mut impl Read,
    length: u32,
    offset: u64,
    id_size: u32,
    visit: &mut dyn SubRecordVisitor,
    out: &mut dyn FnMut(Vec<u8>) -> Vec<u8>,
    unfinished: &mut u64,
) -> Result<u64, ParseError> {
    let fail = |message: String| ParseError { offset, message };
    let mut left = u64::from(length);
    let mut block: Vec<u8> = Vec::with_capacity(2 * CHUNK);
    let mut tail = Vec::new();
    let mut count = 0;
    let mut array_rest: ArrayRest = None;
    loop {
        if left > 0 {
            let want = (CHUNK as u64).min(left);
            // Appended without zeroing the block first (that memset showed
            // in profiles of the copy).
            let got = input.by_ref().take(want).read_to_end(&mut block);
            if got.as_ref().map_or(true, |&n| n as u64 != want) {
                *unfinished = array_rest.map_or(0, |(n, _)| n);
                let why = got
                    .err()
                    .map_or("end of file".to_string(), |e| e.to_string());
                return Err(fail(format!(
                    "heap dump record runs past the end of the file ({why})"
                )));
            }
            left -= want;
        }
        // Every complete sub-record or array piece is handled; a partial
        // one waits for more bytes.
        let start = array_rest;
        let scanned =
            scan_block(&mut block, &mut array_rest, id_size, visit, &mut count).map_err(fail)?;
        if scanned > 0 {
            visit.block_done(start, scanned);
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
                &mut 0,
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

/// Gives the trace serials of sub-records this file's numbers.
struct TraceRenumberer<'a> {
    renumber: &'a Renumbering,
    /// The last trace renumbered, (JVM's serial, ours): nearly every
    /// object of a JVM dump carries the same trace.
    last_trace: Option<(u32, u32)>,
}

impl<'a> TraceRenumberer<'a> {
    fn new(renumber: &'a Renumbering) -> Self {
        Self {
            renumber,
            last_trace: None,
        }
    }

    fn apply(&mut self, record: &mut [u8], id_size: u32) {
        if let Some(at) = heap_walk::trace_field_offset(record[0], id_size) {
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

/// The copy's visitor: gives trace serials this file's numbers and nulls
/// references to objects the dump lacks, counting them.
struct PatchForCopy<'a> {
    traces: TraceRenumberer<'a>,
    present: &'a PresentObjects,
    id_size: u32,
    dropped: u64,
}

impl<'a> PatchForCopy<'a> {
    fn new(renumber: &'a Renumbering, present: &'a PresentObjects, id_size: u32) -> Self {
        Self {
            traces: TraceRenumberer::new(renumber),
            present,
            id_size,
            dropped: 0,
        }
    }
}

impl SubRecordVisitor for PatchForCopy<'_> {
    fn record(&mut self, record: &mut [u8]) {
        self.traces.apply(record, self.id_size);
        self.dropped += drop_dangling(record, self.id_size, self.present);
    }

    fn array_head(&mut self, head: &mut [u8]) {
        self.traces.apply(head, self.id_size);
    }

    fn object_ids(&mut self, ids: &mut [u8]) {
        let size = self.id_size as usize;
        for at in (0..ids.len()).step_by(size) {
            self.dropped += u64::from(null_if_absent(ids, at, self.id_size, self.present));
        }
    }
}

/// The one-pass copy's visitor: gives trace serials this file's numbers
/// and notes every object dumped and every reference to an object not yet
/// seen, by output block (see `OnePassRefs`).
struct CopyOnePass<'a> {
    traces: TraceRenumberer<'a>,
    refs: &'a mut OnePassRefs,
    id_size: u32,
    /// Output offset (from the start of the carried dump) of the block
    /// being visited.
    offset: u64,
}

impl SubRecordVisitor for CopyOnePass<'_> {
    fn record(&mut self, record: &mut [u8]) {
        self.traces.apply(record, self.id_size);
        self.refs.object(record);
        for slot in heap_walk::reference_slots(record, self.id_size) {
            self.refs
                .reference(heap_walk::get_id(record, slot, self.id_size));
        }
    }

    fn array_head(&mut self, head: &mut [u8]) {
        self.traces.apply(head, self.id_size);
        self.refs.object(head);
    }

    fn object_ids(&mut self, ids: &mut [u8]) {
        let size = self.id_size as usize;
        for at in (0..ids.len()).step_by(size) {
            self.refs
                .reference(heap_walk::get_id(ids, at, self.id_size));
        }
    }

    fn block_done(&mut self, start: ArrayRest, len: usize) {
        self.refs.block_done(self.offset, len, start);
        self.offset += len as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::emit::heap_dump_refs::OnePassOutcome;
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
    fn dump_names_keep_every_name_across_pages_and_the_latest_of_an_identifier() {
        let mut names = DumpNames::default();
        let long = "x".repeat(NAME_PAGE + 10);
        for id in 0..20_000u64 {
            names.insert(id, format!("java/lang/Name{id}").as_bytes());
        }
        names.insert(7, b"java/lang/String");
        names.insert(20_000, long.as_bytes());
        names.insert(20_001, b"after/the/long/One");
        assert!(names.pages.len() > 2, "{} pages", names.pages.len());
        assert_eq!(names.get(0).as_deref(), Some("java/lang/Name0"));
        assert_eq!(names.get(19_999).as_deref(), Some("java/lang/Name19999"));
        assert_eq!(names.get(7).as_deref(), Some("java/lang/String"));
        assert_eq!(names.get(20_000).as_deref(), Some(long.as_str()));
        assert_eq!(names.get(20_001).as_deref(), Some("after/the/long/One"));
        assert_eq!(names.get(30_000), None);
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
            let count = stream_heap_body(
                &mut &body[..],
                length,
                0,
                id_size,
                &mut note,
                &mut |b| b,
                &mut 0,
            )
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
            stream_heap_body(
                &mut &body[..],
                length,
                0,
                id_size,
                &mut patch,
                &mut |b| {
                    largest = largest.max(b.len());
                    copied.extend_from_slice(&b);
                    b
                },
                &mut 0,
            )
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

    /// A 1.0.2 file header with 8-byte identifiers.
    fn file_header() -> Vec<u8> {
        use crate::format::binary::writer::encode_header;
        use crate::format::binary::{FileHeader, Version};
        let header = FileHeader {
            version: Version::V102,
            id_size: 8,
            timestamp_ms: 0,
        };
        let mut bytes = Vec::new();
        encode_header(&header, &mut bytes);
        bytes
    }

    /// A JVM-like dump: file header, one segment of `body`, HEAP DUMP END.
    fn jvm_dump(body: &[u8]) -> Vec<u8> {
        let mut dump = file_header();
        encode_record_header(tags::HEAP_DUMP_SEGMENT, 0, body.len() as u32, &mut dump);
        dump.extend_from_slice(body);
        encode_record_header(tags::HEAP_DUMP_END, 0, 0, &mut dump);
        dump
    }

    /// Copies `input` in one pass behind a file header, applies the
    /// outcome's patch and fixes to the file, and parses it back.
    fn one_pass_and_patch(
        input: &[u8],
        name: &str,
    ) -> (OnePassOutcome, crate::format::binary::reader::BinaryFile) {
        use std::os::unix::fs::FileExt;
        let model = parking_lot::Mutex::new(crate::model::Model::default());
        let emitter = Emitter::new(crate::options::Format::Binary, 8);
        let mut file = file_header();
        let base = file.len() as u64;
        let mut outcome = emitter.carry_heap_dump_one_pass(
            input,
            ObjectLayout::SMALLEST,
            &model,
            &mut DumpMemory::default(),
            &mut |mut block| {
                file.extend_from_slice(&block);
                block.clear();
                block
            },
        );
        let path =
            std::env::temp_dir().join(format!("hprof-rs-one-pass-{name}-{}", std::process::id()));
        std::fs::write(&path, &file).unwrap();
        let handle = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .unwrap();
        if let Some(patch) = outcome.dangling.take() {
            patch.apply(&handle, &handle, base, &|| {}).unwrap();
        }
        for (at, bytes) in &outcome.fixes {
            handle.write_all_at(bytes, base + at).unwrap();
        }
        let bytes = std::fs::read(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        let parsed = crate::format::binary::reader::parse(&bytes)
            .unwrap_or_else(|e| panic!("{name}: the copy does not parse: {e}"));
        (outcome, parsed)
    }

    /// Every object array element of `file` that is not null, as ids.
    fn referenced(file: &crate::format::binary::reader::BinaryFile) -> Vec<u64> {
        file.records
            .iter()
            .filter_map(|r| match &r.body {
                RecordBody::HeapDumpSegment(records) => Some(records),
                _ => None,
            })
            .flatten()
            .filter_map(|r| match r {
                HeapRecord::ObjectArrayDump { elements, .. } => Some(elements),
                _ => None,
            })
            .flatten()
            .copied()
            .filter(|&id| id != 0)
            .collect()
    }

    #[test]
    fn one_pass_nulls_references_to_missing_objects_afterwards() {
        let dump = jvm_dump(&body_with_large_arrays(8));
        let (outcome, file) = one_pass_and_patch(&dump, "whole");
        assert!(outcome.error.is_none() && !outcome.incomplete);
        let refs = referenced(&file);
        assert!(!refs.is_empty());
        assert!(
            refs.iter().all(|id| [0x100, 0x200, 0x300].contains(id)),
            "only references to dumped objects are left"
        );
        let ends = file
            .records
            .iter()
            .filter(|r| matches!(r.body, RecordBody::HeapDumpEnd));
        assert_eq!(ends.count(), 1);
    }

    #[test]
    fn a_dump_that_stops_inside_an_array_is_closed_into_valid_records() {
        let dump = jvm_dump(&body_with_large_arrays(8));
        // Inside the large object array, past its first block.
        let cut = &dump[..2 * CHUNK + 1000];
        let (outcome, file) = one_pass_and_patch(cut, "cut");
        assert!(outcome.error.is_some() && outcome.incomplete);
        assert_eq!(outcome.fixes.len(), 1, "the segment's length is set");
        let ends = file
            .records
            .iter()
            .filter(|r| matches!(r.body, RecordBody::HeapDumpEnd));
        assert_eq!(ends.count(), 1, "the dump is closed");
        let refs = referenced(&file);
        assert!(
            !refs.is_empty() && refs.iter().all(|&id| id == 0x100),
            "only 0x100 is dumped before the cut"
        );
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
            &mut 0,
        );
        assert!(result.is_err());
    }
}
