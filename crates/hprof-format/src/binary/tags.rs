//! Record tags of the binary format, for top-level records and for heap dump
//! sub-records, as HPROF's hprof_b_spec.h numbers them.

/// 0x01 STRING IN UTF8.
pub const UTF8: u8 = 0x01;
/// 0x02 LOAD CLASS.
pub const LOAD_CLASS: u8 = 0x02;
/// 0x03 UNLOAD CLASS.
pub const UNLOAD_CLASS: u8 = 0x03;
/// 0x04 STACK FRAME.
pub const FRAME: u8 = 0x04;
/// 0x05 STACK TRACE.
pub const TRACE: u8 = 0x05;
/// 0x06 ALLOC SITES.
pub const ALLOC_SITES: u8 = 0x06;
/// 0x07 HEAP SUMMARY.
pub const HEAP_SUMMARY: u8 = 0x07;
/// 0x0A START THREAD.
pub const START_THREAD: u8 = 0x0A;
/// 0x0B END THREAD.
pub const END_THREAD: u8 = 0x0B;
/// 0x0C HEAP DUMP (a whole dump in one record).
pub const HEAP_DUMP: u8 = 0x0C;
/// 0x0D CPU SAMPLES.
pub const CPU_SAMPLES: u8 = 0x0D;
/// 0x0E CONTROL SETTINGS.
pub const CONTROL_SETTINGS: u8 = 0x0E;
/// 0x1C HEAP DUMP SEGMENT (1.0.2).
pub const HEAP_DUMP_SEGMENT: u8 = 0x1C;
/// 0x2C HEAP DUMP END (1.0.2, after the last segment).
pub const HEAP_DUMP_END: u8 = 0x2C;

/// Printable name of a top-level tag; `None` for a tag this crate does not know.
pub fn name(tag: u8) -> Option<&'static str> {
    Some(match tag {
        UTF8 => "UTF8",
        LOAD_CLASS => "LOAD CLASS",
        UNLOAD_CLASS => "UNLOAD CLASS",
        FRAME => "FRAME",
        TRACE => "TRACE",
        ALLOC_SITES => "ALLOC SITES",
        HEAP_SUMMARY => "HEAP SUMMARY",
        START_THREAD => "START THREAD",
        END_THREAD => "END THREAD",
        HEAP_DUMP => "HEAP DUMP",
        CPU_SAMPLES => "CPU SAMPLES",
        CONTROL_SETTINGS => "CONTROL SETTINGS",
        HEAP_DUMP_SEGMENT => "HEAP DUMP SEGMENT",
        HEAP_DUMP_END => "HEAP DUMP END",
        _ => return None,
    })
}

/// Tags of the sub-records inside HEAP DUMP and HEAP DUMP SEGMENT bodies.
pub mod heap {
    /// 0xFF ROOT UNKNOWN.
    pub const ROOT_UNKNOWN: u8 = 0xFF;
    /// 0x01 ROOT JNI GLOBAL.
    pub const ROOT_JNI_GLOBAL: u8 = 0x01;
    /// 0x02 ROOT JNI LOCAL.
    pub const ROOT_JNI_LOCAL: u8 = 0x02;
    /// 0x03 ROOT JAVA FRAME.
    pub const ROOT_JAVA_FRAME: u8 = 0x03;
    /// 0x04 ROOT NATIVE STACK.
    pub const ROOT_NATIVE_STACK: u8 = 0x04;
    /// 0x05 ROOT STICKY CLASS.
    pub const ROOT_STICKY_CLASS: u8 = 0x05;
    /// 0x06 ROOT THREAD BLOCK.
    pub const ROOT_THREAD_BLOCK: u8 = 0x06;
    /// 0x07 ROOT MONITOR USED.
    pub const ROOT_MONITOR_USED: u8 = 0x07;
    /// 0x08 ROOT THREAD OBJECT.
    pub const ROOT_THREAD_OBJ: u8 = 0x08;
    /// 0x20 CLASS DUMP.
    pub const CLASS_DUMP: u8 = 0x20;
    /// 0x21 INSTANCE DUMP.
    pub const INSTANCE_DUMP: u8 = 0x21;
    /// 0x22 OBJECT ARRAY DUMP.
    pub const OBJ_ARRAY_DUMP: u8 = 0x22;
    /// 0x23 PRIMITIVE ARRAY DUMP.
    pub const PRIM_ARRAY_DUMP: u8 = 0x23;

    /// Printable name of a heap sub-record tag; `None` for an unknown tag.
    pub fn name(tag: u8) -> Option<&'static str> {
        Some(match tag {
            ROOT_UNKNOWN => "ROOT UNKNOWN",
            ROOT_JNI_GLOBAL => "ROOT JNI GLOBAL",
            ROOT_JNI_LOCAL => "ROOT JNI LOCAL",
            ROOT_JAVA_FRAME => "ROOT JAVA FRAME",
            ROOT_NATIVE_STACK => "ROOT NATIVE STACK",
            ROOT_STICKY_CLASS => "ROOT STICKY CLASS",
            ROOT_THREAD_BLOCK => "ROOT THREAD BLOCK",
            ROOT_MONITOR_USED => "ROOT MONITOR USED",
            ROOT_THREAD_OBJ => "ROOT THREAD OBJECT",
            CLASS_DUMP => "CLASS DUMP",
            INSTANCE_DUMP => "INSTANCE DUMP",
            OBJ_ARRAY_DUMP => "OBJECT ARRAY DUMP",
            PRIM_ARRAY_DUMP => "PRIMITIVE ARRAY DUMP",
            _ => return None,
        })
    }
}
