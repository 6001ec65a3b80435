//! The constant pool: parsed just enough to look names up, copied verbatim on
//! output, with new entries appended after the original ones (so no existing
//! index changes and nothing else in the class needs renumbering).

use rustc_hash::FxHashMap;
use std::borrow::Cow;

use super::BciError;
use super::bytes::{Reader, put_i32, put_u16};

const UTF8: u8 = 1;
const INTEGER: u8 = 3;
const FLOAT: u8 = 4;
const LONG: u8 = 5;
const DOUBLE: u8 = 6;
const CLASS: u8 = 7;
const STRING: u8 = 8;
const FIELDREF: u8 = 9;
const METHODREF: u8 = 10;
const INTERFACE_METHODREF: u8 = 11;
const NAME_AND_TYPE: u8 = 12;
const METHOD_HANDLE: u8 = 15;
const METHOD_TYPE: u8 = 16;
const DYNAMIC: u8 = 17;
const INVOKE_DYNAMIC: u8 = 18;
const MODULE: u8 = 19;
const PACKAGE: u8 = 20;

/// The largest `constant_pool_count` a class file can state.
const MAX_COUNT: u16 = u16::MAX;

/// One constant-pool slot, with what the rewriter needs of it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Entry<'a> {
    /// `CONSTANT_Utf8`, in the class file's modified UTF-8.
    Utf8(Cow<'a, [u8]>),
    /// `CONSTANT_Integer`.
    Integer(i32),
    /// `CONSTANT_Class`: the index of its name.
    Class(u16),
    /// `CONSTANT_Fieldref`, `CONSTANT_Methodref` or
    /// `CONSTANT_InterfaceMethodref`: tag, class index, name-and-type index.
    MemberRef(u8, u16, u16),
    /// `CONSTANT_NameAndType`: name index, descriptor index.
    NameAndType(u16, u16),
    /// `CONSTANT_Dynamic` or `CONSTANT_InvokeDynamic`: the name-and-type index.
    Dynamic(u16),
    /// Any other constant, by tag (its value is never needed).
    Other(u8),
    /// Slot 0 and the slot after a `Long` or `Double`.
    Unusable,
}

/// The parsed pool plus whatever the rewriter appended.
#[derive(Clone, Debug)]
pub(crate) struct ConstantPool<'a> {
    /// Index `i` holds slot `i`; slot 0 is [`Entry::Unusable`].
    entries: Vec<Entry<'a>>,
    /// The original entries' bytes, written back unchanged.
    original: &'a [u8],
    /// The appended entries, encoded.
    appended: Vec<u8>,
    /// The first slot of each entry, made at the first lookup: a rewrite
    /// looks up a constant per site and call, and a scan of a pool of
    /// thousands each time showed in the agent's start-up.
    first_slot: Option<FxHashMap<Entry<'a>, u16>>,
    /// The `CONSTANT_Class` slot of each name asked for so far: a stack
    /// map written in full names the same classes frame after frame.
    class_slots: FxHashMap<Vec<u8>, u16>,
}

