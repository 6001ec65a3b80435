//! Encoding binary records.
//!
//! Everything is appended to a `Vec<u8>`; the caller decides when to flush it.
//! Byte order is decided in one place, [`crate::big_endian`].
use super::records::*;

pub use super::tags;

/// Size of the fixed part of every top-level record: u1 tag, u4 time, u4 length.
pub const RECORD_HEADER_LEN: usize = 9;

pub use crate::big_endian::BigEndianOut;

/// Append the file header (`JAVA PROFILE 1.0.x\0`, u4 id size, u8 time stamp).
pub fn encode_header(header: &FileHeader, out: &mut Vec<u8>) {
    out.extend_from_slice(header.version.header_text().as_bytes());
    out.put_u1(0);
    out.put_u4(header.id_size);
    out.put_u8(header.timestamp_ms);
}

/// Append the 9-byte header of a top-level record. A streaming writer uses
/// this directly when it knows the body length before writing the body.
pub fn encode_record_header(tag: u8, time: u32, length: u32, out: &mut Vec<u8>) {
    out.put_u1(tag);
    out.put_u4(time);
    out.put_u4(length);
}

/// Append one record (tag, time, length, body) with identifiers of `id_size` bytes.
///
/// Panics if the body is longer than `u32::MAX` bytes, which the format cannot express.
pub fn encode_record(record: &Record, id_size: u32, out: &mut Vec<u8>) {
    let start = out.len();
    // The length is only known after the body is written: write 0, patch later.
    encode_record_header(record.body.tag(), record.time, 0, out);
    encode_body(&record.body, id_size, out);
    let length = out.len() - start - RECORD_HEADER_LEN;
    let length = u32::try_from(length).expect("record body longer than u32::MAX bytes");
    out.patch_u4(start + 5, length);
}

fn encode_body(body: &RecordBody, id_size: u32, out: &mut Vec<u8>) {
    match body {
        RecordBody::Utf8 { id, text } => {
            out.put_id(*id, id_size);
            out.extend_from_slice(text);
        }
        RecordBody::LoadClass {
            class_serial,
            class_id,
            trace_serial,
            name_id,
        } => {
            out.put_u4(*class_serial);
            out.put_id(*class_id, id_size);
            out.put_u4(*trace_serial);
            out.put_id(*name_id, id_size);
        }
        RecordBody::UnloadClass { class_serial } => out.put_u4(*class_serial),
        RecordBody::Frame {
            frame_id,
            method_name_id,
            signature_id,
            source_file_id,
            class_serial,
            line,
        } => {
            put_ids(
                out,
                id_size,
                &[*frame_id, *method_name_id, *signature_id, *source_file_id],
            );
            out.put_u4(*class_serial);
            out.put_u4(*line as u32);
        }
        RecordBody::Trace {
            trace_serial,
            thread_serial,
            frame_ids,
        } => {
            out.put_u4(*trace_serial);
            out.put_u4(*thread_serial);
            out.put_u4(count_u4(frame_ids.len()));
            put_ids(out, id_size, frame_ids);
        }
        RecordBody::AllocSites { .. } => encode_alloc_sites(body, out),
        RecordBody::HeapSummary {
            live_bytes,
            live_instances,
            allocated_bytes,
            allocated_instances,
        } => {
            out.put_u4(*live_bytes);
            out.put_u4(*live_instances);
            out.put_u8(*allocated_bytes);
            out.put_u8(*allocated_instances);
        }
        RecordBody::StartThread {
            thread_serial,
            thread_id,
            trace_serial,
            name_id,
            group_name_id,
            parent_group_name_id,
        } => {
            out.put_u4(*thread_serial);
            out.put_id(*thread_id, id_size);
            out.put_u4(*trace_serial);
            put_ids(
                out,
                id_size,
                &[*name_id, *group_name_id, *parent_group_name_id],
            );
        }
        RecordBody::EndThread { thread_serial } => out.put_u4(*thread_serial),
        RecordBody::HeapDump(records) | RecordBody::HeapDumpSegment(records) => {
            records
                .iter()
                .for_each(|rec| encode_heap_record(rec, id_size, out));
        }
        RecordBody::HeapDumpEnd => {}
        RecordBody::CpuSamples { total, samples } => {
            out.put_u4(*total);
            out.put_u4(count_u4(samples.len()));
            for sample in samples {
                out.put_u4(sample.count);
                out.put_u4(sample.trace_serial);
            }
        }
        RecordBody::ControlSettings { flags, depth } => {
            out.put_u4(*flags);
            out.put_u2(*depth);
        }
        RecordBody::Unknown { body, .. } => out.extend_from_slice(body),
    }
}

