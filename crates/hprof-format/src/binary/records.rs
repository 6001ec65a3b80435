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
    pub version: Version,
    /// Size of identifiers in bytes: 4 or 8.
    pub id_size: u32,
    /// Milliseconds since 1970-01-01 when the file was started.
    pub timestamp_ms: u64,
}

/// One top-level record: tag, time stamp and body. The length is derived.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    /// Microseconds since the header time stamp (truncated to 32 bits).
    pub time: u32,
    pub body: RecordBody,
}

/// Basic value types used in heap dumps (the "basic type" byte).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BasicType {
    Object = 2,
    Boolean = 4,
    Char = 5,
    Float = 6,
    Double = 7,
    Byte = 8,
    Short = 9,
    Int = 10,
    Long = 11,
}

/// A field or array element value. Floats and doubles are kept as raw bits so
/// that values round-trip exactly (NaN payloads included).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Value {
    Object(u64),
    Boolean(bool),
    Char(u16),
    Float(u32),
    Double(u64),
    Byte(i8),
    Short(i16),
    Int(i32),
    Long(i64),
}

/// One row of an ALLOC SITES record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AllocSite {
    /// 0 = not an array, 2 = object array, 4..=11 = primitive array type.
    pub array_type: u8,
    pub class_serial: u32,
    pub trace_serial: u32,
    pub live_bytes: u32,
    pub live_instances: u32,
    pub allocated_bytes: u32,
    pub allocated_instances: u32,
}

/// One row of a CPU SAMPLES record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuSample {
    pub count: u32,
    pub trace_serial: u32,
}

/// The body of a top-level record, by tag.
#[derive(Debug, Clone, PartialEq)]
pub enum RecordBody {
    /// 0x01
    Utf8 { id: u64, text: Vec<u8> },
    /// 0x02
    LoadClass {
        class_serial: u32,
        class_id: u64,
        trace_serial: u32,
        name_id: u64,
    },
    /// 0x03
    UnloadClass { class_serial: u32 },
    /// 0x04; `line` > 0 is a line number, -1 unknown, -2 compiled, -3 native.
    Frame {
        frame_id: u64,
        method_name_id: u64,
        signature_id: u64,
        source_file_id: u64,
        class_serial: u32,
        line: i32,
    },
    /// 0x05
    Trace {
        trace_serial: u32,
        thread_serial: u32,
        frame_ids: Vec<u64>,
    },
    /// 0x06; `cutoff` is kept as the raw 4 bytes of the file.
    AllocSites {
        flags: u16,
        cutoff: u32,
        total_live_bytes: u32,
        total_live_instances: u32,
        total_allocated_bytes: u64,
        total_allocated_instances: u64,
        sites: Vec<AllocSite>,
    },
    /// 0x07
    HeapSummary {
        live_bytes: u32,
        live_instances: u32,
        allocated_bytes: u64,
        allocated_instances: u64,
    },
    /// 0x0A
    StartThread {
        thread_serial: u32,
        thread_id: u64,
        trace_serial: u32,
        name_id: u64,
        group_name_id: u64,
        parent_group_name_id: u64,
    },
    /// 0x0B
    EndThread { thread_serial: u32 },
    /// 0x0C: a whole heap dump in one record.
    HeapDump(Vec<HeapRecord>),
    /// 0x1C: one segment of a heap dump (1.0.2).
    HeapDumpSegment(Vec<HeapRecord>),
    /// 0x2C: end of a segmented heap dump.
    HeapDumpEnd,
    /// 0x0D
    CpuSamples { total: u32, samples: Vec<CpuSample> },
    /// 0x0E; flags: [`CONTROL_ALLOC_TRACES`], [`CONTROL_CPU_SAMPLING`].
    ControlSettings { flags: u32, depth: u16 },
    /// A tag this crate does not know; the body is kept verbatim.
    Unknown { tag: u8, body: Vec<u8> },
}

/// CONTROL SETTINGS flag: allocation traces are on (heap=sites).
pub const CONTROL_ALLOC_TRACES: u32 = 0x1;
/// CONTROL SETTINGS flag: CPU sampling is on (cpu=samples).
pub const CONTROL_CPU_SAMPLING: u32 = 0x2;

/// Instance field descriptor inside a CLASS DUMP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldDescriptor {
    pub name_id: u64,
    pub field_type: BasicType,
}

/// Static field inside a CLASS DUMP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StaticField {
    pub name_id: u64,
    pub value: Value,
}

/// Constant pool entry inside a CLASS DUMP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConstantPoolEntry {
    pub index: u16,
    pub value: Value,
}

/// Contents of a primitive array, in file order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PrimitiveArray {
    Boolean(Vec<bool>),
    Char(Vec<u16>),
    Float(Vec<u32>),
    Double(Vec<u64>),
    Byte(Vec<i8>),
    Short(Vec<i16>),
    Int(Vec<i32>),
    Long(Vec<i64>),
}

/// A heap dump sub-record.
#[derive(Debug, Clone, PartialEq)]
pub enum HeapRecord {
    /// 0xFF
    RootUnknown { object_id: u64 },
    /// 0x01
    RootJniGlobal {
        object_id: u64,
        jni_global_ref_id: u64,
    },
    /// 0x02
    RootJniLocal {
        object_id: u64,
        thread_serial: u32,
        frame_depth: u32,
    },
    /// 0x03
    RootJavaFrame {
        object_id: u64,
        thread_serial: u32,
        frame_depth: u32,
    },
    /// 0x04
    RootNativeStack { object_id: u64, thread_serial: u32 },
    /// 0x05
    RootStickyClass { object_id: u64 },
    /// 0x06
    RootThreadBlock { object_id: u64, thread_serial: u32 },
    /// 0x07
    RootMonitorUsed { object_id: u64 },
    /// 0x08
    RootThreadObject {
        object_id: u64,
        thread_serial: u32,
        trace_serial: u32,
    },
    /// 0x20
    ClassDump {
        class_id: u64,
        trace_serial: u32,
        super_id: u64,
        loader_id: u64,
        signers_id: u64,
        protection_domain_id: u64,
        reserved1: u64,
        reserved2: u64,
        instance_size: u32,
        constant_pool: Vec<ConstantPoolEntry>,
        static_fields: Vec<StaticField>,
        instance_fields: Vec<FieldDescriptor>,
    },
    /// 0x21; `values` is the raw field bytes (this class's fields first, then
    /// the superclasses'), decoded with the CLASS DUMP descriptors.
    InstanceDump {
        object_id: u64,
        trace_serial: u32,
        class_id: u64,
        values: Vec<u8>,
    },
    /// 0x22
    ObjectArrayDump {
        array_id: u64,
        trace_serial: u32,
        array_class_id: u64,
        elements: Vec<u64>,
    },
    /// 0x23
    PrimitiveArrayDump {
        array_id: u64,
        trace_serial: u32,
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
