//! Round trips through the binary and ASCII formats: every record and section
//! variant is written, parsed back and compared. (Damaged input is the
//! business of tests/fuzz_readers.rs.)
#[path = "support/format_samples.rs"]
mod format_samples;

use format_samples::*;
use std::collections::BTreeSet;

use hprof_rs::format::ascii::sections::*;
use hprof_rs::format::ascii::{reader as ascii_reader, writer as ascii_writer};
use hprof_rs::format::binary::reader::{self, BinaryFile, RecordReader};
use hprof_rs::format::binary::records::*;
use hprof_rs::format::binary::writer::tags;
use proptest::prelude::*;

#[test]
fn the_samples_cover_every_variant() {
    let top: BTreeSet<u8> = records(4).iter().map(|r| r.body.tag()).collect();
    let expected_top = [
        tags::UTF8,
        tags::LOAD_CLASS,
        tags::UNLOAD_CLASS,
        tags::FRAME,
        tags::TRACE,
        tags::ALLOC_SITES,
        tags::HEAP_SUMMARY,
        tags::START_THREAD,
        tags::END_THREAD,
        tags::HEAP_DUMP,
        tags::CPU_SAMPLES,
        tags::CONTROL_SETTINGS,
        tags::HEAP_DUMP_SEGMENT,
        tags::HEAP_DUMP_END,
        0x42,
    ];
    assert_eq!(top, expected_top.into_iter().collect());
    let heap: BTreeSet<u8> = heap_records(4).iter().map(HeapRecord::tag).collect();
    assert_eq!(heap.len(), 13);
    let types: BTreeSet<u8> = primitive_arrays()
        .iter()
        .map(|a| a.element_type() as u8)
        .collect();
    assert_eq!(types, (4..=11).collect());
}

#[test]
fn binary_round_trip_with_4_and_8_byte_ids() {
    for version in [Version::V101, Version::V102] {
        for id_size in [4, 8] {
            let header = FileHeader {
                version,
                id_size,
                timestamp_ms: 0x0123_4567_89AB,
            };
            let records = records(id_size);
            let parsed = reader::parse(&encode_file(&header, &records)).unwrap();
            assert_eq!(
                parsed,
                BinaryFile { header, records },
                "{version:?}, id size {id_size}"
            );
        }
    }
}

#[test]
fn binary_records_one_by_one() {
    for id_size in [4, 8] {
        let header = FileHeader {
            version: Version::V101,
            id_size,
            timestamp_ms: 0,
        };
        for record in records(id_size) {
            let parsed =
                reader::parse(&encode_file(&header, std::slice::from_ref(&record))).unwrap();
            assert_eq!(parsed.records, [record]);
        }
    }
}

#[test]
fn streaming_reader_matches_parse_and_reports_offsets() {
    let bytes = sample_file(8);
    let whole = reader::parse(&bytes).unwrap();
    let buffered = std::io::BufReader::with_capacity(7, bytes.as_slice());
    let mut reader = RecordReader::new(buffered).unwrap();
    assert_eq!(*reader.header(), whole.header);
    let mut expected_offset = 31;
    let mut streamed = Vec::new();
    for item in reader.by_ref() {
        let (offset, record) = item.unwrap();
        assert_eq!(offset, expected_offset);
        let length = u32::from_be_bytes(
            bytes[offset as usize + 5..offset as usize + 9]
                .try_into()
                .unwrap(),
        );
        expected_offset += 9 + u64::from(length);
        streamed.push(record);
    }
    assert_eq!(streamed, whole.records);
    assert_eq!(reader.offset(), bytes.len() as u64);
}

#[test]
fn ascii_round_trip_of_every_section() {
    for section in sections() {
        let text = write_all(std::slice::from_ref(&section));
        let parsed = ascii_reader::parse(&text)
            .unwrap_or_else(|e| panic!("{e} in {}", String::from_utf8_lossy(&text)));
        assert_eq!(parsed, [section]);
    }
}

#[test]
fn ascii_round_trip_of_a_whole_file() {
    let sections = sections();
    assert_eq!(
        ascii_reader::parse(&write_all(&sections)).unwrap(),
        sections
    );
}

#[test]
fn ascii_with_crlf_line_ends_parses_the_same() {
    let sections = sections();
    let text = String::from_utf8(write_all(&sections))
        .unwrap()
        .replace('\n', "\r\n");
    assert_eq!(ascii_reader::parse(text.as_bytes()).unwrap(), sections);
}

#[test]
fn streamed_heap_dump_equals_the_section() {
    let dump = heap_dump();
    let mut streamed = Vec::new();
    ascii_writer::write_heap_dump_begin(dump.objects, dump.bytes, &dump.created, &mut streamed);
    dump.entries
        .iter()
        .for_each(|entry| ascii_writer::write_heap_entry(entry, &mut streamed));
    ascii_writer::write_heap_dump_end(&mut streamed);
    assert_eq!(streamed, write_all(&[Section::HeapDump(dump)]));
}

/// A number with two decimals, as the writer prints and the reader reads back exactly.
fn two_decimals() -> impl Strategy<Value = f64> {
    (0u32..=10000).prop_map(|hundredths| f64::from(hundredths) / 100.0)
}

fn site_row() -> impl Strategy<Value = SiteRow> {
    (
        any::<u32>(),
        two_decimals(),
        two_decimals(),
        any::<[u32; 4]>(),
        any::<u32>(),
        "[A-Za-z$.\\[\\]]{1,30}",
    )
        .prop_map(
            |(rank, self_percent, accum_percent, counts, trace_serial, class_name)| SiteRow {
                rank: u64::from(rank),
                self_percent,
                accum_percent,
                live_bytes: u64::from(counts[0]),
                live_objects: u64::from(counts[1]),
                allocated_bytes: u64::from(counts[2]),
                allocated_objects: u64::from(counts[3]),
                trace_serial,
                class_name,
            },
        )
}

fn trace_frame() -> impl Strategy<Value = TraceFrame> {
    let line = prop_oneof![
        any::<u32>().prop_map(LineInfo::Line),
        Just(LineInfo::Unknown),
        Just(LineInfo::Compiled),
        Just(LineInfo::Native),
    ];
    // Class names and source files may hold parentheses (`H(1)T`, a
    // class renamed at run time) and colons.
    (
        "[a-z][a-z.$:]{0,12}(\\([0-9]{1,2}\\)[a-z.]{0,4})?",
        "[a-z<>$]{1,12}",
        "[A-Za-z.<> :]{1,10}(\\([0-9]\\)[a-z.]{0,4})?",
        line,
    )
        .prop_map(|(class_name, method_name, source_file, line)| TraceFrame {
            class_name,
            method_name,
            source_file,
            line,
        })
}

proptest! {
    #[test]
    fn sites_round_trip(rows in prop::collection::vec(site_row(), 0..5)) {
        let section = Section::Sites(SitesSection { ordered_by: "live bytes".into(), created: "X".into(), rows });
        prop_assert_eq!(ascii_reader::parse(&write_all(std::slice::from_ref(&section))).unwrap(), vec![section]);
    }

    #[test]
    fn traces_round_trip(
        serial in any::<u32>(),
        thread_serial in prop::option::of(any::<u32>()),
        phase in prop::option::of("[a-z]{1,10}"),
        frames in prop::collection::vec(trace_frame(), 0..5),
    ) {
        let section = Section::Trace(TraceSection { serial, thread_serial, phase, frames });
        prop_assert_eq!(ascii_reader::parse(&write_all(std::slice::from_ref(&section))).unwrap(), vec![section]);
    }
}
