//! Typed records of the HPROF binary format ("JAVA PROFILE 1.0.1" and
//! "1.0.2", as HPROF's hprof_b_spec.h defines it). All integers are big-endian in
//! the file; identifiers are `id_size` bytes (4 or 8) and kept as `u64` here.

/// Which header string the file starts with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    /// `JAVA PROFILE 1.0.1`: one HEAP DUMP record per dump.
    V101,
    /// `JAVA PROFILE 1.0.2`: heap dumps as HEAP DUMP SEGMENT records + HEAP DUMP END.
    V102,
}

impl Version {
    /// The header string, without the terminating NUL.
    pub fn header_text(self) -> &'static str {
        match self {
            Version::V101 => "JAVA PROFILE 1.0.1",
            Version::V102 => "JAVA PROFILE 1.0.2",
        }
    }
}

/// The fixed part at the start of every binary file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileHeader {
    /// The NUL-terminated header string, which names the format version.
    pub version: Version,
    /// Size of identifiers in bytes: 4 or 8.
    pub id_size: u32,
    /// Milliseconds since 1970-01-01 when the file was started.
    pub timestamp_ms: u64,
}

impl FileHeader {
    /// The time stamp as an ISO 8601 date and time in UTC, to the
    /// millisecond: `2026-12-06T19:27:28.082Z`.
    pub fn started_utc(&self) -> String {
        utc_iso8601(self.timestamp_ms)
    }
}

/// `ms` milliseconds since 1970-01-01 as `YYYY-MM-DDThh:mm:ss.mmmZ` (the
/// Gregorian calendar, no leap seconds: the clocks that write files count
/// none either).
pub fn utc_iso8601(ms: u64) -> String {
    const MS_PER_DAY: u64 = 86_400_000;
    let (days, in_day) = (ms / MS_PER_DAY, ms % MS_PER_DAY);
    let (year, month, day) = civil_date(days);
    let seconds = in_day / 1000;
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        seconds / 3600,
        seconds / 60 % 60,
        seconds % 60,
        in_day % 1000
    )
}

/// Year, month (1-12) and day (1-31) of the `days`th day after 1970-01-01.
fn civil_date(days: u64) -> (u64, u64, u64) {
    // The calendar repeats every 400 years, which hold 146,097 days
    // whatever year they start at: whole cycles are skipped at once, so a
    // damaged file's huge time stamp costs no more than a real one.
    const DAYS_PER_400_YEARS: u64 = 146_097;
    let is_leap = |y: u64| y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
    let mut year = 1970 + 400 * (days / DAYS_PER_400_YEARS);
    let mut day = days % DAYS_PER_400_YEARS;
    loop {
        let length = if is_leap(year) { 366 } else { 365 };
        if day < length {
            break;
        }
        day -= length;
        year += 1;
    }
    let february = if is_leap(year) { 29 } else { 28 };
    let lengths = [31, february, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
    let mut month = 1;
    for length in lengths {
        if day < length {
            break;
        }
        day -= length;
        month += 1;
    }
    (year, month, day + 1)
}

/// One top-level record: tag, time stamp and body. The length is derived.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    /// Microseconds since the header time stamp (truncated to 32 bits).
    pub time: u32,
    /// The decoded body; its variant gives the u1 tag.
    pub body: RecordBody,
}

/// Basic value types used in heap dumps (the "basic type" byte).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BasicType {
    /// 2: an object reference, one identifier.
    Object = 2,
    /// 4: boolean, 1 byte.
    Boolean = 4,
    /// 5: char, 2 bytes (a UTF-16 code unit).
    Char = 5,
    /// 6: float, 4 bytes.
    Float = 6,
    /// 7: double, 8 bytes.
    Double = 7,
    /// 8: byte, 1 byte.
    Byte = 8,
    /// 9: short, 2 bytes.
    Short = 9,
    /// 10: int, 4 bytes.
    Int = 10,
    /// 11: long, 8 bytes.
    Long = 11,
}

/// A field or array element value. Floats and doubles are kept as raw bits so
/// that values round-trip exactly (NaN payloads included).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Value {
    /// An object identifier (0: null).
    Object(u64),
    /// A boolean (written as one byte, 0 or 1).
    Boolean(bool),
    /// A char, as its UTF-16 code unit.
    Char(u16),
    /// A float, as its IEEE 754 bits.
    Float(u32),
    /// A double, as its IEEE 754 bits.
    Double(u64),
    /// A byte.
    Byte(i8),
    /// A short.
    Short(i16),
    /// An int.
    Int(i32),
    /// A long.
    Long(i64),
}

