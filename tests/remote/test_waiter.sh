#!/usr/bin/env bash
# remote/waiter: the paths pocld takes on NVIDIA's OpenCL, on PoCL's CPU device: a
# pocld of its own with POCLD_COMPLETION=wait (a waiter thread instead of event
# callbacks, and in-order commands enqueued without native events when the next
# command is already there to cover them) and POCLD_STAGING=pinned (large transfers
# staged in mapped CL_MEM_ALLOC_HOST_PTR buffers), with pocld's command reader and
# the client's threads polling before they block as on machines of more than two
# CPUs (POCLD_SPIN_US, POCL_REMOTE_SPIN_US); doc/pocld.md. api_events (a
# 301-kernel chain waited on in the middle from another queue) and api_buffers must
# pass, and pocld's log must show covered commands and pinned staging.
#   test_waiter.sh FIXTURE RUN_REMOTE POCLD BUILD_DIR API_EVENTS API_BUFFERS WORK_DIR
set -u
name=waiter
if [[ $# -ne 7 ]]; then
  sed -n '11,11p' "$0" | sed 's/^# //' >&2
  exit 2
fi
fixture=$1 run_remote=$2 pocld=$3 build=$4 events=$5 buffers=$6 work=$7
rm -rf "$work"
mkdir -p "$work"
fail() { echo "$name: FAIL: $*"; exit 1; }
state=$work/pocld.state
trap '"$fixture" stop "$state" >/dev/null 2>&1 || true' EXIT
POCLD_COMPLETION=wait POCLD_STAGING=pinned POCLD_SPIN_US=100 POCLD_LOG_LEVEL=debug \
  "$fixture" start "$state" "$pocld" "$build" \
  || fail "cannot start pocld"
log=$(sed -n 's/^POCLD_LOG=//p' "$state")
grep -q "completions noticed by waiting" "$log" || fail "pocld does not use its waiter"
export POCL_REMOTE_SPIN_US=50
for t in "$events" "$buffers"; do
  out=$work/$(basename "$t").out
  timeout -k 5 600 "$run_remote" "$state" "$build" "$t" >"$out" 2>&1
  rc=$?
  grep -E "^api_[a-z]+: (PASS|FAIL)" "$out"
  [[ $rc == 0 ]] || fail "$(basename "$t") exited with $rc: $(tail -n 3 "$out")"
done
covered=$(grep -c "covers [0-9]* commands" "$log")
[[ $covered -gt 0 ]] || fail "no command went without a native event"
grep -q "pinned [0-9]* bytes of staging" "$log" || fail "no transfer was staged in pinned memory"
echo "$name: PASS: api_events and api_buffers through the waiter and pinned staging; $covered covers in pocld's log"
