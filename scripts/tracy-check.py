#!/usr/bin/env python3
"""Checks Tracy captures of the viewer and of bench_gpu (docs/profiling.md, "Checking a capture").

scripts/tracy-capture.sh takes the captures and exports them; this reads the exports:

    tracy-check.py viewer DIR CHARACTERS FRAMES   DIR/viewer-{zones,gpu,threads}.csv, viewer.out
    tracy-check.py bench DIR FRAMES               DIR/bench-{zones,gpu}.csv, bench.out

`*-zones.csv` is `tracy-csvexport -u -p` (every CPU zone, then every plot point), `*-gpu.csv`
is `tracy-csvexport -g` (every GPU zone, on the CPU's timeline), `viewer-threads.csv` is
`tracy-threads` (scripts/tracy-threads.cpp: each thread's index, id and name). Times are ns
from the capture's start.

It prints what it measured, one finding a line, and exits 1 when one of these fails:
- viewer: every GPU zone of the evaluation (`throng.frame`) and of the draw (`viewer.draw`)
  ends no later than the CPU's wait for it ended, over the whole run (clock drift);
- viewer: every zone docs/profiling.md lists for a viewer frame is there, each CPU zone once a
  frame (the state step once per crowd, a chunk per 512 characters of each step);
- viewer: the plots have a point a frame; `throng.characters` is the four crowds' characters;
  `throng.characters_evaluated` averages what the viewer printed and stays under the crowd
  (LOD) and above zero; `throng.clips_sampled` is between one and ten samples per evaluated
  character;
- viewer: every state-step chunk ran on a thread named `throng-worker-N`, none on the thread
  that called the step;
- bench: every stage's GPU zone is there under its name, once per timed frame, none of
  negative length, and the GPU zones of one context in the order the GPU ran them.
"""

import csv
import math
import statistics
import sys
from collections import Counter, defaultdict
from pathlib import Path

FAILED = []


def check(ok, message):
    print(("ok    " if ok else "FAIL  ") + message)
    if not ok:
        FAILED.append(message)
    return ok


def note(message):
    print("      " + message)


def read_zones(path):
    """CPU zones by name, each (start, end, thread index, value), and plots by name, each
    (time, value), from `tracy-csvexport -u -p`."""
    zones = defaultdict(list)
    plots = defaultdict(list)
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            if row["src_file"] == "" and row["exec_time_ns"] == "":
                plots[row["name"]].append((int(row["ns_since_start"]), float(row["value"])))
            else:
                start = int(row["ns_since_start"])
                zones[row["name"]].append((start, start + int(row["exec_time_ns"]), int(row["thread"]), row["value"]))
    for v in zones.values():
        v.sort()
    for v in plots.values():
        v.sort()
    return zones, plots


def read_gpu(path):
    """GPU zones by name, each (start, end) on the CPU's timeline, from `tracy-csvexport -g`."""
    zones = defaultdict(list)
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            start = int(row["Time from start of program"])
            zones[row["name"]].append((start, start + int(row["GPU execution time"])))
    for v in zones.values():
        v.sort()
    return zones


def quantiles(values):
    values = sorted(values)
    pick = lambda q: values[min(len(values) - 1, int(q * (len(values) - 1) + 0.5))]
    return f"min {values[0]:.3g}, median {pick(0.5):.3g}, p90 {pick(0.9):.3g}, max {values[-1]:.3g}"


def ms(ns):
    return ns * 1e-6


