// peer_resume.cc - a peer link that breaks is resumed, as a client's
// connection is (doc/reconnect.md, "Peer links"): each end keeps what it
// sent until the other says it handled it (PEER_RECEIVED), the end that
// dialed the link dials it again, and each sends again, in order and
// before anything new, what the other did not handle.  Lanes and UCX end
// with the first link: a resumed link carries its payloads itself.
#include "log.hh"
#include "session.hh"

#include <chrono>
#include <cstring>
#include <system_error>
#include <thread>

namespace pocld {

namespace {

// How long a broken peer link is dialed again, or waited for, before what
// was expected from it fails: as long as the other server keeps the session
// (servers of one client have the same --session-grace), counted from when
// it noticed the break, which may be up to a TCP detection time (10 s,
// pocl_remote_tcp.h) after we did.
int peer_resume_ms()
{
  return session_grace_ms + 10000;
}
// PEER_RECEIVED after this many messages, and after every PEER_DATA of
// kReceivedBytes or more (whose staging the other end keeps until then;
// smaller payloads are copied into the log); not after every small one: a
// 4-byte migration's receiver would wake the pusher's reader each time.
constexpr uint64_t kReceivedEvery = 16;
constexpr uint64_t kReceivedBytes = 64 << 10;

using Clock = std::chrono::steady_clock;

} // namespace

// Under l.mu, in the order the messages go out.
void Session::peer_log(PeerLink &l, uint32_t type, uint64_t id,
                       const void *body, size_t body_len, const void *payload,
                       uint64_t payload_len, Staging *keep)
{
  peer_trim(l, l.acked.load(std::memory_order_acquire));
  // A small payload is copied: its staging goes back to the pool at once
  // (held, the next migration's staging was made anew: 4-byte migrations
  // took 8 us longer on the H100).  A large one is acknowledged at once.
  log_message(l.log.emplace_back(),
              l.sent_count.fetch_add(1, std::memory_order_acq_rel) + 1, type,
              id, body, body_len, payload, payload_len,
              payload_len < kReceivedBytes ? nullptr : keep);
}

// Under l.mu: drops what the peer handled.
void Session::peer_trim(PeerLink &l, uint64_t handled)
{
  trim_log(l.log, handled);
}

// The reader handled one of the peer's counted messages (h): the peer
// hears of it when due, if the link is free now.  A reader never waits for
// a sender, who may be blocked on a peer whose reader is blocked on us.
void Session::peer_handled(uint32_t index, const pocl_remote_hdr &h)
{
  PeerLink &l = peers_[index];
  l.handled.fetch_add(1, std::memory_order_acq_rel);
  if (POCL_RMSG_TYPE_OF(h.type) == POCL_RMSG_PEER_DATA &&
      h.payload_size >= kReceivedBytes)
    l.received_due.store(true, std::memory_order_release);
  std::unique_lock<std::mutex> lock(l.mu, std::try_to_lock);
  if (lock.owns_lock())
    peer_received_out(l);
}

// Under l.mu, after a send or from the reader: PEER_RECEIVED if due (else
// the next send or message tells it).
void Session::peer_received_out(PeerLink &l)
{
  const uint64_t n = l.handled.load(std::memory_order_acquire);
  if (l.replaying || l.broken || !l.link.up() ||
      (n - l.told < kReceivedEvery &&
       !l.received_due.load(std::memory_order_acquire)))
    return;
  pocl_remote_peer_received r{n};
  if (send_msg(l.link, POCL_RMSG_PEER_RECEIVED, 0, &r, sizeof r, nullptr, 0)) {
    l.told = n;
    l.received_due.store(false, std::memory_order_release);
  }
}

// A PEER_RECEIVED's body: false on a violation.
bool Session::peer_received_in(uint32_t index,
                               const pocl_remote_peer_received &r)
{
  PeerLink &l = peers_[index];
  if (r.handled > l.sent_count.load(std::memory_order_acquire)) {
    LOG_ERR(sid_, "peer %u: PEER_RECEIVED of %llu messages, %llu sent", index,
            (unsigned long long)r.handled,
            (unsigned long long)l.sent_count.load());
    return false;
  }
  uint64_t old = l.acked.load(std::memory_order_acquire);
  while (r.handled > old && !l.acked.compare_exchange_weak(old, r.handled))
    ;
  std::unique_lock<std::mutex> lock(l.mu, std::try_to_lock);
  if (lock.owns_lock() && !l.replaying)
    peer_trim(l, l.acked.load(std::memory_order_acquire));
  return true;
}

// The reader's link (c, the gen-th of the index) ended: true with c the
// resumed one (and gen its number), false once the link is given up.
bool Session::await_peer_resume(uint32_t index, Conn &c, uint64_t &gen)
{
  PeerLink &l = peers_[index];
  {
    // This session ending, or the peer's (PEER_BYE): nothing to resume.
    std::lock_guard<std::mutex> lock(mu_);
    if (closing_)
      return false;
  }
  {
    std::lock_guard<std::mutex> lock(l.mu);
    if (!l.resumable || l.peer_ended.load(std::memory_order_acquire))
      return false;
    if (l.links == gen) {
      l.broken = true;
      pocl_remote_link_shutdown(&l.link);
    }
  }
  // Lanes and UCX end with the first link.
  drop_peer_lanes(l);
  LOG_WARN(sid_, "peer %u: the link broke after %llu of its messages; %s",
           index, (unsigned long long)l.handled.load(),
           l.dialer ? "dialing it again" : "waiting for it to come back");
  if (l.dialer)
    return redial_peer(index, c, gen);
  const auto deadline = Clock::now() + std::chrono::milliseconds(peer_resume_ms());
  std::unique_lock<std::mutex> lock(l.mu);
  l.parked = true;
  l.parked_on = gen;
  l.cv.notify_all();
  while (l.links == gen && l.resumable && Clock::now() < deadline) {
    // mu_ before l.mu, as everywhere (start_peer, install_peer_link).
    lock.unlock();
    bool closing;
    {
      std::lock_guard<std::mutex> slock(mu_);
      closing = closing_;
    }
    lock.lock();
    if (closing)
      break;
    l.cv.wait_for(lock, std::chrono::milliseconds(100));
  }
  l.parked = false;
  if (l.links == gen || !l.resumable)
    return false;
  gen = l.links;
  c = l.link;
  return true;
}

// The dialing end's part: HELLO with the resume flag and our count, until
// the peer takes it or the time is up.
bool Session::redial_peer(uint32_t index, Conn &c, uint64_t &gen)
{
  PeerLink &l = peers_[index];
  const auto deadline = Clock::now() + std::chrono::milliseconds(peer_resume_ms());
  int backoff_ms = 5;
  std::string why;
  while (Clock::now() < deadline) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (closing_)
        return false;
    }
    const uint64_t mine[2] = {l.handled.load(), POCL_REMOTE_PEER_RESUME};
    uint64_t theirs = 0;
    Conn nc;
    if (peer_dial(l.host, l.port, l.session.data(), l.self_index, nc, why,
                  mine, &theirs)) {
      if (theirs > l.sent_count.load()) {
        LOG_ERR(sid_, "peer %u: resumed having %llu of our %llu messages",
                index, (unsigned long long)theirs,
                (unsigned long long)l.sent_count.load());
        pocl_remote_link_close(&nc);
        return false;
      }
      gen = install_peer_link(index, nc, theirs);
      c = nc;
      LOG_INFO(sid_, "peer %u: link resumed; it had %llu of our messages",
               index, (unsigned long long)theirs);
      return true;
    }
    if (why == kPeerSessionGone)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(backoff_ms));
    backoff_ms = std::min(backoff_ms * 2, 500);
  }
  LOG_WARN(sid_, "peer %u: not resumed (%s; tried for up to %d ms)", index,
           why.c_str(), peer_resume_ms());
  return false;
}

