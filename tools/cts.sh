#!/usr/bin/env bash
# The project's OpenCL-CTS conformance run (doc/conformance.md): build a Khronos OpenCL-CTS,
# run each of its test binaries on the local device and through the remote driver on the
# same device (a pocld started by tests/remote/pocld_fixture.sh serves it), print one table
# (per binary: sub-tests passed/total locally and through remote, the sub-tests whose
# results differ) and exit 1 when remote does not pass a sub-test that passes locally,
# unless doc/remote-test-exceptions.md lists it (section "OpenCL-CTS").
#   tools/cts.sh [CTS]   CTS: a tarball or an unpacked OpenCL-CTS source tree
#                        (default ../shared/cts/opencl-cts-v2022-10-27-00-subset.tar.gz)
# Builds into $BUILD_DIR/cts/build (configure once, then incremental ninja, ccache if
# present); the run's logs, JSON results and the table (results.md) go to $BUILD_DIR/cts/run.
# Env:
#   BUILD_DIR       default <repo>/build
#   POCL_BUILD      the PoCL build whose pocld serves the device and whose libpocl is the
#                   client (default $BUILD_DIR/pocl; a thin build works for both)
#   CTS_LOCAL_ENV   env(1) arguments of the local run, default
#                   "OCL_ICD_VENDORS=$POCL_BUILD/ocl-vendors POCL_BUILDING=1 POCL_DEVICES=pthread"
#   CTS_POCLD_ENV   env(1) arguments for pocld, applied after the fixture's own
#                   (OCL_ICD_VENDORS=$POCL_BUILD/ocl-vendors POCL_BUILDING=1 POCL_DEVICES=pthread);
#                   default none, so pocld serves $POCL_BUILD's pthread device
#   CTS_REMOTE_ENV  env(1) arguments for the client, applied after tests/remote/run_remote.sh's
#                   (POCL_DEVICES=remote, POCL_REMOTE0_PARAMETERS, OCL_ICD_VENDORS=$POCL_BUILD/
#                   ocl-vendors, POCL_BUILDING=1) and OCL_ICD_FILENAMES=$POCL_BUILD/lib/CL/
#                   libpocl.so; default none
#   CTS_JOBS        runs at once (default nproc); CTS_TIMEOUT: seconds per run (default 900);
#   CTS_RETRY_LOCAL_HANG=1: a local run cut by CTS_TIMEOUT runs once more (never a remote one);
#   CTS_BUDGET      seconds for all runs (default 1500): a run is cut at the budget's end and
#                   runs not started by then count as not run
#   CTS_BINARIES    the binaries to run, by name without test_ (default: every test_*
#                   binary the build made, found in any directory of test_conformance)
#   CTS_RUN_NAME    the run's directory under $BUILD_DIR/cts (default run), so that runs
#                   over other devices keep their own results
#   CTS_ARGS_<binary>  the harness's arguments for both runs of test_<binary> (default none:
#                   every sub-test, default sizes); see below
#   CTS_EXCEPTIONS  default <repo>/doc/remote-test-exceptions.md
#   CTS_SKIP_MISSING  exit status when there is no CTS at the path (default 2; CTest's 77)
# NVIDIA's OpenCL on the GPU machine (thin build; the device is the same GPU both ways):
#   nv=/usr/lib/libnvidia-opencl.so.1
#   POCL_BUILD=$BUILD_DIR/thin CTS_LOCAL_ENV="-u OCL_ICD_VENDORS OCL_ICD_FILENAMES=$nv" \
#   CTS_POCLD_ENV="-u OCL_ICD_VENDORS -u POCL_DEVICES OCL_ICD_FILENAMES=$nv" tools/cts.sh
# (the client is the thin build's libpocl, which the script names in its OCL_ICD_FILENAMES).
set -euo pipefail

