//! Identifiers for the binary format.
//!
//! Like the original agent, identifiers of different kinds live in different
//! ranges (the kind in the top four bits of a 32-bit value), so a reader that
//! mixes them up shows it at once, and all of them fit in 4-byte identifiers.
//!
//! Files with 8-byte identifiers (those with heap dumps, whose object
//! identifiers are the JVM's addresses) set bit 56 in every identifier the
//! agent makes up: no user-space address reaches it, so they never collide.

use std::sync::atomic::{AtomicU64, Ordering};

/// The kinds of identifier and their top-four-bit tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdSpace {
    /// Java objects (thread objects, class objects, later heap objects).
    Object = 0x5,
    /// Stack frames (binary FRAME records).
    Frame = 0x7,
    /// Strings (binary UTF8 records).
    Name = 0xA,
}

/// Largest slot number that fits below the four tag bits.
const MAX_SLOT: u64 = (1 << 28) - 1;

/// Set in every made-up identifier of a file with 8-byte identifiers.
pub const WIDE_BIT: u64 = 1 << 56;

impl IdSpace {
    /// The identifier of the `slot`th entry (slots count from 1); `wide`
    /// for files with 8-byte identifiers.
    pub fn id(self, slot: u64, wide: bool) -> u64 {
        debug_assert!(
            (1..=MAX_SLOT).contains(&slot),
            "identifier slot out of range"
        );
        let id = ((self as u64) << 28) | (slot & MAX_SLOT);
        if wide { id | WIDE_BIT } else { id }
    }

    /// The slot of an identifier made by [`IdSpace::id`].
    pub fn slot(id: u64) -> u64 {
        id & MAX_SLOT
    }
}

/// Hands out object identifiers; shared by every collector that tags objects.
#[derive(Debug)]
pub struct ObjectIds {
    next_slot: AtomicU64,
    wide: bool,
}

impl Default for ObjectIds {
    fn default() -> Self {
        Self::new(false)
    }
}

impl ObjectIds {
    /// Identifiers for a file with 8-byte identifiers when `wide`.
    pub fn new(wide: bool) -> Self {
        Self {
            next_slot: AtomicU64::new(1),
            wide,
        }
    }

    /// A new, never used object identifier.
    pub fn next(&self) -> u64 {
        let slot = self.next_slot.fetch_add(1, Ordering::Relaxed);
        IdSpace::Object.id(slot.min(MAX_SLOT), self.wide)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_carry_their_kind_in_the_top_bits() {
        assert_eq!(IdSpace::Object.id(1, false), 0x5000_0001);
        assert_eq!(IdSpace::Frame.id(0x193, false), 0x7000_0193);
        assert_eq!(IdSpace::Name.id(2, false), 0xA000_0002);
        assert_eq!(IdSpace::Name.id(2, true), 0x0100_0000_A000_0002);
        assert_eq!(IdSpace::slot(0x0100_0000_A000_0002), 2);
        assert_eq!(ObjectIds::new(true).next(), 0x0100_0000_5000_0001);
    }

    #[test]
    fn object_ids_are_unique_and_increasing() {
        let ids = ObjectIds::default();
        let a = ids.next();
        let b = ids.next();
        assert_eq!(a, 0x5000_0001);
        assert_eq!(b, 0x5000_0002);
    }
}
