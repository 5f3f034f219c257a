#!/usr/bin/env bash
# remote/pocld_malloc: the fixture's pocld runs on the malloc it was linked with (jemalloc
# where the build found it: pocld/CMakeLists.txt), as its listening line reports: the
# first of the running binary's libraries, in the dynamic linker's order, that defines
# malloc (a sanitizer's runtime in a sanitized pocld, tools/sanitize.sh).  When that binary
# is the build's own pocld, it is also the one the build chose (MALLOC: jemalloc or c).
#   test_pocld_malloc.sh STATE BUILD_POCLD MALLOC
set -euo pipefail
state=$1 build_pocld=$2 want=$3
get() { sed -n "s/^$1=//p" "$state" | head -n1; }
pid=$(get POCLD_PID) log=$(get POCLD_LOG)
exe=$(readlink -f "/proc/$pid/exe")
linked=
while read -r lib; do
  # grep reads all of nm's output: with -q it would stop at the first match and nm's
  # SIGPIPE fail the pipeline (pipefail).
  if nm -D --defined-only "$lib" 2>/dev/null | grep -w malloc >/dev/null; then
    linked=$(basename "$lib")
    break
  fi
done < <(ldd "$exe" | awk '$2 == "=>" && $3 ~ /^\// {print $3}')
if [[ -z $linked ]]; then
  echo "pocld_malloc: FAIL: no library of $exe (pid $pid) defines malloc; ldd says:"
  ldd "$exe" 2>&1
  exit 1
fi
line=$(grep -m1 'listening on' "$log")
[[ $line == *"malloc from $linked" ]] \
  || { echo "pocld_malloc: FAIL: $exe resolves malloc in $linked but logs: $line"; exit 1; }
if [[ $exe == "$(readlink -f "$build_pocld")" && $linked != lib$want.so* ]]; then
  echo "pocld_malloc: FAIL: the build chose $want, $exe links $linked"
  exit 1
fi
echo "pocld_malloc: PASS: $exe on ${line##*malloc from }"
