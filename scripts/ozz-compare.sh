#!/usr/bin/env bash
# throng's CPU evaluator and ozz-animation on the same work, in one sitting (issue #23;
# BENCHMARKS.md "ozz-animation, built and run beside throng"):
#
#   scripts/ozz-compare.sh OZZ_SOURCE [ROUNDS] [OUT_DIR]
#
# OZZ_SOURCE is an ozz-animation source tree (0.16: its include/ and src/; the script compiles the
# base, runtime and offline libraries' sources itself with g++, no CMake). It builds
# benches/ozz/ozz_compare.cc against them (-O3 -march=native, as issue #23's figures were made) and
# throng's examples/ozz_compare.rs (release), exports the 64-joint humanoid's rig and clips from
# throng for ozz, checks that both compute the same matrices (ozz_compare.cc fails on a
# difference over 0.01), then runs ROUNDS rounds (default 5), each every variant once in turn:
#
#   work           threads   variants
#   sample_blend   1         ozz (every key), ozz --optimize, throng, throng --compact
#   whole          1         the same four
#   whole          2         the same four
#
# Each frame is timed by its threads' CPU time summed and divided by the threads (other work on a
# shared machine does not count, nor how it shifts work between threads; with the threads on
# cores of their own and the work balanced it is the frame's wall time) and by wall time; each run prints the median and least CPU time and the median wall time, microseconds per
# character over 60 frames of 10,000 characters. Every run's line goes to OUT_DIR/runs.txt as it
# comes (default ozz-compare-out/), then the summary, each variant's median of the rounds'
# medians, least of the leasts and median of the wall medians, to OUT_DIR/summary.txt and the
# terminal.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ $# -lt 1 ]; then
    sed -n '2,22p' "$0"
    exit 2
fi
ozz=$(cd "$1" && pwd)
rounds=${2:-5}
out=${3:-ozz-compare-out}
mkdir -p "$out/build"
build=$(cd "$out/build" && pwd)

flags=(-std=c++17 -O3 -march=native -DNDEBUG -Wno-ignored-attributes -I"$ozz/include" -I"$ozz/src")
sources=$(cd "$ozz" && ls src/base/*.cc src/base/*/*.cc src/animation/runtime/*.cc src/animation/offline/*.cc)
objects=()
for source in $sources; do
    objects+=("$build/$(echo "$source" | tr / _).o")
done
for source in $sources; do
    object="$build/$(echo "$source" | tr / _).o"
    [ "$object" -nt "$ozz/$source" ] || echo "g++ ${flags[*]} -c $ozz/$source -o $object"
done | xargs -P "$(nproc)" -I{} sh -c '{}'
g++ "${flags[@]}" benches/ozz/ozz_compare.cc "${objects[@]}" -o "$build/ozz_compare" -lpthread

cargo build --release --example ozz_compare
throng=target/release/examples/ozz_compare
"$throng" --export "$build/humanoid.bin"
"$throng" --check "$build/throng-matrices.bin"
"$build/ozz_compare" "$build/humanoid.bin" "$build/throng-matrices.bin" --characters 16 --frames 1 \
    | tee "$out/check.txt"

: > "$out/runs.txt"
for round in $(seq "$rounds"); do
    for config in "sample_blend 1" "whole 1" "whole 2"; do
        read -r work threads <<< "$config"
        for variant in ozz ozz-optimized throng throng-compact; do
            args=(--work "$work" --threads "$threads")
            case $variant in
                ozz) line=$("$build/ozz_compare" "$build/humanoid.bin" "$build/throng-matrices.bin" "${args[@]}" | tail -1) ;;
                ozz-optimized) line=$("$build/ozz_compare" "$build/humanoid.bin" "$build/throng-matrices.bin" "${args[@]}" --optimize | tail -1) ;;
                throng) line=$("$throng" "${args[@]}") ;;
                throng-compact) line=$("$throng" "${args[@]}" --compact) ;;
            esac
            echo "round=$round $line" | tee -a "$out/runs.txt"
        done
    done
done

python3 - "$out/runs.txt" <<'EOF' | tee "$out/summary.txt"
import collections, re, statistics, sys
medians, leasts, walls = (collections.defaultdict(list) for _ in range(3))
for line in open(sys.argv[1]):
    m = re.match(r"round=\d+ (\S+) (\S+) threads=(\d+) .* median_us=(\S+) least_us=(\S+) wall_median_us=(\S+)", line)
    if m:
        key = (m[2], int(m[3]), m[1])
        medians[key].append(float(m[4]))
        leasts[key].append(float(m[5]))
        walls[key].append(float(m[6]))
print(f"{'work':<13} {'threads':>7} {'variant':<15} {'CPU µs/char':>12} {'least':>7} {'wall µs/char':>13}  rounds' CPU medians")
for key in sorted(medians, key=lambda k: (k[0] != "sample_blend", k[1], k[2])):
    runs = ", ".join(f"{v:.3f}" for v in medians[key])
    print(f"{key[0]:<13} {key[1]:>7} {key[2]:<15} {statistics.median(medians[key]):>12.3f} {min(leasts[key]):>7.3f} "
          f"{statistics.median(walls[key]):>13.3f}  {runs}")
EOF