// The accepting end's part (attach_peer): a HELLO with the resume flag for
// link `index`; theirs: how many of ours the dialing end handled.
bool Session::resume_peer(Conn c, uint32_t index, uint64_t theirs)
{
  if (index >= POCL_REMOTE_MAX_PEERS)
    return false;
  PeerLink &l = peers_[index];
  {
    std::unique_lock<std::mutex> lock(l.mu);
    if (l.dialer || !l.resumable || theirs > l.sent_count.load())
      return false;
    // Our count must not move once told: the reader leaves the old link
    // first (it may not have seen it break yet).  Parked after the link
    // now in place, not an earlier one: a resume that came right after
    // another finds the reader still parked after the link before, about
    // to read the one that this resume replaces.
    pocl_remote_link_shutdown(&l.link);
    if (!l.cv.wait_for(lock, std::chrono::milliseconds(peer_resume_ms()),
                       [&] {
                         return (l.parked && l.parked_on == l.links) ||
                                !l.resumable;
                       }) ||
        !l.resumable)
      return false;
  }
  const uint64_t mine[2] = {l.handled.load(), 0};
  if (!send_hello_reply(c, CL_SUCCESS, id_.data(),
                        static_cast<uint32_t>(devs_.devices.size()), mine))
    return false;
  install_peer_link(index, c, theirs);
  LOG_INFO(sid_, "peer %u: link resumed; it had %llu of our messages", index,
           (unsigned long long)theirs);
  return true;
}

