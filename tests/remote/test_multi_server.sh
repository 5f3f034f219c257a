#!/usr/bin/env bash
# remote/multi_server_*: one context over several pocld instances on loopback.
#   test_multi_server.sh FIXTURE POCLD BUILD_DIR CLIENT WORK_DIR MODE [MATMUL]
# MODE two:   two servers, one device each;
#      three: three servers, the first serving two devices (same-server
#             migrations go through the native runtime);
#      mixed: the local pthread device beside one server;
#      nvidia: two servers taking the paths they take on NVIDIA's OpenCL (a
#             waiter thread, pinned staging; doc/pocld.md), which their logs
#             must show (and a MIGRATE_IN's marker enqueued only when the
#             queue's next command came before the bytes), and the client's
#             and the servers' readers polling before they block as on
#             machines of more than two CPUs;
#      cut:   two servers, the client's connections to the first through
#             $FAULT_PROXY (tools/fault_proxy.cc) cutting at random, also while
#             migrations between the servers are under way: the client resumes its
#             session every time and every check must hold; at least 10 cuts.
#      lanes_four: four servers with 3 peer lanes each, and MATMUL at 1024, whose
#             4 MiB inputs go from the first server to the three others as
#             PUSHes in one PEER_DATA each while the first server's command
#             reader still works (a pusher that held its link waiting for its
#             reads hung the gather once);
#      lanes: two servers with 3 peer lanes (POCLD_PEER_LANES), --ucx off (an
#             RDMA host's auto would take UCX), and the client with 2 lanes, forced on
#             whatever the CPU count: also buffers of
#             1 to 64 MiB migrated there and back bit for bit and content
#             sizes in striped pushes (MULTI_SERVER_LARGE); the servers' logs
#             must show the lanes up and PEER_DATA striped over them.  The
#             peer link to the second server goes through $FAULT_PROXY (when
#             set), which cuts its lanes while the 64 MiB buffer moves.
#      ucx:   two servers with --ucx on (UCX_TLS=tcp) and the 1-64 MiB
#             migrations: their logs must show the peer link's large
#             payloads over UCX;
#      ucx_shm: the same over UCX's shared memory (UCX_TLS=sm,self);
#      ucx_cut: the same as ucx, UCX's own TCP connections destroyed (ss -K,
#             tests/remote/ucx_cut.py) while the 64 MiB buffer moves: the
#             rest comes over the peer link, neither lost nor doubled; the
#             client's payloads go over UCX too (POCL_REMOTE_UCX=1), whose
#             connections die with the rest: a payload that fails over UCX
#             comes again on TCP after a resume;
#      ucx_declined: the first server --ucx on, the second --ucx off: no
#             payload over UCX, all over the link, and UCX not even loaded
#             into the second;
#      ucx_refused: both --ucx on, and no payload over UCX all the same (for
#             test_tls.sh: TLS without --tls-allow-ucx);
#      ucx_three: the three servers of `three`, every one --ucx on over shared
#             memory (UCX_TLS=sm,self), with the large migrations: one
#             engine per session process serves all of its peer links;
#      peer_cut: two servers, the link between them through $FAULT_PROXY
#             cutting it at random (and the large migrations): the link
#             resumes every time (doc/reconnect.md, "Peer links") and every
#             check must hold; at least 5 cuts;
#      ucx_client: `ucx` with the client's own large payloads over UCX too
#             (POCL_REMOTE_UCX=1): writes, reads and completions' data;
#      ucx_client_shm: the same over UCX's shared memory;
#      ucx_client_cut: `cut` with UCX (UCX_TLS=tcp) for the client's payloads
#             and the large migrations: the client's session resumes while
#             UCX carries them, and each new data link negotiates UCX anew.
# Starts the servers with pocld_fixture.sh, runs CLIENT (test_multi_server) with
# POCL_DEVICES and POCL_REMOTE<i>_PARAMETERS naming every device, then the example
# MATMUL (examples/remote/matmul, checked against the CPU) over the same devices, and
# stops the servers.
set -u
if [[ $# -lt 6 || $# -gt 7 ]]; then
  sed -n '3,3p' "$0" | sed 's/^# //' >&2
  exit 2
fi
fixture=$1 pocld=$2 build=$3 client=$4 work=$5 mode=$6 matmul=${7:-}
name=multi_server_$mode
mkdir -p "$work"
states=()
cleanup() {
  local s
  for s in "${states[@]}"; do
    [[ -f $s ]] && "$fixture" stop "$s" >/dev/null 2>&1
  done
  return 0
}
trap 'cleanup; [[ -n ${proxy_pid:-} ]] && kill "$proxy_pid" 2>/dev/null' EXIT
trap 'echo "$name: FAIL: interrupted"; exit 1' INT TERM


case $mode in
  two|cut) served=("pthread" "pthread"); devices="remote remote"; params=("0/0" "1/0") ;;
  peer_cut) served=("pthread" "pthread"); devices="remote remote"; params=("0/0" "1/0")
            export MULTI_SERVER_LARGE=1 POCLD_LOG_LEVEL=debug ;;
  nvidia) served=("pthread" "pthread"); devices="remote remote"; params=("0/0" "1/0")
          export POCLD_COMPLETION=wait POCLD_STAGING=pinned POCLD_LOG_LEVEL=debug
          export POCLD_SPIN_US=100 POCL_REMOTE_SPIN_US=50 ;;
  three) served=("pthread pthread" "pthread" "pthread")
         devices="remote remote remote remote"; params=("0/0" "0/1" "1/0" "2/0") ;;
  mixed) served=("pthread"); devices="remote pthread"; params=("0/0") ;;
  lanes_four) served=("pthread" "pthread" "pthread" "pthread")
              devices="remote remote remote remote"; params=("0/0" "1/0" "2/0" "3/0")
              export POCLD_PEER_LANES=3 POCLD_LOG_LEVEL=debug
              extra=("--ucx off" "--ucx off" "--ucx off" "--ucx off")
              matmul_n=1024 ;;
  lanes) served=("pthread" "pthread"); devices="remote remote"; params=("0/0" "1/0")
         export POCLD_PEER_LANES=3 POCL_REMOTE_LANES=2 POCLD_LOG_LEVEL=debug
         export MULTI_SERVER_LARGE=1
         extra=("--ucx off" "--ucx off") ;;
  ucx*) served=("pthread" "pthread"); devices="remote remote"; params=("0/0" "1/0")
        extra=("--ucx on" "--ucx on")
        [[ $mode == ucx_declined ]] && extra=("--ucx on" "--ucx off")
        if [[ $mode == ucx_three ]]; then
          served=("pthread pthread" "pthread" "pthread")
          devices="remote remote remote remote"; params=("0/0" "0/1" "1/0" "2/0")
          extra=("--ucx on" "--ucx on" "--ucx on")
        fi
        export UCX_TLS=tcp POCLD_LOG_LEVEL=debug MULTI_SERVER_LARGE=1
        [[ $mode == ucx_client* || $mode == ucx_cut ]] && export POCL_REMOTE_UCX=1
        [[ $mode == ucx_shm || $mode == ucx_three || $mode == ucx_client_shm ]] &&
          export UCX_TLS=sm,self ;;
  *) echo "$name: FAIL: unknown mode $mode"; exit 2 ;;
