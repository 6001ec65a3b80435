//! The profiling run the JVMTI entry points dispatch to (mod.rs), and its
//! change when a profile of a running JVM starts and stops (attach.rs).

use super::run::profiler::Profiler;
use std::sync::atomic::{AtomicPtr, Ordering};

/// The profiling run of this process: set at load time for the JVM's whole
/// life, or, when attached to a running JVM, from each attach to its stop
/// (`attach.rs`). A run is never freed: a callback that began before its
/// stop may still use it, and the JVM cannot unload the library.
static PROFILER: AtomicPtr<Profiler> = AtomicPtr::new(std::ptr::null_mut());

/// The current run, if any.
pub fn profiler() -> Option<&'static Profiler> {
    let current = PROFILER.load(Ordering::Acquire);
    // SAFETY: PROFILER only ever holds null or a pointer from Box::leak,
    // never freed (see above).
    unsafe { current.as_ref() }
}

/// Makes `profiler` the current run; false (and nothing changed) when one
/// is already current.
pub fn make_current(profiler: Profiler) -> Result<&'static Profiler, Box<Profiler>> {
    let boxed = Box::into_raw(Box::new(profiler));
    match PROFILER.compare_exchange(
        std::ptr::null_mut(),
        boxed,
        Ordering::AcqRel,
        Ordering::Acquire,
    ) {
        // SAFETY: just leaked; never freed from now on.
        Ok(_) => Ok(unsafe { &*boxed }),
        // SAFETY: not published: still ours alone.
        Err(_) => Err(unsafe { Box::from_raw(boxed) }),
    }
}

/// No run is current any more (a profile of a running JVM stopped). The
/// run itself stays in memory (see PROFILER).
pub fn clear_current(profiler: &'static Profiler) {
    let _ = PROFILER.compare_exchange(
        profiler as *const Profiler as *mut Profiler,
        std::ptr::null_mut(),
        Ordering::AcqRel,
        Ordering::Acquire,
    );
}
