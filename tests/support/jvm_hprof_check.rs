//! A full parse of a binary HPROF file with the independent `jvm-hprof` crate:
//! every record, every heap sub-record, and every instance's field bytes
//! against its class chain. Used by tests that must show other readers accept
//! our files.

use std::collections::{BTreeMap, HashMap};

use jvm_hprof::heap_dump::{FieldType, SubRecord};
use jvm_hprof::{Id, IdSize, RecordTag, parse_hprof};

/// What `parse_hprof_fully` saw: record counts by tag, heap sub-record counts by kind.
#[derive(Debug, Default)]
pub struct HprofCounts {
    pub label: String,
    pub id_size: u32,
    pub records: BTreeMap<String, u64>,
    pub sub_records: BTreeMap<String, u64>,
}

/// Parses a binary HPROF file completely with the independent `jvm-hprof`
/// 0.1.0 reader: every record, every heap-dump sub-record, every field,
/// element, frame id and instance field value (checked against its class
/// chain). Returns the counts, or an error naming the first problem. Note
/// that jvm-hprof *panics* (rather than erring) on an unknown record or
/// sub-record tag, an id size other than 4/8, a field type it does not know
/// (e.g. 1), a non-empty constant pool and a frame line number of 0 or < -3.
pub fn parse_hprof_fully(bytes: &[u8]) -> Result<HprofCounts, String> {
    let hprof = parse_hprof(bytes).map_err(|e| format!("header: {e:?}"))?;
    let header = hprof.header();
    let id_size = header.id_size();
    let mut counts = HprofCounts {
        label: header
            .label()
            .map_err(|e| format!("label: {e}"))?
            .to_string(),
        id_size: match id_size {
            IdSize::U32 => 4,
            IdSize::U64 => 8,
        },
        ..HprofCounts::default()
    };
    // class object id -> (super class id, instance field types), to check instances.
    let mut classes: HashMap<Id, (Option<Id>, Vec<FieldType>)> = HashMap::new();
    // (instance id, class id, field bytes) checked once every class is known.
    let mut instances: Vec<(Id, Id, &[u8])> = Vec::new();

    for (index, record) in hprof.records_iter().enumerate() {
        // The iterator yields the same error forever: stop at the first one.
        let record = record.map_err(|e| format!("record #{index}: {e:?}"))?;
        let tag = record.tag();
        *counts.records.entry(format!("{tag:?}")).or_default() += 1;
        let at = |what: &str| format!("record #{index} ({tag:?}): {what}");
        match tag {
            RecordTag::Utf8 => {
                let utf8 = record
                    .as_utf_8()
                    .unwrap()
                    .map_err(|e| at(&format!("{e:?}")))?;
                // Modified UTF-8 is not always valid UTF-8: only require it to be there.
                let _ = (utf8.name_id(), utf8.text());
            }
            RecordTag::LoadClass => {
                let lc = record
                    .as_load_class()
                    .unwrap()
                    .map_err(|e| at(&format!("{e:?}")))?;
                let _ = (lc.class_serial(), lc.class_obj_id(), lc.class_name_id());
            }
            RecordTag::StackFrame => {
                let f = record
                    .as_stack_frame()
                    .unwrap()
                    .map_err(|e| at(&format!("{e:?}")))?;
                let _ = (f.method_name_id(), f.class_serial(), f.line_num());
            }
            RecordTag::StackTrace => {
                let t = record
                    .as_stack_trace()
                    .unwrap()
                    .map_err(|e| at(&format!("{e:?}")))?;
                for id in t.frame_ids() {
                    id.map_err(|e| at(&format!("frame id: {e:?}")))?;
                }
            }
            RecordTag::HeapDump | RecordTag::HeapDumpSegment => {
                let segment = record
                    .as_heap_dump_segment()
                    .unwrap()
                    .map_err(|e| at(&format!("{e:?}")))?;
                for (sub_index, sub) in segment.sub_records().enumerate() {
                    let sub = sub.map_err(|e| at(&format!("sub-record #{sub_index}: {e:?}")))?;
                    *counts.sub_records.entry(format!("{sub:?}")).or_default() += 1;
                    let bad = |e: String| at(&format!("sub-record #{sub_index}: {e}"));
                    match sub {
                        SubRecord::Class(class) => {
                            for f in class.static_fields() {
                                f.map_err(|e| bad(format!("static field: {e:?}")))?;
                            }
                            let mut types = Vec::new();
                            for f in class.instance_field_descriptors() {
                                types.push(
                                    f.map_err(|e| bad(format!("field descriptor: {e:?}")))?
                                        .field_type(),
                                );
                            }
                            classes.insert(class.obj_id(), (class.super_class_obj_id(), types));
                        }
                        SubRecord::Instance(instance) => {
                            instances.push((
                                instance.obj_id(),
                                instance.class_obj_id(),
                                instance.fields(),
                            ));
                        }
                        SubRecord::ObjectArray(array) => {
                            for e in array.elements(id_size) {
                                e.map_err(|e| bad(format!("element: {e:?}")))?;
                            }
                        }
                        SubRecord::PrimitiveArray(array) => {
                            use jvm_hprof::heap_dump::PrimitiveArrayType as P;
                            let errors = match array.primitive_type() {
                                P::Boolean => {
                                    array.booleans().unwrap().filter(Result::is_err).count()
                                }
                                P::Char => array.chars().unwrap().filter(Result::is_err).count(),
                                P::Float => array.floats().unwrap().filter(Result::is_err).count(),
                                P::Double => {
                                    array.doubles().unwrap().filter(Result::is_err).count()
                                }
                                P::Byte => array.bytes().unwrap().filter(Result::is_err).count(),
                                P::Short => array.shorts().unwrap().filter(Result::is_err).count(),
                                P::Int => array.ints().unwrap().filter(Result::is_err).count(),
                                P::Long => array.longs().unwrap().filter(Result::is_err).count(),
                            };
                            if errors > 0 {
                                return Err(bad(format!("{errors} bad primitive array elements")));
                            }
                        }
                        // Roots: a fixed layout, fully read by the sub-record parser.
                        _ => {}
                    }
                }
            }
            // jvm-hprof 0.1.0 frames these (tag, time, length, body) but does
            // not decode their bodies: ControlSettings, CpuSamples, AllocSites,
            // StartThread, EndThread, HeapSummary, UnloadClass, HeapDumpEnd.
            _ => {}
        }
    }

    // Every instance's field bytes must be exactly its class chain's fields.
    for (obj, class, mut fields) in instances {
        let mut next = Some(class);
        while let Some(class_id) = next {
            let (super_id, types) = classes
                .get(&class_id)
                .ok_or_else(|| format!("instance {obj}: class {class_id} has no CLASS DUMP"))?;
            for ty in types {
                let (rest, _) = ty
                    .parse_value(fields, id_size)
                    .map_err(|e| format!("instance {obj}: field of class {class_id}: {e:?}"))?;
                fields = rest;
            }
            next = *super_id;
        }
        if !fields.is_empty() {
            return Err(format!(
                "instance {obj} of class {class}: {} bytes left after its fields",
                fields.len()
            ));
        }
    }
    Ok(counts)
}