/// Append several identifiers in a row.
fn put_ids(out: &mut Vec<u8>, id_size: u32, ids: &[u64]) {
    ids.iter().for_each(|id| out.put_id(*id, id_size));
}

fn encode_alloc_sites(body: &RecordBody, out: &mut Vec<u8>) {
    let RecordBody::AllocSites {
        flags,
        cutoff,
        total_live_bytes,
        total_live_instances,
        total_allocated_bytes,
        total_allocated_instances,
        sites,
    } = body
    else {
        unreachable!("encode_alloc_sites called with another record");
    };
    out.put_u2(*flags);
    out.put_u4(*cutoff);
    out.put_u4(*total_live_bytes);
    out.put_u4(*total_live_instances);
    out.put_u8(*total_allocated_bytes);
    out.put_u8(*total_allocated_instances);
    out.put_u4(count_u4(sites.len()));
    for site in sites {
        out.put_u1(site.array_type);
        out.put_u4(site.class_serial);
        out.put_u4(site.trace_serial);
        out.put_u4(site.live_bytes);
        out.put_u4(site.live_instances);
        out.put_u4(site.allocated_bytes);
        out.put_u4(site.allocated_instances);
    }
}

/// Append one heap dump sub-record (u1 tag and body) as it appears inside a
/// HEAP DUMP or HEAP DUMP SEGMENT body.
pub fn encode_heap_record(rec: &HeapRecord, id_size: u32, out: &mut Vec<u8>) {
    out.put_u1(rec.tag());
    match rec {
        HeapRecord::RootUnknown { object_id }
        | HeapRecord::RootStickyClass { object_id }
        | HeapRecord::RootMonitorUsed { object_id } => out.put_id(*object_id, id_size),
        HeapRecord::RootJniGlobal {
            object_id,
            jni_global_ref_id,
        } => {
            out.put_id(*object_id, id_size);
            out.put_id(*jni_global_ref_id, id_size);
        }
        HeapRecord::RootJniLocal {
            object_id,
            thread_serial,
            frame_depth,
        }
        | HeapRecord::RootJavaFrame {
            object_id,
            thread_serial,
            frame_depth,
        } => {
            out.put_id(*object_id, id_size);
            out.put_u4(*thread_serial);
            out.put_u4(*frame_depth);
        }
        HeapRecord::RootNativeStack {
            object_id,
            thread_serial,
        }
        | HeapRecord::RootThreadBlock {
            object_id,
            thread_serial,
        } => {
            out.put_id(*object_id, id_size);
            out.put_u4(*thread_serial);
        }
        HeapRecord::RootThreadObject {
            object_id,
            thread_serial,
            trace_serial,
        } => {
            out.put_id(*object_id, id_size);
            out.put_u4(*thread_serial);
            out.put_u4(*trace_serial);
        }
        HeapRecord::ClassDump { .. } => encode_class_dump(rec, id_size, out),
        HeapRecord::InstanceDump {
            object_id,
            trace_serial,
            class_id,
            values,
        } => {
            out.put_id(*object_id, id_size);
            out.put_u4(*trace_serial);
            out.put_id(*class_id, id_size);
            out.put_u4(count_u4(values.len()));
            out.extend_from_slice(values);
        }
        HeapRecord::ObjectArrayDump {
            array_id,
            trace_serial,
            array_class_id,
            elements,
        } => {
            out.put_id(*array_id, id_size);
            out.put_u4(*trace_serial);
            out.put_u4(count_u4(elements.len()));
            out.put_id(*array_class_id, id_size);
            put_ids(out, id_size, elements);
        }
        HeapRecord::PrimitiveArrayDump {
            array_id,
            trace_serial,
            elements,
        } => {
            out.put_id(*array_id, id_size);
            out.put_u4(*trace_serial);
            out.put_u4(count_u4(elements.len()));
            out.put_u1(elements.element_type() as u8);
            encode_primitive_elements(elements, out);
        }
    }
}

