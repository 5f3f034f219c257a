#!/usr/bin/env bash
# Start or stop a pocld on a free loopback port, for tests and tools/main.sh.
#   pocld_fixture.sh start STATE_FILE POCLD_BINARY BUILD_DIR
#   pocld_fixture.sh stop  STATE_FILE
#   pocld_fixture.sh stacks STATE_FILE...
# start: picks a port P with P, P+1 (data socket) and P+2 free, runs
#   pocld --address 127.0.0.1 --port P --log-level info
# in the background serving the build's pthread device, waits (bounded) until it listens
# on P and P+1, and writes POCLD_PORT/POCLD_PID/POCLD_LOG into STATE_FILE.
# stop: SIGTERM, then SIGKILL if it is still alive after a bound; removes STATE_FILE.
# stacks: every thread's stack of the session processes of these pocld (gdb), for a test
#   that saw them hang (REMOTE_TEST_ON_HANG, tests/remote/remote_test_util.c); an argument
#   pid:N instead of a state file: process N's (the test's own).
# Env: POCLD_START_TIMEOUT (s, default 60), POCLD_STOP_TIMEOUT (s, default 10),
#      POCLD_LOG_LEVEL (default info), POCLD_SERVED_DEVICES (the server's POCL_DEVICES,
#      default pthread), POCLD_SERVED_VENDORS (the server's OCL_ICD_VENDORS, default
#      BUILD_DIR/ocl-vendors: another ICD directory serves another vendor's platform),
#      POCLD_FIXTURE_BINARY (run this pocld instead of
#      POCLD_BINARY: tools/sanitize.sh's sanitized one, still serving BUILD_DIR's device).
#      POCLD_EXTRA_ARGS: more pocld options, split on spaces (e.g. "--max-pending 64").
set -euo pipefail

usage() { sed -n '2,3p' "$0" | sed 's/^# //' >&2; exit 2; }
log() { echo "pocld_fixture: $*" >&2; }

# Read KEY=value from the state file without executing it.
state_get() { sed -n "s/^$2=//p" "$1" | head -n1; }

