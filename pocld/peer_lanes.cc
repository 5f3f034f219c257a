// peer_lanes.cc - the lanes of a peer link (doc/protocol.md, "Peer
// lanes"): more connections between the same two sessions that carry large
// PEER_DATA payloads in stripes beside the link (the link's bulk
// transport, protocol/transports/lanes/pocl_remote_bulk_lanes.c), as the client's lanes do
// for its transfers.  Here: opening and attaching them, and PEER_ACK.  One TCP
// stream is bound by the one core that copies its bytes (3.4-4.2 GB/s for
// migrations on the H200 host, where the client's lanes move 16.7).
#include "log.hh"
#include "pocl_remote_cpus.h"
#include "session.hh"

#include <algorithm>
#include <cstdlib>
#include <system_error>
#include <thread>
#include <unistd.h>

namespace pocld {

PeerLink::PeerLink()
{
  // A lane that failed under a message ends the link's lanes, not the
  // link; a striped PEER_DATA may come before the lane's opener published
  // it here: its receive waits up to 10 s.
  pocl_remote_lanes_init(&lanes, 1, 10000);
  pocl_remote_lanes_bulk(&bulk, &lanes);
#ifdef POCL_REMOTE_HAVE_UCX
  // UCX above them, which stays the lanes until both ends offered it
  // (server_ucx.cc).
  pocl_remote_bulk lanes_bulk = bulk;
  pocl_remote_ucx_bulk_init(&bulk, &ucx, lanes_bulk);
#endif
}

namespace {

// POCLD_PEER_LANES, else one per four CPUs (none on fewer than four), as
// the client's POCL_REMOTE_LANES: a stream takes about a core at either end.
unsigned peer_lanes_wanted()
{
  long n = pocl_remote_usable_cpus() / 4;
  if (const char *e = getenv("POCLD_PEER_LANES"))
    n = strtol(e, nullptr, 10);
  return unsigned(std::clamp<long>(n, 0, POCL_REMOTE_MAX_LANES));
}

} // namespace

struct Session::LaneDial {
  std::string host;
  uint16_t port;
  uint8_t session_id[16];
  uint32_t self_index, peer_index;
};

// After CONNECT_PEER's link is up: the dialing side opens the lanes, in a
// thread counted among the peer readers (teardown waits for it), so that
// neither the reply nor the command reader waits for their handshakes.
void Session::start_peer_lanes(const std::string &host, uint16_t port,
                               const uint8_t *session_id, uint32_t self_index,
                               uint32_t peer_index)
{
  if (peer_lanes_wanted() == 0)
    return;
  LaneDial *d = new LaneDial{host, port, {}, self_index, peer_index};
  memcpy(d->session_id, session_id, sizeof d->session_id);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closing_) {
      delete d;
      return;
    }
    ++peers_running_;
  }
  try {
    std::thread(&Session::open_peer_lanes, this, d).detach();
  } catch (const std::system_error &) {
    delete d;
    std::lock_guard<std::mutex> lock(mu_);
    --peers_running_;
    data_cv_.notify_all();
  }
}

// Lane 1, 2, ... in turn, each published once its HELLO_REPLY came: the
// peer published it when it answered, and either side stripes over the
// lanes it has.
void Session::open_peer_lanes(LaneDial *d)
{
  PeerLink &l = peers_[d->peer_index];
  const unsigned want = peer_lanes_wanted();
  unsigned k = 1;
  for (; k <= want; ++k) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (closing_)
        break;
    }
    Conn c;
    std::string why;
    if (!peer_dial(d->host, d->port, d->session_id,
                   POCL_REMOTE_PEER_HELLO_INDEX(d->self_index, k), c, why)) {
      LOG_WARN(sid_, "peer %u: lane %u: %s", d->peer_index, k, why.c_str());
      break;
    }
    if (pocl_remote_lanes_attach(&l.lanes, k, &c)) {
      pocl_remote_link_close(&c);
      break;
    }
  }
  LOG_INFO(sid_, "peer %u: %u of %u lanes", d->peer_index, k - 1, want);
  delete d;
  std::lock_guard<std::mutex> lock(mu_);
  --peers_running_;
  data_cv_.notify_all();
}

