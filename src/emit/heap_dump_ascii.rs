//! The ASCII HEAP DUMP section, converted from the JVM's binary heap dump
//! in two streaming passes: the first learns the names, classes, stack
//! traces and totals; the second writes one ROOT/CLS/OBJ/ARR entry per
//! heap sub-record.
//!
//! Sizes (`sz=`) are computed for the JVM's object layout (its headers,
//! references and alignment, from its flags): the JVM's dump records
//! values, not object sizes.

use super::Emitter;
use crate::format::ParseError;
use crate::format::ascii::writer::{write_heap_dump_begin, write_heap_dump_end, write_heap_entry};
use crate::format::ascii::{HeapEntry, HeapRoot, LineInfo, Section, TraceFrame, TraceSection};
use crate::format::binary::heap_walk::{self, PresentObjects};
use crate::format::binary::object_layout::ObjectLayout;
use crate::format::binary::reader::{parse_body, parse_heap_record};
use crate::format::binary::{BasicType, HeapRecord, PrimitiveArray, RecordBody, Value};
use crate::format::names::signature_to_name;
use crate::model::DumpSerials;
use crate::model::traces::EMPTY_TRACE_SERIAL;
use std::collections::HashMap;
use std::io::{Read, Seek};

/// Bytes handed to the output at a time.
const CHUNK: usize = 4 << 20;

/// A class as its CLASS DUMP describes it.
struct ClassShape {
    super_id: u64,
    /// Instance fields declared by this class: (name, type), in
    /// declaration order.
    fields: Vec<(String, BasicType)>,
    /// The dump lists the fields (and their values) in the reverse order.
    reversed: bool,
}

/// Everything the first pass learns.
#[derive(Default)]
struct Survey {
    names: HashMap<u64, String>,
    /// Class id -> dotted name.
    class_names: HashMap<u64, String>,
    /// JVM class serial -> class id.
    class_ids: HashMap<u32, u64>,
    classes: HashMap<u64, ClassShape>,
    /// JVM frame id -> frame.
    frames: HashMap<u64, TraceFrame>,
    /// The JVM's stack traces: (serial, thread serial, frame ids).
    traces: Vec<(u32, u32, Vec<u64>)>,
    instances_per_class: HashMap<u64, u64>,
    /// Every object the dump holds (references to others are left out).
    present: PresentObjects,
    objects: u64,
    array_bytes: u64,
}

impl Survey {
    fn name(&self, id: u64) -> String {
        self.names.get(&id).cloned().unwrap_or_default()
    }

    fn class_name(&self, id: u64) -> String {
        self.class_names
            .get(&id)
            .cloned()
            .unwrap_or_else(|| "Unknown_class".into())
    }

    /// `class` and its superclasses, as far as the dump describes them. A
    /// damaged dump can make the chain a cycle: no class comes twice in a
    /// chain, so it ends after as many steps as there are classes.
    fn class_chain(&self, class: u64) -> impl Iterator<Item = &ClassShape> {
        let mut next = class;
        std::iter::from_fn(move || {
            let shape = self.classes.get(&next).filter(|_| next != 0)?;
            next = shape.super_id;
            Some(shape)
        })
        .take(self.classes.len())
    }

    /// The object size of an instance of `class` laid out as `layout`.
    fn instance_size(&self, class: u64, layout: &ObjectLayout) -> u64 {
        let fields: u64 = self
            .class_chain(class)
            .flat_map(|shape| &shape.fields)
            .map(|(_, t)| t.size(layout.reference) as u64)
            .sum();
        layout.instance_size(fields)
    }
}

/// A dotted class name from the JVM dump's spelling (`java/lang/String`, `[I`).
fn dotted(name: &str) -> String {
    if name.starts_with('[') {
        signature_to_name(name)
    } else {
        name.replace('/', ".")
    }
}

/// Calls `record` for each top-level record body of the JVM's dump in
/// `input`; heap bodies go to `heap` instead, one sub-record at a time,
/// as its bytes and decoded.
fn each_record<R: Read + Seek>(
    input: &mut R,
    id_size: u32,
    mut record: impl FnMut(RecordBody),
    mut heap: impl FnMut(&[u8], HeapRecord) -> Result<(), ParseError>,
) -> Result<(), ParseError> {
    let mut stream = super::heap_dump_copy::open_dump(input, id_size)?;
    let mut buffer = Vec::new();
    while let Some(header) = stream.next_header()? {
        if header.is_heap_dump() {
            let mut walker = stream.sub_records();
            let mut at = walker.offset();
            while walker.next_into(&mut buffer)? {
                heap(&buffer, parse_heap_record(&buffer, id_size, at)?)?;
                at = walker.offset();
            }
        } else {
            super::heap_dump_copy::read_body(&mut stream, &mut buffer, header.offset)?;
            record(parse_body(header.tag, &buffer, id_size, header.offset)?);
        }
    }
    Ok(())
}

