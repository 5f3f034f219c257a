#!/usr/bin/env bash
# On a GPU machine with NVIDIA's OpenCL (Ubuntu 24.04, no LLVM): the thin
# build, two pocld over NVIDIA on loopback (on the first two GPUs when
# there are two, both on GPU 0 otherwise), the example, the API and
# multi-server tests and the benchmark through the remote devices (no-op,
# chain, bandwidth, server-to-server migrations), matmul natively against
# one and two remote GPUs, plus the native probes and the loopback TCP
# streams probe whose figures doc/benchmarks.md quotes.  One device call
# reproduces them.
#   POCL_TARBALL=<Debian 12's pocl.tar.xz> tools/gpu_bench.sh [ITERATIONS]
# Env: BUILD_DIR (default /tmp/pocl-gpu), NVIDIA_OPENCL (the vendor
# library, default /usr/lib/libnvidia-opencl.so.1), PORT (default 21000),
# OUT (where logs go, default $BUILD_DIR/logs), QUICK=1 (one remote device:
# no multi-server test, migrations or matmul; for the single-server figures),
# STREAM_LOG2 (overhead_bench's arrays: 2^STREAM_LOG2 doubles, default 25).
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
export BUILD_DIR=${BUILD_DIR:-/tmp/pocl-gpu}
nv=${NVIDIA_OPENCL:-/usr/lib/libnvidia-opencl.so.1}
port=${PORT:-21000}
logs=${OUT:-$BUILD_DIR/logs}
iters=${1:-3000}
mkdir -p "$logs" "$BUILD_DIR/bin"
bin=$BUILD_DIR/bin thin=$BUILD_DIR/thin

bash "$repo/tools/build.sh" --thin > "$logs/build.log" 2>&1 \
  || { echo "gpu_bench: build failed, see $logs/build.log"; tail -20 "$logs/build.log"; exit 1; }

cc -O2 -o "$bin/bench" "$repo/tools/bench/remote_bench.c" -lOpenCL -lpthread
cc -O2 -o "$bin/overhead_bench" "$repo/tools/bench/overhead_bench.c" \
  -lOpenCL -lpthread -lm
cc -O2 -o "$bin/completion_probe" "$repo/tools/bench/completion_probe.c" -lOpenCL -lpthread
cc -O2 -o "$bin/arg_info_probe" "$repo/tools/bench/arg_info_probe.c" -lOpenCL
cc -O2 -o "$bin/chain_probe" "$repo/tools/bench/chain_probe.c" -lOpenCL -lpthread
cc -O2 -o "$bin/small_transfer_probe" "$repo/tools/bench/small_transfer_probe.c" -lOpenCL -lpthread
cc -O2 -o "$bin/two_process_probe" "$repo/tools/bench/two_process_probe.c" -lOpenCL -lpthread
cc -O2 -o "$bin/wait_probe" "$repo/tools/bench/wait_probe.c" -lOpenCL -lpthread
cc -O2 -o "$bin/read_probe" "$repo/tools/bench/read_probe.c" -lOpenCL -lpthread
cc -O2 -o "$bin/tcp_streams_probe" "$repo/tools/bench/tcp_streams_probe.c" -lpthread
cc -O2 -o "$bin/vecadd" "$repo/examples/remote/vecadd.c" -lOpenCL
cc -O2 -o "$bin/matmul" "$repo/examples/remote/matmul.c" -lOpenCL
for t in api_buffers api_events api_programs multi_server; do
  cc -O2 -I"$repo/tests/remote" -I"$repo/protocol" \
     -I"$repo/lib/CL/devices/remote" -I"$BUILD_DIR/src/pocl/include" \
     -o "$bin/$t" "$repo/tests/remote/test_$t.c" -lOpenCL -lpthread
done

echo "== native NVIDIA: completion notice and argument-info builds"
OCL_ICD_FILENAMES=$nv "$bin/completion_probe"
OCL_ICD_FILENAMES=$nv "$bin/arg_info_probe"
OCL_ICD_FILENAMES=$nv "$bin/chain_probe"
OCL_ICD_FILENAMES=$nv "$bin/small_transfer_probe"
OCL_ICD_FILENAMES=$nv "$bin/two_process_probe"
OCL_ICD_FILENAMES=$nv "$bin/wait_probe"
OCL_ICD_FILENAMES=$nv "$bin/read_probe"
"$bin/tcp_streams_probe"

gpus=$(nvidia-smi -L 2>/dev/null | wc -l)
second_gpu=$((gpus > 1 ? 1 : 0))
OCL_ICD_FILENAMES=$nv CUDA_VISIBLE_DEVICES=0 "$thin/pocld/pocld" --port "$port" \
  --log-level info > "$logs/pocld.log" 2>&1 &
