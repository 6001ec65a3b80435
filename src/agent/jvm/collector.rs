//! Which garbage collector this JVM runs, read from HotSpot's flags, and
//! whether it can still collect once the JVM has begun to exit.
//!
//! When a JVM exits, HotSpot stops its collectors' concurrent threads
//! (`Universe::heap()->stop()` in `before_exit`, java.cpp) and only then
//! posts VM death, whose callback writes the exit dump. G1, Parallel and
//! Serial run a forced collection on the VM thread, which still runs then.
//! ZGC and Shenandoah hand it to their own driver thread, which is gone:
//! JVMTI's `ForceGarbageCollection` then waits forever (and so does the
//! JVM's dumper of live objects on JDK 25, which collects first), and the
//! JVM never exits. So at VM death the agent forces no collection under
//! them, and says so in the file.

use crate::agent::jvm::libjvm::{BoolFlag, bool_flag};
use std::ffi::CStr;
use std::sync::OnceLock;

/// The collectors HotSpot ships, by their selecting flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Collector {
    G1,
    Parallel,
    Serial,
    Z,
    Shenandoah,
    Epsilon,
    /// The flag table could not be read, or no known flag is set.
    Unknown,
}

/// Each collector's selecting flag, the ones whose forced collection may
/// wait for a stopped thread first (a JVM has exactly one set).
const FLAGS: [(&CStr, Collector); 6] = [
    (c"UseZGC", Collector::Z),
    (c"UseShenandoahGC", Collector::Shenandoah),
    (c"UseG1GC", Collector::G1),
    (c"UseParallelGC", Collector::Parallel),
    (c"UseSerialGC", Collector::Serial),
    (c"UseEpsilonGC", Collector::Epsilon),
];

impl Collector {
    /// The collector of this JVM (read once: the flags are fixed before
    /// any agent loads).
    pub fn of_this_jvm() -> Collector {
        static FOUND: OnceLock<Collector> = OnceLock::new();
        *FOUND.get_or_init(|| {
            FLAGS
                .iter()
                .find(|(flag, _)| bool_flag(flag) == BoolFlag::Value(true))
                .map_or(Collector::Unknown, |&(_, collector)| collector)
        })
    }

    /// Whether a forced collection completes after VM death has begun
    /// (see the module's comment). Unknown collectors are not trusted to.
    pub fn collects_after_vm_death(self) -> bool {
        match self {
            Collector::G1 | Collector::Parallel | Collector::Serial | Collector::Epsilon => true,
            Collector::Z | Collector::Shenandoah | Collector::Unknown => false,
        }
    }

    /// The collector's name, as `-XX:+Use<name>` selects it.
    pub fn name(self) -> &'static str {
        match self {
            Collector::G1 => "G1",
            Collector::Parallel => "Parallel",
            Collector::Serial => "Serial",
            Collector::Z => "ZGC",
            Collector::Shenandoah => "Shenandoah",
            Collector::Epsilon => "Epsilon",
            Collector::Unknown => "an unknown collector",
        }
    }
}

/// What the file says when the exit dump cannot collect first: where its
/// live figures hold garbage. None when it can. `hook`: a collection runs
/// in the JVM's last shutdown hook instead (`jvm::exit_collection`).
pub fn exit_dump_note(collector: Collector, hook: bool) -> Option<String> {
    if collector.collects_after_vm_death() {
        return None;
    }
    let name = collector.name();
    Some(if hook {
        format!(
            "This JVM runs {name}, which stops collecting before the program's exit\n\
             dump is written: the agent collects in the JVM's last shutdown hook\n\
             instead. Objects made after it, and every object no longer reachable\n\
             when the program ends with Runtime.halt() (which runs no hook), count\n\
             as live in the exit dump (SITES, HEAP DUMP).\n"
        )
    } else {
        format!(
            "This JVM runs {name}, which stops collecting before the program's exit\n\
             dump is written: that dump forces no collection, so its live columns\n\
             (SITES) and its heap dump (HEAP DUMP) also hold objects that were no\n\
             longer reachable. Dumps taken while the program runs (SIGQUIT, net=)\n\
             collect first as usual.\n"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_collectors_of_the_vm_thread_collect_after_vm_death() {
        for collector in [
            Collector::G1,
            Collector::Parallel,
            Collector::Serial,
            Collector::Epsilon,
        ] {
            assert!(collector.collects_after_vm_death(), "{collector:?}");
            assert_eq!(exit_dump_note(collector, false), None);
        }
        for collector in [Collector::Z, Collector::Shenandoah, Collector::Unknown] {
            assert!(!collector.collects_after_vm_death(), "{collector:?}");
            for hook in [false, true] {
                let note = exit_dump_note(collector, hook).expect("a note");
                assert!(note.contains(collector.name()), "{note}");
                assert_eq!(note.contains("shutdown hook"), hook, "{note}");
            }
        }
    }

    #[test]
    fn outside_a_jvm_the_collector_is_unknown() {
        assert_eq!(Collector::of_this_jvm(), Collector::Unknown);
    }
}
