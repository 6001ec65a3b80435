//! Big-endian reading and writing: the only place that knows the byte order.
//!
//! Every read is bounds-checked and fails with [`BciError::Truncated`]
//! instead of panicking, because the bytes come from whatever class the JVM
//! is loading.

use super::BciError;

/// A cursor over class-file bytes. Offsets in errors are relative to the
/// slice the reader was made from.
#[derive(Clone, Debug)]
pub(crate) struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// A reader at the start of `data`.
    pub(crate) fn new(data: &'a [u8]) -> Reader<'a> {
        Reader { data, pos: 0 }
    }

    /// The current offset.
    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    /// True when every byte has been read.
    pub(crate) fn at_end(&self) -> bool {
        self.pos == self.data.len()
    }

    /// The next `n` bytes.
    pub(crate) fn bytes(&mut self, n: usize) -> Result<&'a [u8], BciError> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&end| end <= self.data.len())
            .ok_or(BciError::Truncated { offset: self.pos })?;
        let slice = &self.data[self.pos..end];
        self.pos = end;
        Ok(slice)
    }

    /// The next byte.
    pub(crate) fn u8(&mut self) -> Result<u8, BciError> {
        Ok(self.bytes(1)?[0])
    }

    /// The next big-endian `u16`.
    pub(crate) fn u16(&mut self) -> Result<u16, BciError> {
        let b = self.bytes(2)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }

    /// The next big-endian `u32`.
    pub(crate) fn u32(&mut self) -> Result<u32, BciError> {
        let b = self.bytes(4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// The next big-endian `i32`.
    pub(crate) fn i32(&mut self) -> Result<i32, BciError> {
        Ok(self.u32()? as i32)
    }
}

/// The big-endian `u16` at byte `at`, or `None` past the end.
pub(crate) fn u16_at(bytes: &[u8], at: usize) -> Option<u16> {
    let b = bytes.get(at..at.checked_add(2)?)?;
    Some(u16::from_be_bytes([b[0], b[1]]))
}

/// The big-endian `u32` at byte `at`, or `None` past the end.
pub(crate) fn u32_at(bytes: &[u8], at: usize) -> Option<u32> {
    let b = bytes.get(at..at.checked_add(4)?)?;
    Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

/// The big-endian `i32` at byte `at`, or `None` past the end.
pub(crate) fn i32_at(bytes: &[u8], at: usize) -> Option<i32> {
    u32_at(bytes, at).map(|v| v as i32)
}

/// Appends a big-endian `u16`.
pub(crate) fn put_u16(out: &mut Vec<u8>, value: u16) {
    out.extend_from_slice(&value.to_be_bytes());
}

/// Appends a big-endian `u32`.
pub(crate) fn put_u32(out: &mut Vec<u8>, value: u32) {
    out.extend_from_slice(&value.to_be_bytes());
}

/// Appends a big-endian `i32`.
pub(crate) fn put_i32(out: &mut Vec<u8>, value: i32) {
    out.extend_from_slice(&value.to_be_bytes());
}

/// Appends an attribute: name index, `u4` length, then `body`. Fails when the
/// body does not fit a `u4` length (it cannot, coming from a class file, but
/// the check costs nothing).
pub(crate) fn put_attribute(out: &mut Vec<u8>, name_index: u16, body: &[u8]) -> Result<(), String> {
    let len = u32::try_from(body.len()).map_err(|_| "attribute longer than 4 GiB".to_string())?;
    put_u16(out, name_index);
    put_u32(out, len);
    out.extend_from_slice(body);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_big_endian_and_reports_truncation_offsets() {
        let mut r = Reader::new(&[0x12, 0x34, 0xff, 0xff, 0xff, 0xfe, 0x80]);
        assert_eq!(r.u16().unwrap(), 0x1234);
        assert_eq!(r.i32().unwrap(), -2);
        assert_eq!(r.pos(), 6);
        assert!(matches!(r.u16(), Err(BciError::Truncated { offset: 6 })));
        assert_eq!(r.u8().unwrap(), 0x80);
        assert!(r.at_end());
    }

    #[test]
    fn writes_big_endian() {
        let mut out = Vec::new();
        put_u16(&mut out, 0xabcd);
        put_u32(&mut out, 1);
        put_i32(&mut out, -1);
        assert_eq!(out, [0xab, 0xcd, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff]);
    }
}
