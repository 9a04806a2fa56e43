#!/usr/bin/env bash
# Takes real Tracy captures of the viewer (headless) and of bench_gpu (each stage), over
# loopback, exports them with tracy-csvexport and checks them with scripts/tracy-check.py
# (docs/profiling.md, "Checking a capture"). Writes into OUT_DIR (default tracy-out/):
#
#   viewer.tracy, bench.tracy         the captures (open them in Tracy's GUI 0.14.0)
#   *-zones.csv, *-gpu.csv            tracy-csvexport -u -p (CPU zones, plots) and -g (GPU zones)
#   viewer-threads.csv                scripts/tracy-threads.cpp: each thread's index and name
#   viewer.out, bench.out             what the programs printed; *.capture.log the capture tool's
#   check.txt                         what tracy-check.py found; the exit status is its
#
#   TRACY_BUILD=DIR scripts/tracy-capture.sh [OUT_DIR]
#
# TRACY_BUILD is where Tracy 0.14.0's capture and csvexport tools were built (the version
# tracy-client 0.18 vendors: the two must speak the same protocol), as DIR/capture and
# DIR/csvexport. With the network, from a
# checkout of https://github.com/wolfpld/tracy at tag v0.14.0 (cmake ≥ 3.16 and a C++20
# compiler; the configure step downloads capstone, zstd, PPQSort and json; NO_LTO because a
# link-time-optimised link of Tracy's server takes longer than compiling it, and because
# tracy-threads links csvexport's library):
#
#   git clone --depth 1 --branch v0.14.0 https://github.com/wolfpld/tracy && cd tracy
#   for tool in capture csvexport; do
#       cmake -S $tool -B build/$tool -DCMAKE_BUILD_TYPE=Release -DNO_LTO=ON
#       cmake --build build/$tool -j2 --target tracy-$tool
#   done
#   TRACY_BUILD=$PWD/build path/to/throng/scripts/tracy-capture.sh
#
# Environment:
#   THRONG_TRACY_BIN=DIR         run viewer and bench_gpu from DIR instead of building them
#                                (cargo build --release --features tracy --example …)
#   THRONG_TRACY_CHARACTERS=N    the viewer's characters (2000); THRONG_TRACY_FRAMES=F its frames (300)
#   THRONG_TRACY_BENCH=N         bench_gpu's characters (500: lavapipe takes over a second for
#                                one layered frame of them), THRONG_TRACY_BENCH_FRAMES=F (10)
#   THRONG_TRACY_PORT=P          the port the programs listen on and the capture connects to
#                                (8186; TRACY_PORT for the client), which must be free: a
#                                client finding it taken listens on the next one up, where the
#                                capture would not find it
# The programs run on whatever adapter wgpu picks (lavapipe where there is no GPU); the client
# listens on 127.0.0.1 only (the `tracy` feature's only-localhost).
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:-tracy-out}"
build="${TRACY_BUILD:?TRACY_BUILD: the folder holding Tracy 0.14.0's capture/ and csvexport/ builds; this script's header says how to build them}"
capture="$build/capture/tracy-capture"
csvexport="$build/csvexport/tracy-csvexport"
for tool in "$capture" "$csvexport" "$build/csvexport/libTracyServer.a"; do
    [[ -e "$tool" ]] || { echo "tracy-capture.sh: $tool is missing; see this script's header" >&2; exit 2; }
done
characters="${THRONG_TRACY_CHARACTERS:-2000}"
frames="${THRONG_TRACY_FRAMES:-300}"
bench_characters="${THRONG_TRACY_BENCH:-500}"
bench_frames="${THRONG_TRACY_BENCH_FRAMES:-10}"
port="${THRONG_TRACY_PORT:-8186}"
mkdir -p "$out"

bin="${THRONG_TRACY_BIN:-}"
if [[ -z "$bin" ]]; then
    cargo build --release --features tracy --example viewer --example bench_gpu || exit 1
    bin=target/release/examples
fi

# tracy-threads: the capture's thread names, which tracy-csvexport does not print. It links the
# TracyServer library csvexport was built with, and the zstd and capstone libraries beside it.
# The include folders and definitions are the library's own, from its CMake (Makefile) build.
threads="$out/tracy-threads"
flags="$build/csvexport/CMakeFiles/TracyServer.dir/flags.make"
[[ -e "$flags" ]] || { echo "tracy-capture.sh: $flags is missing (build csvexport with CMake's Makefile generator)" >&2; exit 2; }
includes=($(sed -n 's/^CXX_INCLUDES = //p; s/^CXX_DEFINES = //p' "$flags"))
libs=("$build/csvexport/libTracyServer.a")
libs+=($(find "$build/csvexport/_deps" -name 'libzstd*.a' -o -name 'libcapstone*.a'))
g++ -std=c++20 -O1 "${includes[@]}" scripts/tracy-threads.cpp "${libs[@]}" -lpthread -o "$threads" || exit 1

port_free() {
    python3 -c "import socket,sys; s=socket.socket(); s.bind(('127.0.0.1', int(sys.argv[1])))" "$1" 2>/dev/null
}

# Runs "$@" with the Tracy client on $port while tracy-capture records it into $out/$name.tracy.
capture() {
    local name="$1"
    shift
    port_free "$port" || { echo "tracy-capture.sh: port $port is taken; set THRONG_TRACY_PORT" >&2; exit 2; }
    "$capture" -a 127.0.0.1 -p "$port" -f -o "$out/$name.tracy" >"$out/$name.capture.log" 2>&1 &
    local tool=$!
    TRACY_PORT="$port" "$@" >"$out/$name.out" 2>&1
    local status=$?
    # The client sends what it has left before the program exits; the tool then saves.
    wait "$tool" || { echo "tracy-capture.sh: tracy-capture failed, see $out/$name.capture.log" >&2; exit 1; }
    [[ $status -eq 0 ]] || { echo "tracy-capture.sh: $name failed, see $out/$name.out" >&2; exit 1; }
    "$csvexport" -u -p "$out/$name.tracy" >"$out/$name-zones.csv" || exit 1
    "$csvexport" -g "$out/$name.tracy" >"$out/$name-gpu.csv" || exit 1
}

# --background-only: lavapipe draws 2,000 skinned characters in seconds a frame on a busy machine,
# which would make the capture's run minutes long and tells nothing about throng; the draw pass
# (the ground) is still timed.
capture viewer "$bin/viewer" --headless --background-only --size 320x180 --frames "$frames" \
    --characters "$characters" --out "$out/viewer.png"
"$threads" "$out/viewer.tracy" >"$out/viewer-threads.csv" || exit 1
capture bench "$bin/bench_gpu" --characters "$bench_characters" --frames "$bench_frames" --stages --no-cpu

{
    echo "# viewer: $characters characters, $frames frames; bench_gpu: $bench_characters characters, $bench_frames frames"
    python3 scripts/tracy-check.py viewer "$out" "$characters" "$frames"
    viewer=$?
    python3 scripts/tracy-check.py bench "$out" "$bench_frames"
    exit $((viewer | $?))
} 2>&1 | tee "$out/check.txt"
exit "${PIPESTATUS[0]}"
