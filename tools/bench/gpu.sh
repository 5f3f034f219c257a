# gpu.sh - tools/bench.sh's subcommands on a GPU machine (NVIDIA's OpenCL,
# Ubuntu 24.04, no LLVM), each one device call: the thin build from Debian
# 12's tarball (POCL_TARBALL), pocld over NVIDIA's OpenCL on loopback, NVIDIA
# natively in the benchmark's process as the reference.  Sourced by
# tools/bench.sh.  Env for all: BUILD_DIR (default /tmp/pocl-gpu),
# NVIDIA_OPENCL (default /usr/lib/libnvidia-opencl.so.1), PORT (the first
# pocld's), OUT (logs, default $BUILD_DIR/logs), EXTRA_CMAKE_ARGS (tools/build.sh;
# -DPOCLD_JEMALLOC_LIBRARY=<a carried libjemalloc.so.2> links pocld with jemalloc).

set -uo pipefail
export BUILD_DIR=${BUILD_DIR:-/tmp/pocl-gpu}
nv=${NVIDIA_OPENCL:-/usr/lib/libnvidia-opencl.so.1}
logs=${OUT:-$BUILD_DIR/logs}
bin=$BUILD_DIR/bin thin=$BUILD_DIR/thin
mkdir -p "$logs" "$bin"

# gpu_build [TREE [NAME]]: the thin build of TREE (default this one) into
# $BUILD_DIR/NAME (default $BUILD_DIR itself, the build in $thin); exits on failure.
gpu_build() {
  local tree=${1:-$repo} dir=$BUILD_DIR log=$logs/build.log
  [[ -n ${2:-} ]] && dir=$BUILD_DIR/$2 log=$logs/build-$2.log
  (cd "$tree" && BUILD_DIR=$dir bash tools/build.sh --thin) >"$log" 2>&1 && return 0
  echo "bench.sh: build of $tree failed, see $log"
  tail -20 "$log"
  exit 1
}

# gpu_pocld GPU PORT [POCLD_ARGS...]: a pocld of $thin serving $server_icd (default
# NVIDIA's OpenCL) on GPU, its log $logs/pocld-PORT.log, its pid in $pocld_pid and
# bench_pids.  pocld_env (VAR=VALUE words) and pocld_pin (a command prefix, e.g.
# taskset -c CPUS) apply.  POCL_BUILDING and POCL_DEVICES are the client's: an
# installed PoCL served by pocld would take them.
pocld_env=() pocld_pin=() pocld_pid=
gpu_pocld() {
  local gpu=$1 p=$2
  shift 2
  # emptied here, not in the child: wait_listening must not read an earlier run's
  : >"$logs/pocld-$p.log"
  env -u POCL_BUILDING -u POCL_DEVICES "${pocld_env[@]}" OCL_ICD_FILENAMES="${server_icd:-$nv}" \
    CUDA_VISIBLE_DEVICES="$gpu" "${pocld_pin[@]}" "$thin/pocld/pocld" --port "$p" \
    --log-level info "$@" >>"$logs/pocld-$p.log" 2>&1 &
  pocld_pid=$!
  bench_pids+=($!)
}

# remotes K [PORT]: POCL_DEVICES and POCL_REMOTEi_PARAMETERS for the pocld on
# PORT + 10 i (default $port), i < K.
remotes() {
  local k=$1 p=${2:-$port} i devs=""
  for ((i = 0; i < k; ++i)); do
    devs+="remote "
    export POCL_REMOTE${i}_PARAMETERS=127.0.0.1:$((p + 10 * i))/0
  done
  export POCL_DEVICES=${devs% }
}

gpu_count() { nvidia-smi -L 2>/dev/null | wc -l; }
best_ms() { sed -n 's/.*best \([0-9.]*\) ms/\1/p'; }

