// main.cc - pocld, the PoCL-R server daemon: command line, signals, startup.
#include "control.hh"
#include "log.hh"
#include "pocl_remote_auth.h"
#include "server.hh"
#include "session.hh"
#include "tls.hh"
#include "trace.hh"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <netdb.h>
#include <netinet/in.h>
#include <string>
#include <unistd.h>

namespace {

constexpr long kDefaultSessions = 64;
constexpr long kSessionsCap = 4096;
constexpr long kPendingCap = 1L << 24;
constexpr long kGraceCapS = 86400;

volatile sig_atomic_t g_stop = 0;

void on_signal(int) { g_stop = 1; }
// Only interrupts the listener's poll, which then reaps.
void on_child(int) {}

void usage(FILE *out)
{
  fprintf(out,
          "usage: pocld [--address A] [--port P] [--peer-port Q] "
          "[--max-sessions N] [--max-pending C] [--psk-file F] "
          "[--insecure]\n             [--session-grace S] [--tls-cert F "
          "--tls-key F [--tls-ca F]]\n             [--log-level L] "
          "[--trace PREFIX]\n"
          "Serves this host's OpenCL devices to PoCL-R clients, each "
          "session in a\nprocess of its own.\n"
          "  --address A       address to listen on, IPv4 or IPv6 "
          "(default 127.0.0.1)\n"
          "  --port P          command port; P + 1 is the data port "
          "(default %d)\n"
          "  --peer-port Q     port for other servers of the same clients "
          "(default P + 2)\n"
          "  --max-sessions N  sessions at once, 1 to %ld; more are "
          "refused (default %ld)\n"
          "  --max-pending C   commands one session may have in flight, 1 "
          "to %ld;\n"
          "                    more fail with CL_OUT_OF_RESOURCES (default "
          "%u)\n"
          "  --psk-file F      require clients and peers to prove this "
          "pre-shared key\n"
          "                    (file of at least %u bytes; or env "
          "POCLD_PSK)\n"
          "  --insecure        serve a non-loopback address without a "
          "key\n"
          "  --session-grace S seconds a session whose client lost its "
          "connection\n"
          "                    waits for it to reconnect, 0 to %ld "
          "(default %d)\n"
          "  --tls-cert F      require TLS on every connection, with this "
          "certificate\n"
          "                    (PEM, chain after it) and --tls-key F (PEM)\n"
          "  --tls-ca F        CA certificates that peer servers' "
          "certificates must\n"
          "                    chain to (default: the system's)\n"
          "  --log-level L     error, warn, info or debug (default info)\n"
          "  --trace PREFIX    write each session's command trace to "
          "PREFIX.<session>.json\n"
          "                    (Chrome trace events, doc/tracing.md; or env "
          "POCLD_TRACE)\n"
          "  --help            this text\n",
          POCL_REMOTE_DEFAULT_PORT, kSessionsCap, kDefaultSessions, kPendingCap,
          pocld::max_pending_commands, POCL_REMOTE_MIN_KEY, kGraceCapS,
          pocld::session_grace_ms / 1000);
}

// Whether every address `address` stands for is a loopback one.
bool loopback_only(const std::string &address)
{
  addrinfo hints{}, *res = nullptr;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  if (getaddrinfo(address.c_str(), nullptr, &hints, &res) != 0)
    return false;
  bool all = res != nullptr;
  for (addrinfo *a = res; a != nullptr; a = a->ai_next) {
    if (a->ai_family == AF_INET)
      all &= (ntohl(reinterpret_cast<sockaddr_in *>(a->ai_addr)
                        ->sin_addr.s_addr) >>
              24) == 127;
    else if (a->ai_family == AF_INET6)
      all &= IN6_IS_ADDR_LOOPBACK(
          &reinterpret_cast<sockaddr_in6 *>(a->ai_addr)->sin6_addr);
    else
      all = false;
  }
  freeaddrinfo(res);
  return all;
}

// The key from --psk-file or POCLD_PSK into pocld::psk; false (logged) on a
// bad one.
bool load_key(const char *file)
{
  const char *env = getenv("POCLD_PSK");
  if (file == nullptr && env == nullptr)
    return true;
  if (!pocl_remote_auth_available()) {
    LOG_ERR("-", "a pre-shared key needs OpenSSL, which this pocld was built "
                 "without");
    return false;
  }
  char key[POCL_REMOTE_MAX_KEY];
  long n;
  if (file != nullptr) {
    int loose = 0;
    n = pocl_remote_key_file(file, key, &loose);
    if (n < 0) {
      LOG_ERR("-", "cannot read the key file %s: %s", file, strerror(errno));
      return false;
    }
    if (loose)
      LOG_WARN("-", "key file %s can be read by other users", file);
  } else {
    n = long(pocl_remote_key_trim(env, strlen(env)));
    memcpy(key, env, size_t(n));
    // Session processes need only pocld::psk.
    unsetenv("POCLD_PSK");
  }
  if (n == 0) {
    LOG_ERR("-", "the pre-shared key must have %u to %u bytes",
            POCL_REMOTE_MIN_KEY, POCL_REMOTE_MAX_KEY);
    return false;
  }
  pocld::psk.assign(key, size_t(n));
  memset(key, 0, sizeof key);
  return true;
}

bool parse_level(const char *s, pocld::Level &out)
{
  static const char *const names[] = {"error", "warn", "info", "debug"};
  for (int i = 0; i < 4; ++i)
    if (strcmp(s, names[i]) == 0) {
      out = static_cast<pocld::Level>(i);
      return true;
    }
  return false;
}

} // namespace

