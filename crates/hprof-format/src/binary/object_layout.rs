//! How HotSpot lays out objects on 64 bits, as far as an object's size
//! goes: what a heap dump does not record. A dump gives an instance's
//! field values (references as identifiers of the dump's size) and an
//! array's elements; the JVM counts (as `jmap -histo` does) the header,
//! references at their size in the heap (4 bytes when compressed) and the
//! padding to the object alignment as well.
//!
//! The agent knows its JVM's flags and writes them into a binary file with
//! a heap dump as one UTF8 record, the layout note ([`ObjectLayout::note`]),
//! which readers that do not know it keep as one more string.

use super::records::BasicType;

/// The sizes of an object's parts under one HotSpot configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ObjectLayout {
    /// An instance's header, where its first field may start.
    pub instance_header: u32,
    /// An array's header, up to the end of its length field.
    pub array_header: u32,
    /// A reference field or element.
    pub reference: u32,
    /// Every object's size is a multiple of this
    /// (`-XX:ObjectAlignmentInBytes`, 8 unless set).
    pub alignment: u32,
    /// An array's elements start at a multiple of 8 bytes whatever their
    /// size (HotSpot up to JDK 22), rather than of their own size (JDK 23
    /// on). The same unless the header ends off such a multiple (20 bytes,
    /// without compressed class pointers).
    pub word_aligned_elements: bool,
}

/// The default alignment of objects.
const DEFAULT_ALIGNMENT: u32 = 8;

/// How the layout note starts; the version of its wording follows.
const NOTE_START: &str = "hprof-rs object layout 1:";

impl ObjectLayout {
    /// No larger than any HotSpot layout (compact headers, compressed
    /// references), so right, if less tight, as a lower bound of sizes
    /// whatever the JVM's flags.
    pub const SMALLEST: ObjectLayout = ObjectLayout::hotspot(true, true, true);

    /// HotSpot's 64-bit layout under these flags, with 8-byte alignment and
    /// JDK 23's array elements: compact object headers (JDK 24+) take 8
    /// bytes with the array length after them; otherwise the class pointer
    /// takes 4 bytes when compressed (the default) or 8.
    pub const fn hotspot(
        compact_headers: bool,
        compressed_class_pointers: bool,
        compressed_oops: bool,
    ) -> Self {
        let (instance_header, array_header) = match (compact_headers, compressed_class_pointers) {
            (true, _) => (8, 12),
            (false, true) => (12, 16),
            (false, false) => (16, 20),
        };
        ObjectLayout {
            instance_header,
            array_header,
            reference: if compressed_oops { 4 } else { 8 },
            alignment: DEFAULT_ALIGNMENT,
            word_aligned_elements: false,
        }
    }

    /// This layout as JDK `feature_version` places array elements.
    pub fn of_jdk(self, feature_version: u32) -> Self {
        ObjectLayout {
            word_aligned_elements: feature_version < 23,
            ..self
        }
    }

    /// This layout with objects aligned to `alignment` bytes (a power of
    /// two from 8 to 256, as HotSpot allows; anything else is ignored).
    pub fn aligned_to(self, alignment: u32) -> Self {
        if !is_alignment(alignment) {
            return self;
        }
        ObjectLayout { alignment, ..self }
    }

    /// The fewest bytes an object takes: its header, 8-byte aligned.
    pub fn smallest_object(&self) -> u64 {
        u64::from(self.instance_header).next_multiple_of(8)
    }

    /// The size of an instance whose fields take `field_bytes` in the heap.
    pub fn instance_size(&self, field_bytes: u64) -> u64 {
        self.aligned(u64::from(self.instance_header).saturating_add(field_bytes))
    }

    /// The size of an instance dumped as `dump_bytes` of field values, of
    /// which `references` are identifiers of `id_size` bytes.
    pub fn dumped_instance_size(&self, dump_bytes: u64, references: u64, id_size: u32) -> u64 {
        let shrink = u64::from(id_size.saturating_sub(self.reference));
        self.instance_size(dump_bytes.saturating_sub(references.saturating_mul(shrink)))
    }

    /// The size of an array of `length` elements of `element_type`.
    pub fn array_size(&self, element_type: BasicType, length: u64) -> u64 {
        // (An Object element takes the "identifier size" given: a reference.)
        let element = element_type.size(self.reference) as u32;
        let start = if self.word_aligned_elements {
            8
        } else {
            element
        };
        let base = u64::from(self.array_header.next_multiple_of(start));
        self.aligned(base.saturating_add(length.saturating_mul(u64::from(element))))
    }

    fn aligned(&self, bytes: u64) -> u64 {
        bytes
            .checked_next_multiple_of(u64::from(self.alignment))
            .unwrap_or(u64::MAX)
    }

