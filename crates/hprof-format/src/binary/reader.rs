//! Parsing binary files.
//!
//! [`RecordReader`] reads one record at a time from any [`Read`], so a huge
//! file is never held in memory as a whole (one record body at a time is).
//! [`parse`] is the convenience form for a file already in memory.
//!
//! Every error carries the byte offset of the start of the item that is wrong
//! or incomplete: the header field, the top-level record (its tag byte), the
//! heap sub-record (its tag byte), or the single bad byte (an unknown type).
use std::io::{self, Read};

use super::heap_walk;
use super::layout::{self, Extent};
use super::records::*;
use super::tags;
use crate::ParseError;
use crate::big_endian;

/// A whole parsed binary file.
#[derive(Debug, Clone, PartialEq)]
pub struct BinaryFile {
    /// The fixed header at the start of the file.
    pub header: FileHeader,
    /// All records, in file order.
    pub records: Vec<Record>,
}

/// Parse a complete binary file.
pub fn parse(bytes: &[u8]) -> Result<BinaryFile, ParseError> {
    let reader = RecordReader::new(bytes)?;
    let header = *reader.header();
    let records = reader
        .map(|item| item.map(|(_, record)| record))
        .collect::<Result<_, _>>()?;
    Ok(BinaryFile { header, records })
}

/// Longest header string accepted before its NUL; the known ones have 18 bytes.
const MAX_HEADER_TEXT: usize = 32;

/// One top-level record's header, read by [`RecordStream::next_header`];
/// its body follows in the stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordHeader {
    /// u1 tag of the record (see [`tags`]).
    pub tag: u8,
    /// u4 microseconds since the file header's time stamp.
    pub time: u32,
    /// The body's length in bytes.
    pub length: u32,
    /// File offset of the record's tag byte.
    pub offset: u64,
}

impl RecordHeader {
    /// File offset of the body.
    pub fn body_offset(&self) -> u64 {
        self.offset + 9
    }

    /// The body's sub-records, for a HEAP DUMP or HEAP DUMP SEGMENT.
    pub fn is_heap_dump(&self) -> bool {
        self.tag == tags::HEAP_DUMP || self.tag == tags::HEAP_DUMP_SEGMENT
    }
}

/// The records of a binary file as a stream over any [`Read`]: each
/// record's header with its offset, then its body, which the caller reads
/// whole ([`RecordStream::read_body`]), walks as heap sub-records
/// ([`RecordStream::sub_records`]) or streams ([`RecordStream::body`]).
/// Whatever of a body the caller leaves unread is skipped by the next
/// [`RecordStream::next_header`]. Every reader of binary files (the
/// parser, the heap dump carriers, `hprof-rs` commands) reads record
/// headers through this.
pub struct RecordStream<R: Read> {
    /// Limited to the current body once its header is read.
    input: io::Take<R>,
    header: FileHeader,
    /// The current record, whose body is being read.
    current: Option<RecordHeader>,
    /// Offset of the next record.
    next: u64,
}

impl<R: Read> RecordStream<R> {
    /// Reads and checks the file header; records follow with
    /// [`RecordStream::next_header`].
    pub fn new(mut input: R) -> Result<Self, ParseError> {
        let header = read_header(&mut input)?;
        let next = header.version.header_text().len() as u64 + 1 + 4 + 8;
        Ok(Self {
            input: input.take(0),
            header,
            current: None,
            next,
        })
    }

    /// The file header read by [`RecordStream::new`].
    pub fn header(&self) -> &FileHeader {
        &self.header
    }

    /// Offset of the next record (the end of the file once all are read).
    pub fn offset(&self) -> u64 {
        self.next
    }

    /// Skips what is left of the current body, then reads the next record
    /// header; None at the end of the file.
    pub fn next_header(&mut self) -> Result<Option<RecordHeader>, ParseError> {
        if self.current.is_some() {
            self.skip_body()?;
        }
        let start = self.next;
        let mut head = [0u8; 9];
        self.input.set_limit(9);
        let got = read_full(&mut self.input, &mut head).map_err(|e| io_error(start, e))?;
        if got == 0 {
            return Ok(None);
        }
        if got < head.len() {
            return Err(err(
                start,
                format!("truncated record header: {got} of 9 bytes"),
            ));
        }
        let record = RecordHeader {
            tag: head[0],
            time: big_endian::u4_at(&head, 1).expect("9-byte header"),
            length: big_endian::u4_at(&head, 5).expect("9-byte header"),
            offset: start,
        };
        self.input.set_limit(u64::from(record.length));
        self.current = Some(record);
        self.next = record.body_offset() + u64::from(record.length);
        Ok(Some(record))
    }