int main(int argc, char **argv)
{
  std::string address = "127.0.0.1";
  long port = POCL_REMOTE_DEFAULT_PORT, peer_port = 0;
  long max_sessions = kDefaultSessions;
  const char *psk_file = nullptr;
  const char *tls_cert = nullptr, *tls_key = nullptr, *tls_ca = nullptr;
  bool insecure = false;
  for (int i = 1; i < argc; ++i) {
    std::string opt = argv[i];
    if (opt == "--help" || opt == "-h") {
      usage(stdout);
      return 0;
    }
    if (opt == "--insecure") {
      insecure = true;
      continue;
    }
    if (i + 1 >= argc) {
      usage(stderr);
      return 2;
    }
    const char *val = argv[++i];
    char *end = nullptr;
    if (opt == "--address")
      address = val;
    else if (opt == "--port")
      port = strtol(val, &end, 10);
    else if (opt == "--peer-port")
      peer_port = strtol(val, &end, 10);
    else if (opt == "--max-sessions")
      max_sessions = strtol(val, &end, 10);
    else if (opt == "--psk-file")
      psk_file = val;
    else if (opt == "--tls-cert")
      tls_cert = val;
    else if (opt == "--tls-key")
      tls_key = val;
    else if (opt == "--tls-ca")
      tls_ca = val;
    else if (opt == "--trace")
      pocld::trace_prefix = val;
    else if (opt == "--max-pending") {
      long n = strtol(val, &end, 10);
      if (*end != '\0' || n < 1 || n > kPendingCap) {
        fprintf(stderr, "pocld: bad pending-command limit '%s'\n", val);
        return 2;
      }
      pocld::max_pending_commands = static_cast<uint32_t>(n);
    }
    else if (opt == "--session-grace") {
      long n = strtol(val, &end, 10);
      if (*end != '\0' || n < 0 || n > kGraceCapS) {
        fprintf(stderr, "pocld: bad session grace '%s'\n", val);
        return 2;
      }
      pocld::session_grace_ms = static_cast<int>(n * 1000);
    }
    else if (opt == "--log-level") {
      if (!parse_level(val, pocld::log_level)) {
        fprintf(stderr, "pocld: unknown log level '%s'\n", val);
        return 2;
      }
    } else {
      usage(stderr);
      return 2;
    }
    if (opt == "--peer-port" &&
        (*end != '\0' || peer_port < 1 || peer_port > 65535)) {
      fprintf(stderr, "pocld: bad peer port '%s'\n", val);
      return 2;
    }
    if (opt == "--port" && (*end != '\0' || port < 1 || port > 65535)) {
      fprintf(stderr, "pocld: bad port '%s'\n", val);
      return 2;
    }
    if (opt == "--max-sessions" &&
        (*end != '\0' || max_sessions < 1 || max_sessions > kSessionsCap)) {
      fprintf(stderr, "pocld: bad session limit '%s'\n", val);
      return 2;
    }
  }

  if (!load_key(psk_file))
    return 1;
  if (pocld::trace_prefix.empty() && getenv("POCLD_TRACE") != nullptr)
    pocld::trace_prefix = getenv("POCLD_TRACE");
  pocld::trace_on = !pocld::trace_prefix.empty();
  if ((tls_cert != nullptr) != (tls_key != nullptr) ||
      (tls_ca != nullptr && tls_cert == nullptr)) {
    fprintf(stderr, "pocld: --tls-cert and --tls-key go together, and "
                    "--tls-ca needs them\n");
    return 2;
  }
  // Before anything is forked: session processes inherit the contexts.
  if (tls_cert != nullptr && !pocld::tls_configure(tls_cert, tls_key, tls_ca))
    return 1;
  // Anyone who can reach a non-loopback address could use the devices.
  if (pocld::psk.empty() && !insecure && !loopback_only(address)) {
    LOG_ERR("-",
            "refusing to serve %s without a pre-shared key: give --psk-file "
            "(or POCLD_PSK), or --insecure to serve anyone who reaches it",
            address.c_str());
    return 1;
  }

  // The listener takes SIGINT, SIGTERM and SIGCHLD only inside its ppoll;
  // session processes go back to the defaults (child_setup).  Dead peers
  // show up as send errors, not SIGPIPE.
  signal(SIGPIPE, SIG_IGN);
  sigset_t sigs, waitmask;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGCHLD);
  sigprocmask(SIG_BLOCK, &sigs, &waitmask);
  sigdelset(&waitmask, SIGINT);
  sigdelset(&waitmask, SIGTERM);
  sigdelset(&waitmask, SIGCHLD);
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  sa.sa_handler = on_child;
  sa.sa_flags = SA_NOCLDSTOP;
  sigaction(SIGCHLD, &sa, nullptr);

  // No OpenCL in this process: see doc/pocld.md, "Processes".
  pocld::Server server(static_cast<unsigned>(max_sessions));
  long ndev = server.discover_devices();
  if (peer_port == 0)
    peer_port = port + POCL_REMOTE_PEER_PORT_OFFSET;
  if (!server.listen(address, static_cast<uint16_t>(port),
                     static_cast<uint16_t>(peer_port)))
    return 1;
  char devices[32] = "devices unknown";
  if (ndev >= 0)
    snprintf(devices, sizeof devices, "%ld devices", ndev);
  LOG_INFO("-",
           "listening on %s ports %ld (commands), %ld (data) and %ld "
           "(peers), %s, at most %ld sessions, %s, %s",
           address.c_str(), port, port + POCL_REMOTE_DATA_PORT_OFFSET,
           peer_port, devices, max_sessions,
           pocld::psk.empty() ? "no key" : "pre-shared key required",
           pocld::tls_on() ? "TLS required" : "no TLS");
  server.run(&g_stop, &waitmask);
  LOG_INFO("-", "stopped");
  return 0;
}
