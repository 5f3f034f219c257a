# local.sh - tools/bench.sh's subcommands on one machine: fresh pocld on
# loopback serving the build's pthread device, the same device natively in
# the benchmark's process as the reference.  Sourced by tools/bench.sh.
# Env for all: BUILD_DIR (default build, as for tools/build.sh), POCLD (the
# pocld to measure, default the build's), POCLD_ENV (VAR=VALUE words for
# pocld alone, e.g. LD_PRELOAD of another malloc).

set -euo pipefail
build=${BUILD_DIR:-$repo/build}/pocl
export OCL_ICD_VENDORS=$build/ocl-vendors POCL_BUILDING=1

# start_pocld NAME [POCLD_ARGS...]: a fresh pocld (tests/remote/pocld_fixture.sh),
# its state in $work/NAME.state and its log in $work/NAME.log.
start_pocld() {
  local name=$1
  shift
  # shellcheck disable=SC2086
  env ${POCLD_ENV:-} POCLD_EXTRA_ARGS="${POCLD_EXTRA_ARGS:-}${*:+ $*}" \
    "$fixture" start "$work/$name.state" "${POCLD:-$build/pocld/pocld}" "$build" \
    >/dev/null 2>>"$work/fixture.log" || { cat "$work/fixture.log" >&2; return 1; }
}
stop_pocld() { "$fixture" stop "$work/$1.state" >/dev/null 2>&1 || true; }
state_of() { sed -n "s/^$2=//p" "$work/$1.state" | head -n1; }
port_of() { state_of "$1" POCLD_PORT; }

# summary [ITERATIONS]
cmd_summary() {
  bench_cc "$work/remote_bench" remote_bench
  start_pocld a
  start_pocld b
  POCL_DEVICES="pthread remote remote" POCL_REMOTE0_PARAMETERS=127.0.0.1:$(port_of a)/0 \
    POCL_REMOTE1_PARAMETERS=127.0.0.1:$(port_of b)/0 "$work/remote_bench" "${1:-2000}"
}

# overhead [-n LOG2] [-i ITERATIONS] [-g] [-m MOVES] [PART...]; TRACE=1|DIR
cmd_overhead() {
  bench_cc "$work/overhead_bench" overhead_bench
  local out="" trace_env=()
  if [[ -n ${TRACE:-} ]]; then
    out=$work/trace
    [[ $TRACE == 1 ]] || out=$TRACE
    mkdir -p "$out"
    trace_env=(POCL_REMOTE_TRACE="$out/client.json")
  fi
  start_pocld a ${out:+--trace "$out/a"}
  start_pocld b ${out:+--trace "$out/b"}
  env "${trace_env[@]}" POCL_DEVICES="pthread remote remote" \
    POCL_REMOTE0_PARAMETERS=127.0.0.1:$(port_of a)/0 \
    POCL_REMOTE1_PARAMETERS=127.0.0.1:$(port_of b)/0 \
    "$work/overhead_bench" -n "${STREAM_LOG2:-25}" -i 2000 "$@"
  [[ -n $out ]] || return 0
  # a session writes its trace as it ends
  stop_pocld a
  stop_pocld b
  echo
  trace_sum "$out/merged.json" "$out/client.json" "$out/[ab].*.json"
}

# usm [ITERATIONS]: a launch on device, host and shared allocations
cmd_usm() {
  bench_cc "$work/usm_bench" usm_bench
  start_pocld a
  POCL_DEVICES="pthread remote" POCL_REMOTE0_PARAMETERS=127.0.0.1:$(port_of a)/0 \
    "$work/usm_bench" "${1:-500}"
}

