//! The objects a heap dump holds, as runs of neighbouring addresses.
//!
//! A JVM dumps its heap in address order, region by region, and after the
//! full collection that precedes a dump the objects of a region lie side
//! by side. Whether an object is in the dump is needed for every reference
//! the one-pass copy meets (see `emit/heap_dump_refs.rs`); a bitmap of object
//! starts costs one bit per 16 bytes of heap (19 MB for a 2.4 GB heap),
//! while the same knowledge held as runs costs a few bytes per region.
//!
//! The rule that makes a run exact: from a sub-record, the object's size
//! in the heap is known from below (header, plus fields or elements at
//! their heap size; see `ObjectLayout`). Two objects dumped one after
//! the other, the second starting less than [`MIN_OBJECT`] bytes after
//! that lower bound of the first's end, have no room between them for any
//! other object, dumped or not: every object takes at least a header. So
//! every address from the first object of a run to its last is either one
//! of its objects or inside one, and a reference to an address there is a
//! reference to a dumped object. An object the dump lacks always starts
//! outside every run. A wrong guess of the layout can only make the lower
//! bound too large, which is why the layout is read from the JVM's own
//! flags and falls back to the smallest HotSpot has.
//!
//! Memory: the runs of each 2 MiB block of address space are a sorted list
//! of 8-byte entries; a block whose list would outgrow a bitmap of one bit
//! per 8 bytes (32 KiB, which no two objects share: objects are 8-byte
//! aligned) becomes that bitmap, so the set never takes more than that.

use super::heap_walk::{BlockHashing, ObjectSet, get_id, get_u4};
use super::layout::{self, Tail};
use super::object_layout::ObjectLayout;
use super::records::BasicType;
use std::collections::HashMap;

/// Every Java object takes at least this many bytes: a header (8 bytes
/// with HotSpot's compact headers, more otherwise), 8-byte aligned.
pub const MIN_OBJECT: u64 = 8;

/// One run: the first and last object start, and the lower bound of the
/// last object's end.
#[derive(Debug, Clone, Copy)]
struct Run {
    first: u64,
    last: u64,
    end: u64,
}

/// The runs of one 2 MiB block of address space.
enum Block {
    /// (first, last) offsets in the block, sorted, disjoint.
    Runs(Vec<(u32, u32)>),
    /// One bit per 8 bytes: set where a run covers.
    Bits(Box<[u64; BITS_WORDS]>),
}

const BLOCK_SHIFT: u32 = 21;
const BLOCK_MASK: u64 = (1 << BLOCK_SHIFT) - 1;
const BITS_WORDS: usize = (1 << BLOCK_SHIFT) / 8 / 64;
/// Runs a block lists before it becomes a bitmap (of the same size).
const MAX_RUNS: usize = BITS_WORDS; // 8 bytes a run, 8 bytes a word

/// What a class contributes to its instances' size: its own reference
/// fields, and its superclass.
#[derive(Debug, Clone, Copy)]
struct ClassFields {
    superclass: u64,
    own_references: u32,
    /// Its and its superclasses' reference fields, once known.
    all_references: Option<u32>,
}

/// The set of objects dumped so far (see the module).
pub struct ObjectRuns {
    layout: ObjectLayout,
    id_size: u32,
    classes: HashMap<u64, ClassFields, BlockHashing>,
    /// The class of the last instance and its reference fields.
    last_class: Option<(u64, u32)>,
    open: Option<Run>,
    blocks: HashMap<u64, Block, BlockHashing>,
}

impl ObjectRuns {
    /// An empty set, for a dump with `id_size`-byte identifiers of a JVM
    /// with objects laid out as `layout` (4-byte identifiers use
    /// [`ObjectLayout::SMALLEST`]).
    pub fn new(layout: ObjectLayout, id_size: u32) -> Self {
        // A 4-byte-id (32-bit) JVM has 8-byte headers and 4-byte references.
        let layout = if id_size == 4 {
            ObjectLayout::SMALLEST
        } else {
            layout
        };
        ObjectRuns {
            layout,
            id_size,
            classes: HashMap::default(),
            last_class: None,
            open: None,
            blocks: HashMap::default(),
        }
    }

