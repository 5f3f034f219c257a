#!/usr/bin/env bash
# remote/reload: pocld as systemd runs it: readiness over $NOTIFY_SOCKET and reloads of
# its key and TLS files on SIGHUP, with pocld processes of its own.
#   test_reload.sh FIXTURE RUN_REMOTE POCLD BUILD_DIR VECADD PROXY CLIENT WORK_DIR
# A. A pre-shared key, $NOTIFY_SOCKET a path: READY=1 arrives once pocld listens. A
#    client (CLIENT, through fault_proxy) runs a round with the old key; the key file
#    is replaced and pocld gets SIGHUP (RELOADING=1, then READY=1): a new client needs
#    the new key, the old one is refused; the old client's connections are cut and its
#    session resumes (data socket and resume checked by the listener against that
#    session's key) and runs a second round. A reload with a broken key file keeps the
#    new key and logs why. SIGTERM: STOPPING=1.
# B. The same with TLS and a key, $NOTIFY_SOCKET an abstract name: after the swap to a
#    certificate of another CA, new clients must trust that CA (the new certificate is
#    served) and prove the new key; the old session resumes with its certificate and key;
#    a broken certificate file keeps the new ones.
# PASS/FAIL line on stdout; exit 0 only on PASS.
set -u

name=reload
if [[ $# -ne 8 ]]; then
  sed -n '4,4p' "$0" | sed 's/^# //' >&2
  exit 2
fi
fixture=$1 run_remote=$2 pocld=$3 build=$4 vecadd=$5 proxy=$6 client_bin=$7 work=$8
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
rm -rf "$work"
mkdir -p "$work"
fail() { echo "$name: FAIL: $*"; exit 1; }
pids=() states=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  for s in "${states[@]}"; do "$fixture" stop "$s" >/dev/null 2>&1 || true; done
}
trap cleanup EXIT
command -v openssl >/dev/null || fail "no openssl command"

umask 077
echo "3f1c0d6e8a2b4c5d9e7f00112233445566778899aabbccddeeff001122334455" >"$work/key1"
echo "a5a5a5a5b6b6b6b6c7c7c7c7d8d8d8d8e9e9e9e9f0f0f0f0010101011212121" >"$work/key2"
ca() { # NAME: a CA and a certificate it signs for 127.0.0.1 (NAME.pem, NAME-server.*)
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
    -subj "/CN=$1" -keyout "$work/$1.key" -out "$work/$1.pem" >/dev/null 2>&1 \
    && openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=pocld" \
      -keyout "$work/$1-server.key" -out "$work/$1-server.csr" >/dev/null 2>&1 \
    && openssl x509 -req -in "$work/$1-server.csr" -CA "$work/$1.pem" \
      -CAkey "$work/$1.key" -CAcreateserial -days 2 -extfile <(echo subjectAltName=IP:127.0.0.1) \
      -out "$work/$1-server.pem" >/dev/null 2>&1 || fail "openssl: cannot make $1"
}
ca ca1
ca ca2

# Polls (10 s) until FILE has a line matching the regex.
wait_for() { # FILE REGEX WHAT
  for _ in $(seq 1 100); do
    grep -Eq -- "$2" "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  fail "$3: no line /$2/ in $1 within 10 s: $(tail -n 5 "$1" 2>/dev/null)"
}
count() { grep -Ec -- "$2" "$1" 2>/dev/null; }
client() { # STATE OUT [env...] ; vecadd 4096
  local state=$1 out=$2
  shift 2
  env -u POCL_REMOTE_PSK -u POCL_REMOTE_PSK_FILE -u POCL_REMOTE_TLS -u POCL_REMOTE_TLS_CA \
    POCL_DEBUG=err "$@" timeout -k 5 120 "$run_remote" "$state" "$build" "$vecadd" 4096 \
    >"$out" 2>&1
}
served() { # WHAT STATE OUT [env...]
  local what=$1
  shift
  client "$@" || fail "$what: refused: $(tail -n 3 "$2")"
  grep -q "vecadd: verified 4096" "$2" || fail "$what: no verified run: $(tail -n 3 "$2")"
}
refused() { # WHAT STATE OUT [env...]
  local what=$1 rc
  shift
  client "$@"
  rc=$?
  [[ $rc != 0 ]] || fail "$what: served"
  [[ $rc != 124 && $rc != 137 ]] || fail "$what: the client hung"
}

# One phase: PHASE SOCKET START_ARGS OLD_ENV NEW_ENV WRONG_KEY_ENV [WRONG_CA_ENV]
# (env lists are space-separated assignments; the files under $work/$PHASE.* are the
# ones pocld reads, swapped by swap_PHASE).
phase() {
  local ph=$1 sock=$2 args=$3 old=$4 new=$5 wrong_key=$6 wrong_ca=${7:-}
  local state=$work/$ph.state notes=$work/$ph.notify log pid pstate=$work/$ph.proxy.state
  # The pocld log's name is known before it starts (the fixture's STATE.log).
  python3 "$here/notify_listen.py" "$sock" "$notes" "$work/$ph.log" &
  pids+=($!)
  for _ in $(seq 1 50); do [[ -e $notes ]] && break; sleep 0.1; done
  [[ -e $notes ]] || fail "$ph: the notify listener did not start"
  NOTIFY_SOCKET=$sock POCLD_EXTRA_ARGS="$args" "$fixture" start "$state" "$pocld" "$build" \
    || fail "$ph: cannot start pocld $args"
  states+=("$state")
  log=$(sed -n 's/^POCLD_LOG=//p' "$state")
  pid=$(sed -n 's/^POCLD_PID=//p' "$state")
  wait_for "$notes" '^READY=1 \| STATUS=listening on .*\[listening\]$' "$ph: readiness"
  [[ $(head -n 1 "$notes") == READY=1* ]] || fail "$ph: a notification before READY=1: $(head -n 1 "$notes")"

  # The old client: round 0 through the proxy.
  "$proxy" --target "127.0.0.1:$(sed -n 's/^POCLD_PORT=//p' "$state")" --listen-port 0 \
    --port-file "$work/$ph.proxy.port" >"$work/$ph.proxy.log" 2>&1 &
  local proxy_pid=$!
  pids+=($proxy_pid)
  wait_for "$work/$ph.proxy.port" '^PROXY_PORT=' "$ph: proxy"
  sed "s/^POCLD_PORT=.*/POCLD_PORT=$(sed -n 's/^PROXY_PORT=//p' "$work/$ph.proxy.port")/" \
    "$state" >"$pstate"
  env $old POCL_DEBUG=err timeout -k 5 180 "$run_remote" "$pstate" "$build" "$client_bin" \
    "$work/$ph.gate" 2 262144 >"$work/$ph.old.out" 2>&1 &
  local old_pid=$!
  pids+=($old_pid)
  wait_for "$work/$ph.old.out" 'round 0 verified' "$ph: the old client's first round"

  # The swap and SIGHUP (the unit's ExecReload=/bin/kill -HUP $MAINPID).
  "swap_$ph"
  kill -HUP "$pid"
  wait_for "$log" 'reloaded the .*new sessions use them' "$ph: reload"
  wait_for "$notes" '^READY=1( \[listening\])?$' "$ph: READY=1 after the reload"
  grep -Eq '^RELOADING=1 \| MONOTONIC_USEC=[0-9]+( \[listening\])?$' "$notes" || fail "$ph: no RELOADING=1"
  served "$ph: a new client with the new files" "$state" "$work/$ph.new.out" $new
  refused "$ph: a new client with the old key" "$state" "$work/$ph.wrong_key.out" $wrong_key
  # The session logs the refusal after the client has seen the socket close.
  wait_for "$log" "wrong pre-shared key" "$ph: old key: pocld's log line"
  if [[ -n $wrong_ca ]]; then
    refused "$ph: a new client trusting the old CA only" "$state" "$work/$ph.wrong_ca.out" $wrong_ca
    grep -q "certificate verify failed" "$work/$ph.wrong_ca.out" \
      || fail "$ph: old CA: no driver message: $(tail -n 3 "$work/$ph.wrong_ca.out")"
  fi

  # The old session: cut, resumed, a second round.
  local resumes
  resumes=$(count "$log" 'resumed from')
  kill -USR1 "$proxy_pid"
  touch "$work/$ph.gate.1"
  wait "$old_pid" || fail "$ph: the old client failed: $(tail -n 5 "$work/$ph.old.out")"
  grep -q 'round 1 verified' "$work/$ph.old.out" || fail "$ph: no second round"
  grep -q '^fault_proxy: cut ' "$work/$ph.proxy.log" || fail "$ph: the proxy cut nothing"
  [[ $(count "$log" 'resumed from') -gt $resumes ]] \
    || fail "$ph: the old session was not resumed: $(tail -n 5 "$log")"
  echo "$name: $ph: reloaded; new clients need the new files, the old session goes on"

  # A broken reload keeps what is in use.
  "break_$ph"
  kill -HUP "$pid"
  wait_for "$log" 'reload failed: keeping the key and certificates in use' "$ph: broken reload"
  served "$ph: a new client after a broken reload" "$state" "$work/$ph.after.out" $new
  echo "$name: $ph: a broken reload keeps the files in use"

  "$fixture" stop "$state" || fail "$ph: pocld did not stop cleanly"
  wait_for "$notes" '^STOPPING=1( \[listening\])?$' "$ph: stop"
}

cp "$work/key1" "$work/A.psk"
swap_A() { cp "$work/key2" "$work/A.psk"; }
break_A() { echo short >"$work/A.psk"; }
phase A "$work/A.sock" "--psk-file $work/A.psk" \
  "POCL_REMOTE_PSK_FILE=$work/key1" "POCL_REMOTE_PSK_FILE=$work/key2" \
  "POCL_REMOTE_PSK_FILE=$work/key1"
grep -q "the pre-shared key in $work/A.psk must have" "$work/A.log" \
  || fail "A: the broken reload did not say why"

cp "$work/key1" "$work/B.psk"
cp "$work/ca1-server.pem" "$work/B.pem"
cp "$work/ca1-server.key" "$work/B.key"
swap_B() {
  cp "$work/key2" "$work/B.psk"
  cp "$work/ca2-server.pem" "$work/B.pem"
  cp "$work/ca2-server.key" "$work/B.key"
}
break_B() { echo "not a certificate" >"$work/B.pem"; }
tls=POCL_REMOTE_TLS=1
phase B "@pocld-reload-$$" "--psk-file $work/B.psk --tls-cert $work/B.pem --tls-key $work/B.key" \
  "$tls POCL_REMOTE_TLS_CA=$work/ca1.pem POCL_REMOTE_PSK_FILE=$work/key1" \
  "$tls POCL_REMOTE_TLS_CA=$work/ca2.pem POCL_REMOTE_PSK_FILE=$work/key2" \
  "$tls POCL_REMOTE_TLS_CA=$work/ca2.pem POCL_REMOTE_PSK_FILE=$work/key1" \
  "$tls POCL_REMOTE_TLS_CA=$work/ca1.pem POCL_REMOTE_PSK_FILE=$work/key2"
grep -q "TLS: cannot use the certificate $work/B.pem" "$work/B.log" \
  || fail "B: the broken reload did not say why"
echo "$name: PASS"