impl Emitter {
    /// Writes the JVM heap dump read from `input` as the ASCII HEAP DUMP
    /// section (preceded by the TRACE records of its thread stacks, whose
    /// serials `serials` reserves), handing bytes to `out` in chunks; `out`
    /// gives back an empty buffer to fill next. The dump is read twice
    /// (`input` is rewound).
    pub fn ascii_heap_dump<R: Read + Seek>(
        &self,
        input: &mut R,
        serials: &dyn DumpSerials,
        created: &str,
        fields_reversed: bool,
        layout: &ObjectLayout,
        out: &mut dyn FnMut(Vec<u8>) -> Vec<u8>,
    ) -> Result<(), ParseError> {
        let id_size = self.id_size;
        let mut survey = survey(input, id_size, layout)?;
        if fields_reversed {
            for shape in survey.classes.values_mut() {
                shape.fields.reverse();
                shape.reversed = true;
            }
        }

        // The JVM's thread stacks become TRACE records of this file.
        let mut trace_serials: HashMap<u32, u32> = HashMap::new();
        let mut text = Vec::new();
        for (serial, thread, frame_ids) in &survey.traces {
            if frame_ids.is_empty() && *thread == 0 {
                trace_serials.insert(*serial, EMPTY_TRACE_SERIAL);
                continue;
            }
            let ours = serials.reserve_trace();
            trace_serials.insert(*serial, ours);
            let frames = frame_ids
                .iter()
                .filter_map(|id| survey.frames.get(id).cloned())
                .collect();
            let section = TraceSection {
                serial: ours,
                thread_serial: None,
                phase: None,
                frames,
            };
            crate::format::ascii::writer::write_section(&Section::Trace(section), &mut text);
        }
        let trace = |serial: u32| {
            trace_serials
                .get(&serial)
                .copied()
                .unwrap_or(EMPTY_TRACE_SERIAL)
        };

        let instance_bytes: u64 = survey
            .instances_per_class
            .iter()
            .map(|(class, n)| n * survey.instance_size(*class, layout))
            .sum();
        write_heap_dump_begin(
            survey.objects,
            instance_bytes + survey.array_bytes,
            created,
            &mut text,
        );
        let mut sizes: HashMap<u64, u64> = HashMap::new();
        each_record(
            input,
            id_size,
            |_| {},
            |_, record| {
                let entry = to_entry(record, &survey, layout, id_size, &trace, &mut sizes);
                if let Some(entry) = entry {
                    write_heap_entry(&entry, &mut text);
                }
                if text.len() >= CHUNK {
                    text = out(std::mem::take(&mut text));
                    text.clear();
                }
                Ok(())
            },
        )?;
        write_heap_dump_end(&mut text);
        out(text);
        Ok(())
    }
}

/// The first pass.
fn survey<R: Read + Seek>(
    input: &mut R,
    id_size: u32,
    layout: &ObjectLayout,
) -> Result<Survey, ParseError> {
    let mut survey = Survey::default();
    let mut load_classes = Vec::new();
    let mut raw_frames = Vec::new();
    let mut class_dumps = Vec::new();
    each_record(
        input,
        id_size,
        |body| match body {
            RecordBody::Utf8 { id, text } => {
                survey
                    .names
                    .insert(id, String::from_utf8_lossy(&text).into_owned());
            }
            RecordBody::LoadClass {
                class_serial,
                class_id,
                name_id,
                ..
            } => load_classes.push((class_serial, class_id, name_id)),
            RecordBody::Frame {
                frame_id,
                method_name_id,
                source_file_id,
                class_serial,
                line,
                ..
            } => raw_frames.push((frame_id, method_name_id, source_file_id, class_serial, line)),
            RecordBody::Trace {
                trace_serial,
                thread_serial,
                frame_ids,
            } => survey.traces.push((trace_serial, thread_serial, frame_ids)),
            _ => {}
        },
        |bytes, record| {
            if let Some(id) = heap_walk::dumped_object(bytes, id_size) {
                survey.present.insert(id);
            }
            match record {
                HeapRecord::ClassDump {
                    class_id,
                    super_id,
                    instance_fields,
                    ..
                } => class_dumps.push((class_id, super_id, instance_fields)),
                HeapRecord::InstanceDump { class_id, .. } => {
                    survey.objects += 1;
                    *survey.instances_per_class.entry(class_id).or_default() += 1;
                }
                HeapRecord::ObjectArrayDump { elements, .. } => {
                    survey.objects += 1;
                    survey.array_bytes +=
                        layout.array_size(BasicType::Object, elements.len() as u64);
                }
                HeapRecord::PrimitiveArrayDump { elements, .. } => {
                    survey.objects += 1;
                    survey.array_bytes +=
                        layout.array_size(elements.element_type(), elements.len() as u64);
                }
                _ => {}
            }
            Ok(())
        },
    )?;
    for (serial, id, name_id) in load_classes {
        survey.class_ids.insert(serial, id);
        let name = dotted(&survey.name(name_id));
        survey.class_names.insert(id, name);
    }
    for (class_id, super_id, fields) in class_dumps {
        let fields = fields
            .iter()
            .map(|f| (survey.name(f.name_id), f.field_type))
            .collect();
        survey.classes.insert(
            class_id,
            ClassShape {
                super_id,
                fields,
                reversed: false,
            },
        );
    }
    for (frame_id, method, source, class_serial, line) in raw_frames {
        let class_name = survey
            .class_ids
            .get(&class_serial)
            .map(|id| survey.class_name(*id))
            .unwrap_or_else(|| "Unknown_class".into());
        let source = survey
            .names
            .get(&source)
            .cloned()
            .unwrap_or_else(|| "<Unknown Source>".into());
        let line = if line > 0 {
            LineInfo::Line(line as u32)
        } else {
            LineInfo::Unknown
        };
        survey.frames.insert(
            frame_id,
            TraceFrame {
                class_name,
                method_name: survey.name(method),
                source_file: source,
                line,
            },
        );
    }
    Ok(survey)
}

