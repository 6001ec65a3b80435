//! The methods whose allocations a counting rewrite left uncounted: those
//! that allocate but could not be rewritten (grown past 64 KiB of code, a
//! constant pool with no room left, more locals than a method may have...),
//! so that the agent can name them rather than count them as nothing.

use super::class_file::{ClassFile, CodeAttribute};
use super::code;
use super::count::CountingOutcome;
use super::{code_attributes, name_and_descriptor};

/// `new`, `newarray`, `anewarray`, `multianewarray`.
const ALLOCATING: [u8; 4] = [187, 188, 189, 197];

/// Skip reasons that leave nothing uncounted.
const NOTHING_TO_COUNT: [&str; 2] = ["no allocation", "no code, or several Code attributes"];

/// `(name + descriptor, why)` of each method of `class_file` that allocates
/// but that `outcome` (its counting rewrite) left as it was. A method whose
/// code cannot be decoded is named too: it may allocate.
pub fn uncounted_methods(class_file: &[u8], outcome: &CountingOutcome) -> Vec<(String, String)> {
    let skipped: Vec<_> = outcome
        .methods
        .iter()
        .filter(|m| !m.rewritten)
        .filter_map(|m| Some((m.index, m.skip_reason.as_deref()?)))
        .filter(|(_, why)| !NOTHING_TO_COUNT.contains(why))
        .collect();
    if skipped.is_empty() {
        return Vec::new();
    }
    let Ok(class) = ClassFile::parse(class_file) else {
        return Vec::new();
    };
    let mut uncounted = Vec::new();
    for (index, why) in skipped {
        let Some(method) = class.methods.get(usize::from(index)) else {
            continue;
        };
        let allocates = code_attributes(&class, method).first().is_none_or(|code| {
            let decoded = CodeAttribute::parse(code.info)
                .ok()
                .and_then(|code| code::decode(code.code).ok());
            decoded.is_none_or(|insns| insns.iter().any(|i| ALLOCATING.contains(&i.opcode)))
        });
        if !allocates {
            continue;
        }
        let name = name_and_descriptor(&class, method)
            .map(|(name, descriptor)| {
                String::from_utf8_lossy(&[name, descriptor].concat()).into_owned()
            })
            .unwrap_or_else(|_| format!("method #{index}"));
        uncounted.push((name, why.to_owned()));
    }
    uncounted
}