/// One row of an ALLOC SITES record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AllocSite {
    /// 0 = not an array, 2 = object array, 4..=11 = primitive array type.
    pub array_type: u8,
    /// u4 class serial number of the allocated objects' class (LOAD CLASS).
    pub class_serial: u32,
    /// u4 stack trace serial number of the allocation site (TRACE).
    pub trace_serial: u32,
    /// u4 number of bytes alive.
    pub live_bytes: u32,
    /// u4 number of instances alive.
    pub live_instances: u32,
    /// u4 number of bytes allocated.
    pub allocated_bytes: u32,
    /// u4 number of instances allocated.
    pub allocated_instances: u32,
}

/// One row of a CPU SAMPLES record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuSample {
    /// u4 number of samples that found this stack trace.
    pub count: u32,
    /// u4 stack trace serial number (TRACE).
    pub trace_serial: u32,
}

/// The body of a top-level record, by tag.
#[derive(Debug, Clone, PartialEq)]
pub enum RecordBody {
    /// 0x01 STRING IN UTF8: a string that other records name by its identifier.
    Utf8 {
        /// id of this string.
        id: u64,
        /// The characters, u1 each, as written (no terminating NUL).
        text: Vec<u8>,
    },
    /// 0x02 LOAD CLASS.
    LoadClass {
        /// u4 class serial number, by which other records name the class.
        class_serial: u32,
        /// id class object ID.
        class_id: u64,
        /// u4 stack trace serial number.
        trace_serial: u32,
        /// id of the UTF8 record that holds the class name.
        name_id: u64,
    },
    /// 0x03 UNLOAD CLASS.
    UnloadClass {
        /// u4 class serial number (LOAD CLASS).
        class_serial: u32,
    },
    /// 0x04 STACK FRAME; `line` > 0 is a line number, -1 unknown, -2 compiled, -3 native.
    Frame {
        /// id stack frame ID, which TRACE records list.
        frame_id: u64,
        /// id of the UTF8 record that holds the method name.
        method_name_id: u64,
        /// id of the UTF8 record that holds the method signature.
        signature_id: u64,
        /// id of the UTF8 record that holds the source file name.
        source_file_id: u64,
        /// u4 class serial number of the method's class (LOAD CLASS).
        class_serial: u32,
        /// i4 line number, or a negative code as above.
        line: i32,
    },
    /// 0x05 STACK TRACE.
    Trace {
        /// u4 stack trace serial number, by which other records name the trace.
        trace_serial: u32,
        /// u4 thread serial number (START THREAD).
        thread_serial: u32,
        /// The ids of its STACK FRAME records, top frame first (a u4 count
        /// precedes them in the file).
        frame_ids: Vec<u64>,
    },
    /// 0x06 ALLOC SITES; `cutoff` is kept as the raw 4 bytes of the file.
    AllocSites {
        /// u2 flags: 0x1 incremental, 0x2 sorted by allocation (not live),
        /// 0x4 a GC was forced (as [`crate::commands::site_flags`]).
        flags: u16,
        /// u4 cutoff ratio (hprof-rs writes the bits of an f32).
        cutoff: u32,
        /// u4 total live bytes.
        total_live_bytes: u32,
        /// u4 total live instances.
        total_live_instances: u32,
        /// u8 total bytes allocated.
        total_allocated_bytes: u64,
        /// u8 total instances allocated.
        total_allocated_instances: u64,
        /// The sites (a u4 count precedes them in the file).
        sites: Vec<AllocSite>,
    },
    /// 0x07 HEAP SUMMARY.
    HeapSummary {
        /// u4 total live bytes.
        live_bytes: u32,
        /// u4 total live instances.
        live_instances: u32,
        /// u8 total bytes allocated.
        allocated_bytes: u64,
        /// u8 total instances allocated.
        allocated_instances: u64,
    },
    /// 0x0A START THREAD.
    StartThread {
        /// u4 thread serial number, by which other records name the thread.
        thread_serial: u32,
        /// id thread object ID.
        thread_id: u64,
        /// u4 stack trace serial number.
        trace_serial: u32,
        /// id of the UTF8 record that holds the thread name.
        name_id: u64,
        /// id of the UTF8 record that holds the thread group name.
        group_name_id: u64,
        /// id of the UTF8 record that holds the parent thread group name.
        parent_group_name_id: u64,
    },
    /// 0x0B END THREAD.
    EndThread {
        /// u4 thread serial number (START THREAD).
        thread_serial: u32,
    },
    /// 0x0C: a whole heap dump in one record.
    HeapDump(Vec<HeapRecord>),
    /// 0x1C: one segment of a heap dump (1.0.2).
    HeapDumpSegment(Vec<HeapRecord>),
    /// 0x2C: end of a segmented heap dump.
    HeapDumpEnd,
    /// 0x0D CPU SAMPLES.
    CpuSamples {
        /// u4 total number of samples.
        total: u32,
        /// One row per stack trace (a u4 count precedes them in the file).
        samples: Vec<CpuSample>,
    },
    /// 0x0E CONTROL SETTINGS; flags: [`CONTROL_ALLOC_TRACES`], [`CONTROL_CPU_SAMPLING`].
    ControlSettings {
        /// u4 flags.
        flags: u32,
        /// u2 stack trace depth.
        depth: u16,
    },
    /// A tag this crate does not know; the body is kept verbatim.
    Unknown {
        /// The u1 tag.
        tag: u8,
        /// The body's bytes.
        body: Vec<u8>,
    },
}

