#!/usr/bin/env bash
# remote/hostile_limits: pocld's per-session limits (pending commands, foreign events,
# staging sized by the client), with a pocld of its own (--max-pending 64).
#   test_hostile_limits.sh FIXTURE POCLD BUILD_DIR CLIENT WORK_DIR
# PASS/FAIL line on stdout; exit 0 only on PASS.
set -u

name=hostile_limits
if [[ $# -ne 5 ]]; then
  sed -n '4,4p' "$0" | sed 's/^# //' >&2
  exit 2
fi
fixture=$1 pocld=$2 build=$3 client=$4 work=$5
mkdir -p "$work"
state=$work/$name.state
trap '"$fixture" stop "$state" >/dev/null 2>&1 || true' EXIT

if ! POCLD_EXTRA_ARGS="--max-pending 64" "$fixture" start "$state" "$pocld" "$build"; then
  echo "$name: FAIL: could not start a pocld of our own"
  exit 1
fi
pid=$(sed -n 's/^POCLD_PID=//p' "$state")
port=$(sed -n 's/^POCLD_PORT=//p' "$state")
log=$(sed -n 's/^POCLD_LOG=//p' "$state")
# Raw sockets only: no OpenCL client library is involved, the preload neither.
timeout -k 5 280 env -u LD_PRELOAD "$client" "$port" "$pid" "$log"
rc=$?
if [[ $rc != 0 ]]; then
  echo "$name: FAIL: the client failed (exit status $rc); pocld log tail:"
  tail -n 20 "$log"
  exit 1
fi
# pocld itself must have survived.
if ! kill -0 "$pid" 2>/dev/null; then
  echo "$name: FAIL: pocld died"
  exit 1
fi
