#!/usr/bin/env bash
# remote/clinfo_output: Debian's clinfo sees the remote device, and the remote device
# describes the same hardware as the local pthread device that pocld serves.
#   test_clinfo_output.sh RUN_REMOTE STATE_FILE BUILD_DIR CLINFO [FIXTURE POCLD]
# Runs clinfo twice, both with OCL_ICD_VENDORS=BUILD_DIR/ocl-vendors (only this build's
# libpocl) and POCL_BUILDING=1:
#   reference: POCL_DEVICES=pthread (the device pocld serves, queried locally),
#   remote:    through run_remote.sh (POCL_DEVICES=remote, the fixture's pocld).
# Checks: both runs exit 0; the remote run lists exactly one device, its name contains
# "pocl-remote" (human-readable and --raw output) and it is available; a list of
# hardware properties (compute units, global/local/alloc memory sizes, OpenCL C version,
# work-group limits, ...) is identical in both. Other differing properties are printed
# as notes only. PASS/FAIL line on stdout; exit 0 only on PASS.
# Memory sizes come from the machine's total memory as PoCL saw it when the process
# started; where that total changes (a VM's memory hot-plugged in 128 MiB blocks), the
# fixture's pocld, started earlier, may report an older value. So if only memory sizes
# differ and FIXTURE/POCLD are given, they are compared again against a pocld started
# now (then stopped), between two reference runs: when those two disagree, the total
# changed during the attempt and it is repeated (at most 4 attempts).
set -u

name=clinfo_output
if [[ $# -ne 4 && $# -ne 6 ]]; then
  sed -n '4,4p' "$0" | sed 's/^# //' >&2
  exit 2
fi
run_remote=$1 state=$2 build=$3 clinfo=$4 fixture=${5:-} pocld=${6:-}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/clinfo_output.XXXXXX")
own_state=$tmp/own_pocld.state
cleanup() {
  [[ -f $own_state ]] && "$fixture" stop "$own_state" >/dev/null 2>&1
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'echo "$name: FAIL: interrupted"; exit 1' INT TERM
failures=0
fail() { echo "$name: FAIL: $*"; failures=$((failures + 1)); }

# Reference: the pthread device, locally, with no remote settings.
reference() {   # $1: output file for clinfo --raw
  env -u POCL_REMOTE0_PARAMETERS OCL_ICD_VENDORS="$build/ocl-vendors" POCL_BUILDING=1 \
    POCL_DEVICES=pthread timeout -k 5 60 "$clinfo" --raw >"$1" 2>"$tmp/ref.err"
}
reference "$tmp/ref.raw"
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
mem_keys=" CL_DEVICE_GLOBAL_MEM_SIZE CL_DEVICE_MAX_MEM_ALLOC_SIZE CL_DEVICE_MAX_CONSTANT_BUFFER_SIZE "
compare_all() {   # $1: remote key/value file, $2: reference's (default ref.kv);
                  # prints mismatches as KEY<TAB>local<TAB>remote
  local k lv rv
  for k in "${must_match[@]}"; do
    lv=$(get "${2:-$tmp/ref.kv}" "$k")
    rv=$(get "$1" "$k")
    [[ -z $lv || "$lv" == "$rv" ]] || printf '%s\t%s\t%s\n' "$k" "$lv" "${rv:-<missing>}"
  done
}
judged=$tmp/rem.kv   # the remote answers the verdict is based on
judged_ref=$tmp/ref.kv
compare_all "$tmp/rem.kv" >"$tmp/mismatch"
only_memory() {   # the mismatches are all memory sizes
  [[ -s $tmp/mismatch ]] \
    && ! cut -f1 "$tmp/mismatch" | grep -qvxF -f <(tr ' ' '\n' <<<"$mem_keys" | sed '/^$/d')
}
mem_values() { for k in $mem_keys; do get "$1" "$k"; done; }
if only_memory && [[ -n $fixture && -n $pocld ]]; then
  echo "$name: note: only memory sizes differ ($(cut -f1 "$tmp/mismatch" | tr '\n' ' '));" \
       "re-checking against a pocld started now"
  for attempt in 1 2 3 4; do
    reference "$tmp/ref_a.raw"
    if ! "$fixture" start "$own_state" "$pocld" "$build" 2>"$tmp/own.err"; then
      echo "$name: note: could not start a pocld for the re-check:"; tail -n 5 "$tmp/own.err"
      break
    fi
    timeout -k 5 60 "$run_remote" "$own_state" "$build" "$clinfo" --raw >"$tmp/own.raw" 2>>"$tmp/own.err"
    reference "$tmp/ref_b.raw"
    "$fixture" stop "$own_state" >/dev/null 2>&1
    extract "$tmp/own.raw" >"$tmp/own.kv"
    extract "$tmp/ref_a.raw" >"$tmp/ref_a.kv"
    extract "$tmp/ref_b.raw" >"$tmp/ref_b.kv"
    compare_all "$tmp/own.kv" "$tmp/ref_a.kv" >"$tmp/mismatch"
    judged=$tmp/own.kv judged_ref=$tmp/ref_a.kv
    only_memory || break
    if [[ $(mem_values "$tmp/ref_a.kv") == "$(mem_values "$tmp/ref_b.kv")" ]]; then
      break   # the total held still around pocld's run: a real difference
    fi
    echo "$name: note: attempt $attempt: the machine's memory changed during the re-check" \
         "(pthread $(get "$tmp/ref_a.kv" CL_DEVICE_GLOBAL_MEM_SIZE) then" \
         "$(get "$tmp/ref_b.kv" CL_DEVICE_GLOBAL_MEM_SIZE)); again"
  done
fi
while IFS=$'\t' read -r k lv rv; do
  fail "$k differs: pthread '$lv', remote '$rv'"
done <"$tmp/mismatch"
matched=$(( ${#must_match[@]} - $(wc -l <"$tmp/mismatch") ))
for k in CL_DEVICE_MAX_COMPUTE_UNITS CL_DEVICE_GLOBAL_MEM_SIZE CL_DEVICE_OPENCL_C_VERSION; do
  echo "$name: $k: pthread '$(get "$judged_ref" $k)', remote '$(get "$judged" $k)'"
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
