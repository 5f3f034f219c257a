#!/usr/bin/env bash
# remote/trace: the command trace of doc/tracing.md end to end.
#   test_trace.sh FIXTURE POCLD BUILD_DIR CLIENT WORK_DIR REPO
# Starts two pocld with --trace, runs CLIENT (test_trace.c: a write, a chain of
# kernels and a read on the first server, a migration to the second and a kernel
# and a read there) with POCL_REMOTE_TRACE, stops the servers (their session
# processes write their traces at the session's end), merges the three files with
# tools/trace_merge.py and checks the result with test_trace.py.  Then once more with
# the client holding its sessions open while the servers are stopped: their session
# processes must write complete traces on SIGTERM.
# PASS/FAIL line on stdout; exit 0 only on PASS.
set -u
name=trace
if [[ $# -ne 6 ]]; then
  sed -n '3,3p' "$0" | sed 's/^# //' >&2
  exit 2
fi
fixture=$1 pocld=$2 build=$3 client=$4 work=$5 repo=$6
fail() { echo "$name: FAIL: $*"; exit 1; }
rm -rf "$work"
mkdir -p "$work"
states=("$work/a.state" "$work/b.state")
cleanup() {
  local s
  for s in "${states[@]}"; do
    [[ -f $s ]] && "$fixture" stop "$s" >/dev/null 2>&1
  done
  return 0
}
trap cleanup EXIT

for x in a b; do
  POCLD_EXTRA_ARGS="--trace $work/server_$x" "$fixture" start "$work/$x.state" "$pocld" "$build" \
    || fail "pocld $x did not start"
done
port() { sed -n 's/^POCLD_PORT=//p' "$1" | head -n1; }
OCL_ICD_VENDORS=$build/ocl-vendors POCL_BUILDING=1 POCL_DEVICES="remote remote" \
  POCL_REMOTE0_PARAMETERS=127.0.0.1:$(port "$work/a.state")/0 \
  POCL_REMOTE1_PARAMETERS=127.0.0.1:$(port "$work/b.state")/0 \
  POCL_REMOTE_TRACE=$work/client.json timeout -k 5 120 "$client" \
  || fail "the client failed (exit status $?)"
cleanup
states=()

[[ -s $work/client.json ]] || fail "the client wrote no trace"
shopt -s nullglob
servers=("$work"/server_*.json)
[[ ${#servers[@]} == 2 ]] || fail "expected 2 server traces, found: ${servers[*]}"
python3 "$repo/tools/trace_merge.py" -o "$work/merged.json" "$work/client.json" "${servers[@]}" \
  || fail "trace_merge.py failed"
python3 "$repo/tests/remote/test_trace.py" "$work/merged.json" 262144 13 || exit 1

states=("$work/c.state")
POCLD_EXTRA_ARGS="--trace $work/held" "$fixture" start "$work/c.state" "$pocld" "$build" \
  || fail "pocld c did not start"
OCL_ICD_VENDORS=$build/ocl-vendors POCL_BUILDING=1 POCL_DEVICES=remote \
  POCL_REMOTE0_PARAMETERS=127.0.0.1:$(port "$work/c.state")/0 \
  timeout -k 5 90 "$client" hold >"$work/held.out" 2>&1 &
held_pid=$!
for _ in $(seq 1 600); do
  grep -q "holding" "$work/held.out" && break
  kill -0 "$held_pid" 2>/dev/null || break
  sleep 0.1
done
grep -q "holding" "$work/held.out" || fail "the holding client did not get there: $(cat "$work/held.out")"
cleanup
states=()
kill "$held_pid" 2>/dev/null
wait "$held_pid" 2>/dev/null
held=("$work"/held.*.json)
[[ ${#held[@]} == 1 ]] || fail "expected 1 trace of the stopped server, found: ${held[*]}"
python3 - "${held[0]}" <<'PY' || fail "the trace written on SIGTERM is incomplete"
import json, sys
d = json.load(open(sys.argv[1]))
names = {e["name"] for e in d["traceEvents"] if e["ph"] == "X"}
assert {"recv", "native_enqueue", "native_complete", "completion_send"} <= names, names
PY
echo "$name: PASS: the stopped server's trace is complete too"
