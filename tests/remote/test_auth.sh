#!/usr/bin/env bash
# remote/auth: pre-shared keys (doc/security.md) with pocld processes of its own.
#   test_auth.sh FIXTURE RUN_REMOTE POCLD BUILD_DIR VECADD MULTI_SERVER_SH MULTI_CLIENT WORK_DIR
# 1. A pocld with --psk-file: a client with the key (file or POCL_REMOTE_PSK) is served;
#    one with a wrong key or none is refused, with a message from the driver and a pocld
#    log line, and pocld serves the next client.
# 2. A client with a key refuses a pocld that does not know it (an impostor).
# 3. Two pocld with the same key as peers (test_multi_server.sh lanes): the peer links
#    and their lanes
#    authenticate, and no link is refused.
# 4. pocld refuses to serve a non-loopback address without a key (nothing is bound).
# PASS/FAIL line on stdout; exit 0 only on PASS.
set -u

name=auth
if [[ $# -ne 8 ]]; then
  sed -n '3,3p' "$0" | sed 's/^# //' >&2
  exit 2
fi
fixture=$1 run_remote=$2 pocld=$3 build=$4 vecadd=$5 multi_sh=$6 multi_client=$7 work=$8
rm -rf "$work"
mkdir -p "$work"
fail() { echo "$name: FAIL: $*"; exit 1; }
started=()
cleanup() { for s in "${started[@]}"; do "$fixture" stop "$s" >/dev/null 2>&1 || true; done; }
trap cleanup EXIT

umask 077
key=$work/key
echo "3f1c0d6e8a2b4c5d9e7f00112233445566778899aabbccddeeff001122334455" >"$key"
start() { # STATE [extra pocld args]
  local state=$1
  shift
  POCLD_EXTRA_ARGS="$*" "$fixture" start "$state" "$pocld" "$build" || fail "cannot start pocld $*"
  started+=("$state")
}
client() { # STATE LOGFILE [env assignments...] ; vecadd 4096 through the pocld
  local state=$1 out=$2
  shift 2
  # POCL_DEBUG=err: the driver's refusal messages (POCL_MSG_ERR) are printed.
  env -u POCL_REMOTE_PSK -u POCL_REMOTE_PSK_FILE POCL_DEBUG=err "$@" \
    timeout -k 5 120 "$run_remote" "$state" "$build" "$vecadd" 4096 >"$out" 2>&1
}

# 1. A keyed pocld.
start "$work/keyed.state" --psk-file "$key"
klog=$(sed -n 's/^POCLD_LOG=//p' "$work/keyed.state")
client "$work/keyed.state" "$work/right_file.out" POCL_REMOTE_PSK_FILE="$key" \
  || fail "right key (file) refused: $(tail -n 3 "$work/right_file.out")"
grep -q "vecadd: verified 4096" "$work/right_file.out" || fail "right key (file): no verified run"
client "$work/keyed.state" "$work/right_env.out" POCL_REMOTE_PSK="$(cat "$key")" \
  || fail "right key (POCL_REMOTE_PSK) refused: $(tail -n 3 "$work/right_env.out")"
if client "$work/keyed.state" "$work/wrong.out" POCL_REMOTE_PSK=0123456789abcdef0123456789abcdef; then
  fail "a client with a wrong key was served"
fi
grep -q "does not prove our pre-shared key" "$work/wrong.out" \
  || fail "wrong key: no driver message; output: $(tail -n 3 "$work/wrong.out")"
grep -q "wrong pre-shared key" "$klog" || fail "wrong key: no pocld log line"
if client "$work/keyed.state" "$work/none.out"; then
  fail "a client without a key was served"
fi
grep -q "requires a pre-shared key" "$work/none.out" \
  || fail "no key: no driver message; output: $(tail -n 3 "$work/none.out")"
grep -q "client has no pre-shared key" "$klog" || fail "no key: no pocld log line"
client "$work/keyed.state" "$work/again.out" POCL_REMOTE_PSK_FILE="$key" \
  || fail "pocld did not serve a right key after the refusals"
echo "$name: right keys served, a wrong key and no key refused"

# 2. An impostor: a pocld without the key.
start "$work/open.state"
if client "$work/open.state" "$work/impostor.out" POCL_REMOTE_PSK_FILE="$key"; then
  fail "a client with a key used a server that does not know it"
fi
grep -q "does not prove our pre-shared key" "$work/impostor.out" \
  || fail "impostor: no driver message; output: $(tail -n 3 "$work/impostor.out")"
echo "$name: a client with a key refuses a server without it"

# 3. Peers with the same key.
POCLD_EXTRA_ARGS="--psk-file $key" POCL_REMOTE_PSK_FILE=$key \
  "$multi_sh" "$fixture" "$pocld" "$build" "$multi_client" "$work/multi" lanes \
  >"$work/multi.out" 2>&1 || fail "multi_server lanes with keys: $(tail -n 5 "$work/multi.out")"
grep -rqs "peer [0-9]* connected" "$work/multi" || fail "no authenticated peer link in the pocld logs"
bad='refused the connection|wrong pre-shared key|has no pre-shared key|does not prove'
if grep -Eqs "$bad" "$work/multi"/*.log; then
  fail "a peer link was refused: $(grep -Ehs "$bad" "$work/multi"/*.log | head -n 2)"
fi
echo "$name: two servers with the key link as peers"

# 4. Non-loopback addresses without a key: refused before anything is bound.
addrs=(0.0.0.0 ::)
own=$(hostname -I 2>/dev/null | tr ' ' '\n' | grep -v '^127\.\|^$' | head -n 1 || true)
[[ -n $own ]] && addrs+=("$own")
for a in "${addrs[@]}"; do
  out=$(env OCL_ICD_VENDORS="$build/ocl-vendors" POCL_BUILDING=1 timeout 60 \
        "$pocld" --address "$a" --port 1 2>&1)
  rc=$?
  [[ $rc == 1 ]] || fail "pocld --address $a without a key exited with $rc, not 1"
  grep -q "refusing to serve $a without a pre-shared key" <<<"$out" \
    || fail "pocld --address $a: no refusal message: $out"
done
echo "$name: non-loopback addresses without a key refused (${addrs[*]})"
echo "$name: PASS"
