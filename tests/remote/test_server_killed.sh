#!/usr/bin/env bash
# remote/server_killed: a client whose pocld dies under it (SIGKILL) gets errors in
# bounded time instead of hanging.
#   test_server_killed.sh FIXTURE RUN_REMOTE POCLD BUILD_DIR CLIENT WORK_DIR
# Starts a pocld of its own with pocld_fixture.sh (free loopback port, state and log in
# WORK_DIR), runs CLIENT (test_server_killed) through run_remote.sh with that pocld's pid;
# the client kills pocld and checks the errors. Always stops/reaps the pocld it started.
# PASS/FAIL line on stdout; exit 0 only on PASS.
set -u

name=server_killed
if [[ $# -ne 6 ]]; then
  sed -n '4,4p' "$0" | sed 's/^# //' >&2
  exit 2
fi
fixture=$1 run_remote=$2 pocld=$3 build=$4 client=$5 work=$6
mkdir -p "$work"
state=$work/server_killed.state
log=$work/server_killed.log   # the fixture derives it from the state file name

cleanup() {
  # After a successful run pocld is already dead: stop then says so and returns 1.
  [[ -f $state ]] && "$fixture" stop "$state" >/dev/null 2>&1
  return 0
}
trap cleanup EXIT
trap 'echo "$name: FAIL: interrupted"; exit 1' INT TERM

if ! POCLD_LOG_LEVEL=${POCLD_LOG_LEVEL:-info} "$fixture" start "$state" "$pocld" "$build"; then
  echo "$name: FAIL: could not start a pocld of our own"
  exit 1
fi
pid=$(sed -n 's/^POCLD_PID=//p' "$state" | head -n1)
port=$(sed -n 's/^POCLD_PORT=//p' "$state" | head -n1)
echo "$name: own pocld pid $pid on 127.0.0.1:$port"

# The client bounds every step itself (alarm); this outer bound only catches a client
# that cannot even get that far. The driver tries to reconnect to the killed pocld
# (connection refused) for 3 s before it gives the session up.
POCL_REMOTE_RECONNECT_TIMEOUT_MS=3000 timeout -k 5 150 "$run_remote" "$state" "$build" "$client" "$pid"
rc=$?

if [[ $rc == 124 || $rc == 137 ]]; then
  echo "$name: FAIL: the client hung (killed by timeout after 150 s)"
elif ((rc > 128)); then
  echo "$name: FAIL: the client died from signal $((rc - 128))" \
       "$([[ $((rc - 128)) == 13 ]] && echo '(SIGPIPE: a write to the dead socket without MSG_NOSIGNAL)')"
elif [[ $rc != 0 ]]; then
  echo "$name: FAIL: the client reported a failure (exit status $rc; its reason is above)"
fi

# The pocld must really be gone (the client killed it), unless the client failed early.
if [[ $rc == 0 ]]; then
  for _ in $(seq 1 50); do
    [[ -e /proc/$pid ]] || break
    state_char=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null || true)
    [[ $state_char == Z ]] && break
    sleep 0.1
  done
  if [[ -e /proc/$pid && $(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null) != Z ]]; then
    echo "$name: FAIL: pocld (pid $pid) is still running after the client killed it"
    rc=1
  fi
fi

if [[ $rc != 0 ]]; then
  echo "---- tail of our pocld's log ($log) ----"
  tail -n 40 "$log" 2>/dev/null || true
  exit 1
fi
echo "$name: PASS"
exit 0
