#!/usr/bin/env python3
"""Measures the overhead of every hprof-rs mode on real workloads (see BENCHMARKS.md).

Started by bench/run.sh, which builds the agent and the workloads first. For each workload it
runs the commands (no agent, each agent mode, JFR) in rounds: one `hyperfine --runs 1` call
per round times every command once, in an order rotated each round, so the commands
alternate instead of running in blocks. Every run is wrapped in `/usr/bin/time -v` (CPU time,
peak RSS, exit status) and `timeout`; its stdout is kept for the checksum and the agent's
output file is searched for the mode's section, to tell a collector that is not built yet.
Only the Python standard library is used.
"""

import argparse
import datetime
import hashlib
import json
import os
import platform
import re
import shlex
import shutil
import statistics
import struct
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Dict, List, Optional

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
CACHE = REPO / ".cache" / "bench"
CLASSES = CACHE / "classes"
JDK_COMPILER_SRC = CACHE / "jdk.compiler"

RHINO_JAR = Path("/usr/share/java/rhino.jar")
H2_JAR = Path("/usr/share/java/h2.jar")
LOG4J_JAR = Path("/usr/share/java/log4j-1.2.jar")
ESPRIMA_JS = Path("/usr/share/javascript/esprima/esprima.js")
MARKED_JS = Path("/usr/share/javascript/marked/marked.umd.js")
JQUERY_JS = Path("/usr/share/javascript/jquery/jquery.js")
# The workloads added on 2026-12-07, chosen before any of them was measured under the agent
# (issue: heap=sites and cpu=times judged on programs the design was not tuned on).
FOP_JARS = [Path("/usr/share/java") / f"{j}.jar" for j in
            ["fop", "batik-all", "xmlgraphics-commons", "commons-io", "commons-logging",
             "xml-apis", "xml-apis-ext", "fontbox2", "xercesImpl"]]
SAXON_JAR = Path("/usr/share/java/Saxon-HE.jar")
CLOJURE_JARS = [Path("/usr/share/java") / f"{j}.jar" for j in
                ["clojure-1.11", "spec.alpha", "core.specs.alpha"]]
LUCENE_JARS = [Path("/usr/share/java") / f"{j}.jar" for j in
               ["lucene-core-4.10.4", "lucene-analyzers-common-4.10.4"]]
DEBIAN_PACKAGES = ["openjdk-17-jdk-headless", "openjdk-17-source", "rhino", "libh2-java",
                   "liblog4j1.2-java", "fop", "libsaxonhe-java", "clojure", "liblucene4.10-java",
                   "node-esprima", "libjs-jquery", "libjs-marked", "hyperfine", "time"]

HEAP = "-Xmx2g"  # the same heap limit for every run, so RSS is comparable between machines
SAMPLED_INTERVAL = "512k"

# Tags of the binary HPROF records a heap dump is written as.
HPROF_HEAP_DUMP_TAGS = {0x0C, 0x1C}


@dataclass(frozen=True)
class Mode:
    key: str            # short name used on the command line (--modes)
    label: str          # what the table shows: the exact option string
    agent: Optional[str] = None      # agent options (file= is added)
    markers: tuple = ()  # ASCII: one of these lines must be in the output
    binary_tags: frozenset = frozenset()  # binary: one of these record tags must be there
    jfr: Optional[str] = None   # JFR settings (a name or a .jfc path): run with JFR instead
    jcmd: bool = False
    baseline: bool = False  # run with --baseline's agent library instead of --lib's


