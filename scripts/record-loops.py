#!/usr/bin/env python3
"""Re-records the work model's driver measurements (the `*_RADV_NAVI21` constants of
src/gpu/work_model.rs: each kernel's static instruction count and loop bodies, and the path
measurements' counts) from a `gpu_stats` table, after a change to the kernels has moved them
(`tests/gpu_stats.rs` says which moved).

usage:
    RADV_FORCE_FAMILY=navi21 cargo run --release --example gpu_stats -- --joints 64 > stats.txt
    scripts/record-loops.py stats.txt
    cargo fmt

A kernel whose loop count changed is refused (its regions must be mapped anew in
`KernelCosts`); the procedural stage's list is left to hand. Run from the repository root.
"""
import re
import sys

PATH = "src/gpu/work_model.rs"

# Constant, then the gpu_stats row (the 64-joint rig, wave64) it records.
LOOP_LISTS = [
    ("FRAME_LAYERS_LOOPS_RADV_NAVI21", "frame_layers_main/64j"),
    ("FRAME_LAYERS_STEADY_LOOPS_RADV_NAVI21", "frame_layers_main/64j steady"),
    ("FRAME_LAYERS_STEADY_PASS_LOOPS_RADV_NAVI21", "frame_layers_main/64j steady-pass"),
    ("FRAME_LAYERS_SETTLED_LOOPS_RADV_NAVI21", "frame_layers_main/64j settled"),
    ("FRAME_LOOPS_RADV_NAVI21", "frame_main/64j"),
    ("FRAME_LAYERS_LEVELS_LOOPS_RADV_NAVI21", "frame_layers_levels_main/64j"),
    ("FRAME_LAYERS_LEVELS_STEADY_LOOPS_RADV_NAVI21", "frame_layers_levels_main/64j steady"),
    ("FRAME_LAYERS_LEVELS_SETTLED_LOOPS_RADV_NAVI21", "frame_layers_levels_main/64j settled"),
    ("FRAME_LEVELS_LOOPS_RADV_NAVI21", "frame_levels_main/64j"),
    ("FRAME_LAYERS_LEVELS_IDLE_LOOPS_RADV_NAVI21", "frame_layers_levels_main/64j settled-band_chains"),
    ("FRAME_LAYERS_SUBGROUP_LOOPS_RADV_NAVI21", "frame_layers_main/64j+subgroup"),
    ("FRAME_SUBGROUP_LOOPS_RADV_NAVI21", "frame_main/64j+subgroup"),
    ("FRAME_LAYERS_DOUBLING_LOOPS_RADV_NAVI21", "frame_layers_main/64j+doubling"),
    ("FRAME_DOUBLING_LOOPS_RADV_NAVI21", "frame_main/64j+doubling"),
    ("FRAME_LAYERS_DOUBLING_ROUNDLESS_LOOPS_RADV_NAVI21", "frame_layers_main/64j+doubling 0-rounds"),
    ("FRAME_DOUBLING_ROUNDLESS_LOOPS_RADV_NAVI21", "frame_main/64j+doubling 0-rounds"),
    ("FRAME_LEVELS_IDLE_LOOPS_RADV_NAVI21", "frame_levels_main/64j-band_chains"),
    ("FRAME_LAYERS_LAYERLESS_LOOPS_RADV_NAVI21", "frame_layers_main/64j settled layerless"),
    ("FRAME_LAYERS_SUBGROUP_LAYERLESS_LOOPS_RADV_NAVI21", "frame_layers_main/64j+subgroup settled layerless"),
]
# Constant, its array's length expression, and the rows of its entries in order
# (`MeasuredPath::ALL`'s, `FRAME_LEVELS_PATHS`').
# Each path's specialisation and name (`MeasuredPath::specialisation`, `MeasuredPath::name`).
LAYERED_PATHS = [" settled-" + p for p in ["root_motion", "snapshot_mix", "additive", "override_local", "single_sample",
                                          "table_miss", "mesh_override", "mesh_roots", "store_pose", "transition"]]