# chain [CHAINS]; COUNTS=1
cmd_chain() {
  local n=${1:-8000} counts=() client session t0 t1 s0 s1 c0 c1 hz
  bench_cc "$work/chain_cpu" chain_cpu
  "$work/chain_cpu" rtt 2000 >"$work/rtt"
  POCL_DEVICES=pthread "$work/chain_cpu" native "$n" ${CHAIN_MODE:-} | tee "$work/native"
  start_pocld a
  [[ ${COUNTS:-} == 1 ]] && counts=(perf stat -a -x, -o "$work/counts"
    -e syscalls:sys_enter_sendmsg,syscalls:sys_enter_recvfrom,sched:sched_switch --)
  POCL_DEVICES=remote POCL_REMOTE0_PARAMETERS=127.0.0.1:$(port_of a)/0 \
    "${counts[@]}" "$work/chain_cpu" remote "$n" ${CHAIN_MODE:-} >"$work/remote" &
  client=$!
  # CPU ticks of a process, empty once it is gone
  ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || true; }
  hz=$(getconf CLK_TCK)
  sleep 1.5
  [[ ${COUNTS:-} == 1 ]] && client=$(pgrep -n -P "$client" || echo "$client")
  session=$(pgrep -n -P "$(state_of a POCLD_PID)" || state_of a POCLD_PID)
  t0=$(date +%s%N) s0=$(ticks "$session") c0=$(ticks "$client")
  sleep 3
  t1=$(date +%s%N) s1=$(ticks "$session") c1=$(ticks "$client")
  wait
  cat "$work/remote"
  "$work/chain_cpu" rtt 2000 >>"$work/rtt"
  median() { sed -n 's/.*median \([0-9.]*\) us.*/\1/p' "$1"; }
  awk -v nat="$(median "$work/native")" -v rem="$(median "$work/remote")" '
    { rtt += $3; k++ }
    END { printf "loopback round trip %.1f us (median, before and after); chain: remote / (native + RTT) = %.2fx\n",
          rtt / k, rem / (nat + rtt / k) }' "$work/rtt"
  if [[ -z $s0 || -z $s1 || -z $c0 || -z $c1 ]]; then
    echo "bench.sh chain: the remote run ended before its CPU sample (1.5 to 4.5 s): give more CHAINS" >&2
  else
    awk -v w=$(((t1 - t0) / 1000)) -v s=$((s1 - s0)) -v c=$((c1 - c0)) -v hz="$hz" 'BEGIN {
      printf "over %.2f s of the remote run: pocld session %.2f s of CPU, the client %.2f s\n",
             w / 1e6, s / hz, c / hz }'
  fi
  if [[ ${COUNTS:-} == 1 ]]; then
    # chain_cpu runs 50 warm-up chains before the N it times
    awk -F, -v n=$((n + 50)) 'NF > 2 && !/^#/ { split($3, e, ":"); v[e[2]] = $1 / n }
      END { printf "per chain, whole machine, over the remote run: %.1f sendmsg, %.1f recvfrom, %.1f context switches\n",
            v["sys_enter_sendmsg"], v["sys_enter_recvfrom"], v["sched_switch"] }' "$work/counts"
  fi
}

# sycl-chain [CHAINS]: the chain as a SYCL runtime submits it (chain_cpu.c, "events")
cmd_sycl_chain() {
  CHAIN_MODE=events cmd_chain "$@"
}

