//! A table of per-index cells that grows without a lock: what the
//! MonitorContendedEntered callback reads. That callback runs while the
//! thread already holds the monitor, so it lengthens the critical section:
//! it may read the clock and add, but neither allocate nor take a lock
//! that every thread shares. Cells live in fixed segments made on first
//! use (by the callbacks allowed to allocate) and never move or go away, so
//! a reader needs one atomic load to find its cell.

use std::sync::OnceLock;

/// Cells per segment.
const SEGMENT_CELLS: usize = 1024;
/// Segments: 4 million cells in all, far above the threads (or contention
/// rows) one run sees; an index beyond is simply not counted.
const SEGMENTS: usize = 4096;

/// Cells of type `T`, by index, made on demand.
pub struct Table<T> {
    segments: Box<[OnceLock<Box<[T]>>]>,
}

impl<T: Default> Table<T> {
    /// An empty table (the segment list only: 32 KiB).
    pub fn new() -> Self {
        Self {
            segments: (0..SEGMENTS).map(|_| OnceLock::new()).collect(),
        }
    }

    /// The cell at `index` if its segment exists: no allocation, no lock.
    #[inline]
    pub fn get(&self, index: usize) -> Option<&T> {
        let segment = self.segments.get(index / SEGMENT_CELLS)?.get()?;
        segment.get(index % SEGMENT_CELLS)
    }

    /// The cell at `index`, making its segment on first use (allocates).
    pub fn get_or_make(&self, index: usize) -> Option<&T> {
        let segment = self
            .segments
            .get(index / SEGMENT_CELLS)?
            .get_or_init(|| (0..SEGMENT_CELLS).map(|_| T::default()).collect());
        segment.get(index % SEGMENT_CELLS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    #[test]
    fn cells_exist_once_made_and_keep_their_values() {
        let table: Table<AtomicU64> = Table::new();
        assert!(table.get(5).is_none(), "no segment yet");
        table.get_or_make(5).unwrap().store(7, Ordering::Relaxed);
        assert_eq!(table.get(5).unwrap().load(Ordering::Relaxed), 7);
        // The same segment holds its neighbours; the next one is not made.
        assert_eq!(
            table
                .get(SEGMENT_CELLS - 1)
                .unwrap()
                .load(Ordering::Relaxed),
            0
        );
        assert!(table.get(SEGMENT_CELLS).is_none());
        table.get_or_make(SEGMENT_CELLS + 3).unwrap();
        assert_eq!(table.get(5).unwrap().load(Ordering::Relaxed), 7);
        // Beyond the last segment: none, never a panic.
        assert!(table.get_or_make(SEGMENTS * SEGMENT_CELLS).is_none());
        assert!(table.get(usize::MAX).is_none());
    }
}
