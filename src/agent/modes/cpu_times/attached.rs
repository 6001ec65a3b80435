//! cpu=times and cpu=old attached to a running JVM (`hprof-rs attach`,
//! docs/attach.md). From the start of a JVM every class loaded after VM
//! init is rewritten as it loads; attached, the classes are loaded
//! already, so they are retransformed at the attach (the hook rewrites
//! them then), and at the stop the rewritten ones are retransformed again
//! with the hook passing them unchanged, which gives them back their own
//! byte code: after the stop no method calls the Tracker.
//!
//! Classes of the boot loader loaded before the attach are left alone: a
//! run from the JVM's start never rewrites most of them either (the JDK's
//! core is loaded before VM init), the Tracker's own code runs in them,
//! and retransforming them would recompile much of the program's hottest
//! code for calls the profile did not ask about. Those loaded after the
//! attach are rewritten as they load, as from the start.

use super::timing::MethodTiming;
use crate::agent::jvm::retransform;
use jvmti_bindings::prelude::*;

/// At the attach, once the hook is enabled: the classes loaded so far,
/// but the boot loader's, are rewritten.
pub fn time_loaded_classes(env: &Jvmti, jni: &JniEnv, verbose: bool) {
    let done = retransform::loaded_classes(env, jni, |_, boot| !boot);
    if let Some(error) = done.refused {
        eprintln!(
            "HPROF ERROR: cpu=times could not time the methods of some classes loaded before the attach ({error:?})"
        );
    }
    if verbose {
        eprintln!(
            "HPROF: cpu=times attached: {} loaded classes retransformed",
            done.classes
        );
    }
}

/// At the stop, once calls are no longer timed: every class the hook
/// rewrote goes back to its own byte code.
pub fn restore_classes(timing: &MethodTiming, env: &Jvmti, jni: &JniEnv, verbose: bool) {
    let rewritten = timing.pass_unchanged();
    if rewritten.is_empty() {
        return;
    }
    let done = retransform::loaded_classes(env, jni, |name, _| rewritten.contains(name));
    if let Some(error) = done.refused {
        eprintln!(
            "HPROF ERROR: cpu=times could not give some classes back their own byte code ({error:?}); their hooks do nothing from now on"
        );
    }
    if verbose {
        eprintln!(
            "HPROF: cpu=times stopped: {} classes given back their own byte code",
            done.classes
        );
    }
}