# gpu [ITERATIONS]; QUICK=1, MATMUL_N, STREAM_LOG2, POCL5
cmd_gpu() {
  port=${PORT:-21000}
  local iters=${1:-3000} gpus second t n p5 p5d p5t log2=${STREAM_LOG2:-25}
  local client=$thin/lib/CL/libpocl.so
  gpu_build
  bench_cc "$bin/remote_bench" remote_bench
  bench_cc "$bin/overhead_bench" overhead_bench
  bench_cc "$bin/two_process_probe" two_process_probe
  bench_cc "$bin/vecadd" "$repo/examples/remote/vecadd.c"
  bench_cc "$bin/matmul" "$repo/examples/remote/matmul.c"
  for t in api_buffers api_events api_programs multi_server; do
    cc -O2 -I"$repo/tests/remote" -I"$repo/protocol/wire" \
      -I"$repo/lib/CL/devices/remote" -I"$BUILD_DIR/src/pocl/include" \
      -o "$bin/$t" "$repo/tests/remote/test_$t.c" -lOpenCL -lpthread
  done

  echo "== natively: a 4-byte read in one process, a write in another (two_process_probe.c)"
  OCL_ICD_FILENAMES=$nv "$bin/two_process_probe"

  gpus=$(gpu_count)
  second=$((gpus > 1 ? 1 : 0))
  gpu_pocld 0 "$port"
  gpu_pocld "$second" $((port + 10))
  wait_listening "$logs/pocld-$port.log" "$logs/pocld-$((port + 10)).log"
  export POCL_BUILDING=1
  remotes 2
  export POCL_DEVICES=remote
  echo "== through the remote device ($gpus GPUs; second server on GPU $second)"
  OCL_ICD_FILENAMES=$client timeout 120 "$bin/vecadd"
  for t in api_buffers api_events api_programs; do
    OCL_ICD_FILENAMES=$client timeout 300 "$bin/$t" >"$logs/$t.log" 2>&1
    tail -n1 "$logs/$t.log"
  done
  # Over PoCL 5's CPU device where the machine has Ubuntu's: a pocld serving
  # it, and overhead_bench's native reference in a process of its own
  # (BENCH_NATIVE_ICD: two PoCLs cannot share one).
  p5=${POCL5:-/usr/lib/x86_64-linux-gnu/libpocl.so.2}
  if [[ -f $p5 ]]; then
    echo "== overhead_bench over PoCL 5's CPU device ($p5)"
    server_icd=$p5 gpu_pocld 0 $((port + 60))
    p5d=$pocld_pid
    server_icd=$p5 gpu_pocld 0 $((port + 70)) --trace "$logs/trace-p5"
    p5t=$pocld_pid
    wait_listening "$logs/pocld-$((port + 60)).log" "$logs/pocld-$((port + 70)).log"
    POCL_REMOTE0_PARAMETERS=127.0.0.1:$((port + 60))/0 BENCH_NATIVE_ICD=$p5 \
      OCL_ICD_FILENAMES=$client timeout 400 "$bin/overhead_bench" -n "$log2" -i "$iters" noop chain
    echo "== the chain over PoCL 5's CPU device, traced (tools/trace_stages.py)"
    POCL_REMOTE0_PARAMETERS=127.0.0.1:$((port + 70))/0 BENCH_NATIVE_ICD=$p5 \
      POCL_REMOTE_TRACE=$logs/trace-p5-client.json \
      OCL_ICD_FILENAMES=$client timeout 400 "$bin/overhead_bench" -i 200 chain >/dev/null
    stop_pids "$p5d" "$p5t"
    trace_sum "$logs/trace-p5-merged.json" "$logs/trace-p5-client.json" "$logs/trace-p5.*.json"
  fi
  if [[ ${QUICK:-0} == 1 ]]; then
    OCL_ICD_FILENAMES=$client:$nv BENCH_LOCAL=NVIDIA timeout 400 "$bin/remote_bench" "$iters"
    OCL_ICD_FILENAMES=$client:$nv BENCH_LOCAL=NVIDIA \
      timeout 400 "$bin/overhead_bench" -n "$log2" -i "$iters" noop stream chain
    return
  fi
  # MULTI_SERVER_LARGE: 1 to 64 MiB migrated there and back bit for bit, over
  # the peer lanes (POCLD_PEER_LANES, default one per four CPUs).
  POCL_DEVICES="remote remote" OCL_ICD_FILENAMES=$client MULTI_SERVER_LARGE=1 \
    timeout 300 "$bin/multi_server" >"$logs/multi_server.log" 2>&1
  grep -E "multi_server: (PASS|FAIL|ping|content|[0-9]+ MiB)" "$logs/multi_server.log"
  grep -h "lanes$" "$logs/pocld-$port.log" "$logs/pocld-$((port + 10)).log" | sed 's/^/pocld: /'
  POCL_DEVICES="remote remote" OCL_ICD_FILENAMES=$client:$nv BENCH_LOCAL=NVIDIA \
    timeout 400 "$bin/remote_bench" "$iters"
  echo "== overhead_bench: stream kernels over 2^$log2 doubles, chain, migrations"
  POCL_DEVICES="remote remote" OCL_ICD_FILENAMES=$client:$nv BENCH_LOCAL=NVIDIA \
    timeout 400 "$bin/overhead_bench" -n "$log2" -i "$iters"
  echo "== the first server by lane count (POCL_REMOTE_LANES; the default above)"
  printf "%-10s %10s %10s %10s %10s %10s %10s\n" lanes "RTT (us)" "no-op min" \
    median p99 "write GB/s" "read GB/s"
  for lanes in 0 1 3 7; do
    POCL_REMOTE_LANES=$lanes OCL_ICD_FILENAMES=$client:$nv BENCH_LOCAL=NVIDIA \
      timeout 200 "$bin/remote_bench" 500 --row "$lanes"
  done

  # The migrations over two more pocld whose peer links have no lanes, against
  # the default lanes above.
  echo "== migrations over the peer link alone (POCLD_PEER_LANES=0)"
  local nolanes=()
  pocld_env=(POCLD_PEER_LANES=0)
  gpu_pocld 0 $((port + 40))
  nolanes+=("$pocld_pid")
  gpu_pocld "$second" $((port + 50))
  nolanes+=("$pocld_pid")
  pocld_env=()
  wait_listening "$logs/pocld-$((port + 40)).log" "$logs/pocld-$((port + 50)).log"
  (remotes 2 $((port + 40))
   BENCH_LOCAL=NVIDIA OCL_ICD_FILENAMES=$client:$nv timeout 300 "$bin/overhead_bench" -i 400 migrate)
  stop_pids "${nolanes[@]}"

  n=${MATMUL_N:-4096}
  echo "== matmul ${n}x${n}: native, one remote GPU, two remote servers"
  OCL_ICD_FILENAMES=$nv timeout 300 "$bin/matmul" "$n" 1 5
  POCL_DEVICES="remote remote" OCL_ICD_FILENAMES=$client timeout 300 "$bin/matmul" "$n" 1 5
  POCL_DEVICES="remote remote" OCL_ICD_FILENAMES=$client timeout 300 "$bin/matmul" "$n" 2 5

  # Where the chain's and the migrations' time goes (doc/tracing.md): two more
  # pocld with --trace, overhead_bench's chain and migrations through them,
  # the merged trace ($OUT/trace-merged.json, for Perfetto) summed up by stage.
  echo "== traced chain and migrations (tools/trace_stages.py)"
  gpu_pocld 0 $((port + 20)) --trace "$logs/trace-a"
  t=$pocld_pid
  gpu_pocld "$second" $((port + 30)) --trace "$logs/trace-b"
  wait_listening "$logs/pocld-$((port + 20)).log" "$logs/pocld-$((port + 30)).log"
  (remotes 2 $((port + 20))
   POCL_REMOTE_TRACE=$logs/trace-client.json BENCH_LOCAL=NVIDIA \
     OCL_ICD_FILENAMES=$client:$nv timeout 300 "$bin/overhead_bench" -i 400 chain migrate)
  stop_pids "$t" "$pocld_pid"
  trace_sum "$logs/trace-merged.json" "$logs/trace-client.json" "$logs/trace-[ab].*.json"
}

