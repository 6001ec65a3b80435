#!/usr/bin/env python3
"""Class churn: peak memory and time of ClassChurn under each mode.

Runs java-fixtures/ClassChurn `reload N` (the same class in N fresh loaders)
and `distinct N` (N classes of fresh names, as generated proxies and scripts
are) under no agent and each mode asked, one JVM after the other, and reads
each run's peak resident set size and wall time with /usr/bin/time -v.
Prints a Markdown table: one row per (kind, mode), peak RSS in MB and seconds.

    python3 bench/churn.py                                  # 100000 of each kind
    python3 bench/churn.py --copies 200000 --kinds distinct --modes heap=sites
    python3 bench/churn.py --agent /path/to/libhprof_rs.so --java /path/to/bin/java

Needs javac (Debian's openjdk-17-jdk-headless) and an agent built by
scripts/build-agent.sh. The profile files go to a temporary directory.
"""

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEBIAN_JDK = Path("/usr/lib/jvm/java-17-openjdk-amd64")


def compile_fixtures(out):
    javac = DEBIAN_JDK / "bin" / "javac"
    sources = [ROOT / "java-fixtures" / n for n in ("ClassChurn.java", "ChurnPlugin.java")]
    subprocess.run([str(javac), "--release", "11", "-g", "-d", str(out), *map(str, sources)],
                   check=True)


def measure(command):
    """(peak RSS in MB, wall seconds) of `command`, which must succeed."""
    timed = ["/usr/bin/time", "-v", *command]
    done = subprocess.run(timed, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        raise SystemExit(f"failed ({done.returncode}): {' '.join(command)}\n{done.stderr[-2000:]}")
    peak = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr).group(1))
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", done.stderr).group(1)
    seconds = 0.0
    for part in wall.split(":"):
        seconds = seconds * 60 + float(part)
    return peak / 1024, seconds


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--copies", type=int, default=100_000)
    parser.add_argument("--kinds", default="reload,distinct")
    parser.add_argument("--modes", default="heap=sites,cpu=times,cpu=samples",
                        help="comma-separated agent options, each run after no agent")
    parser.add_argument("--agent", default=str(ROOT / "target" / "release" / "libhprof_rs.so"))
    parser.add_argument("--java", default=str(DEBIAN_JDK / "bin" / "java"))
    parser.add_argument("--xmx", default="64m")
    args = parser.parse_args(argv)

    work = Path(tempfile.mkdtemp(prefix="hprof-rs-churn-"))
    classes = work / "classes"
    compile_fixtures(classes)
    modes = ["none"] + [m for m in args.modes.split(",") if m]
    print(f"`ClassChurn <kind> {args.copies}`, -Xmx{args.xmx}, "
          f"{Path(args.java).parent.parent}\n")
    print("| kind | mode | peak RSS (MB) | wall (s) |")
    print("|---|---|---:|---:|")
    for kind in args.kinds.split(","):
        for mode in modes:
            command = [args.java, f"-Xmx{args.xmx}"]
            if mode != "none":
                out = work / f"{kind}-{mode.replace('=', '-')}.out"
                command.append(f"-agentpath:{args.agent}={mode},file={out}")
            command += ["-cp", str(classes), "ClassChurn", kind, str(args.copies)]
            rss, wall = measure(command)
            print(f"| {kind} | {mode} | {rss:.0f} | {wall:.1f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
