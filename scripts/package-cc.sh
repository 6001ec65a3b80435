#!/bin/sh
# The C compiler scripts/package.sh gives the cc crate (build.rs compiles
# two C files): Zig's clang through cargo-zigbuild, for the target and glibc
# of $PACKAGE_ZIG_TARGET (x86_64-linux-gnu.2.17), with the flags
# cargo-zigbuild's own compiler wrapper uses.
#
# One difference: the cc crate runs `$CC --version` to tell Zig's compiler
# from others, and clang's --version checks the target triple, whose glibc
# suffix `.2.17` only Zig understands: it printed "zig: error: version
# '.2.17' in target triple 'x86_64-unknown-linux-gnu.2.17' is invalid",
# which cargo showed as a warning. --version alone is answered without the
# target (the version is the same); every compilation gets it.
set -eu
: "${PACKAGE_ZIG_TARGET:?set by scripts/package.sh}"
if [ "$#" -eq 1 ] && [ "$1" = --version ]; then
    exec cargo-zigbuild zig cc -- --version
fi
exec cargo-zigbuild zig cc -- -g -fno-sanitize=all -target "$PACKAGE_ZIG_TARGET" "$@"
