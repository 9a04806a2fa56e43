#!/usr/bin/env python3
"""Instructions per call of the functions named, from a callgrind output file: each function's
call sites' `calls=` counts and inclusive instruction counts (Ir) summed over the file, so that a
stage function's cost per character comes out whatever the machine's load (BENCHMARKS.md,
"CPU pose evaluation": perf's hardware counters are unavailable in this VM).

usage: scripts/callgrind-per-call.py CALLGRIND_OUT SUBSTRING...
Prints, for every called function whose name contains one of the SUBSTRINGs: calls, inclusive
Ir, and Ir per call. Run the program under `valgrind --tool=callgrind` with collection on from
the start (the default), so that the stage functions' callers are collected.
"""
import re
import sys


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    names, calls, cost = {}, {}, {}
    callee, pending = None, None
    with open(sys.argv[1], errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            # `fn=(id) name` / `cfn=(id) name`, the name given only at an id's first use.
            m = re.match(r"(c?)fn=\((\d+)\)(?: (.*))?", line)
            if m:
                if m.group(3):
                    names[m.group(2)] = m.group(3)
                if m.group(1):
                    callee = m.group(2)
                continue
            m = re.match(r"calls=(\d+)", line)
            if m:
                pending = int(m.group(1))
                continue
            if pending is not None:
                # The line after `calls=` is the call's position and its inclusive cost.
                fields = line.split()
                calls[callee] = calls.get(callee, 0) + pending
                cost[callee] = cost.get(callee, 0) + (int(fields[1]) if len(fields) > 1 else 0)
                pending = None
    for fn in sorted(calls, key=lambda f: -cost[f]):
        name = names.get(fn, fn)
        if any(s in name for s in sys.argv[2:]) and calls[fn]:
            print(f"{name}: {calls[fn]} calls, {cost[fn]} Ir, {cost[fn] / calls[fn]:.0f} Ir per call")


if __name__ == "__main__":
    main()
