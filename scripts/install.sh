#!/usr/bin/env bash
# Installs hprof-rs from source for this machine:
#
#   scripts/install.sh --prefix DIR
#
# builds with `cargo build --release` and copies, in the release archive's layout,
#
#   DIR/bin/hprof-rs          the tool (finds the agent in ../lib)
#   DIR/lib/libhprof_rs.so    the agent
#   DIR/lib/libhprof.so       a copy, for -agentlib:hprof / -Xrunhprof
#
# Files of those three names already in DIR are replaced (each by a rename,
# so a running JVM that has the old library mapped keeps a whole file);
# nothing else in DIR is touched. Honours CARGO_TARGET_DIR. The binaries
# need this machine's glibc or newer; scripts/package.sh builds ones that
# run on glibc 2.17 and up (docs/install.md).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

usage() { echo "usage: scripts/install.sh --prefix DIR" >&2; exit 2; }
die() { printf 'install: ERROR: %s\n' "$*" >&2; exit 1; }

prefix=""
while [[ $# -gt 0 ]]; do
    case "$1" in
    --prefix)
        [[ $# -ge 2 && -n "$2" ]] || usage
        prefix="$2"
        shift 2
        ;;
    --prefix=?*)
        prefix="${1#--prefix=}"
        shift
        ;;
    *) usage ;;
    esac
done
[[ -n "$prefix" ]] || usage
# Made absolute before the cd below: a relative DIR means the caller's folder.
mkdir -p "$prefix/bin" "$prefix/lib"
prefix="$(cd "$prefix" && pwd)"

cd "$ROOT"
echo "install: cargo build --release --locked" >&2
cargo build --release --locked
OUT="${CARGO_TARGET_DIR:-$ROOT/target}/release"
[[ -f "$OUT/hprof-rs" && -f "$OUT/libhprof_rs.so" ]] || die "the build left no $OUT/hprof-rs or $OUT/libhprof_rs.so"

# Copies $1 to $2 through a temporary file beside it, then renames it into place.
place() {
    local tmp
    tmp="$(dirname "$2")/.$(basename "$2").tmp-$$"
    install -m 0755 "$1" "$tmp"
    mv -f "$tmp" "$2"
}
place "$OUT/hprof-rs" "$prefix/bin/hprof-rs"
place "$OUT/libhprof_rs.so" "$prefix/lib/libhprof_rs.so"
place "$OUT/libhprof_rs.so" "$prefix/lib/libhprof.so"

agent="$(env -u HPROF_RS_AGENT "$prefix/bin/hprof-rs" agent-path)" || die "the installed hprof-rs does not find its agent"
echo "install: $prefix/bin/hprof-rs"
echo "install: $agent (and libhprof.so beside it)"
