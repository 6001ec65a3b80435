//! A binary heap dump's class histogram in shallow sizes as the JVM counts
//! them (`jmap -histo`): object header, references at their size in the
//! heap, padding to the object alignment. The dump records none of these
//! (an instance is its field values, references as identifiers of the
//! dump's size), so the sizes come from an object layout: the one the
//! agent wrote into the file (its note, see `ObjectLayout`), or, in a dump
//! another program made (jmap, jcmd, the HotSpotDiagnostic MXBean),
//! HotSpot's default, assumed and said so.
//!
//! An array's size depends on its length alone and is counted as it is
//! read; an instance's depends on which of its fields are references,
//! which its class and superclasses' CLASS DUMPs tell, so instances are
//! counted per class and sized once every record is read.

use super::heap_scan::Counted;
use hprof_format::binary::object_layout::ObjectLayout;
use std::collections::HashMap;

/// Instances and shallow bytes of one class in a heap dump.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClassCount {
    pub instances: u64,
    pub bytes: u64,
    /// The shallow bytes of the biggest single object (for arrays: the
    /// biggest array of the class).
    pub largest: u64,
}

impl ClassCount {
    /// Adds one object, saturating: sizes read from a damaged file may be huge.
    pub(crate) fn add_object(&mut self, bytes: u64) {
        self.instances = self.instances.saturating_add(1);
        self.bytes = self.bytes.saturating_add(bytes);
        self.largest = self.largest.max(bytes);
    }

    /// Adds the objects counted in `other`.
    pub(crate) fn merge(&mut self, other: &ClassCount) {
        self.instances = self.instances.saturating_add(other.instances);
        self.bytes = self.bytes.saturating_add(other.bytes);
        self.largest = self.largest.max(other.largest);
    }
}

/// Class object identifiers at or above this are not addresses a JVM
/// gives out (the agent's own identifiers set bit 56).
const ADDRESS_END: u64 = 1 << 47;

/// The highest address compressed references reach with HotSpot's default
/// 8-byte alignment.
const COMPRESSED_REACH: u64 = 32 << 30;

/// The highest class object address of a file (its LOAD CLASS records),
/// which tells a layout the file does not record.
#[derive(Debug, Default, Clone, Copy)]
pub struct ClassAddresses {
    highest: u64,
}

impl ClassAddresses {
    /// Notes a LOAD CLASS record's class object identifier.
    pub fn note(&mut self, class_id: u64) {
        if class_id < ADDRESS_END {
            self.highest = self.highest.max(class_id);
        }
    }
}

/// The objects of a file's heap dumps, counted per class.
pub struct HeapCounts {
    /// How objects are sized.
    sizing: Sizing,
    /// Class id -> (superclass, reference fields it declares).
    classes: HashMap<u64, (u64, u32)>,
    /// Class id -> (instances, bytes of their field values in the dump).
    instances: HashMap<u64, (u64, u64)>,
    /// Array class key (see `Counted::Array`) -> arrays, sized.
    arrays: HashMap<u64, ClassCount>,
}

/// The layout objects are sized with, and why.
#[derive(Clone, Copy)]
struct Sizing {
    layout: ObjectLayout,
    /// Whether the file recorded it.
    recorded: bool,
    classes: ClassAddresses,
}

impl HeapCounts {
    /// Counts for the heap dumps of a file with `id_size`-byte identifiers
    /// whose first dump starts now: sized with `recorded`, the file's
    /// layout note, if one came before; else with HotSpot's default (see
    /// [`assumed_layout`]), told by the `classes` loaded before.
    pub fn new(recorded: Option<ObjectLayout>, classes: ClassAddresses, id_size: u32) -> Self {
        let sizing = Sizing {
            layout: recorded.unwrap_or_else(|| assumed_layout(classes.highest, id_size)),
            recorded: recorded.is_some(),
            classes,
        };
        HeapCounts {
            sizing,
            classes: HashMap::new(),
            instances: HashMap::new(),
            arrays: HashMap::new(),
        }
    }

    /// Counts one sub-record of a heap dump.
    pub fn count(&mut self, counted: Counted) {
        match counted {
            Counted::Class {
                class,
                superclass,
                references,
            } => {
                self.classes.insert(class, (superclass, references));
            }
            Counted::Instance { class, bytes } => {
                let (instances, dumped) = self.instances.entry(class).or_default();
                *instances = instances.saturating_add(1);
                *dumped = dumped.saturating_add(bytes);
            }
            Counted::Array {
                key,
                element,
                length,
            } => {
                let size = self.sizing.layout.array_size(element, length);
                self.arrays.entry(key).or_default().add_object(size);
            }
        }
    }