    /// Reads the current record's whole body into `body` (cleared first).
    /// The buffer grows with the bytes that actually arrive, so a damaged
    /// length field (up to 4 GiB) cannot make us allocate more than the
    /// file holds.
    pub fn read_body(&mut self, body: &mut Vec<u8>) -> Result<(), ParseError> {
        body.clear();
        let Some(record) = self.current.take() else {
            return Ok(());
        };
        let got = self.input.read_to_end(body);
        got.map_err(|e| io_error(record.offset, e))?;
        short_body(&record, body.len() as u64)
    }

    /// Skips the rest of the current record's body.
    pub fn skip_body(&mut self) -> Result<(), ParseError> {
        let Some(record) = self.current.take() else {
            return Ok(());
        };
        let left = self.input.limit();
        let skipped = io::copy(&mut self.input, &mut io::sink());
        let skipped = skipped.map_err(|e| io_error(record.offset, e))?;
        short_body(&record, u64::from(record.length) - left + skipped)
    }

    /// The rest of the current body as a stream (it ends where the body
    /// does), for a caller that reads it in pieces.
    pub fn body(&mut self) -> &mut io::Take<R> {
        &mut self.input
    }

    /// The current body's heap sub-records, one at a time.
    pub fn sub_records(&mut self) -> heap_walk::SubRecords<&mut io::Take<R>> {
        let (left, at) = match self.current {
            Some(_) => {
                let left = self.input.limit();
                (left, self.next - left)
            }
            None => (0, self.next),
        };
        heap_walk::SubRecords::new(&mut self.input, left, self.header.id_size, at)
    }
}

/// The error for a body that ends after `got` of its bytes, if it does.
fn short_body(record: &RecordHeader, got: u64) -> Result<(), ParseError> {
    if got < u64::from(record.length) {
        let message = format!(
            "{} record (tag 0x{:02x}) has length {} but only {got} bytes follow",
            record_name(record.tag),
            record.tag,
            record.length,
        );
        return Err(err(record.offset, message));
    }
    Ok(())
}

/// Reads a binary file record by record.
///
/// Yields `(offset of the record's tag byte, record)`. After the first error
/// the iterator ends.
pub struct RecordReader<R: Read> {
    stream: RecordStream<R>,
    body: Vec<u8>,
    failed: bool,
}

impl<R: Read> RecordReader<R> {
    /// Read and check the file header; records are read by iterating.
    pub fn new(inner: R) -> Result<Self, ParseError> {
        Ok(RecordReader {
            stream: RecordStream::new(inner)?,
            body: Vec::new(),
            failed: false,
        })
    }

    /// The file header read by [`RecordReader::new`].
    pub fn header(&self) -> &FileHeader {
        self.stream.header()
    }

    /// Offset of the next record (the end of the file once iteration is done).
    pub fn offset(&self) -> u64 {
        self.stream.offset()
    }

    fn read_record(&mut self) -> Result<Option<(u64, Record)>, ParseError> {
        let Some(record) = self.stream.next_header()? else {
            return Ok(None);
        };
        self.stream.read_body(&mut self.body)?;
        let id_size = self.stream.header().id_size;
        let body = parse_body(record.tag, &self.body, id_size, record.offset)?;
        Ok(Some((
            record.offset,
            Record {
                time: record.time,
                body,
            },
        )))
    }
}

impl<R: Read> Iterator for RecordReader<R> {
    type Item = Result<(u64, Record), ParseError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let item = self.read_record().transpose();
        self.failed = matches!(item, Some(Err(_)));
        item
    }
}

fn err(offset: u64, message: impl Into<String>) -> ParseError {
    ParseError {
        offset,
        message: message.into(),
    }
}

fn io_error(offset: u64, e: io::Error) -> ParseError {
    err(offset, format!("I/O error: {e}"))
}

/// Fill `buf` as far as the input allows; returns how many bytes were read.
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// Reads and checks the file header at the start of `r`.
pub fn read_header(r: &mut impl Read) -> Result<FileHeader, ParseError> {
    let version = read_header_text(r)?;
    let id_offset = version.header_text().len() as u64 + 1;
    let mut fields = [0u8; 12];
    let got = read_full(r, &mut fields).map_err(|e| io_error(id_offset, e))?;
    if got < 4 {
        return Err(err(id_offset, "truncated header: identifier size missing"));
    }
    if got < 12 {
        return Err(err(id_offset + 4, "truncated header: time stamp missing"));
    }
    let id_size = big_endian::u4_at(&fields, 0).expect("12 bytes");
    if id_size != 4 && id_size != 8 {
        return Err(err(
            id_offset,
            format!("identifier size {id_size} is not 4 or 8"),
        ));
    }
    let timestamp_ms = big_endian::u8_at(&fields, 4).expect("12 bytes");
    Ok(FileHeader {
        version,
        id_size,
        timestamp_ms,
    })
}

