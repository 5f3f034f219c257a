#!/usr/bin/env bash
# Install the Debian/Ubuntu packages the build and the tests need.
# Idempotent: does nothing (and needs no network) when everything is installed.
#   tools/setup.sh          full build: LLVM/Clang 15 + upstream PoCL 3.1 source (Debian 12)
#   tools/setup.sh --thin   thin build: remote client + pocld only, no LLVM (also Ubuntu 24.04)
# The full build also gets the real OpenCL clients that tests/clients runs (label "clients"):
# Debian's clblast-tests and clpeak, pyopencl in a venv under $BUILD_DIR (PyPI), dpctl and
# dpnp (Intel's SYCL runtime) in another (tests/clients/setup_sycl.sh); and
# Debian's own PoCL as .deb files in $BUILD_DIR/debian-pocl, for the package test.
# apt-get's output goes to $BUILD_DIR/logs/setup.log (default <repo>/build); on failure
# its last lines are printed.
set -euo pipefail

thin=0
for arg in "$@"; do
  case "$arg" in
    --thin) thin=1 ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) echo "setup.sh: unknown argument: $arg" >&2; exit 2 ;;
  esac
done
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_root=${BUILD_DIR:-$repo/build}
log=$build_root/logs/setup.log

# Common to both builds: compiler, build tools, ICD loader, tools used by the scripts/tests.
# libssl-dev: HMAC for pre-shared keys (doc/security.md); libucx-dev: bulk payloads over UCX
# (RDMA, shared memory; doc/protocol.md, Transports); both builds also build without them.
# dpkg-dev: dpkg-shlibdeps for tools/package.sh. libjemalloc-dev: pocld's malloc
# (pocld/CMakeLists.txt; it builds without it too). libavahi-client-dev: DNS-SD,
# pocld's --advertise and the client's POCL_REMOTE_DISCOVERY (both build without it).
pkgs=(cmake ninja-build g++ pkg-config ccache python3 patch xz-utils
      ocl-icd-libopencl1 ocl-icd-opencl-dev ocl-icd-dev opencl-headers clinfo libssl-dev
      libucx-dev dpkg-dev libjemalloc-dev libavahi-client-dev)
if [[ $thin == 0 ]]; then
  # Kernel compiler for the CPU devices, hwloc for their topology, and upstream's tarball.
  # libclang-common-15-dev: clang-15's libFuzzer and sanitizer runtimes (remote/fuzz_decode).
  # llvm-spirv-15: the SPIR-V translator that PoCL's CMake looks for (ENABLE_SPIRV: the CPU
  # devices take SPIR-V, clCreateProgramWithIL); the tests make their SPIR-V with it too.
  pkgs+=(pocl-source llvm-15-dev clang-15 libclang-15-dev libclang-cpp15-dev
         libclang-common-15-dev llvm-spirv-15 libhwloc-dev zlib1g-dev libzstd-dev
         # FFmpeg's libraries for the HEVC decoder device; ffmpeg (with libx265) makes
         # and decodes the tests' clips.
         libavcodec-dev libavutil-dev libswscale-dev ffmpeg
         # The package tests: systemd-analyze verify on the unit, and the unit's
         # system call filters emulated with libseccomp (tests/remote/service_sandbox.py).
         systemd python3-seccomp
         # gdb: a remote test that sees its servers hang prints their threads' stacks.
         gdb
         # remote/discovery_netns runs its own avahi-daemon and D-Bus system bus in
         # each network namespace.
         avahi-daemon dbus-daemon)
  client_pkgs=(clblast-tests clpeak python3-venv)
else
  client_pkgs=()
fi

# Only packages that are not installed yet (dpkg-query prints "install ok installed").
not_installed() {
  local p
  for p in "$@"; do
    if [[ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)" != "install ok installed" ]]; then
      echo "$p"
    fi
  done
}
sudo=()
if [[ $(id -u) != 0 ]]; then sudo=(sudo); fi
export DEBIAN_FRONTEND=noninteractive
# apt-get's output into the log, which a run that installs nothing leaves alone.
log_started=0
logged() {
  if [[ $log_started == 0 ]]; then
    mkdir -p "$(dirname "$log")"
    : >"$log"
    log_started=1
  fi
  echo "# $*" >>"$log"
  "$@" >>"$log" 2>&1
}
updated=0
apt_install() {
  if [[ $updated == 0 ]]; then
    logged "${sudo[@]}" apt-get update || return
    updated=1
  fi
  logged "${sudo[@]}" apt-get install -y --no-install-recommends "$@"
}

mapfile -t missing < <(not_installed "${pkgs[@]}")
if [[ ${#missing[@]} == 0 ]]; then
  echo "setup.sh: all ${#pkgs[@]} packages already installed"
else
  echo "setup.sh: installing: ${missing[*]} (log: $log)"
  if ! apt_install "${missing[@]}"; then
    tail -n 40 "$log" >&2
    echo "setup.sh: FAILED: installing ${missing[*]} (log: $log)" >&2
    exit 1
  fi
fi

# Debian's own PoCL as .deb files, not installed: package/install unpacks them next to
# our packages in its throwaway root (their dependencies are among the packages above).
if [[ $thin == 0 ]]; then
  deb_dir=$build_root/debian-pocl
  debian_pocl=()
  for p in pocl-opencl-icd libpocl2 libpocl2-common; do
    compgen -G "$deb_dir/${p}_*.deb" >/dev/null || debian_pocl+=("$p")
  done
  if [[ ${#debian_pocl[@]} != 0 ]]; then
    echo "setup.sh: downloading Debian's ${debian_pocl[*]} into $deb_dir (log: $log)"
    mkdir -p "$deb_dir"
    # apt-get download writes into the current directory.
    download() {
      local rc=0
      cd "$deb_dir" && logged apt-get download "${debian_pocl[@]}" || rc=$?
      cd "$repo"
      return "$rc"
    }
    if ! download && ! { [[ $updated == 0 ]] && logged "${sudo[@]}" apt-get update && download; }; then
      tail -n 20 "$log" >&2
      echo "setup.sh: FAILED: downloading ${debian_pocl[*]} (log: $log)" >&2
      exit 1
    fi
  fi
fi

# The clients are not needed to build or to run the other tests: if one cannot be
# installed, say so; its test then skips, naming what is missing.
if [[ ${#client_pkgs[@]} != 0 ]]; then
  mapfile -t missing < <(not_installed "${client_pkgs[@]}")
  if [[ ${#missing[@]} != 0 ]]; then
    echo "setup.sh: installing the clients' packages: ${missing[*]} (log: $log)"
    if ! apt_install "${missing[@]}"; then
      grep '^E: ' "$log" | tail -n 5 >&2 || true
      echo "setup.sh: WARNING: could not install ${missing[*]}: their clients/ tests will skip (log: $log)" >&2
    fi
  fi
  "$repo/tests/clients/setup_clients.sh" "$build_root" \
    || echo "setup.sh: WARNING: pyopencl could not be installed: clients/pyopencl will skip" >&2
  "$repo/tests/clients/setup_sycl.sh" "$build_root" \
    || echo "setup.sh: WARNING: dpctl/dpnp could not be installed: clients/dpctl and clients/dpnp will skip" >&2
fi