LAYERED_PATHS += [" steady-overshoot", " settled-affine_output", "-replay"]
PATH_COUNTS = [
    ("FRAME_LAYERS_WITHOUT_RADV_NAVI21", "MeasuredPath::ALL.len()",
     ["frame_layers_main/64j" + p for p in LAYERED_PATHS]),
    ("FRAME_LAYERS_LEVELS_WITHOUT_RADV_NAVI21", "MeasuredPath::ALL.len()",
     ["frame_layers_levels_main/64j" + p for p in LAYERED_PATHS]),
    ("FRAME_LEVELS_WITHOUT_RADV_NAVI21", "FRAME_LEVELS_PATHS.len()",
     ["frame_levels_main/64j-" + p for p in ["single_sample", "table_miss", "affine_output"]]),
    ("FRAME_WITHOUT_RADV_NAVI21", "FRAME_PATHS.len()", ["frame_main/64j-affine_output"]),
    ("FRAME_LAYERS_LOCAL_OVERRIDE_RADV_NAVI21", "2",
     ["frame_layers_main/64j settled local-override", "frame_layers_main/64j settled-override_local local-override"]),
]
# Constant, then the row of a kernel without loops whose static count it records.
COUNTS = [
    ("SAMPLE_POSITIONS_RADV_NAVI21", "sample_positions_main"),
    ("FRAME_LAYERS_DOUBLING_LAYERLESS_RADV_NAVI21", "frame_layers_main/64j+doubling settled layerless"),
    ("FRAME_LAYERS_DOUBLING_LAYERLESS_ROUNDLESS_RADV_NAVI21", "frame_layers_main/64j+doubling settled layerless 0-rounds"),
]


def rows_of(table):
    """Each wave64 row's name (the subgroup kernels' at 32 lanes, as gpu_stats compiles them):
    (static instructions, [(loop body, nesting depth)])."""
    rows = {}
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 11 or not cells[8].isdigit():
            continue
        if cells[1] != ("32" if "subgroup" in cells[0].split("/")[-1] else "64"):
            continue
        loops = [(int(x.rstrip("'")), len(x) - len(x.rstrip("'"))) for x in cells[10].split()]
        rows[cells[0]] = (int(cells[8]), loops)
    return rows


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    rows = rows_of(open(sys.argv[1]).read())
    src = open(PATH).read()
    for const, row in LOOP_LISTS:
        if row not in rows:
            sys.exit(f"{row}: not in the table (run gpu_stats with --joints 64)")
        total, loops = rows[row]
        pattern = re.compile(r"(pub const %s: \(u32, \[\(usize, usize\); )(\d+)(\]\) =\s*)\((.*?)\);\n" % const, re.S)
        m = pattern.search(src)
        if not m:
            sys.exit(f"{const}: not found in {PATH}")
        if int(m.group(2)) != len(loops):
            sys.exit(f"{const}: {len(loops)} loops where {m.group(2)} were recorded; map its regions anew")
        if [d for _, d in loops] != [int(d) for d in re.findall(r"\(\d+, (\d+)\)", m.group(4))]:
            sys.exit(f"{const}: the loops' nesting moved; map its regions anew")
        body = "(%d, [%s])" % (total, ", ".join("(%d, %d)" % l for l in loops))
        src = src[: m.start()] + m.group(1) + m.group(2) + m.group(3) + body + ";\n" + src[m.end():]
    for const, length, names in PATH_COUNTS:
        missing = [n for n in names if n not in rows]
        if missing:
            sys.exit(f"{', '.join(missing)}: not in the table")
        pattern = re.compile(r"(pub const %s: \[u32; %s\] =\s*)\[[^\]]*\];" % (const, re.escape(length)))
        if not pattern.search(src):
            sys.exit(f"{const}: not found in {PATH}")
        values = ", ".join(str(rows[n][0]) for n in names)
        src = pattern.sub(lambda m: m.group(1) + "[" + values + "];", src)
    for const, row in COUNTS:
        if row not in rows:
            sys.exit(f"{row}: not in the table")
        total, loops = rows[row]
        if loops:
            sys.exit(f"{const}: {row} has loops now; model them")
        pattern = re.compile(r"(pub const %s: u32 = )\d+;" % const)
        if not pattern.search(src):
            sys.exit(f"{const}: not found in {PATH}")
        src = pattern.sub(lambda m: m.group(1) + str(total) + ";", src)
    open(PATH, "w").write(src)
    print(f"recorded {len(LOOP_LISTS)} loop lists, {len(PATH_COUNTS)} path measurements and {len(COUNTS)} counts; "
          "now `cargo fmt`")


if __name__ == "__main__":
    main()