    /// Notes the object a whole sub-record, or an array's head, dumps;
    /// returns its identifier (None for a root).
    pub fn note(&mut self, record: &[u8]) -> Option<u64> {
        let tag = *record.first()?;
        let shape = layout::shape(tag, self.id_size)?;
        if !shape.dumps_object() || record.len() < shape.head {
            return None;
        }
        let id = get_id(record, 1, self.id_size);
        let count = || u64::from(get_u4(record, shape.count_at));
        let least_size = match shape.tail {
            Tail::ClassBody => {
                if let Some((superclass, own_references)) =
                    layout::class_reference_fields(record, self.id_size)
                {
                    self.classes.insert(
                        id,
                        ClassFields {
                            superclass,
                            own_references,
                            all_references: None,
                        },
                    );
                }
                // The class object itself, whose size the dump does not give.
                MIN_OBJECT
            }
            Tail::Bytes => {
                let class = get_id(record, shape.class_at, self.id_size);
                let bytes = count();
                let id_size = u64::from(self.id_size);
                // Unknown class: as if every id-sized slot were a reference.
                let references = self.references_of(class).map_or(bytes / id_size, u64::from);
                let shrink = id_size.saturating_sub(u64::from(self.layout.reference));
                u64::from(self.layout.instance_header) + bytes.saturating_sub(references * shrink)
            }
            Tail::Ids => {
                u64::from(self.layout.array_header) + count() * u64::from(self.layout.reference)
            }
            Tail::Elements => {
                let element = BasicType::from_u8(record[shape.element_type_at])
                    .map_or(1, |kind| kind.size(self.id_size) as u64);
                u64::from(self.layout.array_header) + count() * element
            }
            Tail::None => return None,
        };
        self.extend(id, least_size.max(MIN_OBJECT));
        Some(id)
    }

    /// The reference fields of an instance of `class`, its superclasses'
    /// included, or None while a class of the chain is not dumped yet.
    fn references_of(&mut self, class: u64) -> Option<u32> {
        if let Some((last, n)) = self.last_class
            && last == class
        {
            return Some(n);
        }
        let found = self.classes.get(&class)?;
        let n = match found.all_references {
            Some(n) => n,
            None => {
                let mut total = 0u32;
                let mut at = class;
                // A chain longer than the classes noted has a cycle: give up.
                for _ in 0..=self.classes.len() {
                    if at == 0 {
                        break;
                    }
                    let fields = self.classes.get(&at)?;
                    total = total.saturating_add(fields.own_references);
                    at = fields.superclass;
                }
                if at != 0 {
                    return None;
                }
                if let Some(fields) = self.classes.get_mut(&class) {
                    fields.all_references = Some(total);
                }
                total
            }
        };
        self.last_class = Some((class, n));
        Some(n)
    }

    /// Adds an object at `id` of at least `least_size` bytes.
    fn extend(&mut self, id: u64, least_size: u64) {
        if let Some(run) = &mut self.open {
            if id >= run.end && id - run.end < MIN_OBJECT {
                run.last = id;
                run.end = id.saturating_add(least_size);
                return;
            }
            let run = *run;
            self.close(run);
        }
        self.open = Some(Run {
            first: id,
            last: id,
            end: id.saturating_add(least_size),
        });
    }

    /// Files a finished run under each block it spans.
    fn close(&mut self, run: Run) {
        for block in (run.first >> BLOCK_SHIFT)..=(run.last >> BLOCK_SHIFT) {
            let base = block << BLOCK_SHIFT;
            let from = (run.first.max(base) - base) as u32;
            let to = (run.last.min(base + BLOCK_MASK) - base) as u32;
            let entry = self
                .blocks
                .entry(block)
                .or_insert_with(|| Block::Runs(Vec::new()));
            match entry {
                Block::Runs(runs) => {
                    let at = runs.partition_point(|r| r.0 < from);
                    runs.insert(at, (from, to));
                    if runs.len() > MAX_RUNS {
                        let mut bits = Box::new([0u64; BITS_WORDS]);
                        for &(from, to) in runs.iter() {
                            set_bits(&mut bits, from, to);
                        }
                        *entry = Block::Bits(bits);
                    }
                }
                Block::Bits(bits) => set_bits(bits, from, to),
            }
        }
    }

    /// Closes the open run: the set is complete.
    pub fn seal(&mut self) {
        if let Some(run) = self.open.take() {
            self.close(run);
        }
    }

    /// Bytes the set holds, roughly (for reports and tests).
    pub fn memory(&self) -> usize {
        let blocks: usize = self
            .blocks
            .values()
            .map(|b| match b {
                Block::Runs(runs) => runs.capacity() * 8,
                Block::Bits(_) => BITS_WORDS * 8,
            })
            .sum();
        blocks + (self.blocks.capacity() + self.classes.capacity()) * 40
    }
}

impl ObjectSet for ObjectRuns {
    fn contains(&self, id: u64) -> bool {
        if let Some(run) = &self.open
            && (run.first..=run.last).contains(&id)
        {
            return true;
        }
        let offset = (id & BLOCK_MASK) as u32;
        match self.blocks.get(&(id >> BLOCK_SHIFT)) {
            None => false,
            Some(Block::Runs(runs)) => {
                let after = runs.partition_point(|r| r.0 <= offset);
                after > 0 && runs[after - 1].1 >= offset
            }
            Some(Block::Bits(bits)) => {
                let bit = offset as usize / 8;
                bits[bit / 64] & (1 << (bit % 64)) != 0
            }
        }
    }
}

