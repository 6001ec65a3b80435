#!/usr/bin/env python3
"""Writes a synthetic ASCII profile (java.hprof.txt layout) with a CPU
SAMPLES and a SITES table over TRACES traces of DEPTH frames, for
benchmarking `hprof-rs convert` and `hprof-rs report` on a big file:
200,000 traces of depth 8 make about 100 MB. Stacks are random walks down
a call tree of 20,000 methods, from a fixed seed, so the flame graph has
shape and every run writes the same bytes.

    make-ascii.py OUT [TRACES=200000] [DEPTH=8]
"""

import random
import sys

CTIME = "Fri Nov 27 03:40:42 2026"


def main():
    out = sys.argv[1]
    traces = int(sys.argv[2]) if len(sys.argv) > 2 else 200_000
    depth = int(sys.argv[3]) if len(sys.argv) > 3 else 8
    rng = random.Random(28)
    methods = [f"com.example.p{c % 40}.Class{c}.method{m}" for c in range(2_000) for m in range(10)]
    # Each method calls a few fixed others: stacks share prefixes.
    callees = [rng.sample(range(len(methods)), 4) for _ in methods]
    roots = rng.sample(range(len(methods)), 20)
    with open(out, "w") as f:
        f.write(f"JAVA PROFILE 1.0.1, created {CTIME}\n\n")
        f.write("Synthetic profile written by bench/convert-report/make-ascii.py.\n\n")
        f.write("--------\n\n")
        stacks = []
        for t in range(traces):
            at = rng.choice(roots)
            frames = [at]
            for _ in range(depth - 1):
                at = rng.choice(callees[at])
                frames.append(at)
            stacks.append(frames)
            f.write(f"TRACE {300001 + t}:\n")
            for m in reversed(frames):
                name = methods[m]
                cls, meth = name.rsplit(".", 1)
                f.write(f"\t{cls}.{meth}({cls.rsplit('.', 1)[1]}.java:{10 + m % 500})\n")
        counts = sorted((rng.randint(1, 1000) for _ in range(traces)), reverse=True)
        total = sum(counts)
        f.write(f"CPU SAMPLES BEGIN (total = {total}) {CTIME}\n")
        f.write("rank   self  accum   count trace method\n")
        accum = 0.0
        for rank, count in enumerate(counts, 1):
            share = count * 100.0 / total
            accum += share
            top = methods[stacks[rank - 1][-1]]
            f.write(f"{rank:4d} {share:5.2f}% {accum:5.2f}% {count:7d} {300000 + rank:5d} {top}\n")
        f.write("CPU SAMPLES END\n")
        sites = sorted(((rng.randint(1, 5_000), rng.choice(["int[]", "byte[]", "java.lang.String", "com.example.Item"])) for _ in range(traces)), reverse=True)
        live_total = sum(objs * 24 for objs, _ in sites)
        f.write(f"SITES BEGIN (ordered by live bytes) {CTIME}\n")
        f.write("          percent          live          alloc'ed  stack class\n")
        f.write(" rank   self  accum     bytes objs     bytes  objs trace name\n")
        accum = 0.0
        for rank, (objs, cls) in enumerate(sites, 1):
            live = objs * 24
            share = live * 100.0 / live_total
            accum += share
            f.write(f"{rank:5d} {share:5.2f}% {accum:5.2f}% {live:9d} {objs:4d} {live * 3:9d} {objs * 3:5d} {300000 + rank:5d} {cls}\n")
        f.write("SITES END\n")


if __name__ == "__main__":
    main()
