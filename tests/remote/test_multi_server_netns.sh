#!/usr/bin/env bash
# remote/multi_server_netns: the multi-server test with every party on a host of its
# own: the client and two pocld in three network namespaces on one bridge (veth
# pairs), so commands, completions and migrations cross real interfaces with
# distinct addresses, and the servers reach each other at the addresses the client
# introduces them by.
#   test_multi_server_netns.sh POCLD BUILD_DIR CLIENT WORK_DIR
# Needs root and `ip netns`; exits 77 (skipped) without them.
set -u
if [[ $# -ne 4 ]]; then
  sed -n '7,7p' "$0" | sed 's/^# //' >&2
  exit 2
fi
pocld=$1 build=$2 client=$3 work=$4
name=multi_server_netns
# shellcheck source=netns_util.sh
. "$(dirname "${BASH_SOURCE[0]}")/netns_util.sh"
mkdir -p "$work"
tag=$$
nss=(pc$tag ps1$tag ps2$tag pb$tag)
pids=()

cleanup() {
  local p n
  for p in "${pids[@]}"; do
    kill "$p" 2>/dev/null
  done
  for p in "${pids[@]}"; do
    wait "$p" 2>/dev/null
  done
  for n in "${nss[@]}"; do
    ip netns del "$n" 2>/dev/null
  done
  return 0
}
trap cleanup EXIT
trap 'echo "$name: FAIL: interrupted"; exit 1' INT TERM

if [[ $(id -u) != 0 ]] || ! ip netns add "${nss[3]}" 2>/dev/null; then
  echo "$name: SKIP: needs root and ip netns"
  exit 77
fi
# client 10.213.0.1, servers .2 and .3
netns_bridge 10.213.0 "$tag" "${nss[3]}" "${nss[@]:0:3}" ||
  { echo "$name: FAIL: cannot set up the namespaces"; exit 1; }

# pocld refuses a non-loopback address without a key unless told it is fine.
insecure=()
"$pocld" --help 2>&1 | grep -q -- --insecure && insecure=(--insecure)
port=21000
for i in 1 2; do
  ip netns exec "${nss[$i]}" env OCL_ICD_VENDORS="$build/ocl-vendors" POCL_BUILDING=1 \
    POCL_DEVICES=pthread "$pocld" --address "10.213.0.$((i + 1))" --port $port \
    "${insecure[@]}" </dev/null >"$work/$name-$i.log" 2>&1 &
  pids+=($!)
done
for i in 1 2; do
  for ((t = 0; t < 600; t++)); do
    netns_listening "${nss[$i]}" $port && netns_listening "${nss[$i]}" $((port + 2)) && break
    sleep 0.1
  done
  if ! netns_listening "${nss[$i]}" $((port + 2)); then
    echo "$name: FAIL: pocld in ${nss[$i]} did not listen"
    tail -n 20 "$work/$name-$i.log"
    exit 1
  fi
done

ip netns exec "${nss[0]}" env POCL_DEVICES="remote remote" \
  POCL_REMOTE0_PARAMETERS=10.213.0.2:$port/0 POCL_REMOTE1_PARAMETERS=10.213.0.3:$port/0 \
  OCL_ICD_VENDORS="$build/ocl-vendors" POCL_BUILDING=1 \
  timeout -k 5 400 "$client"
rc=$?
# The servers talked to each other at their own addresses.
peer_ok=0
grep -q "peer 1 connected at 10.213.0.3:$((port + 2))" "$work/$name-1.log" && peer_ok=1
if [[ $rc != 0 || $peer_ok != 1 ]]; then
  for i in 1 2; do
    echo "--- server $i log (last lines)"; tail -n 20 "$work/$name-$i.log"
  done
  echo "$name: FAIL: client exit status $rc, peer link seen: $peer_ok"
  exit 1
fi
echo "$name: PASS"
