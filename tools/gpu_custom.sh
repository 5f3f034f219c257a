#!/usr/bin/env bash
# The CUSTOM devices on a GPU machine (doc/custom-devices.md), where the GPU machine has
# neither FFmpeg's libraries nor ffmpeg: Debian 12's libraries and the test data travel
# with the call.
#   tools/gpu_custom.sh pack DIR     (on Debian 12, with tools/setup.sh's packages)
#     DIR/ffmpeg.tar.xz: libavcodec, libavutil, libswscale, every library they need
#       beyond glibc, libstdc++, zlib and the ICD loader (the machine's own must stay), their headers and pkg-config files;
#     DIR/custom-data.tar.xz: the hevc test's clip with ffmpeg's NV12 and RGBA decodes
#       (tests/remote/test_hevc_decoder.sh makes the same), and a depth clip for the
#       pointcloud example.
#   POCL_TARBALL=... tools/gpu_custom.sh run DIR   (on the GPU machine)
#     the thin build with the hevc driver; the hevc test natively with hwaccel=auto
#     (NVDEC when libavcodec reaches it) and hwaccel=none, and through a pocld; then
#     examples/remote/pointcloud with the stream source and decoder on one pocld and
#     NVIDIA's GPU as the compute device on another, in the configurations 1-3 of
#     tools/bench_pointcloud.sh (4, all on the client, needs one platform with all
#     three devices, which NVIDIA's is not).
# Env (run): BUILD_DIR (default /tmp/pocl-gpu), NVIDIA_OPENCL (default
# /usr/lib/libnvidia-opencl.so.1), PORT (default 23000), FRAMES (default 120),
# TRACE (a directory: both pocld and the pointcloud runs write command traces there,
# doc/tracing.md; merge a run's client file with the servers' by tools/trace_merge.py),
# GPU_A and GPU_B (the GPU of server A, whose decoder may use NVDEC, and of server B;
# default 0: both on the first).
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
[[ $# -eq 2 ]] || { sed -n '5,5p;11,11p' "$0" | sed 's/^# //' >&2; exit 2; }
mode=$1 dir=$(mkdir -p "$2" && cd "$2" && pwd)

if [[ $mode == pack ]]; then
  set -e
  t=$(mktemp -d)
  trap 'rm -rf "$t"' EXIT
  mkdir -p "$t/ffmpeg/lib" "$t/ffmpeg/include" "$t/ffmpeg/pkgconfig" "$t/data"
  libdir=/usr/lib/x86_64-linux-gnu
  libs=("$libdir/libavcodec.so.59" "$libdir/libavutil.so.57" "$libdir/libswscale.so.6")
  for l in "${libs[@]}"; do
    cp -L "$l" "$t/ffmpeg/lib/"
    ldd "$l" | awk '/=> \//{print $3}'
  done | sort -u | grep -v -E '/(libc|libm|libpthread|libdl|librt|libgcc_s|libstdc\+\+|libz|libOpenCL|ld-linux[^/]*)\.so' \
    | while read -r l; do cp -L "$l" "$t/ffmpeg/lib/"; done
  for n in avcodec avutil swscale; do
    ln -s "$(basename "$libdir"/lib$n.so.[0-9]*)" "$t/ffmpeg/lib/lib$n.so"
    sed -e 's|^prefix=.*|prefix=${pcfiledir}/..|' -e 's|^libdir=.*|libdir=${prefix}/lib|' \
        -e 's|^includedir=.*|includedir=${prefix}/include|' \
        -e 's|^Requires.private:.*|Requires.private:|' \
        "$libdir/pkgconfig/lib$n.pc" >"$t/ffmpeg/pkgconfig/lib$n.pc"
  done
  cp -r /usr/include/x86_64-linux-gnu/libav{codec,util} /usr/include/x86_64-linux-gnu/libswscale \
    /usr/include/x86_64-linux-gnu/libswresample "$t/ffmpeg/include/"
  tar -cJf "$dir/ffmpeg.tar.xz" -C "$t" ffmpeg
  ffmpeg -nostdin -loglevel error -f lavfi -i "testsrc2=size=320x240:rate=30" -frames:v 24 \
    -c:v libx265 -x265-params log-level=error -f hevc "$t/data/clip.hevc"
  for fmt in nv12 rgba; do
    ffmpeg -nostdin -loglevel error -i "$t/data/clip.hevc" -f rawvideo -pix_fmt $fmt \
      "$t/data/ref.$fmt"
  done
  ffmpeg -nostdin -loglevel error -f lavfi -i "testsrc2=size=640x480:rate=30" -frames:v 30 \
    -pix_fmt yuv420p -c:v libx265 -x265-params log-level=error:bframes=0 -f hevc \
    "$t/data/depth.hevc"
  tar -cJf "$dir/custom-data.tar.xz" -C "$t" data
  ls -la "$dir"
  exit 0
fi
[[ $mode == run ]] || { echo "gpu_custom: mode is pack or run" >&2; exit 2; }

export BUILD_DIR=${BUILD_DIR:-/tmp/pocl-gpu}
nv=${NVIDIA_OPENCL:-/usr/lib/libnvidia-opencl.so.1}
port=${PORT:-23000} frames=${FRAMES:-120}
thin=$BUILD_DIR/thin bin=$BUILD_DIR/bin
mkdir -p "$bin"
tar -xJf "$dir/ffmpeg.tar.xz" -C "$BUILD_DIR"
tar -xJf "$dir/custom-data.tar.xz" -C "$BUILD_DIR"
data=$BUILD_DIR/data
export PKG_CONFIG_PATH=$BUILD_DIR/ffmpeg/pkgconfig
export LD_LIBRARY_PATH=$BUILD_DIR/ffmpeg/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
t0=$(date +%s)
bash "$repo/tools/build.sh" --thin >"$BUILD_DIR/build.log" 2>&1 \
  || { tail -30 "$BUILD_DIR/build.log"; exit 1; }
grep -E "Building the following device drivers|ENABLE_HEVC_DEVICE" "$BUILD_DIR/build.log" | head -3
echo "== thin build done at $(($(date +%s) - t0)) s"
[[ -f $thin/lib/CL/devices/hevc/libpocl-devices-hevc.so ]] \
  || { echo "gpu_custom: the hevc driver was not built"; exit 1; }
cc -O2 -I"$repo/tests/remote" -I"$BUILD_DIR/src/pocl/include" -o "$bin/hevc" "$repo/tests/remote/test_hevc_decoder.c" \
  -lOpenCL -lpthread -lm
cc -O2 -o "$bin/pointcloud" "$repo/examples/remote/pointcloud.c" -lOpenCL -lm
args=("$data/clip.hevc" "$data/ref.nv12" "$data/ref.rgba" 320 240)
pocl=$thin/lib/CL/libpocl.so
# the drivers are loaded from the build tree
export POCL_BUILDING=1

echo "== hevc natively (thin libpocl), hwaccel=auto and none"
for params in "" "hwaccel=none"; do
  OCL_ICD_FILENAMES=$pocl POCL_DEVICES=hevc POCL_HEVC0_PARAMETERS=$params \
    timeout 300 "$bin/hevc" "${args[@]}" 2>&1 | grep -E "hevc_decoder: (PASS|FAIL)|device|name" | head -4
done

# Server A: the stream source and a decoder; server B: NVIDIA's GPU and a decoder.  pocld
# lists CUSTOM devices after all platforms' others (doc/pocld.md).
clip=$data/depth.hevc
OCL_ICD_FILENAMES=$pocl POCL_DEVICES="stream hevc" POCL_STREAM0_PARAMETERS="$clip,chunk=hevc,loop" \
  CUDA_VISIBLE_DEVICES=${GPU_A:-0} "$thin/pocld/pocld" --port "$port" --log-level info ${TRACE:+--trace "$TRACE/a"} \
  >"$BUILD_DIR/pocld-a.log" 2>&1 &
a=$!
OCL_ICD_FILENAMES=$nv:$pocl POCL_DEVICES="hevc" CUDA_VISIBLE_DEVICES=${GPU_B:-0} \
  "$thin/pocld/pocld" --port $((port + 10)) --log-level info ${TRACE:+--trace "$TRACE/b"} \
  >"$BUILD_DIR/pocld-b.log" 2>&1 &
b=$!
trap 'kill $a $b 2>/dev/null; wait $a $b 2>/dev/null' EXIT
sleep 3
echo "== hevc through remote (server B: its decoder is device 1)"
POCL_DEVICES=remote POCL_REMOTE0_PARAMETERS=127.0.0.1:$((port + 10))/1 OCL_ICD_FILENAMES=$pocl \
  timeout 300 "$bin/hevc" "${args[@]}" 2>&1 | grep -E "hevc_decoder: (PASS|FAIL)|device|name" | head -4

echo "== pointcloud 640x480, $frames frames: stream on A, decoder and NVIDIA's GPU on B"
for m in client p2p size; do
  POCL_DEVICES="remote remote remote" POCL_REMOTE0_PARAMETERS=127.0.0.1:$port/0 \
    POCL_REMOTE1_PARAMETERS=127.0.0.1:$((port + 10))/1 \
    POCL_REMOTE2_PARAMETERS=127.0.0.1:$((port + 10))/0 OCL_ICD_FILENAMES=$pocl \
    env ${TRACE:+"POCL_REMOTE_TRACE=$TRACE/client-$m.json"} timeout 60 "$bin/pointcloud" 640 480 \
    "$frames" $m
done
echo "== the same with the decoder on A (only decoded frames cross)"
POCL_DEVICES="remote remote remote" POCL_REMOTE0_PARAMETERS=127.0.0.1:$port/0 \
  POCL_REMOTE1_PARAMETERS=127.0.0.1:$port/1 \
  POCL_REMOTE2_PARAMETERS=127.0.0.1:$((port + 10))/0 OCL_ICD_FILENAMES=$pocl \
  timeout 60 "$bin/pointcloud" 640 480 "$frames" size
grep -i -E "hwaccel|cuda|nvdec|software" "$BUILD_DIR/pocld-b.log" | head -5
