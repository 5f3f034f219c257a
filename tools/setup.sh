#!/usr/bin/env bash
# Install the Debian/Ubuntu packages the build and the tests need.
# Idempotent: does nothing (and needs no network) when everything is installed.
#   tools/setup.sh          full build: LLVM/Clang 15 + upstream PoCL 3.1 source (Debian 12)
#   tools/setup.sh --thin   thin build: remote client + pocld only, no LLVM (also Ubuntu 24.04)
set -euo pipefail

thin=0
for arg in "$@"; do
  case "$arg" in
    --thin) thin=1 ;;
    -h|--help) sed -n '2,6p' "$0"; exit 0 ;;
    *) echo "setup.sh: unknown argument: $arg" >&2; exit 2 ;;
  esac
done

# Common to both builds: compiler, build tools, ICD loader, tools used by the scripts/tests.
pkgs=(cmake ninja-build g++ pkg-config ccache python3 patch xz-utils
      ocl-icd-libopencl1 ocl-icd-opencl-dev ocl-icd-dev opencl-headers clinfo)
if [[ $thin == 0 ]]; then
  # Kernel compiler for the CPU devices, hwloc for their topology, and upstream's tarball.
  # libclang-common-15-dev: clang-15's libFuzzer and sanitizer runtimes (remote/fuzz_decode).
  pkgs+=(pocl-source llvm-15-dev clang-15 libclang-15-dev libclang-cpp15-dev
         libclang-common-15-dev libhwloc-dev zlib1g-dev libzstd-dev)
fi

# Only packages that are not installed yet (dpkg-query prints "install ok installed").
missing=()
for p in "${pkgs[@]}"; do
  if [[ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)" != "install ok installed" ]]; then
    missing+=("$p")
  fi
done
if [[ ${#missing[@]} == 0 ]]; then
  echo "setup.sh: all ${#pkgs[@]} packages already installed"
  exit 0
fi

echo "setup.sh: installing: ${missing[*]}"
sudo=()
if [[ $(id -u) != 0 ]]; then sudo=(sudo); fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update
"${sudo[@]}" apt-get install -y --no-install-recommends "${missing[@]}"