esac

ports=()
for i in "${!served[@]}"; do
  # Recorded before the start, in this shell, so that cleanup stops it.
  state=$work/$name-$i.state
  states+=("$state")
  # The mode's arguments after the caller's (test_auth.sh's keys, ...).
  if ! POCLD_SERVED_DEVICES=${served[$i]} \
      POCLD_EXTRA_ARGS="${POCLD_EXTRA_ARGS:-} ${extra[$i]:-}" \
      "$fixture" start "$state" "$pocld" "$build" >&2; then
    echo "$name: FAIL: server $i did not start"
    exit 1
  fi
  ports+=("$(sed -n 's/^POCLD_PORT=//p' "$state" | head -n1)")
done
# A check that hangs prints the servers' stacks while they still wait.
export REMOTE_TEST_ON_HANG="env -u LD_PRELOAD $(printf '%q ' "$fixture" stacks "${states[@]}")"
if [[ $mode == ucx_declined ]]; then
  # UCX is loaded where --ucx may use it, and only there (protocol/transports/ucx/pocl_remote_ucx.c).
  for i in 0 1; do
    maps=/proc/$(sed -n 's/^POCLD_PID=//p' "${states[$i]}")/maps
    if grep -q 'libucp\.so' "$maps"; then loaded=1; else loaded=0; fi
    if ((loaded != (i == 0))); then
      echo "$name: FAIL: server $i (${extra[$i]}) has UCX loaded: $loaded"
      exit 1
    fi
  done
