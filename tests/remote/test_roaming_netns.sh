#!/usr/bin/env bash
# remote/roaming_netns: the client moves to another address in the middle of a run. The
# client and pocld are in two network namespaces joined by a veth pair; while the
# client (test_connection_cut: data checks and an exact atomic counter) runs, its
# address 10.214.0.10 is replaced by 10.214.0.20. Its old connections die (the kernel
# times them out: TCP_USER_TIMEOUT / keepalive, about 10 s), it reconnects from the new
# address, and pocld attaches the new connection to the same session.
#   test_roaming_netns.sh POCLD BUILD_DIR CLIENT WORK_DIR
# Needs root and `ip netns`; exits 77 (skipped) without them.
set -u
if [[ $# -ne 4 ]]; then
  sed -n '8,8p' "$0" | sed 's/^# //' >&2
  exit 2
fi
pocld=$1 build=$2 client=$3 work=$4
name=roaming_netns
mkdir -p "$work"
tag=$$
ns_c=rc$tag ns_s=rs$tag
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
  ip netns del "$ns_c" 2>/dev/null
  ip netns del "$ns_s" 2>/dev/null
  return 0
}
trap cleanup EXIT
trap 'echo "$name: FAIL: interrupted"; exit 1' INT TERM
fail() { echo "$name: FAIL: $*"; tail -n 20 "$work/$name.pocld.log" 2>/dev/null; exit 1; }

if [[ $(id -u) != 0 ]] || ! ip netns add "$ns_s" 2>/dev/null; then
  echo "$name: SKIP: needs root and ip netns"
  exit 77
fi
set -e
ip netns add "$ns_c"
ip link add "vc$tag" type veth peer name "vs$tag"
ip link set "vc$tag" netns "$ns_c"
ip link set "vs$tag" netns "$ns_s"
ip -n "$ns_s" addr add 10.214.0.1/24 dev "vs$tag"
ip -n "$ns_c" addr add 10.214.0.10/24 dev "vc$tag"
for n in "$ns_s" "$ns_c"; do
  ip -n "$n" link set lo up
done
ip -n "$ns_s" link set "vs$tag" up
ip -n "$ns_c" link set "vc$tag" up
set +e

port=21100
# Removed first: the background start truncates it only later, and an earlier run's
# "listening on" would be taken for this one's.
rm -f "$work/$name.pocld.log"
ip netns exec "$ns_s" env OCL_ICD_VENDORS="$build/ocl-vendors" POCL_BUILDING=1 \
  POCL_DEVICES=pthread "$pocld" --address 10.214.0.1 --port $port --insecure \
  </dev/null >"$work/$name.pocld.log" 2>&1 &
pids+=($!)
for ((t = 0; t < 600; t++)); do
  grep -q "listening on" "$work/$name.pocld.log" && break
  kill -0 "${pids[0]}" 2>/dev/null || fail "pocld exited at start"
  sleep 0.1
done
grep -q "listening on" "$work/$name.pocld.log" || fail "pocld did not listen within 60 s"

# The client runs until told to stop (a file), 10 iterations after its resume was seen.
stop=$work/$name.stop
rm -f "$stop"
ip netns exec "$ns_c" env POCL_DEVICES=remote POCL_REMOTE0_PARAMETERS=10.214.0.1:$port/0 \
  OCL_ICD_VENDORS="$build/ocl-vendors" POCL_BUILDING=1 POCL_REMOTE_RECONNECT_TIMEOUT_MS=60000 \
  CONNECTION_CUT_STOP_FILE="$stop" \
  timeout -k 5 200 "$client" 1000000 4096 >"$work/$name.client.out" 2>&1 &
cpid=$!
pids+=($cpid)
# Move once the session is up and busy.
for ((t = 0; t < 300; t++)); do
  grep -q "data socket from 10.214.0.10" "$work/$name.pocld.log" && break
  sleep 0.1
done
sleep 1
ip -n "$ns_c" addr del 10.214.0.10/24 dev "vc$tag"
ip -n "$ns_c" addr add 10.214.0.20/24 dev "vc$tag"
echo "$name: the client moved from 10.214.0.10 to 10.214.0.20"
for ((t = 0; t < 600; t++)); do
  grep -q "resumed from 10.214.0.20" "$work/$name.pocld.log" && break
  kill -0 "$cpid" 2>/dev/null || break
  sleep 0.1
done
touch "$stop"
wait "$cpid"
rc=$?
cat "$work/$name.client.out"
[[ $rc == 0 ]] || fail "client exit status $rc"
grep -q "resumed from 10.214.0.20" "$work/$name.pocld.log" \
  || fail "pocld logged no resume from the new address"
grep "resumed from" "$work/$name.pocld.log" | head -n 3
echo "$name: PASS"
