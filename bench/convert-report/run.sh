#!/usr/bin/env bash
# `hprof-rs convert` and `hprof-rs report` on big inputs, under /usr/bin/time -v
# (wall time, peak RSS):
#   1. a synthetic ~100 MB ASCII profile (make-ascii.py: TRACES traces of depth 8,
#      a CPU SAMPLES and a SITES table of TRACES rows each): convert to pprof,
#      speedscope and collapsed (CPU SAMPLES), to pprof (SITES), and report;
#   2. a binary heap=all file of HeapHolder (bench/heapdump) holding HEAP_MB of
#      live objects (2000: a 2.4 GB file): convert its SITES to pprof, and report
#      (the heap dump's class histogram is read in a stream).
# Prints one line per run: what, wall s, peak RSS MB, output size.
#
#   run.sh [TRACES=200000] [HEAP_MB=2000] [JAVA_HOME]
#
# Needs target/release/hprof-rs and libhprof_rs.so (scripts/build-agent.sh), python3 and
# javac. Work files go to a temporary directory under ${TMPDIR:-/tmp}, removed at the end.
set -euo pipefail

traces=${1:-200000}
heap_mb=${2:-2000}
java_home=${3:-$(dirname "$(dirname "$(readlink -f "$(command -v javac)")")")}
repo=$(cd "$(dirname "$0")/../.." && pwd)
tool=$repo/target/release/hprof-rs
agent=$repo/target/release/libhprof_rs.so
work=$(mktemp -d "${TMPDIR:-/tmp}/convert-report.XXXXXX")
trap 'rm -rf "$work"' EXIT

# Runs the tool under /usr/bin/time -v; prints what, wall seconds, peak RSS in MB, output size.
measure() {
    local what=$1 out=$2
    shift 2
    /usr/bin/time -v -o "$work/time" "$tool" "$@" >/dev/null
    local wall rss
    wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {n = split($2, t, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + t[i]; print s}' "$work/time")
    rss=$(awk -F': ' '/Maximum resident set size/ {printf "%.0f", $2 / 1024}' "$work/time")
    printf '%-40s %8.2f s %7s MB %12s bytes\n' "$what" "$wall" "$rss" "$(stat -c %s "$out")"
}

python3 "$repo/bench/convert-report/make-ascii.py" "$work/big.txt" "$traces"
echo "ASCII profile: $(stat -c %s "$work/big.txt") bytes, $traces traces"
measure "convert --to pprof (cpu)" "$work/cpu.pb.gz" convert "$work/big.txt" --to pprof --what cpu -o "$work/cpu.pb.gz"
measure "convert --to speedscope (cpu)" "$work/cpu.json" convert "$work/big.txt" --to speedscope --what cpu -o "$work/cpu.json"
measure "convert --to collapsed (cpu)" "$work/cpu.folded" convert "$work/big.txt" --to collapsed --what cpu -o "$work/cpu.folded"
measure "convert --to pprof (sites)" "$work/sites.pb.gz" convert "$work/big.txt" --to pprof --what sites -o "$work/sites.pb.gz"
measure "report" "$work/big.html" report "$work/big.txt" -o "$work/big.html"
rm -f "$work/big.txt"

javac --release 11 -d "$work" "$repo/bench/heapdump/HeapHolder.java"
"$java_home/bin/java" -Xmx$((heap_mb * 2))m -agentpath:"$agent"=heap=all,format=b,file="$work/dump.hprof" \
    -cp "$work" HeapHolder exit "$heap_mb" >/dev/null
echo "heap=all binary file: $(stat -c %s "$work/dump.hprof") bytes (HeapHolder $heap_mb MB)"
measure "convert --to pprof (sites, heap dump)" "$work/dump.pb.gz" convert "$work/dump.hprof" --to pprof -o "$work/dump.pb.gz"
measure "report (heap dump)" "$work/dump.html" report "$work/dump.hprof" -o "$work/dump.html"
