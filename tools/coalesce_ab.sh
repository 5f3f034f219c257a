#!/usr/bin/env bash
# The client's coalescing of bursts (POCL_REMOTE_COALESCE, doc/pocld.md) at
# two values, alternately, through tools/chain_side.sh (overhead_bench's
# no-op and 100-kernel chain, chain_cpu.sh's chain and CPU per chain).
#   tools/coalesce_ab.sh [ROUNDS [ON [OFF]]]   (default 3 rounds; ON, the
#   value for "on", default 64; OFF, default 0: each kernel at once)
# Env: BUILD_DIR (default build).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$repo/build}/pocl
rounds=${1:-3} on=${2:-64} off=${3:-0}
for ((r = 1; r <= rounds; ++r)); do
  for c in "$off" "$on"; do
    echo "== round $r, POCL_REMOTE_COALESCE=$c"
    POCL_REMOTE_COALESCE=$c "$repo/tools/chain_side.sh" "$build/pocld/pocld"
  done
done
