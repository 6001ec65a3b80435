//! Encoding binary records. (Being implemented.)
use super::records::*;

/// Append the file header (`JAVA PROFILE 1.0.x\0`, u4 id size, u8 time stamp).
pub fn encode_header(_header: &FileHeader, _out: &mut Vec<u8>) {
    unimplemented!("encode_header")
}

/// Append one record (tag, time, length, body) with identifiers of `id_size` bytes.
pub fn encode_record(_record: &Record, _id_size: u32, _out: &mut Vec<u8>) {
    unimplemented!("encode_record")
}
