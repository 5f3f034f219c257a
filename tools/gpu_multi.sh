#!/usr/bin/env bash
# Several GPUs of one host, one device call: the thin build, one pocld
# per GPU over NVIDIA's OpenCL on loopback, then
#   - examples/remote/matmul at each size of MATMUL_SIZES natively on one GPU and
#     on 1, 2, 4 ... remote GPUs (powers of two up to the GPU count), with the
#     parallel efficiency native / (k x remote time on k GPUs);
#   - one round of the largest matmul on all GPUs, traced ($OUT/matmul-trace.json);
#   - overhead_bench between the pocld of GPU 0 and that of GPU 1: the no-op, the
#     4-byte migration against it, and 16 MiB to 1 GiB migrations against the
#     client's own write rate of the same run; then the same with their
#     migrations traced (tools/trace_stages.py);
#   - with FFMPEG_DIR (tools/gpu_custom.sh pack DIR), the pointcloud chain with
#     its stream source and decoder on the pocld of GPU 0 and the kernels on
#     GPU 1's (tools/gpu_custom.sh run, GPU_A=0 GPU_B=1).
#   POCL_TARBALL=<Debian 12's pocl.tar.xz> tools/gpu_multi.sh
# Env: BUILD_DIR (default /tmp/pocl-gpu), NVIDIA_OPENCL (default
# /usr/lib/libnvidia-opencl.so.1), PORT (default 24000), OUT (logs, default
# $BUILD_DIR/logs), MATMUL_SIZES (default "8192 16384"), REPEAT (timed runs per
# matmul, default 3), FFMPEG_DIR.
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
export BUILD_DIR=${BUILD_DIR:-/tmp/pocl-gpu}
nv=${NVIDIA_OPENCL:-/usr/lib/libnvidia-opencl.so.1}
port=${PORT:-24000}
logs=${OUT:-$BUILD_DIR/logs}
repeat=${REPEAT:-3}
mkdir -p "$logs" "$BUILD_DIR/bin"
bin=$BUILD_DIR/bin thin=$BUILD_DIR/thin

if [[ -n ${FFMPEG_DIR:-} ]]; then
  # The hevc driver is configured in only where FFmpeg's libraries are found.
  tar -xJf "$FFMPEG_DIR/ffmpeg.tar.xz" -C "$BUILD_DIR"
  export PKG_CONFIG_PATH=$BUILD_DIR/ffmpeg/pkgconfig
  export LD_LIBRARY_PATH=$BUILD_DIR/ffmpeg/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
t0=$(date +%s)
bash "$repo/tools/build.sh" --thin >"$logs/build.log" 2>&1 \
  || { echo "gpu_multi: build failed, see $logs/build.log"; tail -20 "$logs/build.log"; exit 1; }
cc -O2 -o "$bin/matmul" "$repo/examples/remote/matmul.c" -lOpenCL
cc -O2 -o "$bin/overhead_bench" "$repo/tools/bench/overhead_bench.c" -lOpenCL -lpthread -lm
echo "== built in $(($(date +%s) - t0)) s"
nvidia-smi -L
nvidia-smi topo -m 2>/dev/null | head -8
gpus=$(nvidia-smi -L | wc -l)
echo "CPUs: $(nproc)"

pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait "${pids[@]}" 2>/dev/null' EXIT
# pocld of GPU i on port + 10 i; extra args after the GPU index
start_pocld() {
  local i=$1 p=$2
  shift 2
  OCL_ICD_FILENAMES=$nv CUDA_VISIBLE_DEVICES=$i "$thin/pocld/pocld" --port "$p" \
    --log-level info "$@" >"$logs/pocld-$p.log" 2>&1 &
  pids+=($!)
}
wait_listening() {
  local f
  for f in "$@"; do
    for _ in $(seq 100); do
      grep -q "listening on" "$f" 2>/dev/null && break
      sleep 0.1
    done
  done
}
for ((i = 0; i < gpus; ++i)); do start_pocld "$i" $((port + 10 * i)); done
wait_listening "$logs"/pocld-*.log
export POCL_BUILDING=1
remotes() { # POCL_DEVICES and POCL_REMOTEi_PARAMETERS for the first $1 GPUs' pocld
  local k=$1 i devs=""
  for ((i = 0; i < k; ++i)); do
    devs+="remote "
    export POCL_REMOTE${i}_PARAMETERS=127.0.0.1:$((port + 10 * i))/0
  done
  export POCL_DEVICES=${devs% }
}

