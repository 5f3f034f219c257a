// transport.hh - pocld's transports (doc/protocol.md, "Transports"): the
// connection type that the I/O of wire.hh takes (a link,
// protocol/transports/pocl_remote_link.h), and the table of link transports
// (transport.cc), whose handshakes make a link of a connected socket (TLS's
// in its folder: protocol/transports/tls/server_tls.cc).  How payloads move
// (the bulk transports, protocol/transports/pocl_remote_bulk.h) is chosen
// per connection: lanes on the data socket and on peer links.
#pragma once

#include "pocl_remote_bulk.h"
#include "pocl_remote_link.h"

#include <cstdint>
#include <string>

namespace pocld {

// One connection: a link.  From a bare socket, as the listener hands them
// over, a TCP link, until a transport's accept makes it its own.
struct Conn : pocl_remote_link {
  Conn() { pocl_remote_link_clear(this); }
  Conn(int fd)
  {
    if (fd >= 0)
      pocl_remote_tcp_link(this, fd);
    else
      pocl_remote_link_clear(this);
  }
  // Connected (atomic: another thread may take it meanwhile).
  bool up() const { return pocl_remote_link_up(this); }
};

// Takes the connection out of `slot` (which then is not up): the caller
// shuts it down and closes it once nobody uses it.
inline Conn take(Conn &slot)
{
  Conn c;
  c.ops = slot.ops;
  c.state = slot.state;
  c.fd = __atomic_exchange_n(&slot.fd, -1, __ATOMIC_ACQ_REL);
  pocl_remote_link_clear(&slot);
  return c;
}
// Whether `slot` holds connection c now.
inline bool holds(const Conn &slot, const Conn &c)
{
  return c.fd >= 0 && __atomic_load_n(&slot.fd, __ATOMIC_ACQUIRE) == c.fd;
}

struct LinkTransport {
  const char *name;
  // Whether the configuration asks for it (null: the fallback, always).
  bool (*wanted)();
  // The listener routes the transport's connections by their first message
  // (STARTTLS), and the HELLO comes inside the transport: the session
  // process reads it after accept.
  bool hello_inside;
  // Server side: the transport's handshake on c, whose first message the
  // listener has read already (`greeted`) or not.  False with `why`;
  // *answer: the peer speaks PoCL-R in the clear and gets a HELLO_REPLY.
  bool (*accept)(Conn &c, bool greeted, int timeout_ms, std::string &why,
                 bool *answer);
  // Client side (peer links), after connecting to `host`: what the
  // connection is for (role, the peer's session), before HELLO.
  bool (*dial)(Conn &c, const std::string &host, uint32_t role,
               const uint8_t *session_id, int timeout_ms, std::string &why);
};

// The transport of every link of this server (the table's first wanted
// entry).  Fixed once main has read the configuration.
const LinkTransport &link_transport();

// --ucx: whether peer links carry their large payloads over UCX
// (protocol/transports/ucx/pocl_remote_bulk_ucx.c).  Auto: where it beats the link's TCP
// and lanes: an RDMA device here (doc/benchmarks.md has the shared-memory
// figures against lanes).
enum class UcxMode { Auto, On, Off };
inline UcxMode ucx_mode = UcxMode::Auto;
// --tls-allow-ucx: TLS sessions decline UCX otherwise (its bytes are not
// encrypted).
inline bool tls_allow_ucx = false;
// Whether this end offers UCX to its peers (false where pocld was built
// without UCX).  These two: protocol/transports/ucx/server_ucx.cc.
bool ucx_wanted();
// Loads UCX where ucx_wanted(), before sessions are forked; UCX is never
// loaded otherwise (protocol/transports/ucx/pocl_remote_ucx.c says why).
void ucx_load();

} // namespace pocld
