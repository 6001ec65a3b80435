#!/usr/bin/env bash
# Measures what the cpu=samples sampler thread costs per tick with many idle
# threads: runs bench/sampler/IdleThreads (500 sleeping threads, one busy
# thread for 10 s) under cpu=samples,interval=10 and reads the CPU time of
# the thread "HPROF cpu sampling thread" from /proc just before the program
# ends. Prints ticks, sampler CPU in ms, and microseconds of CPU per tick.
#
#   bench/sampler/idle-threads.sh [JAVA_HOME] [IDLE_THREADS] [SECONDS]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
java_home=${1:-/usr/lib/jvm/java-17-openjdk-amd64}
idle=${2:-500}
seconds=${3:-10}
lib="${CARGO_TARGET_DIR:-$ROOT/target}/release/libhprof_rs.so"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$java_home/bin/javac" -d "$work" "$ROOT/bench/sampler/IdleThreads.java"
"$java_home/bin/java" "-agentpath:$lib=cpu=samples,interval=10,file=$work/profile.txt,verbose=n" \
    -cp "$work" IdleThreads "$idle" "$seconds" >"$work/out.txt" &
pid=$!
# Read 2 s before the end (a scan of 500 tasks can take a while on a busy
# machine), with shell builtins only.
sleep $((seconds - 2))
sampler_ns=0
for task in /proc/$pid/task/*; do
    comm=""
    read -r comm < "$task/comm" 2>/dev/null || true
    if [[ $comm == "HPROF cpu sampl"* ]]; then
        # schedstat: nanoseconds on the CPU, then waiting, then time slices.
        read -r sampler_ns _ < "$task/schedstat"
    fi
done
threads=$(ls /proc/$pid/task | wc -l)
wait $pid
ticks=$(((seconds - 2) * 100))
echo "threads=$threads sampler_cpu_us=$((sampler_ns / 1000)) over $((seconds - 2)) s (~$ticks ticks of 10 ms): $((sampler_ns / ticks)) ns per tick"
grep -m1 "CPU SAMPLES BEGIN" "$work/profile.txt"