    /// The layout as the text of a UTF8 record (see the module).
    pub fn note(&self) -> String {
        format!(
            "{NOTE_START} instance_header={} array_header={} reference={} alignment={} \
             word_aligned_elements={}",
            self.instance_header,
            self.array_header,
            self.reference,
            self.alignment,
            u8::from(self.word_aligned_elements)
        )
    }

    /// The layout a note gives; None for any other text, or a note whose
    /// values no HotSpot has.
    pub fn from_note(text: &[u8]) -> Option<Self> {
        let text = std::str::from_utf8(text).ok()?.strip_prefix(NOTE_START)?;
        let mut values = [None; 5];
        const KEYS: [&str; 5] = [
            "instance_header",
            "array_header",
            "reference",
            "alignment",
            "word_aligned_elements",
        ];
        for pair in text.split_whitespace() {
            let (key, value) = pair.split_once('=')?;
            if let Some(at) = KEYS.iter().position(|k| *k == key) {
                values[at] = Some(value.parse::<u32>().ok()?);
            }
        }
        let [
            Some(instance_header),
            Some(array_header),
            Some(reference),
            Some(alignment),
            Some(word),
        ] = values
        else {
            return None;
        };
        let known = [8, 12, 16].contains(&instance_header)
            && [12, 16, 20].contains(&array_header)
            && [4, 8].contains(&reference)
            && is_alignment(alignment)
            && word <= 1;
        known.then_some(ObjectLayout {
            instance_header,
            array_header,
            reference,
            alignment,
            word_aligned_elements: word == 1,
        })
    }

    /// The layout in words, for the reports that count with it.
    pub fn describe(&self) -> String {
        format!(
            "{}-byte object headers, {}-byte array headers, {}-byte references, {}-byte alignment",
            self.instance_header, self.array_header, self.reference, self.alignment
        )
    }
}

fn is_alignment(bytes: u32) -> bool {
    bytes.is_power_of_two() && (8..=256).contains(&bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_as_hotspot_counts_them() {
        let usual = ObjectLayout::hotspot(false, true, true);
        // java.lang.String on JDK 17: a reference, an int, two bytes.
        assert_eq!(usual.instance_size(4 + 4 + 1 + 1), 24);
        // The same dumped with 8-byte identifiers: 14 bytes of values.
        assert_eq!(usual.dumped_instance_size(14, 1, 8), 24);
        assert_eq!(usual.instance_size(0), 16);
        assert_eq!(usual.array_size(BasicType::Int, 1000), 4016);
        assert_eq!(usual.array_size(BasicType::Byte, 3), 24);
        assert_eq!(usual.array_size(BasicType::Object, 3), 32);
        assert_eq!(usual.array_size(BasicType::Long, 0), 16);

        let compact = ObjectLayout::hotspot(true, true, true);
        assert_eq!(compact.instance_size(0), 8);
        assert_eq!(compact.instance_size(4), 16);
        assert_eq!(compact.array_size(BasicType::Int, 1), 16);
        assert_eq!(compact.array_size(BasicType::Long, 1), 24);

        // No compressed class pointers: the length ends at 20; JDK 23 puts
        // an int[]'s elements right there, earlier JDKs at 24.
        let wide = ObjectLayout::hotspot(false, false, false);
        assert_eq!(wide.array_size(BasicType::Int, 1), 24);
        assert_eq!(wide.of_jdk(22).array_size(BasicType::Int, 1), 32);
        assert_eq!(wide.of_jdk(23).array_size(BasicType::Long, 1), 32);
        assert_eq!(wide.array_size(BasicType::Object, 1), 32);

        let sixteen = usual.aligned_to(16);
        assert_eq!(sixteen.instance_size(4 + 4 + 1 + 1), 32);
        assert_eq!(usual.aligned_to(12), usual, "not a power of two");
    }

    #[test]
    fn the_note_reads_back_and_nothing_else_reads_as_one() {
        for layout in [
            ObjectLayout::hotspot(false, true, true),
            ObjectLayout::hotspot(true, true, false).aligned_to(32),
            ObjectLayout::hotspot(false, false, false).of_jdk(17),
        ] {
            assert_eq!(
                ObjectLayout::from_note(layout.note().as_bytes()),
                Some(layout)
            );
        }
        let note = ObjectLayout::hotspot(false, true, true).note();
        for other in [
            "java/lang/String".to_owned(),
            note.replace("reference=4", "reference=5"),
            note.replace(" alignment=8", ""),
            note.replace("alignment=8", "alignment=x"),
            note.replace("layout 1:", "layout 2:"),
        ] {
            assert_eq!(ObjectLayout::from_note(other.as_bytes()), None, "{other}");
        }
        assert_eq!(
            ObjectLayout::hotspot(false, true, true).describe(),
            "12-byte object headers, 16-byte array headers, 4-byte references, 8-byte alignment"
        );
    }
}
