#!/usr/bin/env bash
# package/install: the packages of tools/package.sh, installed into a throwaway root with
# dpkg -x (no chroot, no systemd as PID 1), used through their installed paths only.
#   test_package.sh REPO BUILD_DIR PACKAGE_DIR WORK_DIR DEBIAN_DEBS
# DEBIAN_DEBS: Debian's pocl-opencl-icd, libpocl2 and libpocl2-common (.deb files that
# tools/setup.sh downloads).
# 1. Contents: names that do not clash with Debian's pocl (pocl-remote.icd, a directory
#    of its own, no path of Debian's packages), the library's own soname with the drivers
#    built in (no ELF file that needs libpocl.so.2), the unit, the conffile, dependencies
#    on ocl-icd-libopencl1; no file of this build tree's paths; no file that an installed
#    package owns (one removed but not purged, dpkg state "rc", owns nothing).
# 2. The unit: systemd-analyze verify says nothing, its offline security review rates it
#    OK or better. The postinst, with stub commands, creates the pocld system user and
#    puts it in the video and render groups.
# 3. The installed pocld started by the unit's ExecStart= with the installed
#    /etc/pocld.conf (a port set in it), under the unit's hardening emulated by
#    service_sandbox.py, as nobody where the served build is readable by nobody: READY=1
#    once it listens; the vector-add example (built here) and clinfo run through the
#    installed libpocl, found by the installed .icd file alone (no POCL_BUILDING);
#    Debian's pocl-opencl-icd installed next to ours, both found by the system ICD loader
#    from their own .icd files (POCL_DEVICES="remote pthread"): Debian's platform has its
#    pthread device and ours the remote one, and a kernel runs right on each, whichever
#    library is loaded first, and where the application is linked to Debian's libpocl.
#    ExecReload= reloads (RELOADING=1, READY=1); SIGTERM: STOPPING=1, exit status 0.
#    The server's OpenCL platform is BUILD_DIR's pthread device (the thin build has no
#    CPU device): it stands for the GPU platform of a real server.
# PASS/FAIL line on stdout; exit 0 only on PASS.
set -u

