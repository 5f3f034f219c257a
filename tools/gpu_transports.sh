#!/usr/bin/env bash
# tools/bench_transports.sh on a GPU machine (Ubuntu 24.04, no UCX there):
# the thin build against Debian 12's UCX carried with the call, then the
# migration sweep, 4 B to 1 GiB, between two pocld over NVIDIA's OpenCL on
# GPU 0, over the peer link, its lanes (4), UCX over TCP and UCX's shared
# memory, each against the client's own write in the same run; then the
# client's own writes and reads, 1 to 256 MiB, to one pocld on the same host
# over its data link alone, its lanes (4), UCX over TCP and UCX's shared
# memory (POCL_REMOTE_UCX=1), against loopback TCP in the same run.
#   POCL_TARBALL=<Debian 12's pocl.tar.xz> UCX_ROOT=DIR tools/gpu_transports.sh [ITERATIONS]
# UCX_ROOT: where `dpkg -x` unpacked libucx0_1.13.1-1 and libucx-dev_1.13.1-1
# (DIR/usr/lib/x86_64-linux-gnu/...), with libnuma.so.1 beside them in
# DIR/usr/lib/x86_64-linux-gnu if the machine lacks it; links may be copies.
# Env: BUILD_DIR (default /tmp/pocl-gpu), NVIDIA_OPENCL (default
# /usr/lib/libnvidia-opencl.so.1), PORT (default 21000), OUT (logs, default
# $BUILD_DIR/logs).
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
export BUILD_DIR=${BUILD_DIR:-/tmp/pocl-gpu}
nv=${NVIDIA_OPENCL:-/usr/lib/libnvidia-opencl.so.1}
port=${PORT:-21000}
logs=${OUT:-$BUILD_DIR/logs}
iters=${1:-1000}
mkdir -p "$logs" "$BUILD_DIR/bin"
lib=$(cd "${UCX_ROOT:?where libucx0 and libucx-dev were unpacked}" && pwd)/usr/lib/x86_64-linux-gnu
# The packages' .pc files say prefix /usr: a copy that says where they are.
pc=$BUILD_DIR/ucx-pkgconfig
mkdir -p "$pc"
for f in "$lib"/pkgconfig/*.pc; do
  sed "s|^prefix = .*|prefix = ${lib%/lib/x86_64-linux-gnu}|" "$f" >"$pc/${f##*/}"
done
export PKG_CONFIG_PATH=$pc LD_LIBRARY_PATH=$lib UCX_MODULE_DIR=$lib/ucx

bash "$repo/tools/build.sh" --thin >"$logs/build.log" 2>&1 \
  || { echo "gpu_transports: build failed, see $logs/build.log"; tail -20 "$logs/build.log"; exit 1; }
thin=$BUILD_DIR/thin bench=$BUILD_DIR/bin/remote_bench
# UCX is loaded at run time, not linked: the name it loads is in the binaries.
for b in "$thin/pocld/pocld" "$thin/lib/CL/devices/remote/libpocl-devices-remote.so"; do
  grep -q libucp.so.0 "$b" || { echo "gpu_transports: $b was built without UCX"; exit 1; }
done
cc -O2 -o "$bench" "$repo/tools/bench/remote_bench.c" -lOpenCL -lpthread || exit 1

for way in link lanes ucx-tcp ucx-shm; do
  case $way in
    link) env=(POCLD_PEER_LANES=0) args="--ucx off" ;;
    lanes) env=(POCLD_PEER_LANES=4) args="--ucx off" ;;
    ucx-tcp) env=(POCLD_PEER_LANES=0 UCX_TLS=tcp) args="--ucx on" ;;
    ucx-shm) env=(POCLD_PEER_LANES=0 UCX_TLS=sm,self) args="--ucx on" ;;
  esac
  pids=()
  for k in 0 1; do
    # shellcheck disable=SC2086
    env "${env[@]}" OCL_ICD_FILENAMES="$nv" CUDA_VISIBLE_DEVICES=0 "$thin/pocld/pocld" \
      --port $((port + 10 * k)) $args --log-level info >"$logs/$way-$k.log" 2>&1 &
    pids+=($!)
  done
  sleep 3
  POCL_BUILDING=1 POCL_DEVICES="remote remote" BENCH_LOCAL=NVIDIA \
    POCL_REMOTE0_PARAMETERS=127.0.0.1:$port/0 POCL_REMOTE1_PARAMETERS=127.0.0.1:$((port + 10))/0 \
    OCL_ICD_FILENAMES="$thin/lib/CL/libpocl.so:$nv" timeout 300 "$bench" "$iters" --migrations "$way"
  kill "${pids[@]}" 2>/dev/null
  wait "${pids[@]}" 2>/dev/null
done

for way in client-inline client-lanes client-ucx-tcp client-ucx-shm; do
  case $way in
    client-inline) env=(POCL_REMOTE_LANES=0) args="--ucx off" ;;
    client-lanes) env=(POCL_REMOTE_LANES=4) args="--ucx off" ;;
    client-ucx-tcp) env=(POCL_REMOTE_LANES=0 POCL_REMOTE_UCX=1 UCX_TLS=tcp) args="--ucx on" ;;
    client-ucx-shm) env=(POCL_REMOTE_LANES=0 POCL_REMOTE_UCX=1 UCX_TLS=sm,self) args="--ucx on" ;;
  esac
  # shellcheck disable=SC2086
  env "${env[@]}" OCL_ICD_FILENAMES="$nv" CUDA_VISIBLE_DEVICES=0 "$thin/pocld/pocld" \
    --port "$port" $args --log-level info >"$logs/$way.log" 2>&1 &
  pid=$!
  sleep 3
  env "${env[@]}" POCL_BUILDING=1 POCL_DEVICES=remote POCL_REMOTE0_PARAMETERS=127.0.0.1:$port/0 \
    OCL_ICD_FILENAMES="$thin/lib/CL/libpocl.so:$nv" timeout 300 "$bench" "$iters" --client "$way"
  kill "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
done
