//! Class names of a binary profile as its records give them, read record by
//! record: UTF8 records name strings, LOAD CLASS records give a class
//! serial its name. A test walking the records for something else hands
//! each one over first, then asks the name of a serial it meets.

use hprof_rs::format::binary::RecordBody;
use std::collections::HashMap;

/// The names seen so far.
#[derive(Debug, Default)]
pub struct ClassNames {
    strings: HashMap<u64, String>,
    classes: HashMap<u32, String>,
}

impl ClassNames {
    /// Takes in what `body` says of names (nothing for other records).
    pub fn note(&mut self, body: &RecordBody) {
        match body {
            RecordBody::Utf8 { id, text } => {
                self.strings
                    .insert(*id, String::from_utf8_lossy(text).into_owned());
            }
            RecordBody::LoadClass {
                class_serial,
                name_id,
                ..
            } => {
                let name = self.strings.get(name_id).cloned().unwrap_or_default();
                self.classes.insert(*class_serial, name);
            }
            _ => {}
        }
    }

    /// The name of class `serial`, if its LOAD CLASS came.
    pub fn of(&self, serial: u32) -> Option<&str> {
        self.classes.get(&serial).map(String::as_str)
    }
}
