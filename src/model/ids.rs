//! Identifiers for the binary format.
//!
//! Like the original agent, identifiers of different kinds live in different
//! ranges (the kind in the top four bits of a 32-bit value), so a reader that
//! mixes them up shows it at once, and all of them fit in 4-byte identifiers.

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

impl IdSpace {
    /// The identifier of the `slot`th entry (slots count from 1).
    pub fn id(self, slot: u64) -> u64 {
        debug_assert!(
            (1..=MAX_SLOT).contains(&slot),
            "identifier slot out of range"
        );
        ((self as u64) << 28) | (slot & MAX_SLOT)
    }
}

/// Hands out object identifiers; shared by every collector that tags objects.
#[derive(Debug)]
pub struct ObjectIds {
    next_slot: AtomicU64,
}

impl Default for ObjectIds {
    fn default() -> Self {
        Self {
            next_slot: AtomicU64::new(1),
        }
    }
}

impl ObjectIds {
    /// A new, never used object identifier.
    pub fn next(&self) -> u64 {
        let slot = self.next_slot.fetch_add(1, Ordering::Relaxed);
        IdSpace::Object.id(slot.min(MAX_SLOT))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_carry_their_kind_in_the_top_bits() {
        assert_eq!(IdSpace::Object.id(1), 0x5000_0001);
        assert_eq!(IdSpace::Frame.id(0x193), 0x7000_0193);
        assert_eq!(IdSpace::Name.id(2), 0xA000_0002);
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