/// The ASCII entry of one heap sub-record.
fn to_entry(
    record: HeapRecord,
    survey: &Survey,
    layout: &ObjectLayout,
    id_size: u32,
    trace: &dyn Fn(u32) -> u32,
    sizes: &mut HashMap<u64, u64>,
) -> Option<HeapEntry> {
    let root = |root| Some(HeapEntry::Root(root));
    match record {
        HeapRecord::RootUnknown { object_id } => root(HeapRoot::Unknown { object_id }),
        HeapRecord::RootJniGlobal {
            object_id,
            jni_global_ref_id,
        } => root(HeapRoot::JniGlobal {
            object_id,
            ref_id: jni_global_ref_id,
            trace_serial: EMPTY_TRACE_SERIAL,
        }),
        HeapRecord::RootJniLocal {
            object_id,
            thread_serial,
            frame_depth,
        } => root(HeapRoot::JniLocal {
            object_id,
            thread_serial,
            frame: frame_depth as i32,
        }),
        HeapRecord::RootJavaFrame {
            object_id,
            thread_serial,
            frame_depth,
        } => root(HeapRoot::JavaStack {
            object_id,
            thread_serial,
            frame: frame_depth as i32,
        }),
        HeapRecord::RootNativeStack {
            object_id,
            thread_serial,
        } => root(HeapRoot::NativeStack {
            object_id,
            thread_serial,
        }),
        HeapRecord::RootStickyClass { object_id } => root(HeapRoot::SystemClass {
            object_id,
            name: survey.class_name(object_id),
        }),
        HeapRecord::RootThreadBlock {
            object_id,
            thread_serial,
        } => root(HeapRoot::ThreadBlock {
            object_id,
            thread_serial,
        }),
        HeapRecord::RootMonitorUsed { object_id } => root(HeapRoot::BusyMonitor { object_id }),
        HeapRecord::RootThreadObject {
            object_id,
            thread_serial,
            trace_serial,
        } => root(HeapRoot::Thread {
            object_id,
            thread_serial,
            trace_serial: trace(trace_serial),
        }),
        HeapRecord::ClassDump {
            class_id,
            super_id,
            loader_id,
            signers_id,
            protection_domain_id,
            constant_pool,
            static_fields,
            ..
        } => {
            let mut statics: Vec<(String, u64)> = static_fields
                .iter()
                .filter_map(|f| match f.value {
                    Value::Object(id) if id != 0 && survey.present.contains(id) => {
                        Some((survey.name(f.name_id), id))
                    }
                    _ => None,
                })
                .collect();
            if survey.classes.get(&class_id).is_some_and(|c| c.reversed) {
                statics.reverse();
            }
            let constant_pool = constant_pool
                .iter()
                .filter_map(|c| match c.value {
                    Value::Object(id) if id != 0 => Some((u32::from(c.index), id)),
                    _ => None,
                })
                .collect();
            Some(HeapEntry::Class {
                object_id: class_id,
                name: survey.class_name(class_id),
                trace_serial: EMPTY_TRACE_SERIAL,
                super_id,
                loader_id,
                signers_id,
                domain_id: protection_domain_id,
                statics,
                constant_pool,
            })
        }
        HeapRecord::InstanceDump {
            object_id,
            trace_serial,
            class_id,
            values,
        } => {
            let size = *sizes
                .entry(class_id)
                .or_insert_with(|| survey.instance_size(class_id, layout));
            Some(HeapEntry::Object {
                object_id,
                size,
                trace_serial: trace(trace_serial),
                class_name: survey.class_name(class_id),
                class_id,
                fields: reference_fields(survey, class_id, &values, id_size),
            })
        }
        HeapRecord::ObjectArrayDump {
            array_id,
            trace_serial,
            array_class_id,
            elements,
        } => Some(HeapEntry::ObjectArray {
            object_id: array_id,
            size: layout.array_size(BasicType::Object, elements.len() as u64),
            trace_serial: trace(trace_serial),
            // The full length: HPROF cut object arrays after their last non-null element.
            length: elements.len() as u64,
            array_class_name: survey.class_name(array_class_id),
            array_class_id,
            // References to objects the dump lacks (class data sharing) are left out.
            elements: elements
                .iter()
                .enumerate()
                .filter(|(_, e)| **e != 0 && survey.present.contains(**e))
                .map(|(i, e)| (i as u64, *e))
                .collect(),
        }),
        HeapRecord::PrimitiveArrayDump {
            array_id,
            trace_serial,
            elements,
        } => Some(HeapEntry::PrimitiveArray {
            object_id: array_id,
            size: layout.array_size(elements.element_type(), elements.len() as u64),
            trace_serial: trace(trace_serial),
            length: elements.len() as u64,
            array_class_name: primitive_array_name(&elements).into(),
        }),
    }
}

