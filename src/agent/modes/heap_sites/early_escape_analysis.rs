//! C2's escape analysis held off while the classes loaded before VM init
//! are counted from events.
//!
//! Until the hand-over (`early_hand_over.rs`) those classes run their own
//! code, and what they make is counted only when the live sample's event
//! reports it. C2 leaves out of compiled code the objects that do not
//! escape it (scalar replacement) and boxes that are only unboxed, and no
//! event reports an object never made. JDK 25 loads
//! `java.io.ObjectStreamClass` before VM init (from its archive), and the
//! empty `Object[]` its `newInstance()` passes to the serialization
//! constructor vanished once C2 inlined the call into `ObjectInputStream`:
//! 17,000 to 26,000 of the 60,000 that ten reads of a `P[6000]` make were
//! counted. The counters of rewritten code count what the byte code asks
//! for, compiled or not, so the flags go off at load time, before any
//! compilation (as `-XX:-DoEscapeAnalysis -XX:-AggressiveUnboxing`
//! would), and come back once the hand-over has ended. Code compiled
//! meanwhile that inlines a handed-over class is deoptimized by its
//! retransformation and compiled again with them; a program that never
//! reaches the hand-over runs without them. A flag the command line
//! turned off stays off.

use crate::agent::jvm::libjvm::{self, BoolFlag};
use std::ffi::CStr;
use std::sync::atomic::{AtomicBool, Ordering};

/// The flags, in the order they go back on: escape analysis first, then
/// the unboxing that rests on it (the JVM turns that off with it when
/// `-XX:-DoEscapeAnalysis` is given, so the pair is never left the other
/// way round for a compilation that starts between the two writes).
const FLAGS: [&CStr; 2] = [c"DoEscapeAnalysis", c"AggressiveUnboxing"];

/// Which of [`FLAGS`] this agent turned off. (The flags are the process's,
/// and so is this record: only an agent loaded with the JVM holds them off,
/// once.)
static HELD_OFF: [AtomicBool; 2] = [AtomicBool::new(false), AtomicBool::new(false)];

/// At load time, before the JIT compilers start: each flag that is on goes
/// off (a JVM without C2 has neither: nothing to do).
pub(super) fn hold_off() {
    for (flag, held) in FLAGS.iter().zip(&HELD_OFF) {
        if libjvm::bool_flag(flag) == BoolFlag::Value(true) && libjvm::set_bool_flag(flag, false) {
            held.store(true, Ordering::Relaxed);
        }
    }
}

/// Once the hand-over has ended: the flags this agent turned off go back
/// on, for the compilations from now on.
pub(super) fn give_back() {
    for (flag, held) in FLAGS.iter().zip(&HELD_OFF) {
        if held.swap(false, Ordering::Relaxed) {
            libjvm::set_bool_flag(flag, true);
        }
    }
}