fn encode_class_dump(rec: &HeapRecord, id_size: u32, out: &mut Vec<u8>) {
    let HeapRecord::ClassDump {
        class_id,
        trace_serial,
        super_id,
        loader_id,
        signers_id,
        protection_domain_id,
        reserved1,
        reserved2,
        instance_size,
        constant_pool,
        static_fields,
        instance_fields,
    } = rec
    else {
        unreachable!("encode_class_dump called with another sub-record");
    };
    out.put_id(*class_id, id_size);
    out.put_u4(*trace_serial);
    put_ids(
        out,
        id_size,
        &[
            *super_id,
            *loader_id,
            *signers_id,
            *protection_domain_id,
            *reserved1,
            *reserved2,
        ],
    );
    out.put_u4(*instance_size);
    out.put_u2(count_u2(constant_pool.len()));
    for entry in constant_pool {
        out.put_u2(entry.index);
        encode_typed_value(&entry.value, id_size, out);
    }
    out.put_u2(count_u2(static_fields.len()));
    for field in static_fields {
        out.put_id(field.name_id, id_size);
        encode_typed_value(&field.value, id_size, out);
    }
    out.put_u2(count_u2(instance_fields.len()));
    for field in instance_fields {
        out.put_id(field.name_id, id_size);
        out.put_u1(field.field_type as u8);
    }
}

/// Append a basic-type byte followed by the value.
fn encode_typed_value(value: &Value, id_size: u32, out: &mut Vec<u8>) {
    out.put_u1(value.basic_type() as u8);
    encode_value(value, id_size, out);
}

/// Append a value in its basic type's size (as INSTANCE DUMP field bytes use).
pub fn encode_value(value: &Value, id_size: u32, out: &mut Vec<u8>) {
    match *value {
        Value::Object(id) => out.put_id(id, id_size),
        Value::Boolean(b) => out.put_u1(u8::from(b)),
        Value::Char(c) => out.put_u2(c),
        Value::Float(bits) => out.put_u4(bits),
        Value::Double(bits) => out.put_u8(bits),
        Value::Byte(b) => out.put_u1(b as u8),
        Value::Short(s) => out.put_u2(s as u16),
        Value::Int(i) => out.put_u4(i as u32),
        Value::Long(l) => out.put_u8(l as u64),
    }
}

fn encode_primitive_elements(elements: &PrimitiveArray, out: &mut Vec<u8>) {
    match elements {
        PrimitiveArray::Boolean(v) => v.iter().for_each(|&b| out.put_u1(u8::from(b))),
        PrimitiveArray::Char(v) => v.iter().for_each(|&c| out.put_u2(c)),
        PrimitiveArray::Float(v) => v.iter().for_each(|&f| out.put_u4(f)),
        PrimitiveArray::Double(v) => v.iter().for_each(|&d| out.put_u8(d)),
        PrimitiveArray::Byte(v) => v.iter().for_each(|&b| out.put_u1(b as u8)),
        PrimitiveArray::Short(v) => v.iter().for_each(|&s| out.put_u2(s as u16)),
        PrimitiveArray::Int(v) => v.iter().for_each(|&i| out.put_u4(i as u32)),
        PrimitiveArray::Long(v) => v.iter().for_each(|&l| out.put_u8(l as u64)),
    }
}

