# run_both.sh - sourced by the client tests: runs one client twice at once, on the
# local pthread device and through the remote device, each with its own log.
#   run_both RUN_REMOTE STATE_FILE BUILD_DIR WORK_DIR COMMAND [ARGS...]
# Writes WORK_DIR/local.log and WORK_DIR/remote.log and sets local_rc and
# remote_rc. The CTest TIMEOUT bounds the runs (no timings are asserted).
run_both() {
  local run_remote=$1 state=$2 build=$3 work=$4 local_pid remote_pid
  shift 4
  env -u POCL_REMOTE0_PARAMETERS OCL_ICD_VENDORS="$build/ocl-vendors" POCL_BUILDING=1 \
    POCL_DEVICES=pthread "$@" >"$work/local.log" 2>&1 &
  local_pid=$!
  "$run_remote" "$state" "$build" "$@" >"$work/remote.log" 2>&1 &
  remote_pid=$!
  trap "kill $local_pid $remote_pid 2>/dev/null || true" EXIT
  local_rc=0 remote_rc=0
  wait "$local_pid" || local_rc=$?
  wait "$remote_pid" || remote_rc=$?
  trap - EXIT
}
