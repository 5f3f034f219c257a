#!/usr/bin/env bash
# remote/tls: TLS on the client<->pocld sockets (doc/security.md) with pocld processes
# of its own and a throwaway CA made here with the openssl command.
#   test_tls.sh FIXTURE RUN_REMOTE POCLD BUILD_DIR VECADD MULTI_SERVER_SH MULTI_CLIENT WORK_DIR
#               FAULT_PROXY CUT_CLIENT
# 1. A pocld with --tls-cert: a TLS client that trusts the CA is served, bit-exact,
#    with 1 MiB buffers (data socket) and 12 MiB ones (writes and reads in 4 MiB parts),
#    and with a pre-shared key on top; a plain client is refused (pocld log line, no
#    hang); a client trusting another CA refuses the server (driver message, pocld log
#    line); a client with the wrong host name for the certificate (localhost) refuses
#    it; the next TLS client is served.
# 2. A TLS client refuses a pocld without TLS, which logs why.
# 3. Two pocld with TLS as peers (test_multi_server.sh lanes): the peer links and their
#    lanes use TLS.  Where pocld has UCX: with --ucx on, TLS peers decline it, and use
#    it with --tls-allow-ucx.
# 4. A TLS client whose connections fault_proxy cuts three times resumes its session over
#    TLS each time (test_connection_cut: every word and the counter exact).
# PASS/FAIL line on stdout; exit 0 only on PASS. Asserts outcomes, never timings.
set -u