// A lane of a link the peer opened to us (the listener checked its HELLO).
bool Session::attach_peer_lane(Conn c, uint32_t index, uint32_t lane)
{
  if (index >= POCL_REMOTE_MAX_PEERS)
    return false;
  PeerLink &l = peers_[index];
  if (!l.up || !pocl_remote_lanes_free(&l.lanes, lane))
    return false;
  if (!send_hello_reply(c, CL_SUCCESS, id_.data(),
                        static_cast<uint32_t>(devs_.devices.size())) ||
      !l.up || pocl_remote_lanes_attach(&l.lanes, lane, &c))
    return false;
  LOG_DEBUG(sid_, "peer %u: lane %u attached", index, lane);
  return true;
}

// A lane failed, or the link ended: the link goes on without lanes, on
// both sides (the peer's lane streams fail too, on the shutdown).  The
// lanes stay open: the link's reader or a sender may still be in them,
// woken by the shutdown.
void Session::drop_peer_lanes(PeerLink &l)
{
  // UCX above the lanes too (it shuts them down with itself).
  l.bulk.ops->shutdown(&l.bulk);
}

bool Session::peer_writes_as_it_comes(uint32_t index)
{
  if (index >= POCL_REMOTE_MAX_PEERS)
    return false;
#ifdef POCL_REMOTE_HAVE_UCX
  if (pocl_remote_ucx_bulk_sending(&peers_[index].ucx))
    return true;
#endif
  return pocl_remote_lanes_up(&peers_[index].lanes) > 0;
}

void Session::queue_peer_ack(uint32_t peer, uint64_t id, int32_t status,
                             uint64_t offset)
{
  std::lock_guard<std::mutex> lock(mu_);
  if (closing_)
    return;
  acks_out_.push_back(AckOut{peer, id, pocl_remote_peer_ack{status, 0, offset}});
  data_cv_.notify_all();
  if (ack_sender_)
    return;
  ++peers_running_;
  ack_sender_ = true;
  try {
    std::thread(&Session::send_peer_acks, this).detach();
  } catch (const std::system_error &) {
    // Unacknowledged, the pusher waits until the link ends.
    --peers_running_;
    ack_sender_ = false;
    acks_out_.clear();
    LOG_ERR(sid_, "cannot start a thread for PEER_ACK");
  }
}

// Counted among the peer readers; ends when nothing is left to send.
void Session::send_peer_acks()
{
  std::unique_lock<std::mutex> lock(mu_);
  while (!acks_out_.empty() && !closing_) {
    AckOut a = acks_out_.front();
    acks_out_.pop_front();
    lock.unlock();
    peer_send(a.peer, POCL_RMSG_PEER_ACK, a.id, &a.ack, sizeof a.ack, nullptr,
              0);
    lock.lock();
  }
  ack_sender_ = false;
  --peers_running_;
  data_cv_.notify_all();
}

// A PEER_ACK from peer `peer` (run_peer): for a pusher that waits for it;
// one that does not (it failed meanwhile) needs none.
void Session::peer_ack_in(uint32_t peer, uint64_t id,
                          const pocl_remote_peer_ack &a)
{
  std::lock_guard<std::mutex> lock(mu_);
  auto it = ack_waits_.find(id);
  if (it == ack_waits_.end() || it->second.peer != peer) {
    LOG_DEBUG(sid_, "peer %u: PEER_ACK for %llu, which waits for none", peer,
              (unsigned long long)id);
    return;
  }
  it->second.ack = a;
  it->second.got = true;
  data_cv_.notify_all();
}

// The pusher registered in ack_waits_ before its first PEER_DATA.  False if
// the link ended (or the session) before the next PEER_ACK came.
bool Session::wait_peer_ack(uint32_t peer, uint64_t id, pocl_remote_peer_ack &a)
{
  std::unique_lock<std::mutex> lock(mu_);
  PeerAckWait &w = ack_waits_.emplace(id, PeerAckWait{peer}).first->second;
  data_cv_.wait(lock, [&] { return w.got || w.gone || closing_; });
  if (!w.got)
    return false;
  a = w.ack;
  w.got = false;
  return true;
}

} // namespace pocld
