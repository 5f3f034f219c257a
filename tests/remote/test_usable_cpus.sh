#!/usr/bin/env bash
# remote/usable_cpus: the CPUs that spinning, completion waiting and lanes are chosen
# by (protocol/util/pocl_remote_cpus.c) are the process's, not the machine's.
#   test_usable_cpus.sh FIXTURE POCLD BUILD_DIR UNIT WORK_DIR
# 1. UNIT (test_usable_cpus.c): the affinity mask and cgroup v2 quotas, in-process.
# 2. A pocld started under `taskset -c` of one CPU says it has one usable CPU.
# PASS/FAIL line on stdout; exit 0 only on PASS.
set -u

name=usable_cpus
if [[ $# -ne 5 ]]; then
  sed -n '4,4p' "$0" | sed 's/^# //' >&2
  exit 2
fi
fixture=$1 pocld=$2 build=$3 unit=$4 work=$5
rm -rf "$work"
mkdir -p "$work"
fail() { echo "$name: FAIL: $*"; exit 1; }
out=$("$unit" "$work/cgroup")
echo "$out" | grep -v ': PASS$'
grep -q "^$name: PASS$" <<<"$out" || fail "the in-process checks failed"

state=$work/state
trap '"$fixture" stop "$state" >/dev/null 2>&1' EXIT
# the first CPU this test may run on
cpu=$(taskset -pc $$ | sed 's/.*: //; s/[,-].*//')
taskset -c "$cpu" "$fixture" start "$state" "$pocld" "$build" >/dev/null \
  || fail "pocld did not start on CPU $cpu"
log=$(sed -n 's/^POCLD_LOG=//p' "$state" | head -n1)
line=$(grep -o 'usable CPUs: .*' "$log")
[[ $line == "usable CPUs: 1 of "* ]] || fail "pocld on CPU $cpu logged '$line'"
echo "$name: pocld on CPU $cpu: $line"
echo "$name: PASS"
