#!/usr/bin/env bash
# remote/bad_parameters: a mistyped POCL_REMOTE<n>_PARAMETERS (or none) leaves that
# remote device out with a message naming the variable, never a signal; the other
# devices of POCL_DEVICES are still served. A POCL_DEVICES naming no driver says so.
#   test_bad_parameters.sh STATE_FILE BUILD_DIR VECADD
# For each malformed value, a client (python3 on the ICD loader: clGetPlatformIDs, then
# clGetDeviceIDs four times) must exit 0 with CL_DEVICE_NOT_FOUND and stderr naming
# POCL_REMOTE0_PARAMETERS. Then POCL_DEVICES="remote remote" with a bad first and the
# fixture's pocld as second address runs VECADD (it verifies every element).
# PASS/FAIL line on stdout; exit 0 only on PASS.
set -u
name=bad_parameters
if [[ $# -ne 3 ]]; then
  sed -n '4,4p' "$0" | sed 's/^# //' >&2
  exit 2
fi
state=$1 build=$2 vecadd=$3
port=$(sed -n 's/^POCLD_PORT=//p' "$state" | head -n1)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bad_parameters.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "$name: FAIL: $*"; failures=$((failures + 1)); }

cat >"$tmp/probe.py" <<'PY'
import ctypes, sys
cl = ctypes.CDLL("libOpenCL.so.1")
plat = (ctypes.c_void_p * 8)()
n = ctypes.c_uint()
if cl.clGetPlatformIDs(8, plat, ctypes.byref(n)) != 0 or n.value < 1:
    sys.exit("no platform")
dev = ctypes.c_void_p()
codes = [cl.clGetDeviceIDs(ctypes.c_void_p(plat[0]), ctypes.c_ulong(t), 1,
                           ctypes.byref(dev), ctypes.byref(n))
         for t in (0xFFFFFFFF, 1, 4, 0xFFFFFFFF)]
print(" ".join(str(c) for c in codes))
PY

# Each case: a label and the value ("<unset>": the variable is not set at all).
cases=("<unset>" "" "127.0.0.1" "127.0.0.1:99999/0" "127.0.0.1:10998/abc" "127.0.0.1:0/0"
       "127.0.0.1:-1/0" "127.0.0.1: 10998/0" "127.0.0.1:10998/-0" "127.0.0.1:10998/4294967296"
       "[::1/0" "[::1]x/0" "/0" ":10998/0" "a b/0" "127.0.0.1:10998/0#" "127.0.0.1:10998/0#:1"
       "$(printf 'h%.0s' $(seq 300))/0" "127.0.0.1:10998/0/1" "127.0.0.1:1/0#[::1]:70000")
for value in "${cases[@]}"; do
  envs=(OCL_ICD_VENDORS="$build/ocl-vendors" POCL_BUILDING=1 POCL_DEVICES=remote)
  if [[ $value == "<unset>" ]]; then
    unset_args=(-u POCL_REMOTE0_PARAMETERS)
  else
    unset_args=()
    envs+=(POCL_REMOTE0_PARAMETERS="$value")
  fi
  out=$(env "${unset_args[@]}" "${envs[@]}" timeout -k 5 60 python3 "$tmp/probe.py" \
        2>"$tmp/err")
  rc=$?
  shown=${value:0:40}
  if ((rc != 0)); then
    fail "'$shown': the client exited with $rc ($( ((rc > 128)) && echo "signal $((rc - 128))"))"
  elif [[ $out != "-1 -1 -1 -1" ]]; then
    fail "'$shown': clGetDeviceIDs returned '$out', expected CL_DEVICE_NOT_FOUND (-1) each time"
  elif ! grep -q 'POCL_REMOTE0_PARAMETERS' "$tmp/err"; then
    fail "'$shown': no message naming POCL_REMOTE0_PARAMETERS; stderr: $(head -c 300 "$tmp/err")"
  else
    echo "$name: '$shown': $(head -n1 "$tmp/err")"
  fi
done

# POCL_DEVICES naming no driver: a message naming the variable, no device, no signal.
for value in "bogus" "remote,pthread" "pthreads" " "; do
  out=$(env OCL_ICD_VENDORS="$build/ocl-vendors" POCL_BUILDING=1 POCL_DEVICES="$value" \
        timeout -k 5 60 python3 "$tmp/probe.py" 2>"$tmp/err")
  rc=$?
  if ((rc != 0)); then
    fail "POCL_DEVICES='$value': the client exited with $rc"
  elif [[ $out != "-1 -1 -1 -1" ]]; then
    fail "POCL_DEVICES='$value': clGetDeviceIDs returned '$out', expected CL_DEVICE_NOT_FOUND"
  elif ! grep -q 'POCL_DEVICES' "$tmp/err"; then
    fail "POCL_DEVICES='$value': no message naming POCL_DEVICES; stderr: $(head -c 300 "$tmp/err")"
  elif (($(grep -c 'POCL_DEVICES' "$tmp/err") > 1)); then
    fail "POCL_DEVICES='$value': the message came $(grep -c 'POCL_DEVICES' "$tmp/err") times"
  else
    echo "$name: POCL_DEVICES='$value': $(head -n1 "$tmp/err")"
  fi
done

# A bad first address does not take the second device with it.
if env OCL_ICD_VENDORS="$build/ocl-vendors" POCL_BUILDING=1 POCL_DEVICES="remote remote" \
     POCL_REMOTE0_PARAMETERS="127.0.0.1:$port" POCL_REMOTE1_PARAMETERS="127.0.0.1:$port/0" \
     timeout -k 5 120 "$vecadd" >"$tmp/vecadd.out" 2>&1; then
  echo "$name: the second, correct address serves the vector addition"
else
  fail "with a bad first and a good second address, the vector addition failed:"
  tail -n 5 "$tmp/vecadd.out"
fi

if ((failures > 0)); then
  echo "$name: FAIL: $failures cases"
  exit 1
fi
echo "$name: PASS: ${#cases[@]} malformed addresses and 4 driver lists refused with a message," \
     "the good address served"