for n in ${MATMUL_SIZES:-8192 16384}; do
  echo "== matmul ${n}x${n}, best of $repeat: native on GPU 0, then k remote GPUs"
  native=$(OCL_ICD_FILENAMES=$nv CUDA_VISIBLE_DEVICES=0 timeout 500 "$bin/matmul" "$n" 1 "$repeat")
  echo "native: $native"
  tn=$(sed -n 's/.*best \([0-9.]*\) ms/\1/p' <<<"$native")
  for ((k = 1; k <= gpus; k *= 2)); do
    out=$( (remotes "$k"; OCL_ICD_FILENAMES=$thin/lib/CL/libpocl.so timeout 500 \
      "$bin/matmul" "$n" "$k" "$repeat") 2>&1)
    tk=$(sed -n 's/.*best \([0-9.]*\) ms/\1/p' <<<"$out")
    if [[ -n $tn && -n $tk ]]; then
      awk -v n="$n" -v k="$k" -v tn="$tn" -v tk="$tk" 'BEGIN {
        printf "matmul %d on %d remote GPU(s): %.2f ms, speed-up %.2fx over native, parallel efficiency %.1f%%\n",
               n, k, tk, tn / tk, 100 * tn / (k * tk) }'
    else
      echo "matmul $n on $k remote GPU(s) failed: $out"
    fi
  done
done

# Where the largest one's time goes: one traced round on all GPUs, its merged
# trace in $logs/matmul-trace.json (doc/tracing.md; Perfetto shows it).
n=${MATMUL_SIZES:-8192 16384}
n=${n##* }
if ((gpus >= 2)); then
  echo "== matmul ${n}x${n} on $gpus remote GPUs, traced"
  for ((i = 0; i < gpus; ++i)); do
    start_pocld "$i" $((port + 300 + 10 * i)) --trace "$logs/mm-$i"
    wait_listening "$logs/pocld-$((port + 300 + 10 * i)).log"
  done
  (remotes "$gpus"
   for ((i = 0; i < gpus; ++i)); do
     export POCL_REMOTE${i}_PARAMETERS=127.0.0.1:$((port + 300 + 10 * i))/0
   done
   POCL_REMOTE_TRACE=$logs/mm-client.json OCL_ICD_FILENAMES=$thin/lib/CL/libpocl.so \
     timeout 300 "$bin/matmul" "$n" "$gpus" 1)
  kill "${pids[@]: -$gpus}"
  wait "${pids[@]: -$gpus}" 2>/dev/null
  python3 "$repo/tools/trace_merge.py" -o "$logs/matmul-trace.json" \
    "$logs/mm-client.json" "$logs"/mm-[0-9].*.json
fi

if ((gpus >= 2)); then
  echo "== overhead_bench between the pocld of GPU 0 and GPU 1"
  (remotes 2; OCL_ICD_FILENAMES=$thin/lib/CL/libpocl.so:$nv BENCH_LOCAL=NVIDIA \
    timeout 400 "$bin/overhead_bench" -i 2000 -g noop migrate)
  echo "== the same, traced (tools/trace_stages.py)"
  start_pocld 0 $((port + 100)) --trace "$logs/trace-a"
  start_pocld 1 $((port + 110)) --trace "$logs/trace-b"
  wait_listening "$logs/pocld-$((port + 100)).log" "$logs/pocld-$((port + 110)).log"
  POCL_DEVICES="remote remote" POCL_REMOTE0_PARAMETERS=127.0.0.1:$((port + 100))/0 \
    POCL_REMOTE1_PARAMETERS=127.0.0.1:$((port + 110))/0 \
    POCL_REMOTE_TRACE=$logs/trace-client.json BENCH_LOCAL=NVIDIA \
    OCL_ICD_FILENAMES=$thin/lib/CL/libpocl.so:$nv \
    timeout 300 "$bin/overhead_bench" -i 400 migrate >/dev/null
  kill "${pids[-1]}" "${pids[-2]}"
  wait "${pids[-1]}" "${pids[-2]}" 2>/dev/null
  python3 "$repo/tools/trace_merge.py" -o "$logs/trace-merged.json" \
    "$logs/trace-client.json" "$logs"/trace-[ab].*.json \
    && python3 "$repo/tools/trace_stages.py" "$logs/trace-merged.json"
fi

if [[ -n ${FFMPEG_DIR:-} && $gpus -ge 2 ]]; then
  echo "== pointcloud: stream source and decoder on GPU 0's pocld, kernels on GPU 1's"
  GPU_A=0 GPU_B=1 PORT=$((port + 200)) bash "$repo/tools/gpu_custom.sh" run "$FFMPEG_DIR"
fi
