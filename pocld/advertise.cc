// advertise.cc - the advertiser process: registers pocld's command port as
// a POCL_REMOTE_DNSSD_TYPE service with avahi-daemon (over D-Bus, through
// libavahi-client) and keeps it registered.  The TXT record says the
// protocol version, the device count and whether a key and TLS are
// required; clients take it as a hint, their handshake decides.
#include "advertise.hh"

#include "log.hh"
#include "pocl_remote_protocol.h"

#include <arpa/inet.h>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <sys/prctl.h>
#include <unistd.h>

#ifdef POCL_REMOTE_HAVE_AVAHI
#include <avahi-client/client.h>
#include <avahi-client/publish.h>
#include <avahi-common/alternative.h>
#include <avahi-common/error.h>
#include <avahi-common/malloc.h>
#include <avahi-common/simple-watch.h>
#include <avahi-common/timeval.h>
#endif

namespace pocld {

namespace {

// A numeric --address as a socket address; false for a host name.
bool numeric(const std::string &address, sockaddr_storage &out)
{
  addrinfo hints{}, *res = nullptr;
  hints.ai_flags = AI_NUMERICHOST;
  if (getaddrinfo(address.c_str(), nullptr, &hints, &res) != 0)
    return false;
  memcpy(&out, res->ai_addr, res->ai_addrlen);
  freeaddrinfo(res);
  return true;
}

bool loopback(const sockaddr_storage &a)
{
  if (a.ss_family == AF_INET)
    return (ntohl(reinterpret_cast<const sockaddr_in &>(a).sin_addr.s_addr) >>
            24) == 127;
  return a.ss_family == AF_INET6 &&
         IN6_IS_ADDR_LOOPBACK(
             &reinterpret_cast<const sockaddr_in6 &>(a).sin6_addr);
}

#ifdef POCL_REMOTE_HAVE_AVAHI

bool wildcard(const sockaddr_storage &a)
{
  if (a.ss_family == AF_INET)
    return reinterpret_cast<const sockaddr_in &>(a).sin_addr.s_addr ==
           htonl(INADDR_ANY);
  return a.ss_family == AF_INET6 &&
         IN6_IS_ADDR_UNSPECIFIED(
             &reinterpret_cast<const sockaddr_in6 &>(a).sin6_addr);
}

// The interface that holds --address, so that clients resolve the service
// to an address pocld listens on; 0 (every interface) for a wildcard, a
// host name, or an address no interface holds.
unsigned interface_of(const std::string &address)
{
  sockaddr_storage want{};
  if (!numeric(address, want) || wildcard(want))
    return 0;
  ifaddrs *list = nullptr;
  if (getifaddrs(&list) != 0)
    return 0;
  unsigned index = 0;
  for (ifaddrs *i = list; i != nullptr && index == 0; i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != want.ss_family)
      continue;
    bool same =
        want.ss_family == AF_INET
            ? reinterpret_cast<sockaddr_in *>(i->ifa_addr)->sin_addr.s_addr ==
                  reinterpret_cast<sockaddr_in &>(want).sin_addr.s_addr
            : memcmp(&reinterpret_cast<sockaddr_in6 *>(i->ifa_addr)->sin6_addr,
                     &reinterpret_cast<sockaddr_in6 &>(want).sin6_addr,
                     sizeof(in6_addr)) == 0;
    if (same)
      index = if_nametoindex(i->ifa_name);
  }
  freeifaddrs(list);
  return index;
}

struct State {
  AvahiSimplePoll *poll = nullptr;
  AvahiClient *client = nullptr;
  AvahiEntryGroup *group = nullptr;
  char *name = nullptr; // avahi_malloc'ed: alternatives replace it
  AvahiIfIndex iface = AVAHI_IF_UNSPEC;
  uint16_t port = 0;
  std::string txt[4];
  bool said_no_bus = false; // logged once per outage
};

void client_cb(AvahiClient *c, AvahiClientState state, void *userdata);

void add_service(State &st);

void group_cb(AvahiEntryGroup *g, AvahiEntryGroupState state, void *userdata)
{
  State &st = *static_cast<State *>(userdata);
  switch (state) {
  case AVAHI_ENTRY_GROUP_ESTABLISHED:
    LOG_INFO("-", "advertised as '%s' (DNS-SD %s, port %u)", st.name,
             POCL_REMOTE_DNSSD_TYPE, st.port);
    break;
  case AVAHI_ENTRY_GROUP_COLLISION: {
    // Another host has the name: take the next one ("name #2").
    char *next = avahi_alternative_service_name(st.name);
    LOG_WARN("-", "DNS-SD name '%s' is taken, advertising as '%s'", st.name,
             next);
    avahi_free(st.name);
    st.name = next;
    avahi_entry_group_reset(g);
    add_service(st);
    break;
  }
  case AVAHI_ENTRY_GROUP_FAILURE:
    LOG_ERR(
        "-", "DNS-SD advertisement failed: %s",
        avahi_strerror(avahi_client_errno(avahi_entry_group_get_client(g))));
    break;
  default:
    break;
  }
}

void add_service(State &st)
{
  if (st.group == nullptr) {
    st.group = avahi_entry_group_new(st.client, group_cb, &st);
    if (st.group == nullptr) {
      LOG_ERR("-", "DNS-SD: cannot create an entry group: %s",
              avahi_strerror(avahi_client_errno(st.client)));
      return;
    }
  }
  if (!avahi_entry_group_is_empty(st.group))
    return;
  for (int tries = 0; tries < 16; ++tries) {
    int r = avahi_entry_group_add_service(
        st.group, st.iface, AVAHI_PROTO_UNSPEC, AvahiPublishFlags(0), st.name,
        POCL_REMOTE_DNSSD_TYPE, nullptr, nullptr, st.port, st.txt[0].c_str(),
        st.txt[1].c_str(), st.txt[2].c_str(), st.txt[3].c_str(), nullptr);
    if (r == AVAHI_ERR_COLLISION) {
      // A service of ours (another pocld on this host) has the name.
      char *next = avahi_alternative_service_name(st.name);
      avahi_free(st.name);
      st.name = next;
      avahi_entry_group_reset(st.group);
      continue;
    }
    if (r < 0 || (r = avahi_entry_group_commit(st.group)) < 0)
      LOG_ERR("-", "DNS-SD: cannot advertise '%s': %s", st.name,
              avahi_strerror(r));
    return;
  }
  LOG_ERR("-", "DNS-SD: no free service name after '%s'", st.name);
}

// A client that waits for avahi-daemon (AVAHI_CLIENT_NO_FAIL); without
// even the D-Bus system bus, tried again every kRetryS seconds.
constexpr int kRetryS = 5;

void open_client(State &st);

void retry(AvahiTimeout *t, void *userdata)
{
  State &st = *static_cast<State *>(userdata);
  avahi_simple_poll_get(st.poll)->timeout_free(t);
  open_client(st);
}

void open_client(State &st)
{
  int err = 0;
  if (avahi_client_new(avahi_simple_poll_get(st.poll), AVAHI_CLIENT_NO_FAIL,
                       client_cb, &st, &err) != nullptr)
    return;
  if (!st.said_no_bus)
    LOG_WARN("-", "DNS-SD: no D-Bus system bus (%s); trying again every %d s",
             avahi_strerror(err), kRetryS);
  st.said_no_bus = true;
  timeval tv;
  const AvahiPoll *api = avahi_simple_poll_get(st.poll);
  api->timeout_new(api, avahi_elapse_time(&tv, kRetryS * 1000, 0), retry, &st);
}

void client_cb(AvahiClient *c, AvahiClientState state, void *userdata)
{
  State &st = *static_cast<State *>(userdata);
  st.client = c; // the callback can come before avahi_client_new returns
  switch (state) {
  case AVAHI_CLIENT_S_RUNNING:
    st.said_no_bus = false;
    add_service(st);
    break;
  case AVAHI_CLIENT_S_COLLISION:
  case AVAHI_CLIENT_S_REGISTERING:
    // The host name changes: withdrawn until the daemon is running again.
    if (st.group != nullptr)
      avahi_entry_group_reset(st.group);
    break;
  case AVAHI_CLIENT_CONNECTING:
    LOG_INFO("-", "DNS-SD: waiting for avahi-daemon");
    break;
  case AVAHI_CLIENT_FAILURE: {
    int e = avahi_client_errno(c);
    if (e != AVAHI_ERR_DISCONNECTED) {
      LOG_ERR("-", "DNS-SD: avahi client failed: %s", avahi_strerror(e));
      avahi_simple_poll_quit(st.poll);
      break;
    }
    // The daemon restarted: a new client, registering again once it runs.
    LOG_WARN("-", "DNS-SD: avahi-daemon went away, waiting for it");
    avahi_client_free(c);
    st.client = nullptr;
    st.group = nullptr; // freed with its client
    open_client(st);
    break;
  }
  default:
    break;
  }
}

[[noreturn]] void advertiser(const Advertisement &a, unsigned iface)
{
  State st;
  std::string name = a.name;
  if (name.empty()) {
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    // a DNS-SD instance name is one label of at most 63 bytes
    name = std::string("pocld on ") + host;
    if (name.size() > 63)
      name.resize(63);
  }
  st.name = avahi_strdup(name.c_str());
  st.iface = iface != 0 ? AvahiIfIndex(iface) : AVAHI_IF_UNSPEC;
  st.port = a.port;
  st.txt[0] = "proto=" + std::to_string(POCL_REMOTE_PROTOCOL_VERSION);
  st.txt[1] = a.devices >= 0 ? "devices=" + std::to_string(a.devices)
                             : std::string("devices=unknown");
  st.txt[2] = std::string("psk=") + (a.psk ? "1" : "0");
  st.txt[3] = std::string("tls=") + (a.tls ? "1" : "0");
  st.poll = avahi_simple_poll_new();
  if (st.poll == nullptr) {
    LOG_ERR("-", "DNS-SD: cannot start the avahi client: out of memory");
    _exit(1);
  }
  open_client(st);
  avahi_simple_poll_loop(st.poll);
  _exit(1);
}

#endif

} // namespace

bool advertise_supported()
{
#ifdef POCL_REMOTE_HAVE_AVAHI
  return true;
#else
  return false;
#endif
}

std::string advertise_check(const Advertisement &a)
{
  sockaddr_storage s{};
  if (numeric(a.address, s) && loopback(s))
    return "the address " + a.address +
           " is a loopback one: no other host could connect";
  return {};
}

bool advertise_start(const Advertisement &a)
{
#ifdef POCL_REMOTE_HAVE_AVAHI
  unsigned iface = interface_of(a.address);
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    LOG_ERR("-", "DNS-SD advertiser: fork: %s", strerror(errno));
    return false;
  }
  if (pid > 0)
    return true;
  // Ends with the listener, which never waits for it; holds none of its
  // sockets, so that a port is free once the listener is gone.
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != parent)
    _exit(0);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGCHLD})
    signal(sig, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  close_range(3, ~0U, 0);
  advertiser(a, iface);
#else
  (void)a;
  return false;
#endif
}

} // namespace pocld