fn primitive_array_name(elements: &PrimitiveArray) -> &'static str {
    match elements {
        PrimitiveArray::Boolean(_) => "boolean[]",
        PrimitiveArray::Char(_) => "char[]",
        PrimitiveArray::Float(_) => "float[]",
        PrimitiveArray::Double(_) => "double[]",
        PrimitiveArray::Byte(_) => "byte[]",
        PrimitiveArray::Short(_) => "short[]",
        PrimitiveArray::Int(_) => "int[]",
        PrimitiveArray::Long(_) => "long[]",
    }
}

/// The non-null reference fields of an instance, superclass fields first
/// (as HPROF listed them), decoded with the class chain's field lists.
fn reference_fields(
    survey: &Survey,
    class_id: u64,
    values: &[u8],
    id_size: u32,
) -> Vec<(String, u64)> {
    let mut groups: Vec<Vec<(String, u64)>> = Vec::new();
    let mut at = 0;
    for shape in survey.class_chain(class_id) {
        // Values come in the dump's order of the fields.
        let in_dump_order: Box<dyn Iterator<Item = &(String, BasicType)>> = if shape.reversed {
            Box::new(shape.fields.iter().rev())
        } else {
            Box::new(shape.fields.iter())
        };
        let mut group = Vec::new();
        for (name, kind) in in_dump_order {
            let width = kind.size(id_size);
            let Some(bytes) = values.get(at..at + width) else {
                break;
            };
            if *kind == BasicType::Object {
                let id = heap_walk::get_id(bytes, 0, id_size);
                // References to objects the dump lacks (class data sharing) are left out.
                if id != 0 && survey.present.contains(id) {
                    group.push((name.clone(), id));
                }
            }
            at += width;
        }
        if shape.reversed {
            group.reverse();
        }
        groups.push(group);
    }
    groups.into_iter().rev().flatten().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Found by fuzzing the carrying of heap dumps: a damaged dump whose
    /// classes are each other's superclass sent the size and field walks
    /// round the cycle for ever.
    #[test]
    fn a_superclass_cycle_ends_after_every_class_once() {
        let mut survey = Survey::default();
        let shape = |super_id, name: &str| ClassShape {
            super_id,
            fields: vec![(name.to_owned(), BasicType::Object)],
            reversed: false,
        };
        survey.classes.insert(0x10, shape(0x20, "a"));
        survey.classes.insert(0x20, shape(0x10, "b"));
        survey.present.insert(0x100);
        let usual = ObjectLayout::hotspot(false, true, true);
        assert_eq!(
            survey.instance_size(0x10, &usual),
            24,
            "12 + two 4-byte fields, aligned"
        );
        let values = [0, 0, 0, 0, 0, 0, 1, 0];
        assert_eq!(
            reference_fields(&survey, 0x20, &values, 4),
            [("a".to_owned(), 0x100)]
        );
    }
}