def ordered_within(name, gpu, submitted, waited, waited_name):
    """Pairs the k-th GPU zone with the k-th submission and wait, and checks it ends before
    the wait ended; reports how early it starts against the submission and the slack before
    the wait's end, first and last tenth of the run (drift)."""
    n = len(gpu)
    if not check(
        n == len(waited) == len(submitted) and n > 0,
        f"{name}: {n} GPU zones, {len(submitted)} submissions, {len(waited)} {waited_name} zones",
    ):
        return
    late = [(g[1] - w[1], k) for k, (g, w) in enumerate(zip(gpu, waited)) if g[1] > w[1]]
    worst = max(late, default=(0, None))
    check(
        not late,
        f"{name}: ends before {waited_name} ends in {n - len(late)} of {n} frames"
        + (f" (worst: {ms(worst[0]):.3f} ms late, frame {worst[1] + 1})" if late else ""),
    )
    slack = [ms(w[1] - g[1]) for g, w in zip(gpu, waited)]
    lead = [ms(g[0] - s) for g, s in zip(gpu, submitted)]
    early = [-x for x in lead if x < 0]
    note(f"{name}: ms from the submission to the GPU zone's start: {quantiles(lead)}")
    note(
        f"{name}: starts before the submission in {len(early)} of {n} frames"
        + (f", by at most {max(early):.3f} ms (the alignment's uncertainty)" if early else "")
    )
    tenth = max(1, n // 10)
    note(
        f"{name}: ms from its end to {waited_name}'s end, median of the first tenth "
        f"{statistics.median(slack[:tenth]):.3f}, of the last {statistics.median(slack[-tenth:]):.3f}"
    )
    durations = [ms(g[1] - g[0]) for g in gpu]
    waits = [ms(w[1] - w[0]) for w in waited]
    note(f"{name}: GPU ms {quantiles(durations[1:] or durations)} (frame 1: {durations[0]:.3f})")
    note(f"{waited_name}: ms {quantiles(waits[1:] or waits)} (frame 1: {waits[0]:.3f})")


def viewer(folder, characters, frames):
    zones, plots = read_zones(folder / "viewer-zones.csv")
    gpu = read_gpu(folder / "viewer-gpu.csv")
    with open(folder / "viewer-threads.csv", newline="") as f:
        names = {int(r["index"]): r["name"] for r in csv.DictReader(f)}
    out = (folder / "viewer.out").read_text()
    crowds = 4
    chunks_per_step = math.ceil(characters / 512)

    # Zones.
    once = ["viewer.brain", "viewer.root_motion", "throng.gpu.upload", "throng.gpu.encode",
            "viewer.evaluate.wait", "viewer.draw", "viewer.draw.wait"]
    for name in once:
        check(len(zones[name]) == frames, f"zone {name}: {len(zones[name])} (one a frame: {frames})")
    check(
        len(zones["throng.state_step"]) == crowds * frames,
        f"zone throng.state_step: {len(zones['throng.state_step'])} (one per crowd a frame: {crowds * frames})",
    )
    check(
        len(zones["throng.state_step.chunk"]) == crowds * frames * chunks_per_step,
        f"zone throng.state_step.chunk: {len(zones['throng.state_step.chunk'])} "
        f"({chunks_per_step} per step: {crowds * frames * chunks_per_step})",
    )
    for name in ["throng.frame", "viewer.draw"]:
        check(len(gpu[name]) == frames, f"GPU zone {name}: {len(gpu[name])} (one a frame: {frames})")
    others = sorted(set(gpu) - {"throng.frame", "viewer.draw"})
    check(not others, f"no other GPU zones in the viewer ({', '.join(others) or 'none'})")

    # GPU zones against the CPU's submission and wait. The evaluation is submitted right after
    # throng.gpu.encode ends; the draw inside viewer.draw (the CPU zone).
    ordered_within(
        "throng.frame", gpu["throng.frame"], [z[1] for z in zones["throng.gpu.encode"]],
        zones["viewer.evaluate.wait"], "viewer.evaluate.wait",
    )
    ordered_within(
        "viewer.draw (GPU)", gpu["viewer.draw"], [z[0] for z in zones["viewer.draw"]],
        zones["viewer.draw.wait"], "viewer.draw.wait",
    )

    # Plots.
    for name in ["throng.characters", "throng.transitions_started", "throng.characters_evaluated",
                 "throng.clips_sampled", "throng.bytes_uploaded"]:
        check(len(plots[name]) == frames, f"plot {name}: {len(plots[name])} points (one a frame: {frames})")
    stepped = {v for _, v in plots["throng.characters"]}
    check(stepped == {crowds * characters}, f"plot throng.characters: {sorted(stepped)} (the four crowds: {crowds * characters})")
    evaluated = [v for _, v in plots["throng.characters_evaluated"]]
    clips = [v for _, v in plots["throng.clips_sampled"]]
    printed = next((line for line in out.splitlines() if "characters evaluated per frame" in line), "")
    said = float(printed.split(";")[-1].split()[0]) if printed else float("nan")
    mean = statistics.fmean(evaluated) if evaluated else float("nan")
    check(abs(mean - said) <= 0.5, f"plot throng.characters_evaluated: mean {mean:.1f}, the viewer printed {said:.0f}")
    check(
        all(0 < v <= characters for v in evaluated),
        f"plot throng.characters_evaluated: {quantiles(evaluated) if evaluated else '-'} of {characters} characters",
    )
    check(
        len(clips) == len(evaluated) and all(e <= c <= 10 * e for e, c in zip(evaluated, clips)),
        "plot throng.clips_sampled: between 1 and 10 samples per evaluated character every frame",
    )
    if clips:
        note(f"throng.clips_sampled: {quantiles(clips)}; per evaluated character {quantiles([c / e for c, e in zip(clips, evaluated)])}")
    hud = next((line for line in out.splitlines() if "clips sampled" in line), "")
    if hud:
        note("viewer's HUD line: " + hud.strip())
    uploaded = [v for _, v in plots["throng.bytes_uploaded"]]
    upload_values = [int(z[3].split()[0]) for z in zones["throng.gpu.upload"] if z[3]]
    check(
        sorted(uploaded) == sorted(upload_values),
        "plot throng.bytes_uploaded: the throng.gpu.upload zones' values, frame for frame",
    )

    # Threads: which ran the chunks, and how the chunks of one step spread.
    steps = zones["throng.state_step"]
    callers = Counter(names.get(z[2], f"#{z[2]}") for z in steps)
    chunk_threads = Counter(names.get(z[2], f"#{z[2]}") for z in zones["throng.state_step.chunk"])
    note(f"threads that called the state step: {dict(callers)}")
    note(f"threads that ran chunks: {dict(sorted(chunk_threads.items()))}")
    check(
        bool(chunk_threads) and all(n.startswith("throng-worker-") for n in chunk_threads),
        "every chunk ran on a thread named throng-worker-N",
    )
    check(not set(callers) & set(chunk_threads), "no chunk ran on a thread that called the state step")
    spread = Counter()
    second_starts = []
    ratio = []
    chunks = zones["throng.state_step.chunk"]
    i = 0
    for start, end, _, _ in steps:
        mine = []
        while i < len(chunks) and chunks[i][0] < start:
            i += 1
        j = i
        while j < len(chunks) and chunks[j][0] <= end:
            mine.append(chunks[j])
            j += 1
        threads = {c[2] for c in mine}
        spread[len(threads)] += 1
        if len(threads) > 1:
            first_other = min(c[0] for c in mine if c[2] != mine[0][2])
            second_starts.append(ms(first_other - start))
        busy = sum(c[1] - c[0] for c in mine)
        if busy:
            ratio.append((end - start) / busy)
    note(f"steps by how many workers ran their chunks: {dict(sorted(spread.items()))} of {len(steps)}")
    if second_starts:
        note(f"where a second worker took part, ms from the step's start to its first chunk: {quantiles(second_starts)}")
    if ratio:
        note(f"step length over the sum of its chunks: {quantiles(ratio)}")
    chunk_ms = [ms(c[1] - c[0]) for c in chunks]
    if chunk_ms:
        note(f"chunk ms: {quantiles(chunk_ms)}")


def bench(folder, frames):
    gpu = read_gpu(folder / "bench-gpu.csv")
    out = (folder / "bench.out").read_text()
    sizes = len({line.split()[0] for line in out.splitlines() if line.strip() and line.split()[0].isdigit()})
    note(f"GPU zones: {dict((k, len(v)) for k, v in sorted(gpu.items()))}; sizes timed: {sizes}")
    # Per size: the sampled frame, the layered frame, and with --stages each stage of both paths.
    for name in ["throng.frame"]:
        check(len(gpu[name]) >= 2 * frames * sizes and sizes > 0, f"GPU zone {name}: {len(gpu[name])}")
    for name in ["throng.sample", "throng.transition", "throng.layers", "throng.local_to_model", "throng.skinning"]:
        check(len(gpu[name]) >= frames * sizes and sizes > 0, f"GPU zone {name}: {len(gpu[name])} (at least {frames} a size)")
    for name, zs in sorted(gpu.items()):
        d = [ms(e - s) for s, e in zs]
        check(all(x >= 0 for x in d), f"GPU zone {name}: ms {quantiles(d)}")
    every = sorted((s, e, name) for name, zs in gpu.items() for s, e in zs)
    overlaps = sum(1 for a, b in zip(every, every[1:]) if b[0] < a[1])
    check(overlaps == 0, f"GPU zones follow each other: {overlaps} of {len(every)} overlap the one before")


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "viewer" and len(sys.argv) == 5:
        viewer(Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
    elif len(sys.argv) == 4 and sys.argv[1] == "bench":
        bench(Path(sys.argv[2]), int(sys.argv[3]))
    else:
        sys.exit(__doc__)
    if FAILED:
        print(f"{len(FAILED)} check(s) failed")
        sys.exit(1)


if __name__ == "__main__":
    main()
