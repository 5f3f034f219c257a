#!/usr/bin/env bash
# Builds tools/bench/remote_bench.c and runs it against two fresh pocld on
# loopback: the remote device is the first pocld's pthread device, the local
# reference is the pthread device in the benchmark's own process, and the
# second pocld is the other end of the server-to-server migrations.  Then
# the distributed matmul (examples/remote/matmul) on one remote device and
# on both, for the speedup, the reconnect time: the first pocld through
# tools/fault_proxy.cc, which cuts every connection once per round, and
# tools/bench_security.sh (plain, pre-shared key, TLS, both).  Between them
# tools/bench/overhead_bench.c (doc/benchmarks.md, Method).
#   tools/bench.sh [ITERATIONS [MATMUL_N]]
# Env: BUILD_DIR (default build, as for tools/build.sh), STREAM_LOG2 (the
# stream kernels' arrays hold 2^STREAM_LOG2 doubles, default 25).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$repo/build}/pocl
bench=$build/remote_bench
cc -O2 -Wall -o "$bench" "$repo/tools/bench/remote_bench.c" -lOpenCL -lpthread
cc -O2 -Wall -o "$build/overhead_bench" "$repo/tools/bench/overhead_bench.c" \
  -lOpenCL -lpthread -lm

fixture=$repo/tests/remote/pocld_fixture.sh
state_a=$(mktemp -u) state_b=$(mktemp -u)
stop() {
  "$fixture" stop "$state_a" || true
  "$fixture" stop "$state_b" || true
}
trap stop EXIT
"$fixture" start "$state_a" "$build/pocld/pocld" "$build"
"$fixture" start "$state_b" "$build/pocld/pocld" "$build"
port() { sed -n 's/^POCLD_PORT=//p' "$1" | head -n1; }

export OCL_ICD_VENDORS=$build/ocl-vendors POCL_BUILDING=1
export POCL_REMOTE0_PARAMETERS=127.0.0.1:$(port "$state_a")/0
export POCL_REMOTE1_PARAMETERS=127.0.0.1:$(port "$state_b")/0
POCL_DEVICES="pthread remote remote" "$bench" "${1:-2000}"
# overhead_bench: stream kernels, chain, 4-byte and large migrations.
echo
POCL_DEVICES="pthread remote remote" "$build/overhead_bench" \
  -n "${STREAM_LOG2:-25}" -i "${1:-2000}"

matmul=$(sed -n 's/^REMOTE_VECADD=//p' "$build/tests/remote/paths.env")
matmul=$(dirname "$matmul")/remote_matmul
n=${2:-512}
echo
one=$(POCL_DEVICES="remote remote" "$matmul" "$n" 1 3)
two=$(POCL_DEVICES="remote remote" "$matmul" "$n" 2 3)
echo "$one"
echo "$two"
t1=$(sed -n 's/.*best \([0-9.]*\) ms/\1/p' <<<"$one")
t2=$(sed -n 's/.*best \([0-9.]*\) ms/\1/p' <<<"$two")
awk -v a="$t1" -v b="$t2" 'BEGIN { printf "matmul speedup, 2 servers over 1: %.2fx (efficiency %.0f%%)\n", a / b, 50 * a / b }'

proxy=$build/tests/remote/fault_proxy
work=$(mktemp -d)
"$proxy" --target "127.0.0.1:$(port "$state_a")" --listen-port 0 --port-file "$work/port" \
  --control "$work/ctl" >"$work/proxy.log" 2>&1 &
proxy_pid=$!
trap 'kill $proxy_pid 2>/dev/null; rm -rf "$work"; stop' EXIT
for _ in $(seq 1 100); do
  [[ -s $work/port ]] && break
  sleep 0.1
done
echo
POCL_DEVICES="pthread remote" POCL_REMOTE0_PARAMETERS=127.0.0.1:$(sed -n 's/^PROXY_PORT=//p' "$work/port")/0 \
  "$bench" --reconnect "$work/ctl" 50

# The cost of pre-shared keys and TLS: tools/bench_security.sh.
echo
"$repo/tools/bench_security.sh" "${1:-2000}"
