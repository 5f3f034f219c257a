#!/usr/bin/env bash
# remote/layering: the client driver's channel (lib/CL/devices/remote/channel, and the
# client's sides of the transports, protocol/transports/*/client_*.c) includes no
# header of the driver above it, and the driver includes of the channel only its
# public header, channel/remote_channel.h (lib/CL/devices/remote/README.md); and no
# file of the driver (both layers) calls into a file that calls it, directly or around
# a cycle, nor includes a header around one (call_graph.py, which derives the graph).
#   test_layering.sh REMOTE_DRIVER_DIR PROTOCOL_DIR
# PASS/FAIL line on stdout; exit 0 only on PASS.
set -u -o pipefail
name=layering
if [[ $# -ne 2 || ! -d $1/channel || ! -d $2/transports ]]; then
  sed -n 's/^#   /usage: /p' "$0" >&2
  exit 2
fi
dir=$1
protocol=$2
includes() { sed -nE 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]([^>"]+)[>"].*/\1/p' "$1"; }
driver_headers=$(cd "$dir" && ls -- *.h)
channel_private=$(cd "$dir/channel" && ls -- *.h | grep -vx remote_channel.h)
client_transports=$(cd "$protocol" && ls -- transports/*/client_*.[ch] 2>/dev/null)
if [[ -z $client_transports ]]; then
  echo "$name: FAIL: no client transports in $protocol/transports"
  exit 1
fi
fail=0
for f in "$dir"/channel/*.[ch] $(sed "s|^|$protocol/|" <<<"$client_transports"); do
  for inc in $(includes "$f"); do
    if [[ $inc == ../* ]] || grep -qxF -- "${inc##*/}" <<<"$driver_headers"; then
      echo "$name: ${f#"$dir"/} includes the driver's $inc"
      fail=1
    fi
  done
done
for f in "$dir"/*.[ch]; do
  for inc in $(includes "$f"); do
    if grep -qxF -- "${inc##*/}" <<<"$channel_private"; then
      echo "$name: ${f#"$dir"/} includes the channel's own $inc"
      fail=1
    fi
  done
done
if [[ $fail -ne 0 ]]; then
  echo "$name: FAIL: a header across the layers (see above)"
  exit 1
fi
if ! python3 "$(dirname "$0")/call_graph.py" "$dir" "$protocol" | sed "s/^/$name: /"; then
  echo "$name: FAIL: files that call each other (see above)"
  exit 1
fi
echo "$name: PASS"