# The local run and pocld name their ICDs themselves (CTS_LOCAL_ENV, CTS_POCLD_ENV): an
# OCL_ICD_FILENAMES of the caller (the GPU machine presets one) would add platforms to them.
unset OCL_ICD_FILENAMES

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_root=${BUILD_DIR:-$repo/build}
mkdir -p "$build_root"
build_root=$(cd "$build_root" && pwd)
pocl_build=${POCL_BUILD:-$build_root/pocl}
cts=${1:-$repo/../shared/cts/opencl-cts-v2022-10-27-00-subset.tar.gz}
jobs=${CTS_JOBS:-$(nproc)}
per_run=${CTS_TIMEOUT:-900}
budget=${CTS_BUDGET:-1500}
exceptions=${CTS_EXCEPTIONS:-$repo/doc/remote-test-exceptions.md}
local_env=${CTS_LOCAL_ENV:-OCL_ICD_VENDORS=$pocl_build/ocl-vendors POCL_BUILDING=1 POCL_DEVICES=pthread}
read -r -a local_env <<<"$local_env"
read -r -a pocld_env <<<"${CTS_POCLD_ENV:-}"
read -r -a remote_env <<<"${CTS_REMOTE_ENV:-}"
# The client loads $POCL_BUILD's libpocl by name too: run_remote.sh's OCL_ICD_VENDORS is all
# that Debian 12's ocl-icd 2.3.1 needs, but Ubuntu 24.04's 2.3.2 finds no platform through
# that directory (seen on the GPU machine: clGetPlatformIDs -1001), only through this.
remote_env=("OCL_ICD_FILENAMES=$pocl_build/lib/CL/libpocl.so" "${remote_env[@]}")
top=$build_root/cts
work=$top/${CTS_RUN_NAME:-run}
mkdir -p "$top"

log() { echo "cts: $*" >&2; }

# No binary is reduced by default: on 2 cores all nine, both runs, take about 6 minutes
# (doc/conformance.md). For a slow device, CTS_ARGS_<binary> (e.g. CTS_ARGS_buffers) gives the
# harness's own options for both runs of that binary: sub-test names (a trailing '*' matches
# a prefix) and a trailing number, num_elements (default 16384), which many sub-tests scale with.

# ---- the CTS source: an unpacked tree, or a tarball unpacked once per content ------------
# Runs of one build root (CI's cts/pthread and cts/intel, which may start together) share
# the unpacked source and the build: one at a time unpacks, configures and builds.
exec 9>"$top/build.lock"
flock 9
if [[ -d $cts ]]; then
  src=$(cd "$cts" && pwd)
elif [[ -f $cts ]]; then
  sum=$(sha256sum <"$cts" | cut -d' ' -f1)
  if [[ ! -f $top/src.stamp || "$(cat "$top/src.stamp")" != "$sum" ]]; then
    log "unpacking $cts"
    rm -rf "$top/src" "$top/src.stamp" "$top/build"
    mkdir -p "$top/src"
    tar -xzf "$cts" -C "$top/src"
    echo "$sum" >"$top/src.stamp"
  fi
  src=$(find "$top/src" -mindepth 1 -maxdepth 1 -type d | head -n1)
else
  log "no CTS at $cts: give a tarball or a source directory"
  exit "${CTS_SKIP_MISSING:-2}"
fi
[[ -f $src/test_conformance/CMakeLists.txt ]] || { log "$src is not an OpenCL-CTS tree"; exit 2; }

# ---- configure once per source tree, then an incremental build ------------------------------
bdir=$top/build
if [[ ! -f $bdir/build.ninja || "$(cat "$bdir/cts-src" 2>/dev/null)" != "$src" ]]; then
  rm -rf "$bdir"
  launcher=()
  if command -v ccache >/dev/null; then
    launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  fi
  # As ../shared/cts/README.md: the system's OpenCL headers and ICD loader; gcc 12/13 warn
  # where the tag's compilers did not, and the tag's sources miss an #include <cstdint>.
  libdir=$(dirname "$(find /usr/lib /usr/lib64 -name 'libOpenCL.so' 2>/dev/null | head -n1)")
  log "configuring $src into $bdir"
  cmake -S "$src" -B "$bdir" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCL_INCLUDE_DIR=/usr/include -DCL_LIB_DIR="$libdir" -DOPENCL_LIBRARIES=OpenCL \
    -DCMAKE_CXX_FLAGS="-include cstdint -w" -DCMAKE_C_FLAGS=-w "${launcher[@]}" \
    >"$top/configure.log" 2>&1 || { tail -n 30 "$top/configure.log" >&2; log "configure failed"; exit 1; }
  echo "$src" >"$bdir/cts-src"