# gpu-overhead [PART...] (noop stream chain events migrate); OLD, ROUNDS, ITERATIONS, MOVES, TRACE=1, CLIENT_CPUS,
# POCLD_CPUS, SERVER_ICD
cmd_gpu_overhead() {
  port=${PORT:-26000}
  local parts=("$@") trees=() builds=() olds=() k t0 gpus second r v client_env client_icd pin_client=()
  ((${#parts[@]})) || parts=(noop migrate)
  t0=$(date +%s)
  # the builds side by side: the host has the cores; tree old<k> is OLD's k-th
  IFS=: read -ra olds <<<"${OLD:-}"
  for k in "${!olds[@]}"; do
    (gpu_build "${olds[$k]}" "old$k") &
    builds+=($!) trees+=("old$k")
  done
  trees+=(new)
  gpu_build "$repo" new
  for k in "${!builds[@]}"; do
    wait "${builds[$k]}" || exit 1
  done
  bench_cc "$bin/overhead_bench" overhead_bench || exit 1
  gpus=$(gpu_count)
  second=$((gpus > 1 ? 1 : 0))
  nvidia-smi -L | head -2
  echo "built in $(($(date +%s) - t0)) s; trees: ${trees[*]}; pocld on GPU 0 and GPU $second"
  export POCL_BUILDING=1
  # the servers' library, and the client's libraries and native reference
  server_icd=${SERVER_ICD:-$nv}
  client_env=(BENCH_LOCAL=NVIDIA) client_icd=:$nv
  # two PoCLs in one process: the second finds no devices (one soname)
  [[ -n ${SERVER_ICD:-} ]] && client_env=(BENCH_NATIVE_ICD="$SERVER_ICD") client_icd=
  [[ -n ${POCLD_CPUS:-} ]] && pocld_pin=(taskset -c "$POCLD_CPUS")
  [[ -n ${CLIENT_CPUS:-} ]] && pin_client=(taskset -c "$CLIENT_CPUS")
  # run TREE [TRACE_PREFIX]: fresh pocld, overhead_bench through them
  run() {
    local thin=$build_root/$1/thin trace=${2:-} k
    for k in 0 1; do
      gpu_pocld $((k ? second : 0)) $((port + 10 * k)) ${trace:+--trace "$trace-$k"}
    done
    wait_listening "$logs/pocld-$port.log" "$logs/pocld-$((port + 10)).log"
    grep -ho 'malloc from [^ ]*' "$logs/pocld-$port.log"
    (remotes 2
     env ${trace:+POCL_REMOTE_TRACE=$trace-client.json} "${client_env[@]}" \
       OCL_ICD_FILENAMES="$thin/lib/CL/libpocl.so$client_icd" \
       timeout 400 "${pin_client[@]}" "$bin/overhead_bench" -i "${ITERATIONS:-2000}" \
       ${MOVES:+-m "$MOVES"} -g "${parts[@]}")
    stop_pids
  }
  local build_root=$BUILD_DIR
  for ((r = 1; r <= ${ROUNDS:-2}; ++r)); do
    for v in "${trees[@]}"; do
      echo "== round $r, $v"
      run "$v" 2>&1 | grep -vE '^(remote|native):'
    done
  done
  if [[ ${TRACE:-0} == 1 ]]; then
    echo "== new, traced (tools/trace_stages.py)"
    ITERATIONS=400 run new "$logs/trace" >/dev/null 2>&1
    trace_sum "$logs/trace.json" "$logs/trace-client.json" "$logs/trace-[01].*.json"
  fi
}

# gpu-matmul N [SETTING...]; OLD, ROUNDS, REPEAT, MIGRATIONS=1, TRACE=1
cmd_gpu_matmul() {
  port=${PORT:-25000}
  local n=${1:?usage: tools/bench.sh gpu-matmul N [SETTING...]} settings trees=(new) gpus
  local rounds=${ROUNDS:-3} repeat=${REPEAT:-3} r s v tr t native build_root=$BUILD_DIR
  shift
  settings=("$@")
  ((${#settings[@]})) || settings=(default)
  gpu_build "$repo" new
  if [[ -n ${OLD:-} ]]; then
    gpu_build "$OLD" old
    trees=(old new)
  fi
  bench_cc "$bin/matmul" "$repo/examples/remote/matmul.c"
  bench_cc "$bin/remote_bench" remote_bench
  gpus=$(gpu_count)
  nvidia-smi -L | head -1
  echo "GPUs: $gpus; trees: ${trees[*]}; rounds: $rounds; matmul $n best of $repeat"
  export POCL_BUILDING=1
  # start_servers TREE SETTING [TRACE_PREFIX]: a pocld per GPU on port + 10 i
  start_servers() {
    local thin=$build_root/$1/thin setting=$2 trace=${3:-} i
    pocld_env=()
    [[ $setting == *=* ]] && IFS=, read -ra pocld_env <<<"${setting#*=}"
    for ((i = 0; i < gpus; ++i)); do
      gpu_pocld "$i" $((port + 10 * i)) ${trace:+--trace "$trace-$i"}
    done
    for ((i = 0; i < gpus; ++i)); do wait_listening "$logs/pocld-$((port + 10 * i)).log"; done
  }
  # client TREE K COMMAND...: COMMAND through the first K GPUs' pocld (traced
  # into $client_trace if set)
  client() {
    local thin=$build_root/$1/thin
    (remotes "$2"
     shift 2
     env ${client_trace:+POCL_REMOTE_TRACE=$client_trace} \
       OCL_ICD_FILENAMES="$thin/lib/CL/libpocl.so${icd_more:-}" timeout 300 "$@")
  }
  for ((r = 1; r <= rounds; ++r)); do
    native=$(OCL_ICD_FILENAMES=$nv CUDA_VISIBLE_DEVICES=0 timeout 300 "$bin/matmul" "$n" 1 "$repeat" | best_ms)
    echo "round $r: matmul $n natively on one GPU: $native ms"
    for s in "${settings[@]}"; do
      for v in "${trees[@]}"; do
        tr=
        [[ ${TRACE:-0} == 1 ]] && tr=$logs/mm-$r-$v-${s%%=*} && rm -f "$tr"-*.json
        start_servers "$v" "$s" "$tr"
        client_trace=${tr:+$tr-client.json} \
          client "$v" "$gpus" "$bin/matmul" "$n" "$gpus" "$repeat" >"$logs/matmul.log" 2>&1
        t=$(best_ms <"$logs/matmul.log")
        [[ -n $t ]] || tail -5 "$logs/matmul.log"
        # Now, before remote_bench's sessions on the same servers trace too;
        # a session writes its trace (renamed into place) as it ends.
        if [[ -n $tr ]]; then
          for _ in $(seq 50); do
            (($(compgen -G "$tr-[0-9].*.json" | wc -l) >= gpus)) && break
            sleep 0.1
          done
          trace_sum "$tr.json" "$tr-client.json" "$tr-[0-9].*.json" --round | sed 's/^/    /'
          rm -f "$tr"-*.json
        fi
        awk -v s="$v ${s%%=*}" -v t="$t" -v tn="$native" -v g="$gpus" 'BEGIN {
          if (t == "") { printf "  %-20s failed\n", s; exit }
          printf "  %-20s matmul on %d GPUs %8.2f ms, efficiency %.1f%%\n", s, g, t, 100 * tn / (g * t) }'
        if [[ ${MIGRATIONS:-0} == 1 ]]; then
          # untraced servers: a trace slows the migrations it records
          if [[ -n $tr ]]; then
            stop_pids
            start_servers "$v" "$s"
          fi
          # remote_bench's local device: NVIDIA's own
          icd_more=:$nv BENCH_LOCAL=NVIDIA client "$v" 2 "$bin/remote_bench" 200 --migrations "$v" \
            2>&1 | sed 's/^/    /'
        fi
        stop_pids
      done
    done
  done
  pocld_env=()
}

# gpu-multi; MATMUL_SIZES, REPEAT, FFMPEG_DIR
cmd_gpu_multi() {
  port=${PORT:-24000}
  local repeat=${REPEAT:-3} sizes=${MATMUL_SIZES:-8192 16384} gpus t0 i k n native tn out tk pids
  if [[ -n ${FFMPEG_DIR:-} ]]; then
    # the hevc driver is configured in only where FFmpeg's libraries are found
    tar -xJf "$FFMPEG_DIR/ffmpeg.tar.xz" -C "$BUILD_DIR"
    export PKG_CONFIG_PATH=$BUILD_DIR/ffmpeg/pkgconfig
    export LD_LIBRARY_PATH=$BUILD_DIR/ffmpeg/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  fi
  t0=$(date +%s)
  gpu_build
  bench_cc "$bin/matmul" "$repo/examples/remote/matmul.c"
  bench_cc "$bin/overhead_bench" overhead_bench
  echo "== built in $(($(date +%s) - t0)) s"
  nvidia-smi -L
  nvidia-smi topo -m 2>/dev/null | head -8
  gpus=$(gpu_count)
  echo "CPUs: $(nproc)"
  for ((i = 0; i < gpus; ++i)); do gpu_pocld "$i" $((port + 10 * i)); done
  for ((i = 0; i < gpus; ++i)); do wait_listening "$logs/pocld-$((port + 10 * i)).log"; done
  export POCL_BUILDING=1

  for n in $sizes; do
    echo "== matmul ${n}x${n}, best of $repeat: native on GPU 0, then k remote GPUs"
    native=$(OCL_ICD_FILENAMES=$nv CUDA_VISIBLE_DEVICES=0 timeout 500 "$bin/matmul" "$n" 1 "$repeat")
    echo "native: $native"
    tn=$(best_ms <<<"$native")
    for ((k = 1; k <= gpus; k *= 2)); do
      out=$( (remotes "$k"; OCL_ICD_FILENAMES=$thin/lib/CL/libpocl.so timeout 500 \
        "$bin/matmul" "$n" "$k" "$repeat") 2>&1)
      tk=$(best_ms <<<"$out")
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
  # trace in $OUT/matmul-trace.json (doc/tracing.md; Perfetto shows it).
  n=${sizes##* }
  if ((gpus >= 2)); then
    echo "== matmul ${n}x${n} on $gpus remote GPUs, traced"
    pids=()
    for ((i = 0; i < gpus; ++i)); do
      gpu_pocld "$i" $((port + 300 + 10 * i)) --trace "$logs/mm-$i"
      pids+=("$pocld_pid")
      wait_listening "$logs/pocld-$((port + 300 + 10 * i)).log"
    done
    (remotes "$gpus" $((port + 300))
     POCL_REMOTE_TRACE=$logs/mm-client.json OCL_ICD_FILENAMES=$thin/lib/CL/libpocl.so \
       timeout 300 "$bin/matmul" "$n" "$gpus" 1)
    stop_pids "${pids[@]}"
    python3 "$repo/tools/trace_merge.py" -o "$logs/matmul-trace.json" \
      "$logs/mm-client.json" "$logs"/mm-[0-9].*.json

    echo "== overhead_bench between the pocld of GPU 0 and GPU 1"
    (remotes 2; OCL_ICD_FILENAMES=$thin/lib/CL/libpocl.so:$nv BENCH_LOCAL=NVIDIA \
      timeout 400 "$bin/overhead_bench" -i 2000 -g noop migrate)
    echo "== the same, traced (tools/trace_stages.py)"
    gpu_pocld 0 $((port + 100)) --trace "$logs/trace-a"
    pids=("$pocld_pid")
    gpu_pocld 1 $((port + 110)) --trace "$logs/trace-b"
    pids+=("$pocld_pid")
    wait_listening "$logs/pocld-$((port + 100)).log" "$logs/pocld-$((port + 110)).log"
    (remotes 2 $((port + 100))
     POCL_REMOTE_TRACE=$logs/trace-client.json BENCH_LOCAL=NVIDIA \
       OCL_ICD_FILENAMES=$thin/lib/CL/libpocl.so:$nv \
       timeout 300 "$bin/overhead_bench" -i 400 migrate >/dev/null)
    stop_pids "${pids[@]}"
    trace_sum "$logs/trace-merged.json" "$logs/trace-client.json" "$logs/trace-[ab].*.json"
  fi

  if [[ -n ${FFMPEG_DIR:-} && $gpus -ge 2 ]]; then
    echo "== pointcloud: stream source and decoder on GPU 0's pocld, kernels on GPU 1's"
    GPU_A=0 GPU_B=1 PORT=$((port + 200)) "$self" gpu-custom run "$FFMPEG_DIR"
  fi
}

# gpu-transports [ITERATIONS]; UCX_ROOT
cmd_gpu_transports() {
  port=${PORT:-21000}
  local iters=${1:-1000} lib pc f way args client=$thin/lib/CL/libpocl.so
  lib=$(cd "${UCX_ROOT:?where libucx0 and libucx-dev were unpacked}" && pwd)/usr/lib/x86_64-linux-gnu
  # the packages' .pc files say prefix /usr: a copy that says where they are
  pc=$BUILD_DIR/ucx-pkgconfig
  mkdir -p "$pc"
  for f in "$lib"/pkgconfig/*.pc; do
    sed "s|^prefix = .*|prefix = ${lib%/lib/x86_64-linux-gnu}|" "$f" >"$pc/${f##*/}"
  done
  export PKG_CONFIG_PATH=$pc LD_LIBRARY_PATH=$lib UCX_MODULE_DIR=$lib/ucx
  gpu_build
  # UCX is loaded at run time, not linked: the name it loads is in the binaries
  for f in "$thin/pocld/pocld" "$thin/lib/CL/devices/remote/libpocl-devices-remote.so"; do
    grep -q libucp.so.0 "$f" || { echo "bench.sh gpu-transports: $f was built without UCX"; exit 1; }
  done
  bench_cc "$bin/remote_bench" remote_bench || exit 1
  export POCL_BUILDING=1
  for way in link lanes ucx-tcp ucx-shm client-inline client-lanes client-ucx-tcp client-ucx-shm; do
    case $way in
      link) pocld_env=(POCLD_PEER_LANES=0) args="--ucx off" ;;
      lanes) pocld_env=(POCLD_PEER_LANES=4) args="--ucx off" ;;
      ucx-tcp) pocld_env=(POCLD_PEER_LANES=0 UCX_TLS=tcp) args="--ucx on" ;;
      ucx-shm) pocld_env=(POCLD_PEER_LANES=0 UCX_TLS=sm,self) args="--ucx on" ;;
      client-inline) pocld_env=(POCL_REMOTE_LANES=0) args="--ucx off" ;;
      client-lanes) pocld_env=(POCL_REMOTE_LANES=4) args="--ucx off" ;;
      client-ucx-tcp) pocld_env=(POCL_REMOTE_LANES=0 POCL_REMOTE_UCX=1 UCX_TLS=tcp) args="--ucx on" ;;
      client-ucx-shm) pocld_env=(POCL_REMOTE_LANES=0 POCL_REMOTE_UCX=1 UCX_TLS=sm,self) args="--ucx on" ;;
    esac
    # shellcheck disable=SC2086
    gpu_pocld 0 "$port" $args
    if [[ $way == client-* ]]; then
      wait_listening "$logs/pocld-$port.log"
      (remotes 1
       env "${pocld_env[@]}" OCL_ICD_FILENAMES="$client:$nv" timeout 300 \
         "$bin/remote_bench" "$iters" --client "$way")
    else
      # shellcheck disable=SC2086
      gpu_pocld 0 $((port + 10)) $args
      wait_listening "$logs/pocld-$port.log" "$logs/pocld-$((port + 10)).log"
      (remotes 2
       BENCH_LOCAL=NVIDIA OCL_ICD_FILENAMES="$client:$nv" timeout 300 \
         "$bin/remote_bench" "$iters" --migrations "$way")
    fi
    stop_pids
  done
  pocld_env=()
}

