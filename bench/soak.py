#!/usr/bin/env python3
"""Class-churn soak: the agent's memory over time against no agent.

Runs java-fixtures/ClassChurn in `soak` mode (every second 50 fresh class
loaders define the same class and 20 short threads run it) under no agent and
under each mode asked, all at once, and reads each JVM's resident set size
(VmRSS in /proc/<pid>/status) every `--every` seconds. Prints a Markdown
table: one row per reading, one column per mode, in MB; the last line is the
growth from the first reading after the warm-up to the end.

    python3 bench/soak.py                       # 600 s, none/heap=sites/cpu=samples/cpu=times
    python3 bench/soak.py --seconds 120 --every 10 --modes heap=sites
    python3 bench/soak.py --agent /path/to/libhprof_rs.so --java /path/to/bin/java

Needs javac (Debian's openjdk-17-jdk-headless) to compile the two fixture
classes into a temporary directory, and an agent built by
scripts/build-agent.sh.
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEBIAN_JDK = Path("/usr/lib/jvm/java-17-openjdk-amd64")


def rss_mb(pid):
    """The process's resident set size in MB, None once it ended."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def compile_fixtures(out):
    javac = DEBIAN_JDK / "bin" / "javac"
    sources = [ROOT / "java-fixtures" / n for n in ("ClassChurn.java", "ChurnPlugin.java")]
    subprocess.run([str(javac), "--release", "11", "-g", "-d", str(out), *map(str, sources)],
                   check=True)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=int, default=600, help="length of the soak (600)")
    parser.add_argument("--every", type=int, default=30, help="seconds between readings (30)")
    parser.add_argument("--warmup", type=int, default=120,
                        help="growth is measured from the first reading at or after this (120)")
    parser.add_argument("--modes", default="heap=sites,cpu=samples,cpu=times",
                        help="comma-separated agent options, each run beside no agent")
    parser.add_argument("--agent", default=str(ROOT / "target" / "release" / "libhprof_rs.so"))
    parser.add_argument("--java", default=str(DEBIAN_JDK / "bin" / "java"))
    parser.add_argument("--xmx", default="512m")
    args = parser.parse_args(argv)

    work = Path(tempfile.mkdtemp(prefix="hprof-rs-soak-"))
    classes = work / "classes"
    compile_fixtures(classes)
    modes = ["none"] + [m for m in args.modes.split(",") if m]
    jvms = {}
    for mode in modes:
        command = [args.java, f"-Xmx{args.xmx}"]
        if mode != "none":
            out = work / (mode.replace("=", "-").replace(",", "_") + ".txt")
            command.append(f"-agentpath:{args.agent}={mode},file={out}")
        command += ["-cp", str(classes), "ClassChurn", "soak", str(args.seconds)]
        jvms[mode] = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                      text=True)

    readings = []
    start = time.monotonic()
    while any(p.poll() is None for p in jvms.values()):
        elapsed = time.monotonic() - start
        readings.append((round(elapsed), {m: rss_mb(p.pid) for m, p in jvms.items()}))
        time.sleep(max(0.0, start + len(readings) * args.every - time.monotonic()))
    results = {m: p.communicate()[0] for m, p in jvms.items()}

    print(f"Class-churn soak: `ClassChurn soak {args.seconds}`, -Xmx{args.xmx}, "
          f"{os.path.basename(args.java)} from {Path(args.java).parent.parent}; RSS in MB\n")
    print("| s | " + " | ".join(modes) + " |")
    print("|---:|" + "---:|" * len(modes))
    for elapsed, rss in readings:
        cells = ["–" if rss[m] is None else f"{rss[m]:.0f}" for m in modes]
        print(f"| {elapsed} | " + " | ".join(cells) + " |")
    after_warmup = next((r for e, r in readings if e >= args.warmup), readings[0][1])
    last = {m: next((r[m] for _, r in reversed(readings) if r[m] is not None), None) for m in modes}
    growth = []
    for m in modes:
        if after_warmup[m] is None or last[m] is None:
            growth.append("–")
        else:
            growth.append(f"{last[m] - after_warmup[m]:+.0f}")
    print(f"| growth after {args.warmup} s | " + " | ".join(growth) + " |")
    bad = [m for m, p in jvms.items() if p.returncode != 0 or "DONE" not in results[m]]
    if bad:
        print(f"\nfailed: {', '.join(bad)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
