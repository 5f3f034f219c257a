#!/usr/bin/env bash
# pocld with jemalloc (the build's, pocld/CMakeLists.txt) against the same
# pocld on glibc's malloc, alternately, through tools/chain_side.sh
# (overhead_bench's no-op and 100-kernel chain, chain_cpu.sh's chain and CPU
# per chain; the pocld log's malloc line).  Each round also runs the native
# chain with jemalloc preloaded into the benchmark, for what the allocator
# alone buys PoCL.
#   tools/malloc_ab.sh [ROUNDS]   (default 3)
# The glibc pocld is built standalone (cmake -S pocld -DPOCLD_JEMALLOC=OFF)
# under $BUILD_DIR/pocld-glibc.  Env: BUILD_DIR (default build); VARIANTS:
# more settings of the glibc pocld for chain_cpu.sh in each round, each
# VAR=VALUE[,VAR=VALUE...], e.g. LD_PRELOAD=<another malloc> or
# GLIBC_TUNABLES=glibc.malloc.arena_max=1.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
root=${BUILD_DIR:-$repo/build}
build=$root/pocl
rounds=${1:-3}
glibc=$root/pocld-glibc
cmake -S "$repo/pocld" -B "$glibc" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DPOCLD_JEMALLOC=OFF >/dev/null
ninja -C "$glibc" >/dev/null
jemalloc=$(ldd "$build/pocld/pocld" | awk '/libjemalloc/ {print $3}')
[[ -n $jemalloc ]] || { echo "malloc_ab.sh: $build/pocld/pocld has no jemalloc" >&2; exit 1; }
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
cc -O2 -o "$bin/chain_cpu" "$repo/tools/bench/chain_cpu.c" -lOpenCL
export OCL_ICD_VENDORS=$build/ocl-vendors POCL_BUILDING=1
for ((r = 1; r <= rounds; ++r)); do
  echo "== round $r: native chain, the benchmark on jemalloc"
  LD_PRELOAD=$jemalloc POCL_DEVICES=pthread "$bin/chain_cpu" native 8000
  for pocld in "$glibc/pocld" "$build/pocld/pocld"; do
    echo "== round $r, $pocld"
    "$repo/tools/chain_side.sh" "$pocld"
  done
  for v in ${VARIANTS:-}; do
    echo "== round $r, $glibc/pocld with $v"
    POCLD=$glibc/pocld POCLD_ENV=${v//,/ } "$repo/tools/chain_cpu.sh" 12000 2>/dev/null |
      grep -E '^remote:|^over'
  done
done
