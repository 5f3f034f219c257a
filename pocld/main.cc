// main.cc - pocld, the PoCL-R server daemon: command line, signals, startup.
#include "devices.hh"
#include "log.hh"
#include "output.hh"
#include "server.hh"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <pthread.h>
#include <string>
#include <unistd.h>

namespace {

volatile sig_atomic_t g_stop = 0;

void on_signal(int) { g_stop = 1; }

void usage(FILE *out)
{
  fprintf(out,
          "usage: pocld [--address A] [--port P] [--log-level L]\n"
          "Serves this host's OpenCL devices to PoCL-R clients.\n"
          "  --address A    address to listen on, IPv4 or IPv6 "
          "(default 127.0.0.1)\n"
          "  --port P       command port; P + 1 is the data port "
          "(default %d)\n"
          "  --log-level L  error, warn, info or debug (default info)\n"
          "  --help         this text\n",
          POCL_REMOTE_DEFAULT_PORT);
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
  long port = POCL_REMOTE_DEFAULT_PORT;
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
    else if (opt == "--log-level") {
      if (!parse_level(val, pocld::log_level)) {
        fprintf(stderr, "pocld: unknown log level '%s'\n", val);
        return 2;
      }
    } else {
      usage(stderr);
      return 2;
    }
    if (opt == "--port" && (*end != '\0' || port < 1 || port > 65535)) {
      fprintf(stderr, "pocld: bad port '%s'\n", val);
      return 2;
    }
  }

  // SIGINT/SIGTERM stay blocked in every thread (the OpenCL runtime's
  // included, as they inherit the mask) and are taken only inside the
  // accept loop's ppoll.  Dead peers show up as send errors, not SIGPIPE.
  signal(SIGPIPE, SIG_IGN);
  sigset_t stop_sigs, waitmask;
  sigemptyset(&stop_sigs);
  sigaddset(&stop_sigs, SIGINT);
  sigaddset(&stop_sigs, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_sigs, &waitmask);
  sigdelset(&waitmask, SIGINT);
  sigdelset(&waitmask, SIGTERM);
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);

  // Kernel printf output goes to the clients; pocld itself logs to stderr.
  pocld::start_output_capture();
  pocld::Devices devs = pocld::discover_devices();
  pocld::Server server(devs);
  if (!server.listen(address, static_cast<uint16_t>(port)))
    return 1;
  LOG_INFO("-",
           "listening on %s ports %ld (commands) and %ld (data), "
           "%zu devices",
           address.c_str(), port, port + POCL_REMOTE_DATA_PORT_OFFSET,
           devs.devices.size());
  if (!server.run(&g_stop, &waitmask))
    // Threads are still inside the OpenCL runtime: skip the destructors and
    // exit handlers that would wait for them or pull objects from under them.
    _exit(1);
  LOG_INFO("-", "stopped");
  return 0;
}
