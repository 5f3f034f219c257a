#!/usr/bin/env bash
# remote/proxy_*: a client talks to the fixture's pocld through tools/fault_proxy.cc.
#   test_proxy.sh NAME PROXY RUN_REMOTE STATE BUILD WORK [PROXY_ARGS...] -- CLIENT [ARGS...]
# Starts the proxy in front of the pocld of STATE (its own free loopback port pair, log
# WORK/NAME.proxy.log), runs CLIENT through run_remote.sh pointed at the proxy, stops the
# proxy. PROXY_ARGS are the proxy's (--cut ..., --random ..., --seed ...). The special
# proxy argument --cut-when-connected has the test tell the proxy's control socket
# "cut all" once the client's data socket is through it.
# Exit 0 only when the client exited 0 within its bound; with cuts expected (any --cut,
# --random or --cut-when-connected) the proxy must also have logged a cut, without them
# it must have logged none; --min-cuts N (a test argument, not the proxy's): at least N;
# --cuts-by-client: the client itself has the proxy cut (through its control socket);
# --expect-log REGEX: the proxy's log must match it (e.g. a cut inside a striped payload).
# "NAME: PASS" or "NAME: FAIL: reason" on stdout.
set -uo pipefail

name=$1 proxy=$2 run_remote=$3 state=$4 build=$5 work=$6
shift 6
proxy_args=() cut_expected=0 cut_when_connected=0 min_cuts=1 expect_log=
while [[ $# -gt 0 && $1 != -- ]]; do
  case $1 in
    --min-cuts) shift; min_cuts=$1 ;;
    --expect-log) shift; expect_log=$1 ;;
    --cuts-by-client) cut_expected=1 ;;
    --cut-when-connected) cut_when_connected=1 cut_expected=1 ;;
    --cut|--random) cut_expected=1; proxy_args+=("$1") ;;
    *) proxy_args+=("$1") ;;
  esac
  shift
done
[[ $# -ge 2 && $1 == -- ]] || { sed -n '3,3p' "$0" | sed 's/^# //' >&2; exit 2; }
shift

fail() { echo "$name: FAIL: $*"; echo "---- proxy log ----"; cat "$plog" 2>/dev/null; exit 1; }
[[ -f $state ]] || { echo "$name: FAIL: no pocld state file $state"; exit 1; }
port=$(sed -n 's/^POCLD_PORT=//p' "$state" | head -n1)
mkdir -p "$work"
plog=$work/$name.proxy.log pfile=$work/$name.proxy.port ctl=$work/$name.ctl
pstate=$work/$name.state
rm -f "$pfile" "$ctl"

"$proxy" --target "127.0.0.1:$port" --listen-port 0 --port-file "$pfile" --control "$ctl" \
  "${proxy_args[@]}" >"$plog" 2>&1 &
ppid_=$!
trap 'kill "$ppid_" 2>/dev/null; wait "$ppid_" 2>/dev/null' EXIT
for _ in $(seq 1 100); do
  [[ -s $pfile ]] && break
  kill -0 "$ppid_" 2>/dev/null || fail "the proxy exited at start"
  sleep 0.1
done
pport=$(sed -n 's/^PROXY_PORT=//p' "$pfile")
[[ -n $pport ]] || fail "the proxy did not report its port within 10 s"
# run_remote.sh takes the port from a state file: the fixture's, with the proxy's port.
sed "s/^POCLD_PORT=.*/POCLD_PORT=$pport/" "$state" >"$pstate"

if [[ $cut_when_connected == 1 ]]; then
  (
    for _ in $(seq 1 600); do
      grep -q 'data#1 connected' "$plog" 2>/dev/null && break
      sleep 0.1
    done
    python3 - "$ctl" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(b"cut all\n")
print("control:", s.recv(100).decode().strip())
PY
  ) &
  cutter=$!
fi

timeout -k 5 200 "$run_remote" "$pstate" "$build" "$@"
rc=$?
[[ -n ${cutter:-} ]] && wait "$cutter"
kill "$ppid_" 2>/dev/null
wait "$ppid_" 2>/dev/null
trap - EXIT
if [[ $rc == 124 || $rc == 137 ]]; then
  fail "the client hung (killed by timeout after 200 s)"
elif ((rc > 128)); then
  fail "the client died from signal $((rc - 128))"
elif [[ $rc != 0 ]]; then
  fail "the client failed (exit status $rc; its reason is above)"
fi
cuts=$(grep -c '^fault_proxy: cut ' "$plog")
if [[ $cut_expected == 1 && $cuts -lt $min_cuts ]]; then
  fail "the proxy made $cuts cuts, fewer than $min_cuts"
elif [[ $cut_expected == 0 && $cuts != 0 ]]; then
  fail "the proxy cut a connection in pass-through mode"
fi
[[ -z $expect_log ]] || grep -qE "$expect_log" "$plog" || fail "no '$expect_log' in the proxy log"
grep '^fault_proxy: cut ' "$plog" | head -n 20
echo "$name: PASS ($cuts cuts)"
