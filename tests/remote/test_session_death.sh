#!/usr/bin/env bash
# remote/session_death: runs CLIENT (test_session_death) through run_remote.sh against a
# pocld of its own, whose session processes the client crashes on purpose (a kernel that
# writes to a wild address). Under tools/sanitize.sh that pocld's sanitizer must not take
# the crash for a finding of its own: it leaves SIGSEGV to the process (handle_segv=0), so
# the session process dies of it as it does without a sanitizer.
#   test_session_death.sh FIXTURE RUN_REMOTE POCLD BUILD_DIR CLIENT WORK_DIR
# Always stops the pocld it started. PASS/FAIL line on stdout; exit 0 only on PASS.
set -u
name=session_death
if [[ $# -ne 6 ]]; then
  sed -n '7,7p' "$0" | sed 's/^# //' >&2
  exit 2
fi
fixture=$1 run_remote=$2 pocld=$3 build=$4 client=$5 work=$6
mkdir -p "$work"
state=$work/$name.state
trap '"$fixture" stop "$state" >/dev/null 2>&1' EXIT
if ! ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}handle_segv=0" \
     TSAN_OPTIONS="${TSAN_OPTIONS:+$TSAN_OPTIONS:}handle_segv=0" \
     "$fixture" start "$state" "$pocld" "$build"; then
  echo "$name: FAIL: could not start a pocld of our own"
  exit 1
fi
"$run_remote" "$state" "$build" "$client"