MODES = {m.key: m for m in [
    Mode("none", "no agent"),
    Mode("samples", "cpu=samples", "cpu=samples", ("CPU SAMPLES BEGIN",)),
    Mode("samples-1", "cpu=samples,interval=1", "cpu=samples,interval=1", ("CPU SAMPLES BEGIN",)),
    # The stacks taken through JVMTI at safepoints (the path before AsyncGetCallTrace, and its
    # fallback), for the comparison.
    Mode("samples-jvmti", "cpu=samples,X=0x10000 (JVMTI stacks)", "cpu=samples,X=0x10000",
         ("CPU SAMPLES BEGIN",)),
    # Without DebugNonSafepoints (no debug information between safepoints): what it costs.
    Mode("samples-nodebug", "cpu=samples,X=0x40000 (no DebugNonSafepoints)",
         "cpu=samples,X=0x40000", ("CPU SAMPLES BEGIN",)),
    Mode("samples-jvmti-1", "cpu=samples,interval=1,X=0x10000 (JVMTI stacks)",
         "cpu=samples,interval=1,X=0x10000", ("CPU SAMPLES BEGIN",)),
    Mode("sites", "heap=sites (default: counted per site in the bytecode)", "heap=sites",
         ("SITES BEGIN",)),
    # HPROF's fully exact table: an event, a stack walk and a tag per object.
    Mode("sites-events", "heap=sites,alloc_count=events", "heap=sites,alloc_count=events",
         ("SITES BEGIN",)),
    Mode("sites-sampled", f"heap=sites,alloc_interval={SAMPLED_INTERVAL}",
         f"heap=sites,alloc_interval={SAMPLED_INTERVAL}", ("SITES BEGIN",)),
    # Counted in the bytecode with calling contexts: every row exact.
    Mode("sites-bytecode", "heap=sites,alloc_count=bytecode (calling contexts)",
         "heap=sites,alloc_count=bytecode", ("SITES BEGIN",)),
    # The design before: the classes loaded before VM init retransformed at VM init instead of
    # rewritten as they load (hidden X=0x400000), for the comparison.
    Mode("sites-retransform", "heap=sites,X=0x400000 (retransformed at VM init)",
         "heap=sites,X=0x400000", ("SITES BEGIN",)),
    # heap=sites without calling contexts (per-site counts, one-frame traces), for the
    # comparison: what the contexts cost.
    Mode("sites-depth1", "heap=sites,depth=1 (no calling contexts)", "heap=sites,depth=1",
         ("SITES BEGIN",)),
    # heap=sites counted per site without calling contexts, each site's rows from the live
    # sample (alloc_count=sites, the default since 2026-11-29), named.
    Mode("sites-split", "heap=sites,alloc_count=sites (rows from the live sample)",
         "heap=sites,alloc_count=sites", ("SITES BEGIN",)),
    # heap=sites leaving the classes loaded before VM init unchanged and uncounted (hidden
    # X=0x800000: no early class-load hook, the class-data-sharing archive kept): the start-up
    # floor of a design that changes none of them at start, for the comparison.
    Mode("sites-early-alone", "heap=sites,X=0x800000 (classes before VM init left alone)",
         "heap=sites,X=0x800000", ("SITES BEGIN",)),
    # heap=sites with the classes loaded before VM init unchanged at start, counted from the live
    # sample's events until its 8 MiB are spent, then retransformed to count in their code
    # (hidden X=0x4000000): the start-up design, for its cost on the workloads.
    Mode("sites-early-events", "heap=sites,X=0x4000000 (classes before VM init handed over)",
         "heap=sites,X=0x4000000", ("SITES BEGIN",)),
    # heap=sites rewriting the classes loaded before VM init as they load, through the early
    # class-load hook (hidden X=0x8000000): the default before 2026-12-02.
    Mode("sites-early-hook", "heap=sites,X=0x8000000 (classes before VM init rewritten as they load)",
         "heap=sites,X=0x8000000", ("SITES BEGIN",)),
    # heap=sites past the default: deeper traces and rows per thread, still counted per site in
    # the bytecode (each site's rows split from its walks).
    Mode("sites-depth16", "heap=sites,depth=16", "heap=sites,depth=16", ("SITES BEGIN",)),
    Mode("sites-depth64", "heap=sites,depth=64", "heap=sites,depth=64", ("SITES BEGIN",)),
    Mode("sites-thread", "heap=sites,thread=y", "heap=sites,thread=y", ("SITES BEGIN",)),
    Mode("times", "cpu=times", "cpu=times", ("CPU TIME (ms) BEGIN",)),
    # cpu=times with its hooks returning at once (hidden X=0x1000000): what the calls into the
    # Tracker alone cost, the floor of timing every call through them.
    Mode("times-calls", "cpu=times,X=0x1000000 (hooks only, nothing timed)",
         "cpu=times,timing=calls,X=0x1000000", ("CPU TIME (ms) BEGIN",)),
    # cpu=times counting each call on entry in the thread's own table, no clock, no exit call
    # (hidden X=0x2000000): the floor of counting calls in the byte code with times from samples.
    Mode("times-counts", "cpu=times,X=0x2000000 (calls counted on entry, nothing timed)",
         "cpu=times,timing=calls,X=0x2000000", ("CPU TIME (ms) BEGIN",)),
    # The same count by a method the JIT may inline (hidden X=0x10000000): counting in the method.
    Mode("times-counts-inlined", "cpu=times,X=0x10000000 (calls counted on entry, inlined)",
         "cpu=times,timing=calls,X=0x10000000", ("CPU TIME (ms) BEGIN",)),
    # cpu=times' default without one of its parts (hidden bits, for the decision log): no
    # first-call reports (X=0x20000000), no priming of the inlined count (X=0x40000000), the
    # program's threads with the stacks they ask for (X=0x80000000).
    Mode("times-no-first-calls", "cpu=times,X=0x20000000 (no first-call reports)",
         "cpu=times,X=0x20000000", ("CPU TIME (ms) BEGIN",)),
    Mode("times-unprimed", "cpu=times,X=0x40000000 (count not primed)",
         "cpu=times,X=0x40000000", ("CPU TIME (ms) BEGIN",)),
    Mode("times-stacks-as-asked", "cpu=times,X=0x80000000 (stacks not enlarged)",
         "cpu=times,X=0x80000000", ("CPU TIME (ms) BEGIN",)),
    # cpu=times timing every call (timing=calls), HPROF's way; the default (mode "times") counts
    # every call and takes times and traces from CPU samples.
    Mode("times-every-call", "cpu=times,timing=calls (every call timed)",
         "cpu=times,timing=calls", ("CPU TIME (ms) BEGIN",)),
    # cpu=times with a filter: only javac's attribution package (com.sun.tools.javac.comp) is
    # rewritten and timed; on the other workloads nothing matches.
    Mode("times-javac-comp", "cpu=times,include=com.sun.tools.javac.comp.*",
         "cpu=times,include=com.sun.tools.javac.comp.*", ("CPU TIME (ms) BEGIN",)),
    # ... and a filter nothing matches: what cpu=times costs the classes it leaves out.
    Mode("times-nothing", "cpu=times,include=nothing.matches.*",
         "cpu=times,include=nothing.matches.*", ("CPU TIME (ms) BEGIN",)),
    Mode("monitor", "monitor=y", "monitor=y", ("MONITOR TIME BEGIN", "MONITOR DUMP BEGIN")),
    # cpu=wall (an hprof-rs addition): every thread sampled every 10 ms of wall-clock time.
    Mode("wall", "cpu=wall", "cpu=wall", ("WALL STATES BEGIN",)),
    Mode("dump", "heap=dump", "heap=dump", ("HEAP DUMP BEGIN",)),
    Mode("dump-b", "heap=dump,format=b", "heap=dump,format=b",
         binary_tags=frozenset(HPROF_HEAP_DUMP_TAGS)),
    Mode("jfr", "JFR settings=profile", jfr="profile"),
    # What monitor=y records, recorded by JFR: every monitor enter, wait and park, however short.
    Mode("jfr-monitor", "JFR monitor events, threshold 0",
         jfr=str(BENCH / "locks" / "monitor-events.jfc")),
    Mode("jcmd", "jcmd GC.heap_dump (no agent)", jcmd=True),
]}

BASELINE_SUFFIX = "@baseline"


def mode_of(key: str) -> Mode:
    """The mode of a key; `<mode>@baseline` is that mode run with the baseline library."""
    if key.endswith(BASELINE_SUFFIX):
        mode = MODES[key[:-len(BASELINE_SUFFIX)]]
        return replace(mode, key=key, label=f"{mode.label} (baseline)", baseline=True)
    return MODES[key]


def with_baselines(keys: List[str]) -> List[str]:
    """Each agent mode followed by the same mode under the baseline library."""
    out = []
    for key in keys:
        out.append(key)
        if MODES[key].agent:
            out.append(key + BASELINE_SUFFIX)
    return out


def baseline_first(order: List[Mode]) -> List[Mode]:
    """`order` with each mode and its baseline run swapped where they stand side by side: a
    command run right after its twin can run faster (warm caches), so the two take turns."""
    out = list(order)
    for i in range(1, len(out)):
        if out[i].baseline and out[i - 1].key + BASELINE_SUFFIX == out[i].key:
            out[i - 1], out[i] = out[i], out[i - 1]
    return out


# Extra modes a profiling workload runs only when --modes names them (cpu=samples at
# interval=1, and the JVMTI stack path beside the signal handler's).
SAMPLES_COMPARISON_MODES = ["samples-1", "samples-jvmti", "samples-jvmti-1", "samples-nodebug"]
# heap=sites with the classes loaded before VM init retransformed (the design before), run
# only when --modes names it.
SITES_COMPARISON_MODES = ["sites-retransform", "sites-depth1", "sites-split", "sites-early-alone",
                          "sites-early-events", "sites-early-hook", "sites-depth16", "sites-depth64",
                          "sites-thread"]
