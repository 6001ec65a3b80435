//! Byte order: the one place in the crate that knows HPROF is big-endian.
//!
//! Every number in an HPROF file and in a net= command frame is stored high
//! byte first: u1, u2, u4 and u8 fields, and identifiers of the size the file
//! header announces (4 or 8 bytes). The readers, writers, the heap sub-record
//! walker and the command frames all go through these functions, so a
//! question about byte order has one answer to read.

use std::io::{self, Read};

/// The u2 at byte `at` of `bytes`, or `None` when it runs past the end.
pub fn u2_at(bytes: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes(array_at(bytes, at)?))
}

/// The u4 at byte `at` of `bytes`, or `None` when it runs past the end.
pub fn u4_at(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(array_at(bytes, at)?))
}

/// The u8 at byte `at` of `bytes`, or `None` when it runs past the end.
pub fn u8_at(bytes: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_be_bytes(array_at(bytes, at)?))
}

/// The identifier of `id_size` bytes at byte `at`, or `None` when it runs
/// past the end. Any size is read as a big-endian number; a size over 8
/// keeps the low 64 bits.
pub fn id_at(bytes: &[u8], at: usize, id_size: u32) -> Option<u64> {
    let end = at.checked_add(id_size as usize)?;
    let slice = bytes.get(at..end)?;
    Some(slice.iter().fold(0u64, |v, b| (v << 8) | u64::from(*b)))
}

/// Overwrites the u4 at byte `at`; `None` (and nothing written) when it
/// would run past the end.
pub fn set_u4_at(bytes: &mut [u8], at: usize, value: u32) -> Option<()> {
    let end = at.checked_add(4)?;
    bytes
        .get_mut(at..end)?
        .copy_from_slice(&value.to_be_bytes());
    Some(())
}

/// Overwrites the identifier of `id_size` bytes (4 or 8) at byte `at`,
/// dropping the high bytes of `value` that do not fit; `None` (and nothing
/// written) for another size or a slot past the end.
pub fn set_id_at(bytes: &mut [u8], at: usize, id_size: u32, value: u64) -> Option<()> {
    if id_size != 4 && id_size != 8 {
        return None;
    }
    let end = at.checked_add(id_size as usize)?;
    let slot = bytes.get_mut(at..end)?;
    slot.copy_from_slice(&value.to_be_bytes()[8 - id_size as usize..]);
    Some(())
}

/// The four bytes of a u4, for a caller that writes them somewhere later
/// (a length fixed in a file after the record was sent).
pub fn u4_bytes(value: u32) -> [u8; 4] {
    value.to_be_bytes()
}

/// Reads a u2 from a stream.
pub fn read_u2(input: &mut impl Read) -> io::Result<u16> {
    let mut bytes = [0u8; 2];
    input.read_exact(&mut bytes)?;
    Ok(u16::from_be_bytes(bytes))
}

/// Reads a u4 from a stream.
pub fn read_u4(input: &mut impl Read) -> io::Result<u32> {
    let mut bytes = [0u8; 4];
    input.read_exact(&mut bytes)?;
    Ok(u32::from_be_bytes(bytes))
}

fn array_at<const N: usize>(bytes: &[u8], at: usize) -> Option<[u8; N]> {
    let end = at.checked_add(N)?;
    bytes.get(at..end)?.try_into().ok()
}

/// Big-endian appends to a buffer.
pub trait BigEndianOut {
    /// Append one byte.
    fn put_u1(&mut self, v: u8);
    /// Append a big-endian u2.
    fn put_u2(&mut self, v: u16);
    /// Append a big-endian u4.
    fn put_u4(&mut self, v: u32);
    /// Append a big-endian u8 (the same bytes as two u4, high word first).
    fn put_u8(&mut self, v: u64);
    /// Append an identifier as a big-endian number of `id_size` bytes, the
    /// size the file header announces: 4 keeps the low 32 bits, a size over
    /// 8 pads with leading zeros. Any size gives the bytes the header
    /// promises, so a caller's odd size makes an odd file, never a panic.
    fn put_id(&mut self, id: u64, id_size: u32);
    /// Overwrite the u4 at byte position `at` (used to fill in lengths).
    fn patch_u4(&mut self, at: usize, v: u32);
}

