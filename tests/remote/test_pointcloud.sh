#!/usr/bin/env bash
# remote/pointcloud: the chain stream source -> HEVC decoder -> OpenCL C kernels
# (examples/remote/pointcloud.c) across two servers, run by tools/bench.sh pointcloud
# with few frames.  Checks outcomes, not speed:
#   - the sorted indices are the same (checksum) in all four configurations, the
#     local one included;
#   - with content size, only the access units' bytes move between the servers (at
#     most the clip's largest access unit plus the 8-byte size, per frame), where
#     without it the whole 1 MiB chunk buffer does;
#   - with P2P, neither the chunk buffer nor the frame crosses the client link, where
#     through the client both do, both ways (the commands and the indices cross in
#     both configurations).
#   test_pointcloud.sh REPO BUILD_ROOT
set -u
repo=$1 build_root=$2
name=pointcloud
fail() { echo "$name: FAIL: $*"; exit 1; }
command -v ffmpeg >/dev/null || { echo "$name: SKIP: ffmpeg not installed"; exit 77; }
w=64 h=48 frames=6
out=$(BUILD_DIR=$build_root bash "$repo/tools/bench.sh" pointcloud $frames $w $h 2>&1) \
  || fail "bench.sh pointcloud failed: $out"
echo "$out"
field() { echo "$out" | awk -v c="$1" -v f="$2" '$1 == c && $2 == "pointcloud:" { print $f }'; }
sums=$(for c in 1 2 3 4; do field $c 17; done | sort -u)
[[ $(echo "$sums" | wc -l) == 1 && -n $sums ]] || fail "checksums differ: $sums"
for c in 1 2 3 4; do
  [[ -n $(field $c 17) ]] || fail "configuration $c printed no result"
done
au_max=$(echo "$out" | sed -n 's/.*largest access unit \([0-9]*\) bytes.*/\1/p')
[[ -n $au_max ]] || fail "no access unit size printed"
frame_bytes=$((w * h * 3 / 2))
peer_size=$(field 3 13) peer_p2p=$(field 2 13) client_p2p=$(field 3 10) client_via=$(field 1 10)
((peer_size <= au_max + 8)) || fail "content size: $peer_size peer bytes/frame > $au_max + 8"
((peer_size > 0)) || fail "content size: nothing moved between the servers"
((peer_p2p >= 1048576)) || fail "p2p: $peer_p2p peer bytes/frame, expected the whole chunk buffer"
((client_p2p < 1048576)) || fail "p2p: $client_p2p client bytes/frame: the chunk buffer crossed it"
((client_via - client_p2p >= 2 * 1048576 + 2 * frame_bytes)) \
  || fail "via client: $client_via bytes/frame, not the chunk and frame both ways more than P2P's $client_p2p"
local_traffic=$(field 4 10)
((local_traffic == 0)) || fail "local run counted $local_traffic bytes"
echo "$name: PASS (checksum $sums; per frame: $peer_size bytes between servers with content" \
  "size, $peer_p2p without; $client_p2p over the client link with P2P, $client_via without)"
