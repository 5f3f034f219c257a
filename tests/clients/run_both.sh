# run_both.sh - sourced by the client tests: runs one client twice, first on the local
# pthread device, then through the remote device, each with its own log.
#   run_both RUN_REMOTE STATE_FILE BUILD_DIR WORK_DIR COMMAND [ARGS...]
# Writes WORK_DIR/local.log and WORK_DIR/remote.log and sets local_rc and
# remote_rc. The CTest TIMEOUT bounds the runs (no timings are asserted).
# One after the other: the fixture's pocld serves the same pthread device with the same
# PoCL kernel cache, so the remote run's builds find the local run's kernels instead of
# both compiling each one at once (doc/protocol.md, BUILD_PROGRAM's included files).
run_both() {
  local run_remote=$1 state=$2 build=$3 work=$4 pid
  shift 4
  trap '[[ -z ${pid:-} ]] || kill "$pid" 2>/dev/null || true' EXIT
  local_rc=0 remote_rc=0
  env -u POCL_REMOTE0_PARAMETERS OCL_ICD_VENDORS="$build/ocl-vendors" POCL_BUILDING=1 \
    POCL_DEVICES=pthread "$@" >"$work/local.log" 2>&1 &
  pid=$!
  wait "$pid" || local_rc=$?
  "$run_remote" "$state" "$build" "$@" >"$work/remote.log" 2>&1 &
  pid=$!
  wait "$pid" || remote_rc=$?
  pid=
  trap - EXIT
}
