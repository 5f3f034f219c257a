#!/usr/bin/env bash
# The conformance figures of doc/conformance.md on a GPU machine, in one go: the thin build,
# the CTS over NVIDIA's OpenCL natively and through remote (tools/cts.sh), then the remote
# tests that have a native mode (tests/remote/test_{svm,program_binaries,program_includes,
# event_status,mem_objects}.c, built with cc against the ICD loader), natively and through a
# pocld serving the same GPU.
#   tools/gpu_conformance.sh CTS POCL_TARBALL
# CTS: the CTS tarball or tree (tools/cts.sh); POCL_TARBALL: Debian 12's pocl.tar.xz.
# Env: BUILD_DIR (default /tmp/b), NV (default /usr/lib/libnvidia-opencl.so.1).
# Copies results.md and the CTS logs to $OUT when set (the device tool's output folder).
set -uo pipefail
[[ $# -eq 2 ]] || { sed -n '7,7p' "$0" | sed 's/^# //' >&2; exit 2; }
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cts=$(realpath "$1")
export POCL_TARBALL=$(realpath "$2") BUILD_DIR=${BUILD_DIR:-/tmp/b} JOBS=${JOBS:-$(nproc)}
nv=${NV:-/usr/lib/libnvidia-opencl.so.1}
thin=$BUILD_DIR/thin
out=${OUT:-$BUILD_DIR}
cd "$repo"
t0=$(date +%s)
bash tools/build.sh --thin >"$out/build.log" 2>&1 || { tail -40 "$out/build.log"; exit 1; }
echo "== thin build done at $(( $(date +%s) - t0 )) s"
CTS_JOBS=${CTS_JOBS:-6} CTS_BUDGET=${CTS_BUDGET:-300} CTS_TIMEOUT=${CTS_TIMEOUT:-300} \
POCL_BUILD=$thin CTS_LOCAL_ENV="-u OCL_ICD_VENDORS OCL_ICD_FILENAMES=$nv" \
  CTS_POCLD_ENV="-u OCL_ICD_VENDORS -u POCL_DEVICES OCL_ICD_FILENAMES=$nv" tools/cts.sh "$cts"
echo "cts.sh exit $? at $(( $(date +%s) - t0 )) s"
cp "$BUILD_DIR/cts/run/results.md" "$out/" 2>/dev/null
tar -czf "$out/cts-run.tgz" -C "$BUILD_DIR/cts" run 2>/dev/null

echo "== remote tests with a native mode"
d=$BUILD_DIR/native-tests
mkdir -p "$d"
tests=(svm program_binaries program_includes event_status mem_objects)
for t in "${tests[@]}"; do
  cc -O2 -Itests/remote -Iprotocol/wire -Ilib/CL/devices/remote -o "$d/$t" "tests/remote/test_$t.c" \
     -lOpenCL -lpthread -lm 2>/dev/null || echo "test_$t: does not build"
done
printf '#!/bin/sh\nexec env -u OCL_ICD_VENDORS -u POCL_DEVICES OCL_ICD_FILENAMES=%s %s "$@"\n' \
  "$nv" "$thin/pocld/pocld" >"$d/pocld"
chmod +x "$d/pocld"
POCLD_FIXTURE_BINARY=$d/pocld tests/remote/pocld_fixture.sh start "$d/p.state" "$thin/pocld/pocld" "$thin"
for t in "${tests[@]}"; do
  [[ -x $d/$t ]] || continue
  (cd "$d" && timeout 200 env -u OCL_ICD_VENDORS OCL_ICD_FILENAMES=$nv "./$t" local 2>&1 | tail -3) \
    | sed "s/^/native: /"
  # ocl-icd 2.3.2 finds no platform through OCL_ICD_VENDORS=<build>/ocl-vendors (doc/conformance.md)
  (cd "$d" && timeout 200 env -u OCL_ICD_FILENAMES "$repo/tests/remote/run_remote.sh" "$d/p.state" \
     "$thin" env OCL_ICD_FILENAMES=$thin/lib/CL/libpocl.so "./$t" 2>&1 | tail -3) | sed "s/^/remote: /"
done
tests/remote/pocld_fixture.sh stop "$d/p.state"
echo "== total $(( $(date +%s) - t0 )) s"
