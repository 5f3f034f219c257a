// server_ucx.cc - UCX on peer links (doc/protocol.md, "Transports"):
// whether this end offers it, and the UCX_HELLO each end sends once the
// link is up (a client's data link: channel.cc).  The payloads themselves
// go through the link's bulk transport (pocl_remote_bulk_ucx.c), above its
// lanes.  Part of pocld, not of the protocol library.
#include "log.hh"
#include "pocl_remote_ucx.h"
#include "server_tls.hh"
#include "session.hh"

#include <dirent.h>

namespace pocld {

namespace {

// An RDMA device (InfiniBand, RoCE): where UCX beats TCP between hosts.
bool rdma_here()
{
  static const bool any = [] {
    DIR *d = opendir("/sys/class/infiniband");
    if (d == nullptr)
      return false;
    bool found = false;
    while (dirent *e = readdir(d))
      found |= e->d_name[0] != '.';
    closedir(d);
    return found;
  }();
  return any;
}

} // namespace

// auto: only where UCX beats the link and its lanes between hosts.  On one
// host its shared memory does too (doc/benchmarks.md, "Transports"), but
// only endpoints without failure reports reach it, and those take the
// whole session down when a transport fails under them: an operator's
// choice (--ucx on, UCX_TLS=sm,self; doc/operating.md), not a default.
bool ucx_wanted()
{
#ifdef POCL_REMOTE_HAVE_UCX
  if (ucx_mode == UcxMode::Off || (tls_on() && !tls_allow_ucx))
    return false;
  return ucx_mode == UcxMode::On || rdma_here();
#else
  return false;
#endif
}

void ucx_load()
{
#ifdef POCL_REMOTE_HAVE_UCX
  if (ucx_wanted() &&
      pocl_remote_ucx_load([](const char *m) { LOG_WARN("-", "%s", m); }) != 0)
    LOG_WARN("-", "UCX is not loaded: peer links decline it");
#endif
}

// This end's UCX_HELLO on peer link `index`, once: an offer where the
// policy wants UCX for that peer and the engine starts, else a decline.
void Session::send_ucx_hello(uint32_t index)
{
  PeerLink &l = peers_[index];
  pocl_remote_ucx_hello h{};
  void *addr = nullptr;
  size_t len = 0;
  {
    std::lock_guard<std::mutex> lock(l.mu);
    if (l.ucx_answered)
      return;
    l.ucx_answered = true;
  }
#ifdef POCL_REMOTE_HAVE_UCX
  if (ucx_wanted() && pocl_remote_ucx_bulk_offer(&l.ucx, &h, &addr, &len))
    LOG_WARN(sid_, "peer %u: UCX wanted but unavailable: its payloads stay on "
                   "the link",
             index);
#endif
  peer_send(index, POCL_RMSG_UCX_HELLO, 0, &h, sizeof h, addr, len);
#ifdef POCL_REMOTE_HAVE_UCX
  if (addr != nullptr)
    pocl_remote_ucx_bulk_free_address(&l.ucx, addr);
#endif
}

// The peer's UCX_HELLO (its header read from the link c): this end answers
// with its own if it has not sent one, and sends over UCX from now on if
// both offered it.  False on a violation (the link ends).
bool Session::ucx_hello(Conn c, uint32_t index, const pocl_remote_hdr &hdr)
{
  pocl_remote_ucx_hello h;
  std::vector<uint8_t> addr(hdr.payload_size);
  if (!recv_exact(c, &h, sizeof h) ||
      !recv_exact(c, addr.data(), addr.size()))
    return false;
  send_ucx_hello(index);
  PeerLink &l = peers_[index];
#ifdef POCL_REMOTE_HAVE_UCX
  if ((h.flags & POCL_REMOTE_UCX_OFFER) && l.ucx.engine != nullptr) {
    if (pocl_remote_ucx_bulk_sending(&l.ucx)) {
      LOG_WARN(sid_, "peer %u: UCX_HELLO again, ignored", index);
      return true;
    }
    if (pocl_remote_ucx_bulk_accept(&l.ucx, &h, addr.data(), addr.size()) ==
        0) {
      LOG_INFO(sid_, "peer %u: large payloads over UCX", index);
      return true;
    }
    LOG_WARN(sid_, "peer %u: no UCX endpoint to it: payloads stay on the link",
             index);
    return true;
  }
#endif
  LOG_DEBUG(sid_, "peer %u: no UCX between us (offered: us %d, the peer %d)",
            index, int(l.ucx.engine != nullptr),
            int(h.flags & POCL_REMOTE_UCX_OFFER));
  return true;
}

} // namespace pocld