# sycl-dpnp [N [REPS]]: dpnp_bench.py's workloads natively on Intel's OpenCL CPU
# runtime, then through remote on a pocld serving that runtime; BUILD_DIR's venv-sycl
# (tests/clients/setup_sycl.sh) and vendors/intel.
cmd_sycl_dpnp() {
  local root=${BUILD_DIR:-$repo/build} rc=0
  local py=$root/venv-sycl/bin/python vendors=$root/vendors/intel
  [[ -x $py && -f $vendors/intel-cpu.icd ]] \
    || { echo "bench.sh sycl-dpnp: no $py or $vendors (tools/setup.sh)" >&2; return 1; }
  bench_cc "$work/chain_cpu" chain_cpu
  "$work/chain_cpu" rtt 2000 >"$work/rtt"
  # '*:cpu': a selector naming the opencl backend finds nothing with this runtime
  # (doc/clients.md, SYCL); each run has one OpenCL platform.
  OCL_ICD_VENDORS=$vendors ONEAPI_DEVICE_SELECTOR='*:cpu' \
    "$py" "$repo/tools/bench/dpnp_bench.py" native "$@" | tee "$work/native"
  POCLD_SERVED_VENDORS=$vendors start_pocld a
  POCL_DEVICES=remote POCL_REMOTE0_PARAMETERS=127.0.0.1:$(port_of a)/0 \
    ONEAPI_DEVICE_SELECTOR='*:cpu' "$py" "$repo/tools/bench/dpnp_bench.py" remote "$@" \
    | tee "$work/remote" || rc=$?
  "$work/chain_cpu" rtt 2000 >>"$work/rtt"
  awk '{ rtt += $3; k++ } END { printf "loopback round trip %.1f us (median, before and after)\n", rtt / k }' \
    "$work/rtt" | tee "$work/rtt.avg"
  if ((rc != 0)); then
    echo "bench.sh sycl-dpnp: the remote run failed (above): no ratios" >&2
    return "$rc"
  fi
  # median ms per workload: "LABEL NAME SIZE: median X ms ..."
  awk -v rtt="$(awk '{ print $4 }' "$work/rtt.avg")" '
    $4 == "median" { t[$1, $2] = $5; s = $3; sub(/:$/, "", s); size[$2] = s; names[$2] = 1 }
    END { for (w in names)
            printf "%s %s remote / native = %.2fx (remote - native = %.0f loopback round trips)\n",
                   w, size[w], t["remote", w] / t["native", w],
                   (t["remote", w] - t["native", w]) * 1000 / rtt }' \
    "$work/native" "$work/remote"
}

# matmul [N]
cmd_matmul() {
  local n=${1:-512} matmul one two t1 t2
  matmul=$(sed -n 's/^REMOTE_VECADD=//p' "$build/tests/remote/paths.env")
  matmul=$(dirname "$matmul")/remote_matmul
  start_pocld a
  start_pocld b
  export POCL_DEVICES="remote remote" POCL_REMOTE0_PARAMETERS=127.0.0.1:$(port_of a)/0 \
    POCL_REMOTE1_PARAMETERS=127.0.0.1:$(port_of b)/0
  one=$("$matmul" "$n" 1 3)
  two=$("$matmul" "$n" 2 3)
  echo "$one"
  echo "$two"
  t1=$(sed -n 's/.*best \([0-9.]*\) ms/\1/p' <<<"$one")
  t2=$(sed -n 's/.*best \([0-9.]*\) ms/\1/p' <<<"$two")
  awk -v a="$t1" -v b="$t2" 'BEGIN {
    printf "matmul speedup, 2 servers over 1: %.2fx (efficiency %.0f%%)\n", a / b, 50 * a / b }'
}

# reconnect [ROUNDS]
cmd_reconnect() {
  bench_cc "$work/remote_bench" remote_bench
  start_pocld a
  "$build/tests/remote/fault_proxy" --target "127.0.0.1:$(port_of a)" --listen-port 0 \
    --port-file "$work/proxy.port" --control "$work/proxy.ctl" >"$work/proxy.log" 2>&1 &
  bench_pids+=($!)
  for _ in $(seq 100); do
    [[ -s $work/proxy.port ]] && break
    sleep 0.1
  done
  POCL_DEVICES="pthread remote" \
    POCL_REMOTE0_PARAMETERS=127.0.0.1:$(sed -n 's/^PROXY_PORT=//p' "$work/proxy.port")/0 \
    "$work/remote_bench" --reconnect "$work/proxy.ctl" "${1:-50}"
}

