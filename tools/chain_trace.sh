#!/usr/bin/env bash
# The 100-kernel chain of tools/bench/overhead_bench.c through a pocld on
# loopback over the build's pthread device, traced (POCL_REMOTE_TRACE and
# pocld --trace, doc/tracing.md), merged and summed by tools/trace_stages.py:
# per chain, where its commands' time goes.  The merged trace stays in OUT
# (default a temporary directory, removed), for Perfetto.
#   tools/chain_trace.sh [ITERATIONS]   (overhead_bench -i, default 2000:
#   200 chains)
# Env: BUILD_DIR (default build), POCLD (default the build's pocld), OUT.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$repo/build}/pocl
bin=$(mktemp -d)
out=${OUT:-$bin}
mkdir -p "$out"
fixture=$repo/tests/remote/pocld_fixture.sh
trap '"$fixture" stop "$bin/st" >/dev/null 2>&1 || true; rm -rf "$bin"' EXIT
cc -O2 -o "$bin/overhead_bench" "$repo/tools/bench/overhead_bench.c" -lOpenCL -lpthread -lm
export OCL_ICD_VENDORS=$build/ocl-vendors POCL_BUILDING=1
POCLD_EXTRA_ARGS="--trace $out/server" "$fixture" start "$bin/st" \
  "${POCLD:-$build/pocld/pocld}" "$build" >/dev/null
port=$(sed -n 's/^POCLD_PORT=//p' "$bin/st" | head -n1)
POCL_DEVICES="pthread remote" POCL_REMOTE0_PARAMETERS=127.0.0.1:$port/0 \
  POCL_REMOTE_TRACE=$out/client.json "$bin/overhead_bench" -i "${1:-2000}" chain |
  grep -E 'RTT\)|^native|^remote  |chain:'
# the session writes its trace when it ends
"$fixture" stop "$bin/st" >/dev/null
python3 "$repo/tools/trace_merge.py" -o "$out/merged.json" "$out/client.json" "$out"/server.*.json
python3 "$repo/tools/trace_stages.py" "$out/merged.json"