# Is PID alive and really a pocld (argv[0] named pocld, not a recycled pid)?
is_our_pocld() {
  local pid=$1 argv0
  [[ -n $pid && -r /proc/$pid/cmdline ]] || return 1
  argv0=$(tr '\0' '\n' <"/proc/$pid/cmdline" | head -n1)
  [[ ${argv0##*/} == pocld ]]
}

# Is anything listening on TCP port $1 (IPv4 or IPv6)? Read from /proc, so probing
# does not open a connection that pocld would log as a bad client.
listening() {
  local hex
  hex=$(printf '%04X' "$1")
  awk -v p=":$hex" 'NR > 1 && $4 == "0A" && substr($2, length($2) - 4) == p { f = 1 } END { exit !f }' \
    /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

# Can we bind 127.0.0.1:$1? (Also catches ports in TIME_WAIT etc. that /proc misses.)
bindable() {
  python3 - "$1" <<'PY'
import socket, sys
s = socket.socket()
try:
    s.bind(("127.0.0.1", int(sys.argv[1])))
except OSError:
    sys.exit(1)
finally:
    s.close()
PY
}

stop_pid() {
  local pid=$1 bound=${POCLD_STOP_TIMEOUT:-10} i
  is_our_pocld "$pid" || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < bound * 10; i++)); do
    is_our_pocld "$pid" || return 0
    sleep 0.1
  done
  log "pocld (pid $pid) ignored SIGTERM for ${bound}s; sending SIGKILL"
  kill -KILL "$pid" 2>/dev/null || true
  for ((i = 0; i < 50; i++)); do
    is_our_pocld "$pid" || return 1
    sleep 0.1
  done
  log "pocld (pid $pid) survived SIGKILL"
  return 1
}

cmd_stop() {
  local state=$1 pid rc=0
  if [[ ! -f $state ]]; then
    log "no state file $state: nothing to stop"
    return 0
  fi
  pid=$(state_get "$state" POCLD_PID)
  if ! is_our_pocld "$pid"; then
    log "pocld (pid ${pid:-?}) had already exited; its log: $(state_get "$state" POCLD_LOG)"
    rm -f "$state"
    return 1   # a server that died under the tests is a failure worth seeing
  fi
  stop_pid "$pid" || rc=1
  log "stopped pocld (pid $pid, port $(state_get "$state" POCLD_PORT))"
  rm -f "$state"
  return $rc
}

cmd_start() {
  local state=$1 pocld=${POCLD_FIXTURE_BINARY:-$2} build=$3
  local bound=${POCLD_START_TIMEOUT:-60} level=${POCLD_LOG_LEVEL:-info}
  [[ -x $pocld ]] || { log "pocld binary $pocld not found or not executable"; return 1; }
  [[ -d $build/ocl-vendors ]] || { log "$build/ocl-vendors missing: is $build a PoCL build dir?"; return 1; }
  mkdir -p "$(dirname "$state")"
  state=$(cd "$(dirname "$state")" && pwd)/$(basename "$state")

  # A pocld left over from an interrupted run with the same state file: stop it first.
  if [[ -f $state ]]; then
    log "stale state file $state: stopping its pocld"
    cmd_stop "$state" || true
  fi

  local logf=${state%.state}.log attempt port pid i rc
  [[ $logf != "$state" ]] || logf=$state.log
  for attempt in 1 2 3 4 5; do
    # Random P in 20000..59997 with P, P+1, P+2 free; pocld itself is the final judge.
    port=$((20000 + (RANDOM * 32768 + RANDOM) % 39998))
    if listening "$port" || listening $((port + 1)) || listening $((port + 2)) \
       || ! bindable "$port" || ! bindable $((port + 1)) || ! bindable $((port + 2)); then
      continue
    fi
    log "starting $pocld on 127.0.0.1:$port (log: $logf)"
    # All three streams redirected: the daemon must not hold the caller's stdout/stderr
    # open (ctest waits for those pipes to close before it finishes the setup test).
    # env execs pocld, so $! is pocld's pid.
    env OCL_ICD_VENDORS="${POCLD_SERVED_VENDORS:-$build/ocl-vendors}" POCL_BUILDING=1 \
      POCL_DEVICES="${POCLD_SERVED_DEVICES:-pthread}" \
      "$pocld" --address 127.0.0.1 --port "$port" --log-level "$level" ${POCLD_EXTRA_ARGS:-} \
      </dev/null >"$logf" 2>&1 &
    pid=$!
    for ((i = 0; i < bound * 10; i++)); do
      if ! kill -0 "$pid" 2>/dev/null; then
        break
      fi
      if listening "$port" && listening $((port + 1)); then
        printf 'POCLD_PORT=%s\nPOCLD_PID=%s\nPOCLD_LOG=%s\n' "$port" "$pid" "$logf" >"$state.tmp"
        mv "$state.tmp" "$state"
        log "pocld (pid $pid) listening on 127.0.0.1:$port and :$((port + 1))"
        return 0
      fi
      sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
      log "pocld (pid $pid) not listening on $port and $((port + 1)) after ${bound}s; killing it"
      kill -KILL "$pid" 2>/dev/null || true
      wait "$pid" 2>/dev/null || true
      log "---- pocld log ----"; tail -n 50 "$logf" >&2 || true
      return 1
    fi
    wait "$pid" 2>/dev/null && rc=0 || rc=$?
    log "pocld exited (status $rc) before listening; attempt $attempt; log tail:"
    tail -n 20 "$logf" >&2 || true
    # Most likely someone took the port in between: try another one.
  done
  log "could not start pocld after 5 attempts"
  return 1
}

# Every thread's stack of process $1, under the heading $2.
stacks_of() {
  log "---- stacks of $2 ----"
  timeout 60 gdb -p "$1" -batch -nx -ex "thread apply all bt" 2>&1 \
    | grep -E '^(Thread|#)' >&2 || true
}

cmd_stacks() {
  local state pid child
  command -v gdb >/dev/null || { log "no gdb: no stacks"; return 0; }
  for state in "$@"; do
    if [[ $state == pid:* ]]; then
      stacks_of "${state#pid:}" "the test (pid ${state#pid:})"
      continue
    fi
    pid=$(state_get "$state" POCLD_PID)
    is_our_pocld "$pid" || continue
    for child in $(pgrep -P "$pid"); do
      stacks_of "$child" "session process $child (pocld $pid)"
    done
  done
}

[[ $# -ge 2 ]] || usage
case "$1" in
  start) [[ $# == 4 ]] || usage; cmd_start "$2" "$3" "$4" ;;
  stop) [[ $# == 2 ]] || usage; cmd_stop "$2" ;;
  stacks) shift; cmd_stacks "$@" ;;
  *) usage ;;
esac