/// Read the NUL-terminated header string and recognise the version.
fn read_header_text(r: &mut impl Read) -> Result<Version, ParseError> {
    let mut text = Vec::new();
    loop {
        let mut byte = [0u8; 1];
        if read_full(r, &mut byte).map_err(|e| io_error(0, e))? == 0 {
            return Err(err(
                0,
                "truncated header: the file ends inside the header string",
            ));
        }
        if byte[0] == 0 {
            break;
        }
        text.push(byte[0]);
        if text.len() > MAX_HEADER_TEXT {
            return Err(err(0, "unknown header string (no NUL in the first bytes)"));
        }
    }
    [Version::V101, Version::V102]
        .into_iter()
        .find(|v| v.header_text().as_bytes() == text.as_slice())
        .ok_or_else(|| {
            err(
                0,
                format!("unknown header string {:?}", String::from_utf8_lossy(&text)),
            )
        })
}

/// Why a body could not be decoded, before it is placed at a file offset.
enum Fault {
    /// The data ran out before the item was complete.
    Short,
    /// A basic-type byte at this position of the body is not a known type.
    BadType { at: usize, byte: u8 },
}

/// Reads big-endian values from a record body.
struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn new(buf: &'a [u8]) -> Self {
        Cursor { buf, pos: 0 }
    }

    fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    fn take(&mut self, n: u64) -> Result<&'a [u8], Fault> {
        if n > self.remaining() as u64 {
            return Err(Fault::Short);
        }
        let slice = &self.buf[self.pos..self.pos + n as usize];
        self.pos += n as usize;
        Ok(slice)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], Fault> {
        Ok(self
            .take(N as u64)?
            .try_into()
            .expect("take returns N bytes"))
    }

    fn u1(&mut self) -> Result<u8, Fault> {
        Ok(self.array::<1>()?[0])
    }

    fn u2(&mut self) -> Result<u16, Fault> {
        Ok(big_endian::u2_at(&self.array::<2>()?, 0).expect("2 bytes"))
    }

    fn u4(&mut self) -> Result<u32, Fault> {
        Ok(big_endian::u4_at(&self.array::<4>()?, 0).expect("4 bytes"))
    }

    fn u8(&mut self) -> Result<u64, Fault> {
        Ok(big_endian::u8_at(&self.array::<8>()?, 0).expect("8 bytes"))
    }

    fn id(&mut self, id_size: u32) -> Result<u64, Fault> {
        if id_size == 4 {
            Ok(u64::from(self.u4()?))
        } else {
            self.u8()
        }
    }

    fn basic_type(&mut self) -> Result<BasicType, Fault> {
        let at = self.pos;
        let byte = self.u1()?;
        BasicType::from_u8(byte).ok_or(Fault::BadType { at, byte })
    }

    fn value(&mut self, ty: BasicType, id_size: u32) -> Result<Value, Fault> {
        Ok(match ty {
            BasicType::Object => Value::Object(self.id(id_size)?),
            BasicType::Boolean => Value::Boolean(self.u1()? != 0),
            BasicType::Char => Value::Char(self.u2()?),
            BasicType::Float => Value::Float(self.u4()?),
            BasicType::Double => Value::Double(self.u8()?),
            BasicType::Byte => Value::Byte(self.u1()? as i8),
            BasicType::Short => Value::Short(self.u2()? as i16),
            BasicType::Int => Value::Int(self.u4()? as i32),
            BasicType::Long => Value::Long(self.u8()? as i64),
        })
    }

    fn typed_value(&mut self, id_size: u32) -> Result<Value, Fault> {
        let ty = self.basic_type()?;
        self.value(ty, id_size)
    }

    /// `count` items of `item_size` bytes each. The bytes are claimed first so
    /// that a corrupt count cannot make us allocate more than the input holds.
    fn fixed_list<T>(
        &mut self,
        count: u32,
        item_size: usize,
        mut item: impl FnMut(&mut Cursor<'a>) -> Result<T, Fault>,
    ) -> Result<Vec<T>, Fault> {
        let bytes = self.take(u64::from(count) * item_size as u64)?;
        let mut sub = Cursor::new(bytes);
        (0..count).map(|_| item(&mut sub)).collect()
    }

    /// A u2 count followed by that many variable-size items.
    fn u2_list<T>(
        &mut self,
        mut item: impl FnMut(&mut Cursor<'a>) -> Result<T, Fault>,
    ) -> Result<Vec<T>, Fault> {
        let count = self.u2()?;
        (0..count).map(|_| item(self)).collect()
    }

    fn ids(&mut self, count: u32, id_size: u32) -> Result<Vec<u64>, Fault> {
        self.fixed_list(count, id_size as usize, |c| c.id(id_size))
    }
}

/// Decode a record body. `record_offset` is the offset of its tag byte.
pub fn parse_body(
    tag: u8,
    body: &[u8],
    id_size: u32,
    record_offset: u64,
) -> Result<RecordBody, ParseError> {
    let body_offset = record_offset + 9;
    match tag {
        tags::HEAP_DUMP => Ok(RecordBody::HeapDump(parse_heap_records(
            body,
            id_size,
            body_offset,
        )?)),
        tags::HEAP_DUMP_SEGMENT => Ok(RecordBody::HeapDumpSegment(parse_heap_records(
            body,
            id_size,
            body_offset,
        )?)),
        tags::UTF8 => parse_utf8(body, id_size, record_offset),
        _ if tags::name(tag).is_none() => Ok(RecordBody::Unknown {
            tag,
            body: body.to_vec(),
        }),
        _ => parse_fixed_body(tag, body, id_size, record_offset),
    }
}

fn parse_utf8(body: &[u8], id_size: u32, record_offset: u64) -> Result<RecordBody, ParseError> {
    let mut c = Cursor::new(body);
    let id = c
        .id(id_size)
        .map_err(|_| too_short(tags::UTF8, body.len(), record_offset))?;
    Ok(RecordBody::Utf8 {
        id,
        text: body[c.pos..].to_vec(),
    })
}

fn record_name(tag: u8) -> &'static str {
    tags::name(tag).unwrap_or("unknown")
}