# cpu=times filtered to one package, or without one of its parts, also run only when --modes
# names it.
FILTERED_TIMES_MODES = ["times-javac-comp", "times-nothing", "times-calls", "times-counts",
                        "times-counts-inlined", "times-every-call", "times-no-first-calls",
                        "times-unprimed", "times-stacks-as-asked"]
PROFILING_MODES = ["none", "samples", "sites", "sites-events", "sites-sampled", "sites-bytecode", "times",
                   "monitor", "jfr", "jfr-monitor"]
STARTUP_MODES = ["none", "samples", "sites", "sites-sampled", "sites-bytecode", "times",
                 "monitor", "dump", "jfr"]
HEAPDUMP_MODES = ["none", "dump-b", "dump", "jcmd"]


@dataclass
class Workload:
    key: str
    title: str
    what: str
    argv: List[str]          # after `java -Xmx2g <profiler options>`
    modes: List[str]
    startup: bool = False
    heapdump: bool = False


def classpath(classes: Optional[str], jars: List[Path]) -> str:
    """The drivers' classes (if any) and the jars, as one -cp value."""
    return ":".join(([classes] if classes else []) + [str(j) for j in jars])


def workloads(work: Path) -> List[Workload]:
    cp = str(CLASSES)
    return [
        Workload("javac", "javac", "javac (JDK 17) compiles the jdk.compiler module's sources",
                 ["-cp", cp, "JavacBench", str(JDK_COMPILER_SRC), str(work / "javac-out")],
                 PROFILING_MODES),
        Workload("rhino", "rhino", "Rhino runs esprima on jQuery and marked on generated Markdown",
                 ["-cp", f"{RHINO_JAR}", "org.mozilla.javascript.tools.shell.Main",
                  str(BENCH / "workloads" / "rhino-bench.js"),
                  str(ESPRIMA_JS), str(MARKED_JS), str(JQUERY_JS)],
                 PROFILING_MODES),
        Workload("h2", "h2", "H2 serves 4 JDBC client threads (in-memory database)",
                 ["-cp", f"{cp}:{H2_JAR}", "H2Load"], PROFILING_MODES),
        Workload("log4j", "log4j", "Log4j 1.2: 4 threads log into one file, contending on one "
                 "logger's monitor", ["-cp", f"{cp}:{LOG4J_JAR}", "Log4jLoad"], PROFILING_MODES),
        Workload("fop", "fop", "Apache FOP lays out a generated 60-section document and renders "
                 "it to PDF, 3 times", ["-cp", classpath(cp, FOP_JARS), "FopLoad"], PROFILING_MODES),
        Workload("saxon", "saxon", "Saxon-HE runs an XSLT 2.0 report over 30,000 generated "
                 "orders, 3 times", ["-cp", classpath(cp, [SAXON_JAR]), "SaxonLoad"],
                 PROFILING_MODES),
        Workload("clojure", "clojure", "Clojure compiles generated functions and works "
                 "persistent collections over generated words",
                 ["-cp", classpath(None, CLOJURE_JARS), "clojure.main",
                  str(BENCH / "workloads" / "clojure-bench.clj")], PROFILING_MODES),
        Workload("lucene", "lucene", "Lucene 4.10 indexes 40,000 generated documents in memory "
                 "and answers 2,000 queries", ["-cp", classpath(cp, LUCENE_JARS), "LuceneLoad"],
                 PROFILING_MODES),
        Workload("idle2000", "idle2000", "2,000 threads: 1,990 wait on a latch, 10 sort arrays",
                 ["-cp", cp, "IdleThreads", "2000", "10", "1500"], ["none", "wall"]),
        Workload("idle200", "idle200", "200 threads: 190 wait on a latch, 10 sort arrays",
                 ["-cp", cp, "IdleThreads", "200", "10", "1500"], ["none", "wall"]),
        Workload("version", "startup: java -version", "`java -version`", ["-version"],
                 STARTUP_MODES, startup=True),
        Workload("hello", "startup: Hello World", "a Hello World class",
                 ["-cp", cp, "Hello"], STARTUP_MODES, startup=True),
        Workload("heapdump", "heap dump of ~200 MB live", "HeapHolder builds ~200 MB of live "
                 "objects, then exits (the agent dumps at exit) or waits for jcmd",
                 ["-cp", cp, "HeapHolder", "exit"], HEAPDUMP_MODES, heapdump=True),
    ]


@dataclass
class Run:
    mode: str
    round: int
    warmup: bool
    wall: Optional[float] = None
    cpu: Optional[float] = None         # user + system seconds (hyperfine's rusage)
    user: Optional[float] = None        # /usr/bin/time -v
    sys: Optional[float] = None
    rss_kb: Optional[int] = None
    exit: Optional[int] = None
    signal: Optional[int] = None
    checksum: Optional[str] = None
    section: Optional[bool] = None      # None: nothing to look for
    output_bytes: Optional[int] = None
    dump_seconds: Optional[float] = None
    error: Optional[str] = None


@dataclass
class Result:
    workload: Workload
    runs: List[Run] = field(default_factory=list)
    slow: set = field(default_factory=set)   # modes run only --slow-runs times
    slow_factor: float = 8.0
    rounds: int = 0       # rounds run, warmups included


# ---------------------------------------------------------------------------------------------
# running


def java_command(java_home: Path, lib: Path, wl: Workload, mode: Mode, out_file: Path) -> List[str]:
    java = str(java_home / "bin" / "java")
    if mode.jcmd:
        return ["bash", str(BENCH / "heapdump" / "jcmd-dump.sh"), str(java_home), str(CLASSES),
                str(out_file), HEAP]
    opts = [HEAP]
    if mode.agent:
        opts.append(f"-agentpath:{lib}={mode.agent},file={out_file}")
    if mode.jfr:
        opts.append(f"-XX:StartFlightRecording=settings={mode.jfr},filename={out_file}")
    return [java] + opts + wl.argv


def output_name(wl: Workload, mode: Mode, rnd: int) -> str:
    ext = "jfr" if mode.jfr else {"none": "none", "jcmd": "hprof", "dump-b": "hprof"}.get(mode.key, "txt")
    return f"{wl.key}.{mode.key}.r{rnd}.{ext}"