# security [ITERATIONS [ROUNDS]]
cmd_security() {
  local iters=${1:-2000} rounds=${2:-3} configs=(plain psk tls psk+tls) c r tls env
  bench_cc "$work/remote_bench" remote_bench
  # a throwaway CA and a certificate for 127.0.0.1
  (umask 077
   openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 \
     -subj /CN=bench-ca -keyout "$work/ca.key" -out "$work/ca.pem"
   openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=pocld \
     -keyout "$work/server.key" -out "$work/server.csr"
   printf 'subjectAltName=IP:127.0.0.1\n' >"$work/san.ext"
   openssl x509 -req -in "$work/server.csr" -CA "$work/ca.pem" -CAkey "$work/ca.key" \
     -CAcreateserial -days 1 -extfile "$work/san.ext" -out "$work/server.pem"
   openssl rand -hex 32 >"$work/key") >/dev/null 2>&1
  tls="--tls-cert $work/server.pem --tls-key $work/server.key"
  declare -A args=([plain]="" [psk]="--psk-file $work/key" [tls]="$tls"
                   [psk+tls]="$tls --psk-file $work/key")
  for c in "${configs[@]}"; do
    # shellcheck disable=SC2086
    start_pocld "$c" ${args[$c]}
  done
  printf '%-10s %10s %10s %10s %10s %10s %10s\n' "" "rtt us" "no-op min" "median" "p99" \
    "write GB/s" "read GB/s"
  for ((r = 1; r <= rounds; r++)); do
    for c in "${configs[@]}"; do
      env=("POCL_REMOTE0_PARAMETERS=127.0.0.1:$(port_of "$c")/0")
      [[ $c == *psk* ]] && env+=(POCL_REMOTE_PSK_FILE="$work/key")
      [[ $c == *tls* ]] && env+=(POCL_REMOTE_TLS=1 POCL_REMOTE_TLS_CA="$work/ca.pem")
      env "${env[@]}" POCL_DEVICES="pthread remote" "$work/remote_bench" "$iters" --row "$c"
    done
  done
}

# transports [ITERATIONS [WAY...]]
cmd_transports() {
  local iters=${1:-2000} ways way env args
  shift || true
  ways=("$@")
  ((${#ways[@]})) ||
    ways=(link lanes ucx-tcp ucx-shm client-inline client-lanes client-ucx-tcp client-ucx-shm)
  bench_cc "$work/remote_bench" remote_bench
  for way in "${ways[@]}"; do
    case $way in
      link) env=(POCLD_PEER_LANES=0) args="--ucx off" ;;
      lanes) env=(POCLD_PEER_LANES="${POCLD_PEER_LANES:-2}") args="--ucx off" ;;
      ucx-tcp) env=(POCLD_PEER_LANES=0 UCX_TLS=tcp) args="--ucx on" ;;
      ucx-shm) env=(POCLD_PEER_LANES=0 UCX_TLS=sm,self) args="--ucx on" ;;
      client-inline) env=(POCL_REMOTE_LANES=0) args="--ucx off" ;;
      client-lanes) env=(POCL_REMOTE_LANES="${POCL_REMOTE_LANES:-2}") args="--ucx off" ;;
      client-ucx-tcp) env=(POCL_REMOTE_LANES=0 POCL_REMOTE_UCX=1 UCX_TLS=tcp) args="--ucx on" ;;
      client-ucx-shm) env=(POCL_REMOTE_LANES=0 POCL_REMOTE_UCX=1 UCX_TLS=sm,self) args="--ucx on" ;;
      *) echo "bench.sh transports: unknown way $way" >&2; exit 2 ;;
    esac
    # shellcheck disable=SC2086
    (export "${env[@]}"; start_pocld a $args)
    if [[ $way == client-* ]]; then
      env "${env[@]}" POCL_DEVICES="pthread remote" POCL_REMOTE0_PARAMETERS=127.0.0.1:$(port_of a)/0 \
        "$work/remote_bench" "$iters" --client "$way"
    else
      # shellcheck disable=SC2086
      (export "${env[@]}"; start_pocld b $args)
      POCL_DEVICES="pthread remote remote" POCL_REMOTE0_PARAMETERS=127.0.0.1:$(port_of a)/0 \
        POCL_REMOTE1_PARAMETERS=127.0.0.1:$(port_of b)/0 \
        "$work/remote_bench" "$iters" --migrations "$way"
      stop_pocld b
    fi
    stop_pocld a
  done
}

