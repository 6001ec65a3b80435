#!/usr/bin/env bash
# Compiles hprof_rs/Tracker.java, LockTracker.java, AllocTracker.java, StartBinder.java and ExitCollection.java into their
# .class files, which are checked in and embedded in the agent
# (hprof_rs::bci::TRACKER_CLASS_FILE, LOCK_TRACKER_CLASS_FILE), so that
# building the agent needs no JDK. tests/bci_run.rs fails when a checked-in
# class is not what this script produces: rerun it after editing either. Uses $HPROF_RS_JAVAC, else Debian's JDK 17 javac, else javac.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
javac="${HPROF_RS_JAVAC:-/usr/lib/jvm/java-17-openjdk-amd64/bin/javac}"
# The same flags as tests/bci_run.rs's freshness check.
INTERNAL_API_JAVAC_FLAGS="-source 11 -target 11 -Xlint:-options --add-exports java.base/jdk.internal.misc=ALL-UNNAMED --add-exports java.base/jdk.internal.vm.annotation=ALL-UNNAMED"
[[ -x "$javac" ]] || javac=javac
# --release 11: loads on every JDK the agent supports (11 and up).
"$javac" --release 11 -encoding UTF-8 -d . hprof_rs/LockTracker.java hprof_rs/StartBinder.java hprof_rs/ExitCollection.java
# AllocTracker uses jdk.internal.misc.Unsafe and HotSpot's DontInline
# annotation (honoured in classes of the boot loader), which --release forbids:
# compiled for 11 against this JDK's java.base with the package exported
# (it calls only methods every JDK from 11 on has).
"$javac" $INTERNAL_API_JAVAC_FLAGS -encoding UTF-8 -d . hprof_rs/AllocTracker.java
# Tracker uses the DontInline annotation: the same flags.
"$javac" $INTERNAL_API_JAVAC_FLAGS -encoding UTF-8 -d . hprof_rs/Tracker.java
for class in Tracker LockTracker AllocTracker 'AllocTracker$MadeAt' StartBinder ExitCollection; do
    echo "wrote $(pwd)/hprof_rs/$class.class ($(wc -c < "hprof_rs/$class.class") bytes)"
done