def parse_time_v(path: Path, run: Run) -> None:
    """Reads what `/usr/bin/time -v` wrote."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        run.error = "no /usr/bin/time output"
        return
    def num(label: str) -> Optional[str]:
        m = re.search(r"^\s*" + re.escape(label) + r":\s*(\S+)\s*$", text, re.M)
        return m.group(1) if m else None
    user, system, rss, status = (num("User time (seconds)"), num("System time (seconds)"),
                                 num("Maximum resident set size (kbytes)"), num("Exit status"))
    run.user = float(user) if user else None
    run.sys = float(system) if system else None
    run.rss_kb = int(rss) if rss else None
    run.exit = int(status) if status else None
    m = re.search(r"Command terminated by signal (\d+)", text)
    if m:
        run.signal = int(m.group(1))


def parse_stdout(path: Path, run: Run) -> None:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return
    for line in text.splitlines():
        if line.startswith("checksum="):
            run.checksum = line[len("checksum="):].strip()
        elif line.startswith("dump_seconds="):
            run.dump_seconds = float(line[len("dump_seconds="):])


def file_has_markers(path: Path, markers) -> bool:
    wanted = [m.encode() for m in markers]
    keep = max(len(w) for w in wanted)
    tail = b""
    with open(path, "rb") as f:
        while True:
            chunk = f.read(1 << 20)
            if not chunk:
                return False
            data = tail + chunk
            if any(w in data for w in wanted):
                return True
            tail = data[-keep:]


def binary_has_tags(path: Path, tags) -> bool:
    """Walks the records of a binary HPROF file looking for one of `tags`."""
    with open(path, "rb") as f:
        header = f.read(64)
        end = header.find(b"\0")
        if not header.startswith(b"JAVA PROFILE") or end < 0:
            return False
        f.seek(end + 1 + 4 + 8)
        while True:
            head = f.read(9)
            if len(head) < 9:
                return False
            tag, _, length = struct.unpack(">BII", head)
            if tag in tags:
                return True
            f.seek(length, os.SEEK_CUR)


def inspect_output(mode: Mode, path: Path, run: Run) -> None:
    if mode.key == "none":
        return
    if not path.exists():
        run.output_bytes = None
        run.section = False if (mode.markers or mode.binary_tags) else None
        return
    run.output_bytes = path.stat().st_size
    if mode.markers:
        run.section = file_has_markers(path, mode.markers)
    elif mode.binary_tags:
        run.section = binary_has_tags(path, mode.binary_tags)


def first_error_line(path: Path) -> str:
    try:
        for line in path.read_text(errors="replace").splitlines():
            if line.strip() and not line.startswith("[") and "Dumping" not in line:
                return line.strip()[:160]
    except OSError:
        pass
    return ""


def run_round(wl: Workload, modes: List[Mode], rnd: int, warmup: bool, args, raw: Path,
              work: Path) -> List[Run]:
    names, shells, files = [], [], []
    for mode in modes:
        base = raw / f"{wl.key}.{mode.key}.r{rnd}"
        out_file = work / output_name(wl, mode, rnd)
        lib = args.baseline if mode.baseline else args.lib
        argv = ["/usr/bin/time", "-v", "-o", f"{base}.time", "timeout", "-k", "10",
                str(args.timeout)] + java_command(args.java_home, lib, wl, mode, out_file)
        shell = (f"cd {shlex.quote(str(REPO))} && exec {shlex.join(argv)}"
                 f" > {shlex.quote(str(base))}.out 2> {shlex.quote(str(base))}.err")
        names.append(mode.key)
        shells.append(shell)
        files.append((mode, base, out_file))
    json_path = raw / f"{wl.key}.r{rnd}.hyperfine.json"
    cmd = ["hyperfine", "--runs", "1", "--ignore-failure", "--style", "none",
           "--export-json", str(json_path)]
    for name, shell in zip(names, shells):
        cmd += ["-n", name, shell]
    with open(raw / "hyperfine.log", "a") as log:
        log.write(f"# {wl.key} round {rnd}\n{shlex.join(cmd)}\n")
        log.flush()
        subprocess.run(cmd, stdout=log, stderr=log, check=False)
    walls, cpus = {}, {}
    try:
        for r in json.loads(json_path.read_text())["results"]:
            walls[r["command"]] = r["times"][0]
            cpus[r["command"]] = max(0.0, r["user"] + r["system"])
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        pass

    runs = []
    for mode, base, out_file in files:
        run = Run(mode=mode.key, round=rnd, warmup=warmup, wall=walls.get(mode.key))
        parse_time_v(Path(f"{base}.time"), run)
        # hyperfine's rusage has microseconds; /usr/bin/time prints hundredths.
        run.cpu = cpus.get(mode.key, None if run.user is None else run.user + (run.sys or 0))
        parse_stdout(Path(f"{base}.out"), run)
        inspect_output(mode, out_file, run)
        if run.exit not in (0, None) or run.signal is not None or run.wall is None:
            if run.exit == 124:
                run.error = f"timed out after {args.timeout} s"
            else:
                what = f"signal {run.signal}" if run.signal else f"exit {run.exit}"
                run.error = f"{what}: {first_error_line(Path(f'{base}.err'))}"
        if stopped(run):
            run.section = None  # a stopped run's output says nothing about the collector
        if out_file.exists():
            out_file.unlink()  # heap dumps are hundreds of MB; the size is kept
        runs.append(run)
    return runs


def run_workload(wl: Workload, mode_keys: List[str], args, raw: Path, work: Path) -> Result:
    result = Result(wl, slow_factor=args.slow_factor)
    runs = args.startup_runs if wl.startup else args.runs
    total = args.warmup + runs
    remaining = {k: runs for k in mode_keys}   # measured runs still to do
    done = {k: 0 for k in mode_keys}           # runs done, warmups included
    for rnd in range(total):
        warm = rnd < args.warmup
        todo = [mode_of(k) for k in mode_keys
                if (warm or remaining[k] > 0) and (k not in result.slow or done[k] < args.slow_runs)]
        if not todo:
            break
        shift = rnd % len(todo)
        order = todo[shift:] + todo[:shift]
        if rnd % 2:
            order = baseline_first(order)
        started = time.monotonic()
        result.rounds += 1
        got = run_round(wl, order, rnd, warm, args, raw, work)
        result.runs.extend(got)
        line = ", ".join(f"{r.mode} {r.wall:.2f}s" if r.wall is not None else f"{r.mode} ?"
                         for r in got)
        print(f"  [{wl.key}] round {rnd + 1}/{total}{' (warmup)' if warm else ''}: {line}"
              f"  ({time.monotonic() - started:.0f} s)", flush=True)
        for r in got:
            done[r.mode] += 1
            if not warm:
                remaining[r.mode] -= 1
        # A mode far slower than no agent runs only --slow-runs times (warmups included),
        # to bound the total; its precision matters less than its order of magnitude.
        base = next((r.wall for r in got if r.mode == "none" and r.wall), None)
        if base is not None and not wl.startup:
            for r in got:
                if r.wall and r.wall > args.slow_factor * base:
                    result.slow.add(r.mode)
    return result


# ---------------------------------------------------------------------------------------------
# the report


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def fmt(value, digits=2, suffix=""):
    return "–" if value is None else f"{value:.{digits}f}{suffix}"


def secs(value) -> str:
    """Seconds: milliseconds shown below one second, for the startup rows."""
    return "–" if value is None else f"{value:.3f}" if value < 1 else f"{value:.2f}"


def ratio(a, b):
    return None if a is None or not b else a / b


@dataclass
class Row:
    mode: Mode
    measured: List[Run]
    all_runs: List[Run]
    wall: Optional[float]
    cpu: Optional[float]
    rss_mb: Optional[float]
    dump: Optional[float] = None
    output_mb: Optional[float] = None
    timed_out: bool = False   # every measured run hit --timeout: the figures are lower bounds


def offered_modes(workload) -> List[str]:
    """The modes a workload can run: its own, and for a profiling workload the comparison
    modes of cpu=samples, the filtered cpu=times and cpu=wall, and heap=sites' previous start
    (run only when --modes names them)."""
    extra = (SAMPLES_COMPARISON_MODES + FILTERED_TIMES_MODES + ["wall"]
             if workload.modes is PROFILING_MODES else [])
    if workload.modes is PROFILING_MODES or workload.modes is STARTUP_MODES:
        extra = extra + SITES_COMPARISON_MODES
    return workload.modes + extra


def summarize(result: Result) -> Dict[str, Row]:
    rows = {}
    # In the order the workload lists its modes, each followed by its baseline run.
    for key in with_baselines(offered_modes(result.workload)):
        all_runs = [r for r in result.runs if r.mode == key]
        if not all_runs:
            continue
        measured = [r for r in all_runs if not r.warmup] or all_runs
        ok = [r for r in measured if r.error is None] or measured
        cpu = median([r.cpu for r in ok])
        rss = median([r.rss_kb / 1024 if r.rss_kb else None for r in ok])
        out = median([r.output_bytes / 1e6 if r.output_bytes is not None else None for r in ok])
        rows[key] = Row(mode_of(key), measured, all_runs, median([r.wall for r in ok]), cpu, rss,
                        median([r.dump_seconds for r in ok]), out,
                        all(r.exit == 124 for r in measured))
    return rows


def reference_checksum(rows: Dict[str, Row]) -> Optional[str]:
    base = rows.get("none")
    if not base:
        return None
    sums = [r.checksum for r in base.all_runs if r.checksum]
    return sums[0] if sums else None


def stopped(run: Run) -> bool:
    """The run hit --timeout (timeout's exit status 124)."""
    return run.exit == 124


def checksum_cell(wl: Workload, row: Row, ref: Optional[str]) -> str:
    if wl.key == "version":
        return "n/a"
    if ref is None:
        return "**NO REFERENCE**"
    finished = [r for r in row.all_runs if not stopped(r)]
    if not finished:
        return "– (stopped)"
    if any(r.checksum is None for r in finished):
        return "**MISSING**"
    bad = [r.checksum for r in finished if r.checksum != ref]
    return "ok" if not bad else f"**MISMATCH** ({bad[0]})"


def status_cell(row: Row, result: Result) -> str:
    notes = []
    n = len(row.all_runs)
    timeouts = [r for r in row.all_runs if stopped(r)]
    errors = [r.error for r in row.all_runs if r.error and not stopped(r)]
    if errors:
        notes.append(f"**FAILED** {len(errors)}/{n} runs: {errors[0]}")
    if timeouts:
        notes.append(f"stopped at the time limit in {len(timeouts)}/{n} runs")
    mode = row.mode
    if mode.markers or mode.binary_tags:
        found = [r.section for r in row.all_runs if r.section is not None]
        if found and not any(found):
            what = " / ".join(f"`{m}`" for m in mode.markers) or "HEAP DUMP record"
            notes.append(f"collector not built yet (no {what} in output)")
        elif not found and not timeouts:
            notes.append("no output file")
    elif mode.jfr:
        sizes = [r.output_bytes for r in row.all_runs if r.output_bytes]
        notes.append(f"recording {fmt(median(sizes) / 1e6, 1)} MB" if sizes else "no recording")
    if mode.key in result.slow and n < result.rounds:
        notes.append(f"over {result.slow_factor:g}× no agent: run {n} time(s) only")
    return "; ".join(notes) or "ok"


def main_table(results: List[Result]) -> List[str]:
    lines = ["| workload | mode | runs | wall median (s) | wall × | CPU median (s) | CPU × "
             "| peak RSS (MB) | checksum | status |",
             "|---|---|---:|---:|---:|---:|---:|---:|---|---|"]
    for res in results:
        if res.workload.heapdump:
            continue
        rows = summarize(res)
        base = rows.get("none")
        ref = reference_checksum(rows)
        for key, row in rows.items():
            more = "> " if row.timed_out else ""
            lines.append(
                f"| {res.workload.title} | {row.mode.label} | {len(row.measured)} "
                f"| {more}{secs(row.wall)} | {more}{fmt(ratio(row.wall, base and base.wall))} "
                f"| {more}{secs(row.cpu)} | {more}{fmt(ratio(row.cpu, base and base.cpu))} "
                f"| {fmt(row.rss_mb, 0)} | {checksum_cell(res.workload, row, ref)} "
                f"| {status_cell(row, res)} |")
    return lines


def across_workloads_table(results: List[Result]) -> List[str]:
    """Per mode, over the profiling workloads that ran it (not the startup or heap dump ones):
    the geometric mean of the wall and CPU ratios, and the worst wall ratio with its workload."""
    ratios: Dict[str, List[tuple]] = {}
    labels: Dict[str, str] = {}
    for res in results:
        if res.workload.heapdump or res.workload.startup:
            continue
        rows = summarize(res)
        base = rows.get("none")
        for key, row in rows.items():
            wall = ratio(row.wall, base and base.wall)
            cpu = ratio(row.cpu, base and base.cpu)
            if key == "none" or wall is None or cpu is None or row.timed_out:
                continue
            ratios.setdefault(key, []).append((wall, cpu, res.workload.title))
            labels[key] = row.mode.label
    lines = ["| mode | workloads | wall × geometric mean | CPU × geometric mean "
             "| worst wall × (workload) |", "|---|---:|---:|---:|---|"]
    for key, values in ratios.items():
        wall_mean = statistics.geometric_mean(v[0] for v in values)
        cpu_mean = statistics.geometric_mean(v[1] for v in values)
        worst = max(values)
        lines.append(f"| {labels[key]} | {len(values)} | {fmt(wall_mean)} | {fmt(cpu_mean)} "
                     f"| {fmt(worst[0])} ({worst[2]}) |")
    return lines


def heapdump_table(res: Result) -> List[str]:
    rows = summarize(res)
    base = rows.get("none")
    ref = reference_checksum(rows)
    lines = ["| command | runs | wall median (s) | dump time (s) | CPU median (s) "
             "| peak RSS (MB) | dump size (MB) | checksum | status |",
             "|---|---:|---:|---:|---:|---:|---:|---|---|"]
    for key, row in rows.items():
        if key == "none":
            dump = None
        elif row.mode.jcmd:
            dump = row.dump
        else:
            dump = None if (row.wall is None or not base or base.wall is None) else row.wall - base.wall
        lines.append(
            f"| {row.mode.label} | {len(row.measured)} | {secs(row.wall)} | {secs(dump)} "
            f"| {secs(row.cpu)} | {fmt(row.rss_mb, 0)} | {fmt(row.output_mb, 1)} "
            f"| {checksum_cell(res.workload, row, ref)} | {status_cell(row, res)} |")
    return lines


def baseline_table(results: List[Result]) -> List[str]:
    lines = ["| workload | mode | runs | wall × baseline | CPU × baseline | RSS × baseline "
             "| spread |", "|---|---|---:|---:|---:|---:|---:|"]
    for res in results:
        rows = summarize(res)
        for key, row in rows.items():
            old = rows.get(key + BASELINE_SUFFIX)
            if old is None:
                continue
            walls = [r.wall for r in row.measured if r.wall]
            spread = fmt(max(walls) / min(walls)) if len(walls) > 1 else "–"
            lines.append(
                f"| {res.workload.title} | {row.mode.label} | {len(row.measured)} "
                f"| {fmt(ratio(row.wall, old.wall))} | {fmt(ratio(row.cpu, old.cpu))} "
                f"| {fmt(ratio(row.rss_mb, old.rss_mb))} | {spread} |")
    return lines


def checksum_table(results: List[Result]) -> List[str]:
    lines = ["| workload | checksum printed without agent | runs compared | all runs equal |",
             "|---|---|---:|---|"]
    for res in results:
        if res.workload.key == "version":
            continue
        rows = summarize(res)
        ref = reference_checksum(rows)
        compared = [r for r in res.runs if not stopped(r)]
        same = all(r.checksum == ref for r in compared)
        left = len(res.runs) - len(compared)
        lines.append(f"| {res.workload.title} | `{ref}` | {len(compared)}"
                     + (f" ({left} stopped at the time limit, not compared)" if left else "")
                     + f" | {'yes' if same and ref else '**NO**'} |")
    return lines


def sh(cmd: List[str]) -> str:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, check=False).stdout.strip()
    except OSError:
        return ""