fi
export POCL_DEVICES=$devices OCL_ICD_VENDORS=$build/ocl-vendors POCL_BUILDING=1
for i in "${!params[@]}"; do
  srv=${params[$i]%%/*} dev=${params[$i]#*/}
  export "POCL_REMOTE${i}_PARAMETERS=127.0.0.1:${ports[$srv]}/$dev"
done
# Without $FAULT_PROXY (test_auth.sh, test_tls.sh: which the proxy cannot
# follow) the lanes are not cut.
lane_cut=
[[ $mode == lanes && -n ${FAULT_PROXY:-} ]] && lane_cut=1
if [[ -n $lane_cut ]]; then
  # The second server's peer port through the proxy (the first server dials
  # the link); no cut but the one the client asks for.
  plog=$work/$name.proxy.log pfile=$work/$name.proxy.port pctl=$work/$name.proxy.ctl
  rm -f "$pfile" "$pctl"
  "$FAULT_PROXY" --target "127.0.0.1:$((ports[1] + 2))" --listen-port 0 \
    --port-file "$pfile" --control "$pctl" >"$plog" 2>&1 &
  proxy_pid=$!
  for _ in $(seq 1 100); do
    [[ -s $pfile && -S $pctl ]] && break
    sleep 0.1
  done
  pport=$(sed -n 's/^PROXY_PORT=//p' "$pfile")
  [[ -n $pport ]] || { echo "$name: FAIL: the proxy did not start"; exit 1; }
  export "POCL_REMOTE1_PARAMETERS=127.0.0.1:${ports[1]}/0#127.0.0.1:$pport"
  export MULTI_SERVER_LANE_CUT=$pctl
fi
if [[ $mode == ucx_cut ]]; then
  # Answers the client's "cut lanes" by destroying UCX's connections.
  pctl=$work/$name.ucxcut.ctl plog=$work/$name.ucxcut.log
  rm -f "$pctl"
  listeners=$(for s in "${states[@]}"; do sed -n 's/^POCLD_PID=//p' "$s"; done | paste -sd,)
  pocld_ports=$(for p in "${ports[@]}"; do echo "$p,$((p + 1)),$((p + 2))"; done | paste -sd,)
  python3 "$(dirname "$0")/ucx_cut.py" "$pctl" "$listeners" "$pocld_ports" >"$plog" 2>&1 &
  proxy_pid=$!
  for _ in $(seq 1 100); do
    [[ -S $pctl ]] && break
    sleep 0.1
  done
  [[ -S $pctl ]] || { echo "$name: FAIL: ucx_cut.py did not start"; exit 1; }
  export MULTI_SERVER_LANE_CUT=$pctl
