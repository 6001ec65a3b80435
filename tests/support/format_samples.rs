//! Sample files with every record and section variant, written by our own
//! writers: the round-trip tests compare them after parsing, the fuzz
//! targets mutate them.
#![allow(dead_code)]

use hprof_rs::format::ascii::sections::*;
use hprof_rs::format::ascii::writer as ascii_writer;
use hprof_rs::format::binary::records::*;
use hprof_rs::format::binary::writer::{encode_header, encode_record};
/// An identifier that needs all `id_size` bytes.
pub fn wide_id(id_size: u32, low: u64) -> u64 {
    if id_size == 8 {
        0x0000_7F00_0000_0000 | low
    } else {
        0x5000_0000 | low
    }
}

pub fn primitive_arrays() -> Vec<PrimitiveArray> {
    vec![
        PrimitiveArray::Boolean(vec![true, false, true]),
        PrimitiveArray::Char(vec![0x41, 0xFFFF]),
        PrimitiveArray::Float(vec![1.5f32.to_bits(), f32::NAN.to_bits()]),
        PrimitiveArray::Double(vec![(-2.25f64).to_bits()]),
        PrimitiveArray::Byte(vec![-128, 0, 127]),
        PrimitiveArray::Short(vec![-1, 300]),
        PrimitiveArray::Int(vec![i32::MIN, 7]),
        PrimitiveArray::Long(vec![i64::MAX]),
        PrimitiveArray::Int(vec![]),
    ]
}

/// One value of every basic type.
pub fn values(id_size: u32) -> Vec<Value> {
    vec![
        Value::Object(wide_id(id_size, 9)),
        Value::Boolean(true),
        Value::Char(0x263A),
        Value::Float(0.1f32.to_bits()),
        Value::Double(f64::MAX.to_bits()),
        Value::Byte(-3),
        Value::Short(i16::MIN),
        Value::Int(-40),
        Value::Long(-5_000_000_000),
    ]
}

pub fn class_dump(id_size: u32) -> HeapRecord {
    let id = |low| wide_id(id_size, low);
    HeapRecord::ClassDump {
        class_id: id(0x10),
        trace_serial: 300000,
        super_id: id(0x11),
        loader_id: 0,
        signers_id: id(0x12),
        protection_domain_id: id(0x13),
        reserved1: 0,
        reserved2: 0,
        instance_size: 24,
        constant_pool: values(id_size)
            .into_iter()
            .enumerate()
            .map(|(i, value)| ConstantPoolEntry {
                index: i as u16 + 1,
                value,
            })
            .collect(),
        static_fields: values(id_size)
            .into_iter()
            .enumerate()
            .map(|(i, value)| StaticField {
                name_id: id(0x100 + i as u64),
                value,
            })
            .collect(),
        instance_fields: [
            BasicType::Object,
            BasicType::Int,
            BasicType::Long,
            BasicType::Boolean,
        ]
        .into_iter()
        .enumerate()
        .map(|(i, field_type)| FieldDescriptor {
            name_id: id(0x200 + i as u64),
            field_type,
        })
        .collect(),
    }
}

/// Every heap sub-record variant, and every primitive array type.
pub fn heap_records(id_size: u32) -> Vec<HeapRecord> {
    let id = |low| wide_id(id_size, low);
    let mut records = vec![
        HeapRecord::RootThreadObject {
            object_id: 0,
            thread_serial: 200000,
            trace_serial: 300000,
        },
        HeapRecord::RootUnknown { object_id: id(1) },
        HeapRecord::RootJniGlobal {
            object_id: id(2),
            jni_global_ref_id: 1,
        },
        HeapRecord::RootJniLocal {
            object_id: id(3),
            thread_serial: 200001,
            frame_depth: u32::MAX,
        },
        HeapRecord::RootJavaFrame {
            object_id: id(4),
            thread_serial: 200001,
            frame_depth: 2,
        },
        HeapRecord::RootNativeStack {
            object_id: id(5),
            thread_serial: 200002,
        },
        HeapRecord::RootStickyClass { object_id: id(6) },
        HeapRecord::RootThreadBlock {
            object_id: id(7),
            thread_serial: 200001,
        },
        HeapRecord::RootMonitorUsed { object_id: id(8) },
        class_dump(id_size),
        HeapRecord::InstanceDump {
            object_id: id(0x20),
            trace_serial: 300001,
            class_id: id(0x10),
            values: vec![
                1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23,
                24,
            ],
        },
        HeapRecord::InstanceDump {
            object_id: id(0x21),
            trace_serial: 300001,
            class_id: id(0x10),
            values: vec![],
        },
        HeapRecord::ObjectArrayDump {
            array_id: id(0x30),
            trace_serial: 300002,
            array_class_id: id(0x31),
            elements: vec![id(0x20), 0, id(0x21)],
        },
    ];
    records.extend(
        primitive_arrays()
            .into_iter()
            .enumerate()
            .map(|(i, elements)| HeapRecord::PrimitiveArrayDump {
                array_id: id(0x40 + i as u64),
                trace_serial: 300003,
                elements,
            }),
    );
    records
}

