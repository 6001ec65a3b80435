//! `hprof_rs/LockTracker`, the class `monitor=y` injects calls to, embedded
//! like the Tracker (`tracker.rs`): the agent defines it in the boot loader
//! at VM init. Its source, and what the agent must do with it, is
//! `java-tracker/hprof_rs/LockTracker.java`; `java-tracker/build.sh`
//! compiles it, and `tests/bci_run.rs` checks the embedded class is fresh.

use super::{ARGUMENT_CALL_DESCRIPTOR, Injection};

/// Internal name of the lock tracker class.
pub const LOCK_TRACKER_CLASS: &str = "hprof_rs/LockTracker";

/// `hprof_rs/LockTracker.class`, compiled by `java-tracker/build.sh`
/// (`javac --release 11`). One class with no nested ones, so that defining
/// it alone is enough.
pub const LOCK_TRACKER_CLASS_FILE: &[u8] =
    include_bytes!("../../../java-tracker/hprof_rs/LockTracker.class");

/// The private static field the agent sets non-zero to make the tracker
/// time parks: name and signature.
pub const LOCK_TRACKER_ENGAGED_FIELD: (&str, &str) = ("engaged", "I");

/// The native method that numbers a lock class: name and signature.
pub const LOCK_TRACKER_REGISTER: (&str, &str) = ("register", "(Ljava/lang/Class;)I");

/// The native method called before each timed park with the lock's class
/// number, which returns the number of the (stack, lock class) pair, the
/// site: name and signature.
pub const LOCK_TRACKER_SITE: (&str, &str) = ("site", "(I)J");

/// The native method told of each timed park (site, nanoseconds): name and
/// signature.
pub const LOCK_TRACKER_BLOCKED: (&str, &str) = ("blocked", "(JJ)V");

/// The methods of `java/util/concurrent/locks/LockSupport` the calls go
/// into: the parks that name what the thread waits for. Their signatures
/// are the same from JDK 11 to 25.
pub const PARK_METHODS: [(&str, &str); 2] = [
    ("park", "(Ljava/lang/Object;)V"),
    ("parkNanos", "(Ljava/lang/Object;J)V"),
];

impl Injection {
    /// What `monitor=y` injects into [`PARK_METHODS`]:
    /// `LockTracker.parking(blocker)` on entry and
    /// `LockTracker.parked(blocker)` before each return.
    pub fn lock_tracker() -> Injection {
        Injection {
            tracker_class: LOCK_TRACKER_CLASS.into(),
            entry: Some(("parking".into(), ARGUMENT_CALL_DESCRIPTOR.into())),
            exit: Some(("parked".into(), ARGUMENT_CALL_DESCRIPTOR.into())),
            exit_on_throw: false,
            leaf: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rewrite_passing_first_argument;

    #[test]
    fn the_embedded_lock_tracker_has_what_the_agent_uses() {
        assert_eq!(&LOCK_TRACKER_CLASS_FILE[..4], &[0xca, 0xfe, 0xba, 0xbe]);
        assert_eq!(LOCK_TRACKER_CLASS_FILE[7], 55, "javac --release 11");
        let out = rewrite_passing_first_argument(
            LOCK_TRACKER_CLASS_FILE,
            &Injection::lock_tracker(),
            &[("parking", ARGUMENT_CALL_DESCRIPTOR)],
        )
        .unwrap();
        assert_eq!(out.bytes, LOCK_TRACKER_CLASS_FILE, "never instrumented");
        let methods: Vec<(&str, &str)> = out
            .methods
            .iter()
            .map(|m| (m.name.as_str(), m.descriptor.as_str()))
            .collect();
        for expected in [
            ("parking", ARGUMENT_CALL_DESCRIPTOR),
            ("parked", ARGUMENT_CALL_DESCRIPTOR),
            LOCK_TRACKER_REGISTER,
            LOCK_TRACKER_SITE,
            LOCK_TRACKER_BLOCKED,
        ] {
            assert!(
                methods.contains(&expected),
                "the LockTracker lacks {expected:?}: {methods:?}"
            );
        }
        let text = String::from_utf8_lossy(LOCK_TRACKER_CLASS_FILE);
        assert!(text.contains(LOCK_TRACKER_CLASS), "its own name");
        assert!(text.contains(LOCK_TRACKER_ENGAGED_FIELD.0));
    }
}