/// CONTROL SETTINGS flag: allocation traces are on (heap=sites).
pub const CONTROL_ALLOC_TRACES: u32 = 0x1;
/// CONTROL SETTINGS flag: CPU sampling is on (cpu=samples).
pub const CONTROL_CPU_SAMPLING: u32 = 0x2;

/// Instance field descriptor inside a CLASS DUMP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldDescriptor {
    /// id of the UTF8 record that holds the field name.
    pub name_id: u64,
    /// u1 basic type of the field.
    pub field_type: BasicType,
}

/// Static field inside a CLASS DUMP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StaticField {
    /// id of the UTF8 record that holds the field name.
    pub name_id: u64,
    /// The field's value, written as its u1 basic type and the value.
    pub value: Value,
}

/// Constant pool entry inside a CLASS DUMP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConstantPoolEntry {
    /// u2 constant pool index.
    pub index: u16,
    /// The entry's value, written as its u1 basic type and the value.
    pub value: Value,
}

/// Contents of a primitive array, in file order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PrimitiveArray {
    /// boolean[] (type 4), 1 byte an element.
    Boolean(Vec<bool>),
    /// char[] (type 5), 2 bytes an element.
    Char(Vec<u16>),
    /// float[] (type 6), IEEE 754 bits, 4 bytes an element.
    Float(Vec<u32>),
    /// double[] (type 7), IEEE 754 bits, 8 bytes an element.
    Double(Vec<u64>),
    /// byte[] (type 8), 1 byte an element.
    Byte(Vec<i8>),
    /// short[] (type 9), 2 bytes an element.
    Short(Vec<i16>),
    /// int[] (type 10), 4 bytes an element.
    Int(Vec<i32>),
    /// long[] (type 11), 8 bytes an element.
    Long(Vec<i64>),
}

