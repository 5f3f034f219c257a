#!/usr/bin/env bash
# A/B of migrations between two pocld on GPU 0 over NVIDIA's OpenCL: the
# tree at OLD (a checkout of an earlier commit) against this one, three
# alternating rounds of `remote_bench ITERATIONS --migrations` (4 B to
# 64 MiB shown), each round with fresh servers.  doc/benchmarks.md's
# "what the log costs" table came from it.
#   POCL_TARBALL=<Debian 12's pocl.tar.xz> tools/gpu_migrations_ab.sh OLD [ITERATIONS]
# Env: LANES (POCLD_PEER_LANES, default 0), NVIDIA_OPENCL.
set -u
repo=$(cd "$(dirname "$0")/.." && pwd)
old=$(cd "${1:?a checkout of the earlier commit}" && pwd)
iters=${2:-1000}
nv=${NVIDIA_OPENCL:-/usr/lib/libnvidia-opencl.so.1}
(cd "$repo" && BUILD_DIR=/tmp/ab-new bash tools/build.sh --thin >/tmp/ab-new.log 2>&1) ||
  { tail -5 /tmp/ab-new.log; exit 1; }
(cd "$old" && BUILD_DIR=/tmp/ab-old bash tools/build.sh --thin >/tmp/ab-old.log 2>&1) ||
  { tail -5 /tmp/ab-old.log; exit 1; }
cc -O2 -o /tmp/ab-bench "$repo/tools/bench/remote_bench.c" -lOpenCL -lpthread || exit 1
for round in 1 2 3; do
  for v in old new; do
    thin=/tmp/ab-$v/thin pids=()
    for k in 0 1; do
      POCLD_PEER_LANES=${LANES:-0} OCL_ICD_FILENAMES=$nv CUDA_VISIBLE_DEVICES=0 \
        "$thin/pocld/pocld" --port $((21000 + 10 * k)) --ucx off --log-level warn >/dev/null 2>&1 &
      pids+=($!)
    done
    sleep 2
    POCL_BUILDING=1 POCL_DEVICES="remote remote" POCL_REMOTE0_PARAMETERS=127.0.0.1:21000/0 \
      POCL_REMOTE1_PARAMETERS=127.0.0.1:21010/0 OCL_ICD_FILENAMES="$thin/lib/CL/libpocl.so:$nv" \
      timeout 200 /tmp/ab-bench "$iters" --migrations "$v-$round" | head -6
    kill "${pids[@]}"
    wait "${pids[@]}" 2>/dev/null
  done
done
