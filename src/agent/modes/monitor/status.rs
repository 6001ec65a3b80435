//! The status string of a thread in MONITOR DUMP, from JVMTI's thread
//! state bits, as HPROF spelled it: optional prefixes `S|` (suspended),
//! `intr|` (interrupted) and `native|` (in native code), then one of `ZO`
//! (terminated), `NS` (not started), `SL` (sleeping), `MW` (blocked
//! entering a monitor), `CW` (waiting, parked included), `R` (runnable) or
//! `UN` (anything else).

use jvmti_bindings::sys::jvmti;

/// The status string of a thread in `state`.
pub fn status(state: i32) -> String {
    let has = |bit: i32| state & bit != 0;
    let mut text = String::new();
    for (bit, prefix) in [
        (jvmti::JVMTI_THREAD_STATE_SUSPENDED, "S|"),
        (jvmti::JVMTI_THREAD_STATE_INTERRUPTED, "intr|"),
        (jvmti::JVMTI_THREAD_STATE_IN_NATIVE, "native|"),
    ] {
        if has(bit) {
            text.push_str(prefix);
        }
    }
    let main = if !has(jvmti::JVMTI_THREAD_STATE_ALIVE) {
        if has(jvmti::JVMTI_THREAD_STATE_TERMINATED) {
            "ZO"
        } else {
            "NS"
        }
    } else if has(jvmti::JVMTI_THREAD_STATE_SLEEPING) {
        // (A sleeping thread is also waiting: sleeping is asked first.)
        "SL"
    } else if has(jvmti::JVMTI_THREAD_STATE_BLOCKED_ON_MONITOR_ENTER) {
        "MW"
    } else if has(jvmti::JVMTI_THREAD_STATE_WAITING) {
        "CW"
    } else if has(jvmti::JVMTI_THREAD_STATE_RUNNABLE) {
        "R"
    } else {
        "UN"
    };
    text.push_str(main);
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use jvmti_bindings::sys::jvmti::*;

    #[test]
    fn states_spell_as_hprof_did() {
        let alive = JVMTI_THREAD_STATE_ALIVE;
        let waiting = alive | JVMTI_THREAD_STATE_WAITING;
        let cases = [
            (0, "NS"),
            (JVMTI_THREAD_STATE_TERMINATED, "ZO"),
            (alive | JVMTI_THREAD_STATE_RUNNABLE, "R"),
            (
                alive | JVMTI_THREAD_STATE_RUNNABLE | JVMTI_THREAD_STATE_IN_NATIVE,
                "native|R",
            ),
            (alive | JVMTI_THREAD_STATE_BLOCKED_ON_MONITOR_ENTER, "MW"),
            (waiting | JVMTI_THREAD_STATE_SLEEPING, "SL"),
            (waiting | JVMTI_THREAD_STATE_IN_OBJECT_WAIT, "CW"),
            (waiting | JVMTI_THREAD_STATE_PARKED, "CW"),
            (
                waiting
                    | JVMTI_THREAD_STATE_IN_OBJECT_WAIT
                    | JVMTI_THREAD_STATE_SUSPENDED
                    | JVMTI_THREAD_STATE_INTERRUPTED,
                "S|intr|CW",
            ),
            (alive, "UN"),
        ];
        for (state, expected) in cases {
            assert_eq!(status(state), expected, "state {state:#x}");
        }
    }
}
