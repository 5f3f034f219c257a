#!/usr/bin/env bash
# The main job: set up, build, start a pocld on loopback (free port, serving the local
# pthread device), run examples/remote/vecadd.c through the remote driver (it verifies
# every element), stop pocld. Fails loudly if any step fails.
# Prints one line per step; the output of apt, CMake and ninja goes to logs under
# $BUILD_DIR/logs, named on the last line (on a failure: the failing step's errors and log).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_root=${BUILD_DIR:-$repo/build}
bdir=$build_root/pocl

"$repo/tools/setup.sh"
"$repo/tools/build.sh"

# Own state file, so this never touches a pocld that a ctest run started.
state=$build_root/main-pocld.state
fixture=$repo/tests/remote/pocld_fixture.sh
# Binary locations as CMake wrote them (tests/remote/CMakeLists.txt).
paths=$bdir/tests/remote/paths.env
pocld=$(sed -n 's/^POCLD=//p' "$paths")
vecadd=$(sed -n 's/^REMOTE_VECADD=//p' "$paths")
[[ -x $pocld && -x $vecadd ]] || { echo "main.sh: pocld/remote_vecadd not built (see $paths)" >&2; exit 1; }

"$fixture" start "$state" "$pocld" "$bdir"
trap '"$fixture" stop "$state" || echo "main.sh: stopping pocld failed" >&2' EXIT

echo "main.sh: running the vector-add example through the remote device"
if ! "$repo/tests/remote/run_remote.sh" "$state" "$bdir" "$vecadd"; then
  pocld_log=$(sed -n 's/^POCLD_LOG=//p' "$state")
  echo "main.sh: FAILED: the example did not verify through the remote device" >&2
  echo "main.sh: ---- last lines of the pocld log ($pocld_log) ----" >&2
  tail -n 30 "$pocld_log" >&2 || true
  exit 1
fi
# Stopped here rather than on exit, so that the logs are named last.
pocld_log=$(sed -n 's/^POCLD_LOG=//p' "$state")
trap - EXIT
"$fixture" stop "$state" || echo "main.sh: stopping pocld failed" >&2
echo "main.sh: OK"
logs=()
for f in setup setup_clients setup_sycl patches pocl-configure pocl-build; do
  if [[ -f $build_root/logs/$f.log ]]; then logs+=("$build_root/logs/$f.log"); fi
done
echo "main.sh: logs: ${logs[*]} $pocld_log (pocld)"