fn too_short(tag: u8, length: usize, record_offset: u64) -> ParseError {
    err(
        record_offset,
        format!(
            "{} record (length {length}) is too short for its fields",
            record_name(tag)
        ),
    )
}

/// Records whose body is completely described by their fields: no trailing bytes allowed.
fn parse_fixed_body(
    tag: u8,
    body: &[u8],
    id_size: u32,
    record_offset: u64,
) -> Result<RecordBody, ParseError> {
    let mut c = Cursor::new(body);
    let parsed = match tag {
        tags::LOAD_CLASS => load_class(&mut c, id_size),
        tags::UNLOAD_CLASS => c
            .u4()
            .map(|class_serial| RecordBody::UnloadClass { class_serial }),
        tags::FRAME => frame(&mut c, id_size),
        tags::TRACE => trace(&mut c, id_size),
        tags::ALLOC_SITES => alloc_sites(&mut c),
        tags::HEAP_SUMMARY => heap_summary(&mut c),
        tags::START_THREAD => start_thread(&mut c, id_size),
        tags::END_THREAD => c
            .u4()
            .map(|thread_serial| RecordBody::EndThread { thread_serial }),
        tags::HEAP_DUMP_END => Ok(RecordBody::HeapDumpEnd),
        tags::CPU_SAMPLES => cpu_samples(&mut c),
        tags::CONTROL_SETTINGS => control_settings(&mut c),
        _ => unreachable!("parse_body routes tag 0x{tag:02x} elsewhere"),
    };
    let parsed = parsed.map_err(|_| too_short(tag, body.len(), record_offset))?;
    if c.remaining() > 0 {
        let message = format!(
            "{} unexpected bytes at the end of a {} record",
            c.remaining(),
            record_name(tag)
        );
        return Err(err(record_offset + 9 + c.pos as u64, message));
    }
    Ok(parsed)
}

fn load_class(c: &mut Cursor, id_size: u32) -> Result<RecordBody, Fault> {
    Ok(RecordBody::LoadClass {
        class_serial: c.u4()?,
        class_id: c.id(id_size)?,
        trace_serial: c.u4()?,
        name_id: c.id(id_size)?,
    })
}

fn frame(c: &mut Cursor, id_size: u32) -> Result<RecordBody, Fault> {
    Ok(RecordBody::Frame {
        frame_id: c.id(id_size)?,
        method_name_id: c.id(id_size)?,
        signature_id: c.id(id_size)?,
        source_file_id: c.id(id_size)?,
        class_serial: c.u4()?,
        line: c.u4()? as i32,
    })
}