pocld=$!
OCL_ICD_FILENAMES=$nv CUDA_VISIBLE_DEVICES=$second_gpu "$thin/pocld/pocld" \
  --port $((port + 10)) --log-level info > "$logs/pocld2.log" 2>&1 &
pocld2=$!
trap 'kill $pocld $pocld2 2>/dev/null; wait $pocld $pocld2 2>/dev/null' EXIT
sleep 3

export POCL_BUILDING=1 POCL_DEVICES=remote POCL_REMOTE0_PARAMETERS=127.0.0.1:$port/0
export POCL_REMOTE1_PARAMETERS=127.0.0.1:$((port + 10))/0
echo "== through the remote device ($gpus GPUs; second server on GPU $second_gpu)"
OCL_ICD_FILENAMES=$thin/lib/CL/libpocl.so timeout 120 "$bin/vecadd"
for t in api_buffers api_events api_programs; do
  OCL_ICD_FILENAMES=$thin/lib/CL/libpocl.so timeout 300 "$bin/$t" \
    > "$logs/$t.log" 2>&1
  tail -n1 "$logs/$t.log"
done
# Over PoCL 5's CPU device where the machine has Ubuntu's: a pocld
# serving it, and overhead_bench's native reference in a process of its own
# (BENCH_NATIVE_ICD: two PoCLs cannot share one).
p5=${POCL5:-/usr/lib/x86_64-linux-gnu/libpocl.so.2}
if [[ -f $p5 ]]; then
  echo "== overhead_bench over PoCL 5's CPU device ($p5)"
  env -u POCL_BUILDING -u POCL_DEVICES OCL_ICD_FILENAMES=$p5 "$thin/pocld/pocld" \
    --port $((port + 60)) > "$logs/pocld-pocl5.log" 2>&1 &
  p5d=$!
  sleep 3
  env -u POCL_BUILDING -u POCL_DEVICES OCL_ICD_FILENAMES=$p5 "$thin/pocld/pocld" \
    --port $((port + 70)) --trace "$logs/trace-p5" > "$logs/pocld-pocl5t.log" 2>&1 &
  p5t=$!
  sleep 3
  POCL_REMOTE0_PARAMETERS=127.0.0.1:$((port + 60))/0 BENCH_NATIVE_ICD=$p5 \
    OCL_ICD_FILENAMES=$thin/lib/CL/libpocl.so timeout 400 "$bin/overhead_bench" \
    -n "${STREAM_LOG2:-25}" -i "$iters" noop chain
  echo "== the chain over PoCL 5's CPU device, traced (tools/trace_stages.py)"
  POCL_REMOTE0_PARAMETERS=127.0.0.1:$((port + 70))/0 BENCH_NATIVE_ICD=$p5 \
    POCL_REMOTE_TRACE=$logs/trace-p5-client.json \
    OCL_ICD_FILENAMES=$thin/lib/CL/libpocl.so timeout 400 "$bin/overhead_bench" \
    -i 200 chain > /dev/null
  kill $p5d $p5t
  wait $p5d $p5t 2>/dev/null
  python3 "$repo/tools/trace_merge.py" -o "$logs/trace-p5-merged.json" \
    "$logs/trace-p5-client.json" "$logs"/trace-p5.*.json \
    && python3 "$repo/tools/trace_stages.py" "$logs/trace-p5-merged.json"
fi
if [[ ${QUICK:-0} == 1 ]]; then
  OCL_ICD_FILENAMES=$thin/lib/CL/libpocl.so:$nv BENCH_LOCAL=NVIDIA \
    timeout 400 "$bin/bench" "$iters"
  OCL_ICD_FILENAMES=$thin/lib/CL/libpocl.so:$nv BENCH_LOCAL=NVIDIA \
    timeout 400 "$bin/overhead_bench" -n "${STREAM_LOG2:-25}" -i "$iters" \
    noop stream chain
  exit
fi
# MULTI_SERVER_LARGE: 1 to 64 MiB migrated there and back bit for bit, over
# the peer lanes (POCLD_PEER_LANES, default one per four CPUs).
POCL_DEVICES="remote remote" OCL_ICD_FILENAMES=$thin/lib/CL/libpocl.so \
  MULTI_SERVER_LARGE=1 timeout 300 "$bin/multi_server" \
  > "$logs/multi_server.log" 2>&1
grep -E "multi_server: (PASS|FAIL|ping|content|[0-9]+ MiB)" "$logs/multi_server.log"
grep -h "lanes$" "$logs/pocld.log" "$logs/pocld2.log" | sed 's/^/pocld: /'
POCL_DEVICES="remote remote" OCL_ICD_FILENAMES=$thin/lib/CL/libpocl.so:$nv \
  BENCH_LOCAL=NVIDIA timeout 400 "$bin/bench" "$iters"
