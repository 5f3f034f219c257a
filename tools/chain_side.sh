#!/usr/bin/env bash
# One side of the 2-core A/B scripts (build_ab.sh, coalesce_ab.sh,
# malloc_ab.sh): tools/bench/overhead_bench.c's no-op and 100-kernel chain
# (native, remote and the loopback round trip of the same run) through a
# fresh pocld on loopback over the build's pthread device, then
# tools/chain_cpu.sh (the chain's median, CPU per chain and ratio to native + RTT).
#   tools/chain_side.sh POCLD [CHAINS]   (chain_cpu's chains, default 12000)
# The client's environment passes through (e.g. POCL_REMOTE_COALESCE);
# POCLD_ENV (VAR=VALUE words) is pocld's alone; COUNTS=1 as chain_cpu.sh.
# Env: BUILD_DIR (default build).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$repo/build}/pocl
pocld=${1:?usage: tools/chain_side.sh POCLD [CHAINS]}
chains=${2:-12000}
bin=$(mktemp -d)
fixture=$repo/tests/remote/pocld_fixture.sh
trap '"$fixture" stop "$bin/st" >/dev/null 2>&1 || true; rm -rf "$bin"' EXIT
cc -O2 -o "$bin/overhead_bench" "$repo/tools/bench/overhead_bench.c" -lOpenCL -lpthread -lm
export OCL_ICD_VENDORS=$build/ocl-vendors POCL_BUILDING=1
env ${POCLD_ENV:-} "$fixture" start "$bin/st" "$pocld" "$build" >/dev/null
grep -o 'malloc from [^ ]*' "$bin/st.log" || true
port=$(sed -n 's/^POCLD_PORT=//p' "$bin/st" | head -n1)
POCL_DEVICES="pthread remote" POCL_REMOTE0_PARAMETERS=127.0.0.1:$port/0 \
  "$bin/overhead_bench" -i 2000 noop chain |
  grep -E 'RTT\)|^no-op|^native|^remote  |chain:'
"$fixture" stop "$bin/st" >/dev/null
# chain_cpu.sh samples CPU from 1.5 to 4.5 s into its remote run: a run
# shorter than that prints no CPU line
POCLD=$pocld "$repo/tools/chain_cpu.sh" "$chains" 2>/dev/null |
  grep -E '^native|^remote:|^over|^per chain|^loopback' || true
