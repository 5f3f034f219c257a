#!/usr/bin/env bash
# Build PoCL 3.1 (upstream, from Debian's pocl-source) with our patches and our
# remote driver, pocld, tests and examples.
#   tools/build.sh          full build into $BUILD_DIR/pocl (CPU devices + remote + pocld + tests)
#   tools/build.sh --thin   remote client + pocld only (no LLVM, no CPU devices) into $BUILD_DIR/thin
#   tools/build.sh --package   the thin build laid out for the packages (tools/package.sh)
#                           into $BUILD_DIR/package: prefix /usr, libpocl-remote.so.2 with its
#                           drivers built in, in a directory of its own, no POCL_BUILDING (no
#                           build-tree paths in the library)
#   tools/build.sh --sanitize=asan|tsan   the thin build with ASan+UBSan or TSan, into
#                           $BUILD_DIR/thin-asan or thin-tsan (tools/sanitize.sh runs the tests)
# Env: BUILD_DIR (default <repo>/build), POCL_TARBALL (default /usr/src/pocl.tar.xz),
#      JOBS (default nproc), EXTRA_CMAKE_ARGS (more -D settings).
# Output: one line per phase and ninja's progress in tenths; the full output of CMake and
# ninja goes to $BUILD_DIR/logs/<build>-configure.log and <build>-build.log (named last).
# On failure: the errors (ninja's FAILED steps, CMake's errors) and the log's path.
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
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "build.sh: unknown argument: $arg" >&2; exit 2 ;;
  esac
done

