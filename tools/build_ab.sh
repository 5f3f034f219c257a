#!/usr/bin/env bash
# This build's pocld and remote driver against another tree's, alternately,
# on this machine, through tools/chain_side.sh (overhead_bench's no-op and
# chain, chain_cpu.sh's chain and CPU, and with perf the machine's sendmsg,
# recvfrom and context switches per chain). Only those two files differ
# between the sides; libpocl and the pthread device are this build's.
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
cp -p "$drv" "$bin/this.so"
trap 'cp -p "$bin/this.so" "$drv"; rm -rf "$bin"' EXIT
# system calls and context switches per chain where perf can count them
export COUNTS=0
perf stat -a -e sched:sched_switch -- true >/dev/null 2>&1 && COUNTS=1
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
    "$repo/tools/chain_side.sh" "$pocld"
  done
done
