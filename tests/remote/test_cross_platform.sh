#!/usr/bin/env bash
# remote/cross_platform: migrations between two devices of one server in two
# native platforms, which pocld stages in its own memory.
#   test_cross_platform.sh FIXTURE POCLD BUILD_DIR CLIENT WORK_DIR
# Starts a pocld serving two pthread devices, each in a context of its own
# (POCLD_CONTEXT_PER_DEVICE=1: PoCL then refuses a native copy between them, as
# two OpenCL implementations would), and runs CLIENT (test_cross_platform.c) on
# its devices 0 and 1.  PASS/FAIL line on stdout; exit 0 only on PASS.
set -u
name=cross_platform
if [[ $# -ne 5 ]]; then
  sed -n '3,3p' "$0" | sed 's/^# //' >&2
  exit 2
fi
fixture=$1 pocld=$2 build=$3 client=$4 work=$5
fail() { echo "$name: FAIL: $*"; exit 1; }
rm -rf "$work"
mkdir -p "$work"
state=$work/pocld.state
trap '"$fixture" stop "$state" >/dev/null 2>&1' EXIT

POCLD_SERVED_DEVICES="pthread pthread" POCLD_CONTEXT_PER_DEVICE=1 \
  "$fixture" start "$state" "$pocld" "$build" || fail "pocld did not start"
port=$(sed -n 's/^POCLD_PORT=//p' "$state" | head -n1)
OCL_ICD_VENDORS=$build/ocl-vendors POCL_BUILDING=1 POCL_DEVICES="remote remote" \
  POCL_REMOTE0_PARAMETERS=127.0.0.1:$port/0 POCL_REMOTE1_PARAMETERS=127.0.0.1:$port/1 \
  timeout -k 5 280 "$client" || fail "the client failed (exit status $?)"
