#!/usr/bin/env bash
# remote/clinfo_output: Debian's clinfo sees the remote device, and the remote device
# describes the same hardware as the local pthread device that pocld serves.
#   test_clinfo_output.sh RUN_REMOTE STATE_FILE BUILD_DIR CLINFO
# Runs clinfo twice, both with OCL_ICD_VENDORS=BUILD_DIR/ocl-vendors (only this build's
# libpocl) and POCL_BUILDING=1:
#   reference: POCL_DEVICES=pthread (the device pocld serves, queried locally),
#   remote:    through run_remote.sh (POCL_DEVICES=remote, the fixture's pocld).
# Checks: both runs exit 0; the remote run lists exactly one device, its name contains
# "pocl-remote" (human-readable and --raw output) and it is available; a list of
# hardware properties (compute units, global/local/alloc memory sizes, OpenCL C version,
# work-group limits, ...) is identical in both. Other differing properties are printed
# as notes only. PASS/FAIL line on stdout; exit 0 only on PASS.
set -u

name=clinfo_output
if [[ $# -ne 4 ]]; then
  sed -n '4,4p' "$0" | sed 's/^# //' >&2
  exit 2
fi
run_remote=$1 state=$2 build=$3 clinfo=$4

tmp=$(mktemp -d "${TMPDIR:-/tmp}/clinfo_output.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "$name: FAIL: $*"; failures=$((failures + 1)); }

# Reference: the pthread device, locally, with no remote settings.
env -u POCL_REMOTE0_PARAMETERS OCL_ICD_VENDORS="$build/ocl-vendors" POCL_BUILDING=1 \
  POCL_DEVICES=pthread timeout -k 5 60 "$clinfo" --raw >"$tmp/ref.raw" 2>"$tmp/ref.err"
rc=$?
if [[ $rc != 0 ]]; then
  echo "$name: FAIL: reference clinfo (POCL_DEVICES=pthread) exited with $rc"
  tail -n 20 "$tmp/ref.err"
  exit 1
fi

timeout -k 5 60 "$run_remote" "$state" "$build" "$clinfo" --raw >"$tmp/rem.raw" 2>"$tmp/rem.err"
rc=$?
if [[ $rc != 0 ]]; then
  echo "$name: FAIL: clinfo --raw through the remote driver exited with $rc"
  tail -n 20 "$tmp/rem.err"
  exit 1
fi
timeout -k 5 60 "$run_remote" "$state" "$build" "$clinfo" >"$tmp/rem.txt" 2>"$tmp/rem2.err"
rc=$?
if [[ $rc != 0 ]]; then
  echo "$name: FAIL: clinfo (human-readable) through the remote driver exited with $rc"
  tail -n 20 "$tmp/rem2.err"
  exit 1
fi

# "[POCL/0]    KEY    VALUE..." -> KEY<TAB>VALUE for device 0 of the first platform.
extract() {
  awk '$1 ~ /^\[[^]]*\/0\]$/ && $2 ~ /^CL_/ {
         key = $2; line = $0
         sub(/^[ \t]*\[[^]]*\][ \t]*/, "", line)
         sub(/^[^ \t]+[ \t]*/, "", line)
         if (!(key in seen)) { seen[key] = 1; print key "\t" line }
       }' "$1"
}
extract "$tmp/ref.raw" >"$tmp/ref.kv"
extract "$tmp/rem.raw" >"$tmp/rem.kv"
get() { awk -F'\t' -v k="$2" '$1 == k { print $2; exit }' "$1"; }

ndev=$(awk '$2 == "#DEVICES" { print $3; exit }' "$tmp/rem.raw")
[[ $ndev == 1 ]] || fail "clinfo --raw lists ${ndev:-no} devices through the remote driver, expected 1"

rname=$(get "$tmp/rem.kv" CL_DEVICE_NAME)
lname=$(get "$tmp/ref.kv" CL_DEVICE_NAME)
echo "$name: reference device: '$lname'"
echo "$name: remote device:    '$rname'"
[[ -n $lname ]] || fail "the reference clinfo shows no CL_DEVICE_NAME for the pthread device"
[[ $rname == *pocl-remote* ]] || fail "remote CL_DEVICE_NAME '$rname' does not contain 'pocl-remote'"
if ! grep -E '^[[:space:]]*Device Name[[:space:]]+.*pocl-remote' "$tmp/rem.txt" >/dev/null; then
  fail "human-readable clinfo output has no 'Device Name' line containing 'pocl-remote'"
fi
[[ $rname == *"$lname"* ]] || echo "$name: note: the remote name does not contain the served device's name"
[[ $(get "$tmp/rem.kv" CL_DEVICE_AVAILABLE) == CL_TRUE ]] \
  || fail "remote CL_DEVICE_AVAILABLE is '$(get "$tmp/rem.kv" CL_DEVICE_AVAILABLE)'"

# Properties of the hardware underneath: the remote device must report the server's.
must_match=(
  CL_DEVICE_TYPE
  CL_DEVICE_VENDOR
  CL_DEVICE_VENDOR_ID
  CL_DEVICE_MAX_COMPUTE_UNITS
  CL_DEVICE_MAX_CLOCK_FREQUENCY
  CL_DEVICE_GLOBAL_MEM_SIZE
  CL_DEVICE_MAX_MEM_ALLOC_SIZE
  CL_DEVICE_LOCAL_MEM_SIZE
  CL_DEVICE_LOCAL_MEM_TYPE
  CL_DEVICE_MAX_CONSTANT_BUFFER_SIZE
  CL_DEVICE_MAX_CONSTANT_ARGS
  CL_DEVICE_MAX_PARAMETER_SIZE
  CL_DEVICE_OPENCL_C_VERSION
  CL_DEVICE_MAX_WORK_ITEM_DIMENSIONS
  CL_DEVICE_MAX_WORK_ITEM_SIZES
  CL_DEVICE_MAX_WORK_GROUP_SIZE
  CL_DEVICE_PREFERRED_WORK_GROUP_SIZE_MULTIPLE
  CL_DEVICE_ADDRESS_BITS
  CL_DEVICE_ENDIAN_LITTLE
  CL_DEVICE_MEM_BASE_ADDR_ALIGN
  CL_DEVICE_GLOBAL_MEM_CACHE_TYPE
  CL_DEVICE_GLOBAL_MEM_CACHE_SIZE
  CL_DEVICE_GLOBAL_MEM_CACHELINE_SIZE
  CL_DEVICE_SINGLE_FP_CONFIG
  CL_DEVICE_DOUBLE_FP_CONFIG
  CL_DEVICE_PREFERRED_VECTOR_WIDTH_CHAR
  CL_DEVICE_PREFERRED_VECTOR_WIDTH_INT
  CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT
  CL_DEVICE_PREFERRED_VECTOR_WIDTH_DOUBLE
  CL_DEVICE_IMAGE_SUPPORT
)
matched=0
for k in "${must_match[@]}"; do
  lv=$(get "$tmp/ref.kv" "$k")
  rv=$(get "$tmp/rem.kv" "$k")
  if [[ -z $lv ]]; then
    echo "$name: note: the reference clinfo does not show $k; skipped"
    continue
  fi
  if [[ "$lv" != "$rv" ]]; then
    fail "$k differs: pthread '$lv', remote '${rv:-<missing>}'"
  else
    matched=$((matched + 1))
  fi
done
for k in CL_DEVICE_MAX_COMPUTE_UNITS CL_DEVICE_GLOBAL_MEM_SIZE CL_DEVICE_OPENCL_C_VERSION; do
  echo "$name: $k: pthread '$(get "$tmp/ref.kv" $k)', remote '$(get "$tmp/rem.kv" $k)'"
done

# Everything else: notes only (the remote driver may legitimately differ, e.g. in
# versions, extensions or SVM), so a reader sees what the remote device hides.
join -t $'\t' -j 1 <(sort "$tmp/ref.kv") <(sort "$tmp/rem.kv") \
  | awk -F'\t' '$2 != $3 { print $1 }' >"$tmp/differ"
other=$(grep -vxF -f <(printf '%s\n' "${must_match[@]}" CL_DEVICE_NAME) "$tmp/differ" | tr '\n' ' ')
[[ -z $other ]] || echo "$name: note: other properties that differ: $other"
missing=$(comm -23 <(cut -f1 "$tmp/ref.kv" | sort -u) <(cut -f1 "$tmp/rem.kv" | sort -u) | tr '\n' ' ')
[[ -z $missing ]] || echo "$name: note: properties clinfo shows for pthread but not for remote: $missing"

if ((failures > 0)); then
  echo "$name: FAIL: $failures check(s) failed (remote clinfo stderr tail below)"
  tail -n 10 "$tmp/rem.err"
  exit 1
fi
echo "$name: PASS: remote device '$rname' listed; $matched properties identical to the local pthread device"
exit 0
