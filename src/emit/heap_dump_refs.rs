//! References to objects a JVM heap dump lacks, resolved in one pass.
//!
//! With class data sharing on, JDK 17+ dumps refer to archived objects they
//! do not contain (hundreds of references; none with sharing off). Whether a
//! referenced object is in the dump is known only at the dump's end, and
//! the dump is copied as the JVM writes it, so the copy cannot null those
//! references as it goes. Instead it notes, in bounded memory:
//!
//! - every object dumped (`present`, as runs of neighbouring objects; see
//!   `format/binary/object_runs.rs`: a few bytes per heap region);
//! - every object referenced before it was dumped (`forward`, a bitmap of
//!   one bit per 16 bytes, or 8 with compact object headers, per 2 MiB
//!   block of address space, each block freed once its objects are
//!   dumped): the only references that can turn out to dangle;
//! - for each output block (up to 512 KiB of copied sub-records) that holds
//!   such a reference, which 2 MiB blocks of address space those references
//!   point into (a bitset over the address blocks seen, one bit each).
//!
//! At the end, an address block whose `forward` bits are not all `present`
//! holds a missing object; only the output blocks that point into such an
//! address block are read back from the output file and their references
//! to missing objects set to null. With sharing off nothing is read back;
//! with it on, the few blocks that point into the archived objects' address
//! blocks are. Memory: the runs (kilobytes for a 2.4 GB heap, at most a
//! bitmap of heap/64 bytes), the forward bitmap's blocks still open (in a
//! dump in address order, those just ahead of the copy: 2.7 MB at the
//! peak of a 2.4 GB JDK 17 dump) and, per output block with a forward
//! reference, one bit per address block of the heap (150 bytes for a
//! 2.4 GB heap).

use crate::format::binary::heap_walk::{
    ArrayRest, BlockHashing, NullAbsent, ObjectSet, PresentObjects, scan_block,
};
use crate::format::binary::object_layout::ObjectLayout;
use crate::format::binary::object_runs::ObjectRuns;
use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;

/// What the one-pass copy notes about references (see the module).
pub struct OnePassRefs {
    present: ObjectRuns,
    forward: ForwardObjects,
    /// Address blocks pointed into by forward references, numbered densely.
    block_index: HashMap<u64, u32, BlockHashing>,
    /// The last address block looked up and its number (references cluster).
    last_block: Option<(u64, u32)>,
    /// The address blocks the current output block's forward references
    /// point into, one bit per dense number.
    current: Vec<u64>,
    /// Output blocks with forward references.
    regions: Vec<Region>,
}

/// One output block that holds references to objects not yet dumped.
struct Region {
    /// Offset from the start of the carried dump.
    offset: u64,
    len: u32,
    /// Where the walk of the heap body stood at the block's start.
    start: ArrayRest,
    /// The address blocks (dense numbers) its forward references point into.
    blocks: Box<[u64]>,
}

impl OnePassRefs {
    /// Notes for a dump of the JVM whose objects have `layout`, with
    /// `id_size`-byte identifiers.
    pub fn new(layout: ObjectLayout, id_size: u32) -> Self {
        OnePassRefs {
            present: ObjectRuns::new(layout, id_size),
            forward: ForwardObjects::new(layout.smallest_object()),
            block_index: HashMap::default(),
            last_block: None,
            current: Vec::new(),
            regions: Vec::new(),
        }
    }

    /// The object a whole sub-record (or an array's head) dumps, if it
    /// dumps one, is in the dump.
    pub fn object(&mut self, record: &[u8]) {
        if let Some(id) = self.present.note(record) {
            self.forward.remove(id);
        }
    }

    /// A reference to `id` was copied into the current output block.
    pub fn reference(&mut self, id: u64) {
        if id == 0 || self.present.contains(id) {
            return;
        }
        self.forward.insert(id);
        let block = PresentObjects::block_of(id);
        let index = match self.last_block {
            Some((b, i)) if b == block => i,
            _ => {
                let next = self.block_index.len() as u32;
                let i = *self.block_index.entry(block).or_insert(next);
                self.last_block = Some((block, i));
                i
            }
        };
        let word = index as usize / 64;
        if self.current.len() <= word {
            self.current.resize(word + 1, 0);
        }
        self.current[word] |= 1 << (index % 64);
    }

    /// What the notes took, for verbose=y: the set of dumped objects, the
    /// forward bitmap at its largest, and the output blocks noted.
    pub fn memory(&self) -> NotesMemory {
        NotesMemory {
            present: self.present.memory(),
            forward_peak: self.forward.peak_blocks * self.forward.block_bytes(),
            regions: self.regions.len(),
            region_bytes: self
                .regions
                .iter()
                .map(|r| std::mem::size_of::<Region>() + r.blocks.len() * 8)
                .sum(),
        }
    }

    /// The current output block, `len` bytes at `offset`, goes out.
    pub fn block_done(&mut self, offset: u64, len: usize, start: ArrayRest) {
        if self.current.iter().any(|w| *w != 0) {
            self.regions.push(Region {
                offset,
                len: len as u32,
                start,
                blocks: self.current.clone().into_boxed_slice(),
            });
            self.current.iter_mut().for_each(|w| *w = 0);
        }
    }

