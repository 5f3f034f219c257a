// channel.cc - the session's channel to its client: the command link's
// reader (MsgReader), sends and their log, batches of COMPLETIONs, ACKs, the
// replay of a resume, the data link, its lanes and its UCX_HELLO.
#include "channel.hh"

#include "decode.hh"
#include "log.hh"
#include "pocl_remote_ucx.h"
#include "trace.hh"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace pocld {

namespace {
constexpr uint64_t kHdr = sizeof(pocl_remote_hdr);
constexpr uint64_t kInitialBuffer = 256u << 10;
} // namespace

MsgReader::MsgReader(Conn c, const char *sid)
    : c_(c), spin_ns_(spin_ns()), sid_(sid),
      buf_(static_cast<uint8_t *>(malloc(kInitialBuffer))),
      cap_(buf_ ? kInitialBuffer : 0)
{
}

MsgReader::~MsgReader() { free(buf_); }

bool MsgReader::has_message() const
{
  uint64_t have = end_ - start_;
  if (have < kHdr)
    return false;
  pocl_remote_hdr h;
  memcpy(&h, buf_ + start_, kHdr);
  return have - kHdr >= uint64_t{h.body_size} &&
         have - kHdr - h.body_size >= h.payload_size;
}

uint64_t MsgReader::next_ndrange_queue() const
{
  if (!has_message())
    return UINT64_MAX;
  pocl_remote_hdr h;
  memcpy(&h, buf_ + start_, kHdr);
  if (h.type != POCL_RMSG_NDRANGE || h.body_size < sizeof(pocl_remote_cmd))
    return UINT64_MAX;
  return load<pocl_remote_cmd>(buf_ + start_ + kHdr).queue_id;
}

uint64_t MsgReader::next_ndrange_sole_wait() const
{
  if (!has_message())
    return UINT64_MAX;
  pocl_remote_hdr h;
  memcpy(&h, buf_ + start_, kHdr);
  if (h.type != POCL_RMSG_NDRANGE || h.body_size < sizeof(pocl_remote_cmd) ||
      h.payload_size < sizeof(pocl_remote_wait) ||
      load<pocl_remote_cmd>(buf_ + start_ + kHdr).num_waits != 1)
    return UINT64_MAX;
  const auto w = load<pocl_remote_wait>(buf_ + start_ + kHdr + h.body_size);
  return w.origin == POCL_REMOTE_WAIT_SAME_SERVER ? w.event_id : UINT64_MAX;
}

MsgReader::Status MsgReader::fill(uint64_t need)
{
  while (end_ - start_ < need) {
    if (start_ + need > cap_) {
      // Move the partial message to the front; grow if it still won't fit.
      memmove(buf_, buf_ + start_, end_ - start_);
      end_ -= start_;
      start_ = 0;
      if (need > cap_) {
        uint64_t ncap = cap_ * 2 > need ? cap_ * 2 : need;
        uint8_t *nb = static_cast<uint8_t *>(realloc(buf_, ncap));
        if (nb == nullptr) {
          LOG_ERR(sid_, "cannot allocate %llu bytes for a message",
                  (unsigned long long)ncap);
          return Status::Bad;
        }
        buf_ = nb;
        cap_ = ncap;
      }
    }
    long r = pocl_remote_link_recv(&c_, buf_ + end_, cap_ - end_, spin_ns_);
    if (r <= 0)
      return Status::Closed;
    end_ += r;
  }
  return Status::Ok;
}

MsgReader::Status MsgReader::next(Msg &m)
{
  if (start_ == end_) {
    start_ = end_ = 0;
    if (cap_ > kInitialBuffer) {
      free(buf_);
      buf_ = static_cast<uint8_t *>(malloc(kInitialBuffer));
      cap_ = buf_ ? kInitialBuffer : 0;
    }
  }
  Status s = fill(kHdr);
  if (s != Status::Ok)
    return s;
  memcpy(&m.hdr, buf_ + start_, kHdr);
  DecodeError e;
  if (!check_command_header(m.hdr, e)) {
    LOG_ERR(sid_, "%s", e.why);
    return Status::Bad;
  }
  uint64_t total = kHdr + m.hdr.body_size + m.hdr.payload_size;
  s = fill(total);
  if (s != Status::Ok)
    return s;
  m.body = buf_ + start_ + kHdr;
  m.payload = m.body + m.hdr.body_size;
  start_ += total;
  return Status::Ok;
}

