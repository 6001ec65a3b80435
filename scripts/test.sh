#!/usr/bin/env bash
# The one test command: installs what the tests need, builds the agent, runs
# every test on the whole JDK matrix (11, 17, 21, 25; a missing JDK fails),
# then clippy, rustfmt and the import-cycle check. With no args it runs `cargo test --release
# --all-targets` and the doctests; extra args replace --all-targets and go to
# `cargo test --release`, e.g.
#   scripts/test.sh --test harness
#   scripts/test.sh --all-targets -- --nocapture
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

step() { printf '\n=== %s\n' "$*"; }
start=$SECONDS

step "scripts/setup.sh"
bash scripts/setup.sh

step "scripts/build-agent.sh"
bash scripts/build-agent.sh

export HPROF_RS_REQUIRE_JDKS="${HPROF_RS_REQUIRE_JDKS:-11,17,21,25}"
# cargo test's output is also kept here, to total its "test result:" lines at the end.
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
if [[ $# -eq 0 ]]; then
    step "cargo test --release --doc"
    cargo test --release --doc 2>&1 | tee -a "$log"
    step "cargo test --release --all-targets (HPROF_RS_REQUIRE_JDKS=$HPROF_RS_REQUIRE_JDKS)"
    cargo test --release --all-targets 2>&1 | tee -a "$log"
else
    # Extra args select what to run, e.g. `--test harness`; --all-targets would override them.
    step "cargo test --release $* (HPROF_RS_REQUIRE_JDKS=$HPROF_RS_REQUIRE_JDKS)"
    cargo test --release "$@" 2>&1 | tee -a "$log"
fi

step "cargo clippy --all-targets -- -D warnings"
cargo clippy --all-targets -- -D warnings

step "cargo fmt --check"
cargo fmt --check

step "scripts/check-imports.py (no file imports one that imports it back)"
python3 scripts/check-imports.py

step "all checks passed in $((SECONDS - start))s"
# One closing line for the whole run: "tests: N passed, N failed".
awk '/^test result:/ {
        for (i = 2; i <= NF; i++) {
            if ($i ~ /^passed;?$/) passed += $(i - 1)
            if ($i ~ /^failed;?$/) failed += $(i - 1)
        }
    }
    END { printf "tests: %d passed, %d failed\n", passed, failed }' "$log"
