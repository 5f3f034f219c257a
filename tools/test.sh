#!/usr/bin/env bash
# Set up, build (incremental: seconds when nothing changed) and run every test:
# upstream PoCL's suite on pthread plus ours (label "remote": pocld fixture, example,
# upstream suite through the remote driver; label "package": the Debian packages, built
# and installed into a throwaway root). Exits non-zero if anything fails.
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

# ctest output is also kept in a log, to repeat its summary line at the very end.
mkdir -p "$build_root"
log=$build_root/ctest.log
rc=0
(cd "$bdir" && ctest --output-on-failure -j"$(nproc)" --timeout 600 "$@") 2>&1 | tee "$log" \
  || rc=$?
# With pipefail, rc is ctest's status (tee does not fail).
summary=$(grep -E '^[0-9]+% tests passed' "$log" | tail -n1 || true)
echo
echo "test.sh: ${summary:-no ctest summary line (see $log)}"
if [[ $rc != 0 ]]; then
  echo "test.sh: FAILED (ctest exit status $rc; log: $log)" >&2
  exit "$rc"
fi
sanitizer_logs=
if [[ ${SKIP_SANITIZERS:-0} == 1 && ${CI:-} != true ]]; then
  echo "test.sh: sanitizer runs skipped (SKIP_SANITIZERS=1)"
else
  "$repo/tools/sanitize.sh" asan
  "$repo/tools/sanitize.sh" tsan
  sanitizer_logs=" $build_root/sanitize-asan/ctest.log $build_root/sanitize-tsan/ctest.log"
fi
echo "test.sh: all tests passed"
echo "test.sh: logs: $build_root/logs/ (setup, CMake and ninja of each build), $log$sanitizer_logs (ctest)"