fn trace(c: &mut Cursor, id_size: u32) -> Result<RecordBody, Fault> {
    let trace_serial = c.u4()?;
    let thread_serial = c.u4()?;
    let count = c.u4()?;
    Ok(RecordBody::Trace {
        trace_serial,
        thread_serial,
        frame_ids: c.ids(count, id_size)?,
    })
}

fn alloc_sites(c: &mut Cursor) -> Result<RecordBody, Fault> {
    let flags = c.u2()?;
    let cutoff = c.u4()?;
    let total_live_bytes = c.u4()?;
    let total_live_instances = c.u4()?;
    let total_allocated_bytes = c.u8()?;
    let total_allocated_instances = c.u8()?;
    let count = c.u4()?;
    let sites = c.fixed_list(count, 25, |c| {
        Ok(AllocSite {
            array_type: c.u1()?,
            class_serial: c.u4()?,
            trace_serial: c.u4()?,
            live_bytes: c.u4()?,
            live_instances: c.u4()?,
            allocated_bytes: c.u4()?,
            allocated_instances: c.u4()?,
        })
    })?;
    Ok(RecordBody::AllocSites {
        flags,
        cutoff,
        total_live_bytes,
        total_live_instances,
        total_allocated_bytes,
        total_allocated_instances,
        sites,
    })
}

fn heap_summary(c: &mut Cursor) -> Result<RecordBody, Fault> {
    Ok(RecordBody::HeapSummary {
        live_bytes: c.u4()?,
        live_instances: c.u4()?,
        allocated_bytes: c.u8()?,
        allocated_instances: c.u8()?,
    })
}

fn start_thread(c: &mut Cursor, id_size: u32) -> Result<RecordBody, Fault> {
    Ok(RecordBody::StartThread {
        thread_serial: c.u4()?,
        thread_id: c.id(id_size)?,
        trace_serial: c.u4()?,
        name_id: c.id(id_size)?,
        group_name_id: c.id(id_size)?,
        parent_group_name_id: c.id(id_size)?,
    })
}

fn cpu_samples(c: &mut Cursor) -> Result<RecordBody, Fault> {
    let total = c.u4()?;
    let count = c.u4()?;
    let samples = c.fixed_list(count, 8, |c| {
        Ok(CpuSample {
            count: c.u4()?,
            trace_serial: c.u4()?,
        })
    })?;
    Ok(RecordBody::CpuSamples { total, samples })
}

fn control_settings(c: &mut Cursor) -> Result<RecordBody, Fault> {
    Ok(RecordBody::ControlSettings {
        flags: c.u4()?,
        depth: c.u2()?,
    })
}

/// Decode the sub-records of a HEAP DUMP or HEAP DUMP SEGMENT body that starts
/// at file offset `body_offset`.
pub fn parse_heap_records(
    body: &[u8],
    id_size: u32,
    body_offset: u64,
) -> Result<Vec<HeapRecord>, ParseError> {
    let mut records = Vec::new();
    let mut start = 0;
    while start < body.len() {
        let (record, length) =
            first_heap_record(&body[start..], id_size, body_offset + start as u64)?;
        records.push(record);
        start += length;
    }
    Ok(records)
}

/// Decode one whole sub-record (as [`heap_walk::SubRecords`] reads them)
/// that starts at file offset `offset`.
pub fn parse_heap_record(
    bytes: &[u8],
    id_size: u32,
    offset: u64,
) -> Result<HeapRecord, ParseError> {
    match first_heap_record(bytes, id_size, offset)? {
        (record, length) if length == bytes.len() => Ok(record),
        (_, length) => Err(err(
            offset + length as u64,
            "bytes after the end of a heap sub-record",
        )),
    }
}

