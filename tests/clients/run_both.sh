# run_both.sh - sourced by the client tests: runs one client twice, on the local pthread
# device and through the remote device, each with its own log.
#   run_both RUN_REMOTE STATE_FILE BUILD_DIR WORK_DIR COMMAND [ARGS...]
# Writes WORK_DIR/local.log and WORK_DIR/remote.log and sets local_rc and
# remote_rc. The CTest TIMEOUT bounds the runs (no timings are asserted).
# By default one after the other: the fixture's pocld serves the same pthread device with
# the same PoCL kernel cache, so the remote run's builds find the local run's kernels
# instead of both compiling each one at once (doc/protocol.md, BUILD_PROGRAM's included
# files). RUN_BOTH_AT_ONCE=1 runs them at the same time, for a client that compiles little
# and leaves the cores idle part of the time (clpeak: 301 s at once, 484 s one after the
# other, in the suite on two cores).
run_both() {
  local run_remote=$1 state=$2 build=$3 work=$4 local_pid remote_pid= caller_trap
  shift 4
  # The caller's EXIT trap (stopping its pocld) runs after ours and is restored at the end.
  caller_trap=$(trap -p EXIT | sed -E "s/^trap -- '(.*)' EXIT$/\\1/")
  trap 'kill ${local_pid:-} ${remote_pid:-} 2>/dev/null || true; '"$caller_trap" EXIT
  local_rc=0 remote_rc=0
  env -u POCL_REMOTE0_PARAMETERS OCL_ICD_VENDORS="$build/ocl-vendors" POCL_BUILDING=1 \
    POCL_DEVICES=pthread "$@" >"$work/local.log" 2>&1 &
  local_pid=$!
  if [[ ${RUN_BOTH_AT_ONCE:-0} != 1 ]]; then
    wait "$local_pid" || local_rc=$?
    local_pid=
  fi
  "$run_remote" "$state" "$build" "$@" >"$work/remote.log" 2>&1 &
  remote_pid=$!
  if [[ -n $local_pid ]]; then
    wait "$local_pid" || local_rc=$?
  fi
  wait "$remote_pid" || remote_rc=$?
  local_pid= remote_pid=
  if [[ -n $caller_trap ]]; then trap "$caller_trap" EXIT; else trap - EXIT; fi
}
