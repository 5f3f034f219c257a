#!/usr/bin/env bash
# What another device's DMA costs a client's writes through pocld
# (doc/benchmarks.md, "A streamed PUSH": a migration's source reads from
# its GPU while the lanes carry the bytes, a client's write has no such
# reads beside it), one device call on a host
# of two GPUs: the thin build, a pocld on GPU 1, and tools/bench/write_rate.c
# through it, ROUNDS times alone and beside tools/bench/pinned_rate_probe.c
# running in a loop on GPU 0 (page-locked reads and writes at 36-55 GB/s).
#   POCL_TARBALL=<Debian 12's pocl.tar.xz> tools/gpu_dma_beside.sh
# Env: BUILD_DIR (default /tmp/pocl-gpu), NVIDIA_OPENCL, PORT (default 27000),
# ROUNDS (default 3), OUT (logs).
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
export BUILD_DIR=${BUILD_DIR:-/tmp/pocl-gpu}
nv=${NVIDIA_OPENCL:-/usr/lib/libnvidia-opencl.so.1}
port=${PORT:-27000}
logs=${OUT:-$BUILD_DIR/logs}
mkdir -p "$logs" "$BUILD_DIR/bin"
bin=$BUILD_DIR/bin thin=$BUILD_DIR/thin
bash "$repo/tools/build.sh" --thin >"$logs/build.log" 2>&1 \
  || { echo "gpu_dma_beside: build failed, see $logs/build.log"; tail -20 "$logs/build.log"; exit 1; }
cc -O2 -o "$bin/pinned_rate_probe" "$repo/tools/bench/pinned_rate_probe.c" -lOpenCL || exit 1
cc -O2 -o "$bin/write_rate" "$repo/tools/bench/write_rate.c" -lOpenCL || exit 1
OCL_ICD_FILENAMES=$nv CUDA_VISIBLE_DEVICES=1 "$thin/pocld/pocld" --port "$port" \
  >"$logs/pocld.log" 2>&1 &
pocld=$!
load=
trap 'kill $pocld $load 2>/dev/null; wait 2>/dev/null' EXIT
for _ in $(seq 100); do
  grep -q "listening on" "$logs/pocld.log" && break
  sleep 0.1
done
writes() {
  POCL_BUILDING=1 POCL_DEVICES=remote POCL_REMOTE0_PARAMETERS=127.0.0.1:$port/0 \
    OCL_ICD_FILENAMES=$thin/lib/CL/libpocl.so timeout 120 "$bin/write_rate"
}
for ((r = 1; r <= ${ROUNDS:-3}; ++r)); do
  echo "== round $r, alone"
  writes
  (while :; do
    OCL_ICD_FILENAMES=$nv CUDA_VISIBLE_DEVICES=0 "$bin/pinned_rate_probe" >/dev/null
  done) &
  load=$!
  sleep 2
  echo "== round $r, beside GPU 0's page-locked transfers"
  writes
  kill $load
  wait $load 2>/dev/null
  pkill -f "$bin/pinned_rate_probe"
  load=
  sleep 1
done
