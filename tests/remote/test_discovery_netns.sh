#!/usr/bin/env bash
# remote/discovery_netns: servers found through DNS-SD.  Three hosts (network
# namespaces on a bridge), each with its own D-Bus system bus and avahi-daemon (in a
# mount namespace with a private /run and /etc/avahi/services: avahi-daemon's pid
# file, socket and services have fixed paths); two pocld advertise (--advertise)
# under one name, so one of them renames itself, and the client
# (POCL_REMOTE_DISCOVERY=avahi) must
#   1. with the servers' pre-shared key: find both and run a kernel on each, exact;
#   2. with one of them named (POCL_REMOTE0_PARAMETERS): add only the other one;
#   3. with a wrong key: add neither, saying so, and go on with its local device;
#   4. refuse a bad POCL_REMOTE_DISCOVERY and POCL_REMOTE_DISCOVERY_MS, and go on
#      without a reachable avahi-daemon;
#   5. find a server again after its avahi-daemon restarted.
# Throughout, a service that the client's own host advertises for a port where no
# pocld listens is found and refused, with a line on stderr.
#   test_discovery_netns.sh POCLD BUILD_DIR CLIENT WORK_DIR
# Needs root, `ip netns`, dbus-daemon and avahi-daemon; exits 77 (skipped) without.
set -u
if [[ $# -ne 4 ]]; then
  sed -n '16,16p' "$0" | sed 's/^# //' >&2
  exit 2
fi
pocld=$1 build=$2 client=$3 work=$4
name=discovery_netns
# shellcheck source=netns_util.sh
. "$(dirname "${BASH_SOURCE[0]}")/netns_util.sh"
rm -rf "$work"
mkdir -p "$work"
tag=$$
nss=(dc$tag ds1$tag ds2$tag db$tag)
pids=()

cleanup() {
  local n i
  # servers before their daemons, daemons before their buses
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    kill "${pids[$i]}" 2>/dev/null
    wait "${pids[$i]}" 2>/dev/null
  done
  for n in "${nss[@]}"; do
    ip netns del "$n" 2>/dev/null
  done
  return 0
}
trap cleanup EXIT
trap 'echo "$name: FAIL: interrupted"; exit 1' INT TERM
fail() { echo "$name: FAIL: $*"; exit 1; }

for tool in avahi-daemon dbus-daemon unshare; do
  if ! command -v "$tool" >/dev/null; then
    echo "$name: SKIP: no $tool (tools/setup.sh installs avahi-daemon)"
    exit 77
  fi
done
if ! ldd "$pocld" | grep -q libavahi-client; then
  echo "$name: SKIP: pocld was built without libavahi-client"
  exit 77
fi
if [[ $(id -u) != 0 ]] || ! ip netns add "${nss[3]}" 2>/dev/null; then
  echo "$name: SKIP: needs root and ip netns"
  exit 77
fi
# client 10.215.0.1, servers .2 and .3
netns_bridge 10.215.0 "$tag" "${nss[3]}" "${nss[@]:0:3}" ||
  fail "cannot set up the namespaces"

# Host i's system bus (a permissive policy: only this test's processes reach its
# socket) and avahi-daemon, as unprivileged and unchrooted as the test allows.
for i in 0 1 2; do
  h=$work/host$i
  mkdir -p "$h/run/avahi-daemon" "$h/services"
  cat >"$h/bus.conf" <<EOF
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path=$h/bus</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_destination="*"/>
    <allow receive_sender="*"/>
  </policy>
</busconfig>
EOF
  cat >"$h/avahi-daemon.conf" <<EOF
[server]
host-name=host$i
use-ipv4=yes
use-ipv6=no
enable-dbus=yes
allow-interfaces=v$i-$tag
[publish]
publish-hinfo=no
publish-workstation=no
EOF
  ip netns exec "${nss[$i]}" dbus-daemon --config-file="$h/bus.conf" --nofork \
    --nopidfile >"$h/dbus.log" 2>&1 &
  pids+=($!)
done
# The client's own host advertises a server that is not there: found, refused, said.
cat >"$work/host0/services/bogus.service" <<EOF
<?xml version="1.0" standalone='no'?>
<!DOCTYPE service-group SYSTEM "avahi-service.dtd">
<service-group>
  <name>bogus server</name>
  <service><type>_pocl._tcp</type><port>9</port><txt-record>devices=200</txt-record></service>
</service-group>
EOF
avahi_pid=()
start_avahi() { # HOST
  local i=$1 h=$work/host$1
  ip netns exec "${nss[$i]}" unshare -m sh -c \
    "mount --bind '$h/run' /run && mount --bind '$h/services' /etc/avahi/services && DBUS_SYSTEM_BUS_ADDRESS=unix:path='$h/bus' exec avahi-daemon -f '$h/avahi-daemon.conf' --no-drop-root --no-chroot --no-rlimits" \
    >>"$h/avahi.log" 2>&1 &
  pids+=($!)
  avahi_pid[$i]=$!
}
for i in 0 1 2; do
  for ((t = 0; t < 50; t++)); do
    [[ -S $work/host$i/bus ]] && break
    sleep 0.1
  done
  [[ -S $work/host$i/bus ]] || fail "dbus-daemon $i did not start: $(tail -n 3 "$work/host$i/dbus.log")"
  start_avahi $i
done
for i in 0 1 2; do
  for ((t = 0; t < 100; t++)); do
    grep -q "Server startup complete" "$work/host$i/avahi.log" && break
    sleep 0.1
  done
  grep -q "Server startup complete" "$work/host$i/avahi.log" ||
    fail "avahi-daemon $i did not start: $(tail -n 5 "$work/host$i/avahi.log")"
done

umask 077
key=$work/key
echo "7d2e41a9c3b5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f" >"$key"
port=21100
for i in 1 2; do
  ip netns exec "${nss[$i]}" env DBUS_SYSTEM_BUS_ADDRESS="unix:path=$work/host$i/bus" \
    OCL_ICD_VENDORS="$build/ocl-vendors" POCL_BUILDING=1 POCL_DEVICES=pthread \
    "$pocld" --address "10.215.0.$((i + 1))" --port $port --psk-file "$key" \
    --advertise --advertise-name "pocld test" </dev/null >"$work/pocld$i.log" 2>&1 &
  pids+=($!)
done
for i in 1 2; do
  for ((t = 0; t < 300; t++)); do
    grep -q "advertised as" "$work/pocld$i.log" && break
    sleep 0.1
  done
  grep -q "advertised as" "$work/pocld$i.log" ||
    fail "pocld $i did not advertise: $(tail -n 5 "$work/pocld$i.log")"
done
# One name on one link: the later one took "pocld test #2".
grep -q "advertised as 'pocld test #2'" "$work/pocld1.log" "$work/pocld2.log" ||
  fail "no server renamed itself after the name collision"

s1=10.215.0.2:$port/0 s2=10.215.0.3:$port/0
discover() { # LOG [env assignments...] -- [expected devices...]
  local out=$1
  shift
  local envs=()
  while [[ $1 != -- ]]; do envs+=("$1"); shift; done
  shift
  ip netns exec "${nss[0]}" env -u POCL_REMOTE_PSK -u POCL_REMOTE_PSK_FILE \
    DBUS_SYSTEM_BUS_ADDRESS="unix:path=$work/host0/bus" \
    OCL_ICD_VENDORS="$build/ocl-vendors" POCL_BUILDING=1 POCL_REMOTE_DISCOVERY=avahi \
    "${envs[@]}" timeout -k 5 120 "$client" "$@" >"$out" 2>&1
}

# 1. Both servers, found, with the key.
discover "$work/found.out" POCL_DEVICES= POCL_REMOTE_PSK_FILE="$key" -- "$s1" "$s2" ||
  fail "with the key: $(tail -n 5 "$work/found.out")"
grep -q "discovered server 'bogus server' at 10.215.0.1:9 refused" "$work/found.out" ||
  fail "the bogus server's refusal is not said: $(tail -n 5 "$work/found.out")"
# 2. One named, the other found; the named one is not added twice.
discover "$work/named.out" POCL_DEVICES=remote POCL_REMOTE0_PARAMETERS="$s2" \
  POCL_REMOTE_PSK_FILE="$key" -- "$s1" "$s2" ||
  fail "one named: $(tail -n 5 "$work/named.out")"
# 3. A wrong key: refused, said, not added; the local device still serves.
discover "$work/wrong.out" POCL_DEVICES=pthread \
  POCL_REMOTE_PSK=00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff -- ||
  fail "wrong key: $(tail -n 5 "$work/wrong.out")"
[[ $(grep -c "discovered server '.*refused" "$work/wrong.out") == 3 ]] ||
  fail "wrong key: the two refusals are not said: $(tail -n 5 "$work/wrong.out")"
# 4. Bad settings, and no daemon: said, and the named devices serve.
discover "$work/bad_mode.out" POCL_DEVICES=pthread POCL_REMOTE_DISCOVERY=mdns -- ||
  fail "bad mode: $(tail -n 5 "$work/bad_mode.out")"
grep -q "POCL_REMOTE_DISCOVERY='mdns': not 'avahi'" "$work/bad_mode.out" ||
  fail "bad mode not refused: $(tail -n 5 "$work/bad_mode.out")"
discover "$work/bad_ms.out" POCL_DEVICES= POCL_REMOTE_PSK_FILE="$key" \
  POCL_REMOTE_DISCOVERY_MS=-5 -- "$s1" "$s2" ||
  fail "bad time: $(tail -n 5 "$work/bad_ms.out")"
grep -q "POCL_REMOTE_DISCOVERY_MS='-5': not a number" "$work/bad_ms.out" ||
  fail "bad time not refused: $(tail -n 5 "$work/bad_ms.out")"
discover "$work/no_daemon.out" POCL_DEVICES=pthread \
  DBUS_SYSTEM_BUS_ADDRESS="unix:path=$work/none" -- ||
  fail "no daemon: $(tail -n 5 "$work/no_daemon.out")"
grep -q "no avahi-daemon" "$work/no_daemon.out" ||
  fail "no daemon not said: $(tail -n 5 "$work/no_daemon.out")"
grep -q "wrong pre-shared key" "$work/pocld1.log" ||
  fail "pocld 1 did not log the wrong key"
# 5. avahi-daemon restarts under a server: it advertises again, and is found again.
kill "${avahi_pid[2]}"
wait "${avahi_pid[2]}" 2>/dev/null
start_avahi 2
for ((t = 0; t < 100; t++)); do
  [[ $(grep -c "advertised as" "$work/pocld2.log") -ge 2 ]] && break
  sleep 0.1
done
[[ $(grep -c "advertised as" "$work/pocld2.log") -ge 2 ]] ||
  fail "pocld 2 did not advertise again after avahi-daemon restarted: $(tail -n 5 "$work/pocld2.log")"
discover "$work/again.out" POCL_DEVICES= POCL_REMOTE_PSK_FILE="$key" -- "$s1" "$s2" ||
  fail "after the restart: $(tail -n 5 "$work/again.out")"
echo "$name: PASS"