/// Every top-level record variant.
pub fn records(id_size: u32) -> Vec<Record> {
    let id = |low| wide_id(id_size, low);
    let site = |array_type, class_serial| AllocSite {
        array_type,
        class_serial,
        trace_serial: 300004,
        live_bytes: 99016,
        live_instances: 387,
        allocated_bytes: 99016,
        allocated_instances: 387,
    };
    let bodies = vec![
        RecordBody::ControlSettings { flags: 3, depth: 4 },
        RecordBody::Utf8 {
            id: id(0xA1),
            text: "java.lang.String[]".into(),
        },
        RecordBody::Utf8 {
            id: id(0xA2),
            text: vec![],
        },
        RecordBody::LoadClass {
            class_serial: 100001,
            class_id: id(0x10),
            trace_serial: 300000,
            name_id: id(0xA1),
        },
        RecordBody::UnloadClass {
            class_serial: 100001,
        },
        RecordBody::Frame {
            frame_id: id(0x70),
            method_name_id: id(0xA3),
            signature_id: id(0xA4),
            source_file_id: 0,
            class_serial: 100001,
            line: -3,
        },
        RecordBody::Trace {
            trace_serial: 300004,
            thread_serial: 200001,
            frame_ids: vec![id(0x70), id(0x71)],
        },
        RecordBody::Trace {
            trace_serial: 300000,
            thread_serial: 0,
            frame_ids: vec![],
        },
        RecordBody::AllocSites {
            flags: 0x2,
            cutoff: 0xEB1C_432D,
            total_live_bytes: 1_000_000,
            total_live_instances: 5000,
            total_allocated_bytes: 1 << 40,
            total_allocated_instances: 1 << 33,
            sites: vec![site(0, 100002), site(8, 100003), site(2, 0)],
        },
        RecordBody::HeapSummary {
            live_bytes: 1,
            live_instances: 2,
            allocated_bytes: u64::MAX,
            allocated_instances: 4,
        },
        RecordBody::StartThread {
            thread_serial: 200001,
            thread_id: id(0x50),
            trace_serial: 300000,
            name_id: id(0xA5),
            group_name_id: id(0xA6),
            parent_group_name_id: 0,
        },
        RecordBody::EndThread {
            thread_serial: 200001,
        },
        RecordBody::HeapDump(heap_records(id_size)),
        RecordBody::HeapDumpSegment(heap_records(id_size)),
        RecordBody::HeapDumpSegment(vec![]),
        RecordBody::HeapDumpEnd,
        RecordBody::CpuSamples {
            total: 950,
            samples: vec![
                CpuSample {
                    count: 201,
                    trace_serial: 300142,
                },
                CpuSample {
                    count: 1,
                    trace_serial: 3,
                },
            ],
        },
        RecordBody::Unknown {
            tag: 0x42,
            body: vec![1, 2, 3],
        },
    ];
    bodies
        .into_iter()
        .enumerate()
        .map(|(i, body)| Record {
            time: i as u32 * 1000,
            body,
        })
        .collect()
}

pub fn encode_file(header: &FileHeader, records: &[Record]) -> Vec<u8> {
    let mut bytes = Vec::new();
    encode_header(header, &mut bytes);
    records
        .iter()
        .for_each(|record| encode_record(record, header.id_size, &mut bytes));
    bytes
}

pub fn sample_file(id_size: u32) -> Vec<u8> {
    let header = FileHeader {
        version: Version::V102,
        id_size,
        timestamp_ms: 1_616_838_707_000,
    };
    encode_file(&header, &records(id_size))
}

pub fn frame(class_name: &str, method_name: &str, source_file: &str, line: LineInfo) -> TraceFrame {
    TraceFrame {
        class_name: class_name.into(),
        method_name: method_name.into(),
        source_file: source_file.into(),
        line,
    }
}

