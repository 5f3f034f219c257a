#!/usr/bin/env bash
# Runs dpnp_remote.py on a remote device: starts a pocld on a free loopback port
# serving Intel's OpenCL CPU runtime, runs the program with this build's libpocl as
# the only OpenCL platform (POCL_DEVICES=remote), stops pocld.
#   examples/remote/run_dpnp.sh
# Needs tools/setup.sh's venv-sycl (dpnp) and vendors/intel (Intel's runtime) and
# tools/build.sh's build; BUILD_DIR as for those (default build).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build_root=${BUILD_DIR:-$repo/build}
bdir=$build_root/pocl
python=$build_root/venv-sycl/bin/python
vendors=$build_root/vendors/intel
for need in "$python" "$vendors/intel-cpu.icd" "$bdir/pocld/pocld"; do
  [[ -e $need ]] || { echo "run_dpnp.sh: missing $need (tools/setup.sh, tools/build.sh)" >&2; exit 1; }
done

dir=$(mktemp -d "${TMPDIR:-/tmp}/dpnp-pocld.XXXXXX")
state=$dir/pocld.state
fixture=$repo/tests/remote/pocld_fixture.sh
trap '"$fixture" stop "$state" 2>/dev/null || true; rm -rf "$dir"' EXIT
POCLD_SERVED_VENDORS=$vendors "$fixture" start "$state" "$bdir/pocld/pocld" "$bdir"
# '*:cpu': this runtime's OpenCL adapter is inside its UR loader, which a selector
# naming the backend ("opencl:...") filters out (doc/clients.md, SYCL).
ONEAPI_DEVICE_SELECTOR='*:cpu' "$repo/tests/remote/run_remote.sh" "$state" "$bdir" \
  "$python" "$repo/examples/remote/dpnp_remote.py"