    /// The counts per class key (a class id, or a primitive array key),
    /// and how the sizes were counted, in words.
    pub fn finish(mut self, id_size: u32) -> (HashMap<u64, ClassCount>, String) {
        let sizing = self.sizing;
        let mut counts = std::mem::take(&mut self.arrays);
        for (&class, &(instances, dumped)) in &self.instances {
            let per_instance = dumped / instances.max(1);
            let references = self.references(class).unwrap_or(0);
            let size =
                sizing
                    .layout
                    .dumped_instance_size(per_instance, u64::from(references), id_size);
            let count = ClassCount {
                instances,
                bytes: size.saturating_mul(instances),
                largest: size,
            };
            counts.entry(class).or_default().merge(&count);
        }
        (counts, describe(sizing, id_size))
    }

    /// The reference fields of an instance of `class`, its superclasses'
    /// included; None when a class of the chain has no CLASS DUMP (or the
    /// chain, damaged, is a cycle).
    fn references(&self, class: u64) -> Option<u32> {
        let mut total = 0u32;
        let mut at = class;
        for _ in 0..=self.classes.len() {
            if at == 0 {
                return Some(total);
            }
            let &(superclass, own) = self.classes.get(&at)?;
            total = total.saturating_add(own);
            at = superclass;
        }
        None
    }
}

/// The layout of a dump that records none: HotSpot's default on 64 bits
/// (12-byte headers with compressed class pointers, 8-byte alignment),
/// references of 4 bytes when every class object lies below 32 GiB (where
/// compressed references reach, and where HotSpot puts a heap that uses
/// them), else 8; a dump with 4-byte identifiers is a 32-bit JVM's (8-byte
/// headers, 4-byte references).
fn assumed_layout(highest_class: u64, id_size: u32) -> ObjectLayout {
    if id_size == 4 {
        return ObjectLayout::SMALLEST;
    }
    ObjectLayout::hotspot(false, true, highest_class < COMPRESSED_REACH)
}

/// How the sizes were counted, for the reports.
fn describe(sizing: Sizing, id_size: u32) -> String {
    let layout = sizing.layout.describe();
    if sizing.recorded {
        return format!("{layout}, as the JVM had them");
    }
    let why = if id_size == 4 {
        "4-byte identifiers: a 32-bit JVM".to_owned()
    } else if sizing.classes.highest < COMPRESSED_REACH {
        "every class below 32 GiB, as with compressed references".to_owned()
    } else {
        "classes above 32 GiB: no compressed references".to_owned()
    };
    format!("{layout}, assumed: the file does not record them ({why})")
}

#[cfg(test)]
mod tests {
    use super::*;
    use hprof_format::binary::BasicType;

    #[test]
    fn instances_are_sized_by_their_class_chain_and_arrays_as_read() {
        let mut classes = ClassAddresses::default();
        classes.note(0x7_0000_0000);
        let mut counts = HeapCounts::new(None, classes, 8);
        // A class with a reference and an int, whose superclass adds a reference.
        for (class, superclass, references) in [(0x100, 0x200, 1), (0x200, 0, 1)] {
            counts.count(Counted::Class {
                class,
                superclass,
                references,
            });
        }
        for _ in 0..3 {
            // Two 8-byte identifiers and an int: 20 bytes in the dump.
            counts.count(Counted::Instance {
                class: 0x100,
                bytes: 20,
            });
        }
        counts.count(Counted::Array {
            key: 0x300,
            element: BasicType::Object,
            length: 5,
        });
        let (by_key, said) = counts.finish(8);
        // 12 + 4 + 4 + 4 = 24 each; 16 + 5 * 4 = 36 -> 40.
        assert_eq!(
            by_key[&0x100],
            ClassCount {
                instances: 3,
                bytes: 72,
                largest: 24
            }
        );
        assert_eq!(by_key[&0x300].bytes, 40);
        assert!(
            said.contains("assumed") && said.contains("below 32 GiB"),
            "{said}"
        );
    }

    #[test]
    fn a_recorded_layout_is_used_and_high_classes_mean_wide_references() {
        let compact = ObjectLayout::hotspot(true, true, true);
        let mut counts = HeapCounts::new(Some(compact), ClassAddresses::default(), 8);
        counts.count(Counted::Instance {
            class: 0x100,
            bytes: 0,
        });
        let (by_key, said) = counts.finish(8);
        assert_eq!(by_key[&0x100].bytes, 8, "compact headers");
        assert!(said.ends_with("as the JVM had them"), "{said}");

        let mut classes = ClassAddresses::default();
        classes.note(0x7f00_0000_0000);
        classes.note(0x0100_0000_5000_0001); // the agent's own: not an address
        let mut counts = HeapCounts::new(None, classes, 8);
        counts.count(Counted::Array {
            key: 0x300,
            element: BasicType::Object,
            length: 1,
        });
        let (by_key, said) = counts.finish(8);
        assert_eq!(by_key[&0x300].bytes, 24, "16 + one 8-byte reference");
        assert!(said.contains("above 32 GiB"), "{said}");
    }
}
