#!/usr/bin/env bash
# The reference for heap=dump: starts HeapHolder in "wait" mode, and once it has built its
# heap has `jcmd <pid> GC.heap_dump` write a binary HPROF dump of it, then lets it exit.
# Prints HeapHolder's lines, then dump_seconds=<time jcmd took> and dump_bytes=<size>.
#
#   jcmd-dump.sh JAVA_HOME CLASSES_DIR DUMP_FILE [JVM_OPTION...]
set -euo pipefail

java_home=$1 classes=$2 dump=$3
shift 3
rm -f "$dump"

# HOLDER_MEGABYTES (default: HeapHolder's 200) sets the size of the heap built.
coproc HOLDER { exec "$java_home/bin/java" "$@" -cp "$classes" HeapHolder wait ${HOLDER_MEGABYTES:-}; }
pid=$HOLDER_PID
out_fd=${HOLDER[0]} in_fd=${HOLDER[1]}
ready=0
while IFS= read -r line <&"$out_fd"; do
    echo "$line"
    if [[ $line == READY ]]; then
        ready=1
        break
    fi
done
if ((ready == 0)); then
    echo "jcmd-dump: HeapHolder ended before READY" >&2
    wait "$pid" || true
    exit 1
fi

start=$(date +%s%N)
"$java_home/bin/jcmd" "$pid" GC.heap_dump "$dump" >&2
end=$(date +%s%N)

exec {in_fd}>&-   # HeapHolder exits when its standard input closes
cat <&"$out_fd" || true
wait "$pid"
echo "dump_seconds=$(( (end - start) / 1000000 ))e-3"
echo "dump_bytes=$(stat -c %s "$dump")"