def machine_facts(java_home: Path, lib: Path, shown: Path) -> List[str]:
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = ""
    try:
        kb = int(re.search(r"MemTotal:\s+(\d+)", Path("/proc/meminfo").read_text()).group(1))
        mem = f"{kb / 1024 / 1024:.1f} GiB"
    except (OSError, AttributeError):
        pass
    distro = ""
    try:
        distro = re.search(r'PRETTY_NAME="([^"]+)"', Path("/etc/os-release").read_text()).group(1)
    except (OSError, AttributeError):
        pass
    java_version = subprocess.run([str(java_home / "bin" / "java"), "-version"],
                                  capture_output=True, text=True, check=False).stderr
    java_version = java_version.strip().splitlines()[1] if java_version.strip() else "?"
    packages = sh(["dpkg-query", "-W", "-f", "${Package} ${Version}\n"] + DEBIAN_PACKAGES)
    commit = sh(["git", "-C", str(REPO), "log", "-1", "--format=%h %cs %s"])[:72]
    dirty = sh(["git", "-C", str(REPO), "status", "--porcelain", "--", "src", "Cargo.toml",
                "Cargo.lock", "build.rs"])
    hyperfine = sh(["hyperfine", "--version"])
    shown_lib = shown.relative_to(REPO) if shown.is_relative_to(REPO) else shown
    digest = hashlib.sha256(lib.read_bytes()).hexdigest()[:16] if lib.exists() else "?"
    return [
        f"- CPU: {cpu or '?'}, {os.cpu_count()} cores; memory {mem or '?'}",
        f"- OS: {distro or '?'}, kernel {platform.release()}",
        f"- JDK: {java_version} (`{java_home}`)",
        f"- agent: `{shown_lib}` (sha256 {digest}…, copied before the first run) built from "
        f"`{commit}`"
        + (" (with uncommitted changes in src/)" if dirty else ""),
        f"- {hyperfine}; GNU time `/usr/bin/time -v`",
        "- Debian packages: " + ", ".join(f"`{p}`" for p in packages.splitlines()),
    ]


