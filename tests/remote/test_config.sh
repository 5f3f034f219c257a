#!/usr/bin/env bash
# remote/pocld_config: pocld's configuration file (doc/pocld.md, "Configuration file").
#   test_config.sh FIXTURE POCLD BUILD_DIR WORK_DIR
# The options come from `pocld --help`, so an option added later is covered here too
# (it needs a sample value below for its value's name).
# 1. One file with every option (comments, blanks, a boolean as a bare key): pocld
#    starts with it; its listening line shows the file's values, and the command line's
#    --port (the fixture's) over the file's.
# 2. Each option with a bad value, an unknown key, a key given twice, a command-line-only
#    key, a missing file: exit status 2 at once, and a message naming the file and line.
# PASS/FAIL line on stdout; exit 0 only on PASS.
set -u

name=pocld_config
if [[ $# -ne 4 ]]; then
  sed -n '3,3p' "$0" | sed 's/^# //' >&2
  exit 2
fi
fixture=$1 pocld=$2 build=$3 work=$4
rm -rf "$work"
mkdir -p "$work"
fail() { echo "$name: FAIL: $*"; exit 1; }
state=$work/all.state
trap '"$fixture" stop "$state" >/dev/null 2>&1' EXIT

umask 077
echo "3f1c0d6e8a2b4c5d9e7f00112233445566778899aabbccddeeff001122334455" >"$work/key"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=pocld \
  -addext subjectAltName=IP:127.0.0.1 -keyout "$work/tls.key" -out "$work/tls.pem" \
  >/dev/null 2>&1 || fail "openssl: cannot make a certificate"

# OPTION METAVAR per line, from --help ("  --port P  ...", "  --insecure  ...").
opts=$(env OCL_ICD_VENDORS=/nonexistent "$pocld" --help | sed -nE 's/^  --([a-z-]+)( ([A-Z]+))? .*/\1 \3/p')
[[ $(wc -l <<<"$opts") -ge 10 ]] || fail "too few options in --help: $opts"
good() { # OPTION METAVAR: a valid value
  case "$1:$2" in
    address:A) echo 127.0.0.1 ;;
    port:P) echo 39990 ;;
    peer-port:Q) echo 39997 ;;
    max-sessions:N) echo 7 ;;
    max-pending:C) echo 100 ;;
    session-grace:S) echo 5 ;;
    log-level:L) echo debug ;;
    psk-file:F) echo "$work/key" ;;
    tls-cert:F | tls-ca:F) echo "$work/tls.pem" ;;
    tls-key:F) echo "$work/tls.key" ;;
    trace:PREFIX) echo "$work/trace" ;;
    ucx:MODE) echo on ;;
    advertise-name:NAME) echo "pocld config test" ;;
    *) fail "no sample value for --$1 $2: add one to test_config.sh" ;;
  esac
}
bad() { # METAVAR: a value that must be refused ("" when every value is valid)
  case "$1" in
    P | Q | N | C | S) echo 0x10 ;;
    L) echo loud ;;
    MODE) echo sometimes ;;
    A | F | NAME) echo '' ;;
    *) echo '-' ;;
  esac
}

# 1. Every option in one file.
conf=$work/all.conf
{
  echo "# every option of pocld --help"
  echo
  while read -r opt meta; do
    case "$opt" in config | help) continue ;; esac
    if [[ -z $meta ]]; then
      echo "$opt"
    else
      echo "$opt = $(good "$opt" "$meta")   # a comment after the value"
    fi
  done <<<"$opts"
} >"$conf"
POCLD_EXTRA_ARGS="--config $conf" POCLD_LOG_LEVEL=info "$fixture" start "$state" "$pocld" "$build" \
  || fail "pocld did not start with $conf: $(cat "$conf")"
log=$(sed -n 's/^POCLD_LOG=//p' "$state")
port=$(sed -n 's/^POCLD_PORT=//p' "$state")
line=$(grep -m1 'listening on' "$log")
want="listening on 127.0.0.1 ports $port \(commands\), $((port + 1)) \(data\) and 39997 \(peers\), [0-9]+ devices, at most 7 sessions, pre-shared key required, TLS required"
grep -Eq "$want" <<<"$line" || fail "listening line: '$line', wanted /$want/"
# The fixture's --log-level info, too, wins over the file's debug.
if grep -q "pocld debug" "$log"; then fail "log-level: the file's debug over --log-level info"; fi
"$fixture" stop "$state" || fail "pocld did not stop cleanly"
echo "$name: every option from one file; the command line's --port and --log-level over the file's"

# 2. Refusals: exit status 2 before anything else, the file and line named.
refuse() { # WHAT CONTENT PATTERN [pocld args]
  local what=$1 content=$2 pattern=$3 out rc
  shift 3
  printf '# line 1\n\n%s\n' "$content" >"$work/bad.conf"
  out=$(env OCL_ICD_VENDORS=/nonexistent timeout 20 "$pocld" --config "$work/bad.conf" "$@" 2>&1)
  rc=$?
  [[ $rc == 2 ]] || fail "$what: exit status $rc, not 2: $out"
  grep -Fq -- "$pattern" <<<"$out" || fail "$what: '$out' does not say '$pattern'"
}
n=0
while read -r opt meta; do
  case "$opt" in config | help) continue ;; esac
  if [[ -z $meta ]]; then
    refuse "$opt = maybe" "$opt = maybe" "pocld: $work/bad.conf:3: $opt: 'maybe' is not true or false"
  else
    v=$(bad "$meta")
    [[ $v == - ]] && continue
    refuse "$opt = '$v'" "$opt = $v" "pocld: $work/bad.conf:3: $opt: "
  fi
  n=$((n + 1))
done <<<"$opts"
refuse "an unknown key" "bogus = 1" "pocld: $work/bad.conf:3: unknown option 'bogus'"
refuse "a key twice" "$(printf 'port = 1000\nport = 1001')" \
  "pocld: $work/bad.conf:4: port given again (first on line 3)"
refuse "config in the file" "config = /etc/pocld.conf" \
  "pocld: $work/bad.conf:3: not an option of the configuration file 'config'"
refuse "a value missing" "port" "pocld: $work/bad.conf:3: port needs '= value'"
refuse "a bad command line over a good file" "port = 1000" "pocld: --port: bad port 'x'" --port x
out=$(env OCL_ICD_VENDORS=/nonexistent timeout 20 "$pocld" --config "$work/none.conf" 2>&1)
rc=$?
[[ $rc == 2 ]] || fail "a missing --config file: exit status $rc, not 2"
grep -q "cannot read the configuration file $work/none.conf" <<<"$out" \
  || fail "a missing --config file: '$out'"
echo "$name: $n bad values and 5 bad files refused with the file and line"
echo "$name: PASS"