/// A list length as the u4 count before it. Longer lists cannot be written.
fn count_u4(len: usize) -> u32 {
    u32::try_from(len).expect("list longer than u32::MAX entries")
}

/// A list length as the u2 count before it (class file limits keep real
/// constant pools and field lists below 65536).
fn count_u2(len: usize) -> u16 {
    u16::try_from(len).expect("list longer than 65535 entries")
}

#[cfg(test)]
mod tests {
    #[test]
    fn identifiers_of_any_size_are_written_without_a_panic() {
        let mut out = Vec::new();
        out.put_id(0x0102_0304_0506_0708, 2);
        out.put_id(0x0102_0304_0506_0708, 10);
        out.put_id(7, 0);
        assert_eq!(out, [7, 8, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8]);
    }

    use super::*;

    const TIME: u32 = 0x0102_0304;

    fn encoded(body: RecordBody, id_size: u32) -> Vec<u8> {
        let mut out = Vec::new();
        encode_record(&Record { time: TIME, body }, id_size, &mut out);
        out
    }

    /// The length field of an encoded record, checked against the bytes that follow it.
    fn length_of(bytes: &[u8]) -> u32 {
        let length = crate::big_endian::u4_at(bytes, 5).unwrap();
        assert_eq!(length as usize, bytes.len() - RECORD_HEADER_LEN);
        length
    }

    #[test]
    fn header_bytes() {
        let header = FileHeader {
            version: Version::V101,
            id_size: 4,
            timestamp_ms: 0x0000_0123_4567_89AB,
        };
        let mut out = Vec::new();
        encode_header(&header, &mut out);
        let mut expected = b"JAVA PROFILE 1.0.1\0".to_vec();
        expected.extend_from_slice(&[0, 0, 0, 4, 0x00, 0x00, 0x01, 0x23, 0x45, 0x67, 0x89, 0xAB]);
        assert_eq!(out, expected);

        let mut out = Vec::new();
        encode_header(
            &FileHeader {
                version: Version::V102,
                id_size: 8,
                timestamp_ms: 1,
            },
            &mut out,
        );
        assert_eq!(&out[..19], b"JAVA PROFILE 1.0.2\0");
        assert_eq!(&out[19..], &[0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 1]);
    }

    #[test]
    fn load_class_bytes_with_4_byte_ids() {
        let body = RecordBody::LoadClass {
            class_serial: 100001,
            class_id: 0x5000_0001,
            trace_serial: 300000,
            name_id: 0xA000_0002,
        };
        let bytes = encoded(body.clone(), 4);
        #[rustfmt::skip]
        let expected = [
            0x02, 0x01, 0x02, 0x03, 0x04, 0, 0, 0, 16,
            0x00, 0x01, 0x86, 0xA1, // 100001
            0x50, 0x00, 0x00, 0x01,
            0x00, 0x04, 0x93, 0xE0, // 300000
            0xA0, 0x00, 0x00, 0x02,
        ];
        assert_eq!(bytes, expected);
        assert_eq!(length_of(&encoded(body, 8)), 24);
    }

