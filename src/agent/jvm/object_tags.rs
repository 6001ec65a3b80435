//! The agent's JVMTI object tags: what a tag's value says. An object the
//! allocation counting tagged (heap=sites) has the top bit set, the rest
//! carrying its site and size (`modes/heap_sites/alloc.rs`); class objects
//! and threads carry small identifiers instead (`run/classes.rs`). The
//! JVM's callbacks that hand over a tag (ObjectFree, the heap walks) tell
//! the two apart here.

/// Top bit of every allocation tag.
pub const ALLOCATION_TAG: u64 = 1 << 63;

/// True for the tag of an object the allocation counting tagged.
pub fn is_allocation_tag(tag: u64) -> bool {
    tag & ALLOCATION_TAG != 0
}
