// session.cc - session lifecycle, the command reader and dispatch (the data
// socket's reader: data.cc).
#include "session.hh"

#include "log.hh"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <sys/socket.h>
#include <unistd.h>

namespace pocld {

namespace {

// Large staging blocks (kStagingLarge) are kept for reuse, process-wide: a
// fresh one costs a page fault and the zeroing of every 4 KiB page, which
// cut bulk transfer rates by a third, and pinning it much more.  Up to
// pool_max() in all: a sixteenth of the machine's memory, at least 1 GiB
// and at most 16 GiB.  A pool smaller than the transfers in flight frees
// and makes that much staging every time: 256 MiB migrations ran at 0.56
// GB/s against 1.7 for 64 MiB with a 256 MiB pool, 1 GiB ones at 1.59 GB/s
// against 11.5 for 256 MiB with a pool of 1 GiB (two H200).
uint64_t pool_max()
{
  static const uint64_t max = [] {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    const uint64_t ram =
        pages > 0 && page > 0 ? uint64_t(pages) * uint64_t(page) : 0;
    return std::min(std::max(ram / 16, uint64_t{1} << 30), uint64_t{16} << 30);
  }();
  return max;
}
std::mutex g_pool_mu;
std::vector<Staging *> g_pool; // guarded by g_pool_mu
uint64_t g_pool_bytes = 0;

// A kept block for `size` bytes, not more than twice as large, of the
// pinned memory of context ctx (nullptr: of the heap).
Staging *pooled(uint64_t size, cl_context ctx)
{
  std::lock_guard<std::mutex> lock(g_pool_mu);
  for (size_t i = 0; i < g_pool.size(); ++i) {
    Staging *s = g_pool[i];
    if (s->pin.ctx == ctx && s->capacity >= size && s->capacity / 2 <= size) {
      g_pool[i] = g_pool.back();
      g_pool.pop_back();
      g_pool_bytes -= s->capacity;
      return s;
    }
  }
  return nullptr;
}

// Page-locked staging: NVIDIA's OpenCL copies pageable memory through a
// buffer of its own, page-locked memory straight to the device.
Staging *pin_block(uint64_t size, const Pinning &pin)
{
  cl_int err = CL_SUCCESS;
  cl_mem m = clCreateBuffer(pin.ctx, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR,
                            size, nullptr, &err);
  if (m == nullptr) {
    LOG_WARN("-", "%llu bytes of pinned staging refused (%d)",
             (unsigned long long)size, err);
    return nullptr;
  }
  void *p = clEnqueueMapBuffer(pin.q, m, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0,
                               size, 0, nullptr, nullptr, &err);
  if (p == nullptr) {
    LOG_WARN("-", "mapping %llu bytes of pinned staging failed (%d)",
             (unsigned long long)size, err);
    clReleaseMemObject(m);
    return nullptr;
  }
  Staging *s = new (std::nothrow) Staging;
  if (s == nullptr) {
    clEnqueueUnmapMemObject(pin.q, m, p, 0, nullptr, nullptr);
    clReleaseMemObject(m);
    return nullptr;
  }
  clRetainContext(pin.ctx);
  clRetainCommandQueue(pin.q);
  s->capacity = size;
  s->bytes = static_cast<uint8_t *>(p);
  s->pinned = m;
  s->pin = pin;
  LOG_DEBUG("-", "pinned %llu bytes of staging", (unsigned long long)size);
  return s;
}

} // namespace

Staging *Staging::create(uint64_t size, int refs, const Pinning *pin)
{
  // Page-locked blocks take a buffer, a mapping and a driver call each:
  // small ones come in powers of two from 4 KiB, so that one is kept for
  // the next transfer of about the same size.
  uint64_t block = size;
  if (pin != nullptr && size < kStagingLarge)
    block = uint64_t{1} << (64 - __builtin_clzll(
                                     std::max(size, kPinnedSmallMin) - 1));
  Staging *s = pin != nullptr || size >= kStagingLarge
                   ? pooled(block, pin ? pin->ctx : nullptr)
                   : nullptr;
  if (s == nullptr && pin != nullptr)
    s = pin_block(block, *pin);
  if (s == nullptr) {
    if (size > SIZE_MAX - sizeof(Staging))
      return nullptr;
    void *mem = malloc(sizeof(Staging) + size);
    if (mem == nullptr)
      return nullptr;
    s = new (mem) Staging;
    s->capacity = size;
    s->bytes = reinterpret_cast<uint8_t *>(s + 1);
  }
  s->refs.store(refs, std::memory_order_relaxed);
  s->size = size;
  return s;
}

void Staging::unref()
{
  if (refs.fetch_sub(1, std::memory_order_acq_rel) != 1)
    return;
  if (capacity >= kStagingLarge || pinned != nullptr) {
    std::lock_guard<std::mutex> lock(g_pool_mu);
    if (g_pool_bytes + capacity <= pool_max()) {
      g_pool.push_back(this);
      g_pool_bytes += capacity;
      return;
    }
  }
  if (pinned != nullptr) {
    clEnqueueUnmapMemObject(pin.q, pinned, bytes, 0, nullptr, nullptr);
    clReleaseMemObject(pinned);
    clReleaseCommandQueue(pin.q);
    clReleaseContext(pin.ctx);
    delete this;
    return;
  }
  this->~Staging();
  free(this);
}

PeerLink::PeerLink()
{
  // A lane that failed under a message ends the link's lanes, not the
  // link; a striped PEER_DATA may come before the lane's opener published
  // it here: its receive waits up to 10 s.
  pocl_remote_lanes_init(&lanes, 1, 10000);
  pocl_remote_lanes_bulk(&bulk, &lanes);
#ifdef POCL_REMOTE_HAVE_UCX
  // UCX above them, which stays the lanes until both ends offered it
  // (ucx.cc).
  pocl_remote_bulk lanes_bulk = bulk;
  pocl_remote_ucx_bulk_init(&bulk, &ucx, lanes_bulk);
#endif
}

Session::Session(const Devices &devs, const SessionId &id, Conn cmd)
    : devs_(devs), id_(id), completions_(*this, devs, sid_),
      contexts_(devs.platforms.size(), nullptr)
{
  snprintf(sid_, sizeof sid_, "%02x%02x%02x%02x", id[0], id[1], id[2], id[3]);
  pocl_remote_link_set(&cmd_.link, &cmd);
  // The client stripes over a lane only once it has our HELLO_REPLY on it,
  // sent after the lane is attached here: no wait.
  pocl_remote_lanes_init(&lanes_, 0, 0);
  pocl_remote_lanes_bulk(&data_bulk_, &lanes_);
#ifdef POCL_REMOTE_HAVE_UCX
  pocl_remote_bulk lanes_bulk = data_bulk_;
  pocl_remote_ucx_bulk_init(&data_bulk_, &data_ucx_, lanes_bulk);
#endif
  waits_.reserve(64);
}

Session::~Session()
{
  completions_.stop();
  pocl_remote_link_close(&cmd_.link);
  pocl_remote_link_close(&data_.link);
  pocl_remote_lanes_close(&lanes_, 1);
}

bool Session::attach_lane(Conn c, uint32_t number)
{
  std::lock_guard<std::mutex> lock(data_.mu);
  if (!pocl_remote_lanes_free(&lanes_, number))
    return false;
  // Before it is published: a striped send (which holds data_.mu) must not
  // put stripes ahead of the reply.
  if (!send_hello_reply(c, CL_SUCCESS, id_.data(),
                        static_cast<uint32_t>(devs_.devices.size())) ||
      pocl_remote_lanes_attach(&lanes_, number, &c))
    return false;
  LOG_INFO(sid_, "lane %u attached", number);
  return true;
}

void Session::shutdown_sockets()
{
  drop_connection();
  for (PeerLink &l : peers_) {
    std::lock_guard<std::mutex> lock(l.mu);
    pocl_remote_link_shutdown(&l.link);
  }
}

namespace {

// The COMPLETIONs gathered by the thread that completes a cover.
struct Batch {
  Session *owner = nullptr;
  std::vector<std::pair<uint64_t, pocl_remote_completion>> msgs;
};
thread_local Batch t_batch;
// Two iovecs per message, well under IOV_MAX.
constexpr size_t kBatchMax = 256;

} // namespace

bool Session::begin_batch()
{
  if (t_batch.owner != nullptr)
    return false;
  t_batch.owner = this;
  return true;
}

void Session::end_batch()
{
  flush_batch();
  t_batch.owner = nullptr;
}

void Session::flush_batch()
{
  std::vector<std::pair<uint64_t, pocl_remote_completion>> &msgs =
      t_batch.msgs;
  if (t_batch.owner == this && !msgs.empty()) {
    Channel &c = cmd_;
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

void Session::send(Sock s, uint32_t type, uint64_t id, const void *body,
                   size_t body_len, const void *payload, uint64_t payload_len,
                   Staging *keep)
{
  // Without a data socket (a client that never opened one) everything goes
  // on the command socket.
  Channel &c = (s == Sock::Data && has_data_.load()) ? data_ : cmd_;
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

void Session::drop_connection()
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

void Session::trim(Channel &c, uint64_t seen)
{
  trim_log(c.log, seen);
}

bool Session::replay(Channel &c, Conn conn, uint64_t seen)
{
  if (seen > c.sent)
    return false;
  trim(c, seen);
  for (const OutMsg &o : c.log)
    if (!send_msg(conn, o.hdr.type, o.hdr.id, o.body, o.hdr.body_size,
                  o.payload, o.hdr.payload_size))
      return false;
  return true;
}

bool Session::ack(const Msg &m)
{
  auto a = load<pocl_remote_ack>(m.body);
  for (int i = 0; i < 2; ++i) {
    Channel &c = i ? data_ : cmd_;
    std::lock_guard<std::mutex> lock(c.mu);
    if (a.seen[i] > c.sent)
      return false;
    trim(c, a.seen[i]);
  }
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

void Session::send_ack()
{
  ack_due_ = false;
  payload_acked_ = payload_seen_.load();
  pocl_remote_ack a{{seen_[0].load(), seen_[1].load()}};
  acked_cmd_ = a.seen[0];
  send(Sock::Command, POCL_RMSG_ACK, 0, &a, sizeof a, nullptr, 0);
}

bool Session::take_ack(pocl_remote_ack &a)
{
  if (!ack_due_.load(std::memory_order_relaxed) || !ack_due_.exchange(false))
    return false;
  payload_acked_ = payload_seen_.load();
  a = pocl_remote_ack{{seen_[0].load(), seen_[1].load()}};
  acked_cmd_ = a.seen[0];
  return true;
}

void Session::reply(uint64_t id, cl_int status, const void *payload,
                    uint64_t payload_len)
{
  if (status != CL_SUCCESS)
    LOG_DEBUG(sid_, "request %llu failed: %d", (unsigned long long)id, status);
  pocl_remote_reply r{status, 0};
  send(Sock::Command, POCL_RMSG_REPLY, id, &r, sizeof r, payload, payload_len);
}

void Session::complete_now(uint64_t id, cl_int status)
{
  if (push_.active && push_.id == id) {
    LOG_DEBUG(sid_, "command %llu failed: %d", (unsigned long long)id, status);
    // The migration's event is the receiving peer's to complete.
    pocl_remote_peer_data pd{status, 0, 0, 0, 0};
    peer_send(push_.peer, POCL_RMSG_PEER_DATA, id, &pd, sizeof pd, nullptr, 0);
    return;
  }
  report_failure(id, status);
}

void Session::report_failure(uint64_t id, cl_int status)
{
  LOG_DEBUG(sid_, "command %llu failed: %d", (unsigned long long)id, status);
  pocl_remote_completion c{};
  c.status = status;
  send(Sock::Command, POCL_RMSG_COMPLETION, id, &c, sizeof c, nullptr, 0);
}

void Session::flush_dirty()
{
  for (Queue *q : dirty_) {
    clFlush(q->q);
    q->dirty = false;
  }
  dirty_.clear();
}

bool Session::run_commands()
{
  MsgReader reader(cmd_.link, sid_);
  Msg m;
  // Whatever ends the loop, no command may stay without an event or cover.
  struct CoverAtExit {
    Session *s;
    ~CoverAtExit() { s->cover_trailing(); }
  } cover_at_exit{this};
  for (;;) {
    // Native commands are flushed in batches, right before the reader
    // would block: one clFlush per burst instead of one per command.
    if (!dirty_.empty() && !reader.has_message())
      flush_dirty();
    MsgReader::Status st = reader.next(m);
    if (st == MsgReader::Status::Closed)
      return true;
    if (st != MsgReader::Status::Ok)
      return false;
    next_ndrange_queue_ = reader.next_ndrange_queue();
    if (m.hdr.type == POCL_RMSG_BYE) {
      LOG_INFO(sid_, "the client said goodbye");
      if (write_busy_)
        wait_write(); // its bytes came before the BYE
      return false;
    }
    if (m.hdr.type == POCL_RMSG_ACK ? !ack(m) : !dispatch(m)) {
      LOG_ERR(sid_,
              "protocol violation in message type %u id %llu, "
              "closing the session",
              m.hdr.type, (unsigned long long)m.hdr.id);
      return false;
    }
    if (trailing_ != nullptr && next_ndrange_queue_ != trailing_id_)
      cover_trailing();
    if (m.hdr.type == POCL_RMSG_ACK)
      continue;
    // Only this thread writes the counts: no read-modify-write.
    const uint64_t seen = seen_[0].load(std::memory_order_relaxed) + 1;
    const uint64_t bytes =
        payload_seen_.load(std::memory_order_relaxed) + m.hdr.payload_size;
    seen_[0].store(seen, std::memory_order_relaxed);
    payload_seen_.store(bytes, std::memory_order_relaxed);
    const uint64_t unacked = seen - acked_cmd_.load(std::memory_order_relaxed);
    if (unacked >= kAckAlone ||
        bytes - payload_acked_.load(std::memory_order_relaxed) >= kAckBytes)
      send_ack();
    else if (unacked >= kAckEvery && !ack_due_.load(std::memory_order_relaxed))
      ack_due_.store(true, std::memory_order_relaxed);
  }
}

void Session::detach()
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
  {
    std::unique_lock<std::mutex> lock(mu_);
    data_stop_ = true;
    data_cv_.notify_all();
    data_cv_.wait(lock, [&] { return !data_running_; });
  }
  // Closed only now: the data reader used them until it ended.
  pocl_remote_link_close(&c);
  {
    std::lock_guard<std::mutex> lock(data_.mu);
    data_bulk_.ops->close(&data_bulk_);
  }
  LOG_INFO(sid_, "the client's connection broke; keeping the session for "
                 "%d ms",
           session_grace_ms);
}

void Session::offer_resume(Resume r)
{
  // The connection the session still has, if the server has not seen it
  // break (or the client moved), goes first.  Not after publishing the
  // resume: the command reader could have taken it by then, and the new
  // connection would be dropped instead.
  drop_connection();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closing_) {
      send_hello_reply(r.link, CL_INVALID_VALUE, id_.data(), 0);
      pocl_remote_link_close(&r.link);
      return;
    }
    // superseded by the newer one
    pocl_remote_link_close(&pending_.link);
    pending_ = std::move(r);
  }
  resume_cv_.notify_all();
}

bool Session::wait_resume()
{
  Resume r;
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (fatal_ ||
        !resume_cv_.wait_for(lock, std::chrono::milliseconds(session_grace_ms),
                             [&] { return pending_.link.up() || closing_; }) ||
        closing_) {
      LOG_INFO(sid_, "no resume within %d ms", session_grace_ms);
      return false;
    }
    r = std::move(pending_);
    pending_ = Resume{};
    client_seen_data_ = r.seen[1];
  }
  uint64_t seen[2] = {seen_[0].load(), seen_[1].load()};
  bool bad_count;
  {
    std::lock_guard<std::mutex> lock(data_.mu);
    bad_count = r.seen[1] > data_.sent;
  }
  size_t replayed;
  {
    std::lock_guard<std::mutex> lock(cmd_.mu);
    if (bad_count ||
        !send_hello_reply(r.link, CL_SUCCESS, id_.data(),
                          uint32_t(devs_.devices.size()), seen) ||
        !replay(cmd_, r.link, r.seen[0])) {
      LOG_WARN(sid_, "resume from %s failed (bad counts or a broken socket)",
               r.peer.c_str());
      pocl_remote_link_close(&r.link);
      return true; // the next attempt may do better; the grace restarts
    }
    replayed = cmd_.log.size();
    pocl_remote_link_set(&cmd_.link, &r.link);
  }
  acked_cmd_ = seen[0];
  LOG_INFO(sid_,
           "resumed from %s: we had %llu + %llu of its messages, it had "
           "%llu + %llu of ours; re-sent %zu",
           r.peer.c_str(), (unsigned long long)seen[0],
           (unsigned long long)seen[1], (unsigned long long)r.seen[0],
           (unsigned long long)r.seen[1], replayed);
  return true;
}

bool Session::dispatch(const Msg &m)
{
  DecodeError e;
  if (!decode(m.hdr, m.body, m.payload, in_, e)) {
    LOG_ERR(sid_, "%s", e.why);
    return false;
  }
  POCLD_TRACE_MSG(Recv, m.hdr.type, m.hdr.id, m.body, m.hdr.payload_size, 0);
  // Behind a data-socket write that the data reader is still enqueueing,
  // only what cannot need it goes on (write.cc).
  if (__builtin_expect(write_busy_, 0) && !overtakes_write(in_))
    wait_write();
  switch (m.hdr.type) {
  case POCL_RMSG_CLOCK:
    return clock(m);
  case POCL_RMSG_DEVICE_INFO:
    return device_info(m);
  case POCL_RMSG_CREATE_QUEUE:
    return create_queue(m);
  case POCL_RMSG_CREATE_BUFFER:
    return create_buffer(m);
  case POCL_RMSG_CREATE_IMAGE:
    return create_image(m);
  case POCL_RMSG_BUILD_PROGRAM:
    return build_program(in_);
  case POCL_RMSG_CREATE_KERNEL:
    return create_kernel(in_);
  case POCL_RMSG_GET_PROGRAM_BINARY:
    return get_program_binary(m);
  case POCL_RMSG_CREATE_SAMPLER:
    return create_sampler(m);
  case POCL_RMSG_FINISH:
    return finish(m);
  case POCL_RMSG_SVM_ALLOC:
    return svm_alloc(m);
  case POCL_RMSG_SVM_FREE:
    return svm_free(m);
  case POCL_RMSG_FREE_QUEUE:
  case POCL_RMSG_FREE_BUFFER:
  case POCL_RMSG_FREE_PROGRAM:
  case POCL_RMSG_FREE_KERNEL:
  case POCL_RMSG_FREE_SAMPLER:
    return free_object(m);
  case POCL_RMSG_NOTIFY_EVENT:
    return notify(m);
  case POCL_RMSG_SUBSCRIBE:
    return subscribe(m);
  case POCL_RMSG_CONNECT_PEER:
    return connect_peer(in_);
  default:
    // MsgReader admits only the types above and the commands.
    return command(in_);
  }
}

void Session::teardown()
{
  {
    std::lock_guard<std::mutex> lock(mu_);
    closing_ = true;
  }
  data_cv_.notify_all();
  say_bye_to_peers();
  shutdown_sockets();
  {
    std::unique_lock<std::mutex> lock(mu_);
    data_cv_.wait(lock,
                  [&] { return !data_running_ && peers_running_ == 0; });
  }
  {
    std::lock_guard<std::mutex> lock(data_.mu);
    pocl_remote_lanes_close(&lanes_, 1);
  }
  for (Conn &c : retired_links_)
    pocl_remote_link_close(&c);
  retired_links_.clear();
  // Fail what can never happen now, so that every native command finishes
  // (a write never launched, because no data socket came, too).
  for (DataSlot &s : data_slots_)
    fail_slot(s);
  data_slots_.clear();
  for (auto &s : peer_slots_)
    finish_peer_slot(s.second, CL_DEVICE_NOT_AVAILABLE);
  peer_slots_.clear();
  completions_.fail_foreign();
  completions_.sweep_failed();
  for (auto &q : queues_)
    clFinish(q.second.q);
  completions_.sweep_failed();
  completions_.drain();
  for (auto &k : kernels_)
    clReleaseKernel(k.second.k);
  for (auto &p : programs_)
    clReleaseProgram(p.second.p);
  for (auto &s : samplers_)
    clReleaseSampler(s.second.s);
  for (auto &mem : mems_)
    release_mem(mem.second);
  svm_release_all();
  for (auto &q : queues_)
    clReleaseCommandQueue(q.second.q);
  for (cl_command_queue tq : transfer_)
    if (tq != nullptr)
      clReleaseCommandQueue(tq);
  transfer_.clear();
  for (cl_context c : contexts_)
    if (c != nullptr)
      clReleaseContext(c);
  LOG_DEBUG(sid_,
            "released %zu queues, %zu mems, %zu programs, %zu kernels, "
            "%zu samplers",
            queues_.size(), mems_.size(), programs_.size(), kernels_.size(),
            samplers_.size());
  kernels_.clear();
  programs_.clear();
  samplers_.clear();
  mems_.clear();
  queues_.clear();
  dirty_.clear();
}

} // namespace pocld
