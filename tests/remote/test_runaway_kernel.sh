#!/usr/bin/env bash
# remote/runaway_kernel: a client that leaves a kernel running forever (upstream's
# regression/infinite_loop does this) must not take the server from the next client.
#   test_runaway_kernel.sh RUN_REMOTE STATE_FILE BUILD_DIR CLIENT
# 1. CLIENT spin: enqueues `for (;;);` on every thread of the fixture pocld's CPU
#    device and exits without waiting.
# 2. CLIENT verify: a new client of the same pocld builds and runs a normal kernel
#    and checks its results, within 30 s (its watchdog; 40 s outer bound).
# 3. The pocld log (POCLD_LOG in STATE_FILE) shows that the first session's process
#    gave up on its kernel and exited ("teardown did not finish"), within 20 s: the
#    kernel really ran forever, and did not outlive its session.
# PASS/FAIL line on stdout; exit 0 only on PASS.
set -u

name=runaway_kernel
if [[ $# -ne 4 ]]; then
  sed -n '4,4p' "$0" | sed 's/^# //' >&2
  exit 2
fi
run_remote=$1 state=$2 build=$3 client=$4
fail() { echo "$name: FAIL: $*"; exit 1; }

[[ -f $state ]] || fail "no pocld state file $state (did the fixture start?)"
log=$(sed -n 's/^POCLD_LOG=//p' "$state" | head -n1)
[[ -n $log && -r $log ]] || fail "no readable POCLD_LOG in $state"
marker='teardown did not finish'
before=$(grep -c "$marker" "$log")

timeout -k 5 150 "$run_remote" "$state" "$build" "$client" spin
rc=$?
[[ $rc == 0 ]] || fail "the spinning client failed (exit status $rc)"

start=$SECONDS
timeout -k 5 40 "$run_remote" "$state" "$build" "$client" verify
rc=$?
took=$((SECONDS - start))
if [[ $rc == 124 || $rc == 137 ]]; then
  fail "the second client hung (killed after 40 s): the runaway kernel still holds the server"
elif [[ $rc != 0 ]]; then
  fail "the second client failed (exit status $rc; reason above)"
fi
echo "$name: second client served in about ${took} s"

for _ in $(seq 1 200); do
  (( $(grep -c "$marker" "$log") > before )) && break
  sleep 0.1
done
if (( $(grep -c "$marker" "$log") <= before )); then
  echo "---- tail of the pocld log ($log) ----"
  tail -n 30 "$log"
  fail "no '$marker' line in the pocld log within 20 s: the spinning session's process did not give up its kernel (or the kernel never spun)"
fi
grep "$marker" "$log" | tail -n 1
echo "$name: PASS: a client was served after another left a kernel running forever"
exit 0
