#!/usr/bin/env bash
# The client's coalescing of bursts (POCL_REMOTE_COALESCE, doc/pocld.md) on
# and off, alternately: tools/bench/overhead_bench.c's no-op and 100-kernel
# chain (native, remote and the loopback round trip of the same run, the
# chain's ratio to native + RTT) against a fresh pocld on loopback over the
# build's pthread device, then tools/chain_cpu.sh (CPU time per chain of
# the client and of pocld's session).
#   tools/coalesce_ab.sh [ROUNDS [ON]]   (default 3 rounds; ON, the value
#   for "on", default 16)
# Env: BUILD_DIR (default build).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$repo/build}/pocl
rounds=${1:-3} on=${2:-16}
bin=$(mktemp -d)
fixture=$repo/tests/remote/pocld_fixture.sh
trap '"$fixture" stop "$bin/st" >/dev/null 2>&1 || true; rm -rf "$bin"' EXIT
cc -O2 -o "$bin/overhead_bench" "$repo/tools/bench/overhead_bench.c" -lOpenCL -lpthread -lm
for ((r = 1; r <= rounds; ++r)); do
  for c in 0 "$on"; do
    echo "== round $r, POCL_REMOTE_COALESCE=$c"
    "$fixture" start "$bin/st" "$build/pocld/pocld" "$build" >/dev/null
    port=$(sed -n 's/^POCLD_PORT=//p' "$bin/st" | head -n1)
    OCL_ICD_VENDORS=$build/ocl-vendors POCL_BUILDING=1 POCL_DEVICES="pthread remote" \
      POCL_REMOTE0_PARAMETERS=127.0.0.1:$port/0 POCL_REMOTE_COALESCE=$c \
      "$bin/overhead_bench" -i 2000 noop chain |
      grep -E 'RTT\)|^no-op|^native|^remote  |chain:'
    "$fixture" stop "$bin/st" >/dev/null
    POCL_REMOTE_COALESCE=$c "$repo/tools/chain_cpu.sh" 8000 2>/dev/null | grep -E '^remote:|^over'
  done
done
