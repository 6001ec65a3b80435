#!/usr/bin/env python3
"""The cost of `hprof-rs attach` on the H2 and javac workloads (bench/workloads/).

Each round runs every mode once, in turn, on each workload, with Debian's OpenJDK 17:
  none               the workload alone
  cpu=samples        attached 1 s after the start, profiling to the end
  heap=sites         attached 1 s after the start (allocation sampling), to the end
  bytecode (a)       heap=sites counted in the byte code of the classes retransformed at the
                     attach (X=0x100000, a measuring bit: the design not chosen)
  stopped            cpu=samples,heap=sites attached at 1 s and stopped at 2 s: the rest of
                     the run is after the stop
  cpu=times          attached 1 s after the start (the loaded classes retransformed with
                     the timing hooks), to the end
  stopped cpu=times  cpu=times attached at 1 s and stopped at 2 s (the classes retransformed
                     back): the rest of the run is after the stop
The figure is the workload's wall time from its start to its exit (the attach and stop
commands run beside it); the attach command's own time is given for the attached modes.
Prints a Markdown table of medians (and min-max) for BENCHMARKS.md.

Usage: python3 bench/attach.py [--runs N] [--workloads h2,javac] [--modes ...]
Run bash bench/install.sh once before (the workloads' packages and classes); bench/attach.sh
builds and prepares, then runs this.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / ".cache" / "bench"
TARGET = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
JAVA = Path(os.environ.get("BENCH_JAVA_HOME", "/usr/lib/jvm/java-17-openjdk-amd64")) / "bin/java"
H2_JAR = "/usr/share/java/h2.jar"

MODES = {
    "none": None,
    "cpu=samples": ("cpu=samples", None),
    "heap=sites": ("heap=sites", None),
    "bytecode (a)": ("heap=sites,X=0x100000", None),
    "stopped": ("cpu=samples,heap=sites", 1.0),
    "cpu=times": ("cpu=times", None),
    "stopped cpu=times": ("cpu=times", 1.0),
}


def workloads(work: Path):
    classes = str(CACHE / "classes")
    return {
        "h2": ["-cp", f"{classes}:{H2_JAR}", "H2Load", "4", "8000"],
        "javac": ["-cp", classes, "JavacBench", str(CACHE / "jdk.compiler"), str(work / "out")],
    }


def hprof_rs(*args):
    started = time.monotonic()
    out = subprocess.run([str(TARGET / "release/hprof-rs"), "attach", *args],
                         capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"bench/attach.py: hprof-rs attach {' '.join(args)} failed: {out.stderr}")
    return time.monotonic() - started


def one_run(argv, mode, work: Path):
    """Wall time of the workload, and the attach command's time (None without agent)."""
    started = time.monotonic()
    java = subprocess.Popen([str(JAVA), "-Xmx2g", *argv], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    attach_time = None
    if MODES[mode] is not None:
        options, stop_after = MODES[mode]
        time.sleep(1.0)
        attach_time = hprof_rs(str(java.pid), f"{options},file={work / 'profile.txt'}")
        if stop_after is not None:
            time.sleep(stop_after)
            hprof_rs(str(java.pid), "stop")
    output, _ = java.communicate()
    elapsed = time.monotonic() - started
    if java.returncode != 0:
        sys.exit(f"bench/attach.py: {mode} run exited {java.returncode}")
    return elapsed, attach_time, output.strip().splitlines()[-1]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--workloads", default="h2,javac")
    p.add_argument("--modes", default=",".join(MODES))
    args = p.parse_args()
    modes = args.modes.split(",")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        table = workloads(work)
        rows = []
        for name in args.workloads.split(","):
            times = {m: [] for m in modes}
            attach_times = {m: [] for m in modes}
            checksums = set()
            for _ in range(args.runs):
                for mode in modes:
                    elapsed, attach_time, last = one_run(table[name], mode, work)
                    times[mode].append(elapsed)
                    if attach_time is not None:
                        attach_times[mode].append(attach_time)
                    checksums.add(last)
            base = statistics.median(times["none"]) if "none" in times else None
            for mode in modes:
                median = statistics.median(times[mode])
                ratio = f"{median / base:.2f}" if base else "n/a"
                attach = (f"{statistics.median(attach_times[mode]):.2f}"
                          if attach_times[mode] else "")
                rows.append(f"| {name} | {mode} | {args.runs} | {median:.2f} "
                            f"({min(times[mode]):.2f}-{max(times[mode]):.2f}) | {ratio} "
                            f"| {attach} |")
            if len(checksums) != 1:
                sys.exit(f"bench/attach.py: {name} printed different results: {checksums}")
    print("| workload | mode | runs | wall s, median (min-max) | x none | attach command s |")
    print("| --- | --- | --- | --- | --- | --- |")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