def write_report(results: List[Result], meta: dict, run_dir: Path) -> str:
    """The whole Markdown report; `meta` holds the run's settings and facts (meta.json)."""
    args = argparse.Namespace(**meta)
    quick = " (smoke run: `--quick`)" if args.quick else ""
    started = datetime.datetime.fromisoformat(args.started)
    total = (datetime.datetime.fromisoformat(args.finished) - started).total_seconds()
    md = [
        "# Benchmarks",
        "",
        "Overhead of each hprof-rs mode on real Java programs, against no agent and against",
        "JDK Flight Recorder (`-XX:StartFlightRecording=settings=profile`). Generated by",
        "`bench/run.sh` (do not edit by hand; rerun it; sections after its end marker are kept).",
        "How to reproduce on a fresh machine:",
        "",
        "```sh",
        "bash bench/install.sh   # Debian packages, jdk.compiler sources, workload drivers",
        "bash bench/run.sh       # builds the agent, runs everything, rewrites this file",
        "```",
        "",
        f"## This run{quick}",
        "",
        f"- date: {started.strftime('%Y-%m-%d %H:%M UTC')}, took {total / 60:.1f} min",
        "- command:",
        "",
        "  ```sh",
        f"  {args.cmdline}",
        "  ```",
        "",
        f"- runs per command: {args.runs} measured after {args.warmup} warmup round(s) "
        f"({args.startup_runs} for the startup rows); medians are of the measured runs",
        f"- load average (1, 5, 15 min) before: {args.load_before}; after: {args.load_after}",
    ]
    md += args.machine
    if args.note:
        md += ["", para(f"**Note:** {args.note}", 92)]
    md += [
        "",
        "## Overhead",
        "",
        "`wall ×` and `CPU ×` are the medians divided by the no-agent median of the same",
        "workload (CPU = user + system time of all the run's processes, from hyperfine). Peak",
        "RSS is the median of `/usr/bin/time -v`'s `Maximum resident set size`. Every run uses",
        "`-Xmx2g`. `checksum` compares what the program printed with the no-agent run.",
        "`status` says when a mode's collector has not been built yet: the row then measures",
        "an agent that loads but does not collect.",
        "",
        para(
            "Runs alternate: each round is one `hyperfine --runs 1` call that times every "
            "command of the workload once, in an order rotated by one each round. A mode that "
            f"takes more than {args.slow_factor:g}× the no-agent time is run {args.slow_runs} "
            f"time(s) only; a run is stopped after {args.timeout} s, and a row whose runs were "
            "all stopped shows `>` lower bounds.", 92),
        "",
    ]
    md += main_table(results)
    md += ["", "## Across workloads", "",
           para("Each mode over the profiling workloads it ran (the startup and heap dump rows "
                "left out): the geometric mean of its `wall ×` and `CPU ×`, and its worst "
                "`wall ×`. Rows whose runs were all stopped at the time limit are left out.", 92),
           ""]
    md += across_workloads_table(results)
    if any(r.mode.endswith(BASELINE_SUFFIX) for res in results for r in res.runs):
        md += ["", "## Against the baseline", "",
               para("This build's medians divided by the baseline library's, mode by mode, "
                    "from the same rounds (each round runs both, in rotated order). Below 1 "
                    "means this build is faster. Differences within the spread of the runs "
                    "(`spread`: this build's slowest over its fastest measured run) are noise.",
                    92), ""]
        md += baseline_table(results)
    for res in results:
        if res.workload.heapdump:
            md += ["", "## Heap dump of a program holding about 200 MB live", "",
                   para(
                       "`HeapHolder` (bench/heapdump) builds about 200 MB of live objects from a "
                       "fixed seed. With the agent it exits and the dump is written at VM exit "
                       "(`doe=y`); `dump time` is the wall median minus the no-agent wall median. "
                       "The jcmd row starts HeapHolder, waits for it to be ready and times "
                       "`jcmd <pid> GC.heap_dump` (which includes starting jcmd's own JVM, about "
                       "0.2 s); its wall time covers both JVMs.", 92), ""]
            md += heapdump_table(res)
    md += ["", "## Checksums", "",
           "Every run's printed checksum (warmups included) against the no-agent run's.", ""]
    md += checksum_table(results)
    md += ["", "## Workloads", ""]
    md += WORKLOAD_NOTES
    md += ["", f"Raw data of this run: `{run_dir.relative_to(REPO)}/` (results.json, every "
           "run's stdout/stderr and `/usr/bin/time -v` output; not committed).", ""]
    return "\n".join(md)


