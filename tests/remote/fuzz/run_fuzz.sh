#!/usr/bin/env bash
# remote/fuzz_decode, remote/fuzz_params: build a parser with libFuzzer (clang-15) and
# fuzz it for a bounded time, starting from its committed corpus.
#   run_fuzz.sh TARGET WORK_DIR [SECONDS]
# TARGET: decode (pocld's message decoder: what a client writes on its sockets) or
# params (the client's POCL_REMOTE<n>_PARAMETERS: what a user types). SECONDS defaults
# to $FUZZ_SECONDS or 60. Builds WORK_DIR/fuzz_TARGET (again only when a source
# changed), replays every committed input (regressions), then fuzzes with new inputs
# going to WORK_DIR/corpus and crashes to WORK_DIR/crash-*. Exits 77 (CTest: skipped)
# when no clang with libFuzzer is installed (Debian 12: clang-15, which pulls in
# libclang-common-15-dev with libFuzzer). Env: FUZZ_CXX (default clang++-15), FUZZ_CC
# (default: FUZZ_CXX's C compiler).
set -euo pipefail

[[ $# -ge 2 ]] || { sed -n '4,4p' "$0" | sed 's/^# //' >&2; exit 2; }
target=$1
name=fuzz_$target
work=$2
seconds=${3:-${FUZZ_SECONDS:-60}}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../../.." && pwd)
cxx=${FUZZ_CXX:-clang++-15}
# Exactly the product's sources: the target links them, not a copy; the C ones (csrcs)
# through clang-15 (FUZZ_CC) as C.
protocol_incs=(-I"$repo/protocol/wire" -I"$repo/protocol/transports"
               -I"$repo/protocol/transports/tls" -I"$repo/protocol/transports/ucx"
               -I"$repo/protocol/util")
protocol_hdrs=("$repo"/protocol/*/*.h "$repo"/protocol/transports/*/*.h)
case $target in
  decode)
    seeds=$repo/tests/remote/fuzz_corpus
    srcs=("$here/fuzz_decode.cc" "$repo/pocld/decode.cc" "$repo/pocld/control.cc"
          "$repo/pocld/wire.cc" "$repo/protocol/transports/tls/server_tls.cc")
    csrcs=("$repo/protocol/util/pocl_remote_cpus.c")
    incs=(-I"$repo/pocld" "${protocol_incs[@]}")
    deps=("$repo"/pocld/*.hh "$repo"/protocol/transports/*/*.hh "${protocol_hdrs[@]}") ;;
  params)
    seeds=$repo/tests/remote/fuzz_corpus_params
    srcs=("$here/fuzz_params.cc")
    csrcs=("$repo/lib/CL/devices/remote/remote_params.c")
    incs=(-I"$repo/lib/CL/devices/remote" "${protocol_incs[@]}")
    deps=("$repo"/lib/CL/devices/remote/remote_params.h "${protocol_hdrs[@]}") ;;
  *) echo "$0: unknown target $target" >&2; exit 2 ;;
esac
mkdir -p "$work/corpus"

if ! command -v "$cxx" >/dev/null; then
  echo "$name: SKIP: $cxx not found (install clang-15 to fuzz)"
  exit 77
fi
probe=$work/probe
echo 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char *, unsigned long) { return 0; }' \
  >"$probe.cc"
if ! "$cxx" -fsanitize=fuzzer "$probe.cc" -o "$probe" 2>"$probe.log"; then
  echo "$name: SKIP: $cxx cannot link libFuzzer ($(head -n1 "$probe.log"))"
  exit 77
fi

cc=${FUZZ_CC:-${cxx/clang++/clang}}
deps+=("${srcs[@]}" "${csrcs[@]}")
bin=$work/$name
stale=0
[[ -x $bin ]] || stale=1
for f in "${deps[@]}"; do [[ $f -nt $bin ]] && stale=1; done
if [[ $stale == 1 ]]; then
  echo "$name: building $bin with $cxx"
  objs=()
  for c in "${csrcs[@]}"; do
    o=$work/$(basename "$c" .c).o
    "$cc" -g -O1 -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all \
      "${incs[@]}" -c "$c" -o "$o"
    objs+=("$o")
  done
  "$cxx" -std=c++17 -g -O1 -fsanitize=fuzzer,address,undefined \
    -fno-sanitize-recover=all "${incs[@]}" "${srcs[@]}" "${objs[@]}" -o "$bin"
fi

# Regressions first: every committed input once (a crash exits non-zero).
echo "$name: replaying $(find "$seeds" -type f | wc -l) committed inputs"
if ! "$bin" -runs=0 "$seeds" >"$work/replay.log" 2>&1; then
  tail -n 40 "$work/replay.log"
  echo "$name: FAIL: a committed input crashes the target (log: $work/replay.log)"
  exit 1
fi

echo "$name: fuzzing for $seconds s (1 job)"
rc=0
# -timeout: one input takes microseconds; only a stalled machine (CI runs tests in
# parallel on 2 cores) gets near this.
"$bin" -max_total_time="$seconds" -timeout=120 -rss_limit_mb=2048 -print_final_stats=1 \
  -artifact_prefix="$work/" "$work/corpus" "$seeds" >"$work/fuzz.log" 2>&1 || rc=$?
runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/fuzz.log" | tail -n1)
if [[ $rc != 0 ]]; then
  tail -n 60 "$work/fuzz.log"
  echo "$name: FAIL: the fuzzer found a crash after ${runs:-?} executions;" \
       "reproducer: $(ls "$work"/crash-* "$work"/leak-* "$work"/timeout-* 2>/dev/null | head -n1)"
  exit 1
fi
echo "$name: PASS: ${runs:-?} executions in $seconds s without a finding"
