#!/usr/bin/env bash
# Builds the agent and gives it the name the JVM looks for.
#
#   cargo build --release
#   target/release/libhprof_rs.so  ->  copied to  target/release/libhprof.so
#
# With LD_LIBRARY_PATH=target/release, `java -agentlib:hprof=...` and
# `java -Xrunhprof:...` load it; `-agentpath:target/release/libhprof_rs.so=...`
# works without the copy. Honours CARGO_TARGET_DIR. Extra args go to cargo build.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
OUT="$TARGET_DIR/release"

echo "build-agent: cargo build --release $*"
cargo build --release "$@"

[[ -f "$OUT/libhprof_rs.so" ]] || {
    echo "build-agent: ERROR: $OUT/libhprof_rs.so was not built" >&2
    exit 1
}
# Copy then rename, so a JVM that has the old library mapped keeps a whole file.
cp -f "$OUT/libhprof_rs.so" "$OUT/.libhprof.so.tmp-$$"
mv -f "$OUT/.libhprof.so.tmp-$$" "$OUT/libhprof.so"
echo "build-agent: $OUT/libhprof_rs.so"
echo "build-agent: $OUT/libhprof.so (copy, for -agentlib:hprof / -Xrunhprof with LD_LIBRARY_PATH=$OUT)"