fi
# Starts $FAULT_PROXY cutting at random in front of 127.0.0.1:$1 (the rest
# of the arguments: its options); sets plog, proxy_pid and pport.
start_random_proxy() {
  local target=$1 pfile=$work/$name.proxy.port
  shift
  plog=$work/$name.proxy.log
  rm -f "$pfile"
  "$FAULT_PROXY" --target "127.0.0.1:$target" --listen-port 0 --port-file "$pfile" "$@" \
    >"$plog" 2>&1 &
  proxy_pid=$!
  for _ in $(seq 1 100); do
    [[ -s $pfile ]] && break
    sleep 0.1
  done
  pport=$(sed -n 's/^PROXY_PORT=//p' "$pfile")
  [[ -n $pport ]] || { echo "$name: FAIL: the proxy did not start"; exit 1; }
}
if [[ $mode == peer_cut ]]; then
  # The second server's peer port through the proxy (the first server dials
  # the link), cutting at random after the first messages.
  start_random_proxy $((ports[1] + 2)) --seed 7 --random 0.1,after=10
  export "POCL_REMOTE1_PARAMETERS=127.0.0.1:${ports[1]}/0#127.0.0.1:$pport"
fi
if [[ $mode == cut || $mode == ucx_client_cut ]]; then
  # The first server through the proxy; its peers still reach it directly.
  start_random_proxy "${ports[0]}" --seed 11 --random 0.08,sock=any,dir=any,after=60
  export "POCL_REMOTE0_PARAMETERS=127.0.0.1:$pport/0#127.0.0.1:$((ports[0] + 2))"
  # A message cut on its way is sent again after the resume: byte counts grow.
  export MULTI_SERVER_CUTS=1
fi
timeout -k 5 400 "$client"
rc=$?
if [[ $rc == 0 && -n $matmul ]]; then
  timeout -k 5 300 "$matmul" "${matmul_n:-128}" 0 1
  rc=$?
fi
if [[ ($mode == cut || $mode == ucx_client_cut) && $rc == 0 ]]; then
  cuts=$(grep -c '^fault_proxy: cut ' "$plog")
  echo "$name: the proxy made $cuts cuts"
  if ((cuts < 10)); then
    echo "$name: FAIL: only $cuts cuts"
    exit 1
  fi
fi
if [[ $mode == peer_cut && $rc == 0 ]]; then
  logs=()
  for s in "${states[@]}"; do logs+=("${s%.state}.log"); done
  cuts=$(grep -c '^fault_proxy: cut ' "$plog")
  resumed=$(cat "${logs[@]}" | grep -c "link resumed")
  echo "$name: the proxy made $cuts cuts of the peer link; $resumed resumes logged"
  grep -h "sent .* messages again" "${logs[@]}" | sort | uniq -c | sort -rn | head -3 | sed "s/^/$name: /"
  # Cuts inside a resume's own handshake resume nothing: each end logs one
  # line per link resumed, and at least 5 must have been.
  if ((cuts < 5 || resumed < 10)); then
    echo "$name: FAIL: $cuts cuts (at least 5), $resumed resumes logged (at least 10)"
    exit 1
  fi
fi
if [[ $mode == lanes_four && $rc == 0 ]]; then
  logs=()
  for s in "${states[@]}"; do logs+=("${s%.state}.log"); done
  whole=$(cat "${logs[@]}" | grep -c "4194304 bytes for [0-9]* striped over 3 peer lanes")
  echo "$name: $whole PEER_DATA of 4 MiB striped whole"
  ((whole >= 6)) || { echo "$name: FAIL: fewer than 6 PUSHes of 4 MiB in one striped PEER_DATA"; exit 1; }
fi
if [[ $mode == lanes && $rc == 0 ]]; then
  logs=()
  for s in "${states[@]}"; do logs+=("${s%.state}.log"); done
  if ! grep -q "peer [0-9]*: 3 of 3 lanes" "${logs[@]}"; then
    echo "$name: FAIL: no server opened its 3 peer lanes"
    rc=1
  fi
  for s in "${logs[@]}"; do
    if ! grep -q "bytes for [0-9]* striped over 3 peer lanes" "$s"; then
      echo "$name: FAIL: $s shows no PEER_DATA striped over the peer lanes"
      rc=1
    fi
  done
  if [[ -n $lane_cut ]] && ! grep -q "cut [a-z]*#[0-9]* (control socket)" "$plog"; then
    echo "$name: FAIL: the proxy cut no peer lane"
    rc=1
  fi
  grep -h "a lane failed\|sent again" "${logs[@]}" | sed "s/^/$name: /"
  [[ $rc != 0 && -n $lane_cut ]] && tail -n 20 "$plog"
  ((rc == 0)) || exit 1