name=package
if [[ $# -ne 5 ]]; then
  sed -n '4,4p' "$0" | sed 's/^# //' >&2
  exit 2
fi
repo=$1 build=$2 pkgs=$3 work=$4 debian_debs=$5
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
rm -rf "$work"
mkdir -p "$work"
fail() { echo "$name: FAIL: $*"; exit 1; }
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done' EXIT

client_deb=$(ls "$pkgs"/pocl-remote-opencl-icd_*.deb 2>/dev/null | tail -n 1)
server_deb=$(ls "$pkgs"/pocld_*.deb 2>/dev/null | tail -n 1)
[[ -f $client_deb && -f $server_deb ]] || fail "no packages in $pkgs"
debian=()
for p in pocl-opencl-icd libpocl2 libpocl2-common; do
  deb=$(ls "$debian_debs/${p}"_*.deb 2>/dev/null | tail -n 1)
  [[ -f $deb ]] || fail "no $p .deb in $debian_debs (tools/setup.sh downloads it)"
  debian+=("$deb")
done

# 1. Contents.
multiarch=$(gcc -print-multiarch)
lib=usr/lib/$multiarch/pocl-remote
files() { dpkg-deb -c "$1" | awk '{ sub(/^\.\//, "", $6); print $6 }'; }
for f in etc/OpenCL/vendors/pocl-remote.icd "$lib/libpocl-remote.so.2" \
         usr/include/pocl-remote/pocl_remote_ext.h; do
  files "$client_deb" | grep -qx "$f" || fail "client package: no $f"
done
for f in usr/sbin/pocld lib/systemd/system/pocld.service etc/pocld.conf \
         usr/share/doc/pocld/examples/pocld.conf; do
  files "$server_deb" | grep -qx "$f" || fail "pocld package: no $f"
done
if files "$client_deb" | grep -Eq '^etc/OpenCL/vendors/pocl\.icd$|^usr/lib/[^/]+/(libpocl|pocl/)'; then
  fail "client package has one of Debian's pocl paths"
fi
shared=$(comm -12 <(files "$client_deb" | grep '[^/]$' | sort) \
                  <(for deb in "${debian[@]}"; do files "$deb"; done | grep '[^/]$' | sort))
[[ -z $shared ]] || fail "paths in both our package and Debian's pocl: $shared"
for deb in "$client_deb" "$server_deb"; do
  dpkg-deb -f "$deb" Depends | grep -q 'ocl-icd-libopencl1' || fail "$deb: no ocl-icd-libopencl1 dependency"
done
[[ $(dpkg-deb -f "$client_deb" Provides) == opencl-icd ]] || fail "client package: no Provides: opencl-icd"
# UCX is loaded at run time where wanted: recommended, not required.
dpkg-deb -f "$server_deb" Depends | grep -q libucx && fail "pocld package: depends on UCX"
[[ $(dpkg-deb -f "$server_deb" Recommends) == libucx0 ]] || fail "pocld package: no Recommends: libucx0"
dpkg-deb --ctrl-tarfile "$server_deb" | tar -xO ./conffiles | grep -qx /etc/pocld.conf \
  || fail "pocld package: /etc/pocld.conf is not a conffile"
root=$work/root
mkdir -p "$root"
dpkg -x "$client_deb" "$root"
dpkg -x "$server_deb" "$root"
for p in "$repo" "$build"; do
  hits=$(grep -rlF -- "$p" "$root" || true)
  [[ -z $hits ]] || fail "files that name $p: $hits"
done
# Drivers built in, a soname of its own: nothing of ours binds to a libpocl.so.2 that
# is Debian's (doc/operating.md, Packages).
soname=$(readelf -d "$root/$lib/libpocl-remote.so.2" | sed -n 's/.*(SONAME).*\[\(.*\)\]$/\1/p')
[[ $soname == libpocl-remote.so.2 ]] || fail "client library's soname: '$soname'"
mapfile -t elfs < <(find "$root" -type f -exec sh -c 'head -c 4 "$1" | grep -q ELF' _ {} \; -print)
for f in "${elfs[@]}"; do
  readelf -d "$f" | grep -q 'NEEDED.*\[libpocl\.so' && fail "${f#"$root"} needs libpocl.so"
done
[[ -e $root/$lib/pocl ]] && fail "client package has loadable drivers ($lib/pocl)"
# "pkg[, pkg...]: path" lines of dpkg -S (ADMINDIR's database) for PATHS, each
# naming only the packages that are installed: one removed but not purged (state
# config-files, "rc") owns nothing.
owned_by_installed() { # ADMINDIR PATH...
  local admin=$1 line pkgs p st keep
  shift
  dpkg --admindir="$admin" -S "$@" 2>/dev/null | while IFS= read -r line; do
    [[ $line == *": /"* ]] || { echo "$line"; continue; }
    pkgs=${line%%: /*} keep=()
    for p in ${pkgs//,/ }; do
      st=$(dpkg-query --admindir="$admin" -W -f='${db:Status-Status}' "$p" 2>/dev/null)
      [[ $st == config-files || $st == not-installed || -z $st ]] || keep+=("$p")
    done
    [[ ${#keep[@]} == 0 ]] || echo "${keep[*]}: /${line#*: /}"
  done
}
# The check itself, on a database of two packages: one removed but not purged
# whose conffile is ours, one installed that owns one of our paths.
fake=$work/dpkg-db
mkdir -p "$fake/info" "$fake/updates"
for st in "pocld deinstall ok config-files" "other install ok installed"; do
  printf 'Package: %s\nStatus: %s\nArchitecture: %s\nVersion: 1\nMaintainer: m <m@localhost>\nDescription: d\n\n' \
    "${st%% *}" "${st#* }" "$(dpkg --print-architecture)" >>"$fake/status"
done
echo /etc/pocld.conf >"$fake/info/pocld.list"
echo /usr/sbin/pocld >"$fake/info/other.list"
out=$(owned_by_installed "$fake" /etc/pocld.conf /usr/sbin/pocld)
[[ $out == "other: /usr/sbin/pocld" ]] || fail "ownership check on a test database: '$out'"
mapfile -t paths < <(cd "$root" && find . -type f | sed 's/^\.//')
owned=$(owned_by_installed /var/lib/dpkg "${paths[@]}")
[[ -z $owned ]] || fail "paths that installed packages own: $owned"
echo "$name: contents: $(files "$client_deb" | grep -c '[^/]$') + $(files "$server_deb" | grep -c '[^/]$') entries, no clash, soname $soname, no build-tree path"

# 2. The unit and the postinst.
unit=$root/lib/systemd/system/pocld.service
mkdir -p "$work/verify"
sed "s|^ExecStart=/usr/sbin/pocld|ExecStart=$root/usr/sbin/pocld|" "$unit" >"$work/verify/pocld.service"
out=$(systemd-analyze verify "$work/verify/pocld.service" 2>&1) || fail "systemd-analyze verify: $out"
[[ -z $out ]] || fail "systemd-analyze verify: $out"
out=$(systemd-analyze security --offline=yes "$work/verify/pocld.service" 2>&1)
level=$(sed -nE 's/.*Overall exposure level for pocld.service: ([0-9.]+) ([A-Z]+).*/\1 \2/p' <<<"$out")
[[ $level == *" OK" || $level == *" SAFE" ]] || fail "security review: '${level:-$out}'"
echo "$name: systemd-analyze verify clean, exposure $level"

dpkg-deb -e "$server_deb" "$work/control"
mkdir -p "$work/stubs"
for c in adduser deb-systemd-helper deb-systemd-invoke systemctl; do
  printf '#!/bin/sh\necho "%s $*" >>"%s"\n' "$c" "$work/stubs.log" >"$work/stubs/$c"
done
# getent: no pocld user yet; the groups exist.
printf '#!/bin/sh\n[ "$1" = group ]\n' >"$work/stubs/getent"
chmod +x "$work/stubs"/*
PATH=$work/stubs:$PATH sh -e "$work/control/postinst" configure || fail "postinst failed"
for want in "adduser --system --group --no-create-home --home /nonexistent --gecos PoCL-R server pocld" \
            "adduser pocld video" "adduser pocld render" "deb-systemd-helper enable pocld.service"; do
  grep -qxF "$want" "$work/stubs.log" || fail "postinst did not run '$want': $(cat "$work/stubs.log")"
done
echo "$name: postinst makes the pocld user, in video and render, and enables the unit"

# 3. The installed pocld under the unit.
port=$(python3 - <<'PY'
import random, socket
for _ in range(50):
    p = random.randrange(20000, 59990)
    try:
        for q in (p, p + 1, p + 2):
            s = socket.socket(); s.bind(("127.0.0.1", q)); s.close()
    except OSError:
        continue
    print(p); break
PY
)
[[ -n $port ]] || fail "no free port"
printf '\n# test_package.sh\nport = %s\n' "$port" >>"$root/etc/pocld.conf"
served_lib=$(cat "$build/ocl-vendors/pocl-tests.icd")
user=nobody:nogroup
if ! setpriv --reuid=nobody --regid=nogroup --clear-groups -- \
     sh -c 'test -r "$1" && test -x "$2" && test -r "$3"' _ "$served_lib" "$root/usr/sbin/pocld" \
     "$here/service_sandbox.py" 2>/dev/null; then
  user=root
  echo "$name: NOTE: the build is not readable by nobody: pocld runs as uid 0 without capabilities"
fi
sock=@pocld-package-$$
log=$work/pocld.log
python3 "$here/notify_listen.py" "$sock" "$work/notify" "$log" &
pids+=($!)
for _ in $(seq 1 50); do [[ -e $work/notify ]] && break; sleep 0.1; done
env NOTIFY_SOCKET="$sock" OCL_ICD_VENDORS="$build/ocl-vendors" POCL_BUILDING=1 POCL_DEVICES=pthread \
  /usr/bin/python3 "$here/service_sandbox.py" --unit "$unit" --root "$root" --user "$user" \
  --map "/var/cache/pocld=$work/cache" --keep "$build" --keep "$work" --keep "$here" \
  </dev/null >"$log" 2>&1 &
pid=$!
pids+=($pid)
for _ in $(seq 1 600); do
  grep -q '^READY=1' "$work/notify" && break
  kill -0 "$pid" 2>/dev/null || fail "pocld exited: $(tail -n 5 "$log")"
  sleep 0.1
done
grep -Eq '^READY=1 \| STATUS=listening on 127.0.0.1 ports '"$port"' .*\[listening\]$' "$work/notify" \
  || fail "no READY=1 once listening: $(cat "$work/notify"); log: $(tail -n 5 "$log")"
grep -E '^service_sandbox: ' "$log" | sed "s/^/$name: NOTE: /"
status=$(grep -E '^(Uid|CapEff|CapBnd|NoNewPrivs|Seccomp):' "/proc/$pid/status" | tr -s '\t ' ' ')
grep -q "NoNewPrivs: 1" <<<"$status" && grep -q "Seccomp: 2" <<<"$status" \
  && grep -q "CapEff: 0000000000000000" <<<"$status" && grep -q "CapBnd: 0000000000000000" <<<"$status" \
  || fail "pocld is not confined: $status"
[[ $user == root ]] || grep -q "Uid: 65534" <<<"$status" || fail "pocld does not run as nobody: $status"
echo "$name: the installed pocld ready under the unit's hardening ($(tr '\n' ' ' <<<"$status"))"

cc -o "$work/vecadd" "$repo/examples/remote/vecadd.c" -lOpenCL || fail "cannot build vecadd.c"
mkdir -p "$work/vendors"
echo "$root$(cat "$root/etc/OpenCL/vendors/pocl-remote.icd")" >"$work/vendors/pocl-remote.icd"
as_client() {
  env -u POCL_BUILDING -u LD_LIBRARY_PATH OCL_ICD_VENDORS="$work/vendors" POCL_DEVICES=remote \
    POCL_REMOTE0_PARAMETERS="127.0.0.1:$port/0" timeout -k 5 120 "$@"
}
out=$(as_client "$work/vecadd" 65536 2>&1) || fail "vecadd: $out; pocld: $(tail -n 5 "$log")"
grep -q "vecadd: verified 65536 elements on .*pocl-remote" <<<"$out" || fail "vecadd: $out"
out=$(as_client clinfo -l 2>&1) || fail "clinfo: $out"
grep -q "Device #0: .*pocl-remote" <<<"$out" || fail "clinfo -l: $out"
echo "$name: vecadd and clinfo through the installed libpocl and pocld"

# Debian's pocl next to ours. In a mount namespace of its own (as service_sandbox.py's),
# Debian's and our packages' /usr lie over /usr: both libraries at their installed paths
# and both .icd files as shipped (Debian's names "libpocl.so.2", found by the dynamic
# linker's search as on an installed system). The system ICD loader reads the two .icd
# files (OCL_ICD_VENDORS: this test's copy of /etc/OpenCL/vendors, the real one left alone).
debroot=$work/debian-root
mkdir -p "$debroot" "$work/vendors-both"
for deb in "${debian[@]}"; do dpkg -x "$deb" "$debroot"; done
mlib=usr/lib/$multiarch
lower=$debroot/usr:$root/usr:/usr
cc -o "$work/coexist" "$here/package_coexist.c" -lOpenCL || fail "cannot build package_coexist.c"
cp "$root/etc/OpenCL/vendors/pocl-remote.icd" "$debroot/etc/OpenCL/vendors/pocl.icd" "$work/vendors-both/"
ours=/$lib/libpocl-remote.so.2 theirs=$(cat "$debroot/etc/OpenCL/vendors/pocl.icd")
# An application linked to Debian's libpocl (ahead of ours in the global scope) that
# uses the ICD loader.
cc -o "$work/coexist_linked" "$here/package_coexist.c" -lOpenCL -Wl,--no-as-needed \
  "$debroot/$mlib/libpocl.so.2" || fail "cannot link package_coexist.c to Debian's libpocl"
both() { # LABEL PROGRAM [LIBRARY]
  local label=$1 out rc
  shift
  local run=(env -u POCL_BUILDING -u LD_LIBRARY_PATH OCL_ICD_VENDORS="$work/vendors-both"
             POCL_DEVICES="remote pthread" POCL_REMOTE0_PARAMETERS="127.0.0.1:$port/0"
             POCL_CACHE_DIR="$work/kcache" timeout -k 5 120 "$@")
  out=$(unshare -m sh -c 'mount -t overlay overlay -o "lowerdir=$1" /usr && shift && exec "$@"' \
        _ "$lower" "${run[@]}" 2>&1)
  rc=$?
  [[ $rc == 0 && $(grep -c '^platform [0-9]: 1 devices$' <<<"$out") == 2 \
     && $(grep -c '^platform ' <<<"$out") == 2 \
     && $(grep -E '^device [0-9]\.0: pthread-.*: kernel ok$' <<<"$out" | grep -vc pocl-remote) == 1 \
     && $(grep -Ec "^device [0-9]\.0: .*\(pocl-remote 127\.0\.0\.1:$port/0\): kernel ok\$" <<<"$out") == 1 ]] \
    || fail "Debian's pocl and ours, $label (exit $rc): $out"
}
both "as the ICD loader finds them" "$work/coexist"
both "ours loaded first" "$work/coexist" "$ours"
both "Debian's loaded first" "$work/coexist" "$theirs"
both "Debian's linked to the application" "$work/coexist_linked"
echo "$name: next to Debian's pocl-opencl-icd: its pthread device and our remote device each run a kernel, either loaded first or Debian's linked to the application"

reload=$(sed -n 's/^ExecReload=//p' "$unit")
# As systemd runs it: $MAINPID is the service's main pid.
MAINPID=$pid sh -c "$reload" || fail "ExecReload=$reload failed"
ready='^READY=1( \[listening\])?$'
for _ in $(seq 1 100); do grep -Eq "$ready" "$work/notify" && break; sleep 0.1; done
grep -q '^RELOADING=1 | MONOTONIC_USEC=' "$work/notify" && grep -Eq "$ready" "$work/notify" \
  || fail "ExecReload: no RELOADING=1 and READY=1: $(cat "$work/notify")"
kill -TERM "$pid"
wait "$pid"
rc=$?
[[ $rc == 0 ]] || fail "pocld exited with $rc after SIGTERM: $(tail -n 5 "$log")"
for _ in $(seq 1 50); do grep -q '^STOPPING=1' "$work/notify" && break; sleep 0.1; done
grep -q '^STOPPING=1' "$work/notify" || fail "no STOPPING=1: $(cat "$work/notify")"
echo "$name: ExecReload= reloads, SIGTERM stops (STOPPING=1, status 0)"
echo "$name: PASS"
