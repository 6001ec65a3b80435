#!/usr/bin/env bash
# Builds the measuring prototype of bench/alloc-counters (see AllocCountersAgent.java) into
# .cache/alloc-counters/: boot/ (AllocCounters, for -Xbootclasspath/a) and alloc-counters.jar
# (the java.lang.instrument agent, with Debian's ASM, package libasm-java, inside).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="$here/../../.cache/alloc-counters"
asm=/usr/share/java/asm.jar
commons=/usr/share/java/asm-commons.jar
[[ -f $asm ]] || { echo "alloc-counters: needs Debian's libasm-java ($asm)" >&2; exit 1; }
rm -rf "$out" && mkdir -p "$out/boot" "$out/agent"
javac --release 11 -d "$out/boot" "$here/AllocCounters.java"
javac --release 11 -cp "$asm:$commons:$out/boot" -d "$out/agent" "$here/AllocCountersAgent.java"
javac --release 11 -cp "$asm" -d "$out/patch-tool" "$here/PatchThread.java"
java -cp "$asm:$out/patch-tool" PatchThread "$out/patch"
(cd "$out/agent" && unzip -q -o "$asm" "org/*" && unzip -q -o "$commons" "org/*")
printf 'Premain-Class: AllocCountersAgent\nCan-Retransform-Classes: true\n' >"$out/manifest"
jar --create --file "$out/alloc-counters.jar" --manifest "$out/manifest" -C "$out/agent" .
echo "$out/alloc-counters.jar"