ClientChannel::ClientChannel(const SessionId &id, const char *sid,
                             uint32_t devices, Conn cmd)
    : id_(id), sid_(sid), devices_(devices)
{
  pocl_remote_link_set(&cmd_.link, &cmd);
  // The client stripes over a lane only once it has our HELLO_REPLY on it,
  // sent after the lane is attached here: no wait.
  pocl_remote_lanes_init(&lanes_, 0, 0);
  pocl_remote_lanes_bulk(&data_bulk_, &lanes_);
#ifdef POCL_REMOTE_HAVE_UCX
  pocl_remote_bulk lanes_bulk = data_bulk_;
  pocl_remote_ucx_bulk_init(&data_bulk_, &data_ucx_, lanes_bulk);
#endif
}

ClientChannel::~ClientChannel()
{
  pocl_remote_link_close(&cmd_.link);
  pocl_remote_link_close(&data_.link);
  pocl_remote_lanes_close(&lanes_, 1);
}

namespace {

// The COMPLETIONs gathered by the thread that completes a cover.
struct Batch {
  ClientChannel *owner = nullptr;
  std::vector<std::pair<uint64_t, pocl_remote_completion>> msgs;
};
thread_local Batch t_batch;
// Two iovecs per message, well under IOV_MAX.
constexpr size_t kBatchMax = 256;

} // namespace

bool ClientChannel::begin_batch()
{
  if (t_batch.owner != nullptr)
    return false;
  t_batch.owner = this;
  return true;
}

void ClientChannel::end_batch()
{
  flush_batch();
  t_batch.owner = nullptr;
}

void ClientChannel::flush_batch()
{
  std::vector<std::pair<uint64_t, pocl_remote_completion>> &msgs = t_batch.msgs;
  if (t_batch.owner == this && !msgs.empty()) {
    Out &c = cmd_;
    iovec iov[2 * kBatchMax + 2];
    int n = 0;
    pocl_remote_hdr ah{POCL_RMSG_ACK, sizeof(pocl_remote_ack), 0, 0};
    pocl_remote_ack a;
    if (take_ack(a)) {
      iov[n++] = {&ah, sizeof ah};
      iov[n++] = {&a, sizeof a};
    }
    std::lock_guard<std::mutex> lock(c.mu);
    for (const auto &m : msgs) {
      OutMsg &o = c.log.emplace_back();
      o.seq = ++c.sent;
      o.hdr = pocl_remote_hdr{POCL_RMSG_COMPLETION, uint32_t(sizeof m.second),
                              0, m.first};
      memcpy(o.body, &m.second, sizeof m.second);
      o.keep = nullptr;
      o.payload = nullptr;
      // The log is a deque: its elements stay where they are.
      iov[n++] = {&o.hdr, sizeof o.hdr};
      iov[n++] = {o.body, sizeof m.second};
    }
    msgs.clear();
    if (c.link.up() && !send_iov(c.link, iov, n)) {
      LOG_WARN(sid_, "send failed (%s), waiting for the client to resume",
               strerror(errno));
      drop_connection();
    }
  }
}