pub fn heap_dump() -> HeapDumpSection {
    let roots = [
        HeapRoot::Thread {
            object_id: 0,
            thread_serial: 200000,
            trace_serial: 300000,
        },
        HeapRoot::ThreadBlock {
            object_id: 0x50000114,
            thread_serial: 200002,
        },
        HeapRoot::JniGlobal {
            object_id: 0x50000006,
            ref_id: 0x1f,
            trace_serial: 300000,
        },
        HeapRoot::JniLocal {
            object_id: 0x50000007,
            thread_serial: 200002,
            frame: -1,
        },
        HeapRoot::JavaStack {
            object_id: 0x50008c6f,
            thread_serial: 200002,
            frame: 5,
        },
        HeapRoot::NativeStack {
            object_id: 0x50000008,
            thread_serial: 200002,
        },
        HeapRoot::SystemClass {
            object_id: 0x50000009,
            name: "java.util.Map$Entry".into(),
        },
        HeapRoot::BusyMonitor {
            object_id: 0x5000000a,
        },
        HeapRoot::Unknown {
            object_id: 0x5000000b,
        },
    ];
    let mut entries: Vec<HeapEntry> = roots.into_iter().map(HeapEntry::Root).collect();
    entries.extend([
        HeapEntry::Object {
            object_id: 0x50000114,
            size: 96,
            trace_serial: 300001,
            class_name: "java.lang.Thread".into(),
            class_id: 0x50000106,
            fields: vec![
                ("name".into(), 0x50000116),
                ("eightChr".into(), 0x50000117),
                ("contextClassLoader".into(), 0x50008c53),
            ],
        },
        HeapEntry::Object {
            object_id: 0x50000115,
            size: 16,
            trace_serial: 300000,
            class_name: "java.lang.Object".into(),
            class_id: 0x50000001,
            fields: vec![],
        },
        HeapEntry::ObjectArray {
            object_id: 0x50008c6f,
            size: 16,
            trace_serial: 300000,
            length: 3,
            array_class_name: "java.lang.String[]".into(),
            array_class_id: 0x5000008e,
            elements: vec![(0, 0x500007a5), (2, 0x500007a6)],
        },
        HeapEntry::PrimitiveArray {
            object_id: 0x50000abc,
            size: 20,
            trace_serial: 300123,
            length: 10,
            array_class_name: "char[]".into(),
        },
        HeapEntry::Class {
            object_id: 0x5000008e,
            name: "java.lang.String[]".into(),
            trace_serial: 300000,
            super_id: 0x50000012,
            loader_id: 0x50000013,
            signers_id: 0x50000014,
            domain_id: 0x50000015,
            statics: vec![("serialPersistentFields".into(), 0x50000016)],
            constant_pool: vec![(3, 0x50000017), (40, 0x50000018)],
        },
        HeapEntry::Class {
            object_id: 0x50000001,
            name: "java.lang.Object".into(),
            trace_serial: 300000,
            super_id: 0,
            loader_id: 0,
            signers_id: 0,
            domain_id: 0,
            statics: vec![],
            constant_pool: vec![],
        },
    ]);
    HeapDumpSection {
        objects: 39793,
        bytes: 2628264,
        created: "Wed Oct  4 13:54:03 2006".into(),
        entries,
    }
}

