#!/usr/bin/env bash
# A/B of tools/bench/overhead_bench.c's parts (default: noop migrate, with
# -g: 1 GiB too) between a pocld on GPU 0 and one on GPU 1 (on GPU 0 both
# where the host has one), over NVIDIA's OpenCL, one device call: the thin
# build of this tree and, with OLD (checkouts of earlier commits, DIR[:DIR...]),
# of those; ROUNDS rounds alternating the trees, fresh pocld each run; then, with
# TRACE=1, one run of this tree's migrations traced and summed by
# tools/trace_stages.py.
#   POCL_TARBALL=<Debian 12's pocl.tar.xz> [OLD=DIR] tools/gpu_overhead_ab.sh [PART...]
# Env: BUILD_DIR (default /tmp/pocl-gpu), NVIDIA_OPENCL, PORT (default 26000),
# ROUNDS (default 2), ITERATIONS (overhead_bench -i, default 2000), MOVES
# (overhead_bench -m), OUT (logs), EXTRA_CMAKE_ARGS (all builds: tools/build.sh),
# CLIENT_CPUS and POCLD_CPUS (taskset -c lists for overhead_bench and for both pocld),
# SERVER_ICD (the OpenCL library both pocld serve instead of NVIDIA's, e.g. Ubuntu's
# PoCL 5 /usr/lib/x86_64-linux-gnu/libpocl.so.2: the native reference is then its
# device, measured by overhead_bench's BENCH_NATIVE_ICD child).
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-/tmp/pocl-gpu}
nv=${NVIDIA_OPENCL:-/usr/lib/libnvidia-opencl.so.1}
port=${PORT:-26000}
logs=${OUT:-$build/logs}
rounds=${ROUNDS:-2}
parts=("$@")
((${#parts[@]})) || parts=(noop migrate)
mkdir -p "$logs" "$build/bin"
bin=$build/bin
t0=$(date +%s)
trees=() builds=()
# The builds side by side: the host has the cores.  Tree old<k> is OLD's k-th.
IFS=: read -ra olds <<<"${OLD:-}"
for k in "${!olds[@]}"; do
  (cd "${olds[$k]}" && BUILD_DIR=$build/old$k bash tools/build.sh --thin >"$logs/build-old$k.log" 2>&1) &
  builds+=($!) trees+=("old$k")
done
trees+=(new)
BUILD_DIR=$build/new bash "$repo/tools/build.sh" --thin >"$logs/build-new.log" 2>&1 \
  || { echo "gpu_overhead_ab: build failed, see $logs/build-new.log"; tail -20 "$logs/build-new.log"; exit 1; }
for k in "${!builds[@]}"; do
  wait "${builds[$k]}" && continue
  echo "gpu_overhead_ab: build of ${olds[$k]} failed, see $logs/build-old$k.log"
  tail -20 "$logs/build-old$k.log"
  exit 1
done
cc -O2 -o "$bin/overhead_bench" "$repo/tools/bench/overhead_bench.c" -lOpenCL -lpthread -lm || exit 1
gpus=$(nvidia-smi -L | wc -l)
second=$((gpus > 1 ? 1 : 0))
nvidia-smi -L | head -2
echo "built in $(($(date +%s) - t0)) s; trees: ${trees[*]}; pocld on GPU 0 and GPU $second"
export POCL_BUILDING=1

# The servers' library, and the client's libraries and native reference
server_icd=${SERVER_ICD:-$nv}
client_env=(BENCH_LOCAL=NVIDIA) client_icd=:$nv
# two PoCLs in one process: the second finds no devices (one soname)
[[ -n ${SERVER_ICD:-} ]] && client_env=(BENCH_NATIVE_ICD="$SERVER_ICD") client_icd=
pin_pocld=() pin_client=()
[[ -n ${POCLD_CPUS:-} ]] && pin_pocld=(taskset -c "$POCLD_CPUS")
[[ -n ${CLIENT_CPUS:-} ]] && pin_client=(taskset -c "$CLIENT_CPUS")
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait "${pids[@]}" 2>/dev/null' EXIT
# run TREE [TRACE_PREFIX]: fresh pocld, overhead_bench through them
run() {
  local thin=$build/$1/thin trace=${2:-} k p args
  pids=()
  for k in 0 1; do
    p=$((port + 10 * k))
    args=(--port "$p" --log-level info)
    [[ -n $trace ]] && args+=(--trace "$trace-$k")
    # our build tree's POCL_BUILDING would send an installed PoCL to look for its drivers there
    env -u POCL_BUILDING OCL_ICD_FILENAMES=$server_icd CUDA_VISIBLE_DEVICES=$((k ? second : 0)) \
      "${pin_pocld[@]}" "$thin/pocld/pocld" \
      "${args[@]}" >"$logs/pocld-$p.log" 2>&1 &
    pids+=($!)
  done
  for k in 0 1; do
    for _ in $(seq 100); do
      grep -q "listening on" "$logs/pocld-$((port + 10 * k)).log" 2>/dev/null && break
      sleep 0.1
    done
  done
  grep -ho 'malloc from [^ ]*' "$logs/pocld-$port.log"
  env ${trace:+POCL_REMOTE_TRACE=$trace-client.json} \
    POCL_DEVICES="remote remote" POCL_REMOTE0_PARAMETERS=127.0.0.1:$port/0 \
    POCL_REMOTE1_PARAMETERS=127.0.0.1:$((port + 10))/0 "${client_env[@]}" \
    OCL_ICD_FILENAMES=$thin/lib/CL/libpocl.so$client_icd \
    timeout 400 "${pin_client[@]}" "$bin/overhead_bench" -i "${ITERATIONS:-2000}" ${MOVES:+-m "$MOVES"} -g "${parts[@]}"
  kill "${pids[@]}" 2>/dev/null
  wait "${pids[@]}" 2>/dev/null
  pids=()
}
for ((r = 1; r <= rounds; ++r)); do
  for v in "${trees[@]}"; do
    echo "== round $r, $v"
    run "$v" 2>&1 | grep -vE '^(remote|native):' 
  done
done
if [[ ${TRACE:-0} == 1 ]]; then
  echo "== new, traced (tools/trace_stages.py)"
  tr=$logs/trace
  ITERATIONS=400 run new "$tr" >/dev/null 2>&1
  python3 "$repo/tools/trace_merge.py" -o "$tr.json" "$tr"-client.json "$tr"-[01].*.json \
    && python3 "$repo/tools/trace_stages.py" "$tr.json"
fi