    #[test]
    fn fixed_record_lengths() {
        let frame = RecordBody::Frame {
            frame_id: 1,
            method_name_id: 2,
            signature_id: 3,
            source_file_id: 0,
            class_serial: 100000,
            line: -1,
        };
        let frame_bytes = encoded(frame.clone(), 4);
        assert_eq!(length_of(&frame_bytes), 24);
        assert_eq!(
            &frame_bytes[29..],
            &[0xFF; 4],
            "line -1 is written as a two's complement i4"
        );
        assert_eq!(length_of(&encoded(frame, 8)), 40);

        let thread = RecordBody::StartThread {
            thread_serial: 200001,
            thread_id: 5,
            trace_serial: 300000,
            name_id: 6,
            group_name_id: 7,
            parent_group_name_id: 0,
        };
        assert_eq!(length_of(&encoded(thread.clone(), 4)), 24);
        assert_eq!(length_of(&encoded(thread, 8)), 40);

        let control = encoded(RecordBody::ControlSettings { flags: 3, depth: 4 }, 4);
        assert_eq!(control, [0x0E, 1, 2, 3, 4, 0, 0, 0, 6, 0, 0, 0, 3, 0, 4]);
        assert_eq!(
            length_of(&encoded(RecordBody::UnloadClass { class_serial: 1 }, 4)),
            4
        );
        assert_eq!(
            length_of(&encoded(RecordBody::EndThread { thread_serial: 1 }, 4)),
            4
        );
        let summary = RecordBody::HeapSummary {
            live_bytes: 1,
            live_instances: 2,
            allocated_bytes: 3,
            allocated_instances: 4,
        };
        assert_eq!(length_of(&encoded(summary, 4)), 24);
        assert_eq!(
            encoded(RecordBody::HeapDumpEnd, 4),
            [0x2C, 1, 2, 3, 4, 0, 0, 0, 0]
        );
    }

    #[test]
    fn variable_record_lengths() {
        for n in [0usize, 1, 3] {
            let trace = RecordBody::Trace {
                trace_serial: 300001,
                thread_serial: 0,
                frame_ids: vec![9; n],
            };
            assert_eq!(length_of(&encoded(trace.clone(), 4)), 12 + 4 * n as u32);
            assert_eq!(length_of(&encoded(trace, 8)), 12 + 8 * n as u32);

            let samples = vec![
                CpuSample {
                    count: 1,
                    trace_serial: 300001
                };
                n
            ];
            assert_eq!(
                length_of(&encoded(RecordBody::CpuSamples { total: 5, samples }, 4)),
                8 + 8 * n as u32
            );

            let site = AllocSite {
                array_type: 0,
                class_serial: 1,
                trace_serial: 2,
                live_bytes: 3,
                live_instances: 4,
                allocated_bytes: 5,
                allocated_instances: 6,
            };
            let sites = RecordBody::AllocSites {
                flags: 0,
                cutoff: 0xEB1C_432D,
                total_live_bytes: 1,
                total_live_instances: 2,
                total_allocated_bytes: 3,
                total_allocated_instances: 4,
                sites: vec![site; n],
            };
            assert_eq!(length_of(&encoded(sites, 4)), 34 + 25 * n as u32);
        }
        let utf8 = encoded(
            RecordBody::Utf8 {
                id: 0xA000_0001,
                text: b"main".to_vec(),
            },
            4,
        );
        assert_eq!(length_of(&utf8), 8);
        assert_eq!(&utf8[13..], b"main");
    }

    #[test]
    fn heap_sub_record_bytes() {
        let mut out = Vec::new();
        let rec = HeapRecord::RootThreadObject {
            object_id: 0,
            thread_serial: 200000,
            trace_serial: 300000,
        };
        encode_heap_record(&rec, 4, &mut out);
        assert_eq!(
            out,
            [
                0x08, 0, 0, 0, 0, 0x00, 0x03, 0x0D, 0x40, 0x00, 0x04, 0x93, 0xE0
            ]
        );

        let mut out = Vec::new();
        let chars = PrimitiveArray::Char(vec![0x41, 0x42]);
        encode_heap_record(
            &HeapRecord::PrimitiveArrayDump {
                array_id: 7,
                trace_serial: 1,
                elements: chars,
            },
            8,
            &mut out,
        );
        #[rustfmt::skip]
        let expected = [
            0x23, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 1, 0, 0, 0, 2, 5, 0, 0x41, 0, 0x42,
        ];
        assert_eq!(out, expected);
    }

    #[test]
    fn record_header_alone() {
        let mut out = Vec::new();
        encode_record_header(tags::HEAP_DUMP_SEGMENT, 7, 0x0102_0304, &mut out);
        assert_eq!(out, [0x1C, 0, 0, 0, 7, 1, 2, 3, 4]);
    }
}
