#!/usr/bin/env bash
# Installs everything bench/run.sh needs, from Debian packages, and prepares the workloads.
# Safe to run again: it installs only what is missing and rebuilds only what changed.
#
#   bash bench/install.sh             apt-get install the packages, then --prepare
#   bash bench/install.sh --prepare   no apt: unpack the jdk.compiler sources and compile the
#                                     workload drivers into .cache/bench/ (run.sh does this)
#
# Workloads (all third-party programs, from Debian):
#   javac  OpenJDK 17's javac compiling jdk.compiler's sources (openjdk-17-source)
#   rhino  Rhino (rhino) running esprima (node-esprima) and marked (libjs-marked) on jQuery
#          (libjs-jquery) and on generated input
#   h2     the H2 database (libh2-java) under a multi-threaded JDBC load
#   log4j  Log4j 1.2 (liblog4j1.2-java) logging from 4 threads into one file (lock-heavy)
#   fop    Apache FOP (fop) rendering a generated document to PDF
#   saxon  Saxon-HE (libsaxonhe-java) running an XSLT 2.0 report over generated orders
#   clojure  Clojure (clojure) compiling generated functions, persistent collections
#   lucene Lucene 4.10 (liblucene4.10-java) indexing and querying generated documents
# Tools: hyperfine, GNU time (/usr/bin/time -v), unzip, python3.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="$ROOT/.cache/bench"
JAVA_HOME="${BENCH_JAVA_HOME:-/usr/lib/jvm/java-17-openjdk-amd64}"
PACKAGES=(openjdk-17-jdk-headless openjdk-17-source rhino libh2-java liblog4j1.2-java fop libsaxonhe-java
    clojure liblucene4.10-java node-esprima libjs-jquery
    libjs-marked hyperfine time unzip python3 coreutils)
SRC_ZIPS=(/usr/lib/jvm/openjdk-17/lib/src.zip "$JAVA_HOME/lib/src.zip")
NEEDED_FILES=(/usr/share/java/rhino.jar /usr/share/java/h2.jar /usr/share/java/log4j-1.2.jar
    /usr/share/javascript/esprima/esprima.js /usr/share/javascript/marked/marked.umd.js
    /usr/share/javascript/jquery/jquery.js /usr/bin/time "$JAVA_HOME/bin/java"
    "$JAVA_HOME/bin/javac" "$JAVA_HOME/bin/jcmd" /usr/share/java/fop.jar /usr/share/java/Saxon-HE.jar
    /usr/share/java/clojure-1.11.jar /usr/share/java/lucene-core-4.10.4.jar)
# What the drivers are compiled against.
DRIVER_CLASSPATH=/usr/share/java/log4j-1.2.jar:/usr/share/java/fop.jar:/usr/share/java/xmlgraphics-commons.jar
DRIVER_CLASSPATH+=:/usr/share/java/Saxon-HE.jar:/usr/share/java/lucene-core-4.10.4.jar
DRIVER_CLASSPATH+=:/usr/share/java/lucene-analyzers-common-4.10.4.jar

say() { echo "bench/install: $*"; }
die() {
    echo "bench/install: ERROR: $*" >&2
    exit 1
}

install_packages() {
    local missing=() pkg
    for pkg in "${PACKAGES[@]}"; do
        if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed'; then
            missing+=("$pkg")
        fi
    done
    if ((${#missing[@]} == 0)); then
        say "Debian packages already installed: ${PACKAGES[*]}"
        return
    fi
    local sudo=()
    if ((EUID != 0)); then
        command -v sudo >/dev/null || die "not root and no sudo: install ${missing[*]} by hand"
        sudo=(sudo)
    fi
    say "apt-get install ${missing[*]}"
    "${sudo[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends \
        "${missing[@]}"
}

# Unpacks only jdk.compiler/** from the JDK's src.zip (406 .java files).
unpack_sources() {
    local zip="" candidate
    for candidate in "${SRC_ZIPS[@]}"; do
        if [[ -f $candidate ]]; then
            zip=$candidate
            break
        fi
    done
    [[ -n $zip ]] || die "no src.zip in ${SRC_ZIPS[*]}: run 'bash bench/install.sh' (openjdk-17-source)"
    local stamp="$CACHE/jdk.compiler.stamp" want
    want="$(stat -L -c '%s %Y' "$zip") $zip"
    if [[ -f $stamp && $(cat "$stamp") == "$want" && -d $CACHE/jdk.compiler ]]; then
        return
    fi
    say "unpacking jdk.compiler/** from $zip"
    rm -rf "$CACHE/jdk.compiler"
    mkdir -p "$CACHE"
    unzip -q -o "$zip" 'jdk.compiler/*' -d "$CACHE"
    echo "$want" >"$stamp"
    say "$(find "$CACHE/jdk.compiler" -name '*.java' | wc -l) source files in $CACHE/jdk.compiler"
}

# Compiles the drivers (bench/workloads/*.java, bench/heapdump/*.java) when one changed.
compile_drivers() {
    local sources=("$ROOT"/bench/workloads/*.java "$ROOT"/bench/heapdump/*.java)
    local stamp="$CACHE/classes.stamp" want
    want="$(cat "${sources[@]}" | sha256sum | cut -d' ' -f1) $("$JAVA_HOME/bin/javac" -version 2>&1)"
    if [[ -f $stamp && $(cat "$stamp") == "$want" ]]; then
        return
    fi
    say "compiling ${#sources[@]} workload drivers into $CACHE/classes"
    rm -rf "$CACHE/classes"
    mkdir -p "$CACHE/classes"
    "$JAVA_HOME/bin/javac" --release 11 -nowarn -cp "$DRIVER_CLASSPATH" \
        -d "$CACHE/classes" "${sources[@]}"
    echo "$want" >"$stamp"
}

check_files() {
    local f missing=()
    for f in "${NEEDED_FILES[@]}"; do
        [[ -e $f ]] || missing+=("$f")
    done
    for f in hyperfine timeout unzip python3; do
        command -v "$f" >/dev/null || missing+=("$f")
    done
    ((${#missing[@]} == 0)) || die "missing ${missing[*]}: run 'bash bench/install.sh'"
}

case "${1:-}" in
"") install_packages ;;
--prepare) ;;
*) die "usage: bash bench/install.sh [--prepare]" ;;
esac
check_files
unpack_sources
compile_drivers
say "ready"
