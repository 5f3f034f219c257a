#!/usr/bin/env bash
# Build PoCL 3.1 (upstream, from Debian's pocl-source) with our patches and our
# remote driver, pocld, tests and examples.
#   tools/build.sh          full build into $BUILD_DIR/pocl (CPU devices + remote + pocld + tests)
#   tools/build.sh --thin   remote client + pocld only (no LLVM, no CPU devices) into $BUILD_DIR/thin
#   tools/build.sh --package   the thin build laid out for the packages (tools/package.sh)
#                           into $BUILD_DIR/package: prefix /usr, libpocl in a directory of its
#                           own, no POCL_BUILDING (no build-tree paths in the library)
#   tools/build.sh --sanitize=asan|tsan   the thin build with ASan+UBSan or TSan, into
#                           $BUILD_DIR/thin-asan or thin-tsan (tools/sanitize.sh runs the tests)
# Env: BUILD_DIR (default <repo>/build), POCL_TARBALL (default /usr/src/pocl.tar.xz),
#      JOBS (default nproc), EXTRA_CMAKE_ARGS (more -D settings).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_root=${BUILD_DIR:-$repo/build}
tarball=${POCL_TARBALL:-/usr/src/pocl.tar.xz}
# The exact upstream release we patch: pocl 3.1 as shipped by Debian 12's pocl-source.
tarball_sha256=db953f102fb92a49c8077786437dd827a2605207a3dd1533de7e9e83c5123e74
jobs=${JOBS:-$(nproc)}

thin=0 sanitize= package=0
for arg in "$@"; do
  case "$arg" in
    --thin) thin=1 ;;
    --sanitize=asan|--sanitize=tsan) thin=1 sanitize=${arg#--sanitize=} ;;
    --package) thin=1 package=1 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "build.sh: unknown argument: $arg" >&2; exit 2 ;;
  esac
done

mkdir -p "$build_root"
build_root=$(cd "$build_root" && pwd)
src=$build_root/src/pocl
stamp=$build_root/src/pocl.stamp

# Our directories, symlinked into the unpacked upstream tree (relative to the repo root).
our_dirs=(lib/CL/devices/remote lib/CL/devices/custom lib/CL/devices/stream lib/CL/devices/hevc pocld protocol tests/remote examples/remote)

if [[ ! -r $tarball ]]; then
  echo "build.sh: $tarball not found: install Debian's pocl-source (tools/setup.sh)" \
       "or point POCL_TARBALL at a copy of it" >&2
  exit 1
fi

