#!/usr/bin/env bash
# Installs what scripts/package.sh builds with, idempotently, into the repo's
# ignored .cache/ (nothing system-wide):
#
#   .cache/zigbuild/bin/cargo-zigbuild   cargo-zigbuild (PyPI), links against an old glibc
#   .cache/zigbuild/ziglang/zig          Zig (PyPI ziglang), the C compiler and linker it drives
#
# and checks that objdump (Debian's binutils) is there to verify the result.
# Skipped when the pinned versions are already installed. Run by
# scripts/setup.sh and by scripts/package.sh.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DEST="$ROOT/.cache/zigbuild"

# Pinned versions. Changing one here makes the next run reinstall both.
CARGO_ZIGBUILD_VERSION=0.24.1
ZIGLANG_VERSION=0.15.2
WANTED="cargo-zigbuild==$CARGO_ZIGBUILD_VERSION ziglang==$ZIGLANG_VERSION"

log() { printf 'package-tools: %s\n' "$*"; }
die() { printf 'package-tools: ERROR: %s\n' "$*" >&2; exit 1; }

PYTHON="${PYTHON:-python3}"
stamp="$DEST/.hprof-rs-installed"
if [[ -x "$DEST/bin/cargo-zigbuild" && -x "$DEST/ziglang/zig" && -f "$stamp" &&
    "$(cat "$stamp")" == "$WANTED" ]]; then
    log "$WANTED present in .cache/zigbuild"
else
    log "pip install --target .cache/zigbuild $WANTED"
    mkdir -p "$ROOT/.cache"
    tmp="$DEST.tmp-$$"
    rm -rf "$tmp"
    PIP_ROOT_USER_ACTION=ignore "$PYTHON" -m pip install --disable-pip-version-check \
        --no-input --quiet --no-deps --target "$tmp" \
        "cargo-zigbuild==$CARGO_ZIGBUILD_VERSION" "ziglang==$ZIGLANG_VERSION"
    [[ -x "$tmp/bin/cargo-zigbuild" ]] || die "cargo-zigbuild did not install bin/cargo-zigbuild"
    [[ -x "$tmp/ziglang/zig" ]] || die "ziglang did not install ziglang/zig"
    got="$("$tmp/ziglang/zig" version)"
    [[ "$got" == "$ZIGLANG_VERSION" ]] || die "zig reports version $got, expected $ZIGLANG_VERSION"
    echo "$WANTED" >"$tmp/.hprof-rs-installed"
    rm -rf "$DEST"
    mv "$tmp" "$DEST"
fi

if ! command -v objdump >/dev/null 2>&1; then
    log "objdump missing: installing binutils with apt-get"
    if [[ $(id -u) -eq 0 ]]; then SUDO=(); else SUDO=(sudo); fi
    "${SUDO[@]}" apt-get update
    DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" apt-get install -y --no-install-recommends binutils
    command -v objdump >/dev/null 2>&1 || die "binutils installed but objdump is not on PATH"
fi
