// transport.cc - pocld's table of link transports (transport.hh).  A new
// transport is one folder, protocol/transports/<name>/, whose
// server_<name>.cc has its functions, and one entry here (TCP's do nothing:
// they are here).
#include "transport.hh"

#include "server_tls.hh"

namespace pocld {

namespace {

bool tcp_accept(Conn &, bool, int, std::string &, bool *answer)
{
  *answer = false;
  return true;
}

bool tcp_dial(Conn &, const std::string &, uint32_t, const uint8_t *, int,
              std::string &)
{
  return true;
}

// In order of preference: TLS once --tls-cert is given, else plain TCP.
const LinkTransport kTransports[] = {
    {"tls", tls_on, true, tls_accept, tls_dial},
    {"tcp", nullptr, false, tcp_accept, tcp_dial},
};

} // namespace

const LinkTransport &link_transport()
{
  const LinkTransport *t = kTransports;
  while (t->wanted != nullptr && !t->wanted())
    ++t;
  return *t;
}

} // namespace pocld