    /// The output blocks to read back and patch, or None when no
    /// reference dangles.
    pub fn finish(mut self, id_size: u32) -> Option<DanglingPatch> {
        self.present.seal();
        // What is left of the forward references was never dumped.
        let missing: Vec<usize> = self
            .forward
            .blocks
            .keys()
            .filter_map(|block| self.block_index.get(block))
            .map(|&index| index as usize)
            .collect();
        if missing.is_empty() {
            return None;
        }
        let regions = self
            .regions
            .into_iter()
            .filter(|r| {
                missing.iter().any(|&i| {
                    r.blocks
                        .get(i / 64)
                        .is_some_and(|w| w & (1 << (i % 64)) != 0)
                })
            })
            .map(|r| (r.offset, r.len, r.start))
            .collect();
        Some(DanglingPatch {
            present: self.present,
            regions,
            id_size,
        })
    }
}

/// Objects referenced before they were dumped and not dumped since: a
/// bitmap with one bit per granule of the smallest object the JVM makes
/// (16 bytes, or 8 with compact object headers, so no two objects share a
/// bit), per 2 MiB block of address space, with a count of bits set per
/// block so that a block is freed once every object it noted has been
/// dumped. In a dump in address order (G1's), only the blocks ahead of the
/// copy stay.
struct ForwardObjects {
    blocks: HashMap<u64, (u32, Box<[u64]>), BlockHashing>,
    /// log2 of the bytes per bit.
    granule_shift: u32,
    /// The most blocks held at once.
    peak_blocks: usize,
}

impl ForwardObjects {
    fn new(smallest_object: u64) -> Self {
        ForwardObjects {
            blocks: HashMap::default(),
            granule_shift: if smallest_object >= 16 { 4 } else { 3 },
            peak_blocks: 0,
        }
    }

    /// Bytes of one block's bitmap.
    fn block_bytes(&self) -> usize {
        (1 << 21 >> self.granule_shift) / 8
    }

    fn place(&self, id: u64) -> (u64, usize, u64) {
        let bit = (id & ((1 << 21) - 1)) >> self.granule_shift;
        (
            PresentObjects::block_of(id),
            (bit >> 6) as usize,
            1 << (bit & 63),
        )
    }

    fn insert(&mut self, id: u64) {
        let (block, word, mask) = self.place(id);
        let held = self.blocks.len();
        let words = self.block_bytes() / 8;
        let (count, bits) = self.blocks.entry(block).or_insert_with(|| {
            self.peak_blocks = self.peak_blocks.max(held + 1);
            (0, vec![0; words].into_boxed_slice())
        });
        if bits[word] & mask == 0 {
            bits[word] |= mask;
            *count += 1;
        }
    }

    fn remove(&mut self, id: u64) {
        let (block, word, mask) = self.place(id);
        if let Some((count, bits)) = self.blocks.get_mut(&block)
            && bits[word] & mask != 0
        {
            bits[word] &= !mask;
            *count -= 1;
            if *count == 0 {
                self.blocks.remove(&block);
            }
        }
    }
}

/// The output blocks to read back, and what the dump holds.
pub struct DanglingPatch {
    present: ObjectRuns,
    regions: Vec<(u64, u32, ArrayRest)>,
    id_size: u32,
}

impl DanglingPatch {
    /// How many output blocks are read back.
    pub fn blocks(&self) -> usize {
        self.regions.len()
    }

    /// Nulls the references to missing objects in the output blocks, read
    /// through `read` and written through `write` (the output file, where
    /// the carried dump starts at `base`), calling `progress` after each
    /// block. Returns the references nulled.
    pub fn apply(
        &self,
        read: &File,
        write: &File,
        base: u64,
        progress: &dyn Fn(),
    ) -> std::io::Result<u64> {
        let mut bytes = Vec::new();
        let mut dropped = 0;
        for &(offset, len, start) in &self.regions {
            bytes.resize(len as usize, 0);
            read.read_exact_at(&mut bytes, base + offset)?;
            let mut nuller = NullAbsent {
                present: &self.present,
                id_size: self.id_size,
                dropped: 0,
            };
            let mut state = start;
            let walked = scan_block(&mut bytes, &mut state, self.id_size, &mut nuller, &mut 0)
                .map_err(std::io::Error::other)?;
            if walked != bytes.len() {
                return Err(std::io::Error::other(
                    "a copied heap dump block does not end where it did",
                ));
            }
            if nuller.dropped > 0 {
                write.write_all_at(&bytes, base + offset)?;
                dropped += nuller.dropped;
            }
            progress();
        }
        Ok(dropped)
    }
}

/// What the one-pass copy's notes took, in bytes (see the module).
#[derive(Default, Debug, Clone, Copy)]
pub struct NotesMemory {
    pub present: usize,
    pub forward_peak: usize,
    pub regions: usize,
    pub region_bytes: usize,
}

impl std::fmt::Display for NotesMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "objects dumped {} KB, forward references at most {} KB, {} output blocks to \
             check {} KB",
            self.present.div_ceil(1024),
            self.forward_peak.div_ceil(1024),
            self.regions,
            self.region_bytes.div_ceil(1024)
        )
    }
}

/// What the one-pass copy leaves to do and to tell.
#[derive(Default)]
pub struct OnePassOutcome {
    /// Heap sub-records copied.
    pub sub_records: u64,
    /// What the notes about references took.
    pub notes: NotesMemory,
    /// The references to null afterwards, if any dangle.
    pub dangling: Option<DanglingPatch>,
    /// Bytes to overwrite afterwards (offset from the start of the carried
    /// dump): the length of a segment cut short.
    pub fixes: Vec<(u64, [u8; 4])>,
    /// Why the copy stopped before the dump's end, if it did.
    pub error: Option<crate::format::ParseError>,
    /// The copy stopped inside the heap dump: the output holds part of it.
    pub incomplete: bool,
}