WORKLOAD_NOTES = [
    "| workload | program (Debian package) | what it does | checksum over |",
    "|---|---|---|---|",
    "| javac | javac of OpenJDK 17 (`openjdk-17-jdk-headless`), sources from `openjdk-17-source` "
    "| `bench/workloads/JavacBench.java` runs javac (ToolProvider) on the 406 sources of "
    "`jdk.compiler` (`--patch-module jdk.compiler=…`, `-implicit:none`), output into a fresh "
    "directory | SHA-256 of all 1,652 class files, sorted by path |",
    "| rhino | Mozilla Rhino (`rhino`) running esprima (`node-esprima`) and marked "
    "(`libjs-marked`) | `bench/workloads/rhino-bench.js`: esprima parses jQuery 3.6 "
    "(`libjs-jquery`) 3 times with tokens and locations and 2 seeded generated programs; "
    "marked renders a seeded generated Markdown document | FNV-1a over AST node counts, "
    "identifiers, literals and the HTML |",
    "| h2 | H2 database engine (`libh2-java`) | `bench/workloads/H2Load.java`: in-memory "
    "database, 4 JDBC threads × 16,000 transactions (inserts, updates, index lookups, joins, "
    "deletes) each over its own accounts, seeded, plus additions to 4 shared counter rows "
    "(row-lock waits) | every query result, then the final tables |",
    "| log4j | Apache Log4j 1.2 (`liblog4j1.2-java`) | `bench/workloads/Log4jLoad.java`: 4 "
    "threads × 600,000 lines through one logger into one file (FileAppender, immediate flush, "
    "Log4j's defaults); Log4j 1.2 delivers each event inside `synchronized (logger)`, so the "
    "threads contend on that monitor thousands of times per second | line count and the sum of "
    "the lines' hashes, read back from the file |",
    "| fop | Apache FOP 2.8 (`fop`) | `bench/workloads/FopLoad.java`: a seeded XSL-FO document "
    "of 60 sections (headings, justified paragraphs, a 12-row table, a list each) laid out and "
    "rendered to PDF in memory, 3 times | the page count |",
    "| saxon | Saxon-HE 9.9 (`libsaxonhe-java`) | `bench/workloads/SaxonLoad.java`: an XSLT 2.0 "
    "stylesheet compiled and run 3 times over 30,000 seeded orders (grouping, sorting, sums, "
    "string functions, number formatting) into an HTML report | CRC-32 of the reports |",
    "| clojure | Clojure 1.11 (`clojure`) | `bench/workloads/clojure-bench.clj`: 300 generated "
    "functions compiled with `eval`, then 6 rounds of persistent maps, vectors, sets, "
    "transducers and regular expressions over 150,000 seeded words | a sum of the rounds' "
    "figures and hashes |",
    "| lucene | Apache Lucene 4.10 (`liblucene4.10-java`) | `bench/workloads/LuceneLoad.java`: "
    "40,000 seeded documents indexed into a RAMDirectory by one thread and merged into one "
    "segment, then 2,000 term, boolean, phrase and range queries | total hits and top "
    "documents |",
    "| startup | the JVM | `java -version`; `bench/workloads/Hello.java` | the printed line |",
    "| heapdump | the JVM's heap | `bench/heapdump/HeapHolder.java` | counts and hashes of "
    "what it built |",
]


def para(text: str, width: int) -> str:
    return textwrap.fill(text, width, break_on_hyphens=False, break_long_words=False)