impl<'a> ConstantPool<'a> {
    /// Parses `constant_pool_count` and the entries that follow it.
    pub(crate) fn parse(r: &mut Reader<'a>) -> Result<ConstantPool<'a>, BciError> {
        let count = r.u16()?;
        if count == 0 {
            return Err(BciError::Malformed {
                offset: r.pos() - 2,
                what: "constant_pool_count is 0".into(),
            });
        }
        ConstantPool::parse_entries(r, Some(count))
    }

    /// Parses the entries alone, as JVMTI's GetConstantPool hands them (no
    /// count before them): up to the end of `bytes`.
    pub(crate) fn parse_uncounted(bytes: &'a [u8]) -> Result<ConstantPool<'a>, BciError> {
        ConstantPool::parse_entries(&mut Reader::new(bytes), None)
    }

    /// The entries: `count - 1` slots of them, or with None every one up to
    /// the reader's end.
    fn parse_entries(r: &mut Reader<'a>, count: Option<u16>) -> Result<ConstantPool<'a>, BciError> {
        let start = r.clone();
        let start_pos = r.pos();
        let mut entries = Vec::with_capacity(usize::from(count.unwrap_or(0)));
        entries.push(Entry::Unusable);
        let more = |entries: &Vec<Entry<'a>>, r: &Reader<'a>| match count {
            Some(count) => entries.len() < usize::from(count),
            None => !r.at_end(),
        };
        while more(&entries, r) {
            let offset = r.pos();
            if entries.len() >= usize::from(MAX_COUNT) {
                return Err(BciError::Malformed {
                    offset,
                    what: "more constants than a pool holds".into(),
                });
            }
            let tag = r.u8()?;
            let entry = match tag {
                UTF8 => {
                    let len = r.u16()?;
                    Entry::Utf8(Cow::Borrowed(r.bytes(usize::from(len))?))
                }
                INTEGER => Entry::Integer(r.i32()?),
                FLOAT => {
                    r.u32()?;
                    Entry::Other(tag)
                }
                LONG | DOUBLE => {
                    r.bytes(8)?;
                    if entries.len() + 1 >= usize::from(count.unwrap_or(MAX_COUNT)) {
                        return Err(BciError::Malformed {
                            offset,
                            what: "a Long or Double in the last constant-pool slot".into(),
                        });
                    }
                    entries.push(Entry::Other(tag));
                    Entry::Unusable
                }
                CLASS => Entry::Class(r.u16()?),
                STRING | METHOD_TYPE | MODULE | PACKAGE => {
                    r.u16()?;
                    Entry::Other(tag)
                }
                FIELDREF | METHODREF | INTERFACE_METHODREF => {
                    Entry::MemberRef(tag, r.u16()?, r.u16()?)
                }
                NAME_AND_TYPE => Entry::NameAndType(r.u16()?, r.u16()?),
                METHOD_HANDLE => {
                    r.u8()?;
                    r.u16()?;
                    Entry::Other(tag)
                }
                DYNAMIC | INVOKE_DYNAMIC => {
                    r.u16()?;
                    Entry::Dynamic(r.u16()?)
                }
                _ => {
                    return Err(BciError::Malformed {
                        offset,
                        what: format!("unknown constant-pool tag {tag}"),
                    });
                }
            };
            entries.push(entry);
        }
        let len = r.pos() - start_pos;
        let original = start.clone().bytes(len)?;
        Ok(ConstantPool {
            entries,
            original,
            appended: Vec::new(),
            first_slot: None,
            class_slots: FxHashMap::default(),
        })
    }

    /// The `constant_pool_count` to write: one more than the highest index.
    pub(crate) fn count(&self) -> u16 {
        // `add` keeps this within u16.
        self.entries.len() as u16
    }

    /// Writes `constant_pool_count` and every entry, original ones first.
    pub(crate) fn write(&self, out: &mut Vec<u8>) {
        put_u16(out, self.count());
        out.extend_from_slice(self.original);
        out.extend_from_slice(&self.appended);
    }

    /// The entry at `index`, if the index is in range.
    pub(crate) fn entry(&self, index: u16) -> Option<&Entry<'a>> {
        self.entries.get(usize::from(index))
    }

    /// The tag of the constant at `index` (`Other` constants included), for
    /// typing `ldc`. `None` for a bad index.
    pub(crate) fn tag(&self, index: u16) -> Option<u8> {
        Some(match self.entry(index)? {
            Entry::Utf8(_) => UTF8,
            Entry::Integer(_) => INTEGER,
            Entry::Class(_) => CLASS,
            Entry::MemberRef(tag, ..) => *tag,
            Entry::NameAndType(..) => NAME_AND_TYPE,
            Entry::Dynamic(_) => DYNAMIC,
            Entry::Other(tag) => *tag,
            Entry::Unusable => return None,
        })
    }

    /// The bytes of the `CONSTANT_Utf8` at `index`.
    pub(crate) fn utf8(&self, index: u16) -> Result<&[u8], String> {
        match self.entry(index) {
            Some(Entry::Utf8(bytes)) => Ok(bytes),
            _ => Err(format!("constant #{index} is not a Utf8")),
        }
    }

    /// The internal name of the `CONSTANT_Class` at `index`.
    pub(crate) fn class_name(&self, index: u16) -> Result<&[u8], String> {
        match self.entry(index) {
            Some(Entry::Class(name)) => self.utf8(*name),
            _ => Err(format!("constant #{index} is not a Class")),
        }
    }

    /// Name and descriptor of the `CONSTANT_NameAndType` at `index`.
    pub(crate) fn name_and_type(&self, index: u16) -> Result<(&[u8], &[u8]), String> {
        match self.entry(index) {
            Some(Entry::NameAndType(name, descriptor)) => {
                Ok((self.utf8(*name)?, self.utf8(*descriptor)?))
            }
            _ => Err(format!("constant #{index} is not a NameAndType")),
        }
    }

    /// Class index, name and descriptor of the field or method reference at
    /// `index`.
    pub(crate) fn member_ref(&self, index: u16) -> Result<(u16, &[u8], &[u8]), String> {
        match self.entry(index) {
            Some(Entry::MemberRef(_, class, nat)) => {
                let (name, descriptor) = self.name_and_type(*nat)?;
                Ok((*class, name, descriptor))
            }
            _ => Err(format!(
                "constant #{index} is not a field or method reference"
            )),
        }
    }

    /// The descriptor of the `CONSTANT_Dynamic`/`InvokeDynamic` at `index`.
    pub(crate) fn dynamic_descriptor(&self, index: u16) -> Result<&[u8], String> {
        match self.entry(index) {
            Some(Entry::Dynamic(nat)) => Ok(self.name_and_type(*nat)?.1),
            _ => Err(format!("constant #{index} is not a dynamic constant")),
        }
    }

    /// Index of an entry equal to `wanted`, appending it (encoded as
    /// `encoded`) when there is none. Reusing keeps classes small and the
    /// output deterministic either way.
    fn find_or_add(&mut self, wanted: Entry<'a>, encoded: &[u8]) -> Result<u16, String> {
        let entries = &self.entries;
        let first_slot = self.first_slot.get_or_insert_with(|| {
            let mut index = FxHashMap::with_capacity_and_hasher(entries.len(), Default::default());
            for (slot, entry) in entries.iter().enumerate() {
                index.entry(entry.clone()).or_insert(slot as u16);
            }
            index
        });
        if let Some(&found) = first_slot.get(&wanted) {
            return Ok(found);
        }
        if self.entries.len() >= usize::from(MAX_COUNT) {
            return Err("the constant pool is full".into());
        }
        let slot = self.entries.len() as u16;
        self.appended.extend_from_slice(encoded);
        first_slot.insert(wanted.clone(), slot);
        self.entries.push(wanted);
        Ok(slot)
    }

    /// A `CONSTANT_Utf8` holding `text` (modified UTF-8 bytes).
    pub(crate) fn add_utf8(&mut self, text: &[u8]) -> Result<u16, String> {
        let len = u16::try_from(text.len()).map_err(|_| "a name longer than 65535 bytes")?;
        let mut encoded = vec![UTF8];
        put_u16(&mut encoded, len);
        encoded.extend_from_slice(text);
        self.find_or_add(Entry::Utf8(Cow::Owned(text.to_vec())), &encoded)
    }

    /// A `CONSTANT_Integer` holding `value`.
    pub(crate) fn add_integer(&mut self, value: i32) -> Result<u16, String> {
        let mut encoded = vec![INTEGER];
        put_i32(&mut encoded, value);
        self.find_or_add(Entry::Integer(value), &encoded)
    }

    /// A `CONSTANT_Class` naming `internal_name` (or an array descriptor).
    pub(crate) fn add_class(&mut self, internal_name: &[u8]) -> Result<u16, String> {
        if let Some(&slot) = self.class_slots.get(internal_name) {
            return Ok(slot);
        }
        let name = self.add_utf8(internal_name)?;
        let mut encoded = vec![CLASS];
        put_u16(&mut encoded, name);
        let slot = self.find_or_add(Entry::Class(name), &encoded)?;
        self.class_slots.insert(internal_name.to_vec(), slot);
        Ok(slot)
    }

    /// A `CONSTANT_Methodref` to `class.name descriptor`.
    pub(crate) fn add_method_ref(
        &mut self,
        class: &[u8],
        name: &[u8],
        descriptor: &[u8],
    ) -> Result<u16, String> {
        self.add_member_ref(METHODREF, class, name, descriptor)
    }

    /// A `CONSTANT_Fieldref` to `class.name descriptor`.
    pub(crate) fn add_field_ref(
        &mut self,
        class: &[u8],
        name: &[u8],
        descriptor: &[u8],
    ) -> Result<u16, String> {
        self.add_member_ref(FIELDREF, class, name, descriptor)
    }

    fn add_member_ref(
        &mut self,
        tag: u8,
        class: &[u8],
        name: &[u8],
        descriptor: &[u8],
    ) -> Result<u16, String> {
        let class = self.add_class(class)?;
        let name = self.add_utf8(name)?;
        let descriptor = self.add_utf8(descriptor)?;
        let mut encoded = vec![NAME_AND_TYPE];
        put_u16(&mut encoded, name);
        put_u16(&mut encoded, descriptor);
        let nat = self.find_or_add(Entry::NameAndType(name, descriptor), &encoded)?;
        let mut encoded = vec![tag];
        put_u16(&mut encoded, class);
        put_u16(&mut encoded, nat);
        self.find_or_add(Entry::MemberRef(tag, class, nat), &encoded)
    }
}

/// Decodes the JVM's modified UTF-8 (a NUL as `C0 80`, supplementary
/// characters as surrogate pairs) into a `String`, replacing what is not
/// valid with U+FFFD rather than failing: names are only reported.
pub(crate) fn decode_modified_utf8(bytes: &[u8]) -> String {
    // Nearly every name is ASCII, which both encodings write alike.
    if bytes.is_ascii() {
        return String::from_utf8(bytes.to_vec()).unwrap_or_default();
    }
    let mut units: Vec<u16> = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let continuation = |k: usize| bytes.get(i + k).filter(|&&c| c & 0xc0 == 0x80);
        if b < 0x80 {
            units.push(u16::from(b));
            i += 1;
        } else if b & 0xe0 == 0xc0
            && let Some(&c) = continuation(1)
        {
            units.push((u16::from(b & 0x1f) << 6) | u16::from(c & 0x3f));
            i += 2;
        } else if b & 0xf0 == 0xe0
            && let (Some(&c1), Some(&c2)) = (continuation(1), continuation(2))
        {
            units.push(
                (u16::from(b & 0x0f) << 12) | (u16::from(c1 & 0x3f) << 6) | u16::from(c2 & 0x3f),
            );
            i += 3;
        } else {
            units.push(0xfffd);
            i += 1;
        }
    }
    String::from_utf16_lossy(&units)
}

/// Encodes `text` in modified UTF-8, the inverse of [`decode_modified_utf8`].
pub(crate) fn encode_modified_utf8(text: &str) -> Vec<u8> {
    // ASCII without NUL (which modified UTF-8 writes in two bytes) is
    // written alike.
    if text.is_ascii() && !text.as_bytes().contains(&0) {
        return text.as_bytes().to_vec();
    }
    let mut out = Vec::with_capacity(text.len());
    for unit in text.encode_utf16() {
        match unit {
            0x0001..=0x007f => out.push(unit as u8),
            0x0000 | 0x0080..=0x07ff => {
                out.push(0xc0 | (unit >> 6) as u8);
                out.push(0x80 | (unit & 0x3f) as u8);
            }
            _ => {
                out.push(0xe0 | (unit >> 12) as u8);
                out.push(0x80 | ((unit >> 6) & 0x3f) as u8);
                out.push(0x80 | (unit & 0x3f) as u8);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// count 5: #1 Utf8 "A", #2 Class #1, #3-4 Long, then the end.
    fn sample() -> Vec<u8> {
        let mut b = vec![0, 5, UTF8, 0, 1, b'A', CLASS, 0, 1, LONG];
        b.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 7]);
        b
    }

    #[test]
    fn parses_and_writes_back_unchanged() {
        let bytes = sample();
        let pool = ConstantPool::parse(&mut Reader::new(&bytes)).unwrap();
        assert_eq!(pool.count(), 5);
        assert_eq!(pool.class_name(2).unwrap(), b"A");
        assert_eq!(pool.entry(4), Some(&Entry::Unusable));
        assert_eq!(pool.tag(3), Some(LONG));
        let mut out = Vec::new();
        pool.write(&mut out);
        assert_eq!(out, bytes);
    }

    #[test]
    fn parses_a_pool_handed_without_its_count() {
        let bytes = sample();
        let pool = ConstantPool::parse_uncounted(&bytes[2..]).unwrap();
        assert_eq!(pool.count(), 5);
        assert_eq!(pool.class_name(2).unwrap(), b"A");
        assert!(ConstantPool::parse_uncounted(&bytes[2..bytes.len() - 1]).is_err());
    }

    #[test]
    fn appends_after_the_original_entries_and_reuses_equal_ones() {
        let bytes = sample();
        let mut pool = ConstantPool::parse(&mut Reader::new(&bytes)).unwrap();
        assert_eq!(pool.add_class(b"A").unwrap(), 2);
        assert_eq!(pool.add_integer(0x2000_0001).unwrap(), 5);
        let m = pool.add_method_ref(b"T", b"CallSite", b"(II)V").unwrap();
        assert_eq!(
            m, 11,
            "Utf8 T, Class, Utf8 name, Utf8 desc, NameAndType, Methodref"
        );
        assert_eq!(pool.add_method_ref(b"T", b"CallSite", b"(II)V").unwrap(), m);
        assert_eq!(
            pool.member_ref(m).unwrap(),
            (7, &b"CallSite"[..], &b"(II)V"[..])
        );
        let mut out = Vec::new();
        pool.write(&mut out);
        assert_eq!(&out[..2], &[0, 12]);
        assert_eq!(&out[2..bytes.len()], &bytes[2..]);
        let reparsed = ConstantPool::parse(&mut Reader::new(&out)).unwrap();
        assert_eq!(reparsed.member_ref(m).unwrap().1, b"CallSite");
        assert_eq!(reparsed.entry(5), Some(&Entry::Integer(0x2000_0001)));
    }

    #[test]
    fn refuses_to_overflow_the_pool() {
        let mut bytes = vec![0xff, 0xff];
        for _ in 1..0xffff {
            bytes.extend_from_slice(&[INTEGER, 0, 0, 0, 9]);
        }
        let mut pool = ConstantPool::parse(&mut Reader::new(&bytes)).unwrap();
        assert_eq!(pool.add_integer(9).unwrap(), 1);
        assert!(pool.add_integer(10).is_err());
    }

    #[test]
    fn rejects_unknown_tags_and_truncation() {
        assert!(ConstantPool::parse(&mut Reader::new(&[0, 2, 99])).is_err());
        assert!(ConstantPool::parse(&mut Reader::new(&[0, 2, UTF8, 0, 5, b'a'])).is_err());
        assert!(
            ConstantPool::parse(&mut Reader::new(&[0, 2, LONG, 0, 0, 0, 0, 0, 0, 0, 0])).is_err()
        );
    }

    #[test]
    fn modified_utf8_round_trips() {
        for text in ["<init>", "caf\u{e9}", "nul\0here", "\u{1f600}x", ""] {
            let encoded = encode_modified_utf8(text);
            assert!(!encoded.contains(&0), "{text:?}");
            assert_eq!(decode_modified_utf8(&encoded), text);
        }
        assert_eq!(
            encode_modified_utf8("\u{1f600}").len(),
            6,
            "a surrogate pair"
        );
        assert_eq!(decode_modified_utf8(&[b'a', 0xc3]), "a\u{fffd}");
    }
}
