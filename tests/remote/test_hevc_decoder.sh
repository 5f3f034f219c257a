#!/usr/bin/env bash
# remote/hevc_decoder[_local]: the HEVC decoder device against ffmpeg's own decode.
# Makes a clip at test time (ffmpeg's testsrc2, libx265 with its default B-frames, so
# reordering and the drain are exercised) and ffmpeg's NV12 and RGBA decodes of it,
# then runs CLIENT (test_hevc_decoder) on them:
#   local:  on this build's hevc device (POCL_DEVICES=hevc), with its default parameters
#           and again with hwaccel=none,threads=1;
#   remote: through remote, on a pocld of its own serving "pthread hevc" (the CUSTOM
#           device is listed after the others: index 1).
# Under tools/sanitize.sh (RUN_REMOTE_VENDORS, RUN_REMOTE_PRELOAD set) the local run
# loads the sanitized libpocl, whose hevc driver then decodes the hostile inputs under
# ASan, and the remote run's pocld is the sanitized one (POCLD_FIXTURE_BINARY).
#   test_hevc_decoder.sh local|remote FIXTURE RUN_REMOTE POCLD BUILD_DIR CLIENT WORK_DIR
# Exit 77 (skipped) without ffmpeg or its libx265 encoder. PASS/FAIL line on stdout.
set -u
name=hevc_decoder
if [[ $# -ne 7 ]]; then
  sed -n '13,13p' "$0" | sed 's/^# //' >&2
  exit 2
fi
mode=$1 fixture=$2 run_remote=$3 pocld=$4 build=$5 client=$6 work=$7
fail() { echo "$name: FAIL: $*"; exit 1; }
rm -rf "$work"
mkdir -p "$work"

command -v ffmpeg >/dev/null || { echo "$name: SKIP: no ffmpeg"; exit 77; }
ffmpeg -hide_banner -encoders 2>/dev/null | grep -qw libx265 \
  || { echo "$name: SKIP: ffmpeg has no libx265 encoder"; exit 77; }
w=320 h=240
clip=$work/clip.hevc
ffmpeg -nostdin -loglevel error -f lavfi -i "testsrc2=size=${w}x$h:rate=30" -frames:v 24 \
  -c:v libx265 -x265-params log-level=error -f hevc "$clip" || fail "cannot encode the clip"
for fmt in nv12 rgba; do
  ffmpeg -nostdin -loglevel error -i "$clip" -f rawvideo -pix_fmt $fmt "$work/ref.$fmt" \
    || fail "ffmpeg cannot decode the clip to $fmt"
done
args=("$clip" "$work/ref.nv12" "$work/ref.rgba" $w $h)

case $mode in
  local)
    # the default parameters, then software on one thread: the same frames
    vendors=${RUN_REMOTE_VENDORS:-$build/ocl-vendors}
    for params in "" "hwaccel=none,threads=1"; do
      env OCL_ICD_VENDORS="$vendors" POCL_BUILDING=1 POCL_DEVICES=hevc \
        POCL_HEVC0_PARAMETERS="$params" \
        ${RUN_REMOTE_PRELOAD:+LD_PRELOAD=$RUN_REMOTE_PRELOAD} \
        timeout -k 5 300 "$client" "${args[@]}" || exit 1
    done
    ;;
  remote)
    state=$work/pocld.state
    trap '"$fixture" stop "$state" >/dev/null 2>&1' EXIT
    POCLD_SERVED_DEVICES="pthread hevc" "$fixture" start "$state" "$pocld" "$build" \
      || fail "could not start a pocld of our own"
    port=$(sed -n 's/^POCLD_PORT=//p' "$state")
    timeout -k 5 600 "$run_remote" "$state" "$build" \
      env POCL_REMOTE0_PARAMETERS="127.0.0.1:$port/1" "$client" "${args[@]}"
    ;;
  *)
    fail "mode $mode is neither local nor remote"
    ;;
esac