# Stamp = tarball hash + every patch's name and content: re-unpack only when one changed,
# so an unchanged tree keeps its mtimes and ninja has nothing to do.
patches=()
if compgen -G "$repo/patches/*.patch" >/dev/null; then
  patches=("$repo"/patches/*.patch)   # glob order = numeric order (0001-, 0002-, ...)
fi
patch_hash=$( { for p in "${patches[@]}"; do basename "$p"; sha256sum <"$p"; done; } | sha256sum | cut -d' ' -f1)
want_stamp="tarball=$tarball_sha256 patches=$patch_hash"

if [[ ! -f $stamp || "$(cat "$stamp")" != "$want_stamp" || ! -d $src ]]; then
  echo "build.sh: verifying $tarball"
  echo "$tarball_sha256  $tarball" | sha256sum -c --quiet - || {
    echo "build.sh: $tarball is not upstream PoCL 3.1 (sha256 mismatch)" >&2; exit 1; }
  echo "build.sh: unpacking upstream PoCL into $src"
  rm -rf "$src" "$stamp" "$build_root/src/unpack.tmp"
  mkdir -p "$build_root/src/unpack.tmp"
  tar -xJf "$tarball" -C "$build_root/src/unpack.tmp"
  mv "$build_root/src/unpack.tmp/pocl" "$src"
  rmdir "$build_root/src/unpack.tmp"
  for p in "${patches[@]}"; do
    echo "build.sh: applying $(basename "$p")"
    patch -p1 --forward --quiet -d "$src" <"$p"
  done
  echo "$want_stamp" >"$stamp"
fi

# Symlink our directories into the tree (cheap, so always re-checked).
for d in "${our_dirs[@]}"; do
  mkdir -p "$(dirname "$src/$d")"
  if [[ -L $src/$d ]]; then
    [[ "$(readlink "$src/$d")" == "$repo/$d" ]] && continue
    rm "$src/$d"
  elif [[ -e $src/$d ]]; then
    echo "build.sh: $src/$d exists in upstream's tree; refusing to replace it" >&2
    exit 1
  fi
  ln -s "$repo/$d" "$src/$d"
done

common=(-G Ninja
  -DCMAKE_BUILD_TYPE=RelWithDebInfo       # Release+LTO failed to link
  -DHARDENING_ENABLE=ON
  -DCMAKE_POSITION_INDEPENDENT_CODE=ON
  -DENABLE_ICD=ON
  -DPOCL_DEBUG_MESSAGES=ON
  -DENABLE_REMOTE_CLIENT=ON
  -DENABLE_REMOTE_SERVER=ON)
if command -v ccache >/dev/null; then
  common+=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi

if [[ $thin == 1 ]]; then
  bdir=$build_root/thin${sanitize:+-$sanitize}
  # Only libpocl with the remote driver, and pocld: no kernel compiler, no CPU devices,
  # so nothing to test locally (upstream's tests and examples would find no device).
  config=(-DENABLE_LLVM=OFF -DENABLE_HOST_CPU_DEVICES=OFF
          -DENABLE_TESTS=OFF -DENABLE_EXAMPLES=OFF -DENABLE_POCLCC=OFF)
  if [[ $package == 1 ]]; then
    bdir=$build_root/package
    # libpocl and its drivers under .../pocl-remote, not where Debian's libpocl2 keeps
    # the same soname and its own drivers (.../libpocl.so.2, .../pocl/); libpocl finds
    # its drivers relative to itself (dladdr), so no path of this machine is built in.
    libdir=/usr/lib/$(gcc -print-multiarch)/pocl-remote
    # Source paths in messages (__FILE__) relative to the tree, not this machine's.
    map="-ffile-prefix-map=$src=pocl -ffile-prefix-map=$repo=pocl-r"
    config+=(-DCMAKE_INSTALL_PREFIX=/usr -DENABLE_POCL_BUILDING=OFF
             "-DPOCL_INSTALL_PUBLIC_LIBDIR=$libdir" "-DPOCL_INSTALL_PRIVATE_LIBDIR=$libdir/pocl"
             "-DCMAKE_C_FLAGS=$map" "-DCMAKE_CXX_FLAGS=$map")
  fi
  if [[ -n $sanitize ]]; then
    # Instrumented libpocl (client driver) and pocld. _FORTIFY_SOURCE (hardening) and
    # ASan's interceptors do not mix.
    flags="-fsanitize=address,undefined -fno-omit-frame-pointer"
    [[ $sanitize == tsan ]] && flags="-fsanitize=thread"
    config+=(-DHARDENING_ENABLE=OFF "-DCMAKE_C_FLAGS=$flags" "-DCMAKE_CXX_FLAGS=$flags"
             "-DCMAKE_EXE_LINKER_FLAGS=$flags" "-DCMAKE_SHARED_LINKER_FLAGS=$flags"
             "-DCMAKE_MODULE_LINKER_FLAGS=$flags")
  fi
else
  bdir=$build_root/pocl
  # One kernel-library variant for this CPU: build and tests run on the same machine.
  config=(-DWITH_LLVM_CONFIG=/usr/bin/llvm-config-15 -DKERNELLIB_HOST_CPU_VARIANTS=native
          -DENABLE_TESTS=ON -DENABLE_EXAMPLES=ON)
fi

# Extra cache settings for experiments, e.g. EXTRA_CMAKE_ARGS="-DENABLE_REMOTE_SERVER=OFF".
read -r -a extra <<<"${EXTRA_CMAKE_ARGS:-}"
args=("${common[@]}" "${config[@]}" "${extra[@]}")

# Configure only when the arguments changed (or first time); otherwise ninja itself
# re-runs cmake when a CMakeLists.txt changed, and an unchanged tree builds in seconds.
cfg_stamp=$bdir/build-sh.args
if [[ ! -f $bdir/build.ninja || ! -f $cfg_stamp || "$(cat "$cfg_stamp")" != "${args[*]}" ]]; then
  echo "build.sh: configuring $bdir"
  rm -f "$cfg_stamp"
  mkdir -p "$bdir"
  # From inside $bdir: PoCL's configure checks drop compile_test_* files into the cwd.
  (cd "$bdir" && cmake -S "$src" -B "$bdir" "${args[@]}")
  echo "${args[*]}" >"$cfg_stamp"
fi
echo "build.sh: building $bdir with $jobs jobs"
ninja -C "$bdir" -j"$jobs"
echo "build.sh: done: $bdir"
