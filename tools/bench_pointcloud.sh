#!/usr/bin/env bash
# The papers' AR case in miniature (examples/remote/pointcloud.c) in their four
# configurations, on loopback: server A serves the stream source (the camera's
# server), server B the HEVC decoder and the compute device (pthread), and the
# client asks for the sorted points of every frame:
#   1. client: every stage's output goes through the client (no P2P);
#   2. p2p:    buffers move from server to server, whole;
#   3. size:   P2P with content size: only an access unit's bytes move;
#   4. local:  all three devices in the client's own process.
# Prints one line per configuration (fps, bytes over the client link and between
# the servers per frame, the checksum of the sorted indices, which must be equal)
# and a table.  Makes the depth clip with Debian's ffmpeg and libx265.
#   tools/bench_pointcloud.sh [FRAMES [WIDTH HEIGHT]]   (default 60 frames, 160x120)
# Env: BUILD_DIR (default build).  tests/remote/test_pointcloud.sh runs it with few
# frames and checks the checksums and byte counts.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$repo/build}/pocl
frames=${1:-60} w=${2:-160} h=${3:-120}
example=$build/examples/remote/remote_pointcloud
fixture=$repo/tests/remote/pocld_fixture.sh
for tool in ffmpeg "$example"; do
  command -v "$tool" >/dev/null || { echo "bench_pointcloud: $tool not found" >&2; exit 1; }
done

work=$(mktemp -d)
state_a=$work/a.state state_b=$work/b.state
stop() {
  local rc=$?
  "$fixture" stop "$state_a" >/dev/null 2>&1 || true
  "$fixture" stop "$state_b" >/dev/null 2>&1 || true
  # a failure's why is in the servers' logs, which go with the work directory
  if ((rc != 0)); then
    for s in a b; do
      [[ -f $work/$s.log ]] && { echo "== pocld $s's log" >&2; tail -n 40 "$work/$s.log" >&2; }
    done
  fi
  rm -rf "$work"
}
trap stop EXIT

# A depth-like clip: 30 frames, no B-frames (one frame out per access unit in).
clip=$work/depth.hevc
ffmpeg -loglevel error -f lavfi -i "testsrc2=size=${w}x${h}:rate=30" -frames:v 30 \
  -pix_fmt yuv420p -c:v libx265 -x265-params log-level=error:bframes=0 -f hevc "$clip"
au_max=$(ffprobe -loglevel error -select_streams v -show_entries packet=size -of csv=p=0 "$clip" \
  | sort -n | tail -n1)
echo "bench_pointcloud: clip ${w}x${h}, 30 frames, $(stat -c %s "$clip") bytes" \
  "($(($(stat -c %s "$clip") / 30)) per frame, largest access unit $au_max bytes), played in a loop"

export OCL_ICD_VENDORS=$build/ocl-vendors POCL_BUILDING=1
export POCL_STREAM0_PARAMETERS="$clip,chunk=hevc,loop"
POCLD_SERVED_DEVICES="stream" "$fixture" start "$state_a" "$build/pocld/pocld" "$build" >&2
POCLD_SERVED_DEVICES="pthread hevc" "$fixture" start "$state_b" "$build/pocld/pocld" "$build" >&2
port() { sed -n 's/^POCLD_PORT=//p' "$1" | head -n1; }
a=127.0.0.1:$(port "$state_a") b=127.0.0.1:$(port "$state_b")

# pocld numbers a platform's CUSTOM devices after its others: on B, pthread is 0
# and hevc 1 (doc/pocld.md).
remote() {
  POCL_DEVICES="remote remote remote" POCL_REMOTE0_PARAMETERS=$a/0 \
    POCL_REMOTE1_PARAMETERS=$b/1 POCL_REMOTE2_PARAMETERS=$b/0 \
    "$example" "$w" "$h" "$frames" "$1"
}
lines=()
lines+=("1 $(remote client)")
lines+=("2 $(remote p2p)")
lines+=("3 $(remote size)")
lines+=("4 $(POCL_DEVICES="pthread stream hevc" "$example" "$w" "$h" "$frames" size)")
printf '%s\n' "${lines[@]}"

echo
echo "| configuration | frames/s | client link bytes/frame | server-to-server bytes/frame |"
echo "|---|---|---|---|"
names=("" "1. everything through the client" "2. P2P" "3. P2P with content size" "4. all on the client")
for l in "${lines[@]}"; do
  set -- $l
  # "N pointcloud: F frames WxH mode M: FPS fps, C client bytes/frame, P peer ..."
  printf '| %s | %s | %s | %s |\n' "${names[$1]}" "${8}" "${10}" "${13}"
done
