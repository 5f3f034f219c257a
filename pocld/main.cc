// main.cc - pocld, the PoCL-R server daemon: command line, signals, startup.
#include "advertise.hh"
#include "control.hh"
#include "credentials.hh"
#include "log.hh"
#include "notify.hh"
#include "options.hh"
#include "pocl_remote_cpus.h"
#include "server.hh"
#include "server_tls.hh"
#include "trace.hh"
#include "transport.hh"
#include "wire.hh"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <netdb.h>
#include <netinet/in.h>
#include <string>
#include <unistd.h>

namespace {

volatile sig_atomic_t g_stop = 0;
volatile sig_atomic_t g_reload = 0;
pocld::Settings g_settings;

void on_signal(int) { g_stop = 1; }
void on_hangup(int) { g_reload = 1; }
// Only interrupts the listener's poll, which then reaps.
void on_child(int) {}

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

// Between two waits of the listener, on SIGHUP.
void reload()
{
  pocld::notify(("RELOADING=1\nMONOTONIC_USEC=" +
                 std::to_string(pocld::monotonic_ns() / 1000))
                    .c_str());
  pocld::credentials_reload(g_settings);
  pocld::notify("READY=1");
}

// The library whose malloc this process uses (CMakeLists.txt: jemalloc
// where it was found), as the dynamic linker resolved it.
const char *malloc_library()
{
  Dl_info info{};
  void *(*m)(size_t) = malloc;
  if (dladdr(reinterpret_cast<void *>(m), &info) == 0 ||
      info.dli_fname == nullptr)
    return "unknown";
  const char *slash = strrchr(info.dli_fname, '/');
  return slash != nullptr ? slash + 1 : info.dli_fname;
}

} // namespace

int main(int argc, char **argv)
{
  pocld::Settings &set = g_settings;
  switch (pocld::parse_options(argc, argv, set)) {
  case pocld::Parsed::Done:
    return 0;
  case pocld::Parsed::Bad:
    return 2;
  case pocld::Parsed::Run:
    break;
  }
  // Under systemd: levels the journal understands.
  pocld::log_to_journal_if_there();
  pocld::notify_init();
  if (pocld::trace_prefix.empty() && getenv("POCLD_TRACE") != nullptr)
    pocld::trace_prefix = getenv("POCLD_TRACE");
  pocld::trace_on = !pocld::trace_prefix.empty();
  if (set.tls_cert.empty() != set.tls_key.empty() ||
      (!set.tls_ca.empty() && set.tls_cert.empty())) {
    fprintf(stderr, "pocld: --tls-cert and --tls-key go together, and "
                    "--tls-ca needs them\n");
    return 2;
  }
  pocld::Advertisement adv;
  adv.name = set.advertise_name;
  adv.address = set.address;
  if (set.advertise && !pocld::advertise_supported()) {
    fprintf(stderr, "pocld: --advertise: this pocld was built without Avahi "
                    "(libavahi-client-dev)\n");
    return 2;
  }
  if (!pocld::credentials_load(set))
    return 1;
  // Anyone who can reach a non-loopback address could use the devices.
  if (pocld::psk.empty() && !set.insecure && !loopback_only(set.address)) {
    LOG_ERR("-",
            "refusing to serve %s without a pre-shared key: give --psk-file "
            "(or POCLD_PSK), or --insecure to serve anyone who reaches it",
            set.address.c_str());
    return 1;
  }

  // The listener takes SIGINT, SIGTERM, SIGHUP and SIGCHLD only inside its
  // ppoll; session processes go back to the defaults (child_setup).  Dead
  // peers show up as send errors, not SIGPIPE.
  signal(SIGPIPE, SIG_IGN);
  sigset_t sigs, waitmask;
  sigemptyset(&sigs);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGCHLD})
    sigaddset(&sigs, sig);
  sigprocmask(SIG_BLOCK, &sigs, &waitmask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGCHLD})
    sigdelset(&waitmask, sig);
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  sa.sa_handler = on_hangup;
  sigaction(SIGHUP, &sa, nullptr);
  sa.sa_handler = on_child;
  sa.sa_flags = SA_NOCLDSTOP;
  sigaction(SIGCHLD, &sa, nullptr);

  // The session processes' OpenCL serves this host's devices only: a PoCL
  // among their platforms must not add the servers it would discover.
  unsetenv("POCL_REMOTE_DISCOVERY");
  // No OpenCL in this process: see doc/pocld.md, "Processes".
  pocld::Server server(static_cast<unsigned>(set.max_sessions));
  long ndev = server.discover_devices();
  pocld::ucx_load();
  long peer_port = set.peer_port != 0 ? set.peer_port
                                      : set.port + POCL_REMOTE_PEER_PORT_OFFSET;
  if (!server.listen(set.address, static_cast<uint16_t>(set.port),
                     static_cast<uint16_t>(peer_port)))
    return 1;
  // What its spinning, completion waiting and peer lanes are chosen by.
  LOG_INFO("-", "usable CPUs: %ld of %ld online (affinity, cgroup cpu.max)",
           pocl_remote_usable_cpus(), sysconf(_SC_NPROCESSORS_ONLN));
  char devices[32] = "devices unknown";
  if (ndev >= 0)
    snprintf(devices, sizeof devices, "%ld devices", ndev);
  char line[512];
  snprintf(line, sizeof line,
           "listening on %s ports %ld (commands), %ld (data) and %ld "
           "(peers), %s, at most %ld sessions, %s, %s, malloc from %s",
           set.address.c_str(), set.port,
           set.port + POCL_REMOTE_DATA_PORT_OFFSET, peer_port, devices,
           set.max_sessions,
           pocld::psk.empty() ? "no key" : "pre-shared key required",
           pocld::tls_on() ? "TLS required" : "no TLS", malloc_library());
  LOG_INFO("-", "%s", line);
  if (set.advertise && !pocld::advertise_check(adv).empty())
    LOG_WARN("-", "not advertising: %s", pocld::advertise_check(adv).c_str());
  else if (set.advertise) {
    adv.port = static_cast<uint16_t>(set.port);
    adv.devices = ndev;
    adv.psk = !pocld::psk.empty();
    adv.tls = pocld::tls_on();
    pocld::advertise_start(adv);
  }
  pocld::notify((std::string("READY=1\nSTATUS=") + line).c_str());
  server.run(&g_stop, &g_reload, reload, &waitmask);
  pocld::notify("STOPPING=1");
  server.stop(&waitmask);
  LOG_INFO("-", "stopped");
  return 0;
}
