#!/usr/bin/env bash
# The cost of authentication and TLS (doc/security.md): four pocld on loopback, without
# either, with a pre-shared key, with TLS, with both, and tools/bench/remote_bench.c's
# --row against each: the loopback TCP round trip measured in the same run, no-op
# enqueue+finish latency (min, median, p99) and 64 MiB write/read bandwidth (median).
# The configurations take turns, ROUNDS times, so that machine noise hits all alike.
#   tools/bench_security.sh [ITERATIONS [ROUNDS]]
# Env: BUILD_DIR (default build, as for tools/build.sh).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$repo/build}/pocl
bench=$build/remote_bench
cc -O2 -Wall -o "$bench" "$repo/tools/bench/remote_bench.c" -lOpenCL -lpthread
iters=${1:-2000} rounds=${2:-3}

fixture=$repo/tests/remote/pocld_fixture.sh
work=$(mktemp -d)
configs=(plain psk tls psk+tls)
stop() {
  for c in "${configs[@]}"; do "$fixture" stop "$work/$c.state" >/dev/null 2>&1 || true; done
  rm -rf "$work"
}
trap stop EXIT

# A throwaway CA and a certificate for 127.0.0.1.
umask 077
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 \
  -subj /CN=bench-ca -keyout "$work/ca.key" -out "$work/ca.pem" >/dev/null 2>&1
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=pocld \
  -keyout "$work/server.key" -out "$work/server.csr" >/dev/null 2>&1
printf 'subjectAltName=IP:127.0.0.1\n' >"$work/san.ext"
openssl x509 -req -in "$work/server.csr" -CA "$work/ca.pem" -CAkey "$work/ca.key" \
  -CAcreateserial -days 1 -extfile "$work/san.ext" -out "$work/server.pem" >/dev/null 2>&1
openssl rand -hex 32 >"$work/key"

tls="--tls-cert $work/server.pem --tls-key $work/server.key"
declare -A args=([plain]="" [psk]="--psk-file $work/key" [tls]="$tls"
                 [psk+tls]="$tls --psk-file $work/key")
for c in "${configs[@]}"; do
  POCLD_EXTRA_ARGS="${args[$c]}" "$fixture" start "$work/$c.state" "$build/pocld/pocld" "$build" \
    2>/dev/null
done

export OCL_ICD_VENDORS=$build/ocl-vendors POCL_BUILDING=1 POCL_DEVICES="pthread remote"
printf '%-10s %10s %10s %10s %10s %10s %10s\n' "" "rtt us" "no-op min" "median" "p99" \
  "write GB/s" "read GB/s"
for ((r = 1; r <= rounds; r++)); do
  for c in "${configs[@]}"; do
    port=$(sed -n 's/^POCLD_PORT=//p' "$work/$c.state")
    env=(POCL_REMOTE0_PARAMETERS=127.0.0.1:$port/0)
    [[ $c == *psk* ]] && env+=(POCL_REMOTE_PSK_FILE=$work/key)
    [[ $c == *tls* ]] && env+=(POCL_REMOTE_TLS=1 POCL_REMOTE_TLS_CA=$work/ca.pem)
    env "${env[@]}" "$bench" "$iters" --row "$c"
  done
done
