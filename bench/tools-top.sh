#!/usr/bin/env bash
# `hprof-rs top` on a large binary heap dump, beside hprof-slurp on the same file: wall time,
# throughput (file size / wall time) and peak RSS (GNU time's maximum resident set size).
# The dump is made once by `jcmd GC.heap_dump` of bench/heapdump/HeapHolder holding
# MEGABYTES of live objects (a 2000 MB heap gives a dump of about 2 GB). Each tool runs
# ROUNDS times after one untimed warm-up read, so both read the file from the page cache.
#
#   bench/tools-top.sh [MEGABYTES=2000] [ROUNDS=3] [JAVA_HOME=Debian's OpenJDK 17]
#
# Needs `cargo build --release` (target/release/hprof-rs), .cache/bin/hprof-slurp
# (scripts/setup.sh), jcmd and GNU time (/usr/bin/time).
set -euo pipefail

megabytes=${1:-2000}
rounds=${2:-3}
java_home=${3:-/usr/lib/jvm/java-17-openjdk-amd64}
repo=$(cd "$(dirname "$0")/.." && pwd)
tool=${CARGO_TARGET_DIR:-$repo/target}/release/hprof-rs
slurp=$repo/.cache/bin/hprof-slurp
work=$(mktemp -d "${TMPDIR:-/tmp}/tools-top.XXXXXX")
trap 'rm -rf "$work"' EXIT

"$java_home/bin/javac" -d "$work" "$repo/bench/heapdump/HeapHolder.java"
HOLDER_MEGABYTES=$megabytes bash "$repo/bench/heapdump/jcmd-dump.sh" "$java_home" "$work" \
    "$work/dump.hprof" -Xmx$((megabytes * 2 + 512))m >/dev/null
bytes=$(stat -c %s "$work/dump.hprof")
echo "dump: $bytes bytes ($((bytes / 1000000)) MB), heap of $megabytes MB"

# Runs "$@" under GNU time; prints "seconds peak_kb".
measure() {
    /usr/bin/time -f '%e %M' -o "$work/time" "$@" >"$work/out" 2>"$work/err" || {
        cat "$work/err" >&2
        exit 1
    }
    cat "$work/time"
}

cat "$work/dump.hprof" >/dev/null # into the page cache
for name in hprof-rs hprof-slurp; do
    if [[ $name == hprof-rs ]]; then
        cmd=("$tool" top "$work/dump.hprof" -n 20)
    else
        cmd=("$slurp" -t 20 "$work/dump.hprof")
    fi
    for ((round = 1; round <= rounds; round++)); do
        read -r seconds peak_kb < <(measure "${cmd[@]}")
        mb_per_s=$(awk -v b="$bytes" -v s="$seconds" 'BEGIN { printf "%.0f", b / 1e6 / (s > 0 ? s : 0.01) }')
        echo "$name round $round: ${seconds} s, ${mb_per_s} MB/s, peak RSS $((peak_kb / 1024)) MB"
    done
    head -12 "$work/out" | sed "s/^/  $name: /"
done