/// The sub-record at the start of `rest` (file offset `offset`) and its
/// length: found with the layout table, then decoded from exactly its bytes.
fn first_heap_record(
    rest: &[u8],
    id_size: u32,
    offset: u64,
) -> Result<(HeapRecord, usize), ParseError> {
    let at = |within: usize| offset + within as u64;
    let mut length = rest.len();
    let fault = match layout::measure(rest, id_size) {
        Ok(Extent::Whole(n)) if n <= rest.len() as u64 => {
            length = n as usize;
            None
        }
        Ok(_) => Some(Fault::Short),
        Err(layout::Fault::UnknownTag(tag)) => {
            let message = format!("unknown heap dump sub-record tag 0x{tag:02x}");
            return Err(err(at(0), message));
        }
        Err(layout::Fault::BadType { at, byte }) => Some(Fault::BadType { at, byte }),
        Err(layout::Fault::ObjectElements { at }) => Some(Fault::BadType { at, byte: rest[at] }),
    };
    let mut c = Cursor::new(&rest[..length]);
    let decoded = match fault {
        Some(fault) => Err(fault),
        None => heap_record(&mut c, id_size),
    };
    match decoded {
        Ok(Some(record)) if c.remaining() == 0 => Ok((record, length)),
        // (The layout table and the decoder agree on every tag: a unit
        // test checks it; this keeps a disagreement from passing silently.)
        Ok(_) => {
            let message = format!("heap sub-record tag 0x{:02x} decoded wrongly", rest[0]);
            Err(err(at(0), message))
        }
        Err(Fault::Short) => {
            let tag = rest[0];
            let message = format!(
                "heap sub-record {} (0x{tag:02x}) runs past the end of its record",
                tags::heap::name(tag).unwrap_or("unknown")
            );
            Err(err(at(0), message))
        }
        Err(Fault::BadType { at: byte_at, byte }) => {
            let message = format!("invalid basic type 0x{byte:02x} in a heap sub-record");
            Err(err(at(byte_at), message))
        }
    }
}

/// One sub-record, tag included; `None` for an unknown tag.
fn heap_record(c: &mut Cursor, id_size: u32) -> Result<Option<HeapRecord>, Fault> {
    use tags::heap::*;
    let tag = c.u1()?;
    let record = match tag {
        ROOT_UNKNOWN => HeapRecord::RootUnknown {
            object_id: c.id(id_size)?,
        },
        ROOT_JNI_GLOBAL => HeapRecord::RootJniGlobal {
            object_id: c.id(id_size)?,
            jni_global_ref_id: c.id(id_size)?,
        },
        ROOT_JNI_LOCAL => HeapRecord::RootJniLocal {
            object_id: c.id(id_size)?,
            thread_serial: c.u4()?,
            frame_depth: c.u4()?,
        },
        ROOT_JAVA_FRAME => HeapRecord::RootJavaFrame {
            object_id: c.id(id_size)?,
            thread_serial: c.u4()?,
            frame_depth: c.u4()?,
        },
        ROOT_NATIVE_STACK => HeapRecord::RootNativeStack {
            object_id: c.id(id_size)?,
            thread_serial: c.u4()?,
        },
        ROOT_STICKY_CLASS => HeapRecord::RootStickyClass {
            object_id: c.id(id_size)?,
        },
        ROOT_THREAD_BLOCK => HeapRecord::RootThreadBlock {
            object_id: c.id(id_size)?,
            thread_serial: c.u4()?,
        },
        ROOT_MONITOR_USED => HeapRecord::RootMonitorUsed {
            object_id: c.id(id_size)?,
        },
        ROOT_THREAD_OBJ => HeapRecord::RootThreadObject {
            object_id: c.id(id_size)?,
            thread_serial: c.u4()?,
            trace_serial: c.u4()?,
        },
        CLASS_DUMP => class_dump(c, id_size)?,
        INSTANCE_DUMP => instance_dump(c, id_size)?,
        OBJ_ARRAY_DUMP => object_array_dump(c, id_size)?,
        PRIM_ARRAY_DUMP => primitive_array_dump(c, id_size)?,
        _ => return Ok(None),
    };
    Ok(Some(record))
}

fn class_dump(c: &mut Cursor, id_size: u32) -> Result<HeapRecord, Fault> {
    Ok(HeapRecord::ClassDump {
        class_id: c.id(id_size)?,
        trace_serial: c.u4()?,
        super_id: c.id(id_size)?,
        loader_id: c.id(id_size)?,
        signers_id: c.id(id_size)?,
        protection_domain_id: c.id(id_size)?,
        reserved1: c.id(id_size)?,
        reserved2: c.id(id_size)?,
        instance_size: c.u4()?,
        constant_pool: c.u2_list(|c| {
            Ok(ConstantPoolEntry {
                index: c.u2()?,
                value: c.typed_value(id_size)?,
            })
        })?,
        static_fields: c.u2_list(|c| {
            Ok(StaticField {
                name_id: c.id(id_size)?,
                value: c.typed_value(id_size)?,
            })
        })?,
        instance_fields: c.u2_list(|c| {
            Ok(FieldDescriptor {
                name_id: c.id(id_size)?,
                field_type: c.basic_type()?,
            })
        })?,
    })
}

