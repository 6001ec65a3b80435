#!/usr/bin/env bash
# The one benchmark command. Builds the agent (scripts/build-agent.sh), prepares the
# workloads (bench/install.sh --prepare; run `bash bench/install.sh` once before), then runs
# bench/bench.py: every workload under no agent, each hprof-rs mode and JFR, alternating,
# and writes the report (BENCHMARKS.md; with --quick .cache/bench/report-quick.md).
#
#   bash bench/run.sh                      full run: 1 warmup + 5 measured rounds (~30 min)
#   bash bench/run.sh --quick              smoke run: 2 rounds, a few minutes
#   bash bench/run.sh --runs 10 --modes samples,jfr --workloads javac,h2
#   bash bench/run.sh --no-build           use the agent library as it is
#   bash bench/run.sh --agent PATH         use another agent library (implies --no-build)
#   bash bench/run.sh --baseline PATH      also run every agent mode with an earlier build, in
#                                          the same rounds, and report this build against it
# Other options go to bench/bench.py (python3 bench/bench.py --help lists them); exits 1 if
# any run failed. BENCH_JAVA_HOME picks the JDK (default: Debian's OpenJDK 17).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
JAVA_HOME="${BENCH_JAVA_HOME:-/usr/lib/jvm/java-17-openjdk-amd64}"
LIB="${CARGO_TARGET_DIR:-$ROOT/target}/release/libhprof_rs.so"
CMDLINE="$(python3 -c 'import shlex, sys; print(shlex.join(sys.argv[1:]))' bash bench/run.sh "$@")"

build=1
passthrough=()
while (($#)); do
    case "$1" in
    --no-build) build=0 ;;
    --agent)
        [[ $# -ge 2 ]] || {
            echo "bench/run.sh: --agent needs a path" >&2
            exit 2
        }
        LIB="$2"
        build=0
        shift
        ;;
    *) passthrough+=("$1") ;;
    esac
    shift
done

if ((build)); then
    bash scripts/build-agent.sh
fi
[[ -f $LIB ]] || {
    echo "bench/run.sh: no agent library at $LIB (build it: bash scripts/build-agent.sh)" >&2
    exit 1
}
bash bench/install.sh --prepare
exec python3 bench/bench.py --lib "$LIB" --java-home "$JAVA_HOME" --cmdline "$CMDLINE" \
    "${passthrough[@]}"
