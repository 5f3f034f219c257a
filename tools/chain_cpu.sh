#!/usr/bin/env bash
# Where the 2-core machine's chain time goes (doc/benchmarks.md, "Where the
# 2-core chain's time goes"): the 100-kernel chain natively and through a
# pocld on loopback over the build's pthread device, CHAINS back to back
# each, with the CPU time per chain of the benchmark's process and of pocld's
# session process (/proc/PID/stat, sampled over the middle of the remote
# run), and the target's ratio, the remote chain's median over the native
# one's plus the loopback round trip's (measured before the native run and
# after the remote one).
#   tools/chain_cpu.sh [CHAINS]   (default 8000)
# Env: BUILD_DIR (default build), POCLD (default the build's pocld), POCLD_ENV (VAR=VALUE
# words for pocld alone, e.g. an LD_PRELOAD of another malloc), COUNTS=1 (with perf and
# its tracepoints: the whole machine's sendmsg, recvfrom and context switches per chain
# over the remote run, warm-up chains and start-up included).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$repo/build}/pocl
n=${1:-8000}
bin=$(mktemp -d)
trap '"$repo/tests/remote/pocld_fixture.sh" stop "$bin/st" >/dev/null 2>&1 || true; rm -rf "$bin"' EXIT
cc -O2 -o "$bin/chain_cpu" "$repo/tools/bench/chain_cpu.c" -lOpenCL -lpthread
export OCL_ICD_VENDORS=$build/ocl-vendors POCL_BUILDING=1
"$bin/chain_cpu" rtt 2000 >"$bin/rtt"
POCL_DEVICES=pthread "$bin/chain_cpu" native "$n" | tee "$bin/native"
env ${POCLD_ENV:-} "$repo/tests/remote/pocld_fixture.sh" start "$bin/st" "${POCLD:-$build/pocld/pocld}" "$build" >/dev/null
port=$(sed -n 's/^POCLD_PORT=//p' "$bin/st" | head -n1)
listener=$(sed -n 's/^POCLD_PID=//p' "$bin/st" | head -n1)
counts=()
[[ ${COUNTS:-} == 1 ]] && counts=(perf stat -a -x, -o "$bin/counts"
  -e syscalls:sys_enter_sendmsg,syscalls:sys_enter_recvfrom,sched:sched_switch --)
POCL_DEVICES=remote POCL_REMOTE0_PARAMETERS=127.0.0.1:$port/0 "${counts[@]}" "$bin/chain_cpu" remote "$n" >"$bin/remote" &
waited=$!
# empty once the process is gone
ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || true; }
hz=$(getconf CLK_TCK)
sleep 1.5
client=$waited
[[ ${COUNTS:-} == 1 ]] && client=$(pgrep -n -P "$waited" || echo "$waited")
session=$(pgrep -n -P "$listener" || echo "$listener")
t0=$(date +%s%N) s0=$(ticks "$session") c0=$(ticks "$client")
sleep 3
t1=$(date +%s%N) s1=$(ticks "$session") c1=$(ticks "$client")
wait "$waited"
cat "$bin/remote"
"$bin/chain_cpu" rtt 2000 >>"$bin/rtt"
median() { sed -n 's/.*median \([0-9.]*\) us.*/\1/p' "$1"; }
awk -v nat="$(median "$bin/native")" -v rem="$(median "$bin/remote")" '
  { rtt += $3; k++ }
  END { printf "loopback round trip %.1f us (median, before and after); chain: remote / (native + RTT) = %.2fx\n",
        rtt / k, rem / (nat + rtt / k) }' "$bin/rtt"
if [[ -z $s0 || -z $s1 || -z $c0 || -z $c1 ]]; then
  echo "chain_cpu.sh: the remote run ended before its CPU sample (1.5 to 4.5 s): give more CHAINS" >&2
else
  awk -v w=$(((t1 - t0) / 1000)) -v s=$((s1 - s0)) -v c=$((c1 - c0)) -v hz="$hz" 'BEGIN {
    printf "over %.2f s of the remote run: pocld session %.2f s of CPU, the client %.2f s\n",
           w / 1e6, s / hz, c / hz }'
fi
if [[ ${COUNTS:-} == 1 ]]; then
  # chain_cpu runs 50 warm-up chains before the N it times
  awk -F, -v n=$((n + 50)) 'NF > 2 && !/^#/ { split($3, e, ":"); v[e[2]] = $1 / n }
    END { printf "per chain, whole machine, over the remote run: %.1f sendmsg, %.1f recvfrom, %.1f context switches\n",
          v["sys_enter_sendmsg"], v["sys_enter_recvfrom"], v["sched_switch"] }' "$bin/counts"
fi