echo "== overhead_bench: stream kernels over 2^${STREAM_LOG2:-25} doubles, chain, migrations"
POCL_DEVICES="remote remote" OCL_ICD_FILENAMES=$thin/lib/CL/libpocl.so:$nv \
  BENCH_LOCAL=NVIDIA timeout 400 "$bin/overhead_bench" -n "${STREAM_LOG2:-25}" \
  -i "$iters"
echo "== the first server by lane count (POCL_REMOTE_LANES; the default above)"
printf "%-10s %10s %10s %10s %10s %10s %10s\n" lanes "RTT (us)" "no-op min" \
  median p99 "write GB/s" "read GB/s"
for lanes in 0 1 3 7; do
  POCL_REMOTE_LANES=$lanes OCL_ICD_FILENAMES=$thin/lib/CL/libpocl.so:$nv \
    BENCH_LOCAL=NVIDIA timeout 200 "$bin/bench" 500 --row "$lanes"
done

# The migrations' A/B: the same rows with two more pocld whose peer links
# have no lanes (POCLD_PEER_LANES=0), against the default lanes above.
echo "== migrations over the peer link alone (POCLD_PEER_LANES=0)"
for k in 0 1; do
  POCLD_PEER_LANES=0 OCL_ICD_FILENAMES=$nv \
    CUDA_VISIBLE_DEVICES=$((k ? second_gpu : 0)) "$thin/pocld/pocld" \
    --port $((port + 40 + 10 * k)) --log-level info \
    > "$logs/pocld-nolanes$k.log" 2>&1 &
  nolanes[k]=$!
done
sleep 3
POCL_DEVICES="remote remote" POCL_REMOTE0_PARAMETERS=127.0.0.1:$((port + 40))/0 \
  POCL_REMOTE1_PARAMETERS=127.0.0.1:$((port + 50))/0 BENCH_LOCAL=NVIDIA \
  OCL_ICD_FILENAMES=$thin/lib/CL/libpocl.so:$nv \
  timeout 300 "$bin/overhead_bench" -i 400 migrate
kill "${nolanes[@]}" 2>/dev/null
wait "${nolanes[@]}" 2>/dev/null

n=${MATMUL_N:-4096}
echo "== matmul ${n}x${n}: native, one remote GPU, two remote servers"
OCL_ICD_FILENAMES=$nv timeout 300 "$bin/matmul" "$n" 1 5
POCL_DEVICES="remote remote" OCL_ICD_FILENAMES=$thin/lib/CL/libpocl.so \
  timeout 300 "$bin/matmul" "$n" 1 5
POCL_DEVICES="remote remote" OCL_ICD_FILENAMES=$thin/lib/CL/libpocl.so \
  timeout 300 "$bin/matmul" "$n" 2 5

# Where the chain's and the migrations' time goes (doc/tracing.md): two more
# pocld with --trace, overhead_bench's chain and migrations through them,
# the merged trace ($logs/trace-merged.json, for Perfetto) summed up by stage.
echo "== traced chain and migrations (tools/trace_stages.py)"
OCL_ICD_FILENAMES=$nv CUDA_VISIBLE_DEVICES=0 "$thin/pocld/pocld" \
  --port $((port + 20)) --trace "$logs/trace-a" > "$logs/pocld-ta.log" 2>&1 &
ta=$!
OCL_ICD_FILENAMES=$nv CUDA_VISIBLE_DEVICES=$second_gpu "$thin/pocld/pocld" \
  --port $((port + 30)) --trace "$logs/trace-b" > "$logs/pocld-tb.log" 2>&1 &
tb=$!
sleep 3
POCL_DEVICES="remote remote" POCL_REMOTE0_PARAMETERS=127.0.0.1:$((port + 20))/0 \
  POCL_REMOTE1_PARAMETERS=127.0.0.1:$((port + 30))/0 \
  POCL_REMOTE_TRACE=$logs/trace-client.json BENCH_LOCAL=NVIDIA \
  OCL_ICD_FILENAMES=$thin/lib/CL/libpocl.so:$nv \
  timeout 300 "$bin/overhead_bench" -i 400 chain migrate
kill $ta $tb 2>/dev/null
wait $ta $tb 2>/dev/null
python3 "$repo/tools/trace_merge.py" -o "$logs/trace-merged.json" \
  "$logs/trace-client.json" "$logs"/trace-[ab].*.json \
  && python3 "$repo/tools/trace_stages.py" "$logs/trace-merged.json"
