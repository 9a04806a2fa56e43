#!/usr/bin/env python3
"""Runs criterion bench binaries interleaved, round after round, and prints each bench's median
of the per-run medians, so that builds of two commits are compared within one sitting on a
noisy machine (BENCHMARKS.md, "CPU pose evaluation").

usage: scripts/bench-interleaved.py ROUNDS FILTER BINARY...
Each round runs every BINARY once with `--bench FILTER` (1 s warm-up, 2 s measurement, 20
samples); the environment (RAYON_NUM_THREADS) passes through. Prints a table: bench, one median
per binary, then every run's median.
"""
import collections
import re
import statistics
import subprocess
import sys

UNIT_MS = {"ps": 1e-9, "ns": 1e-6, "µs": 1e-3, "us": 1e-3, "ms": 1.0, "s": 1e3}


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    rounds, bench_filter, binaries = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
    runs = collections.defaultdict(list)
    for _ in range(rounds):
        for binary in binaries:
            args = [binary, "--bench", bench_filter, "--warm-up-time", "1", "--measurement-time", "2",
                    "--noplot", "--sample-size", "20"]
            out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
            # criterion prints `name  time: [low median high]`, the name alone on its line when long.
            for m in re.finditer(r"(\S+/\S+)\s+time:\s+\[\S+ \S+ (\S+) (\S+)", out):
                runs[(m.group(1), binary)].append(float(m.group(2)) * UNIT_MS[m.group(3)])
    print("bench | " + " | ".join(binaries) + " | every run (ms)")
    for name in sorted({name for name, _ in runs}):
        medians = [statistics.median(runs[(name, b)]) if runs[(name, b)] else float("nan") for b in binaries]
        every = "  ".join(",".join(f"{x:.2f}" for x in runs[(name, b)]) for b in binaries)
        print(f"{name} | " + " | ".join(f"{m:.2f} ms" for m in medians) + f" | {every}")


if __name__ == "__main__":
    main()