fn instance_dump(c: &mut Cursor, id_size: u32) -> Result<HeapRecord, Fault> {
    let object_id = c.id(id_size)?;
    let trace_serial = c.u4()?;
    let class_id = c.id(id_size)?;
    let count = c.u4()?;
    let values = c.take(u64::from(count))?.to_vec();
    Ok(HeapRecord::InstanceDump {
        object_id,
        trace_serial,
        class_id,
        values,
    })
}

fn object_array_dump(c: &mut Cursor, id_size: u32) -> Result<HeapRecord, Fault> {
    let array_id = c.id(id_size)?;
    let trace_serial = c.u4()?;
    let count = c.u4()?;
    let array_class_id = c.id(id_size)?;
    let elements = c.ids(count, id_size)?;
    Ok(HeapRecord::ObjectArrayDump {
        array_id,
        trace_serial,
        array_class_id,
        elements,
    })
}

fn primitive_array_dump(c: &mut Cursor, id_size: u32) -> Result<HeapRecord, Fault> {
    let array_id = c.id(id_size)?;
    let trace_serial = c.u4()?;
    let count = c.u4()?;
    let type_at = c.pos;
    let ty = c.basic_type()?;
    let size = ty.size(id_size);
    let elements = match ty {
        BasicType::Object => {
            return Err(Fault::BadType {
                at: type_at,
                byte: ty as u8,
            });
        }
        BasicType::Boolean => {
            PrimitiveArray::Boolean(c.fixed_list(count, size, |c| Ok(c.u1()? != 0))?)
        }
        BasicType::Char => PrimitiveArray::Char(c.fixed_list(count, size, Cursor::u2)?),
        BasicType::Float => PrimitiveArray::Float(c.fixed_list(count, size, Cursor::u4)?),
        BasicType::Double => PrimitiveArray::Double(c.fixed_list(count, size, Cursor::u8)?),
        BasicType::Byte => {
            PrimitiveArray::Byte(c.fixed_list(count, size, |c| Ok(c.u1()? as i8))?)
        }
        BasicType::Short => {
            PrimitiveArray::Short(c.fixed_list(count, size, |c| Ok(c.u2()? as i16))?)
        }
        BasicType::Int => PrimitiveArray::Int(c.fixed_list(count, size, |c| Ok(c.u4()? as i32))?),
        BasicType::Long => PrimitiveArray::Long(c.fixed_list(count, size, |c| Ok(c.u8()? as i64))?),
    };
    Ok(HeapRecord::PrimitiveArrayDump {
        array_id,
        trace_serial,
        elements,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::binary::writer::{encode_header, encode_record, encode_record_header};

    /// Length of a 1.0.1/1.0.2 header: 19 bytes of text and NUL, u4, u8.
    const HEADER_LEN: u64 = 31;

    fn header(id_size: u32) -> Vec<u8> {
        let mut out = Vec::new();
        encode_header(
            &FileHeader {
                version: Version::V101,
                id_size,
                timestamp_ms: 1,
            },
            &mut out,
        );
        out
    }

    /// A file with one raw record whose body is given verbatim.
    fn file_with_raw_record(tag: u8, body: &[u8]) -> Vec<u8> {
        let mut out = header(4);
        encode_record_header(tag, 0, body.len() as u32, &mut out);
        out.extend_from_slice(body);
        out
    }

    fn error_of(bytes: &[u8]) -> ParseError {
        parse(bytes).expect_err("parse should fail")
    }

    #[test]
    fn header_errors() {
        assert_eq!(error_of(b"JAVA PRO").offset, 0);
        assert!(error_of(b"JAVA PRO").message.contains("truncated header"));
        let unknown = error_of(b"JAVA PROFILE 9.9.9\0\0\0\0\x04\0\0\0\0\0\0\0\0");
        assert_eq!(unknown.offset, 0);
        assert!(unknown.message.contains("unknown header"), "{unknown}");
        assert_eq!(error_of(&[b'x'; 100]).offset, 0);

        let mut bad_size = header(4);
        bad_size[22] = 5;
        let e = error_of(&bad_size);
        assert_eq!(
            (e.offset, e.message.as_str()),
            (19, "identifier size 5 is not 4 or 8")
        );
        assert_eq!(error_of(&header(4)[..21]).offset, 19);
        assert_eq!(error_of(&header(4)[..27]).offset, 23);
    }

    #[test]
    fn empty_file_body_is_fine() {
        let file = parse(&header(8)).unwrap();
        assert_eq!(file.header.id_size, 8);
        assert!(file.records.is_empty());
    }

    #[test]
    fn record_errors_point_at_the_record() {
        let mut truncated = header(4);
        truncated.extend_from_slice(&[0x01, 0, 0]);
        assert_eq!(error_of(&truncated).offset, HEADER_LEN);

        let mut past_end = header(4);
        encode_record_header(tags::UTF8, 0, 100, &mut past_end);
        past_end.extend_from_slice(b"abcd");
        let e = error_of(&past_end);
        assert_eq!(e.offset, HEADER_LEN);
        assert!(
            e.message.contains("length 100 but only 4 bytes follow"),
            "{e}"
        );

        let short = error_of(&file_with_raw_record(tags::LOAD_CLASS, &[0; 10]));
        assert_eq!(short.offset, HEADER_LEN);
        assert!(short.message.contains("LOAD CLASS"), "{short}");

        let long = error_of(&file_with_raw_record(tags::END_THREAD, &[0; 6]));
        assert_eq!(long.offset, HEADER_LEN + 9 + 4, "{long}");

        let utf8 = error_of(&file_with_raw_record(tags::UTF8, &[0; 3]));
        assert_eq!(utf8.offset, HEADER_LEN);
    }

    #[test]
    fn a_huge_count_is_an_error_not_an_allocation() {
        // TRACE claiming 2^32-1 frames in a 12-byte body.
        let body = [0, 0, 0, 1, 0, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF];
        assert_eq!(
            error_of(&file_with_raw_record(tags::TRACE, &body)).offset,
            HEADER_LEN
        );
    }

    #[test]
    fn heap_sub_record_errors() {
        let body_start = HEADER_LEN + 9;
        let cut = error_of(&file_with_raw_record(tags::HEAP_DUMP, &[0xFF, 0, 0]));
        assert_eq!(cut.offset, body_start);
        assert!(cut.message.contains("ROOT UNKNOWN"), "{cut}");

        let unknown = error_of(&file_with_raw_record(
            tags::HEAP_DUMP_SEGMENT,
            &[0xFF, 0, 0, 0, 1, 0x99, 0],
        ));
        assert_eq!(unknown.offset, body_start + 5);
        assert!(unknown.message.contains("0x99"), "{unknown}");

        // INSTANCE DUMP: id, trace, class, then a byte count of 100 with 3 bytes left.
        let mut instance = vec![0xFF, 0, 0, 0, 1, 0x21];
        instance.extend_from_slice(&[0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 100, 1, 2, 3]);
        let over = error_of(&file_with_raw_record(tags::HEAP_DUMP, &instance));
        assert_eq!(over.offset, body_start + 5);
        assert!(over.message.contains("INSTANCE DUMP"), "{over}");
    }

    #[test]
    fn bad_basic_types_are_reported_at_their_byte() {
        let body_start = HEADER_LEN + 9;
        // PRIMITIVE ARRAY DUMP with element type 2 (object), not allowed there.
        let prim = [0x23, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 2];
        let e = error_of(&file_with_raw_record(tags::HEAP_DUMP, &prim));
        assert_eq!(e.offset, body_start + 13);
        // CLASS DUMP with no constant pool and one static field of type 3.
        let mut class = vec![0x20];
        class.extend_from_slice(&[0; 4 + 4 + 6 * 4 + 4]);
        class.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 9, 3, 0]);
        let e = error_of(&file_with_raw_record(tags::HEAP_DUMP, &class));
        assert_eq!(e.offset, body_start + 1 + 36 + 2 + 2 + 4);
        assert!(e.message.contains("0x03"), "{e}");
    }

    #[test]
    fn unknown_tags_are_kept() {
        let file = parse(&file_with_raw_record(0x42, b"xyz")).unwrap();
        assert_eq!(
            file.records[0].body,
            RecordBody::Unknown {
                tag: 0x42,
                body: b"xyz".to_vec()
            }
        );
    }

    #[test]
    fn the_reader_streams_with_offsets_and_stops_after_an_error() {
        let mut bytes = header(4);
        for serial in [1, 2] {
            let record = Record {
                time: serial,
                body: RecordBody::EndThread {
                    thread_serial: serial,
                },
            };
            encode_record(&record, 4, &mut bytes);
        }
        bytes.extend_from_slice(&[0x0B, 0]);
        let mut reader = RecordReader::new(bytes.as_slice()).unwrap();
        assert_eq!(reader.next().unwrap().unwrap().0, HEADER_LEN);
        assert_eq!(reader.next().unwrap().unwrap().0, HEADER_LEN + 13);
        assert_eq!(reader.offset(), HEADER_LEN + 26);
        assert_eq!(reader.next().unwrap().unwrap_err().offset, HEADER_LEN + 26);
        assert!(reader.next().is_none());
    }
}
