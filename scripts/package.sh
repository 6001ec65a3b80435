#!/usr/bin/env bash
# Builds the release archive:
#
#   dist/hprof-rs-<version>-linux-x86_64.tar.gz
#     hprof-rs-<version>/bin/hprof-rs           the tool
#     hprof-rs-<version>/lib/libhprof_rs.so     the agent
#     hprof-rs-<version>/lib/libhprof.so        a copy, for -agentlib:hprof / -Xrunhprof
#     hprof-rs-<version>/README.md, BENCHMARKS.md, LICENSE, LICENSE-APACHE, LICENSE-MIT
#     hprof-rs-<version>/docs/*.md              the reference pages README.md links to
#
# Both binaries are linked against glibc 2.17's symbols (RHEL 7 and anything
# newer) by cargo-zigbuild and Zig, installed into .cache/zigbuild by
# scripts/package-tools.sh; the script fails when either needs a newer
# GLIBC_ symbol version. The version is Cargo.toml's. Honours
# CARGO_TARGET_DIR (the build lands in <target>/x86_64-unknown-linux-gnu/release,
# apart from the developers' target/release). See docs/install.md.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

TRIPLE=x86_64-unknown-linux-gnu
GLIBC_FLOOR=2.17
TOOLS="$ROOT/.cache/zigbuild"
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
OUT="$TARGET_DIR/$TRIPLE/release"
DIST="$ROOT/dist"

log() { printf 'package: %s\n' "$*" >&2; }
die() { printf 'package: ERROR: %s\n' "$*" >&2; exit 1; }

VERSION="$(awk -F'"' '/^\[/ { in_package = ($0 == "[package]") }
    in_package && /^version *=/ { print $2; exit }' Cargo.toml)"
[[ "$VERSION" =~ ^[0-9A-Za-z.+-]+$ ]] || die "cannot read [package] version from Cargo.toml"
NAME="hprof-rs-$VERSION"
ARCHIVE="$DIST/$NAME-linux-x86_64.tar.gz"

bash "$ROOT/scripts/package-tools.sh" >&2

mkdir -p "$DIST"
# One packaging at a time (two test processes, two shells).
exec 9>"$DIST/.package.lock"
flock 9

# --- build --------------------------------------------------------------------
# The `.2.17` suffix is cargo-zigbuild's: Zig links against glibc 2.17's
# symbol versions. No debug info in the archive (the profile's `debug = 1`
# is for developers): about 2 MB per binary instead of 17 MB. The C files
# of build.rs are compiled through scripts/package-cc.sh, which keeps the
# cc crate's `--version` question from printing an error about the suffix.
log "cargo zigbuild --release --locked --target $TRIPLE.$GLIBC_FLOOR (version $VERSION)"
PATH="$TOOLS/bin:$TOOLS/ziglang:$PATH" \
    CC_x86_64_unknown_linux_gnu="$ROOT/scripts/package-cc.sh" \
    PACKAGE_ZIG_TARGET="x86_64-linux-gnu.$GLIBC_FLOOR" \
    ZIG_GLOBAL_CACHE_DIR="$ROOT/.cache/zigbuild-cache/zig" \
    XDG_CACHE_HOME="$ROOT/.cache/zigbuild-cache" \
    CARGO_PROFILE_RELEASE_DEBUG=0 \
    CARGO_PROFILE_RELEASE_STRIP=debuginfo \
    cargo zigbuild --release --locked --target "$TRIPLE.$GLIBC_FLOOR" >&2

# --- check --------------------------------------------------------------------
# The newest GLIBC_x.y version among the symbols a binary imports.
newest_glibc() {
    objdump -T "$1" | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/^GLIBC_//' | sort -V | tail -n1
}
for binary in "$OUT/hprof-rs" "$OUT/libhprof_rs.so"; do
    [[ -f "$binary" ]] || die "$binary was not built"
    newest="$(newest_glibc "$binary")"
    [[ -n "$newest" ]] || die "$binary imports no GLIBC_ symbol: not a glibc binary?"
    if [[ "$(printf '%s\n%s\n' "$newest" "$GLIBC_FLOOR" | sort -V | tail -n1)" != "$GLIBC_FLOOR" ]]; then
        objdump -T "$binary" | grep "GLIBC_$newest" >&2 || true
        die "$binary needs GLIBC_$newest, newer than $GLIBC_FLOOR"
    fi
    log "$(basename "$binary"): newest glibc symbol version $newest"
done
# A shared library may keep an undefined symbol that glibc 2.17 lacks (the
# link does not fail): it then carries no version, and loading it on an
# older glibc fails. Only weak ones are allowed, which the Rust standard
# library looks up and does without (docs/install.md).
for binary in "$OUT/hprof-rs" "$OUT/libhprof_rs.so"; do
    unversioned="$(objdump -T "$binary" | awk '/\*UND\*/ && $2 != "w" && !/GLIBC_/ { print $NF }')"
    [[ -z "$unversioned" ]] ||
        die "$binary needs symbols without a glibc version (newer than $GLIBC_FLOOR?): $unversioned"
done
objdump -T "$OUT/libhprof_rs.so" | grep -qw Agent_OnLoad ||
    die "$OUT/libhprof_rs.so exports no Agent_OnLoad"

# --- assemble -----------------------------------------------------------------
stage="$DIST/.stage-$$"
trap 'rm -rf "$stage" "$ARCHIVE.tmp-$$"' EXIT
rm -rf "$stage"
mkdir -p "$stage/$NAME/bin" "$stage/$NAME/lib" "$stage/$NAME/docs"
install -m 0755 "$OUT/hprof-rs" "$stage/$NAME/bin/hprof-rs"
install -m 0755 "$OUT/libhprof_rs.so" "$stage/$NAME/lib/libhprof_rs.so"
# A copy, not a link: it survives any unpacker and `cp` of the one file.
install -m 0755 "$OUT/libhprof_rs.so" "$stage/$NAME/lib/libhprof.so"
install -m 0644 README.md BENCHMARKS.md LICENSE LICENSE-APACHE LICENSE-MIT "$stage/$NAME/"
# The pages README.md links to, so that its links work in the unpacked folder.
install -m 0644 docs/*.md "$stage/$NAME/docs/"

# Same inputs, same archive: fixed order, owner and time (the last commit's).
epoch="${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}"
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$epoch" \
    -C "$stage" -cf - "$NAME" | gzip -n -9 >"$ARCHIVE.tmp-$$"
mv -f "$ARCHIVE.tmp-$$" "$ARCHIVE"
log "wrote ${ARCHIVE#"$ROOT"/} ($(du -k "$ARCHIVE" | cut -f1) KiB)"
echo "$ARCHIVE"