/// A heap dump sub-record.
#[derive(Debug, Clone, PartialEq)]
pub enum HeapRecord {
    /// 0xFF ROOT UNKNOWN.
    RootUnknown {
        /// id object ID.
        object_id: u64,
    },
    /// 0x01 ROOT JNI GLOBAL.
    RootJniGlobal {
        /// id object ID.
        object_id: u64,
        /// id JNI global ref ID.
        jni_global_ref_id: u64,
    },
    /// 0x02 ROOT JNI LOCAL.
    RootJniLocal {
        /// id object ID.
        object_id: u64,
        /// u4 thread serial number.
        thread_serial: u32,
        /// u4 frame number in the stack trace (-1 for empty).
        frame_depth: u32,
    },
    /// 0x03 ROOT JAVA FRAME.
    RootJavaFrame {
        /// id object ID.
        object_id: u64,
        /// u4 thread serial number.
        thread_serial: u32,
        /// u4 frame number in the stack trace (-1 for empty).
        frame_depth: u32,
    },
    /// 0x04 ROOT NATIVE STACK.
    RootNativeStack {
        /// id object ID.
        object_id: u64,
        /// u4 thread serial number.
        thread_serial: u32,
    },
    /// 0x05 ROOT STICKY CLASS (a system class).
    RootStickyClass {
        /// id object ID of the class.
        object_id: u64,
    },
    /// 0x06 ROOT THREAD BLOCK.
    RootThreadBlock {
        /// id object ID.
        object_id: u64,
        /// u4 thread serial number.
        thread_serial: u32,
    },
    /// 0x07 ROOT MONITOR USED (a busy monitor).
    RootMonitorUsed {
        /// id object ID.
        object_id: u64,
    },
    /// 0x08 ROOT THREAD OBJECT.
    RootThreadObject {
        /// id thread object ID (may be 0 for a thread attached through JNI).
        object_id: u64,
        /// u4 thread serial number.
        thread_serial: u32,
        /// u4 stack trace serial number.
        trace_serial: u32,
    },
    /// 0x20 CLASS DUMP.
    ClassDump {
        /// id class object ID.
        class_id: u64,
        /// u4 stack trace serial number.
        trace_serial: u32,
        /// id of the superclass's class object (0: none).
        super_id: u64,
        /// id class loader object ID.
        loader_id: u64,
        /// id signers object ID.
        signers_id: u64,
        /// id protection domain object ID.
        protection_domain_id: u64,
        /// id, reserved.
        reserved1: u64,
        /// id, reserved.
        reserved2: u64,
        /// u4 instance size in bytes.
        instance_size: u32,
        /// Constant pool entries (a u2 count precedes them in the file).
        constant_pool: Vec<ConstantPoolEntry>,
        /// Static fields (a u2 count precedes them in the file).
        static_fields: Vec<StaticField>,
        /// Instance fields, superclasses' not included (a u2 count precedes them).
        instance_fields: Vec<FieldDescriptor>,
    },
    /// 0x21 INSTANCE DUMP; `values` is the raw field bytes (this class's fields first, then
    /// the superclasses'), decoded with the CLASS DUMP descriptors.
    InstanceDump {
        /// id object ID.
        object_id: u64,
        /// u4 stack trace serial number.
        trace_serial: u32,
        /// id class object ID of the object's class (CLASS DUMP).
        class_id: u64,
        /// The field values' bytes (a u4 byte count precedes them in the file).
        values: Vec<u8>,
    },
    /// 0x22 OBJECT ARRAY DUMP.
    ObjectArrayDump {
        /// id array object ID.
        array_id: u64,
        /// u4 stack trace serial number.
        trace_serial: u32,
        /// id array class object ID (written after the u4 element count).
        array_class_id: u64,
        /// The element ids (0: null).
        elements: Vec<u64>,
    },
    /// 0x23 PRIMITIVE ARRAY DUMP.
    PrimitiveArrayDump {
        /// id array object ID.
        array_id: u64,
        /// u4 stack trace serial number.
        trace_serial: u32,
        /// The elements, written as u4 count, u1 element type, then the values.
        elements: PrimitiveArray,
    },
}

impl BasicType {
    /// The type for a "basic type" byte of the file, `None` for any other byte.
    pub fn from_u8(byte: u8) -> Option<BasicType> {
        Some(match byte {
            2 => BasicType::Object,
            4 => BasicType::Boolean,
            5 => BasicType::Char,
            6 => BasicType::Float,
            7 => BasicType::Double,
            8 => BasicType::Byte,
            9 => BasicType::Short,
            10 => BasicType::Int,
            11 => BasicType::Long,
            _ => return None,
        })
    }

    /// Bytes one value of this type takes in the file.
    pub fn size(self, id_size: u32) -> usize {
        match self {
            BasicType::Object => id_size as usize,
            BasicType::Boolean | BasicType::Byte => 1,
            BasicType::Char | BasicType::Short => 2,
            BasicType::Float | BasicType::Int => 4,
            BasicType::Double | BasicType::Long => 8,
        }
    }
}

impl Value {
    /// The basic type this value is written with.
    pub fn basic_type(&self) -> BasicType {
        match self {
            Value::Object(_) => BasicType::Object,
            Value::Boolean(_) => BasicType::Boolean,
            Value::Char(_) => BasicType::Char,
            Value::Float(_) => BasicType::Float,
            Value::Double(_) => BasicType::Double,
            Value::Byte(_) => BasicType::Byte,
            Value::Short(_) => BasicType::Short,
            Value::Int(_) => BasicType::Int,
            Value::Long(_) => BasicType::Long,
        }
    }
}

