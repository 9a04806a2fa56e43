#!/usr/bin/env bash
# The prepared device call (issue 17, BENCHMARKS.md "Device run"): on a machine with a GPU, in
# under 8 minutes, writing results as it goes into OUT_DIR (default gpu-bench-out/):
#
#   1. gpu-bench.tsv   the adapter; every kernel variant (FrameKernel) checked against variant 0
#                      at 10k characters (on the layered frame also the default variant with
#                      its displayed poses stored, Specialisation::Stored, and with every
#                      character in one kernel rather than the steady and switching passes,
#                      Specialisation::Whole; on both frames the fused kernel composing
#                      its hierarchy in a subgroup, Hierarchy::Subgroup, fused+subgroup,
#                      where the device's subgroups can, and by pointer doubling,
#                      Hierarchy::Doubling, fused+doubling), the default variant's
#                      specialisations
#                      (whole, steady, settled, stored) against it on the
#                      layered frame without switches, and the layered frame with the
#                      procedural stage (issue 21)
#                      against the CPU; then all variants timed interleaved at 100k and 1M,
#                      two-clip, layered and layered-steady (the specialisations): median and
#                      minimum GPU ms, GB/s against the work model's bytes, issue efficiency from
#                      its modelled instructions; and
#                      the layered frame with the procedural stage, whole and stage by stage,
#                      with the stage's share of the frame without it
#                      (examples/gpu_variants.rs says each column)
#   2. clocks.txt      the GPU's clocks before and after (nvidia-smi, where there is one)
#   3. gpu-stats.txt   the real driver's statistics of every kernel (examples/gpu_stats.rs,
#                      without RADV_FORCE_FAMILY: the first Vulkan device that reports them)
#   4. records.txt     examples/bench_gpu.rs --records: the viewer's crowd through the state step
#                      each frame, uploaded as state records (set_frame_records) and expanded on
#                      the device: the expand pass's and the frame's GPU ms, the state step's, and
#                      bytes uploaded per character beside what set_frame would have sent; the
#                      device's expansion checked against the CPU's
#   5. bench-gpu.txt   examples/bench_gpu.rs's tables for the default variant (each stage alone too),
#      bench-gpu-compact.txt  and with compact clips at the first size
#
#   scripts/gpu-bench.sh [OUT_DIR]
#
# Environment:
#   THRONG_BENCH_BIN=DIR        run gpu_variants, gpu_stats and bench_gpu from DIR instead of
#                               building them (cargo build --release --example …)
#   THRONG_BENCH_VALIDATE=N     characters of the check (10000)
#   THRONG_BENCH_SIZES=LIST     sizes timed (100000,1000000), by steps 1, 4 and 5
#   THRONG_BENCH_FRAMES=F       frames per timed batch (10), and step 4's frames; THRONG_BENCH_ROUNDS=R
#                               batches (10; 5 until the first H200 run, which took 3 of its 8
#                               minutes and whose medians moved 2× between calls)
#   THRONG_BENCH_RECORDS=0      skip step 4
#   THRONG_BENCH_TABLES=0       skip step 5
#   THRONG_BENCH_ISSUE_RATE=R   wave-instructions per second the device issues at most
#                               (default gpu_variants': an H200's)
# Each step has its own time limit, so a step that hangs leaves the others' results. The exit
# status is 1 when a variant failed its check or the records frame its (or either run failed).
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:-gpu-bench-out}"
mkdir -p "$out"
bin="${THRONG_BENCH_BIN:-}"
if [[ -z "$bin" ]]; then
    cargo build --release --example gpu_variants --example gpu_stats --example bench_gpu || exit 1
    bin=target/release/examples
fi
clocks() {
    if command -v nvidia-smi >/dev/null; then
        echo "# $1" >>"$out/clocks.txt"
        nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw --format=csv \
            >>"$out/clocks.txt" 2>&1
    fi
}
status=0
sizes="${THRONG_BENCH_SIZES:-100000,1000000}"
clocks before
issue=()
if [[ -n "${THRONG_BENCH_ISSUE_RATE:-}" ]]; then
    issue=(--issue-rate "$THRONG_BENCH_ISSUE_RATE")
fi
timeout 300 "$bin/gpu_variants" --out "$out/gpu-bench.tsv" \
    --validate "${THRONG_BENCH_VALIDATE:-10000}" \
    --characters "$sizes" \
    --frames "${THRONG_BENCH_FRAMES:-10}" --rounds "${THRONG_BENCH_ROUNDS:-10}" "${issue[@]}" || status=1
clocks after
# A driver without VK_KHR_pipeline_executable_properties (lavapipe) says so in the file; the
# statistics and tables inform, only a variant failing its check fails the run.
# The table prints once every kernel is compiled: 90 s, since the production crowd's pass kernels.
timeout 90 env -u RADV_FORCE_FAMILY "$bin/gpu_stats" --joints 26,64 >"$out/gpu-stats.txt" 2>&1 ||
    echo "gpu_stats: exit status $?" >>"$out/gpu-stats.txt"
if [[ "${THRONG_BENCH_RECORDS:-1}" != 0 ]]; then
    timeout 40 "$bin/bench_gpu" --records --characters "$sizes" \
        --frames "${THRONG_BENCH_FRAMES:-10}" >"$out/records.txt" 2>&1
    records_status=$?
    if ((records_status != 0)); then
        echo "bench_gpu --records: exit status $records_status" >>"$out/records.txt"
        status=1
    fi
fi
if [[ "${THRONG_BENCH_TABLES:-1}" != 0 ]]; then
    timeout 35 "$bin/bench_gpu" --characters "$sizes" --frames 30 --no-cpu --stages \
        >"$out/bench-gpu.txt" 2>&1 || echo "bench_gpu: exit status $?" >>"$out/bench-gpu.txt"
    # Compact clips, whose decoder no longer indexes a vector at run time (local memory on
    # NVIDIA): the first run had them at 0.885 ms against 0.608 full on the two-clip frame.
    timeout 15 "$bin/bench_gpu" --characters "${sizes%%,*}" --frames 30 --no-cpu --compact \
        >"$out/bench-gpu-compact.txt" 2>&1 || echo "bench_gpu --compact: exit status $?" >>"$out/bench-gpu-compact.txt"
fi
echo "results in $out/"
exit "$status"
