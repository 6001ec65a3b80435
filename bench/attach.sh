#!/usr/bin/env bash
# The cost of `hprof-rs attach` (bench/attach.py): builds the agent and the tool, prepares the
# workloads (run `bash bench/install.sh` once before), then measures H2 and javac with no agent,
# attached with cpu=samples, with heap=sites and with cpu=times, and after a stop. Arguments go to
# bench/attach.py (--runs N, --workloads h2,javac, --modes ...).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
bash scripts/build-agent.sh
bash bench/install.sh --prepare
exec python3 bench/attach.py "$@"