# gpu-custom pack DIR | run DIR; FRAMES, TRACE=DIR, GPU_A, GPU_B
cmd_gpu_custom() {
  local mode=${1:-} dir=${2:-}
  if [[ $mode != pack && $mode != run || -z $dir ]]; then
    echo "usage: tools/bench.sh gpu-custom pack|run DIR" >&2
    exit 2
  fi
  dir=$(mkdir -p "$dir" && cd "$dir" && pwd)
  if [[ $mode == pack ]]; then
    custom_pack "$dir"
  else
    custom_run "$dir"
  fi
}

# On Debian 12 (tools/setup.sh's packages): FFmpeg's libraries and the test data
# into DIR, for a GPU machine that has neither.
custom_pack() (
  set -e
  local dir=$1 t=$work/pack libdir=/usr/lib/x86_64-linux-gnu l n fmt
  mkdir -p "$t/ffmpeg/lib" "$t/ffmpeg/include" "$t/ffmpeg/pkgconfig" "$t/data"
  local libs=("$libdir/libavcodec.so.59" "$libdir/libavutil.so.57" "$libdir/libswscale.so.6")
  # the libraries and every one they need beyond glibc, libstdc++, zlib and the
  # ICD loader (the machine's own must stay)
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
  # the hevc test's clip with ffmpeg's NV12 and RGBA decodes (as
  # tests/remote/test_hevc_decoder.sh makes them), and the pointcloud's depth clip
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
)

