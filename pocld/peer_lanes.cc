// peer_lanes.cc - the lanes of a peer link (doc/protocol.md, "Peer
// lanes"): more connections between the same two sessions that carry large
// PEER_DATA payloads in stripes beside the link, as the client's lanes do
// for its transfers.  One TCP stream is bound by the one core that copies
// its bytes (3.4-4.2 GB/s for migrations on the H200 host, where the
// client's lanes move 16.7).
#include "lanes.hh"
#include "log.hh"
#include "session.hh"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <sys/socket.h>
#include <system_error>
#include <thread>
#include <unistd.h>

namespace pocld {

namespace {

// How long a reader waits for a lane that a striped PEER_DATA uses and
// that its opener has not published yet.
constexpr auto kLaneWait = std::chrono::seconds(10);

// POCLD_PEER_LANES, else one per four CPUs (none on fewer than four), as
// the client's POCL_REMOTE_LANES: a stream takes about a core at either end.
unsigned peer_lanes_wanted()
{
  long n = sysconf(_SC_NPROCESSORS_ONLN) / 4;
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
    std::lock_guard<std::mutex> lock(l.lanes_mu);
    if (l.lanes_dead) {
      shutdown(c.fd, SHUT_RDWR);
      break;
    }
    l.lanes[k - 1] = c;
    l.lanes_cv.notify_all();
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
  if (index >= POCL_REMOTE_MAX_PEERS || lane < 1 ||
      lane > POCL_REMOTE_MAX_LANES)
    return false;
  PeerLink &l = peers_[index];
  {
    std::lock_guard<std::mutex> lock(l.lanes_mu);
    if (!l.up || l.lanes_dead || l.lanes[lane - 1].fd >= 0)
      return false;
  }
  if (!send_hello_reply(c, CL_SUCCESS, id_.data(),
                        static_cast<uint32_t>(devs_.devices.size())))
    return false;
  std::lock_guard<std::mutex> lock(l.lanes_mu);
  if (!l.up || l.lanes_dead || l.lanes[lane - 1].fd >= 0)
    return false;
  l.lanes[lane - 1] = c;
  l.lanes_cv.notify_all();
  LOG_DEBUG(sid_, "peer %u: lane %u attached", index, lane);
  return true;
}

// streams[1..lanes] for a striped PEER_DATA that arrived, waiting for lanes
// not published yet.  After the lanes failed, the missing ones are -1: the
// message's stream 0 is still read, and the sender sends it again.  False if
// a lane did not come in time.
bool Session::peer_recv_lanes(PeerLink &l, unsigned lanes, Conn *streams)
{
  std::unique_lock<std::mutex> lock(l.lanes_mu);
  auto ready = [&] {
    if (l.lanes_dead)
      return true;
    for (unsigned k = 0; k < lanes; ++k)
      if (l.lanes[k].fd < 0)
        return false;
    return true;
  };
  if (!l.lanes_cv.wait_for(lock, kLaneWait, ready))
    return false;
  for (unsigned k = 1; k <= lanes; ++k)
    streams[k] = l.lanes_dead ? Conn() : l.lanes[k - 1];
  return true;
}

// A lane failed, or the link ended: the link goes on without lanes, on
// both sides (the peer's lane streams fail too, on the shutdown).  The
// sockets stay open: the link's reader or a sender may still be in them,
// woken by the shutdown.
void Session::drop_peer_lanes(PeerLink &l)
{
  std::lock_guard<std::mutex> lock(l.lanes_mu);
  l.lanes_dead = true;
  for (const Conn &c : l.lanes)
    if (c.fd >= 0)
      shutdown(c.fd, SHUT_RDWR);
  l.lanes_cv.notify_all();
}

bool Session::peer_has_lanes(uint32_t index)
{
  if (index >= POCL_REMOTE_MAX_PEERS)
    return false;
  PeerLink &l = peers_[index];
  std::lock_guard<std::mutex> lock(l.lanes_mu);
  return !l.lanes_dead && l.lanes[0].fd >= 0;
}

// Under l.mu.  A lane failing under the message drops the lanes; the link
// is still in step (stream 0 carried all its stripes), and the receiver,
// which saw the lanes fail too, asks for the bytes again (PEER_ACK).
bool Session::peer_send_striped(PeerLink &l, uint32_t index, uint32_t type,
                                uint64_t id, const void *body, size_t body_len,
                                const uint8_t *payload, uint64_t payload_len,
                                bool *striped)
{
  const Conn link(l.fd, l.tls);
  Conn streams[POCL_REMOTE_MAX_LANES + 1];
  unsigned lanes = 0;
  {
    std::lock_guard<std::mutex> lock(l.lanes_mu);
    streams[0] = link;
    while (!l.lanes_dead && lanes < l.lanes.size() && l.lanes[lanes].fd >= 0) {
      streams[lanes + 1] = l.lanes[lanes];
      ++lanes;
    }
  }
  if (lanes == 0)
    return send_msg(link, type, id, body, body_len, payload, payload_len);
  LOG_DEBUG(sid_, "peer %u: %llu bytes for %llu striped over %u peer lanes",
            index, (unsigned long long)payload_len, (unsigned long long)id,
            lanes);
  *striped = true;
  Striped r = send_striped_keep(streams, lanes + 1, type, id, body, body_len,
                                payload, payload_len);
  if (r == Striped::LaneFailed) {
    LOG_WARN(sid_,
             "peer %u: a lane failed under %llu bytes for %llu: the link goes "
             "on without lanes",
             index, (unsigned long long)payload_len, (unsigned long long)id);
    drop_peer_lanes(l);
  }
  return r != Striped::MainFailed;
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
