#!/usr/bin/env bash
# Set up, build (incremental: seconds when nothing changed) and run every test:
# ours (label "remote": pocld fixture, example, upstream's suite on pthread and again
# through the remote driver; label "package": the Debian packages, built and installed
# into a throwaway root). Exits non-zero if anything fails.
# Extra arguments go to ctest, e.g. tools/test.sh -L remote
# Then the remote tests again under ASan+UBSan and under TSan (tools/sanitize.sh asan
# and tsan, thin sanitized builds). SKIP_SANITIZERS=1 skips them locally; with CI=true
# they always run.
# Setup and builds print one line per step (apt's, CMake's and ninja's output goes to
# $BUILD_DIR/logs); ctest's output is printed as it comes. The last line names the logs.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_root=${BUILD_DIR:-$repo/build}
bdir=$build_root/pocl

"$repo/tools/setup.sh"
"$repo/tools/build.sh"
# The thin build that the packages come from (tests package/*): built here rather than
# inside a test, which would compete with the other tests for the two cores.
"$repo/tools/build.sh" --package

run_sanitizers=1
[[ ${SKIP_SANITIZERS:-0} == 1 && ${CI:-} != true ]] && run_sanitizers=0
# The sanitized builds compile at the lowest priority while ctest runs: many of its tests
# wait on sockets, timers and servers, and the builds take that idle time instead of
# minutes of their own after ctest (tools/README.md, test.sh).
bg_builds=
if [[ $run_sanitizers == 1 ]]; then
  mkdir -p "$build_root/logs"
  nice -n 19 bash -c '"$1" --sanitize=asan && "$1" --sanitize=tsan' _ "$repo/tools/build.sh" \
    >"$build_root/logs/sanitizer-builds.log" 2>&1 &
  bg_builds=$!
fi

# How the tests share the cores: many tests wait on sockets, timers and servers, so ctest
# runs twice as many at once as there are cores. The suites that keep two cores busy
# themselves (the CTS, the client suites, upstream's suite through remote) say so with
# PROCESSORS 2 (tools/README.md, "The test loop").
mkdir -p "$build_root"
cores=$(nproc)
# ctest output is also kept in a log, to repeat its summary line at the very end.
log=$build_root/ctest.log
rc=0
# -R: our tests. Upstream's suite runs on pthread inside remote/upstream_via_remote, which
# fails when a test fails there, before it runs the suite again through remote.
(cd "$bdir" && ctest --output-on-failure -j"$(( 2 * cores ))" --timeout 600 \
  -R '^(remote|clients|cts|package)/' "$@") 2>&1 | tee "$log" || rc=$?
# The background builds' status does not matter here: sanitize.sh builds again
# (incrementally) and reports a failure itself.
[[ -z $bg_builds ]] || wait "$bg_builds" || true
# With pipefail, rc is ctest's status (tee does not fail).
summary=$(grep -E '^[0-9]+% tests passed' "$log" | tail -n1 || true)
echo
echo "test.sh: ${summary:-no ctest summary line (see $log)}"
if [[ $rc != 0 ]]; then
  echo "test.sh: FAILED (ctest exit status $rc; log: $log)" >&2
  exit "$rc"
fi
sanitizer_logs=
if [[ $run_sanitizers == 0 ]]; then
  echo "test.sh: sanitizer runs skipped (SKIP_SANITIZERS=1)"
else
  "$repo/tools/sanitize.sh" asan
  "$repo/tools/sanitize.sh" tsan
  sanitizer_logs=" $build_root/sanitize-asan/ctest.log $build_root/sanitize-tsan/ctest.log"
fi
echo "test.sh: all tests passed"
echo "test.sh: logs: $build_root/logs/ (setup, CMake and ninja of each build), $log$sanitizer_logs (ctest)"
