#!/usr/bin/env bash
# remote/link_down: a client whose link to pocld goes down, comes back, then goes down for
# good (test_link_down.c drives a fault_proxy's control socket), against a pocld of its
# own that keeps a session 2 s for a resume (--session-grace 2).
#   test_link_down.sh FIXTURE POCLD PROXY_TEST PROXY RUN_REMOTE BUILD_DIR WORK_DIR CLIENT
# PASS when the client passed (through test_proxy.sh: no hang, the proxy cut) and
# pocld then ended the abandoned session after its grace period.
set -u

name=link_down
if [[ $# -ne 8 ]]; then
  sed -n '5,5p' "$0" | sed 's/^# //' >&2
  exit 2
fi
fixture=$1 pocld=$2 proxy_test=$3 proxy=$4 run_remote=$5 build=$6 work=$7 client=$8
fail() { echo "$name: FAIL: $*"; exit 1; }
mkdir -p "$work"
state=$work/$name.pocld.state
trap '"$fixture" stop "$state" >/dev/null 2>&1' EXIT
POCLD_EXTRA_ARGS="--session-grace 2" "$fixture" start "$state" "$pocld" "$build" \
  || fail "could not start a pocld of our own"
log=$(sed -n 's/^POCLD_LOG=//p' "$state")

POCL_REMOTE_RECONNECT_TIMEOUT_MS=2000 "$proxy_test" "$name" "$proxy" "$run_remote" \
  "$state" "$build" "$work" --cuts-by-client -- "$client" "$work/$name.ctl" \
  || fail "the client or the proxy failed (above)"

for _ in $(seq 1 100); do
  grep -q "no resume within 2000 ms" "$log" && grep -q "session ended" "$log" && break
  sleep 0.1
done
grep -q "no resume within 2000 ms" "$log" \
  || fail "pocld did not give the abandoned session up: $(tail -n 5 "$log")"
grep -q "resumed from" "$log" || fail "pocld logged no resume: $(tail -n 5 "$log")"
echo "$name: PASS"
