#!/usr/bin/env bash
# The migration sweep, 4 B to 1 GiB, between two fresh pocld on loopback,
# once per way the payload can travel between them (doc/benchmarks.md,
# "Transports"):
#   link      the peer link alone (POCLD_PEER_LANES=0, --ucx off)
#   lanes     the link and POCLD_PEER_LANES (default 2) lanes, --ucx off
#   ucx-tcp   UCX over its TCP transport (--ucx on, UCX_TLS=tcp)
#   ucx-shm   UCX over shared memory (--ucx on, UCX_TLS=sm,self)
# Each line: the median migration, its GB/s and the client's own write of
# the same size in the same run (tools/bench/remote_bench.c --migrations).
# Then the client's own writes and reads, 1 to 256 MiB, to one pocld on the
# same host, against loopback TCP measured in the same run (--client):
#   client-inline     the data link alone (POCL_REMOTE_LANES=0)
#   client-lanes      the data link and POCL_REMOTE_LANES (default 2) lanes
#   client-ucx-tcp    UCX over its TCP transport (POCL_REMOTE_UCX=1, --ucx on)
#   client-ucx-shm    UCX over shared memory (UCX_TLS=sm,self)
#   tools/bench_transports.sh [ITERATIONS [WAY...]]
# Env: BUILD_DIR (default build).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$repo/build}/pocl
bench=$build/remote_bench
cc -O2 -Wall -o "$bench" "$repo/tools/bench/remote_bench.c" -lOpenCL -lpthread
fixture=$repo/tests/remote/pocld_fixture.sh
iters=${1:-2000}
shift || true
ways=("$@")
[[ ${#ways[@]} -gt 0 ]] ||
  ways=(link lanes ucx-tcp ucx-shm client-inline client-lanes client-ucx-tcp client-ucx-shm)

state_a=$(mktemp -u) state_b=$(mktemp -u)
stop() {
  [[ ! -e $state_a ]] || "$fixture" stop "$state_a" || true
  [[ ! -e $state_b ]] || "$fixture" stop "$state_b" || true
}
trap stop EXIT
port() { sed -n 's/^POCLD_PORT=//p' "$1" | head -n1; }

client() {
  env "${env[@]}" POCLD_EXTRA_ARGS="$args" \
    "$fixture" start "$state_a" "$build/pocld/pocld" "$build"
  env "${env[@]}" OCL_ICD_VENDORS=$build/ocl-vendors POCL_BUILDING=1 \
    POCL_DEVICES="pthread remote" POCL_REMOTE0_PARAMETERS=127.0.0.1:$(port "$state_a")/0 \
    "$bench" "$iters" --client "$way"
  stop
}

for way in "${ways[@]}"; do
  case $way in
    client-inline) env=(POCL_REMOTE_LANES=0) args="--ucx off"; client; continue ;;
    client-lanes) env=(POCL_REMOTE_LANES="${POCL_REMOTE_LANES:-2}") args="--ucx off"
                  client; continue ;;
    client-ucx-tcp) env=(POCL_REMOTE_LANES=0 POCL_REMOTE_UCX=1 UCX_TLS=tcp) args="--ucx on"
                    client; continue ;;
    client-ucx-shm) env=(POCL_REMOTE_LANES=0 POCL_REMOTE_UCX=1 UCX_TLS=sm,self) args="--ucx on"
                    client; continue ;;
    link) env=(POCLD_PEER_LANES=0) args="--ucx off" ;;
    lanes) env=(POCLD_PEER_LANES="${POCLD_PEER_LANES:-2}") args="--ucx off" ;;
    ucx-tcp) env=(POCLD_PEER_LANES=0 UCX_TLS=tcp) args="--ucx on" ;;
    ucx-shm) env=(POCLD_PEER_LANES=0 UCX_TLS=sm,self) args="--ucx on" ;;
    *) echo "bench_transports: unknown way $way" >&2; exit 2 ;;
  esac
  env "${env[@]}" POCLD_EXTRA_ARGS="$args" \
    "$fixture" start "$state_a" "$build/pocld/pocld" "$build"
  env "${env[@]}" POCLD_EXTRA_ARGS="$args" \
    "$fixture" start "$state_b" "$build/pocld/pocld" "$build"
  OCL_ICD_VENDORS=$build/ocl-vendors POCL_BUILDING=1 POCL_DEVICES="pthread remote remote" \
    POCL_REMOTE0_PARAMETERS=127.0.0.1:$(port "$state_a")/0 \
    POCL_REMOTE1_PARAMETERS=127.0.0.1:$(port "$state_b")/0 \
    "$bench" "$iters" --migrations "$way"
  stop
done