void ClientChannel::send(Sock s, uint32_t type, uint64_t id, const void *body,
                         size_t body_len, const void *payload,
                         uint64_t payload_len, Staging *keep)
{
  // Without a data socket (a client that never opened one) everything goes
  // on the command socket.
  Out &c = (s == Sock::Data && has_data_.load()) ? data_ : cmd_;
  POCLD_TRACE_MSG(CompletionSend, type, id, body, payload_len, 0);
  if (t_batch.owner == this) {
    const bool plain = type == POCL_RMSG_COMPLETION && &c == &cmd_ &&
                       payload_len == 0 &&
                       body_len == sizeof(pocl_remote_completion);
    // Anything else keeps its place after what was gathered.
    if (!plain || t_batch.msgs.size() == kBatchMax)
      flush_batch();
    if (plain) {
      pocl_remote_completion m;
      memcpy(&m, body, sizeof m);
      t_batch.msgs.emplace_back(id, m);
      return;
    }
  }
  std::lock_guard<std::mutex> lock(c.mu);
  if (type != POCL_RMSG_ACK)
    log_message(c.log.emplace_back(), ++c.sent, type, id, body, body_len,
                payload, payload_len, keep);
  if (!c.link.up())
    return;
  // Replayed messages (above) carry their payload inline: the log has the
  // plain type.
  uint32_t mark = 0;
  pocl_remote_ack a;
  if (&c == &data_ ? send_bulk(c.link, data_bulk_, type, id, body, body_len,
                               static_cast<const uint8_t *>(payload),
                               payload_len, &mark) == POCL_REMOTE_BULK_OK
                   : send_msg(c.link, type, id, body, body_len, payload,
                              payload_len, take_ack(a) ? &a : nullptr)) {
    if (mark == POCL_RMSG_UCX)
      LOG_DEBUG(sid_, "%llu bytes for %llu to the client over UCX",
                (unsigned long long)payload_len, (unsigned long long)id);
    return;
  }
  // A client that is gone or stopped reading (SO_SNDTIMEO): it may resume.
  LOG_WARN(sid_, "send failed (%s), waiting for the client to resume",
           strerror(errno));
  drop_connection();
}

void ClientChannel::drop_connection()
{
  pocl_remote_link_shutdown(&cmd_.link);
  pocl_remote_link_shutdown(&data_.link);
  data_bulk_.ops->shutdown(&data_bulk_);
}

void log_message(OutMsg &o, uint64_t seq, uint32_t type, uint64_t id,
                 const void *body, size_t body_len, const void *payload,
                 uint64_t payload_len, Staging *keep)
{
  o.seq = seq;
  o.hdr = pocl_remote_hdr{type, uint32_t(body_len), payload_len, id};
  memcpy(o.body, body, body_len);
  o.keep = keep;
  if (keep != nullptr) {
    keep->refs.fetch_add(1, std::memory_order_relaxed);
    o.payload = static_cast<const uint8_t *>(payload);
  } else {
    const uint8_t *p = static_cast<const uint8_t *>(payload);
    o.owned.assign(p, p + payload_len);
    o.payload = o.owned.data();
  }
}

void trim_log(std::deque<OutMsg> &log, uint64_t seen)
{
  while (!log.empty() && log.front().seq <= seen) {
    if (log.front().keep != nullptr)
      log.front().keep->unref();
    log.pop_front();
  }
}

bool ClientChannel::replay(Out &c, Conn conn, uint64_t seen)
{
  if (seen > c.sent)
    return false;
  trim_log(c.log, seen);
  for (const OutMsg &o : c.log)
    if (!send_msg(conn, o.hdr.type, o.hdr.id, o.body, o.hdr.body_size,
                  o.payload, o.hdr.payload_size))
      return false;
  return true;
}

bool ClientChannel::ack(const Msg &m)
{
  auto a = load<pocl_remote_ack>(m.body);
  for (int i = 0; i < 2; ++i) {
    Out &c = i ? data_ : cmd_;
    std::lock_guard<std::mutex> lock(c.mu);
    if (a.seen[i] > c.sent)
      return false;
    trim_log(c.log, a.seen[i]);
  }
  return true;
}

// A resume's counts on its HELLO_REPLY are taken now: what the readers
// handle from here on is acknowledged later.
bool ClientChannel::resume(Resume &r, uint64_t seen[2], size_t &replayed)
{
  seen[0] = seen_[0].load();
  seen[1] = seen_[1].load();
  bool bad_count;
  {
    std::lock_guard<std::mutex> lock(data_.mu);
    bad_count = r.seen[1] > data_.sent;
  }
  {
    std::lock_guard<std::mutex> lock(cmd_.mu);
    if (bad_count ||
        !send_hello_reply(r.link, CL_SUCCESS, id_.data(), devices_, seen) ||
        !replay(cmd_, r.link, r.seen[0])) {
      pocl_remote_link_close(&r.link);
      return false;
    }
    replayed = cmd_.log.size();
    pocl_remote_link_set(&cmd_.link, &r.link);
  }
  acked_cmd_ = seen[0];
  return true;
}

