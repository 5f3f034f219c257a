#!/usr/bin/env bash
# package/install: the packages of tools/package.sh, installed into a throwaway root with
# dpkg -x (no chroot, no systemd as PID 1), used through their installed paths only.
#   test_package.sh REPO BUILD_DIR PACKAGE_DIR WORK_DIR
# 1. Contents: names that do not clash with Debian's pocl (pocl-remote.icd, a directory
#    of its own), the unit, the conffile, dependencies on ocl-icd-libopencl1; no file of
#    this build tree's paths; no file that an installed package owns.
# 2. The unit: systemd-analyze verify says nothing, its offline security review rates it
#    OK or better. The postinst, with stub commands, creates the pocld system user and
#    puts it in the video and render groups.
# 3. The installed pocld started by the unit's ExecStart= with the installed
#    /etc/pocld.conf (a port set in it), under the unit's hardening emulated by
#    service_sandbox.py, as nobody where the served build is readable by nobody: READY=1
#    once it listens; the vector-add example (built here) and clinfo run through the
#    installed libpocl, found by the installed .icd file alone (no POCL_BUILDING);
#    ExecReload= reloads (RELOADING=1, READY=1); SIGTERM: STOPPING=1, exit status 0.
#    The server's OpenCL platform is BUILD_DIR's pthread device (the thin build has no
#    CPU device): it stands for the GPU platform of a real server.
# PASS/FAIL line on stdout; exit 0 only on PASS.
set -u

name=package
if [[ $# -ne 4 ]]; then
  sed -n '4,4p' "$0" | sed 's/^# //' >&2
  exit 2
fi
repo=$1 build=$2 pkgs=$3 work=$4
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
rm -rf "$work"
mkdir -p "$work"
fail() { echo "$name: FAIL: $*"; exit 1; }
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done' EXIT

client_deb=$(ls "$pkgs"/pocl-remote-opencl-icd_*.deb 2>/dev/null | tail -n 1)
server_deb=$(ls "$pkgs"/pocld_*.deb 2>/dev/null | tail -n 1)
[[ -f $client_deb && -f $server_deb ]] || fail "no packages in $pkgs"

# 1. Contents.
multiarch=$(gcc -print-multiarch)
lib=usr/lib/$multiarch/pocl-remote
files() { dpkg-deb -c "$1" | awk '{ sub(/^\.\//, "", $6); print $6 }'; }
for f in etc/OpenCL/vendors/pocl-remote.icd "$lib/libpocl.so.2" \
         "$lib/pocl/libpocl-devices-remote.so" usr/include/pocl-remote/pocl_remote_ext.h; do
  files "$client_deb" | grep -qx "$f" || fail "client package: no $f"
done
for f in usr/sbin/pocld lib/systemd/system/pocld.service etc/pocld.conf \
         usr/share/doc/pocld/examples/pocld.conf; do
  files "$server_deb" | grep -qx "$f" || fail "pocld package: no $f"
done
if files "$client_deb" | grep -Eq '^etc/OpenCL/vendors/pocl\.icd$|^usr/lib/[^/]+/(libpocl|pocl/)'; then
  fail "client package has one of Debian's pocl paths"
fi
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
owned=$(cd "$root" && find . -type f | sed 's/^\.//' | xargs -r dpkg -S 2>/dev/null || true)
[[ -z $owned ]] || fail "paths that installed packages own: $owned"
echo "$name: contents: $(files "$client_deb" | grep -c '[^/]$') + $(files "$server_deb" | grep -c '[^/]$') entries, no clash, no build-tree path"

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
