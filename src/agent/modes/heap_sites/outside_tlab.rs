//! JDK 11's heap sampler after an object allocated outside the TLAB.
//!
//! While every object is to be reported (a sampling interval of 0: the
//! live sample's exact start, during which the classes loaded before VM
//! init are counted from its events, or `alloc_count=events` counting
//! every object), a TLAB's end is the next sample point, the allocation's
//! own top, so that each allocation takes the slow path and is reported.
//! There JDK 11 moves the end back to the TLAB's real end and tries the
//! TLAB again; when the object does not fit, and the TLAB still has more
//! room than its refill-waste limit (1/64 of it by default), the JVM keeps
//! the TLAB and makes the object outside it. That object is reported, but
//! the TLAB's end stays at its real end: JDK 11 puts the sample point back
//! only when the retry in the TLAB succeeded or a new TLAB was taken (JDK
//! 12's source does the same, 16's puts it back whenever it moved it).
//! Every allocation after it that fits in that TLAB takes the fast path,
//! and no event reports it, until the TLAB is full. Beside a java agent
//! that loads AllocSites before VM init, one of the 40 KB arrays of its
//! static initializer went outside the main thread's TLAB in about 3 runs
//! of 40: the first 16 iterations of its loop, up to the generation of
//! the reflection accessor, went unreported, and its Items and `int[16]`s,
//! counted from events, came out 9,984 of 10,000. Under
//! `-XX:TLABSize=32k -XX:-ResizeTLAB` that happened in every run, and
//! `alloc_count=events` counted 9,946 to 9,988 of them (JDK 17, 21 and 25:
//! 10,000). A loop making arrays of 16 B to 40 KB had 1,978,622 to
//! 1,980,630 of its 2,000,000 counted under `alloc_count=events`, with the
//! JVM's own TLAB sizes.
//!
//! The refill-waste fraction set to 1, as `-XX:TLABRefillWasteFraction=1`
//! would, makes the limit the whole TLAB: an object that does not fit in
//! what is left of it retires it, and the next allocation takes a new TLAB,
//! whose end is put at the sample point. The JVM reads the fraction each
//! time a thread takes a TLAB, so it is set at load time (before the first
//! TLAB) and given back once the interval is larger than 0 (the live sample
//! thins out). Meanwhile the rest of a TLAB an object did not fit in goes
//! unused: less than that object's size.

use crate::agent::jvm::libjvm;
use std::ffi::CStr;
use std::sync::atomic::{AtomicU64, Ordering};

const FLAG: &CStr = c"TLABRefillWasteFraction";

/// The first feature release whose sampler puts the sample point back after
/// an object made outside the TLAB (16's source does, 12's does not; 13 to
/// 15, not looked at, are held too).
const FIXED_IN: u32 = 16;

/// The fraction this agent replaced (the command line's, or the JVM's
/// default), 0 while it holds none (the flag's range starts at 1).
static HELD: AtomicU64 = AtomicU64::new(0);

/// At load time, when every object is to be reported on a JVM of
/// `feature_version`: the fraction goes to 1 below JDK 16. Said once when
/// the flag cannot be set (objects may then go unreported).
pub(super) fn hold(feature_version: Option<u32>) {
    if feature_version.is_none_or(|feature| feature >= FIXED_IN) {
        return;
    }
    match libjvm::uintx_flag(FLAG) {
        Some(1) => {}
        Some(fraction) if libjvm::set_uintx_flag(FLAG, 1) => {
            HELD.store(fraction, Ordering::Relaxed)
        }
        _ => eprintln!(
            "HPROF ERROR: heap=sites could not keep JDK {} from leaving allocations unreported after one made outside a TLAB; they may go uncounted",
            feature_version.unwrap_or_default()
        ),
    }
}

/// Once the sampling interval is larger than 0: the fraction this agent
/// replaced is back, for the TLABs taken from now on.
pub(super) fn give_back() {
    let fraction = HELD.swap(0, Ordering::Relaxed);
    if fraction != 0 {
        libjvm::set_uintx_flag(FLAG, fraction);
    }
}