fi
if [[ $mode == ucx* && $rc == 0 ]]; then
  logs=()
  for s in "${states[@]}"; do logs+=("${s%.state}.log"); done
  over=$(cat "${logs[@]}" | grep -c "bytes for [0-9]* over UCX")
  if [[ $mode == ucx_declined || $mode == ucx_refused ]]; then
    if ((over > 0)) || grep -q "large payloads over UCX" "${logs[@]}"; then
      echo "$name: FAIL: a payload went over UCX that one end declined"
      rc=1
    fi
  else
    for s in "${logs[@]}"; do
      if ! grep -q "large payloads over UCX" "$s"; then
        echo "$name: FAIL: $s shows no peer link over UCX"
        rc=1
      fi
    done
    ((over > 0)) || { echo "$name: FAIL: no PEER_DATA went over UCX"; rc=1; }
    echo "$name: $over PEER_DATA over UCX ($UCX_TLS)"
  fi
  if [[ $mode == ucx_client* ]]; then
    for s in "${logs[@]}"; do
      if ! grep -q "client data link: payloads over UCX" "$s"; then
        echo "$name: FAIL: $s shows no client data link over UCX"
        rc=1
      fi
    done
    from=$(cat "${logs[@]}" | grep -c "from the client over UCX")
    to=$(cat "${logs[@]}" | grep -c "to the client over UCX")
    # Cut, the first server's connection goes on over TCP after its first
    # resume: the client's payloads may go over UCX one way only.
    if [[ $mode == ucx_client_cut ]]; then both=$((from + to > 0)); else both=$((from > 0 && to > 0)); fi
    if ((!both)); then
      echo "$name: FAIL: client payloads over UCX: $from in, $to out"
      rc=1
    fi
    echo "$name: client payloads over UCX: $from in, $to out"
  fi
  if [[ $mode == ucx_cut ]]; then
    grep -q "ucx_cut: cut [1-9]" "$plog" || { echo "$name: FAIL: no UCX connection cut"; rc=1; }
    if ! grep -q "UCX failed under migration" "${logs[@]}"; then
      echo "$name: FAIL: no migration saw UCX fail"
      rc=1
    fi
    grep -h "UCX failed\|sent again" "${logs[@]}" | sed "s/^/$name: /"
    # The client's UCX connections die with the servers': its sessions
    # resume (a payload failed over UCX) or its payloads go on TCP.
    echo "$name: $(cat "${logs[@]}" | grep -c "resumes the session") client resumes after the UCX cut"
  fi
  ((rc == 0)) || exit 1
fi
if [[ $mode == nvidia && $rc == 0 ]]; then
  logs=()
  for s in "${states[@]}"; do
    logs+=("${s%.state}.log")
    if ! grep -q "pinned [0-9]* bytes of staging" "${s%.state}.log"; then
      echo "$name: FAIL: ${s%.state}.log shows no pinned staging"
      exit 1
    fi
  done
  # migrate_then_use's kernels come before the bytes they wait for: their
  # queue's MIGRATE_IN markers were enqueued only then (order_gates).
  gates=$(cat "${logs[@]}" | grep -c "marker waits for migrations still coming")
  echo "$name: $gates markers enqueued for migrations still coming"
  if ((gates == 0)); then
    echo "$name: FAIL: no command came before its queue's migrated bytes"
    exit 1
  fi
fi
if [[ $rc != 0 ]]; then
  [[ $mode == cut || $mode == ucx_client_cut || $mode == peer_cut ]] && tail -n 20 "$plog"
  for s in "${states[@]}"; do
    echo "--- ${s%.state}.log (last lines)"; tail -n 20 "${s%.state}.log" 2>/dev/null
  done
  echo "$name: FAIL: client exit status $rc"
  exit 1
fi
echo "$name: PASS"