# On the GPU machine: the thin build with the hevc driver; the hevc test natively
# (hwaccel auto: NVDEC where libavcodec reaches it, and none) and through a pocld;
# then the pointcloud chain with the stream source and a decoder on pocld A and
# NVIDIA's GPU as the compute device on pocld B, in configurations 1-3 of the
# pointcloud subcommand (4, all on the client, needs one platform with all three
# devices, which NVIDIA's is not).
custom_run() {
  port=${PORT:-23000}
  local dir=$1 frames=${FRAMES:-120} data=$BUILD_DIR/data pocl=$thin/lib/CL/libpocl.so t0 params m
  local args=("$data/clip.hevc" "$data/ref.nv12" "$data/ref.rgba" 320 240) clip=$data/depth.hevc
  tar -xJf "$dir/ffmpeg.tar.xz" -C "$BUILD_DIR"
  tar -xJf "$dir/custom-data.tar.xz" -C "$BUILD_DIR"
  export PKG_CONFIG_PATH=$BUILD_DIR/ffmpeg/pkgconfig
  export LD_LIBRARY_PATH=$BUILD_DIR/ffmpeg/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  t0=$(date +%s)
  gpu_build
  grep -E "Building the following device drivers|ENABLE_HEVC_DEVICE" "$logs/build.log" | head -3
  echo "== thin build done at $(($(date +%s) - t0)) s"
  [[ -f $thin/lib/CL/devices/hevc/libpocl-devices-hevc.so ]] \
    || { echo "bench.sh gpu-custom: the hevc driver was not built"; exit 1; }
  cc -O2 -I"$repo/tests/remote" -I"$BUILD_DIR/src/pocl/include" -o "$bin/hevc" \
    "$repo/tests/remote/test_hevc_decoder.c" -lOpenCL -lpthread -lm
  bench_cc "$bin/pointcloud" "$repo/examples/remote/pointcloud.c"
  # the drivers are loaded from the build tree
  export POCL_BUILDING=1

  echo "== hevc natively (thin libpocl), hwaccel=auto and none"
  for params in "" "hwaccel=none"; do
    OCL_ICD_FILENAMES=$pocl POCL_DEVICES=hevc POCL_HEVC0_PARAMETERS=$params \
      timeout 300 "$bin/hevc" "${args[@]}" 2>&1 | grep -E "hevc_decoder: (PASS|FAIL)|device|name" | head -4
  done

  # Server A: the stream source and a decoder; server B: NVIDIA's GPU and a
  # decoder.  pocld lists CUSTOM devices after all platforms' others (doc/pocld.md).
  : >"$logs/pocld-a.log"
  : >"$logs/pocld-b.log"
  OCL_ICD_FILENAMES=$pocl POCL_DEVICES="stream hevc" POCL_STREAM0_PARAMETERS="$clip,chunk=hevc,loop" \
    CUDA_VISIBLE_DEVICES=${GPU_A:-0} "$thin/pocld/pocld" --port "$port" --log-level info \
    ${TRACE:+--trace "$TRACE/a"} >>"$logs/pocld-a.log" 2>&1 &
  bench_pids+=($!)
  OCL_ICD_FILENAMES=$nv:$pocl POCL_DEVICES="hevc" CUDA_VISIBLE_DEVICES=${GPU_B:-0} \
    "$thin/pocld/pocld" --port $((port + 10)) --log-level info ${TRACE:+--trace "$TRACE/b"} \
    >>"$logs/pocld-b.log" 2>&1 &
  bench_pids+=($!)
  wait_listening "$logs/pocld-a.log" "$logs/pocld-b.log"
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
  grep -i -E "hwaccel|cuda|nvdec|software" "$logs/pocld-b.log" | head -5
}