impl PrimitiveArray {
    /// The element type byte written in PRIMITIVE ARRAY DUMP.
    pub fn element_type(&self) -> BasicType {
        match self {
            PrimitiveArray::Boolean(_) => BasicType::Boolean,
            PrimitiveArray::Char(_) => BasicType::Char,
            PrimitiveArray::Float(_) => BasicType::Float,
            PrimitiveArray::Double(_) => BasicType::Double,
            PrimitiveArray::Byte(_) => BasicType::Byte,
            PrimitiveArray::Short(_) => BasicType::Short,
            PrimitiveArray::Int(_) => BasicType::Int,
            PrimitiveArray::Long(_) => BasicType::Long,
        }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        match self {
            PrimitiveArray::Boolean(v) => v.len(),
            PrimitiveArray::Char(v) => v.len(),
            PrimitiveArray::Float(v) => v.len(),
            PrimitiveArray::Double(v) => v.len(),
            PrimitiveArray::Byte(v) => v.len(),
            PrimitiveArray::Short(v) => v.len(),
            PrimitiveArray::Int(v) => v.len(),
            PrimitiveArray::Long(v) => v.len(),
        }
    }

    /// True when the array has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl RecordBody {
    /// The tag byte this body is written under.
    pub fn tag(&self) -> u8 {
        use super::tags::*;
        match self {
            RecordBody::Utf8 { .. } => UTF8,
            RecordBody::LoadClass { .. } => LOAD_CLASS,
            RecordBody::UnloadClass { .. } => UNLOAD_CLASS,
            RecordBody::Frame { .. } => FRAME,
            RecordBody::Trace { .. } => TRACE,
            RecordBody::AllocSites { .. } => ALLOC_SITES,
            RecordBody::HeapSummary { .. } => HEAP_SUMMARY,
            RecordBody::StartThread { .. } => START_THREAD,
            RecordBody::EndThread { .. } => END_THREAD,
            RecordBody::HeapDump(_) => HEAP_DUMP,
            RecordBody::HeapDumpSegment(_) => HEAP_DUMP_SEGMENT,
            RecordBody::HeapDumpEnd => HEAP_DUMP_END,
            RecordBody::CpuSamples { .. } => CPU_SAMPLES,
            RecordBody::ControlSettings { .. } => CONTROL_SETTINGS,
            RecordBody::Unknown { tag, .. } => *tag,
        }
    }
}

impl HeapRecord {
    /// The sub-record tag byte this record is written under.
    pub fn tag(&self) -> u8 {
        use super::tags::heap::*;
        match self {
            HeapRecord::RootUnknown { .. } => ROOT_UNKNOWN,
            HeapRecord::RootJniGlobal { .. } => ROOT_JNI_GLOBAL,
            HeapRecord::RootJniLocal { .. } => ROOT_JNI_LOCAL,
            HeapRecord::RootJavaFrame { .. } => ROOT_JAVA_FRAME,
            HeapRecord::RootNativeStack { .. } => ROOT_NATIVE_STACK,
            HeapRecord::RootStickyClass { .. } => ROOT_STICKY_CLASS,
            HeapRecord::RootThreadBlock { .. } => ROOT_THREAD_BLOCK,
            HeapRecord::RootMonitorUsed { .. } => ROOT_MONITOR_USED,
            HeapRecord::RootThreadObject { .. } => ROOT_THREAD_OBJ,
            HeapRecord::ClassDump { .. } => CLASS_DUMP,
            HeapRecord::InstanceDump { .. } => INSTANCE_DUMP,
            HeapRecord::ObjectArrayDump { .. } => OBJ_ARRAY_DUMP,
            HeapRecord::PrimitiveArrayDump { .. } => PRIM_ARRAY_DUMP,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::utc_iso8601;

    #[test]
    fn time_stamps_read_as_utc_dates() {
        assert_eq!(utc_iso8601(0), "1970-01-01T00:00:00.000Z");
        // As `date -u -d @1796585248 +%FT%T` prints it.
        assert_eq!(utc_iso8601(1_796_585_248_082), "2026-12-06T19:27:28.082Z");
        // The leap days of 2000 (a 400th year) and 2024, none in 2100.
        assert_eq!(utc_iso8601(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(utc_iso8601(1_709_164_799_999), "2024-02-28T23:59:59.999Z");
        assert_eq!(utc_iso8601(1_709_164_800_000), "2024-02-29T00:00:00.000Z");
        assert_eq!(utc_iso8601(4_107_542_400_000), "2100-03-01T00:00:00.000Z");
        assert_eq!(utc_iso8601(253_402_300_799_999), "9999-12-31T23:59:59.999Z");
        // A damaged file's time stamp still gives a date, at once.
        assert!(utc_iso8601(u64::MAX).starts_with("584556019-"));
    }
}
