#!/usr/bin/env bash
# Builds the measuring prototype of bench/alloc-counters (see AllocCountersAgent.java) into
# .cache/alloc-counters/: boot/ (AllocCounters, for -Xbootclasspath/a) and alloc-counters.jar
# (the java.lang.instrument agent, with Debian's ASM, package libasm-java, inside).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="$here/../../.cache/alloc-counters"
asm=/usr/share/java/asm.jar
[[ -f $asm ]] || { echo "alloc-counters: needs Debian's libasm-java ($asm)" >&2; exit 1; }
rm -rf "$out" && mkdir -p "$out/boot" "$out/agent"
javac --release 11 -d "$out/boot" "$here/AllocCounters.java"
javac --release 11 -cp "$asm:$out/boot" -d "$out/agent" "$here/AllocCountersAgent.java"
(cd "$out/agent" && unzip -q -o "$asm" 'org/*')
printf 'Premain-Class: AllocCountersAgent\nCan-Retransform-Classes: true\n' >"$out/manifest"
jar --create --file "$out/alloc-counters.jar" --manifest "$out/manifest" -C "$out/agent" .
echo "$out/alloc-counters.jar"
