#!/usr/bin/env bash
# clients/clinfo: every property that Debian's clinfo shows for the remote device equals
# the served device's, except a short list of properties that legitimately differ.
#   test_clinfo.sh FIXTURE RUN_REMOTE POCLD BUILD_DIR CLINFO WORK_DIR
# Starts its own pocld (FIXTURE, serving BUILD_DIR's pthread device), then runs
# `clinfo --raw` twice, both with OCL_ICD_VENDORS=BUILD_DIR/ocl-vendors:
#   reference: POCL_DEVICES=pthread (the device pocld serves, queried locally),
#   remote:    POCL_DEVICES=remote through RUN_REMOTE,
# and compares every platform and device line (values, errors, and which properties are
# shown at all). Memory sizes follow the machine's total memory when each process
# started, so a run whose only differences are memory sizes is repeated (up to 4 rounds).
# PASS/FAIL line on stdout; exit 0 only on PASS, 77 (skip) if clinfo is missing.
set -euo pipefail

name=clients/clinfo
if [[ $# != 6 ]]; then
  sed -n '4,4p' "$0" | sed 's/^# //' >&2
  exit 2
fi
fixture=$1 run_remote=$2 pocld=$3 build=$4 clinfo=$5 work=$6
if [[ ! -x $clinfo ]]; then
  echo "$name: SKIP: clinfo is not installed (tools/setup.sh installs Debian's clinfo)"
  exit 77
fi

mkdir -p "$work"
state=$work/pocld.state
cleanup() { "$fixture" stop "$state" >/dev/null 2>&1 || true; }
trap cleanup EXIT

# Properties whose remote value legitimately differs, with the reason (doc/clients.md):
declare -A allowed=(
  # The remote driver names the server and the device index, so that several remote
  # devices (and a local one of the same kind) can be told apart.
  [CL_DEVICE_NAME]="name + ' (pocl-remote host:port/index)'"
  # Sub-devices of a remote device are not implemented (doc/remote-test-exceptions.md).
  [CL_DEVICE_PARTITION_MAX_SUB_DEVICES]="0: no sub-devices"
  [CL_DEVICE_PARTITION_PROPERTIES]="none: no sub-devices"
  # The device's memory is on the server, not the client's host memory.
  [CL_DEVICE_HOST_UNIFIED_MEMORY]="false: memory is on the server"
  # SVM: coarse and fine-grained buffers as the server's device has them, never
  # atomics (the host copy and the server's are two memories, made consistent at
  # synchronization points only).
  [CL_DEVICE_SVM_CAPABILITIES]="the server's coarse and fine-grained buffers, no atomics"
  # Native kernels are host function pointers: they cannot run on a server.
  [CL_DEVICE_EXECUTION_CAPABILITIES]="CL_EXEC_KERNEL only: no native kernels"
)
mem_keys="CL_DEVICE_GLOBAL_MEM_SIZE CL_DEVICE_MAX_MEM_ALLOC_SIZE CL_DEVICE_MAX_CONSTANT_BUFFER_SIZE"

# "[POCL/0]   KEY   VALUE" -> "[POCL/0] KEY<TAB>VALUE" for every platform and device line.
# Keys repeat (clinfo shows some twice, e.g. via the NULL platform): keep the first.
extract() {
  awk '$1 ~ /^\[[^]]*\]$/ && $2 ~ /^(CL_|#)/ {
         key = $1 " " $2; line = $0
         sub(/^[ \t]*\[[^]]*\][ \t]*/, "", line)
         sub(/^[^ \t]+[ \t]*/, "", line)
         if (!(key in seen)) { seen[key] = 1; print key "\t" line }
       }' "$1"
}

# One comparison round: start pocld, query both, write the differences to $work/diff.
round() {
  "$fixture" start "$state" "$pocld" "$build" 2>"$work/pocld_start.err" || {
    echo "$name: FAIL: could not start pocld:"; tail -n 5 "$work/pocld_start.err"; exit 1; }
  local port rc
  port=$(sed -n 's/^POCLD_PORT=//p' "$state")
  env -u POCL_REMOTE0_PARAMETERS OCL_ICD_VENDORS="$build/ocl-vendors" POCL_BUILDING=1 \
    POCL_DEVICES=pthread timeout -k 5 60 "$clinfo" --raw >"$work/ref.raw" 2>"$work/ref.err" \
    && rc=0 || rc=$?
  if [[ $rc != 0 ]]; then
    echo "$name: FAIL: reference clinfo (POCL_DEVICES=pthread) exited with $rc"
    tail -n 10 "$work/ref.err"; exit 1
  fi
  timeout -k 5 60 "$run_remote" "$state" "$build" "$clinfo" --raw >"$work/rem.raw" \
    2>"$work/rem.err" && rc=0 || rc=$?
  if [[ $rc != 0 ]]; then
    echo "$name: FAIL: clinfo --raw through the remote driver exited with $rc"
    tail -n 10 "$work/rem.err"; exit 1
  fi
  "$fixture" stop "$state" >/dev/null 2>&1 || true
  extract "$work/ref.raw" >"$work/ref.kv"
  extract "$work/rem.raw" >"$work/rem.kv"
  # Every key of either side, with both values (<absent> where clinfo showed none).
  awk -F'\t' 'NR == FNR { ref[$1] = $2; order[++n] = $1; next }
              { rem[$1] = $2; if (!($1 in ref)) order[++n] = $1 }
              END { for (i = 1; i <= n; i++) { k = order[i]
                      r = (k in ref) ? ref[k] : "<absent>"; m = (k in rem) ? rem[k] : "<absent>"
                      if (r != m) print k "\t" r "\t" m } }' \
    "$work/ref.kv" "$work/rem.kv" >"$work/diff"
  echo "$port" >"$work/port"
}

# The machine's total memory can change between pocld's start and the reference run
# (a VM's hot-plugged 128 MiB blocks): while only memory sizes differ, up to 4 rounds.
round
for again in 2 3 4; do
  [[ -s $work/diff ]] && ! cut -f1 "$work/diff" | cut -d' ' -f2 \
    | grep -qvxF -f <(tr ' ' '\n' <<<"$mem_keys") || break
  echo "$name: note: only memory sizes differ; round $again with a fresh pocld"
  round
done

failures=0 allowed_seen=0
port=$(cat "$work/port")
while IFS=$'\t' read -r key ref rem; do
  prop=${key#* }
  if [[ $prop == CL_DEVICE_NAME ]]; then
    if [[ $rem == "$ref (pocl-remote 127.0.0.1:$port/0)" ]]; then
      allowed_seen=$((allowed_seen + 1))
      continue
    fi
  elif [[ -n ${allowed[$prop]:-} ]]; then
    echo "$name: differs as expected: $key: pthread '$ref', remote '$rem' (${allowed[$prop]})"
    allowed_seen=$((allowed_seen + 1))
    continue
  fi
  echo "$name: FAIL: $key differs: pthread '$ref', remote '$rem'"
  failures=$((failures + 1))
done <"$work/diff"

total=$(wc -l <"$work/ref.kv")
ndev=$(awk '$2 == "#DEVICES" { print $3; exit }' "$work/rem.raw")
[[ $ndev == 1 ]] || { echo "$name: FAIL: the remote run lists ${ndev:-no} devices, expected 1"
                      failures=$((failures + 1)); }
if ((failures > 0)); then
  echo "$name: FAIL: $failures of $total properties differ unexpectedly (outputs in $work)"
  exit 1
fi
echo "$name: PASS: $total platform and device properties compared;" \
     "$((total - allowed_seen)) identical, $allowed_seen differ as documented"
