//! The state a wall-clock sample puts a thread in, from JVMTI's state bits
//! (`GetThreadState`, `GetThreadListStackTraces`). The names and their
//! order are the file's columns (`hprof_format::wall_states::STATES`).

use jvmti_bindings::sys::jvmti;

/// One of the five states a sample is counted in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum State {
    /// Runnable in Java code (or in the VM on its behalf).
    Running = 0,
    /// Runnable in native code: a JNI call, a blocking read or poll.
    Native = 1,
    /// Blocked entering a monitor (`synchronized`, or taking it back after
    /// `Object.wait`).
    Blocked = 2,
    /// Waiting: `Object.wait`, `LockSupport.park` (a `java.util.concurrent`
    /// lock, queue or future), `Thread.join`.
    Waiting = 3,
    /// `Thread.sleep`.
    Sleeping = 4,
}

impl State {
    /// The state of a live thread's bits. JVMTI sets SLEEPING and PARKED
    /// beside WAITING, so those are tested first; a thread in native code
    /// is RUNNABLE with IN_NATIVE.
    pub fn of(bits: i32) -> State {
        if bits & jvmti::JVMTI_THREAD_STATE_BLOCKED_ON_MONITOR_ENTER != 0 {
            State::Blocked
        } else if bits & jvmti::JVMTI_THREAD_STATE_SLEEPING != 0 {
            State::Sleeping
        } else if bits & jvmti::JVMTI_THREAD_STATE_WAITING != 0 {
            State::Waiting
        } else if bits & jvmti::JVMTI_THREAD_STATE_IN_NATIVE != 0 {
            State::Native
        } else {
            State::Running
        }
    }

    /// Its column in the file.
    pub fn column(self) -> usize {
        self as usize
    }
}

/// The state a look counts a thread in. JVMTI reports a thread that waits
/// inside the JVM, on a lock of the JVM's own, as runnable: the JVM's
/// Notification Thread does so all its life, and was counted as running
/// for its whole life (as much as a busy thread). Such a thread has no
/// Java frame and its CPU clock stands still, so with both it is counted
/// as waiting. A thread with no Java frame that uses the CPU is running
/// (in the JVM's code), and one whose CPU clock is unknown stays running.
pub fn counted(reported: State, no_java_frames: bool, cpu_still: bool) -> State {
    if reported == State::Running && no_java_frames && cpu_still {
        State::Waiting
    } else {
        reported
    }
}

/// Whether the bits are of a thread that has started and not ended.
pub fn is_alive(bits: i32) -> bool {
    bits & jvmti::JVMTI_THREAD_STATE_ALIVE != 0 && bits & jvmti::JVMTI_THREAD_STATE_TERMINATED == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use jvmti::*;

    #[test]
    fn the_bits_of_each_state() {
        let alive = JVMTI_THREAD_STATE_ALIVE;
        let runnable = alive | JVMTI_THREAD_STATE_RUNNABLE;
        let waiting = alive | JVMTI_THREAD_STATE_WAITING;
        assert_eq!(State::of(runnable), State::Running);
        assert_eq!(
            State::of(runnable | JVMTI_THREAD_STATE_IN_NATIVE),
            State::Native
        );
        assert_eq!(
            State::of(alive | JVMTI_THREAD_STATE_BLOCKED_ON_MONITOR_ENTER),
            State::Blocked
        );
        let sleeping =
            waiting | JVMTI_THREAD_STATE_WAITING_WITH_TIMEOUT | JVMTI_THREAD_STATE_SLEEPING;
        assert_eq!(State::of(sleeping), State::Sleeping);
        let parked = waiting | JVMTI_THREAD_STATE_WAITING_INDEFINITELY | JVMTI_THREAD_STATE_PARKED;
        assert_eq!(State::of(parked), State::Waiting);
        assert_eq!(
            State::of(waiting | JVMTI_THREAD_STATE_IN_OBJECT_WAIT),
            State::Waiting
        );
        assert!(is_alive(runnable));
        // Runnable with no Java frame and a CPU clock standing still: waiting.
        assert_eq!(counted(State::Running, true, true), State::Waiting);
        assert_eq!(counted(State::Running, true, false), State::Running);
        assert_eq!(counted(State::Running, false, true), State::Running);
        assert_eq!(counted(State::Native, true, true), State::Native);
        assert!(!is_alive(JVMTI_THREAD_STATE_TERMINATED));
        assert!(!is_alive(0));
    }
}
