#!/usr/bin/env bash
# This build's pocld and remote driver against another tree's, alternately,
# on this machine: tools/bench/overhead_bench.c's no-op and 100-kernel chain
# (native, remote and the loopback round trip of the same run) against a
# fresh pocld on loopback over the build's pthread device, then
# tools/chain_cpu.sh (the chain's median, CPU per chain, and with perf the
# machine's sendmsg, recvfrom and context switches per chain). Only those two
# files differ between the sides; libpocl and the pthread device are this
# build's.
#   tools/build_ab.sh --save DIR     copy this build's pocld and driver to DIR
#   tools/build_ab.sh DIR [ROUNDS]   A/B against DIR's (default 3 rounds)
# libpocl loads the driver from the build, so it is swapped in place there
# and put back on exit; both copies keep their own times (cp -p), so that a
# ninja after a killed run relinks the driver.
# Env: BUILD_DIR (default build).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$repo/build}/pocl
drv=$build/lib/CL/devices/remote/libpocl-devices-remote.so
if [[ ${1:-} == --save ]]; then
  mkdir -p "$2"
  cp -p "$build/pocld/pocld" "$drv" "$2/"
  exit 0
fi
old=${1:?usage: tools/build_ab.sh --save DIR | DIR [ROUNDS]}
rounds=${2:-3}
[[ -x $old/pocld && -f $old/libpocl-devices-remote.so ]] ||
  { echo "build_ab.sh: $old has no pocld and libpocl-devices-remote.so" >&2; exit 1; }
bin=$(mktemp -d)
fixture=$repo/tests/remote/pocld_fixture.sh
cp -p "$drv" "$bin/this.so"
trap 'cp -p "$bin/this.so" "$drv"; "$fixture" stop "$bin/st" >/dev/null 2>&1 || true; rm -rf "$bin"' EXIT
cc -O2 -o "$bin/overhead_bench" "$repo/tools/bench/overhead_bench.c" -lOpenCL -lpthread -lm
export OCL_ICD_VENDORS=$build/ocl-vendors POCL_BUILDING=1
# system calls and context switches per chain where perf can count them
counts=0
perf stat -a -e sched:sched_switch -- true >/dev/null 2>&1 && counts=1
for ((r = 1; r <= rounds; ++r)); do
  for side in old this; do
    if [[ $side == old ]]; then
      cp -p "$old/libpocl-devices-remote.so" "$drv"
      pocld=$old/pocld
    else
      cp -p "$bin/this.so" "$drv"
      pocld=$build/pocld/pocld
    fi
    echo "== round $r, $side ($pocld)"
    "$fixture" start "$bin/st" "$pocld" "$build" >/dev/null
    port=$(sed -n 's/^POCLD_PORT=//p' "$bin/st" | head -n1)
    POCL_DEVICES="pthread remote" POCL_REMOTE0_PARAMETERS=127.0.0.1:$port/0 \
      "$bin/overhead_bench" -i 2000 noop chain |
      grep -E 'RTT\)|^no-op|^native|^remote  |chain:'
    "$fixture" stop "$bin/st" >/dev/null
    POCLD=$pocld COUNTS=$counts "$repo/tools/chain_cpu.sh" 12000 2>/dev/null |
      grep -E '^native|^remote:|^over|^per chain' || true
  done
done
