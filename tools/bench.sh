#!/usr/bin/env bash
# Builds tools/bench/remote_bench.c and runs it against a fresh pocld on
# loopback: the remote device is pocld's pthread device, the local reference
# is the pthread device in the benchmark's own process.
#   tools/bench.sh [ITERATIONS]
# Env: BUILD_DIR (default build, as for tools/build.sh).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$repo/build}/pocl
bench=$build/remote_bench
cc -O2 -Wall -o "$bench" "$repo/tools/bench/remote_bench.c" -lOpenCL -lpthread

state=$(mktemp -u)
stop() { "$repo/tests/remote/pocld_fixture.sh" stop "$state" || true; }
trap stop EXIT
"$repo/tests/remote/pocld_fixture.sh" start "$state" "$build/pocld/pocld" "$build"
RUN_REMOTE_DEVICES="pthread remote" \
  "$repo/tests/remote/run_remote.sh" "$state" "$build" "$bench" "$@"
