// session.cc - session lifecycle, the two socket readers and dispatch.
#include "session.hh"

#include "log.hh"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <sys/socket.h>
#include <unistd.h>

namespace pocld {

namespace {

// Large staging blocks are kept for reuse, process-wide: a fresh one costs
// a page fault and the zeroing of every 4 KiB page, which cut bulk transfer
// rates by a third.  Blocks of at least kPoolMin, up to kPoolMax in all.
constexpr uint64_t kPoolMin = 1u << 20;
// 1 GiB: a pool smaller than the largest transfers (256 MiB and its 8-byte
// content size) frees and faults in that much staging every time (0.56 GB/s
// for 256 MiB migrations against 1.7 for 64 MiB, H200).
constexpr uint64_t kPoolMax = uint64_t{1} << 30;
std::mutex g_pool_mu;
std::vector<Staging *> g_pool; // guarded by g_pool_mu
uint64_t g_pool_bytes = 0;

// A kept block for `size` bytes, not more than twice as large.
Staging *pooled(uint64_t size)
{
  std::lock_guard<std::mutex> lock(g_pool_mu);
  for (size_t i = 0; i < g_pool.size(); ++i) {
    Staging *s = g_pool[i];
    if (s->capacity >= size && s->capacity / 2 <= size) {
      g_pool[i] = g_pool.back();
      g_pool.pop_back();
      g_pool_bytes -= s->capacity;
      return s;
    }
  }
  return nullptr;
}

} // namespace

Staging *Staging::create(uint64_t size, int refs)
{
  Staging *s = size >= kPoolMin ? pooled(size) : nullptr;
  if (s == nullptr) {
    if (size > SIZE_MAX - sizeof(Staging))
      return nullptr;
    void *mem = malloc(sizeof(Staging) + size);
    if (mem == nullptr)
      return nullptr;
    s = new (mem) Staging;
    s->capacity = size;
  }
  s->refs.store(refs, std::memory_order_relaxed);
  s->size = size;
  return s;
}

void Staging::unref()
{
  if (refs.fetch_sub(1, std::memory_order_acq_rel) != 1)
    return;
  if (capacity >= kPoolMin) {
    std::lock_guard<std::mutex> lock(g_pool_mu);
    if (g_pool_bytes + capacity <= kPoolMax) {
      g_pool.push_back(this);
      g_pool_bytes += capacity;
      return;
    }
  }
  this->~Staging();
  free(this);
}

Session::Session(const Devices &devs, const SessionId &id, int cmd_fd)
    : devs_(devs), id_(id), contexts_(devs.platforms.size(), nullptr)
{
  snprintf(sid_, sizeof sid_, "%02x%02x%02x%02x", id[0], id[1], id[2], id[3]);
  cmd_.fd = cmd_fd;
  waits_.reserve(64);
}

Session::~Session()
{
  stop_waiter();
  if (cmd_.fd >= 0)
    close(cmd_.fd);
  if (data_.fd >= 0)
    close(data_.fd);
}

void Session::shutdown_sockets()
{
  int fd = cmd_.fd.load();
  if (fd >= 0)
    shutdown(fd, SHUT_RDWR);
  fd = data_.fd.load();
  if (fd >= 0)
    shutdown(fd, SHUT_RDWR);
  for (PeerLink &l : peers_) {
    std::lock_guard<std::mutex> lock(l.mu);
    if (l.fd >= 0)
      shutdown(l.fd, SHUT_RDWR);
  }
}

bool Session::send(Sock s, uint32_t type, uint64_t id, const void *body,
                   size_t body_len, const void *payload, uint64_t payload_len)
{
  // Without a data socket (a client that never opened one) everything goes
  // on the command socket.
  Channel &c = (s == Sock::Data && data_.fd.load() >= 0) ? data_ : cmd_;
  std::lock_guard<std::mutex> lock(c.mu);
  if (broken_.load(std::memory_order_relaxed))
    return false;
  if (send_msg(c.fd.load(), type, id, body, body_len, payload, payload_len))
    return true;
  // A peer that is gone or stopped reading (SO_SNDTIMEO): end the session.
  LOG_WARN(sid_, "send failed (%s), closing the session", strerror(errno));
  broken_ = true;
  shutdown_sockets();
  return false;
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
  LOG_DEBUG(sid_, "command %llu failed: %d", (unsigned long long)id, status);
  if (push_.active && push_.id == id) {
    // The migration's event is the receiving peer's to complete.
    pocl_remote_peer_data pd{status, 0, 0, 0, 0};
    peer_send(push_.peer, POCL_RMSG_PEER_DATA, id, &pd, sizeof pd, nullptr, 0);
    return;
  }
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

void Session::run_commands()
{
  MsgReader reader(cmd_.fd.load(), sid_);
  Msg m;
  for (;;) {
    // Native commands are flushed in batches, right before the reader
    // would block: one clFlush per burst instead of one per command.
    if (!dirty_.empty() && !reader.has_message())
      flush_dirty();
    MsgReader::Status st = reader.next(m);
    if (st != MsgReader::Status::Ok)
      break;
    if (!dispatch(m)) {
      LOG_ERR(sid_,
              "protocol violation in message type %u id %llu, "
              "closing the session",
              m.hdr.type, (unsigned long long)m.hdr.id);
      break;
    }
  }
}

bool Session::dispatch(const Msg &m)
{
  DecodeError e;
  if (!decode(m.hdr, m.body, m.payload, in_, e)) {
    LOG_ERR(sid_, "%s", e.why);
    return false;
  }
  switch (m.hdr.type) {
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
  case POCL_RMSG_CREATE_SAMPLER:
    return create_sampler(m);
  case POCL_RMSG_FINISH:
    return finish(m);
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

bool Session::attach_data(int fd)
{
  std::lock_guard<std::mutex> lock(mu_);
  if (closing_ || data_.fd.load() >= 0)
    return false;
  // The reply goes out before the socket is published, so that no
  // completion can precede it.
  if (!send_hello_reply(fd, CL_SUCCESS, id_.data(),
                        static_cast<uint32_t>(devs_.devices.size())))
    return false;
  data_.fd = fd;
  data_running_ = true;
  return true;
}

void Session::fail_slot(DataSlot &s)
{
  if (s.ue != nullptr) {
    clSetUserEventStatus(s.ue, CL_DEVICE_NOT_AVAILABLE);
    clReleaseEvent(s.ue);
  }
  if (s.staging != nullptr)
    s.staging->unref();
}

static bool discard(int fd, uint64_t n)
{
  char sink[16384];
  while (n > 0) {
    uint64_t k = n < sizeof sink ? n : sizeof sink;
    if (!recv_exact(fd, sink, k))
      return false;
    n -= k;
  }
  return true;
}

void Session::run_data()
{
  int fd = data_.fd.load();
  LOG_DEBUG(sid_, "data socket attached");
  for (;;) {
    pocl_remote_hdr h;
    if (!recv_exact(fd, &h, sizeof h))
      break;
    DecodeError e;
    if (!check_data_header(h, e)) {
      LOG_ERR(sid_, "%s", e.why);
      break;
    }
    // The command reader registers the slot when it handles the WRITE*;
    // DATA can overtake it since the sockets are independent.
    DataSlot s;
    {
      std::unique_lock<std::mutex> lock(mu_);
      data_cv_.wait(lock, [&] { return !data_slots_.empty() || closing_; });
      if (closing_)
        break;
      s = data_slots_.front();
      data_slots_.pop_front();
    }
    if (h.id != s.id || h.payload_size != s.size) {
      LOG_ERR(sid_,
              "DATA for event %llu with %llu bytes, expected event %llu "
              "with %llu bytes",
              (unsigned long long)h.id, (unsigned long long)h.payload_size,
              (unsigned long long)s.id, (unsigned long long)s.size);
      fail_slot(s);
      break;
    }
    bool ok = s.staging ? recv_exact(fd, s.staging->data(), s.size)
                        : discard(fd, s.size);
    if (!ok) {
      fail_slot(s);
      break;
    }
    if (s.ue != nullptr) {
      clSetUserEventStatus(s.ue, CL_COMPLETE);
      clReleaseEvent(s.ue);
    }
    if (s.staging != nullptr)
      s.staging->unref();
  }
  // Writes cannot complete without the data socket: end the session.
  shutdown_sockets();
  std::lock_guard<std::mutex> lock(mu_);
  data_running_ = false;
  data_cv_.notify_all();
}

void Session::teardown()
{
  {
    std::lock_guard<std::mutex> lock(mu_);
    closing_ = true;
  }
  data_cv_.notify_all();
  shutdown_sockets();
  {
    std::unique_lock<std::mutex> lock(mu_);
    data_cv_.wait(lock,
                  [&] { return !data_running_ && peers_running_ == 0; });
  }
  // Fail what can never happen now, so that every native command finishes.
  for (DataSlot &s : data_slots_)
    fail_slot(s);
  data_slots_.clear();
  for (auto &s : peer_slots_)
    finish_peer_slot(s.second, CL_DEVICE_NOT_AVAILABLE);
  peer_slots_.clear();
  {
    std::lock_guard<std::mutex> lock(foreign_mu_);
    for (auto &f : foreign_)
      for (auto &ue : f.second.ues) {
        clSetUserEventStatus(ue.second, CL_DEVICE_NOT_AVAILABLE);
        clReleaseEvent(ue.second);
      }
    foreign_.clear();
    foreign_known_.clear();
  }
  sweep_failed();
  for (auto &q : queues_)
    clFinish(q.second.q);
  sweep_failed();
  // Callbacks may still be running after clFinish; they touch this session.
  draining_ = true;
  {
    std::unique_lock<std::mutex> lock(ev_mu_);
    drained_cv_.wait(lock, [&] { return inflight_.load() == 0; });
  }
  stop_waiter();
  spare_.clear();
  for (cl_event ev : failed_)
    clReleaseEvent(ev);
  failed_.clear();
  for (auto &k : kernels_)
    clReleaseKernel(k.second.k);
  for (auto &p : programs_)
    clReleaseProgram(p.second.p);
  for (auto &s : samplers_)
    clReleaseSampler(s.second.s);
  for (auto &mem : mems_)
    release_mem(mem.second);
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
