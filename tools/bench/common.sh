# common.sh - what tools/bench.sh's subcommands share: paths, building the
# benchmark programs, pocld started fresh for a run and stopped at its end.
# Sourced by tools/bench.sh, never run.

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
self=$repo/tools/bench.sh
fixture=$repo/tests/remote/pocld_fixture.sh
work=$(mktemp -d)

# What a run started, the fixture's pocld (their state files in $work) and
# other processes (bench_pids), ends with it, whatever the way out; a
# subcommand may define on_failure, called first when the run fails.
bench_pids=()
bench_cleanup() {
  local rc=$? s
  if ((rc != 0)) && declare -F on_failure >/dev/null; then on_failure; fi
  stop_pids
  for s in "$work"/*.state; do
    [[ ! -e $s ]] || "$fixture" stop "$s" >/dev/null 2>&1 || true
  done
  rm -rf "$work"
}
trap bench_cleanup EXIT

# stop_pids [PID...]: ends these processes of bench_pids now (default all of
# them), for a run that starts others next or needs their output.
stop_pids() {
  local p q keep=() stop=("$@")
  ((${#stop[@]})) || stop=("${bench_pids[@]}")
  ((${#stop[@]})) || return 0
  kill "${stop[@]}" 2>/dev/null || true
  wait "${stop[@]}" 2>/dev/null || true
  for q in "${bench_pids[@]}"; do
    for p in "${stop[@]}"; do [[ $q == "$p" ]] && continue 2; done
    keep+=("$q")
  done
  bench_pids=("${keep[@]}")
}

# bench_cc OUT NAME|SOURCE: compiles tools/bench/NAME.c (or SOURCE, a path)
# into OUT with the libraries every benchmark program may need.
bench_cc() {
  local out=$1 src=$2
  [[ $src == */* ]] || src=$repo/tools/bench/$src.c
  cc -O2 -Wall -o "$out" "$src" -lOpenCL -lpthread -lm
}

# Waits (up to 10 s) until each pocld log says that it listens.
wait_listening() {
  local f
  for f in "$@"; do
    for _ in $(seq 100); do
      grep -q "listening on" "$f" 2>/dev/null && break
      sleep 0.1
    done
  done
}

# The trace of a run (doc/tracing.md): merges the client's file with the
# servers' into MERGED and sums it by stage (trace_stages.py ARGS...).
#   trace_sum MERGED CLIENT_JSON 'SERVER_GLOB' [ARGS...]
trace_sum() {
  local merged=$1 client=$2 glob=$3
  shift 3
  # shellcheck disable=SC2086
  python3 "$repo/tools/trace_merge.py" -o "$merged" "$client" $glob \
    && python3 "$repo/tools/trace_stages.py" "$merged" "$@"
}
