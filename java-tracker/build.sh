#!/usr/bin/env bash
# Compiles hprof_rs/Tracker.java into hprof_rs/Tracker.class, which is
# checked in and embedded in the agent (hprof_rs::bci::TRACKER_CLASS_FILE),
# so that building the agent needs no JDK. tests/bci_run.rs fails when the
# checked-in class is not what this script produces: rerun it after editing
# Tracker.java. Uses $HPROF_RS_JAVAC, else Debian's JDK 17 javac, else javac.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
javac="${HPROF_RS_JAVAC:-/usr/lib/jvm/java-17-openjdk-amd64/bin/javac}"
[[ -x "$javac" ]] || javac=javac
# --release 11: loads on every JDK the agent supports (11 and up).
"$javac" --release 11 -encoding UTF-8 -d . hprof_rs/Tracker.java
echo "wrote $(pwd)/hprof_rs/Tracker.class ($(wc -c < hprof_rs/Tracker.class) bytes)"