// The new link takes the old one's place, and a thread of its own sends
// the log again from the peer's count on, senders held back meanwhile:
// the reader must read on, or two ends replaying at once could each fill
// the other's socket.  Returns the link's number.
uint64_t Session::install_peer_link(uint32_t index, Conn c, uint64_t theirs)
{
  PeerLink &l = peers_[index];
  std::lock_guard<std::mutex> lock(mu_);
  std::lock_guard<std::mutex> llock(l.mu);
  if (l.link.up())
    retired_links_.push_back(take(l.link));
  pocl_remote_link_set(&l.link, &c);
  l.broken = false;
  l.replaying = true;
  const uint64_t gen = ++l.links;
  ++peers_running_;
  try {
    std::thread(&Session::replay_peer, this, index, gen, theirs).detach();
  } catch (const std::system_error &) {
    --peers_running_;
    l.replaying = false;
    l.broken = true;
    pocl_remote_link_shutdown(&l.link);
    LOG_ERR(sid_, "peer %u: cannot start a thread to resume the link", index);
  }
  l.cv.notify_all();
  return gen;
}

// Counted among the peer threads.  For link `gen` only: one that broke
// again before this thread got the lock has a newer replay, which sends
// from the newer count (this one would send on that link out of order).
void Session::replay_peer(uint32_t index, uint64_t gen, uint64_t theirs)
{
  PeerLink &l = peers_[index];
  uint64_t n = 0;
  bool stale = false;
  {
    std::lock_guard<std::mutex> lock(l.mu);
    stale = l.links != gen;
    uint64_t old = l.acked.load();
    while (theirs > old && !l.acked.compare_exchange_weak(old, theirs))
      ;
    peer_trim(l, l.acked.load());
    for (auto it = l.log.begin(); !stale && it != l.log.end(); ++it) {
      const OutMsg &o = *it;
      if (!send_msg(l.link, o.hdr.type, o.hdr.id, o.body, o.hdr.body_size,
                    o.payload, o.hdr.payload_size)) {
        l.broken = true;
        pocl_remote_link_shutdown(&l.link);
        break;
      }
      ++n;
    }
    if (!stale) {
      l.replaying = false;
      l.cv.notify_all();
    }
  }
  if (!stale)
    LOG_INFO(sid_, "peer %u: sent %llu messages again", index,
             (unsigned long long)n);
  std::lock_guard<std::mutex> lock(mu_);
  --peers_running_;
  data_cv_.notify_all();
}

// The session ends: its peers' links will not resume (best effort: a link
// that is down hears nothing, and its peer gives up after peer_resume_ms()).
void Session::say_bye_to_peers()
{
  for (PeerLink &l : peers_) {
    std::lock_guard<std::mutex> lock(l.mu);
    if (l.link.up() && !l.broken && !l.replaying)
      send_msg(l.link, POCL_RMSG_PEER_BYE, 0, nullptr, 0, nullptr, 0);
  }
}

// No resume came: what was sent is dropped, and the link is as one that
// ended before resumes existed.
void Session::give_up_peer(uint32_t index)
{
  PeerLink &l = peers_[index];
  std::lock_guard<std::mutex> lock(l.mu);
  l.resumable = false;
  peer_trim(l, UINT64_MAX);
  l.cv.notify_all();
}

} // namespace pocld
