#!/usr/bin/env bash
# What monitor=y's java.util.concurrent hooks cost: runs bench/locks/LockBench
# without an agent and under monitor=y, alternating, RUNS times each, and
# prints the median of the program's own elapsed time per configuration,
# and for the contended case how many blocks LOCK TIME counted (so the cost
# per block is (with - without) / blocks).
#
#   bench/locks/lock-cost.sh [JAVA_HOME] [RUNS]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
java_home=${1:-/usr/lib/jvm/java-17-openjdk-amd64}
runs=${2:-5}
lib="${CARGO_TARGET_DIR:-$ROOT/target}/release/libhprof_rs.so"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$java_home/bin/javac" -d "$work" "$ROOT/bench/locks/LockBench.java"

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

measure() { # label, program arguments...
    local label=$1
    shift
    : >"$work/none.txt"
    : >"$work/agent.txt"
    for _ in $(seq "$runs"); do
        "$java_home/bin/java" -cp "$work" LockBench "$@" | sed -n 's/elapsed_ms=//p' >>"$work/none.txt"
        "$java_home/bin/java" "-agentpath:$lib=monitor=y,file=$work/profile.txt" \
            -cp "$work" LockBench "$@" | sed -n 's/elapsed_ms=//p' >>"$work/agent.txt"
    done
    local blocks
    blocks=$(awk '/^LOCK TIME BEGIN/ {on=1; next} /^LOCK TIME END/ {on=0} on && $1 ~ /^[0-9]+$/ {n += $4} END {print n + 0}' "$work/profile.txt")
    echo "$label: no agent $(median <"$work/none.txt") ms, monitor=y $(median <"$work/agent.txt") ms (median of $runs); last run's LOCK TIME blocks: $blocks"
}

measure "hooks, 1M parks (ms = us per park)" hooks 1000000
measure "uncontended 50M" uncontended 50000000
measure "contended fair 4x20k" contended 4 20000
