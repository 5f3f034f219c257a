#!/usr/bin/env bash
# On a GPU machine with NVIDIA's OpenCL (Ubuntu 24.04, no LLVM): the thin
# build, pocld over NVIDIA on loopback, the example, the API tests and the
# benchmark through the remote device, plus the two native probes whose
# figures doc/benchmarks.md quotes.  One device call reproduces them.
#   POCL_TARBALL=<Debian 12's pocl.tar.xz> tools/gpu_bench.sh [ITERATIONS]
# Env: BUILD_DIR (default /tmp/pocl-gpu), NVIDIA_OPENCL (the vendor
# library, default /usr/lib/libnvidia-opencl.so.1), PORT (default 21000),
# OUT (where logs go, default $BUILD_DIR/logs).
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
export BUILD_DIR=${BUILD_DIR:-/tmp/pocl-gpu}
nv=${NVIDIA_OPENCL:-/usr/lib/libnvidia-opencl.so.1}
port=${PORT:-21000}
logs=${OUT:-$BUILD_DIR/logs}
iters=${1:-3000}
mkdir -p "$logs" "$BUILD_DIR/bin"
bin=$BUILD_DIR/bin thin=$BUILD_DIR/thin

bash "$repo/tools/build.sh" --thin > "$logs/build.log" 2>&1 \
  || { echo "gpu_bench: build failed, see $logs/build.log"; tail -20 "$logs/build.log"; exit 1; }

cc -O2 -o "$bin/bench" "$repo/tools/bench/remote_bench.c" -lOpenCL -lpthread
cc -O2 -o "$bin/completion_probe" "$repo/tools/bench/completion_probe.c" -lOpenCL -lpthread
cc -O2 -o "$bin/arg_info_probe" "$repo/tools/bench/arg_info_probe.c" -lOpenCL
cc -O2 -o "$bin/vecadd" "$repo/examples/remote/vecadd.c" -lOpenCL
for t in api_buffers api_events api_programs; do
  cc -O2 -I"$repo/tests/remote" -I"$repo/protocol" -o "$bin/$t" \
     "$repo/tests/remote/test_$t.c" -lOpenCL -lpthread
done

echo "== native NVIDIA: completion notice and argument-info builds"
OCL_ICD_FILENAMES=$nv "$bin/completion_probe"
OCL_ICD_FILENAMES=$nv "$bin/arg_info_probe"

OCL_ICD_FILENAMES=$nv "$thin/pocld/pocld" --port "$port" --log-level info \
  > "$logs/pocld.log" 2>&1 &
pocld=$!
trap 'kill $pocld 2>/dev/null; wait $pocld 2>/dev/null' EXIT
sleep 3

export POCL_BUILDING=1 POCL_DEVICES=remote POCL_REMOTE0_PARAMETERS=127.0.0.1:$port/0
echo "== through the remote device"
OCL_ICD_FILENAMES=$thin/lib/CL/libpocl.so timeout 120 "$bin/vecadd"
for t in api_buffers api_events api_programs; do
  OCL_ICD_FILENAMES=$thin/lib/CL/libpocl.so timeout 300 "$bin/$t" \
    > "$logs/$t.log" 2>&1
  tail -n1 "$logs/$t.log"
done
OCL_ICD_FILENAMES=$thin/lib/CL/libpocl.so:$nv BENCH_LOCAL=NVIDIA \
  timeout 300 "$bin/bench" "$iters"
