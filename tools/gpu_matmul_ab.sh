#!/usr/bin/env bash
# A/B on all GPUs of one host (matmul and migrations), one device call: the thin
# build of this tree and, with OLD (a checkout of an earlier commit), of that
# one; then ROUNDS rounds, each running every (tree, setting) once with fresh
# pocld, one per GPU, alternating so that the host's drift hits all alike:
#   - examples/remote/matmul N on all GPUs, best of REPEAT, and its parallel
#     efficiency against the native single GPU measured in the same round;
#   - with MIGRATIONS=1, `remote_bench 200 --migrations` between the pocld of
#     GPU 0 and GPU 1 (4 B to 1 GiB, against the client's own writes);
#   - with TRACE=1, every matmul run traced (client and pocld), its merged trace
#     in $OUT/mm-R-TREE-SETTING.json and its last round's summary printed
#     (tools/trace_stages.py --round), so that a slow run says where it lost;
#     the migrations then run on fresh, untraced servers.
#   POCL_TARBALL=<Debian 12's pocl.tar.xz> [OLD=DIR] tools/gpu_matmul_ab.sh N [SETTING...]
# SETTING: NAME=VAR=VALUE[,VAR=VALUE...] (variables for the pocld processes),
# or NAME alone for pocld's defaults (default: one setting, "default").
# Env: BUILD_DIR (default /tmp/pocl-gpu), NVIDIA_OPENCL, PORT (default 25000),
# ROUNDS (default 3), REPEAT (default 3), OUT (logs).
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-/tmp/pocl-gpu}
nv=${NVIDIA_OPENCL:-/usr/lib/libnvidia-opencl.so.1}
port=${PORT:-25000}
logs=${OUT:-$build/logs}
rounds=${ROUNDS:-3} repeat=${REPEAT:-3}
n=$1
shift
settings=("$@")
((${#settings[@]})) || settings=(default)
mkdir -p "$logs" "$build/bin"
bin=$build/bin
trees=(new)
BUILD_DIR=$build/new bash "$repo/tools/build.sh" --thin >"$logs/build-new.log" 2>&1 \
  || { echo "gpu_matmul_ab: build failed, see $logs/build-new.log"; tail -20 "$logs/build-new.log"; exit 1; }
if [[ -n ${OLD:-} ]]; then
  (cd "$OLD" && BUILD_DIR=$build/old bash tools/build.sh --thin >"$logs/build-old.log" 2>&1) \
    || { echo "gpu_matmul_ab: build of OLD failed, see $logs/build-old.log"; tail -20 "$logs/build-old.log"; exit 1; }
  trees=(old new)
fi
cc -O2 -o "$bin/matmul" "$repo/examples/remote/matmul.c" -lOpenCL
cc -O2 -o "$bin/remote_bench" "$repo/tools/bench/remote_bench.c" -lOpenCL -lpthread
gpus=$(nvidia-smi -L | wc -l)
nvidia-smi -L | head -1
echo "GPUs: $gpus; trees: ${trees[*]}; rounds: $rounds; matmul $n best of $repeat"
export POCL_BUILDING=1

pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait "${pids[@]}" 2>/dev/null' EXIT
# start_servers TREE SETTING [TRACE_PREFIX]: a pocld per GPU on port + 10 i
start_servers() {
  local thin=$build/$1/thin setting=$2 trace=${3:-} i p envs=() args
  [[ $setting == *=* ]] && IFS=, read -ra envs <<<"${setting#*=}"
  pids=()
  for ((i = 0; i < gpus; ++i)); do
    p=$((port + 10 * i))
    args=(--port "$p" --log-level info)
    [[ -n $trace ]] && args+=(--trace "$trace-$i")
    env "${envs[@]}" OCL_ICD_FILENAMES=$nv CUDA_VISIBLE_DEVICES=$i "$thin/pocld/pocld" \
      "${args[@]}" >"$logs/pocld-$p.log" 2>&1 &
    pids+=($!)
  done
  for ((i = 0; i < gpus; ++i)); do
    for _ in $(seq 100); do
      grep -q "listening on" "$logs/pocld-$((port + 10 * i)).log" 2>/dev/null && break
      sleep 0.1
    done
  done
}
stop_servers() {
  kill "${pids[@]}" 2>/dev/null
  wait "${pids[@]}" 2>/dev/null
  pids=()
}
# client TREE K COMMAND...: COMMAND through the first K GPUs' pocld (traced into
# $client_trace if set)
client() {
  local thin=$build/$1/thin k=$2 i devs=""
  shift 2
  for ((i = 0; i < k; ++i)); do
    devs+="remote "
    export POCL_REMOTE${i}_PARAMETERS=127.0.0.1:$((port + 10 * i))/0
  done
  env ${client_trace:+POCL_REMOTE_TRACE=$client_trace} POCL_DEVICES="${devs% }" \
    OCL_ICD_FILENAMES=$thin/lib/CL/libpocl.so${icd_more:-} timeout 300 "$@"
}
for ((r = 1; r <= rounds; ++r)); do
  native=$(OCL_ICD_FILENAMES=$nv CUDA_VISIBLE_DEVICES=0 timeout 300 "$bin/matmul" "$n" 1 "$repeat" \
    | sed -n 's/.*best \([0-9.]*\) ms/\1/p')
  echo "round $r: matmul $n natively on one GPU: $native ms"
  for s in "${settings[@]}"; do
    for v in "${trees[@]}"; do
      tr=
      [[ ${TRACE:-0} == 1 ]] && tr=$logs/mm-$r-$v-${s%%=*} && rm -f "$tr"-*.json
      start_servers "$v" "$s" "$tr"
      client_trace=${tr:+$tr-client.json} \
        client "$v" "$gpus" "$bin/matmul" "$n" "$gpus" "$repeat" >"$logs/matmul.log" 2>&1
      t=$(sed -n 's/.*best \([0-9.]*\) ms/\1/p' "$logs/matmul.log")
      [[ -n $t ]] || tail -5 "$logs/matmul.log"
      # Now, before remote_bench's sessions on the same servers trace too;
      # a session writes its trace (renamed into place) as it ends.
      if [[ -n $tr ]]; then
        for _ in $(seq 50); do
          (($(compgen -G "$tr-[0-9].*.json" | wc -l) >= gpus)) && break
          sleep 0.1
        done
        python3 "$repo/tools/trace_merge.py" -o "$tr.json" "$tr"-client.json "$tr"-[0-9].*.json \
          && python3 "$repo/tools/trace_stages.py" "$tr.json" --round | sed 's/^/    /'
        rm -f "$tr"-*.json
      fi
      awk -v s="$v ${s%%=*}" -v t="$t" -v tn="$native" -v g="$gpus" 'BEGIN {
        if (t == "") { printf "  %-20s failed\n", s; exit }
        printf "  %-20s matmul on %d GPUs %8.2f ms, efficiency %.1f%%\n", s, g, t, 100 * tn / (g * t) }'
      if [[ ${MIGRATIONS:-0} == 1 ]]; then
        # Untraced servers: a trace slows the migrations it records.
        if [[ -n $tr ]]; then
          stop_servers
          start_servers "$v" "$s"
        fi
        # remote_bench's local device: NVIDIA's own.
        icd_more=:$nv BENCH_LOCAL=NVIDIA client "$v" 2 "$bin/remote_bench" 200 --migrations "$v" \
          2>&1 | sed 's/^/    /'
      fi
      stop_servers
    done
  done
done
