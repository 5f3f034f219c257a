#!/usr/bin/env bash
# Run a command as a client of the pocld started by pocld_fixture.sh.
#   run_remote.sh STATE_FILE BUILD_DIR COMMAND [ARGS...]
# Sets POCL_DEVICES=remote, POCL_REMOTE0_PARAMETERS=127.0.0.1:<port>/0 (port from
# STATE_FILE), OCL_ICD_VENDORS=BUILD_DIR/ocl-vendors (only this build's libpocl) and
# POCL_BUILDING=1 (load the drivers from the build tree).
# Env: RUN_REMOTE_DEVICES overrides POCL_DEVICES, e.g. "pthread remote" to mix;
# RUN_REMOTE_SERVER_DEVICE: the server's device index instead of 0;
# RUN_REMOTE_VENDORS overrides the OCL_ICD_VENDORS directory and RUN_REMOTE_PRELOAD is
# put in LD_PRELOAD of COMMAND alone (tools/sanitize.sh: a sanitized libpocl, and the
# sanitizer runtime that the uninstrumented test programs then need first).
set -euo pipefail

if [[ $# -lt 3 ]]; then
  sed -n '2,2p' "$0" | sed 's/^# //' >&2
  exit 2
fi
state=$1 build=$2
shift 2

if [[ ! -f $state ]]; then
  echo "run_remote: no pocld state file $state (did the pocld fixture start?)" >&2
  exit 1
fi
port=$(sed -n 's/^POCLD_PORT=//p' "$state" | head -n1)
if [[ ! $port =~ ^[0-9]+$ ]]; then
  echo "run_remote: no POCLD_PORT in $state" >&2
  exit 1
fi

export POCL_DEVICES=${RUN_REMOTE_DEVICES:-remote}
export POCL_REMOTE0_PARAMETERS=127.0.0.1:$port/${RUN_REMOTE_SERVER_DEVICE:-0}
export OCL_ICD_VENDORS=${RUN_REMOTE_VENDORS:-$build/ocl-vendors}
export POCL_BUILDING=1
# A check that hangs prints the server's session stacks (remote_test_util.c),
# without the sanitizer runtime preloaded into gdb.
export REMOTE_TEST_ON_HANG="env -u LD_PRELOAD $(printf '%q ' "$(dirname "$0")/pocld_fixture.sh" stacks "$state")"
if [[ -n ${RUN_REMOTE_PRELOAD:-} ]]; then
  export LD_PRELOAD=$RUN_REMOTE_PRELOAD${LD_PRELOAD:+:$LD_PRELOAD}
fi
exec "$@"
