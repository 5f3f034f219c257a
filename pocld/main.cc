// main.cc - pocld, the PoCL-R server daemon: command line, signals, startup.
#include "log.hh"
#include "server.hh"
#include "session.hh"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unistd.h>

namespace {

constexpr long kDefaultSessions = 64;
constexpr long kSessionsCap = 4096;
constexpr long kPendingCap = 1L << 24;

volatile sig_atomic_t g_stop = 0;

void on_signal(int) { g_stop = 1; }
// Only interrupts the listener's poll, which then reaps.
void on_child(int) {}

void usage(FILE *out)
{
  fprintf(out,
          "usage: pocld [--address A] [--port P] [--peer-port Q] "
          "[--max-sessions N] [--max-pending C] [--log-level L]\n"
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
          "  --log-level L     error, warn, info or debug (default info)\n"
          "  --help            this text\n",
          POCL_REMOTE_DEFAULT_PORT, kSessionsCap, kDefaultSessions,
          kPendingCap, pocld::max_pending_commands);
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
  for (int i = 1; i < argc; ++i) {
    std::string opt = argv[i];
    if (opt == "--help" || opt == "-h") {
      usage(stdout);
      return 0;
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
    else if (opt == "--max-pending") {
      long n = strtol(val, &end, 10);
      if (*end != '\0' || n < 1 || n > kPendingCap) {
        fprintf(stderr, "pocld: bad pending-command limit '%s'\n", val);
        return 2;
      }
      pocld::max_pending_commands = static_cast<uint32_t>(n);
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
           "(peers), %s, at most %ld sessions",
           address.c_str(), port, port + POCL_REMOTE_DATA_PORT_OFFSET,
           peer_port, devices, max_sessions);
  server.run(&g_stop, &waitmask);
  LOG_INFO("-", "stopped");
  return 0;
}