/// Every section variant, in an order a real file could have.
pub fn sections() -> Vec<Section> {
    let created = || "Sat Mar 27 10:51:58 2021".to_string();
    let site = |rank, self_pct: f64, accum: f64, name: &str| SiteRow {
        rank,
        self_percent: self_pct,
        accum_percent: accum,
        live_bytes: 99016,
        live_objects: 387,
        allocated_bytes: 1_234_567_890,
        allocated_objects: 1_234_567,
        trace_serial: 300938,
        class_name: name.into(),
    };
    let cpu_row = |rank, method: Option<&str>| CpuRow {
        rank,
        self_percent: 21.16,
        accum_percent: 41.89,
        count: 201,
        trace_serial: 300142,
        method: method.map(str::to_string),
    };
    vec![
        Section::Header {
            version: "JAVA PROFILE 1.0.1".into(),
            created: "Mon Jun  9 20:33:05 2014".into(),
            prelude:
                "Copyright (c) 2003, 2005, Oracle and/or its affiliates. All rights reserved.\n\n\
                      CLS     classes \nHeader for -agentlib:hprof (or -Xrunhprof) ASCII Output\n"
                    .into(),
        },
        Section::ThreadStart {
            object_id: 0x5000018d,
            thread_serial: 200001,
            name: "main".into(),
            group: "main".into(),
        },
        Section::ThreadStart {
            object_id: 0,
            thread_serial: 200002,
            name: String::new(),
            group: String::new(),
        },
        Section::ThreadEnd {
            thread_serial: 200001,
        },
        Section::MonitorWait {
            signature: "Ljava/lang/Object;".into(),
            timeout_ms: 0,
            thread_serial: 200001,
        },
        Section::MonitorWaited {
            signature: "Ljava/lang/Object;".into(),
            waited_ms: 1002,
            thread_serial: 200001,
        },
        Section::MonitorWait {
            signature: "LX;".into(),
            timeout_ms: -1,
            thread_serial: 0,
        },
        Section::Trace(TraceSection {
            serial: 300000,
            thread_serial: None,
            phase: None,
            frames: vec![],
        }),
        Section::Trace(TraceSection {
            serial: 301366,
            thread_serial: Some(200009),
            phase: Some("live".into()),
            frames: vec![
                frame(
                    "sun.nio.ch.EPollArrayWrapper",
                    "epollWait",
                    "EPollArrayWrapper.java",
                    LineInfo::Unknown,
                ),
                frame(
                    "sun.nio.ch.EPollArrayWrapper",
                    "poll",
                    "EPollArrayWrapper.java",
                    LineInfo::Line(269),
                ),
                frame("a.B$C", "<init>", "<Unknown Source>", LineInfo::Compiled),
                frame("a.B$C", "<Unknown Method>", "B.java", LineInfo::Native),
            ],
        }),
        Section::MonitorDump {
            threads: vec![MonitorThread {
                thread_serial: 200001,
                trace_serial: 300012,
                status: "native|R".into(),
            }],
            monitors: vec![
                MonitorInfo {
                    signature: "Ljava/lang/Object;".into(),
                    owner_thread_serial: 200001,
                    entry_count: 2,
                    waiting_to_enter: vec![200003, 200004],
                    waiting_to_be_notified: vec![200005],
                },
                MonitorInfo {
                    signature: "[I".into(),
                    owner_thread_serial: 0,
                    entry_count: 0,
                    waiting_to_enter: vec![],
                    waiting_to_be_notified: vec![0],
                },
            ],
        },
        Section::MonitorDump {
            threads: vec![],
            monitors: vec![],
        },
        Section::MonitorTime {
            total_ms: 3,
            created: created(),
            rows: vec![MonitorTimeRow {
                rank: 1,
                self_percent: 66.67,
                accum_percent: 66.67,
                count: 2,
                trace_serial: 300020,
                monitor: "java.lang.Object".into(),
            }],
        },
        Section::MonitorTime {
            total_ms: 0,
            created: created(),
            rows: vec![],
        },
        Section::MonitorHolders(vec![
            MonitorHolderRow {
                rank: 1,
                trace_serial: 300020,
                holder_trace_serial: 300021,
                seen: 12,
                sampled: 16,
                monitor: "java.lang.Object".into(),
            },
            MonitorHolderRow {
                rank: 3,
                trace_serial: 1234567,
                holder_trace_serial: 300000,
                seen: 1,
                sampled: 1,
                monitor: "a.B$C".into(),
            },
        ]),
        Section::MonitorHolders(vec![]),
        Section::HeapDump(heap_dump()),
        Section::Sites(SitesSection {
            ordered_by: "live bytes".into(),
            created: created(),
            rows: vec![
                site(1, 7.74, 7.74, "byte[]"),
                site(2, 0.0, 100.0, "java.lang.String$CaseInsensitiveComparator"),
            ],
        }),
        Section::SitesTotals(SitesTotals {
            all: SiteCounts {
                rows: 40,
                live_bytes: 99016,
                live_objects: 387,
                allocated_bytes: 12_000_000_000,
                allocated_objects: 3_000_000,
            },
            below_cutoff: SiteCounts {
                rows: 38,
                live_bytes: 2,
                live_objects: 1,
                allocated_bytes: 11_000_000_000,
                allocated_objects: 2_999_000,
            },
        }),
        Section::SitesTotals(SitesTotals::default()),
        Section::Sites(SitesSection {
            ordered_by: "allocated bytes".into(),
            created: created(),
            rows: vec![],
        }),
        Section::Cpu(CpuSection {
            title: CpuTitle::Samples,
            total: 950,
            created: created(),
            rows: vec![
                cpu_row(1, Some("onitama.ai.Searcher$MoveGenerator.generate")),
                cpu_row(2, None),
            ],
        }),
        Section::Cpu(CpuSection {
            title: CpuTitle::TimeMs,
            total: 0,
            created: created(),
            rows: vec![],
        }),
        Section::LockTime {
            total_ms: 2371,
            created: created(),
            rows: vec![MonitorTimeRow {
                rank: 1,
                self_percent: 95.0,
                accum_percent: 95.0,
                count: 150,
                trace_serial: 300123,
                monitor: "java.util.concurrent.locks.ReentrantLock".into(),
            }],
        },
        Section::LockTime {
            total_ms: 0,
            created: created(),
            rows: vec![],
        },
        Section::OldProf(vec![
            OldProfRow {
                count: 12,
                callee: Some("java.lang.String.charAt(I)C".into()),
                caller: None,
                time: 3,
            },
            OldProfRow {
                count: 1,
                callee: None,
                caller: Some("A.b()V".into()),
                time: 0,
            },
        ]),
        Section::OldProf(vec![]),
    ]
}

pub fn write_all(sections: &[Section]) -> Vec<u8> {
    let mut out = Vec::new();
    sections
        .iter()
        .for_each(|section| ascii_writer::write_section(section, &mut out));
    out
}