fi
log "building (log: $top/build.log)"
# -k 0: a binary that does not build is reported as such; the others still run.
ninja -C "$bdir" -k 0 -j "$jobs" >"$top/build.log" 2>&1 || log "some CTS targets failed to build"
flock -u 9
exec 9>&-

# ---- what to run ------------------------------------------------------------------------------
# Every test_<name> the build made, wherever its directory (test_svm is in
# test_conformance/SVM, the images binaries in test_conformance/images/...).
declare -A exe_of=()
while IFS= read -r f; do
  b=${f##*/test_}
  [[ -n ${exe_of[$b]:-} ]] || exe_of[$b]=$f
done < <(find "$bdir/test_conformance" -type f -perm -u+x -name 'test_*' ! -name '*.*' | sort)
mapfile -t all < <(printf '%s\n' "${!exe_of[@]}" | sort)
read -r -a binaries <<<"${CTS_BINARIES:-${all[*]}}"
# A pocld left by an interrupted run: stop it before its state file goes.
[[ ! -f $work/pocld.state ]] || "$repo/tests/remote/pocld_fixture.sh" stop "$work/pocld.state" || true
rm -rf "$work"
mkdir -p "$work"
runnable=()
for b in "${binaries[@]}"; do
  exe=${exe_of[$b]:-}
  if [[ -n $exe ]]; then
    # The sub-test list, without touching a device: "-list" prints it after "Test names:",
    # test_printf's own parser rejects "-list" and prints it in its usage; both one a line
    # after a tab. Binaries with parsers of their own (test_half, test_select) refuse it
    # or run their tests instead: bounded, and an empty list then (the report counts
    # what the runs print).
    (cd "$(dirname "$exe")" && timeout -k 5 30 "$exe" -list 2>&1 </dev/null || true) \
      | sed -n 's/^\t\([A-Za-z0-9_]*\)$/\1/p' >"$work/$b.list"
    echo "$exe" >"$work/$b.exe"
    runnable+=("$b")
  else
    log "test_$b was not built (see $top/build.log)"
    : >"$work/$b.notbuilt"
  fi
  var=CTS_ARGS_$b
  echo "${!var:-}" >"$work/$b.args"
done

# ---- the pocld: the fixture, with CTS_POCLD_ENV applied through a wrapper named pocld ----
state=$work/pocld.state
fixture_env=()
if [[ ${#pocld_env[@]} != 0 ]]; then
  mkdir -p "$work/pocld-wrapper"
  {
    echo '#!/bin/sh'
    printf 'exec env'; printf ' %q' "${pocld_env[@]}" "$pocl_build/pocld/pocld"; echo ' "$@"'
  } >"$work/pocld-wrapper/pocld"
  chmod +x "$work/pocld-wrapper/pocld"
  fixture_env=(POCLD_FIXTURE_BINARY="$work/pocld-wrapper/pocld")
fi
env "${fixture_env[@]}" "$repo/tests/remote/pocld_fixture.sh" start "$state" \
  "$pocl_build/pocld/pocld" "$pocl_build"
stop_pocld() {
  if [[ -f $state ]]; then
    "$repo/tests/remote/pocld_fixture.sh" stop "$state" || echo died >"$work/pocld.died"
  fi
}
trap stop_pocld EXIT

# For the record: the commit of the tree whose build runs, and whether it had local changes.
commit=$(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)
git -C "$repo" diff --quiet HEAD 2>/dev/null || commit="$commit with uncommitted changes"

# ---- the runs: local and remote of every binary, CTS_JOBS at once, slowest first ----------
deadline=$(( $(date +%s) + budget ))
run_one() {   # binary mode
  local b=$1 mode=$2 exe dir args left rc=0 start
  exe=$(cat "$work/$b.exe")
  dir=$(dirname "$exe")
  read -r -a args <"$work/$b.args" || args=()
  left=$(( deadline - $(date +%s) ))
  (( left < per_run )) || left=$per_run
  (( left > 0 )) || left=1
  start=$(date +%s)
  cd "$dir"
  export CL_CONFORMANCE_RESULTS_FILENAME=$work/$b.$mode.json
  if [[ $mode == local ]]; then
    timeout -k 10 "$left" env "${local_env[@]}" "$exe" "${args[@]}" \
      >"$work/$b.$mode.log" 2>&1 || rc=$?
    # A vendor runtime that hangs on its own (no remote in the process) runs once more,
    # its first log kept: a hang through remote is never retried.
    left=$(( deadline - $(date +%s) ))
    if [[ $rc == 124 && ${CTS_RETRY_LOCAL_HANG:-0} == 1 ]] && (( left > 0 )); then
      log "test_$b local: cut after $(( $(date +%s) - start )) s, hung: once more"
      mv "$work/$b.$mode.log" "$work/$b.$mode.hung.log"
      (( left < per_run )) || left=$per_run
      rc=0
      timeout -k 10 "$left" env "${local_env[@]}" "$exe" "${args[@]}" \
        >"$work/$b.$mode.log" 2>&1 || rc=$?
    fi
  else
    timeout -k 10 "$left" "$repo/tests/remote/run_remote.sh" "$state" "$pocl_build" \
      env "${remote_env[@]}" "$exe" "${args[@]}" >"$work/$b.$mode.log" 2>&1 || rc=$?
  fi
  echo "$rc $(( $(date +%s) - start ))" >"$work/$b.$mode.rc"
  log "test_$b $mode: exit $rc after $(( $(date +%s) - start )) s"
}
# Slowest first on pthread (measured): compiler, api, buffers and printf take minutes.
# Every local run before the remote ones: a pocld serving PoCL builds with the local
# run's PoCL kernel cache, so a remote run that follows its local one finds its kernels
# built instead of compiling each at the same time.
order=(compiler api buffers printf atomics events profiling mem_host_flags computeinfo)
queue=()
for mode in local remote; do
  for b in "${order[@]}" "${runnable[@]}"; do
    [[ " ${runnable[*]} " == *" $b "* && " ${queue[*]} " != *" $b:$mode "* ]] || continue
    queue+=("$b:$mode")
  done
done
# A binary's remote run starts only after its local run has ended: pocld's builds
# of the same device then find the local run's kernels in PoCL's kernel cache
# instead of compiling them again beside it. Until then the next run in the queue
# goes first.
pending=("${queue[@]}")
while (( ${#pending[@]} > 0 )); do
  while (( $(jobs -rp | wc -l) >= jobs )); do wait -n || true; done
  pick=
  for i in "${!pending[@]}"; do
    b=${pending[$i]%%:*}
    if [[ ${pending[$i]#*:} == local || -f $work/$b.local.rc ]]; then
      pick=$i
      break
    fi
  done
  # Nothing may start yet while a local run is running: wait for a run to end. With
  # none running (a local run the budget left out), the first one goes (and is skipped).
  if [[ -z $pick ]]; then
    if [[ -n $(jobs -rp) ]]; then wait -n || true; continue; fi
    pick=0
  fi
  item=${pending[$pick]}
  unset "pending[$pick]"
  pending=("${pending[@]}")
  if (( $(date +%s) >= deadline )); then
    log "budget of $budget s spent: ${item%%:*} ${item#*:} not run"
    continue
  fi
  run_one "${item%%:*}" "${item#*:}" &
done
wait

stop_pocld
trap - EXIT
[[ ! -f $work/pocld.died ]] || log "pocld died during the run (log: $work/pocld.log)"

python3 "$repo/tools/cts_report.py" --work "$work" --exceptions "$exceptions" \
  --binaries "${binaries[@]}" --commit "$commit"