def load_average() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=5, help="measured runs per command (default 5)")
    p.add_argument("--warmup", type=int, default=1, help="warmup rounds, not counted (default 1)")
    p.add_argument("--startup-runs", type=int, default=None,
                   help="measured runs for the startup rows (default 2 × --runs)")
    p.add_argument("--quick", action="store_true",
                   help="smoke run: 2 runs, no warmup, 3 startup runs, 150 s limit; "
                   "report to .cache/bench/report-quick.md")
    p.add_argument("--workloads",
                   default="javac,rhino,h2,fop,saxon,clojure,lucene,version,hello,heapdump",
                   help="comma-separated subset of: javac,rhino,h2,log4j,fop,saxon,clojure,"
                        "idle2000,idle200,"
                   "lucene,version,hello,heapdump")
    p.add_argument("--modes", default=None,
                   help="comma-separated modes (no agent is always run): "
                   + ",".join(k for k in MODES if k != "none"))
    p.add_argument("--timeout", type=int, default=None,
                   help="seconds allowed for one run (default 600, 150 with --quick)")
    p.add_argument("--slow-factor", type=float, default=8.0,
                   help="a mode slower than this × no agent is run only --slow-runs times")
    p.add_argument("--slow-runs", type=int, default=1,
                   help="runs of a slow mode, warmups included (default 1)")
    p.add_argument("--out", default=None, help="report file (default BENCHMARKS.md, "
                   "or .cache/bench/report-quick.md with --quick)")
    p.add_argument("--note", default=None, help="a sentence added to the report")
    p.add_argument("--report-from", metavar="RUN_DIR", default=None,
                   help="run nothing: write the report again from a run's directory "
                   "(.cache/bench/runs/<date>), e.g. to another --out or with a --note")
    p.add_argument("--lib", help="the agent library")
    p.add_argument("--baseline", metavar="LIB", default=None,
                   help="another agent library (an earlier build) to compare with: every agent "
                   "mode also runs with it, in the same rounds, and the report adds a table of "
                   "this build against it")
    p.add_argument("--java-home")
    p.add_argument("--cmdline", default="bash bench/run.sh")
    args = p.parse_args(argv)
    if args.report_from is None and (args.lib is None or args.java_home is None):
        p.error("--lib and --java-home are needed (bench/run.sh gives them)")
    if args.quick:
        args.runs, args.warmup = 2, 0
        args.startup_runs = args.startup_runs or 3
        args.timeout = args.timeout or 150
    args.timeout = args.timeout or 600
    args.startup_runs = args.startup_runs or 2 * args.runs
    if args.out is None:
        args.out = str(CACHE / "report-quick.md") if args.quick else str(REPO / "BENCHMARKS.md")
    if args.lib:
        args.lib = Path(args.lib).resolve()
    if args.baseline:
        args.baseline = Path(args.baseline).resolve()
    if args.java_home:
        args.java_home = Path(args.java_home)
    return args


def now() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)


def save(run_dir: Path, meta: dict, results: List[Result]) -> None:
    (run_dir / "meta.json").write_text(json.dumps(meta, indent=1))
    (run_dir / "results.json").write_text(json.dumps(
        [{"workload": r.workload.key, "rounds": r.rounds, "slow": sorted(r.slow),
          "slow_factor": r.slow_factor, "runs": [vars(x) for x in r.runs]} for r in results],
        indent=1))


def load(run_dir: Path):
    meta = json.loads((run_dir / "meta.json").read_text())
    all_wl = {w.key: w for w in workloads(run_dir / "work")}
    results = []
    for item in json.loads((run_dir / "results.json").read_text()):
        res = Result(all_wl[item["workload"]], slow=set(item["slow"]),
                     slow_factor=item["slow_factor"], rounds=item["rounds"])
        res.runs = [Run(**r) for r in item["runs"]]
        results.append(res)
    return meta, results


# In a report file, what follows this line is not the run's: measurements of their own
# (single-purpose runs with their commands), kept as they are when the report is written again.
KEPT_MARKER = "<!-- Sections below are kept when bench/run.sh rewrites this file. -->"


def kept_sections(out: Path) -> str:
    """The part of an existing report from KEPT_MARKER on, or nothing."""
    try:
        text = out.read_text()
    except OSError:
        return ""
    at = text.find(KEPT_MARKER)
    return "" if at < 0 else "\n" + text[at:]


def write_out(results: List[Result], meta: dict, run_dir: Path, out: str) -> None:
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    kept = kept_sections(Path(out))
    Path(out).write_text(write_report(results, meta, run_dir) + kept)
    print()
    print("\n".join(main_table(results)))
    print(f"\nbench: report written to {out}; raw data in {run_dir}")


def main(argv) -> int:
    args = parse_args(argv)
    if args.report_from:
        run_dir = Path(args.report_from).resolve()
        meta, results = load(run_dir)
        if args.note is not None:
            meta["note"] = args.note
        write_out(results, meta, run_dir, args.out)
        return 0

    started = now()
    run_dir = CACHE / "runs" / started.strftime("%Y%m%d-%H%M%S")
    raw, work = run_dir / "raw", run_dir / "work"

    chosen = [w.strip() for w in args.workloads.split(",") if w.strip()]
    all_wl = {w.key: w for w in workloads(work)}
    unknown = [w for w in chosen if w not in all_wl]
    if unknown:
        print(f"bench: unknown workload(s): {', '.join(unknown)}", file=sys.stderr)
        return 2
    modes_wanted = None
    if args.modes:
        modes_wanted = {m.strip() for m in args.modes.split(",") if m.strip()} | {"none"}
        unknown = sorted(modes_wanted - set(MODES))
        if unknown:
            print(f"bench: unknown mode(s): {', '.join(unknown)}", file=sys.stderr)
            return 2

    raw.mkdir(parents=True, exist_ok=True)
    work.mkdir(parents=True, exist_ok=True)
    # Run a private copy, so a rebuild during the benchmark cannot mix two agent versions.
    shown_lib = args.lib
    args.lib = run_dir / "libhprof_rs.so"
    shutil.copy2(shown_lib, args.lib)
    shown_baseline = args.baseline
    if args.baseline:
        args.baseline = run_dir / "libhprof_rs.baseline.so"
        shutil.copy2(shown_baseline, args.baseline)
    meta = {k: getattr(args, k) for k in ("quick", "runs", "warmup", "startup_runs", "timeout",
                                           "slow_factor", "slow_runs", "cmdline")}
    meta.update(note=args.note or "", started=started.isoformat(), finished=None,
                load_before=load_average(), load_after=None,
                machine=machine_facts(args.java_home, args.lib, shown_lib))
    if args.baseline:
        digest = hashlib.sha256(args.baseline.read_bytes()).hexdigest()[:16]
        meta["machine"].append(f"- baseline agent: `{shown_baseline}` (sha256 {digest}…): "
                               "every agent mode also ran with it, in the same rounds")
    results = []
    for key in chosen:
        wl = all_wl[key]
        mode_keys = [m for m in offered_modes(wl) if modes_wanted is None or m in modes_wanted]
        if args.baseline:
            mode_keys = with_baselines(mode_keys)
        if mode_keys == ["none"] and modes_wanted is not None:
            continue
        print(f"bench: {wl.title}: {', '.join(mode_keys)}", flush=True)
        results.append(run_workload(wl, mode_keys, args, raw, work))
        save(run_dir, meta, results)
    meta.update(finished=now().isoformat(), load_after=load_average())
    save(run_dir, meta, results)
    shutil.rmtree(work, ignore_errors=True)
    args.lib.unlink()
    if args.baseline:
        args.baseline.unlink()

    write_out(results, meta, run_dir, args.out)
    bad = [r for res in results for r in res.runs if r.error]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