mkdir -p "$build_root"
build_root=$(cd "$build_root" && pwd)
src=$build_root/src/pocl
stamp=$build_root/src/pocl.stamp
logs=$build_root/logs
mkdir -p "$logs"
written=()   # the logs this run wrote, named at the end

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
# PoCL seeds its kernel cache's key with the time CMake configured it (POCL_BUILD_TIMESTAMP),
# so that a rebuilt PoCL never loads kernels that an older one compiled. CMake takes that time
# from SOURCE_DATE_EPOCH where it is set (reproducible builds): here a number made from the
# tarball's and the patches' hashes. Every build of the same PoCL sources (another clone, CI,
# the sanitized builds) then finds the kernels an earlier one compiled, and a changed patch
# starts a cache of its own. Exported for ninja too, which re-runs CMake.
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$((16#$(printf '%s' "$want_stamp" | sha256sum | cut -c1-7)))}

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
  patch_log=$logs/patches.log
  echo "build.sh: applying ${#patches[@]} patches (log: $patch_log)"
  : >"$patch_log"
  for p in "${patches[@]}"; do
    echo "== $(basename "$p")" >>"$patch_log"
    if ! patch -p1 --forward --quiet -d "$src" <"$p" >>"$patch_log" 2>&1; then
      sed -n "/^== $(basename "$p")\$/,\$p" "$patch_log" | tail -n 40 >&2
      echo "build.sh: FAILED: $(basename "$p") does not apply (log: $patch_log)" >&2
      exit 1
    fi
  done
  written+=("$patch_log")
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
    # One process may load Debian's libpocl.so.2 too (both found by the ICD loader, or an
    # application linked to Debian's): the dynamic linker matches loaded libraries by
    # soname, and a loadable driver binds to whichever libpocl.so.2 came first. So the
    # drivers are built into the library, which has a soname of its own
    # (libpocl-remote.so.2, patch 0190) and binds its own symbols (upstream's
    # -Bsymbolic), in a directory of its own: .../pocl-remote. No path of this machine
    # is built in (libpocl finds its files relative to itself, dladdr).
    libdir=/usr/lib/$(gcc -print-multiarch)/pocl-remote
    # Source paths in messages (__FILE__) relative to the tree, not this machine's.
    map="-ffile-prefix-map=$src=pocl -ffile-prefix-map=$repo=pocl-r"
    config+=(-DCMAKE_INSTALL_PREFIX=/usr -DENABLE_POCL_BUILDING=OFF
             -DENABLE_LOADABLE_DRIVERS=OFF -DPOCL_LIBRARY_OUTPUT_NAME=pocl-remote
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
  # SPIR-V input (clCreateProgramWithIL) through Debian's translator, named so that a
  # missing llvm-spirv-15 fails the configure instead of building without SPIR-V.
  spirv=/usr/bin/llvm-spirv-15
  if [[ ! -x $spirv ]]; then
    echo "build.sh: $spirv not found: install llvm-spirv-15 (tools/setup.sh)" >&2
    exit 1
  fi
  config=(-DWITH_LLVM_CONFIG=/usr/bin/llvm-config-15 -DKERNELLIB_HOST_CPU_VARIANTS=native
          -DENABLE_TESTS=ON -DENABLE_EXAMPLES=ON -DLLVM_SPIRV=$spirv -DENABLE_SPIRV=ON)
fi

# Extra cache settings for experiments, e.g. EXTRA_CMAKE_ARGS="-DENABLE_REMOTE_SERVER=OFF".
read -r -a extra <<<"${EXTRA_CMAKE_ARGS:-}"
args=("${common[@]}" "${config[@]}" "${extra[@]}")

name=$(basename "$bdir")
configure_log=$logs/$name-configure.log
build_log=$logs/$name-build.log

# CMake's errors, or the log's last lines.
cmake_errors() {
  local out
  out=$(awk '/CMake Error/ { found = 1 } found' "$1" | head -n 40)
  [[ -n $out ]] || out=$(tail -n 40 "$1")
  printf '%s\n' "$out"
}

# What ninja's failed steps said, without their compiler warnings (upstream's -Wconversion
# against LLVM's headers makes hundreds per file): each FAILED step with its errors, their
# source lines and notes, and any other output (linker, CMake errors, ...), at most 60
# lines. Where that finds nothing more than the FAILED lines (CMake re-run by ninja prints
# before its FAILED line): CMake's errors, or the log's last lines.
ninja_errors() {
  local out
  out=$(awk '
    /^FAILED: / { failed = 1; cmd = 1; show = 1; print; next }
    /^\[[0-9]+\/[0-9]+\] / || /^ninja: / { failed = 0; next }
    !failed { next }
    cmd { cmd = 0; next }                      # the command line: in the log
    /^In file included from|^ +from |: In( member| static member)? function|: In (constructor|destructor|instantiation|lambda)|: At global scope| required from |^-- / { next }
    /^ / || /: note:/ { if (show) print; next }  # source lines and notes of the last message
    /: (fatal )?error|[Ee]rror:|CMake Error|undefined reference|multiple definition/ {
      show = 1; print; next }
    /: warning:/ { show = 0; next }
    { print }
  ' "$1" | head -n 60)
  awk '!/^FAILED: / && NF { found = 1 } END { exit !found }' <<<"$out" || out=$(cmake_errors "$1")
  printf '%s\n' "$out"
  stopped=$(grep -E '^ninja: (build stopped|error)' "$1" | tail -n 1)
  [[ -z $stopped || $out == *"$stopped"* ]] || printf '%s\n' "$stopped"
}

# Configure only when the arguments changed (or first time); otherwise ninja itself
# re-runs cmake when a CMakeLists.txt changed, and an unchanged tree builds in seconds.
cfg_stamp=$bdir/build-sh.args
if [[ ! -f $bdir/build.ninja || ! -f $cfg_stamp || "$(cat "$cfg_stamp")" != "${args[*]}" ]]; then
  echo "build.sh: configuring $bdir (log: $configure_log)"
  rm -f "$cfg_stamp"
  mkdir -p "$bdir"
  # From inside $bdir: PoCL's configure checks drop compile_test_* files into the cwd.
  if ! (cd "$bdir" && cmake -S "$src" -B "$bdir" "${args[@]}") >"$configure_log" 2>&1; then
    cmake_errors "$configure_log" >&2
    echo "build.sh: FAILED: configuring $bdir (log: $configure_log)" >&2
    exit 1
  fi
  echo "${args[*]}" >"$cfg_stamp"
  written+=("$configure_log")
fi

echo "build.sh: building $bdir with $jobs jobs (log: $build_log)"
# Progress from ninja's "[finished/total] " status lines (one a step, ninja's output not
# being a terminal): the number of steps, then every tenth done. A run with nothing to do
# leaves the log of the last one that did something (its warnings, say).
new_log=$build_log.new
rc=0
{ echo "# build.sh, $(date '+%F %T'): ninja -C $bdir -j$jobs"
  NINJA_STATUS='[%f/%t] ' ninja -C "$bdir" -j"$jobs" 2>&1; } | tee "$new_log" | awk '
  function say(s) { print "build.sh: " s; fflush() }
  /^\[[0-9]+\/[0-9]+\] / {
    if (/Re-running CMake/) { say("CMake re-runs (a CMakeLists.txt changed)"); started = 0; next }
    if (/Re-checking globbed directories/) next
    match($0, /^\[[0-9]+\/[0-9]+\]/)
    split(substr($0, 2, RLENGTH - 2), a, "/")
    done = a[1] + 0; total = a[2] + 0
    if (!started) { started = 1; tenth = 0; say(total " steps to run") }
    if (total > 0 && int(done * 10 / total) > tenth) {
      tenth = int(done * 10 / total)
      say(sprintf("%3d%% (%d/%d)", int(done * 100 / total), done, total))
    }
    next
  }
  /^ninja: no work to do/ { say("up to date") }
' || rc=$?
if [[ $rc == 0 && -f $build_log ]] && grep -qx 'ninja: no work to do.' "$new_log"; then
  rm -f "$new_log"
  echo "build.sh: done: $bdir"
  echo "build.sh: logs: ${written[*]}${written[*]:+ }$build_log (the last build that ran)"
  exit 0
fi
mv -f "$new_log" "$build_log"
if [[ $rc != 0 ]]; then
  ninja_errors "$build_log" >&2
  echo "build.sh: FAILED: building $bdir (log: $build_log)" >&2
  exit "$rc"
fi
warnings=$(grep -c ': warning: ' "$build_log" || true)
if [[ $warnings == 0 ]]; then warnings=; else warnings=" ($warnings compiler warnings)"; fi
echo "build.sh: done: $bdir$warnings"
written+=("$build_log")
echo "build.sh: logs: ${written[*]}"
