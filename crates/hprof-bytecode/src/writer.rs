//! Re-emits a class: the original bytes everywhere except the grown
//! constant pool and the rewritten `Code` attributes.

use super::bytes::{put_attribute, put_u16};
use super::class_file::ClassFile;

/// The class file with `new_code[i]` (when `Some`) as the body of method
/// `i`'s `Code` attribute.
pub(crate) fn write_class(
    class: &ClassFile<'_>,
    new_code: &[Option<Vec<u8>>],
) -> Result<Vec<u8>, String> {
    write_class_with_members(class, class.before_methods, new_code)
}

/// As [`write_class`], with `before_methods` (flags, names, interfaces and
/// fields) in place of the class's own.
pub(crate) fn write_class_with_members(
    class: &ClassFile<'_>,
    before_methods: &[u8],
    new_code: &[Option<Vec<u8>>],
) -> Result<Vec<u8>, String> {
    let grown: usize = new_code.iter().flatten().map(Vec::len).sum();
    let mut out = Vec::with_capacity(class.header.len() + before_methods.len() + grown + 4096);
    out.extend_from_slice(class.header);
    class.pool.write(&mut out);
    out.extend_from_slice(before_methods);
    put_u16(&mut out, class.methods.len() as u16);
    for (method, code) in class.methods.iter().zip(new_code) {
        put_u16(&mut out, method.access_flags);
        put_u16(&mut out, method.name_index);
        put_u16(&mut out, method.descriptor_index);
        put_u16(&mut out, method.attributes.len() as u16);
        for attribute in &method.attributes {
            let is_code = class
                .pool
                .utf8(attribute.name_index)
                .is_ok_and(|n| n == b"Code");
            let body = match code {
                Some(body) if is_code => body,
                _ => attribute.info,
            };
            put_attribute(&mut out, attribute.name_index, body)?;
        }
    }
    out.extend_from_slice(class.after_methods);
    Ok(out)
}
