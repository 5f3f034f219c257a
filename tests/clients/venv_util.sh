# venv_util.sh - sourced by setup_clients.sh and setup_sycl.sh, which each make a venv of
# their own with pinned wheels.
#   logged COMMAND [ARGS...]: the step's output into $log; on failure, the log's last
#     lines, "$name: FAILED" and exit 1.
#   debian_python: Debian's python3 (python3-venv), not whatever python3 comes first on
#     PATH: the same interpreter on every Debian 12 machine, so the pinned cp311 wheels fit.
logged() {
  echo "# $*" >>"$log"
  if ! "$@" >>"$log" 2>&1; then
    tail -n 40 "$log" >&2
    echo "$name: FAILED: $(basename "$1") ${2:-} (log: $log)" >&2
    exit 1
  fi
}
debian_python() {
  if [[ -x /usr/bin/python3 ]]; then echo /usr/bin/python3; else command -v python3; fi
}
