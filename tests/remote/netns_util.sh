# netns_util.sh - what the tests with hosts in network namespaces share (sourced by
# test_multi_server_netns.sh, test_discovery_netns.sh, test_outage.sh).

# netns_bridge SUBNET TAG BRIDGE_NS HOST_NS...: a bridge in BRIDGE_NS (which exists) and
# the hosts on it: host i (from 0) is a new namespace whose veth v<i>-TAG has SUBNET.<i+1>/24.
# Non-zero at the first step that fails.
netns_bridge() {
  local net=$1 tag=$2 br=$3 i=0 n
  shift 3
  ip -n "$br" link add br0 type bridge && ip -n "$br" link set br0 up || return 1
  for n in "$@"; do
    ip netns add "$n" &&
      ip link add "v$i-$tag" type veth peer name "b$i-$tag" &&
      ip link set "v$i-$tag" netns "$n" &&
      ip link set "b$i-$tag" netns "$br" &&
      ip -n "$br" link set "b$i-$tag" master br0 up &&
      ip -n "$n" addr add "$net.$((i + 1))/24" dev "v$i-$tag" &&
      ip -n "$n" link set "v$i-$tag" up &&
      ip -n "$n" link set lo up || return 1
    i=$((i + 1))
  done
}

# netns_listening NS PORT: whether a socket listens on TCP PORT in namespace NS (empty:
# the root one). Read from /proc: a probe connection would be logged as a bad client.
netns_listening() {
  local hex cmd=()
  hex=$(printf '%04X' "$2")
  [[ -z $1 ]] || cmd=(ip netns exec "$1")
  "${cmd[@]}" awk -v p=":$hex" \
    'NR > 1 && $4 == "0A" && substr($2, length($2) - 4) == p { f = 1 } END { exit !f }' \
    /proc/net/tcp
}
