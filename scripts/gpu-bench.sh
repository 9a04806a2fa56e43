#!/usr/bin/env bash
# Builds the GPU bench example in release and runs it: the adapter, then the tables
# (examples/bench_gpu.rs says what each column is).
#
#   scripts/gpu-bench.sh                      10k, 100k and 1M characters, 50 frames each
#   scripts/gpu-bench.sh 1000,5000 5          smaller sizes and fewer frames (lavapipe, CI)
#   scripts/gpu-bench.sh 10000 50 --stages    any further arguments go to the example
#   scripts/gpu-bench.sh 100000 30 --compact --lod   compact clips, animation LOD's mix
#
# WGPU_BACKEND / WGPU_ADAPTER_NAME choose another adapter than the default one.
# THRONG_BENCH_BIN=path runs a bench_gpu built elsewhere (a GPU machine without Rust) instead
# of building one.
set -euo pipefail
cd "$(dirname "$0")/.."
characters="${1:-10000,100000,1000000}"
frames="${2:-50}"
shift $(( $# < 2 ? $# : 2 ))
bin="${THRONG_BENCH_BIN:-}"
if [[ -z "$bin" ]]; then
    cargo build --release --example bench_gpu
    bin=target/release/examples/bench_gpu
fi
exec "$bin" --characters "$characters" --frames "$frames" "$@"