/// Sets the bits of the 8-byte granules from `from` to `to` (offsets).
fn set_bits(bits: &mut [u64; BITS_WORDS], from: u32, to: u32) {
    for bit in (from as usize / 8)..=(to as usize / 8) {
        bits[bit / 64] |= 1 << (bit % 64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::binary::records::{FieldDescriptor, HeapRecord, PrimitiveArray};
    use crate::binary::writer::encode_heap_record;

    const LAYOUT: ObjectLayout = ObjectLayout::hotspot(false, true, true);

    fn bytes(record: &HeapRecord) -> Vec<u8> {
        let mut out = Vec::new();
        encode_heap_record(record, 8, &mut out);
        out
    }

    fn int_array(id: u64, n: usize) -> Vec<u8> {
        bytes(&HeapRecord::PrimitiveArrayDump {
            array_id: id,
            trace_serial: 1,
            elements: PrimitiveArray::Int(vec![7; n]),
        })
    }

    #[test]
    fn neighbours_make_one_run_and_a_gap_of_an_object_splits_it() {
        let mut runs = ObjectRuns::new(LAYOUT, 8);
        // int[2]: 16 + 8 = 24 bytes, int[3]: 16 + 12 = 28, padded to 32.
        runs.note(&int_array(0x1000, 2));
        runs.note(&int_array(0x1018, 3));
        runs.note(&int_array(0x1038, 2));
        // A 16-byte object at 0x1050 is left out of the dump.
        runs.note(&int_array(0x1060, 2));
        runs.seal();
        for id in [0x1000, 0x1018, 0x1038, 0x1060] {
            assert!(runs.contains(id), "{id:#x} dumped");
        }
        for id in [0x1050, 0x0ff8, 0x1078, 0x2000] {
            assert!(!runs.contains(id), "{id:#x} not dumped");
        }
        assert!(matches!(runs.blocks.get(&0), Some(Block::Runs(r)) if r.len() == 2));
    }

    #[test]
    fn instances_are_sized_by_their_class_chain() {
        let mut runs = ObjectRuns::new(LAYOUT, 8);
        let class = |id, superclass, fields: usize| {
            bytes(&HeapRecord::ClassDump {
                class_id: id,
                trace_serial: 1,
                super_id: superclass,
                loader_id: 0,
                signers_id: 0,
                protection_domain_id: 0,
                reserved1: 0,
                reserved2: 0,
                instance_size: 0,
                constant_pool: vec![],
                static_fields: vec![],
                instance_fields: (0..fields)
                    .map(|i| FieldDescriptor {
                        name_id: 0x900 + i as u64,
                        field_type: BasicType::Object,
                    })
                    .collect(),
            })
        };
        runs.note(&class(0x500, 0, 1));
        runs.note(&class(0x600, 0x500, 2));
        // Three references: 24 bytes in the dump, 12 in the heap: 12 + 12 = 24.
        let instance = |id| {
            bytes(&HeapRecord::InstanceDump {
                object_id: id,
                trace_serial: 1,
                class_id: 0x600,
                values: vec![0; 24],
            })
        };
        runs.note(&instance(0x10000));
        runs.note(&instance(0x10018));
        // 0x10030 missing (a 24-byte object), then one more.
        runs.note(&instance(0x10048));
        runs.seal();
        assert!(runs.contains(0x10018) && runs.contains(0x10048));
        assert!(!runs.contains(0x10030));
    }

    #[test]
    fn a_crowded_block_becomes_a_bitmap_and_answers_the_same() {
        let mut runs = ObjectRuns::new(LAYOUT, 8);
        // Objects 48 bytes apart, each 24 bytes: every one its own run.
        let ids: Vec<u64> = (0..(MAX_RUNS as u64 + 10))
            .map(|i| 0x40_0000 + i * 48)
            .collect();
        for &id in &ids {
            runs.note(&int_array(id, 2));
        }
        runs.seal();
        assert!(matches!(runs.blocks.get(&2), Some(Block::Bits(_))));
        for &id in &ids {
            assert!(runs.contains(id));
            assert!(!runs.contains(id + 24), "{:#x}", id + 24);
        }
    }

    #[test]
    fn a_run_across_blocks_is_found_in_each() {
        let mut runs = ObjectRuns::new(LAYOUT, 8);
        // 64 KiB arrays back to back across the 2 MiB boundary at 0x20_0000.
        let size = 16 + 65536u64;
        let ids: Vec<u64> = (0..40).map(|i| 0x1F_0000 + i * size).collect();
        for &id in &ids {
            runs.note(&int_array(id, 16384));
        }
        assert!(ids.iter().all(|&id| runs.contains(id)), "open run");
        runs.seal();
        assert!(ids.iter().all(|&id| runs.contains(id)), "filed run");
        assert!(!runs.contains(ids[39] + size));
    }
}