name=tls
if [[ $# -ne 10 ]]; then
  sed -n '3,3p' "$0" | sed 's/^# //' >&2
  exit 2
fi
fixture=$1 run_remote=$2 pocld=$3 build=$4 vecadd=$5 multi_sh=$6 multi_client=$7 work=$8
proxy=$9 cut_client=${10}
rm -rf "$work"
mkdir -p "$work"
fail() { echo "$name: FAIL: $*"; exit 1; }
started=() proxy_pid=
cleanup() {
  [[ -n $proxy_pid ]] && kill "$proxy_pid" 2>/dev/null
  for s in "${started[@]}"; do "$fixture" stop "$s" >/dev/null 2>&1 || true; done
}
trap cleanup EXIT
command -v openssl >/dev/null || fail "no openssl command"

umask 077
# A CA, a server certificate it signs for 127.0.0.1 (not for localhost), and another CA.
ca() { # NAME
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
    -subj "/CN=$1" -keyout "$work/$1.key" -out "$work/$1.pem" >/dev/null 2>&1 \
    || fail "openssl: cannot make the CA $1"
}
ca test-ca
ca other-ca
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=pocld" \
  -keyout "$work/server.key" -out "$work/server.csr" >/dev/null 2>&1 \
  || fail "openssl: cannot make the server key"
printf 'subjectAltName=IP:127.0.0.1\n' >"$work/san.ext"
openssl x509 -req -in "$work/server.csr" -CA "$work/test-ca.pem" -CAkey "$work/test-ca.key" \
  -CAcreateserial -days 2 -extfile "$work/san.ext" -out "$work/server.pem" >/dev/null 2>&1 \
  || fail "openssl: cannot sign the server certificate"
key=$work/key
echo "3f1c0d6e8a2b4c5d9e7f00112233445566778899aabbccddeeff001122334455" >"$key"
tls_args="--tls-cert $work/server.pem --tls-key $work/server.key --tls-ca $work/test-ca.pem"

start() { # STATE [extra pocld args]
  local state=$1
  shift
  POCLD_EXTRA_ARGS="$*" "$fixture" start "$state" "$pocld" "$build" || fail "cannot start pocld $*"
  started+=("$state")
}
client() { # STATE LOGFILE N [env assignments...] ; vecadd N through the pocld
  local state=$1 out=$2 n=$3
  shift 3
  # POCL_DEBUG=err: the driver's refusal messages (POCL_MSG_ERR) are printed.
  env -u POCL_REMOTE_PSK -u POCL_REMOTE_PSK_FILE -u POCL_REMOTE_TLS -u POCL_REMOTE_TLS_CA \
    POCL_DEBUG=err "$@" timeout -k 5 120 "$run_remote" "$state" "$build" "$vecadd" "$n" \
    >"$out" 2>&1
}
served() { # OUTFILE N
  grep -q "vecadd: verified $2" "$1" || fail "no verified run in $1: $(tail -n 3 "$1")"
}
refused() { # WHAT OUTFILE ; the client must have failed, not timed out
  [[ $rc != 0 ]] || fail "$1 was served"
  [[ $rc != 124 && $rc != 137 ]] || fail "$1: the client hung (timeout)"
}

# 1. A pocld with TLS.
start "$work/tls.state" $tls_args
log=$(sed -n 's/^POCLD_LOG=//p' "$work/tls.state")
grep -q "TLS required" "$log" || fail "pocld does not say that it requires TLS"
client "$work/tls.state" "$work/small.out" 4096 POCL_REMOTE_TLS=1 POCL_REMOTE_TLS_CA="$work/test-ca.pem" \
  || fail "TLS client refused: $(tail -n 3 "$work/small.out")"
served "$work/small.out" 4096
# 262144 floats: 1 MiB per buffer, written and read on the data socket.
client "$work/tls.state" "$work/large.out" 262144 POCL_REMOTE_TLS=1 \
  POCL_REMOTE_TLS_CA="$work/test-ca.pem" || fail "TLS client, 1 MiB: $(tail -n 3 "$work/large.out")"
served "$work/large.out" 262144
# 3145728 floats: 12 MiB per buffer, written in 4 MiB parts and read as READ_DATA parts,
# striped over the data socket and two lanes, each a TLS connection of its own.
client "$work/tls.state" "$work/parts.out" 3145728 POCL_REMOTE_TLS=1 POCL_REMOTE_LANES=2 \
  POCL_REMOTE_TLS_CA="$work/test-ca.pem" || fail "TLS client, 12 MiB: $(tail -n 3 "$work/parts.out")"
served "$work/parts.out" 3145728
grep -q "data socket from" "$log" || fail "no data socket in the pocld log"
grep -q "lane 2 attached" "$log" || fail "no TLS lanes in the pocld log"
echo "$name: TLS clients served (4096, 262144 and 3145728 elements, bit-exact)"

client "$work/tls.state" "$work/plain.out" 4096; rc=$?
refused "a plain client of a TLS server" "$work/plain.out"
grep -q "client does not use TLS" "$log" || fail "plain client: no pocld log line"

client "$work/tls.state" "$work/wrong_ca.out" 4096 POCL_REMOTE_TLS=1 \
  POCL_REMOTE_TLS_CA="$work/other-ca.pem"; rc=$?
refused "a client trusting another CA" "$work/wrong_ca.out"
grep -q "TLS with pocld at .* failed: certificate verify failed" "$work/wrong_ca.out" \
  || fail "wrong CA: no driver message; output: $(tail -n 3 "$work/wrong_ca.out")"
grep -q "TLS handshake failed" "$log" || fail "wrong CA: no pocld log line"

# The certificate is for 127.0.0.1, not for localhost (the same server).
port=$(sed -n 's/^POCLD_PORT=//p' "$work/tls.state")
env -u POCL_REMOTE_PSK -u POCL_REMOTE_PSK_FILE POCL_DEBUG=err POCL_DEVICES=remote \
  POCL_REMOTE0_PARAMETERS="localhost:$port/0" OCL_ICD_VENDORS="$build/ocl-vendors" \
  POCL_BUILDING=1 POCL_REMOTE_TLS=1 POCL_REMOTE_TLS_CA="$work/test-ca.pem" \
  timeout -k 5 120 "$vecadd" 4096 >"$work/wrong_name.out" 2>&1; rc=$?
refused "a client naming the server by another address" "$work/wrong_name.out"
grep -q "certificate verify failed" "$work/wrong_name.out" \
  || fail "wrong name: no driver message; output: $(tail -n 3 "$work/wrong_name.out")"

client "$work/tls.state" "$work/again.out" 4096 POCL_REMOTE_TLS=1 \
  POCL_REMOTE_TLS_CA="$work/test-ca.pem" || fail "pocld did not serve a TLS client after the refusals"
served "$work/again.out" 4096
echo "$name: a plain client, a client trusting another CA and one with another name refused; the next served"

# The same with a pre-shared key on top.
start "$work/both.state" $tls_args --psk-file "$key"
client "$work/both.state" "$work/both.out" 262144 POCL_REMOTE_TLS=1 \
  POCL_REMOTE_TLS_CA="$work/test-ca.pem" POCL_REMOTE_PSK_FILE="$key" \
  || fail "TLS and key refused: $(tail -n 3 "$work/both.out")"
served "$work/both.out" 262144
client "$work/both.state" "$work/both_nokey.out" 4096 POCL_REMOTE_TLS=1 \
  POCL_REMOTE_TLS_CA="$work/test-ca.pem"; rc=$?
refused "a TLS client without the key" "$work/both_nokey.out"
echo "$name: TLS with a pre-shared key served, TLS without the key refused"

# 2. A TLS client and a pocld without TLS.
start "$work/plain.state"
plog=$(sed -n 's/^POCLD_LOG=//p' "$work/plain.state")
client "$work/plain.state" "$work/no_tls.out" 4096 POCL_REMOTE_TLS=1 \
  POCL_REMOTE_TLS_CA="$work/test-ca.pem"; rc=$?
refused "a TLS client of a plain server" "$work/no_tls.out"
grep -q "TLS with pocld at .* failed" "$work/no_tls.out" \
  || fail "plain server: no driver message; output: $(tail -n 3 "$work/no_tls.out")"
grep -q "client asks for TLS" "$plog" || fail "plain server: no pocld log line"
echo "$name: a TLS client refuses a server without TLS"

# 3. Peers with TLS.
POCLD_EXTRA_ARGS="$tls_args" POCL_REMOTE_TLS=1 POCL_REMOTE_TLS_CA="$work/test-ca.pem" \
  "$multi_sh" "$fixture" "$pocld" "$build" "$multi_client" "$work/multi" lanes \
  >"$work/multi.out" 2>&1 || fail "multi_server lanes with TLS: $(tail -n 5 "$work/multi.out")"
grep -rqs "peer [0-9]* connected" "$work/multi" || fail "no TLS peer link in the pocld logs"
bad='refused the connection|TLS handshake failed|does not use TLS'
if grep -Eqs "$bad" "$work/multi"/*.log; then
  fail "a peer link was refused: $(grep -Ehs "$bad" "$work/multi"/*.log | head -n 2)"
fi
echo "$name: two servers with TLS link as peers"
# UCX's bytes are not encrypted: TLS peers decline it, unless --tls-allow-ucx.
if ldd "$pocld" | grep -q libucp; then
  for allow in "" --tls-allow-ucx; do
    mode=ucx_refused
    [[ -n $allow ]] && mode=ucx
    POCLD_EXTRA_ARGS="$tls_args $allow" POCL_REMOTE_TLS=1 POCL_REMOTE_TLS_CA="$work/test-ca.pem" \
      "$multi_sh" "$fixture" "$pocld" "$build" "$multi_client" "$work/multi-$mode" "$mode" \
      >"$work/multi-$mode.out" 2>&1 || fail "multi_server $mode with TLS: $(tail -n 5 "$work/multi-$mode.out")"
  done
  echo "$name: TLS peers decline UCX, and use it with --tls-allow-ucx"
fi

# 4. Resume over TLS: fault_proxy in front of the TLS pocld cuts every connection on
#    command (its control socket), three times once the session is busy.
"$proxy" --target "127.0.0.1:$port" --listen-port 0 --port-file "$work/proxy.port" \
  --control "$work/proxy.ctl" >"$work/proxy.log" 2>&1 &
proxy_pid=$!
for _ in $(seq 1 100); do [[ -s $work/proxy.port ]] && break; sleep 0.1; done
pport=$(sed -n 's/^PROXY_PORT=//p' "$work/proxy.port")
[[ -n $pport ]] || fail "fault_proxy did not start: $(cat "$work/proxy.log")"
printf 'POCLD_PORT=%s\n' "$pport" >"$work/proxy.state"
data_before=$(grep -c "data socket from" "$log")
resumes_before=$(grep -c "resumed from" "$log")
env -u POCL_REMOTE_PSK -u POCL_REMOTE_PSK_FILE POCL_DEBUG=err POCL_REMOTE_TLS=1 \
  POCL_REMOTE_TLS_CA="$work/test-ca.pem" POCL_REMOTE_RECONNECT_TIMEOUT_MS=60000 \
  timeout -k 5 200 "$run_remote" "$work/proxy.state" "$build" "$cut_client" 3000 16384 \
  >"$work/resume.out" 2>&1 &
cpid=$!
for _ in $(seq 1 300); do
  [[ $(grep -c "data socket from" "$log") -gt $data_before ]] && break
  sleep 0.1
done
for cut in 1 2 3; do
  sleep 0.5
  python3 - "$work/proxy.ctl" <<'PY' || fail "fault_proxy's control socket did not take 'cut all'"
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(b"cut all\n")
sys.exit(0 if s.recv(128).startswith(b"ok") else 1)
PY
done
wait "$cpid" || fail "client through the cuts: $(tail -n 5 "$work/resume.out")"
grep -q "connection_cut: PASS" "$work/resume.out" || fail "client: $(tail -n 5 "$work/resume.out")"
resumes=$(( $(grep -c "resumed from" "$log") - resumes_before ))
[[ $resumes -ge 1 ]] || fail "pocld logged no resume over TLS"
echo "$name: a TLS client resumed its session $resumes times through cuts, every result exact"
echo "$name: PASS"
