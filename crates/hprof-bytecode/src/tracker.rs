//! `hprof_rs/Tracker`, the class the injected calls go to, embedded so that
//! the agent can define it in the boot loader (JNI `DefineClass`) without a
//! JDK at build time and without writing a file. Its source, and what the agent must do with
//! it, is `java-tracker/hprof_rs/Tracker.java`; `java-tracker/build.sh`
//! compiles it, and `tests/bci_run.rs` checks the embedded class is fresh.

use super::{CALL_DESCRIPTOR, Injection, LEAF_END_DESCRIPTOR, LEAF_START_DESCRIPTOR, LeafCalls};

/// Internal name of the tracker class.
pub const TRACKER_CLASS: &str = "hprof_rs/Tracker";

/// `hprof_rs/Tracker.class`, compiled by `java-tracker/build.sh` (`javac
/// --release 11`): defined in the boot loader at VM init.
pub const TRACKER_CLASS_FILE: &[u8] =
    include_bytes!("../../../java-tracker/hprof_rs/Tracker.class");

/// The private static field the agent sets non-zero (JNI
/// `SetStaticIntField`) to make the tracker time the calls it is told of
/// (it keeps the costs in Java; the agent drains them at each dump): name
/// and signature.
pub const TRACKER_ENGAGED_FIELD: (&str, &str) = ("engaged", "I");

/// The private static field holding the number of frames per trace, set
/// by the agent before it engages the tracker: name and signature.
pub const TRACKER_DEPTH_FIELD: (&str, &str) = ("depth", "I");

/// The private static field the agent sets true (JNI `SetStaticBooleanField`)
/// once it has registered [`TRACKER_FIRST_CALL_NATIVE`]: counting calls
/// only, the tracker then reports each method's first call on each thread.
pub const TRACKER_REPORTS_FIRST_CALLS_FIELD: (&str, &str) = ("reportsFirstCalls", "Z");

/// The tracker's native method `firstCall(cnum, mnum)`, which the agent
/// registers: the first call of a method on the calling thread.
pub const TRACKER_FIRST_CALL_NATIVE: (&str, &str) = ("firstCall", "(II)V");

/// The private static field of the Tracker's clock (monotonic nanoseconds),
/// which an agent thread keeps current: name and signature.
pub const TRACKER_CLOCK_FIELD: (&str, &str) = ("now", "J");

/// The private static method the agent calls at a dump: it returns
/// `{Thread[] threads, long[] nodes, long[] data, String failure}`, the
/// trace nodes made and the costs completed since the previous call, and
/// the first error that stopped a thread's timing (see Tracker.java for the
/// layouts).
pub const TRACKER_DRAIN: (&str, &str) = ("drain", "()[Ljava/lang/Object;");

/// The private static method the agent calls on ThreadEnd, on the ending
/// thread, with the serial its traces are to be kept under.
pub const TRACKER_ENDED: (&str, &str) = ("ended", "(I)V");

/// The private static method the agent calls once it has engaged the Tracker
/// to count calls with `CallCountInlined` (cpu=times' default), before the
/// program runs: every way out of the count's fast path is then in its
/// profile, so the JIT compiles them instead of deoptimizing the program's
/// code when one is first taken (see Tracker.java).
pub const TRACKER_PRIME: (&str, &str) = ("prime", "()V");

/// The private static method the agent calls before it engages a Tracker
/// left from an earlier profile (attached to a running JVM): every thread's
/// timing, the trace tree and the folded totals start over.
pub const TRACKER_RESET: (&str, &str) = ("reset", "()V");

impl Injection {
    /// What `cpu=times` and `cpu=old` inject: `Tracker.CallSite(II)V` on
    /// entry and `Tracker.ReturnSite(II)V` before each return and in a
    /// catch-all handler that rethrows (the Tracker's exit takes the
    /// innermost call of the method and any left above it). Leaves keep
    /// the clock on entry (`Tracker.leafStart()J`) and report their whole
    /// call at its end (`Tracker.LeafSite(IIJ)V`).
    pub fn tracker() -> Injection {
        Injection {
            tracker_class: TRACKER_CLASS.into(),
            entry: Some(("CallSite".into(), CALL_DESCRIPTOR.into())),
            exit: Some(("ReturnSite".into(), CALL_DESCRIPTOR.into())),
            exit_on_throw: true,
            leaf: Some(LeafCalls {
                start: ("leafStart".into(), LEAF_START_DESCRIPTOR.into()),
                end: ("LeafSite".into(), LEAF_END_DESCRIPTOR.into()),
            }),
        }
    }

    /// A measuring aid: `call_counts` with `Tracker.CallCountInlined(II)V`,
    /// which the JIT may inline: what counting in the method itself costs.
    pub fn inlined_call_counts() -> Injection {
        Injection {
            entry: Some(("CallCountInlined".into(), CALL_DESCRIPTOR.into())),
            ..Injection::call_counts()
        }
    }

    /// A measuring aid: `Tracker.CallCount(II)V` on entry only, no exit
    /// call, no handler, leaves like every other method. What counting each
    /// call costs without a clock or a shadow stack.
    pub fn call_counts() -> Injection {
        Injection {
            tracker_class: TRACKER_CLASS.into(),
            entry: Some(("CallCount".into(), CALL_DESCRIPTOR.into())),
            exit: None,
            exit_on_throw: false,
            leaf: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rewrite_class;

    #[test]
    fn the_embedded_tracker_is_a_class_the_rewriter_leaves_alone() {
        assert_eq!(&TRACKER_CLASS_FILE[..4], &[0xca, 0xfe, 0xba, 0xbe]);
        assert_eq!(TRACKER_CLASS_FILE[7], 55, "javac --release 11");
        let out = rewrite_class(TRACKER_CLASS_FILE, 1, &Injection::tracker()).unwrap();
        assert_eq!(out.bytes, TRACKER_CLASS_FILE);
        let names: Vec<(&str, &str)> = out
            .methods
            .iter()
            .map(|m| (m.name.as_str(), m.descriptor.as_str()))
            .collect();
        for expected in [
            ("CallSite", "(II)V"),
            ("ReturnSite", "(II)V"),
            ("leafStart", "()J"),
            ("LeafSite", "(IIJ)V"),
            ("CallCount", "(II)V"),
            ("CallCountInlined", "(II)V"),
            TRACKER_FIRST_CALL_NATIVE,
            TRACKER_DRAIN,
            TRACKER_ENDED,
            TRACKER_RESET,
            TRACKER_PRIME,
        ] {
            assert!(
                names.contains(&expected),
                "the Tracker lacks {expected:?}: {names:?}"
            );
        }
        assert!(
            out.methods.iter().all(|m| !m.rewritten),
            "the Tracker is never instrumented"
        );
    }
}
