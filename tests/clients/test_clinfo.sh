#!/usr/bin/env bash
# clients/clinfo, clients/clinfo_intel: every property that Debian's clinfo shows for the
# remote device equals the served device's, except the list of doc/device-info.md.
#   test_clinfo.sh FIXTURE RUN_REMOTE POCLD BUILD_DIR CLINFO WORK_DIR [VENDOR]
# VENDOR: pthread (default: the build's PoCL CPU device) or intel (Intel's OpenCL CPU
# runtime, whose ICD file tests/clients/setup_clients.sh writes under
# BUILD_DIR/../vendors/intel). Starts its own pocld (FIXTURE) serving that device, then
# runs `clinfo --raw` twice:
#   reference: the vendor's platform alone, queried locally,
#   remote:    POCL_DEVICES=remote through RUN_REMOTE,
# and compares every device line (values, errors, and which properties are shown at
# all), and for pthread the platform lines too (over another vendor, the remote device
# sits in PoCL's platform). Memory sizes follow the machine's total memory when each
# process started, so a run whose only differences are memory sizes is repeated (up to
# 4 rounds). PASS/FAIL line on stdout; exit 0 only on PASS, 77 (skip) if clinfo or the
# vendor's runtime is missing.
set -euo pipefail

name=clients/clinfo
if [[ $# != 6 && $# != 7 ]]; then
  sed -n '4,4p' "$0" | sed 's/^# //' >&2
  exit 2
fi
fixture=$1 run_remote=$2 pocld=$3 build=$4 clinfo=$5 work=$6 vendor=${7:-pthread}
if [[ ! -x $clinfo ]]; then
  echo "$name: SKIP: clinfo is not installed (tools/setup.sh installs Debian's clinfo)"
  exit 77
fi
case $vendor in
  pthread) vendors=$build/ocl-vendors ref_env=(POCL_BUILDING=1 POCL_DEVICES=pthread) ;;
  intel)
    name=clients/clinfo_intel
    vendors=$(cd "$build/.." && pwd)/vendors/intel ref_env=()
    if [[ ! -f $vendors/intel-cpu.icd ]]; then
      echo "$name: SKIP: no $vendors/intel-cpu.icd (tests/clients/setup_clients.sh installs" \
           "Intel's OpenCL CPU runtime)"
      exit 77
    fi ;;
  *) echo "$name: unknown vendor $vendor" >&2; exit 2 ;;
esac

mkdir -p "$work"
state=$work/pocld.state
cleanup() { "$fixture" stop "$state" >/dev/null 2>&1 || true; }
trap cleanup EXIT

# Properties whose remote value legitimately differs, with the reason
# (doc/device-info.md, which says more):
declare -A allowed=(
  # The remote driver names the server and the device index, so that several remote
  # devices (and a local one of the same kind) can be told apart.
  [CL_DEVICE_NAME]="name + ' (pocl-remote host:port/index)'"
  # PoCL partitions the remote device itself, equally or by counts.
  [CL_DEVICE_PARTITION_PROPERTIES]="equally and by counts only"
  [CL_DEVICE_PARTITION_AFFINITY_DOMAIN]="no partitioning by affinity"
  # The device's memory is on the server, not the client's host memory.
  [CL_DEVICE_HOST_UNIFIED_MEMORY]="false: memory is on the server"
  # SVM: coarse and fine-grained buffers as the server's device has them, never
  # atomics nor system SVM (the host copy and the server's are two memories, made
  # consistent at synchronization points only).
  [CL_DEVICE_SVM_CAPABILITIES]="the server's coarse and fine-grained buffers, no atomics"
  # Native kernels are host function pointers: they cannot run on a server.
  [CL_DEVICE_EXECUTION_CAPABILITIES]="CL_EXEC_KERNEL only: no native kernels"
  # Extensions not served are hidden (checked below: the rest is the server's list).
  [CL_DEVICE_EXTENSIONS]="the served extensions"
  [CL_DEVICE_EXTENSIONS_WITH_VERSION]="the served extensions"
  [CL_DEVICE_OPENCL_C_FEATURES]="no pipes, no device-side enqueue, no sub-groups"
  # PoCL 3.1 has no clGetKernelSubGroupInfo: sub-groups are hidden.
  [CL_DEVICE_MAX_NUM_SUB_GROUPS]="0: no sub-groups"
  # OpenCL C 2.0 needs every feature hidden above: the highest full version is 1.2.
  [CL_DEVICE_OPENCL_C_VERSION]="OpenCL C 1.2 where a feature is hidden"
  [CL_DEVICE_OPENCL_C_ALL_VERSIONS]="no OpenCL C 2.0 where a feature is hidden"
  [CL_DEVICE_SUB_GROUP_INDEPENDENT_FORWARD_PROGRESS]="false: no sub-groups"
  # SPIR-V programs are not forwarded yet.
  [CL_DEVICE_IL_VERSION]="no IL"
  [CL_DEVICE_ILS_WITH_VERSION]="no IL"
  # Pipes and device-side enqueue need objects this driver does not forward.
  [CL_DEVICE_PIPE_SUPPORT]="no pipes"
  [CL_DEVICE_MAX_PIPE_ARGS]="no pipes"
  [CL_DEVICE_PIPE_MAX_ACTIVE_RESERVATIONS]="no pipes"
  [CL_DEVICE_PIPE_MAX_PACKET_SIZE]="no pipes"
  [CL_DEVICE_DEVICE_ENQUEUE_CAPABILITIES]="no device-side enqueue"
  [CL_DEVICE_QUEUE_ON_DEVICE_PROPERTIES]="no device-side enqueue"
  [CL_DEVICE_QUEUE_ON_DEVICE_PREFERRED_SIZE]="no device-side enqueue"
  [CL_DEVICE_QUEUE_ON_DEVICE_MAX_SIZE]="no device-side enqueue"
  [CL_DEVICE_MAX_ON_DEVICE_QUEUES]="no device-side enqueue"
  [CL_DEVICE_MAX_ON_DEVICE_EVENTS]="no device-side enqueue"
  # Images from buffers other than 1D buffer images are not forwarded.
  [CL_DEVICE_IMAGE_PITCH_ALIGNMENT]="0: cl_khr_image2d_from_buffer hidden"
  [CL_DEVICE_IMAGE_BASE_ADDRESS_ALIGNMENT]="0: cl_khr_image2d_from_buffer hidden"
  # Command buffers are PoCL's own, recorded on the client.
  [CL_DEVICE_COMMAND_BUFFER_CAPABILITIES_KHR]="PoCL's command buffers"
  # Unified shared memory as the remote device serves it (also on a server device
  # with SVM only): access, no concurrent nor cross-device nor system allocations.
  [CL_DEVICE_HOST_MEM_CAPABILITIES_INTEL]="USM as served: access only"
  [CL_DEVICE_DEVICE_MEM_CAPABILITIES_INTEL]="USM as served: access, native atomics"
  [CL_DEVICE_SINGLE_DEVICE_SHARED_MEM_CAPABILITIES_INTEL]="USM as served: access only"
  [CL_DEVICE_CROSS_DEVICE_SHARED_MEM_CAPABILITIES_INTEL]="USM as served: none"
  [CL_DEVICE_SHARED_SYSTEM_MEM_CAPABILITIES_INTEL]="USM as served: none"
)
mem_keys="CL_DEVICE_GLOBAL_MEM_SIZE CL_DEVICE_MAX_MEM_ALLOC_SIZE CL_DEVICE_MAX_CONSTANT_BUFFER_SIZE"

