#!/usr/bin/env bash
# clients/clblast_<routine>: one of Debian's CLBlast correctness tests (clblast-tests)
# through the remote device, and on the local pthread device for comparison.
#   test_clblast.sh RUN_REMOTE STATE_FILE BUILD_DIR ROUTINE WORK_DIR
# Runs /usr/bin/clblast_test_ROUTINE twice, one run after the other (run_both.sh):
# POCL_DEVICES=pthread locally, then through RUN_REMOTE against the fixture's pocld, whose
# builds find the local run's kernels in PoCL's kernel cache. The binary checks every result against the reference BLAS (libblas3) itself
# and exits non-zero on any failure. Its default (non -full_test) sizes are used.
# Passes when both exit 0, report no failed test-case, and report the same numbers of
# passed and skipped test-cases (skips: precisions the device lacks, and cases whose
# error code the reference BLAS cannot check). Exit 77 (skip) if the package is missing.
set -euo pipefail

if [[ $# != 5 ]]; then
  sed -n '3,3p' "$0" | sed 's/^# //' >&2
  exit 2
fi
run_remote=$1 state=$2 build=$3 routine=$4 work=$5
name=clients/clblast_$routine
bin=/usr/bin/clblast_test_$routine
if [[ ! -x $bin ]]; then
  echo "$name: SKIP: $bin not found: Debian's clblast-tests is not installed (tools/setup.sh)"
  exit 77
fi
mkdir -p "$work"

# shellcheck source=run_both.sh
source "$(dirname "$0")/run_both.sh"
run_both "$run_remote" "$state" "$build" "$work" "$bin"

# "   36 test(s) passed" lines (colour codes stripped), summed over all precisions.
count() {
  sed 's/\x1b\[[0-9;]*m//g' "$1" \
    | awk -v w="$2" '$2 == "test(s)" && $3 == w { n += $1 } END { print n + 0 }'
}
failures=0
declare -A n
for run in local remote; do
  for what in passed skipped failed; do
    n[$run.$what]=$(count "$work/$run.log" "$what")
  done
  echo "$name: $run: ${n[$run.passed]} passed, ${n[$run.skipped]} skipped," \
       "${n[$run.failed]} failed"
done
device=$(sed -n "s/^\* Running on OpenCL device '\(.*\)'\.$/\1/p" "$work/remote.log" | head -n1)
echo "$name: remote device: '$device'"

fail() { echo "$name: FAIL: $*"; failures=$((failures + 1)); }
[[ $device == *pocl-remote* ]] || fail "the remote run did not run on the remote device"
((local_rc == 0)) || fail "local run exited with $local_rc"
((remote_rc == 0)) || fail "remote run exited with $remote_rc"
((n[local.failed] == 0)) || fail "${n[local.failed]} test-cases failed locally"
((n[remote.failed] == 0)) || fail "${n[remote.failed]} test-cases failed through remote"
((n[remote.passed] > 0)) || fail "no test-case passed through remote"
((n[remote.passed] == n[local.passed])) \
  || fail "passed: ${n[local.passed]} locally, ${n[remote.passed]} through remote"
((n[remote.skipped] == n[local.skipped])) \
  || fail "skipped: ${n[local.skipped]} locally, ${n[remote.skipped]} through remote"
if ((failures > 0)); then
  for run in local remote; do
    echo "---- $run log (tail) ----"
    sed 's/\x1b\[[0-9;]*m//g' "$work/$run.log" | tail -n 20
  done
  exit 1
fi
echo "$name: PASS: ${n[remote.passed]} test-cases passed through remote," \
     "as on pthread (${n[remote.skipped]} skipped on both)"
