#!/usr/bin/env bash
# remote/server_killed: a client whose pocld dies under it (SIGKILL) gets errors in
# bounded time instead of hanging.
#   test_server_killed.sh FIXTURE RUN_REMOTE POCLD BUILD_DIR CLIENT WORK_DIR [restart]
# restart (remote/server_restarted): a new pocld comes up on the same port as soon as the
# old one is dead; it does not know the client's session, so the client's resume is
# refused and the errors come at once, although the driver would try for a minute.
# Starts a pocld of its own with pocld_fixture.sh (free loopback port, state and log in
# WORK_DIR), runs CLIENT (test_server_killed) through run_remote.sh with that pocld's pid;
# the client kills pocld and checks the errors. Always stops/reaps the pocld it started.
# PASS/FAIL line on stdout; exit 0 only on PASS.
set -u

name=server_killed
[[ ${7:-} == restart ]] && name=server_restarted
if [[ $# -lt 6 || $# -gt 7 ]]; then
  sed -n '4,4p' "$0" | sed 's/^# //' >&2
  exit 2
fi
fixture=$1 run_remote=$2 pocld=$3 build=$4 client=$5 work=$6
mkdir -p "$work"
state=$work/$name.state
log=$work/$name.log   # the fixture derives it from the state file name
relog=$work/$name.restarted.log

cleanup() {
  # After a successful run pocld is already dead: stop then says so and returns 1.
  [[ -f $state ]] && "$fixture" stop "$state" >/dev/null 2>&1
  [[ -n ${watcher:-} ]] && kill "$watcher" 2>/dev/null
  [[ -n ${repid:-} ]] && kill "$repid" 2>/dev/null
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

reconnect_ms=3000
if [[ $name == server_restarted ]]; then
  reconnect_ms=60000
  rm -f "$relog" # an earlier run's must not pass for this one's
  # The same command line as the fixture's, on the same port, once the old one is gone.
  (
    while kill -0 "$pid" 2>/dev/null && [[ $(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null) != Z ]]; do
      sleep 0.05
    done
    exec env OCL_ICD_VENDORS="$build/ocl-vendors" POCL_BUILDING=1 POCL_DEVICES=pthread \
      "$pocld" --address 127.0.0.1 --port "$port" --log-level info </dev/null >"$relog" 2>&1
  ) &
  repid=$!
fi

# The client bounds every step itself (alarm); this outer bound only catches a client
# that cannot even get that far. The driver tries to reconnect to the killed pocld
# (connection refused) for reconnect_ms before it gives the session up.
POCL_REMOTE_RECONNECT_TIMEOUT_MS=$reconnect_ms timeout -k 5 150 "$run_remote" "$state" "$build" "$client" "$pid"
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

if [[ $rc == 0 && $name == server_restarted ]]; then
  if ! grep -q "unknown session" "$relog" 2>/dev/null; then
    echo "$name: FAIL: the restarted pocld did not refuse a resume (its log: $relog)"
    rc=1
  fi
  kill "$repid" 2>/dev/null
  wait "$repid" 2>/dev/null
  repid=
fi
if [[ $rc != 0 ]]; then
  echo "---- tail of our pocld's log ($log) ----"
  tail -n 40 "$log" 2>/dev/null || true
  exit 1
fi
echo "$name: PASS"
exit 0