# "[POCL/0]   KEY   VALUE" -> "[0] KEY<TAB>VALUE" for every device line (and platform
# line, "[*] KEY", for pthread). Keys repeat (clinfo shows some twice, e.g. via the NULL
# platform): keep the first.
extract() {
  awk -v platforms=$([[ $vendor == pthread ]] && echo 1 || echo 0) \
      '$1 ~ /^\[[^]]*\]$/ && $2 ~ /^(CL_|#)/ {
         tag = $1; sub(/^\[[^\/]*\//, "[", tag)
         if ((tag == $1 || tag == "[*]") && !platforms) next
         key = tag " " $2; line = $0
         sub(/^[ \t]*\[[^]]*\][ \t]*/, "", line)
         sub(/^[^ \t]+[ \t]*/, "", line)
         if (!(key in seen)) { seen[key] = 1; print key "\t" line }
       }' "$1"
}

# One comparison round: start pocld, query both, write the differences to $work/diff.
round() {
  POCLD_SERVED_VENDORS=$vendors \
    "$fixture" start "$state" "$pocld" "$build" 2>"$work/pocld_start.err" || {
    echo "$name: FAIL: could not start pocld:"; tail -n 5 "$work/pocld_start.err"; exit 1; }
  local port rc
  port=$(sed -n 's/^POCLD_PORT=//p' "$state")
  env -u POCL_REMOTE0_PARAMETERS OCL_ICD_VENDORS="$vendors" "${ref_env[@]}" \
    timeout -k 5 60 "$clinfo" --raw >"$work/ref.raw" 2>"$work/ref.err" \
    && rc=0 || rc=$?
  if [[ $rc != 0 ]]; then
    echo "$name: FAIL: reference clinfo ($vendor) exited with $rc"
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
  # (USM is served on the server's SVM too, where the device has none of its own)
  elif [[ $prop == CL_DEVICE_EXTENSIONS ]] \
       && extra=$(comm -13 <(tr ' ' '\n' <<<"$ref" | sort -u) <(tr ' ' '\n' <<<"$rem" | sort -u) \
                  | grep -vx cl_intel_unified_shared_memory) \
       && [[ -n $extra ]]; then
    echo "$name: FAIL: the remote device lists extensions the $vendor device does not:" $extra
    failures=$((failures + 1))
    continue
  fi
  if [[ $prop != CL_DEVICE_NAME && -n ${allowed[$prop]:-} ]]; then
    echo "$name: differs as expected: $key: $vendor '$ref', remote '$rem' (${allowed[$prop]})"
    allowed_seen=$((allowed_seen + 1))
    continue
  fi
  echo "$name: FAIL: $key differs: $vendor '$ref', remote '$rem'"
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
echo "$name: PASS: $total properties compared;" \
     "$((total - allowed_seen)) identical, $allowed_seen differ as documented"
