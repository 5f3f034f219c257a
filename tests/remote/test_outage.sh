#!/usr/bin/env bash
# remote/outage_short, outage_within, outage_beyond: a server that goes silent, as a real outage
# looks (a switch or a host drops out: no reset, no close, the packets stop). Server B
# runs in a network namespace behind a veth pair; server A and the client run in the root
# namespace; both servers have a pre-shared key. test_outage (the client) moves a 64 MiB
# buffer between them and increments it on each; B's end of the veth goes down for a while
# (in a migration, or with the latest content on B alone: test_outage.c), then up again.
#   test_outage.sh short|within|beyond POCLD BUILD_DIR CLIENT WORK_DIR
# short: 6 s, shorter than TCP's detection: no link breaks, TCP sends again; exact results.
# within: B's session grace is 50 s and the outage 35 s: longer than TCP's detection on
#   every link (about 10 s), so all the client's links and the peer links break and resume.
#   Nothing fails, the results are exact.
# beyond: B's grace is 4 s and the outage 24 s: B's session ends. Calls fail with codes
#   the specification allows, no old value is read, A and a fresh session on B go on.
# Needs root and `ip netns`; exits 77 (skipped) without them.
set -u
if [[ $# -ne 5 ]]; then
  sed -n '8,8p' "$0" | sed 's/^# //' >&2
  exit 2
fi
mode=$1 pocld=$2 build=$3 client=$4 work=$5
name=outage
# shellcheck source=netns_util.sh
. "$(dirname "${BASH_SOURCE[0]}")/netns_util.sh"
# A subnet and ports of each mode's own: CTest may run them at once.
case $mode in
  short) grace=50 outage=6 net=10.215.0 port=21100 ;;
  within) grace=50 outage=35 net=10.216.0 port=21110 ;;
  beyond) grace=4 outage=24 net=10.217.0 port=21120 ;;
  *) echo "$name: FAIL: mode $mode" ; exit 2 ;;
esac
rm -rf "$work"
mkdir -p "$work"
tag=$$
ns=po$tag
va=oa$tag vb=ob$tag
pids=()

cleanup() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
  ip netns del "$ns" 2>/dev/null
  ip link del "$va" 2>/dev/null
  return 0
}
trap cleanup EXIT
trap 'echo "$name: FAIL: interrupted"; exit 1' INT TERM

if [[ $(id -u) != 0 ]] || ! ip netns add "$ns" 2>/dev/null; then
  echo "$name: SKIP: needs root and ip netns"
  exit 77
fi
set -e
ip link add "$va" type veth peer name "$vb"
ip link set "$vb" netns "$ns"
ip addr add $net.1/24 dev "$va"
ip link set "$va" up
ip -n "$ns" addr add $net.2/24 dev "$vb"
ip -n "$ns" link set "$vb" up
ip -n "$ns" link set lo up
set +e

key=$work/key
(umask 077; echo "6a1c0d6e8a2b4c5d9e7f00112233445566778899aabbccddeeff001122334455" >"$key")
start() { # NS ADDRESS LOG GRACE
  local cmd=()
  [[ -z $1 ]] || cmd=(ip netns exec "$1")
  "${cmd[@]}" env OCL_ICD_VENDORS="$build/ocl-vendors" POCL_BUILDING=1 POCL_DEVICES=pthread \
    "$pocld" --address "$2" --port $port --psk-file "$key" --session-grace "$4" \
    </dev/null >"$3" 2>&1 &
  pids+=($!)
  local t
  for ((t = 0; t < 600; t++)); do
    netns_listening "$1" $((port + 2)) && return 0
    sleep 0.1
  done
  echo "$name: FAIL: pocld at $2 did not listen"
  tail -n 20 "$3"
  exit 1
}
start "" $net.1 "$work/a.log" 60
start "$ns" $net.2 "$work/b.log" "$grace"

POCL_DEVICES="remote remote" POCL_REMOTE_PSK_FILE="$key" \
  POCL_REMOTE0_PARAMETERS=$net.1:$port/0 POCL_REMOTE1_PARAMETERS=$net.2:$port/0 \
  OCL_ICD_VENDORS="$build/ocl-vendors" POCL_BUILDING=1 \
  timeout -k 5 420 "$client" "${mode/short/within}" 64 "$work" >"$work/client.log" 2>&1 &
cpid=$!
pids+=($cpid)
for ((t = 0; t < 1200; t++)); do
  [[ -f $work/ready ]] && break
  kill -0 "$cpid" 2>/dev/null || break
  sleep 0.1
done
if [[ ! -f $work/ready ]]; then
  cat "$work/client.log"
  echo "$name: FAIL: the client did not start its iterations"
  exit 1
fi
# within: mid-transfer (a 64 MiB migration takes most of an iteration); beyond: the
# client waits for "down" with the buffer's latest content on B alone.
[[ $mode == beyond ]] || sleep 0.3
ip -n "$ns" link set "$vb" down
touch "$work/down"
echo "$name: B's link down for $outage s"
sleep "$outage"
ip -n "$ns" link set "$vb" up
echo "$name: B's link up"
touch "$work/over"
wait "$cpid"
rc=$?
cat "$work/client.log"
if [[ $rc != 0 ]] || ! grep -q "^outage: PASS" "$work/client.log"; then
  for s in a b; do
    echo "--- server $s log (last lines)"; tail -n 25 "$work/$s.log"
  done
  echo "$name: FAIL: client exit status $rc"
  exit 1
fi
echo "$name: PASS"
