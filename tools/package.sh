#!/usr/bin/env bash
# Build the two Debian packages of PoCL-R from the thin build (doc/operating.md):
#   tools/package.sh [--out DIR]     (default $BUILD_DIR/packages)
#  pocl-remote-opencl-icd  libpocl-remote.so.2 (PoCL with the remote driver, and the stream
#                          and hevc drivers where they were built, built in) in
#                          /usr/lib/<multiarch>/pocl-remote,
#                          /etc/OpenCL/vendors/pocl-remote.icd, and the client header
#                          /usr/include/pocl-remote/pocl_remote_ext.h
#  pocld                   /usr/sbin/pocld, /lib/systemd/system/pocld.service,
#                          /etc/pocld.conf (annotated; a copy in /usr/share/doc/pocld/examples),
#                          the pocld user (postinst)
# Both are `cmake --install --strip` of tools/build.sh --package, split by path and packed
# with dpkg-deb; their library dependencies come from dpkg-shlibdeps. Anything the install
# puts where neither package expects it fails the script, so that nothing is lost silently.
# Prints the packages' paths last. Env: BUILD_DIR, JOBS as tools/build.sh.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_root=${BUILD_DIR:-$repo/build}
out=$build_root/packages
while [[ $# -gt 0 ]]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "package.sh: unknown argument: $1" >&2; exit 2 ;;
  esac
done

"$repo/tools/setup.sh" --thin
"$repo/tools/build.sh" --package
bdir=$build_root/package
multiarch=$(gcc -print-multiarch)
arch=$(dpkg --print-architecture)
libdir=usr/lib/$multiarch/pocl-remote
# Upgrades must compare newer: the commit count of this branch orders its builds.
count=$(git -C "$repo" rev-list --count HEAD 2>/dev/null || echo 0)
rev=$(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)
version=3.1+r$count.g$rev

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
DESTDIR=$stage/install cmake --install "$bdir" --strip >"$stage/install.log"

client=$stage/pocl-remote-opencl-icd
server=$stage/pocld
mkdir -p "$client" "$server"
# Moves PATH (relative to the install) into package dir $1.
take() {
  local pkg=$1 path=$2
  mkdir -p "$pkg/$(dirname "$path")"
  mv "$stage/install/$path" "$pkg/$path"
}
# What the thin build installs for building against libpocl directly (headers,
# pkg-config, CMake config, the unversioned symlink): not for clients of the ICD loader.
for p in usr/include usr/share/pocl "$libdir/pkgconfig" "$libdir/libpocl-remote.so"; do
  rm -rf "${stage:?}/install/$p"
done
take "$client" "$libdir"
# Not pocl.icd: that is Debian's pocl-opencl-icd's file.
mkdir -p "$client/etc/OpenCL/vendors"
mv "$stage/install/etc/OpenCL/vendors/pocl.icd" "$client/etc/OpenCL/vendors/pocl-remote.icd"
install -D -m 644 "$repo/lib/CL/devices/remote/pocl_remote_ext.h" \
  "$client/usr/include/pocl-remote/pocl_remote_ext.h"
take "$server" usr/sbin/pocld
install -D -m 644 "$repo/packaging/pocld.service" "$server/lib/systemd/system/pocld.service"
install -D -m 644 "$repo/packaging/pocld.conf" "$server/etc/pocld.conf"
# The annotated original, for when /etc/pocld.conf has been edited.
install -D -m 644 "$repo/packaging/pocld.conf" "$server/usr/share/doc/pocld/examples/pocld.conf"
install -D -m 644 "$repo/doc/operating.md" "$server/usr/share/doc/pocld/operating.md"

left=$(cd "$stage/install" && find . -type f -o -type l)
if [[ -n $left ]]; then
  echo "package.sh: installed files in neither package:" >&2
  echo "$left" >&2
  exit 1
fi

# Library dependencies of every ELF file.
shlibs() { # PKGDIR
  local d=$stage/shlibdeps files
  mkdir -p "$d/debian"
  printf 'Source: pocl-remote\n\nPackage: pocl-remote\nArchitecture: any\n' >"$d/debian/control"
  mapfile -t files < <(find "$1" -type f -exec sh -c 'head -c 4 "$1" | grep -q ELF' _ {} \; -print)
  (cd "$d" && dpkg-shlibdeps -O --ignore-missing-info "${files[@]}" 2>/dev/null) \
    | sed -n 's/^shlibs:Depends=//p'
}

copyright() { # PKGDIR
  mkdir -p "$1/usr/share/doc/$(basename "$1")"
  { echo "PoCL 3.1 and PoCL-R (the remote driver, pocld): MIT license, as follows."
    echo
    cat "$build_root/src/pocl/LICENSE"; } >"$1/usr/share/doc/$(basename "$1")/copyright"
}

control() { # PKGDIR DEPENDS SECTION DESCRIPTION...
  local pkg=$1 deps=$2 section=$3
  shift 3
  mkdir -p "$pkg/DEBIAN"
  {
    echo "Package: $(basename "$pkg")"
    echo "Version: $version"
    echo "Architecture: $arch"
    echo "Maintainer: PoCL-R maintainers <pocl-r@localhost>"
    echo "Installed-Size: $(du -sk --exclude=DEBIAN "$pkg" | cut -f1)"
    echo "Depends: $deps"
    echo "Section: $section"
    echo "Priority: optional"
    echo "Homepage: http://portablecl.org"
    printf 'Description: %s\n' "$1"
    shift
    for line in "$@"; do printf ' %s\n' "$line"; done
  } >"$pkg/DEBIAN/control"
}

copyright "$client"
copyright "$server"
control "$client" "$(shlibs "$client"), ocl-icd-libopencl1" libs \
  "PoCL-R client: OpenCL devices of remote servers (pocld)" \
  "PoCL 3.1 with the remote driver: an OpenCL application linked against the" \
  "ICD loader uses the devices of pocld servers over TCP, with" \
  "POCL_DEVICES=remote and POCL_REMOTE0_PARAMETERS=host:port/device." \
  "Its library, libpocl-remote.so.2, lives in a directory of its own and works" \
  "in one process with Debian's pocl (pocl-opencl-icd)."
echo "Provides: opencl-icd" >>"$client/DEBIAN/control"
control "$server" "$(shlibs "$server"), ocl-icd-libopencl1, adduser" net \
  "PoCL-R server: this host's OpenCL devices for remote clients" \
  "pocld serves the OpenCL platforms the ICD loader finds (GPUs, CPUs) to" \
  "PoCL-R clients, one process per session, with pre-shared keys and TLS." \
  "A systemd service (Type=notify, reload on SIGHUP) run by the pocld user," \
  "configured in /etc/pocld.conf."
# pocld loads UCX at run time (protocol/transports/ucx/pocl_remote_ucx.c), where `ucx` may use it.
echo "Recommends: libucx0" >>"$server/DEBIAN/control"
echo /etc/pocld.conf >"$server/DEBIAN/conffiles"
for s in postinst prerm postrm; do
  install -m 755 "$repo/packaging/pocld.$s" "$server/DEBIAN/$s"
done

mkdir -p "$out"
debs=()
for pkg in "$client" "$server"; do
  deb=$out/$(basename "$pkg")_${version}_$arch.deb
  dpkg-deb --root-owner-group --build "$pkg" "$deb" >/dev/null
  debs+=("$deb")
done
printf '%s\n' "${debs[@]}"
