#!/usr/bin/env bash
# clients/clpeak: Debian's clpeak runs all its tests to completion through the remote
# device, and reports the same set of results as on the local pthread device.
#   test_clpeak.sh FIXTURE RUN_REMOTE POCLD BUILD_DIR WORK_DIR
# Runs clpeak (all tests) twice at once (run_both.sh, RUN_BOTH_AT_ONCE): POCL_DEVICES=pthread
# locally, and through RUN_REMOTE against a pocld of its own (FIXTURE) that serves the same
# device. Checks: both exit 0, the remote run is on the remote device, every result line
# carries a number, and both runs list the same results (section and label: bandwidths,
# compute widths, transfer modes, latency), so nothing was skipped or failed on one side
# only. The figures themselves are timings and are not judged (doc/benchmarks.md has
# some), so both sides serve a small pthread device: clpeak sizes its work by the device's
# memory and work-group size, and at 1 GiB and 64 work-items a run takes 23 CPU seconds
# instead of 98. Exit 77 (skip) if clpeak is missing.
set -euo pipefail

name=clients/clpeak
if [[ $# != 5 ]]; then
  sed -n '4,4p' "$0" | sed 's/^# //' >&2
  exit 2
fi
fixture=$1 run_remote=$2 pocld=$3 build=$4 work=$5
bin=/usr/bin/clpeak
if [[ ! -x $bin ]]; then
  echo "$name: SKIP: $bin not found: Debian's clpeak is not installed (tools/setup.sh)"
  exit 77
fi
mkdir -p "$work"

# The small device: PoCL's CPU drivers read these in the client (local run) and in pocld.
export POCL_MEMORY_LIMIT=1 POCL_MAX_WORK_GROUP_SIZE=64
state=$work/pocld.state
trap '"$fixture" stop "$state" >/dev/null 2>&1 || true' EXIT
if ! "$fixture" start "$state" "$pocld" "$build" 2>"$work/pocld_start.err"; then
  echo "$name: FAIL: could not start pocld:"
  tail -n 5 "$work/pocld_start.err"
  exit 1
fi

# shellcheck source=run_both.sh
source "$(dirname "$0")/run_both.sh"
RUN_BOTH_AT_ONCE=1 run_both "$run_remote" "$state" "$build" "$work" "$bin"

# Result lines as "section / label<TAB>value"; a section is an indented line without a
# colon (e.g. "Global memory bandwidth (GBPS)" or "No half precision support! Skipped").
results() {
  awk '/^    [^ ]/ && !/:/ { sec = $0; sub(/^ +/, "", sec); print sec "\t-"; next }
       /^    Kernel launch latency/ { sec = "" }
       /^    +[^ ].*:/ && sec != "" || /^    Kernel launch latency/ {
         line = $0; sub(/^ +/, "", line)
         key = line; sub(/ *:.*/, "", key)
         val = line; sub(/^[^:]*: */, "", val)
         print (sec == "" ? "" : sec " / ") key "\t" val
       }' "$1"
}
results "$work/local.log" >"$work/local.kv"
results "$work/remote.log" >"$work/remote.kv"

failures=0
fail() { echo "$name: FAIL: $*"; failures=$((failures + 1)); }
((local_rc == 0)) || fail "local clpeak exited with $local_rc"
((remote_rc == 0)) || fail "remote clpeak exited with $remote_rc"
grep -q '^  Device: .*pocl-remote' "$work/remote.log" \
  || fail "the remote run did not run on the remote device"
grep -q 'Kernel launch latency' "$work/remote.log" \
  || fail "the remote run did not get to its last test (kernel launch latency)"
bad=$(awk -F'\t' '$2 != "-" && $2 !~ /^[0-9]+(\.[0-9]+)? *(us)?$/' "$work/remote.kv")
[[ -z $bad ]] || fail "result lines without a number through remote: $(tr '\n\t' '; ' <<<"$bad")"
if ! diff <(cut -f1 "$work/local.kv") <(cut -f1 "$work/remote.kv") >"$work/diff"; then
  fail "the two runs list different results (< pthread, > remote): $(tr '\n' ' ' <"$work/diff")"
fi
n=$(awk -F'\t' '$2 != "-"' "$work/remote.kv" | wc -l)
((n > 0)) || fail "no results through remote"
if ((failures > 0)); then
  for run in local remote; do echo "---- $run ----"; tail -n 30 "$work/$run.log"; done
  exit 1
fi
echo "$name: PASS: all $n results of clpeak's tests reported through remote, as on pthread"