# pointcloud [FRAMES [WIDTH HEIGHT]]
cmd_pointcloud() {
  local frames=${1:-60} w=${2:-160} h=${3:-120} example clip au_max tool a b lines=() l names
  example=$build/examples/remote/remote_pointcloud
  for tool in ffmpeg "$example"; do
    command -v "$tool" >/dev/null || { echo "bench.sh pointcloud: $tool not found" >&2; exit 1; }
  done
  # a failure's why is in the servers' logs, which go with $work
  on_failure() {
    local s
    for s in a b; do
      [[ -f $work/$s.log ]] && { echo "== pocld $s's log" >&2; tail -n 40 "$work/$s.log" >&2; }
    done
  }
  # a depth-like clip: 30 frames, no B-frames (one frame out per access unit in)
  clip=$work/depth.hevc
  ffmpeg -loglevel error -f lavfi -i "testsrc2=size=${w}x${h}:rate=30" -frames:v 30 \
    -pix_fmt yuv420p -c:v libx265 -x265-params log-level=error:bframes=0 -f hevc "$clip"
  au_max=$(ffprobe -loglevel error -select_streams v -show_entries packet=size -of csv=p=0 "$clip" \
    | sort -n | tail -n1)
  echo "bench_pointcloud: clip ${w}x${h}, 30 frames, $(stat -c %s "$clip") bytes" \
    "($(($(stat -c %s "$clip") / 30)) per frame, largest access unit $au_max bytes), played in a loop"
  export POCL_STREAM0_PARAMETERS="$clip,chunk=hevc,loop"
  POCLD_SERVED_DEVICES="stream" start_pocld a
  POCLD_SERVED_DEVICES="pthread hevc" start_pocld b
  a=127.0.0.1:$(port_of a) b=127.0.0.1:$(port_of b)
  # pocld numbers a platform's CUSTOM devices after its others: on B, pthread
  # is 0 and hevc 1 (doc/pocld.md)
  remote() {
    POCL_DEVICES="remote remote remote" POCL_REMOTE0_PARAMETERS=$a/0 \
      POCL_REMOTE1_PARAMETERS=$b/1 POCL_REMOTE2_PARAMETERS=$b/0 \
      "$example" "$w" "$h" "$frames" "$1"
  }
  lines+=("1 $(remote client)")
  lines+=("2 $(remote p2p)")
  lines+=("3 $(remote size)")
  lines+=("4 $(POCL_DEVICES="pthread stream hevc" "$example" "$w" "$h" "$frames" size)")
  printf '%s\n' "${lines[@]}"
  echo
  echo "| configuration | frames/s | client link bytes/frame | server-to-server bytes/frame |"
  echo "|---|---|---|---|"
  names=("" "1. everything through the client" "2. P2P" "3. P2P with content size" "4. all on the client")
  for l in "${lines[@]}"; do
    # "N pointcloud: F frames WxH mode M: FPS fps, C client bytes/frame, P peer ..."
    # shellcheck disable=SC2086
    set -- $l
    printf '| %s | %s | %s | %s |\n' "${names[$1]}" "${8}" "${10}" "${13}"
  done
}

# sycl [N [REPS]]: the three figures of SYCL applications in one run: dpnp's
# workloads (sycl-dpnp, Intel's runtime), then the out-of-order event chain and the
# 100-kernel command buffer (overhead's parts events and cmdbuf, pthread).
cmd_sycl() {
  "$self" sycl-dpnp "$@"
  echo
  "$self" overhead events cmdbuf
}

# all [ITERATIONS [MATMUL_N]]
cmd_all() {
  local iters=${1:-2000}
  "$self" summary "$iters"
  echo
  "$self" overhead -i "$iters"
  echo
  "$self" matmul "${2:-512}"
  echo
  "$self" reconnect
  echo
  "$self" security "$iters"
}

# ab ROUNDS SIDE SIDE... -- SUBCOMMAND [ARGS...]
cmd_ab() {
  local rounds=${1:-} sides=() r s
  shift || true
  while (($#)) && [[ $1 != -- ]]; do
    sides+=("$1")
    shift
  done
  if [[ ! $rounds =~ ^[0-9]+$ || ${#sides[@]} -lt 2 || ${1:-} != -- || $# -lt 2 ]]; then
    echo "usage: tools/bench.sh ab ROUNDS SIDE SIDE... -- SUBCOMMAND [ARGS...]" >&2
    exit 2
  fi
  shift
  for ((r = 1; r <= rounds; ++r)); do
    for s in "${sides[@]}"; do
      echo "== round $r, ${s:--}"
      # shellcheck disable=SC2086
      env ${s#-} "$self" "$@" || echo "== round $r, ${s:--}: failed"
    done
  done
}
