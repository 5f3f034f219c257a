// advertise.hh - pocld's DNS-SD advertisement through Avahi (--advertise;
// doc/operating.md, "Several servers").
#pragma once

#include <cstdint>
#include <string>

namespace pocld {

struct Advertisement {
  std::string name;    // the service instance name; empty: "pocld on HOST"
  std::string address; // --address: the interface to advertise on
  uint16_t port = 0;   // command port
  long devices = -1;   // -1: unknown
  bool psk = false, tls = false;
};

// Whether this pocld was built with libavahi-client.
bool advertise_supported();

// Why advertising would be pointless (a loopback address), or "".
std::string advertise_check(const Advertisement &a);

// Forks the advertiser: a process of its own, so that the listener keeps
// no thread besides its main one (doc/pocld.md, "Processes").  It follows
// avahi-daemon's restarts and renames the service on a name collision, and
// ends with the listener (PR_SET_PDEATHSIG).  False (logged) if the fork
// failed.
bool advertise_start(const Advertisement &a);

} // namespace pocld
