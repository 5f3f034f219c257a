#!/usr/bin/env bash
# Install dpctl and dpnp for the "sycl" tests: a venv of their own from PyPI.
#   tests/clients/setup_sycl.sh BUILD_ROOT
# Creates BUILD_ROOT/venv-sycl with requirements-sycl.txt (pinned; about 840 MB of
# wheels). A venv apart from BUILD_ROOT/venv (pyopencl's): Intel's SYCL runtime brings
# its own OpenCL ICD loader and MKL, which pyopencl's tests must not pick up. The
# packages' test suites come inside the wheels (dpctl/tests, dpnp/tests).
# Idempotent: a stamp holds requirements-sycl.txt's hash; nothing is fetched when it
# matches. Called by tools/setup.sh; on failure it exits non-zero and leaves no stamp,
# so the clients/dpctl and clients/dpnp tests skip with a message naming this script.
# The output of venv and pip goes to BUILD_ROOT/logs/setup_sycl.log; on failure its
# last lines are printed.
set -euo pipefail

if [[ $# != 1 ]]; then
  sed -n '3,3p' "$0" | sed 's/^# //' >&2
  exit 2
fi
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
mkdir -p "$1"
root=$(cd "$1" && pwd)
venv=$root/venv-sycl
stamp=$root/venv-sycl.stamp
reqs=$here/requirements-sycl.txt

want=$(sha256sum <"$reqs" | cut -d' ' -f1)
if [[ -f $stamp && "$(cat "$stamp")" == "$want" && -x $venv/bin/python ]]; then
  echo "setup_sycl.sh: dpctl/dpnp venv up to date ($venv)"
  exit 0
fi

rm -f "$stamp"
log=$root/logs/setup_sycl.log
mkdir -p "$(dirname "$log")"
: >"$log"
name=setup_sycl.sh
# shellcheck source=venv_util.sh
source "$(dirname "${BASH_SOURCE[0]}")/venv_util.sh"
py=$(debian_python)
echo "setup_sycl.sh: creating $venv with $($py --version) (log: $log)"
rm -rf "$venv"
logged "$py" -m venv "$venv"
logged "$venv/bin/pip" install --quiet --disable-pip-version-check --only-binary :all: \
  --no-deps -r "$reqs"
# --no-deps above installs exactly the pins; this says whether one is missing.
logged "$venv/bin/pip" check
logged "$venv/bin/python" -c 'import dpctl, dpnp'
echo "$want" >"$stamp"
echo "setup_sycl.sh: dpctl $("$venv/bin/python" -c 'import dpctl; print(dpctl.__version__)')" \
  "and dpnp $("$venv/bin/python" -c 'import dpnp; print(dpnp.__version__)') in $venv"
