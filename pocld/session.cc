// session.cc - session lifecycle: its staging pool, its links' loss and
// resume, and its teardown (the command reader and dispatch: commands.cc;
// the data socket's reader: data.cc).
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

Session::Session(const Devices &devs, const SessionId &id, Conn cmd)
    : devs_(devs), id_(id),
      client_(id, sid_, static_cast<uint32_t>(devs.devices.size()), cmd),
      completions_(*this, client_, devs, sid_),
      contexts_(devs.platforms.size(), nullptr)
{
  snprintf(sid_, sizeof sid_, "%02x%02x%02x%02x", id[0], id[1], id[2], id[3]);
  waits_.reserve(64);
}

Session::~Session() { completions_.stop(); }

void Session::shutdown_sockets()
{
  client_.drop_connection();
  for (PeerLink &l : peers_) {
    std::lock_guard<std::mutex> lock(l.mu);
    pocl_remote_link_shutdown(&l.link);
  }
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
  client_.report_failure(id, status);
}

void Session::flush_dirty()
{
  for (Queue *q : dirty_) {
    clFlush(q->q);
    q->dirty = false;
  }
  dirty_.clear();
}

void Session::detach()
{
  Conn c = client_.detach();
  {
    std::unique_lock<std::mutex> lock(mu_);
    data_stop_ = true;
    data_cv_.notify_all();
    data_cv_.wait(lock, [&] { return !data_running_; });
  }
  client_.close_data(c);
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
  client_.drop_connection();
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
  uint64_t seen[2];
  size_t replayed;
  if (!client_.resume(r, seen, replayed)) {
    LOG_WARN(sid_, "resume from %s failed (bad counts or a broken socket)",
             r.peer.c_str());
    return true; // the next attempt may do better; the grace restarts
  }
  LOG_INFO(sid_,
           "resumed from %s: we had %llu + %llu of its messages, it had "
           "%llu + %llu of ours; re-sent %zu",
           r.peer.c_str(), (unsigned long long)seen[0],
           (unsigned long long)seen[1], (unsigned long long)r.seen[0],
           (unsigned long long)r.seen[1], replayed);
  return true;
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
  client_.close_lanes();
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
  cmdbuf_release_all();
  for (auto &k : kernels_)
    clReleaseKernel(k.second.k);
  for (auto &p : programs_)
    clReleaseProgram(p.second.p);
  built_.clear();
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