// The client drops its copies of what we acknowledge, which keeps its replay
// log short. An ACK is due after kAckEvery commands and goes before our next
// message on the command socket (as a rule a COMPLETION soon after); it goes
// by itself after kAckAlone commands or kAckBytes of their payloads, for a
// client that only sends. By themselves every 64 messages, both ways, ACKs
// were 4 of the 15 loopback writes of a 100-kernel chain on two cores
// (doc/benchmarks.md, "Acknowledgements with messages").
constexpr uint64_t kAckEvery = 256;
constexpr uint64_t kAckAlone = 1024;
constexpr uint64_t kAckBytes = 1 << 20;

void ClientChannel::command_seen(uint64_t payload_size)
{
  // Only the command reader writes the counts: no read-modify-write.
  const uint64_t seen = seen_[0].load(std::memory_order_relaxed) + 1;
  const uint64_t bytes =
      payload_seen_.load(std::memory_order_relaxed) + payload_size;
  seen_[0].store(seen, std::memory_order_relaxed);
  payload_seen_.store(bytes, std::memory_order_relaxed);
  const uint64_t unacked = seen - acked_cmd_.load(std::memory_order_relaxed);
  if (unacked >= kAckAlone ||
      bytes - payload_acked_.load(std::memory_order_relaxed) >= kAckBytes)
    send_ack();
  else if (unacked >= kAckEvery && !ack_due_.load(std::memory_order_relaxed))
    ack_due_.store(true, std::memory_order_relaxed);
}

void ClientChannel::data_seen()
{
  if (seen_[1].fetch_add(1, std::memory_order_relaxed) % 16 == 15)
    send_ack(); // each DATA may hold much of the client's memory
}

void ClientChannel::send_ack()
{
  ack_due_ = false;
  payload_acked_ = payload_seen_.load();
  pocl_remote_ack a{{seen_[0].load(), seen_[1].load()}};
  acked_cmd_ = a.seen[0];
  send(Sock::Command, POCL_RMSG_ACK, 0, &a, sizeof a, nullptr, 0);
}

bool ClientChannel::take_ack(pocl_remote_ack &a)
{
  if (!ack_due_.load(std::memory_order_relaxed) || !ack_due_.exchange(false))
    return false;
  payload_acked_ = payload_seen_.load();
  a = pocl_remote_ack{{seen_[0].load(), seen_[1].load()}};
  acked_cmd_ = a.seen[0];
  return true;
}

void ClientChannel::reply(uint64_t id, cl_int status, const void *payload,
                          uint64_t payload_len)
{
  if (status != CL_SUCCESS)
    LOG_DEBUG(sid_, "request %llu failed: %d", (unsigned long long)id, status);
  pocl_remote_reply r{status, 0};
  send(Sock::Command, POCL_RMSG_REPLY, id, &r, sizeof r, payload, payload_len);
}

void ClientChannel::report_failure(uint64_t id, cl_int status)
{
  LOG_DEBUG(sid_, "command %llu failed: %d", (unsigned long long)id, status);
  pocl_remote_completion c{};
  c.status = status;
  send(Sock::Command, POCL_RMSG_COMPLETION, id, &c, sizeof c, nullptr, 0);
}

Conn ClientChannel::detach()
{
  Conn c;
  {
    std::lock_guard<std::mutex> lock(cmd_.mu);
    c = take(cmd_.link);
  }
  pocl_remote_link_shutdown(&c);
  pocl_remote_link_close(&c);
  // First, so that a send blocked on them lets go of data_.mu.
  drop_connection();
  {
    std::lock_guard<std::mutex> lock(data_.mu);
    c = take(data_.link);
  }
  pocl_remote_link_shutdown(&c);
  return c;
}

void ClientChannel::close_data(Conn c)
{
  // Closed only now: the data reader used them until it ended.
  pocl_remote_link_close(&c);
  std::lock_guard<std::mutex> lock(data_.mu);
  data_bulk_.ops->close(&data_bulk_);
}

Conn ClientChannel::take_data(bool &again)
{
  // First, so that a send blocked on them lets go of data_.mu.  Not on
  // the first data link: the bulk transport's shutdown ends UCX for the
  // session (a resumed one carries its payloads on TCP).
  again = has_data_;
  pocl_remote_link_shutdown(&data_.link);
  if (again)
    data_bulk_.ops->shutdown(&data_bulk_);
  Conn old;
  {
    std::lock_guard<std::mutex> lock(data_.mu);
    old = take(data_.link);
  }
  pocl_remote_link_shutdown(&old);
  return old;
}

