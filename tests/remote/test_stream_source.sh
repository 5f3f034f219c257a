#!/usr/bin/env bash
# remote/stream_source: the stream source device on data made here: an HEVC clip
# (ffmpeg + libx265, 24 frames) and a random raw file. Each case runs CLIENT
# (test_stream_source) on the local stream device (POCL_DEVICES=stream), then through
# remote on a pocld of its own serving "pthread stream" (the stream device is the
# server's device 1), the device configured by POCL_STREAM0_PARAMETERS both times.
# Cases: the clip as access units, with loop, raw 4096-byte chunks (also looped), a
# missing file, 66 MiB without start codes, the clip from a named pipe (fps=60), the raw
# file from a TCP feed.
#   test_stream_source.sh FIXTURE RUN_REMOTE POCLD BUILD_DIR CLIENT WORK_DIR
# Env: STREAM_SOURCE_LOCAL_ONLY=1 runs the local half only.
# Exit 77 (skip) without ffmpeg/libx265. PASS/FAIL line on stdout; exit 0 only on PASS.
set -u
name=stream_source
if [[ $# -ne 6 ]]; then
  sed -n '10,10p' "$0" | sed 's/^# //' >&2
  exit 2
fi
fixture=$1 run_remote=$2 pocld=$3 build=$4 client=$5 work=$6
mkdir -p "$work"
work=$(cd "$work" && pwd)
state=$work/$name.state
helpers=()
garbage=$work/garbage.hevc
cleanup() {
  local pid
  for pid in "${helpers[@]}"; do
    kill "$pid" 2>/dev/null
  done
  "$fixture" stop "$state" >/dev/null 2>&1
  rm -f "$garbage"
}
trap cleanup EXIT

clip=$work/clip.hevc raw=$work/raw.bin fifo=$work/feed.fifo frames=24
if ! command -v ffmpeg >/dev/null; then
  echo "$name: SKIP: no ffmpeg"
  exit 77
fi
rm -f "$clip" "$fifo"
if ! ffmpeg -nostdin -loglevel error -f lavfi -i testsrc2=size=320x240:rate=30 \
     -frames:v $frames -c:v libx265 -x265-params log-level=error -f hevc "$clip" \
   || [[ ! -s $clip ]]; then
  echo "$name: SKIP: ffmpeg could not make an HEVC clip (libx265?)"
  exit 77
fi
if command -v ffprobe >/dev/null; then
  counted=$(ffprobe -v error -count_frames -select_streams v:0 \
            -show_entries stream=nb_read_frames -of csv=p=0 "$clip")
  if [[ $counted != "$frames" ]]; then
    echo "$name: FAIL: ffprobe counts '$counted' frames in the clip, not $frames"
    exit 1
  fi
fi
head -c 100003 /dev/urandom >"$raw"
# 66 MiB of 0xff: no start code, over the device's 64 MiB access unit limit
head -c $((66 << 20)) /dev/zero | tr '\0' '\377' >"$garbage"
mkfifo "$fifo"

# A writer for the named pipe, or a one-connection TCP server of FILE whose port
# goes to $feed_port; their pids are killed at exit if still there.
start_fifo_writer() {
  cat "$1" >"$fifo" &
  helpers+=($!)
}
start_tcp_feed() {
  local portfile=$work/feed.port i
  rm -f "$portfile"
  python3 - "$1" "$portfile" <<'PY' &
import os, socket, sys
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(1)
with open(sys.argv[2] + ".tmp", "w") as f:
    f.write(str(s.getsockname()[1]))
os.rename(sys.argv[2] + ".tmp", sys.argv[2])
s.settimeout(120)
c, _ = s.accept()
with open(sys.argv[1], "rb") as f:
    c.sendall(f.read())
c.close()
PY
  helpers+=($!)
  for ((i = 0; i < 100; i++)); do
    [[ -s $portfile ]] && break
    sleep 0.1
  done
  feed_port=$(cat "$portfile" 2>/dev/null)
  [[ -n $feed_port ]]
}

failures=0
# run_case WHERE PARAMETERS CLIENT_ARGS...: WHERE is local or remote.
run_case() {
  local where=$1 params=$2 rc
  shift 2
  echo "$name: --- $where: POCL_STREAM0_PARAMETERS=$params: $*"
  if [[ $where == local ]]; then
    OCL_ICD_VENDORS=$build/ocl-vendors POCL_BUILDING=1 POCL_DEVICES=stream \
      POCL_STREAM0_PARAMETERS=$params "$client" "$@"
    rc=$?
  else
    if ! POCLD_SERVED_DEVICES="pthread stream" POCL_STREAM0_PARAMETERS=$params \
         "$fixture" start "$state" "$pocld" "$build"; then
      echo "$name: FAIL: could not start a pocld of our own"
      exit 1
    fi
    RUN_REMOTE_SERVER_DEVICE=1 "$run_remote" "$state" "$build" "$client" "$@"
    rc=$?
    "$fixture" stop "$state" || { echo "$name: FAIL: pocld died under $params"; rc=1; }
  fi
  if [[ $rc -ne 0 ]]; then
    echo "$name: case failed ($where, $params, exit $rc)"
    failures=$((failures + 1))
  fi
}

wheres="local remote"
[[ ${STREAM_SOURCE_LOCAL_ONLY:-0} == 1 ]] && wheres=local
for where in $wheres; do
  run_case "$where" "$clip" hevc "$clip" $frames
  run_case "$where" "$clip,chunk=hevc,loop" hevc "$clip" $frames loop
  run_case "$where" "$raw,chunk=4096" raw "$raw" 4096
  run_case "$where" "$raw,loop,chunk=4096" raw "$raw" 4096 loop
  run_case "$where" "$work/no-such-file.hevc" missing
  run_case "$where" "$garbage" garbage
  start_fifo_writer "$clip"
  run_case "$where" "$fifo,fps=60" hevc "$clip" $frames
  if start_tcp_feed "$raw"; then
    run_case "$where" "tcp:127.0.0.1:$feed_port,chunk=4096" raw "$raw" 4096
  else
    echo "$name: the TCP feed did not start"
    failures=$((failures + 1))
  fi
done
if [[ $failures -ne 0 ]]; then
  echo "$name: FAIL: $failures case(s) failed"
  exit 1
fi
echo "$name: PASS: $wheres"
