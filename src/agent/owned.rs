//! Data one thread updates on a hot path and another thread sometimes
//! reads, without a locked instruction on the hot path.
//!
//! The owner marks itself busy with a plain store, checks whether a
//! collector is at work, and only then takes a lock. The collector
//! announces itself, then makes every thread of the process execute a
//! memory barrier (Linux `membarrier`), so that each owner has either
//! published its busy mark or will see the announcement; it waits for busy
//! owners and takes the lock. Where `membarrier` is missing, owners fence
//! after their store instead (correct, a little slower).

use parking_lot::Mutex;
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, Ordering, compiler_fence, fence};

/// Set while a collector reads owned data.
static COLLECTING: AtomicBool = AtomicBool::new(false);
/// One collector at a time.
static COLLECTOR: Mutex<()> = Mutex::new(());
/// Whether `membarrier` is registered for this process.
static MEMBARRIER: std::sync::OnceLock<bool> = std::sync::OnceLock::new();

const MEMBARRIER_CMD_PRIVATE_EXPEDITED: libc::c_int = 1 << 3;
const MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED: libc::c_int = 1 << 4;

fn membarrier_ready() -> bool {
    *MEMBARRIER.get_or_init(|| {
        // SAFETY: a plain system call with no pointers.
        unsafe {
            libc::syscall(
                libc::SYS_membarrier,
                MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED,
                0,
                0,
            ) == 0
        }
    })
}

/// A value owned by one thread, readable by a collector.
pub struct Owned<T> {
    busy: AtomicBool,
    lock: Mutex<()>,
    value: UnsafeCell<T>,
}

// SAFETY: `value` is only touched by the owner in `update` (busy set, no
// collector announced) or under `lock`; the protocol in the module comment
// keeps the two apart.
unsafe impl<T: Send> Sync for Owned<T> {}

impl<T: Default> Default for Owned<T> {
    fn default() -> Self {
        Self::new(T::default())
    }
}

impl<T> Owned<T> {
    /// Wraps `value`.
    pub fn new(value: T) -> Self {
        // Registering early keeps the first collection from paying for it.
        let _ = membarrier_ready();
        Self {
            busy: AtomicBool::new(false),
            lock: Mutex::new(()),
            value: UnsafeCell::new(value),
        }
    }

    /// The owner's update. Must only be called by the one owning thread.
    pub fn update<R>(&self, body: impl FnOnce(&mut T) -> R) -> R {
        self.busy.store(true, Ordering::Relaxed);
        if membarrier_ready() {
            compiler_fence(Ordering::SeqCst);
        } else {
            fence(Ordering::SeqCst);
        }
        if COLLECTING.load(Ordering::Relaxed) {
            self.busy.store(false, Ordering::Release);
            let _guard = self.lock.lock();
            // SAFETY: under the lock, which the collector also holds while reading.
            return body(unsafe { &mut *self.value.get() });
        }
        // SAFETY: busy is visible to any collector, which waits for it to clear.
        let result = body(unsafe { &mut *self.value.get() });
        self.busy.store(false, Ordering::Release);
        result
    }
}

/// Runs `body` with collector access to each of `items`.
pub fn collect<T>(items: &[&Owned<T>], mut body: impl FnMut(&mut T)) {
    let _one = COLLECTOR.lock();
    COLLECTING.store(true, Ordering::SeqCst);
    if membarrier_ready() {
        // SAFETY: a plain system call with no pointers.
        unsafe { libc::syscall(libc::SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) };
    }
    for item in items {
        let _guard = item.lock.lock();
        while item.busy.load(Ordering::Acquire) {
            std::thread::yield_now();
        }
        // SAFETY: the owner is not in its fast path and cannot enter it
        // (it sees COLLECTING and takes the lock we hold).
        body(unsafe { &mut *item.value.get() });
    }
    COLLECTING.store(false, Ordering::Release);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn collector_sees_every_update_exactly_once() {
        let owned: Arc<Owned<u64>> = Arc::default();
        let writer = {
            let owned = owned.clone();
            std::thread::spawn(move || {
                for _ in 0..200_000 {
                    owned.update(|v| *v += 1);
                }
            })
        };
        let mut taken = 0;
        while !writer.is_finished() {
            collect(&[&*owned], |v| taken += std::mem::take(v));
        }
        writer.join().unwrap();
        collect(&[&*owned], |v| taken += std::mem::take(v));
        assert_eq!(taken, 200_000);
    }
}
