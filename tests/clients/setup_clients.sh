#!/usr/bin/env bash
# Install pyopencl for the "clients" tests, and Intel's OpenCL CPU runtime: a venv from
# PyPI and pyopencl's sdist's test suite.
#   tests/clients/setup_clients.sh BUILD_ROOT
# Creates BUILD_ROOT/venv with requirements.txt (pinned), unpacks the test/ directory
# of pyopencl's sdist (same version as the wheel) into BUILD_ROOT/pyopencl-tests, and
# writes BUILD_ROOT/vendors/intel/intel-cpu.icd naming the venv's libintelocl.so: an
# ICD directory of the project's own, for OCL_ICD_VENDORS (never the system's).
# Idempotent: a stamp holds requirements.txt's hash; nothing is fetched when it matches.
# Called by tools/setup.sh; the Debian packages (clblast-tests, clpeak, clinfo,
# python3-venv) come from there. On failure it exits non-zero and leaves no stamp, so
# clients/pyopencl skips with a message naming this script.
# The output of venv, pip and tar goes to BUILD_ROOT/logs/setup_clients.log; on failure
# its last lines are printed.
set -euo pipefail

if [[ $# != 1 ]]; then
  sed -n '3,3p' "$0" | sed 's/^# //' >&2
  exit 2
fi
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
mkdir -p "$1"
root=$(cd "$1" && pwd)
venv=$root/venv
tests=$root/pyopencl-tests
stamp=$root/venv.stamp
reqs=$here/requirements.txt

want=$(sha256sum <"$reqs" | cut -d' ' -f1)
intel_icd=$root/vendors/intel/intel-cpu.icd
if [[ -f $stamp && "$(cat "$stamp")" == "$want" && -x $venv/bin/python && -d $tests \
      && -f $intel_icd ]]; then
  echo "setup_clients.sh: pyopencl venv up to date ($venv)"
  exit 0
fi

rm -f "$stamp"
log=$root/logs/setup_clients.log
mkdir -p "$(dirname "$log")"
: >"$log"
name=setup_clients.sh
# shellcheck source=venv_util.sh
source "$(dirname "${BASH_SOURCE[0]}")/venv_util.sh"
py=$(debian_python)
echo "setup_clients.sh: creating $venv with $($py --version) (log: $log)"
rm -rf "$venv"
logged "$py" -m venv "$venv"
logged "$venv/bin/pip" install --quiet --disable-pip-version-check --only-binary :all: -r "$reqs"

version=$("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("pyopencl"))')
dl=$(mktemp -d "${TMPDIR:-/tmp}/pyopencl-sdist.XXXXXX")
trap 'rm -rf "$dl"' EXIT
# --no-build-isolation: pip reads the sdist's metadata with the venv's scikit-build-core
# instead of building its whole build-system (numpy, cmake, ...) from source.
logged "$venv/bin/pip" download --quiet --disable-pip-version-check --no-deps \
  --no-binary pyopencl --no-build-isolation -d "$dl" "pyopencl==$version"
rm -rf "$tests"
mkdir -p "$tests"
logged tar -xzf "$dl/pyopencl-$version.tar.gz" -C "$tests" --strip-components=1 \
  "pyopencl-$version/test" "pyopencl-$version/pyproject.toml"
# libintelocl.so finds the libraries beside it (its RUNPATH is $ORIGIN): no
# LD_LIBRARY_PATH, which would also put the wheel's own libOpenCL.so.1 first.
intel_lib=$("$venv/bin/python" -c 'import sys; print(sys.prefix)')/lib/libintelocl.so
[[ -f $intel_lib ]] || { echo "setup_clients.sh: $intel_lib missing after install" >&2; exit 1; }
mkdir -p "$(dirname "$intel_icd")"
echo "$intel_lib" >"$intel_icd"
echo "$want" >"$stamp"
echo "setup_clients.sh: pyopencl $version in $venv, its tests in $tests/test"