impl BigEndianOut for Vec<u8> {
    fn put_u1(&mut self, v: u8) {
        self.push(v);
    }
    fn put_u2(&mut self, v: u16) {
        self.extend_from_slice(&v.to_be_bytes());
    }
    fn put_u4(&mut self, v: u32) {
        self.extend_from_slice(&v.to_be_bytes());
    }
    fn put_u8(&mut self, v: u64) {
        self.extend_from_slice(&v.to_be_bytes());
    }
    fn put_id(&mut self, id: u64, id_size: u32) {
        match id_size {
            4 => self.put_u4(id as u32),
            8 => self.put_u8(id),
            _ => {
                let bytes = id.to_be_bytes();
                for place in (0..id_size as usize).rev() {
                    self.push(if place < 8 { bytes[7 - place] } else { 0 });
                }
            }
        }
    }
    fn patch_u4(&mut self, at: usize, v: u32) {
        self[at..at + 4].copy_from_slice(&v.to_be_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_high_byte_first() {
        let bytes = [0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09];
        assert_eq!(u2_at(&bytes, 1), Some(0x0203));
        assert_eq!(u4_at(&bytes, 0), Some(0x0102_0304));
        assert_eq!(u8_at(&bytes, 1), Some(0x0203_0405_0607_0809));
        assert_eq!(id_at(&bytes, 5, 4), Some(0x0607_0809));
        assert_eq!(id_at(&bytes, 1, 8), u8_at(&bytes, 1));
    }

    #[test]
    fn reads_past_the_end_are_none_not_panics() {
        let bytes = [0u8; 4];
        assert_eq!(u4_at(&bytes, 1), None);
        assert_eq!(u2_at(&bytes, usize::MAX), None);
        assert_eq!(id_at(&bytes, 0, 8), None);
        assert_eq!(id_at(&bytes, usize::MAX, 4), None);
        let mut out = [0u8; 4];
        assert_eq!(set_u4_at(&mut out, 1, 7), None);
        assert_eq!(set_id_at(&mut out, 0, 8, 7), None);
        assert_eq!(set_id_at(&mut out, 0, 3, 7), None);
        assert_eq!(out, [0; 4]);
    }

    #[test]
    fn what_is_written_reads_back() {
        let mut out = Vec::new();
        out.put_u1(9);
        out.put_u2(0xBEEF);
        out.put_u4(0xDEAD_BEEF);
        out.put_u8(0x0102_0304_0506_0708);
        out.put_id(0x1_0000_0007, 4);
        out.put_id(0x1_0000_0007, 8);
        assert_eq!(out.len(), 1 + 2 + 4 + 8 + 4 + 8);
        assert_eq!(u2_at(&out, 1), Some(0xBEEF));
        assert_eq!(u4_at(&out, 3), Some(0xDEAD_BEEF));
        assert_eq!(u8_at(&out, 7), Some(0x0102_0304_0506_0708));
        assert_eq!(id_at(&out, 15, 4), Some(7));
        assert_eq!(id_at(&out, 19, 8), Some(0x1_0000_0007));
        set_u4_at(&mut out, 3, 5).unwrap();
        set_id_at(&mut out, 19, 8, 6).unwrap();
        assert_eq!((u4_at(&out, 3), id_at(&out, 19, 8)), (Some(5), Some(6)));
        let mut stream = &out[1..7];
        assert_eq!(read_u2(&mut stream).unwrap(), 0xBEEF);
        assert_eq!(read_u4(&mut stream).unwrap(), 5);
        assert!(read_u2(&mut stream).is_err());
    }
}