void ClientChannel::end_data(Conn old, bool again)
{
  if (again) {
    // The old connection's: the client opens new ones after this link.
    std::lock_guard<std::mutex> lock(data_.mu);
    data_bulk_.ops->close(&data_bulk_);
  }
  if (old.up()) {
    pocl_remote_link_close(&old);
    LOG_INFO(sid_, "a newer data socket replaces the one attached");
  }
}

bool ClientChannel::install_data(Conn c, uint64_t client_seen)
{
  // The reply, then the messages the client missed, go out before the
  // link is published, so that nothing can overtake them.
  std::lock_guard<std::mutex> lock(data_.mu);
  if (!send_hello_reply(c, CL_SUCCESS, id_.data(), devices_) ||
      !replay(data_, c, client_seen))
    return false;
  pocl_remote_link_set(&data_.link, &c);
  has_data_ = true;
  return true;
}

Conn ClientChannel::data_link()
{
  // Under the lock: detach() takes the link away under it.
  std::lock_guard<std::mutex> lock(data_.mu);
  return data_.link;
}

bool ClientChannel::holds_data(const Conn &c) { return holds(data_.link, c); }

void ClientChannel::close_lanes()
{
  std::lock_guard<std::mutex> lock(data_.mu);
  pocl_remote_lanes_close(&lanes_, 1);
}

bool ClientChannel::attach_lane(Conn c, uint32_t number)
{
  std::lock_guard<std::mutex> lock(data_.mu);
  if (!pocl_remote_lanes_free(&lanes_, number))
    return false;
  // Before it is published: a striped send (which holds data_.mu) must not
  // put stripes ahead of the reply.
  if (!send_hello_reply(c, CL_SUCCESS, id_.data(), devices_) ||
      pocl_remote_lanes_attach(&lanes_, number, &c))
    return false;
  LOG_INFO(sid_, "lane %u attached", number);
  return true;
}

// The client's UCX_HELLO on its data link (c, whose reader read the
// header): this end answers there with its own offer where the policy
// wants UCX and the client offered, else declines; it sends over UCX once
// it accepted the client's offer.  Neither hello is logged or counted: a
// resumed link negotiates anew (the data bulk transport was closed with
// the old one).  False on a violation.
bool ClientChannel::ucx_hello(Conn c, const pocl_remote_hdr &hdr)
{
  pocl_remote_ucx_hello theirs, mine{};
  std::vector<uint8_t> addr(hdr.payload_size);
  if (!recv_exact(c, &theirs, sizeof theirs) ||
      !recv_exact(c, addr.data(), addr.size()))
    return false;
  void *my_addr = nullptr;
  size_t len = 0;
#ifdef POCL_REMOTE_HAVE_UCX
  if ((theirs.flags & POCL_REMOTE_UCX_OFFER) && ucx_wanted() &&
      pocl_remote_ucx_bulk_offer(&data_ucx_, &mine, &my_addr, &len) != 0)
    LOG_WARN(sid_, "UCX wanted but unavailable: the client's payloads stay "
                   "on its links");
#endif
  std::lock_guard<std::mutex> lock(data_.mu);
#ifdef POCL_REMOTE_HAVE_UCX
  // Accepted before the answer goes: the client sends over UCX once it
  // has it, and so may this end from then on.
  if (mine.flags & POCL_REMOTE_UCX_OFFER) {
    if (pocl_remote_ucx_bulk_accept(&data_ucx_, &theirs, addr.data(),
                                    addr.size()) == 0)
      LOG_INFO(sid_, "client data link: payloads over UCX");
    else
      LOG_WARN(sid_, "no UCX endpoint to the client: its payloads stay on "
                     "its links");
  }
#endif
  const bool sent = send_msg(data_.link, POCL_RMSG_UCX_HELLO, 0, &mine,
                             sizeof mine, my_addr, len);
#ifdef POCL_REMOTE_HAVE_UCX
  if (my_addr != nullptr)
    pocl_remote_ucx_bulk_free_address(&data_ucx_, my_addr);
#endif
  if (!(mine.flags & POCL_REMOTE_UCX_OFFER))
    LOG_DEBUG(sid_, "the client offered UCX: declined");
  return sent;
}

} // namespace pocld
