// migrate.cc - buffers moving between servers (PUSH, MIGRATE_IN) and the
// cl_pocl_content_size transfers (READ and COPY of the meaningful bytes).
#include "run.hh"

#include "log.hh"

#include "pocl_remote_workers.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <new>

namespace pocld {

// The whole of a buffer or image, as the region of a transfer.
struct Whole {
  size_t origin[3] = {0, 0, 0};
  size_t region[3] = {0, 1, 1};
  uint64_t bytes = 0;
};

namespace {

// Buffers at least this large are pushed in chunks (growing to
// kPushReadMax: read_chunks), each sent as soon as its read is done, while
// the later ones are still being read and the receiver writes the earlier
// ones.  Only these go striped over the peer lanes: their pusher is a
// thread that can wait for the PEER_ACK.
constexpr uint64_t kStreamMin = POCL_REMOTE_STRIPE_MIN;
// The chunks read by the time one is sent go along with it, up to this
// much over a link without lanes or UCX: the receiver writes a plain
// PEER_DATA once it is all in, so a larger one would leave the network idle
// while the last write runs (16 MiB: 0.7 ms at 25 GB/s), a smaller one cost
// more forks and joins of the lanes.  A striped one (or one over UCX) is
// written by 4 MiB as it comes: every chunk read by then goes along, without a bound
// (each message is a fork and join of the lanes' threads at both ends; 16
// MiB ones moved 64 MiB migrations at 52% of the client's write rate, two
// H200).
constexpr uint64_t kPushMessageMax = 16u << 20;
// The largest read of a streamed PUSH.  Each read is enqueued by the
// command reader before the pusher starts, 12-33 us each on an H100 (a 1
// GiB migration's 258 reads of 4 MiB held its first byte 3.8-8.6 ms, traced);
// a stripe waits for the whole read under it, so a larger read would hold
// the network longer where the device reads slower than the lanes send.
constexpr uint64_t kPushReadMax = 16u << 20;

bool whole(const Mem &m, Whole &w)
{
  if (m.pixel_size == 0) {
    w.region[0] = m.size;
    w.bytes = m.size;
    return true;
  }
  size_t width = 0, height = 0, depth = 0, array = 0;
  cl_mem_object_type type = 0;
  clGetImageInfo(m.m, CL_IMAGE_WIDTH, sizeof width, &width, nullptr);
  clGetImageInfo(m.m, CL_IMAGE_HEIGHT, sizeof height, &height, nullptr);
  clGetImageInfo(m.m, CL_IMAGE_DEPTH, sizeof depth, &depth, nullptr);
  clGetImageInfo(m.m, CL_IMAGE_ARRAY_SIZE, sizeof array, &array, nullptr);
  clGetMemObjectInfo(m.m, CL_MEM_TYPE, sizeof type, &type, nullptr);
  w.region[0] = width;
  w.region[1] = std::max<size_t>(height, 1);
  w.region[2] = std::max<size_t>(depth, 1);
  if (type == CL_MEM_OBJECT_IMAGE1D_ARRAY)
    w.region[1] = array;
  if (type == CL_MEM_OBJECT_IMAGE2D_ARRAY)
    w.region[2] = array;
  w.bytes = uint64_t(w.region[0]) * w.region[1] * w.region[2] * m.pixel_size;
  return w.bytes > 0;
}

cl_int read_whole(cl_command_queue q, const Mem &m, const Whole &w, void *dst,
                  cl_uint n, const cl_event *waits, cl_event *ev,
                  cl_bool blocking = CL_FALSE)
{
  if (m.pixel_size == 0)
    return clEnqueueReadBuffer(q, m.buf, blocking, 0, w.bytes, dst, n, waits,
                               ev);
  return clEnqueueReadImage(q, m.m, blocking, w.origin, w.region, 0, 0, dst, n,
                            waits, ev);
}

// This server's side of a migration: its queue, the buffer or image (of
// c.size bytes) and the content-size buffer if one is named.
cl_int check_migration(const pocl_remote_migrate &c, const Queue *q,
                       const Mem *mem, uint64_t size_id, const Mem *size,
                       Whole &w)
{
  if (q == nullptr)
    return CL_INVALID_COMMAND_QUEUE;
  if (mem == nullptr || (size_id && size == nullptr) || !whole(*mem, w) ||
      w.bytes != c.size || (size != nullptr && size->size < 8))
    return CL_INVALID_MEM_OBJECT;
  return CL_SUCCESS;
}

} // namespace

cl_command_queue Session::transfer_queue(const Queue &q, cl_int &err)
{
  if (transfer_.size() < devs_.devices.size())
    transfer_.resize(devs_.devices.size(), nullptr);
  cl_command_queue &tq = transfer_[q.device];
  if (tq == nullptr)
    tq = clCreateCommandQueue(contexts_[q.platform], devs_.devices[q.device].id,
                              0, &err);
  return tq;
}

const Pinning *Session::pinning(const Queue &q, uint64_t size)
{
  if (size < kStagingLarge)
    return nullptr;
  return platform_pinning(q);
}

const Pinning *Session::platform_pinning(const Queue &q)
{
  if (!devs_.platforms[q.platform].pin_staging)
    return nullptr;
  if (pins_.size() < devs_.platforms.size())
    pins_.resize(devs_.platforms.size(), Pinning{nullptr, nullptr});
  Pinning &pin = pins_[q.platform];
  cl_int err = CL_SUCCESS;
  if (pin.q == nullptr && (pin.q = transfer_queue(q, err)) != nullptr)
    pin.ctx = contexts_[q.platform];
  return pin.q != nullptr ? &pin : nullptr;
}

// Reads are pinned at every size: NVIDIA ends a non-blocking read into
// pageable memory some 40 us after the command before it, one into pinned
// memory some 5 us after (measured natively on an H100: the dot's
// 4 KiB read-back).  But NVIDIA calls a read into pinned staging back 12-20
// ms late when it waited on a user event (doc/benchmarks.md, "NVIDIA's
// completion callbacks"), and
// pocld learns such a command's completion from its callback: pageable
// staging then.  The gating is asked only where pinning applies, so that
// other reads take no lock for it.
const Pinning *Session::read_pinning(const WaitList &waits, uint64_t queue_id,
                                     const Queue &q)
{
  const Pinning *pin = platform_pinning(q);
  if (pin != nullptr && completions_.gated_now(waits, queue_id))
    return nullptr;
  return pin;
}

Mem *Session::find_mem(uint64_t id)
{
  auto it = mems_.find(id);
  return it == mems_.end() ? nullptr : &it->second;
}

// PUSH: read the buffer (and its content size) once the waits are done; the
// completion goes to the peer as PEER_DATA (send_push), not to the client.
bool Session::push(const Decoded &d)
{
  const pocl_remote_migrate &c = d.migrate;
  const uint64_t id = d.hdr.id;
  Queue *q = find_queue(c.cmd.queue_id);
  Mem *src = find_mem(c.src_id);
  Mem *size = c.src_size_id ? find_buffer(c.src_size_id) : nullptr;
  Whole w;
  cl_int err = check_migration(c, q, src, c.src_size_id, size, w);
  // Large buffers go in chunks, each sent as soon as it is read.
  const bool stream =
      err == CL_SUCCESS && src->pixel_size == 0 && c.size >= kStreamMin;
  Staging *st = nullptr;
  // A streamed push is waited for by its pusher thread, never called back:
  // read_pinning's exception for gated reads does not apply to it.
  if (err == CL_SUCCESS &&
      (st = Staging::create(
           c.size + 8, 1,
           stream ? pinning(*q, c.size)
                  : read_pinning(d.waits, c.cmd.queue_id, *q))) == nullptr)
    err = CL_OUT_OF_HOST_MEMORY;
  if (err != CL_SUCCESS) {
    LOG_WARN(sid_, "PUSH %llu to peer %u refused: %d", (unsigned long long)id,
             c.peer, err);
    pocl_remote_peer_data pd{err, 0, 0, 0, 0};
    peer_send(c.peer, POCL_RMSG_PEER_DATA, id, &pd, sizeof pd, nullptr, 0);
    return true;
  }
  st->size = c.size;
  // run() and complete_now() read these (see push_).
  push_ = PushState{true, id, c.peer, c.size, size != nullptr};
  if (c.size <= kBlockingMax && push_now(d, *q, *src, size, w, st)) {
    push_.active = false;
    return true;
  }
  const cl_command_queue cq = q->q;
  auto read_data = [&](cl_uint n, const cl_event *wl, cl_event *ev) {
    return read_whole(cq, *src, w, st->data(), n, wl, ev);
  };
  std::vector<cl_event> chunks;
  std::vector<uint64_t> ends;
  cl_event size_read = nullptr;
  // The size value first, then the chunks after it; the last chunk's event
  // stands for the command.
  auto read_chunks = [&](cl_uint n, const cl_event *wl, cl_event *ev) {
    std::vector<cl_event> after(wl, wl + n);
    cl_int e = CL_SUCCESS;
    if (size != nullptr) {
      e = clEnqueueReadBuffer(cq, size->buf, CL_FALSE, 0, 8,
                              st->data() + c.size, n, wl, &size_read);
      after.push_back(size_read);
    }
    // The first read is a stripe's and each one after it twice the one
    // before, up to kPushReadMax: the first bytes leave after a 1 MiB read,
    // not a 4 MiB one, and a large buffer takes few reads.
    uint64_t piece = POCL_REMOTE_STRIPE;
    for (uint64_t off = 0, len = 0; off < c.size && e == CL_SUCCESS;
         off += len, piece = std::min(2 * piece, kPushReadMax)) {
      len = std::min(piece, c.size - off);
      cl_event ce = nullptr;
      e = clEnqueueReadBuffer(cq, src->buf, CL_FALSE, off, len,
                              st->data() + off, cl_uint(after.size()),
                              after.data(), &ce);
      if (ce != nullptr) {
        chunks.push_back(ce);
        ends.push_back(off + len);
      }
    }
    if (e != CL_SUCCESS)
      return e;
    clRetainEvent(chunks.back());
    *ev = chunks.back();
    return CL_SUCCESS;
  };
  Outcome o = run(id, c.cmd, d.waits, *q, st,
                  stream ? Pending::PushStream : Pending::Push, nullptr,
                  [&](cl_uint n, const cl_event *wl, cl_event *ev) {
                    if (stream)
                      return read_chunks(n, wl, ev);
                    if (size == nullptr)
                      return read_data(n, wl, ev);
                    return chained(
                        n, wl, ev,
                        [&](cl_uint n1, const cl_event *w1, cl_event *e1) {
                          return clEnqueueReadBuffer(cq, size->buf, CL_FALSE,
                                                     0, 8, st->data() + c.size,
                                                     n1, w1, e1);
                        },
                        read_data);
                  });
  push_.active = false;
  LOG_DEBUG(sid_, "PUSH %llu of %llu bytes to peer %u enqueued at %llu us",
            (unsigned long long)id, (unsigned long long)c.size, c.peer,
            (unsigned long long)(realtime_ns() / 1000));
  if (stream && o == Outcome::Ok) {
    // Not completed before the pusher starts: only the pusher does.
    Pending *p = completions_.find(id);
    // On a thread that stays (pocl_remote_workers.c) rather than one made
    // by the command reader per large PUSH: on the four-H100 host a thread
    // made and joined took 65 us, a job handed to a parked one 25
    // (doc/benchmarks.md, "Stripe threads that stay").
    struct Job {
      Session *s;
      Pending *p;
      std::vector<cl_event> chunks;
      std::vector<uint64_t> ends;
      cl_event size_read;
    };
    auto run_job = [](void *arg) {
      std::unique_ptr<Job> j(static_cast<Job *>(arg));
      j->s->stream_push(j->p, std::move(j->chunks), std::move(j->ends),
                        j->size_read);
    };
    auto *job = new (std::nothrow) Job{this, p, chunks, ends, size_read};
    if (job == nullptr || pocl_remote_worker_run(run_job, job) != 0) {
      delete job;
      stream_push(p, chunks, ends, size_read);
    }
    return true;
  }
  for (cl_event ce : chunks)
    clReleaseEvent(ce);
  if (size_read != nullptr)
    clReleaseEvent(size_read);
  return o != Outcome::Protocol;
}

// The pusher of a large PUSH: sends each chunk as PEER_DATA once its read
// is done, then completes the command (its last action: the session may be
// gone after).  A failure after some chunks still ends the migration on the
// receiver, with a PEER_DATA carrying the error.
void Session::stream_push(Pending *p, std::vector<cl_event> chunks,
                          std::vector<uint64_t> ends, cl_event size_read)
{
  auto wait = [](cl_event e) {
    clWaitForEvents(1, &e);
    cl_int st = CL_COMPLETE;
    clGetEventInfo(e, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st,
                   nullptr);
    return st < 0 ? st : CL_COMPLETE;
  };
  const uint8_t *bytes = p->staging->data();
  pocl_remote_peer_data pd{CL_COMPLETE, 0, 0, 0, p->push_size};
  cl_int status = CL_COMPLETE;
  if (size_read != nullptr) {
    status = wait(size_read);
    clReleaseEvent(size_read);
    if (status == CL_COMPLETE) {
      memcpy(&pd.size_value, bytes + p->push_size, 8);
      pd.flags = POCL_REMOTE_PEER_DATA_HAS_SIZE;
      pd.total = std::min(pd.total, pd.size_value);
    }
  }
  auto read_already = [](cl_event e) {
    cl_int st = CL_QUEUED;
    clGetEventInfo(e, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st,
                   nullptr);
    return st <= CL_COMPLETE;
  };
  bool sent = false; // a content size of 0 still sends one (empty) chunk
  bool striped = false;
  const uint64_t message_max =
      peer_writes_as_it_comes(p->peer) ? UINT64_MAX : kPushMessageMax;
  {
    // Before the first byte goes: the PEER_ACK may come before we wait.
    std::lock_guard<std::mutex> lock(mu_);
    ack_waits_.emplace(p->id, PeerAckWait{p->peer});
  }
  if (status == CL_COMPLETE && pd.total > 0 && message_max == UINT64_MAX) {
    status = push_whole(p, chunks, ends, pd, striped);
    chunks.clear();
  }
  for (size_t k = 0; k < chunks.size(); ++k) {
    // Waited for even when not sent: each reads into the staging.
    cl_int st = wait(chunks[k]);
    if (status == CL_COMPLETE && (pd.offset < pd.total || !sent))
      status = st;
    clReleaseEvent(chunks[k]);
    // Chunks the device has read meanwhile go along: one large PEER_DATA
    // stripes better over the peer lanes than several (each a fork and
    // join of the lanes' threads at both ends).
    while (status == CL_COMPLETE && k + 1 < chunks.size() &&
           ends[k] < pd.total && ends[k + 1] - pd.offset <= message_max &&
           read_already(chunks[k + 1])) {
      status = wait(chunks[++k]);
      clReleaseEvent(chunks[k]);
    }
    uint64_t end = std::min(ends[k], pd.total);
    if (status != CL_COMPLETE || (end <= pd.offset && sent))
      continue;
    if (!peer_send(p->peer, POCL_RMSG_PEER_DATA, p->id, &pd, sizeof pd,
                   bytes + pd.offset, end - pd.offset, &striped, p->staging))
      status = CL_DEVICE_NOT_AVAILABLE;
    sent = true;
    pd.offset = end;
  }
  // push_whole has sent its own outcome.
  if (status != CL_COMPLETE &&
      !(pd.flags & POCL_REMOTE_PEER_DATA_STATUS_FOLLOWS)) {
    pd.status = status;
    peer_send(p->peer, POCL_RMSG_PEER_DATA, p->id, &pd, sizeof pd, nullptr, 0);
  } else if (status == CL_COMPLETE && striped)
    status = settle_push(p->peer, p->id, pd, p->staging);
  {
    std::lock_guard<std::mutex> lock(mu_);
    ack_waits_.erase(p->id);
  }
  completions_.complete(p, status);
}

// Over lanes or UCX a large PUSH goes as one PEER_DATA whose stripes leave
// as the reads under them end, and its outcome after it (STATUS_FOLLOWS,
// protocol 16): as a message per chunk read, the first waited for its
// read, and each was a fork and join of the lanes' threads at both ends
// that waited for the one before.  Releases the chunks' events.
cl_int Session::push_whole(Pending *p, const std::vector<cl_event> &chunks,
                           const std::vector<uint64_t> &ends,
                           pocl_remote_peer_data &pd, bool &striped)
{
  struct Reads {
    const std::vector<cl_event> &chunks;
    const std::vector<uint64_t> &ends;
    std::atomic<size_t> done{0}; // chunks [0, done) have ended
  } reads{chunks, ends};
  // From the lanes' threads, each before its stripe leaves.
  auto ready = [](void *arg, uint64_t upto) {
    Reads &r = *static_cast<Reads *>(arg);
    size_t done = r.done.load(std::memory_order_acquire);
    size_t need = done;
    while (need < r.ends.size() && (need == 0 ? 0 : r.ends[need - 1]) < upto)
      ++need;
    for (size_t k = done; k < need; ++k)
      clWaitForEvents(1, &r.chunks[k]);
    while (done < need &&
           !r.done.compare_exchange_weak(done, need, std::memory_order_release,
                                         std::memory_order_acquire)) {
    }
  };
  // The first read first, outside the link's lock: the reads wait for the
  // PUSH's waits, which may need the command reader (a user event it
  // completes), and the command reader may need the link's lock (a
  // matmul's gather on four servers hung so).  Once it has ended, the
  // others wait for the device alone.
  ready(&reads, 1);
  const pocl_remote_bulk_src src{ready, &reads};
  pd.flags |= POCL_REMOTE_PEER_DATA_STATUS_FOLLOWS;
  cl_int status = CL_COMPLETE;
  if (!peer_send(p->peer, POCL_RMSG_PEER_DATA, p->id, &pd, sizeof pd,
                 p->staging->data(), pd.total, &striped, p->staging, &src))
    status = CL_DEVICE_NOT_AVAILABLE;
  // The reads under the content have ended (peer_send saw to it); those
  // past it are waited for too: they read into the staging.
  for (size_t k = 0; k < chunks.size(); ++k) {
    cl_int st = CL_COMPLETE;
    clWaitForEvents(1, &chunks[k]);
    clGetEventInfo(chunks[k], CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st,
                   &st, nullptr);
    if (status == CL_COMPLETE && st < 0 &&
        (k == 0 ? 0 : ends[k - 1]) < pd.total)
      status = st;
    clReleaseEvent(chunks[k]);
  }
  pocl_remote_peer_data fin = pd;
  fin.status = status;
  fin.flags = (pd.flags & POCL_REMOTE_PEER_DATA_HAS_SIZE) |
              POCL_REMOTE_PEER_DATA_STATUS;
  fin.offset = pd.total;
  if (!peer_send(p->peer, POCL_RMSG_PEER_DATA, p->id, &fin, sizeof fin,
                 nullptr, 0) &&
      status == CL_COMPLETE)
    status = CL_DEVICE_NOT_AVAILABLE;
  return status;
}

// A striped push is done once the receiver says so: until then a lane that
// failed may have lost bytes that the sender had handed to the network, and
// the receiver asks for them again (PEER_ACK), sent on the link alone.
cl_int Session::settle_push(uint32_t peer, uint64_t id,
                            pocl_remote_peer_data pd, Staging *st)
{
  const uint8_t *bytes = st->data();
  pocl_remote_peer_ack a;
  while (wait_peer_ack(peer, id, a)) {
    if (a.status == CL_SUCCESS)
      return CL_COMPLETE;
    if (a.offset >= pd.total) {
      LOG_ERR(sid_, "peer %u: PEER_ACK asks %llu again from %llu of %llu",
              peer, (unsigned long long)id, (unsigned long long)a.offset,
              (unsigned long long)pd.total);
      break;
    }
    LOG_WARN(sid_, "peer %u: migration %llu sent again from %llu on the link",
             peer, (unsigned long long)id, (unsigned long long)a.offset);
    if (peer < POCL_REMOTE_MAX_PEERS)
      drop_peer_lanes(peers_[peer]);
    for (pd.offset = a.offset; pd.offset < pd.total; pd.offset += kChunk)
      if (!peer_send(peer, POCL_RMSG_PEER_DATA, id, &pd, sizeof pd,
                     bytes + pd.offset, std::min(kChunk, pd.total - pd.offset),
                     nullptr, st))
        return CL_DEVICE_NOT_AVAILABLE;
  }
  return CL_DEVICE_NOT_AVAILABLE;
}

// A small PUSH when nothing of the session is in flight (so none of its
// waits can be pending: a command leaves the count only once it has ended)
// and none of its waits is another server's: read with a blocking call and
// sent from the command reader.  The waiter's report of a 4-byte read took
// 28 us on the H200; natively, a blocking 4-byte read takes 10.5 us there,
// one flushed and waited for 13.7 (measured natively).
// Takes st's reference if it returns true.
bool Session::push_now(const Decoded &d, Queue &q, Mem &src, Mem *size,
                       const Whole &w, Staging *st)
{
  const pocl_remote_migrate &c = d.migrate;
  if (!completions_.idle())
    return false;
  for (uint32_t i = 0; i < d.waits.count; ++i)
    if (d.waits[i].origin != POCL_REMOTE_WAIT_SAME_SERVER)
      return false;
  // On the session's transfer queue, not the PUSH's: PoCL's client sends
  // migrations on its hidden default queues, which are out of order and
  // profiled, and NVIDIA's blocking 4-byte read took 21-24 us on such a
  // queue (two H200, traced) against 9.4 on a plain one.  Nothing of the
  // session is in flight, so no wait is lost.
  cl_int err = CL_SUCCESS;
  cl_command_queue rq = transfer_queue(q, err);
  if (rq == nullptr) {
    rq = q.q;
    err = CL_SUCCESS;
  }
  const uint64_t trace_t0 = POCLD_TRACE_T0();
  if (size != nullptr)
    err = clEnqueueReadBuffer(rq, size->buf, CL_TRUE, 0, 8, st->data() + c.size,
                              0, nullptr, nullptr);
  if (err == CL_SUCCESS)
    err = read_whole(rq, src, w, st->data(), 0, nullptr, nullptr, CL_TRUE);
  POCLD_TRACE_SPAN(NativeEnqueue, d.hdr.id, d.hdr.type, c.size, trace_t0);
  send_push(push_, st, err);
  st->unref();
  return true;
}

void Session::send_push(const PushState &p, Staging *st, cl_int status)
{
  pocl_remote_peer_data pd{status < 0 ? status : CL_COMPLETE, 0, 0, 0, 0};
  uint64_t n = 0;
  const uint8_t *bytes = nullptr;
  if (pd.status == CL_COMPLETE) {
    bytes = st->data();
    n = p.size;
    if (p.has_size) {
      memcpy(&pd.size_value, bytes + p.size, 8);
      pd.flags = POCL_REMOTE_PEER_DATA_HAS_SIZE;
      n = std::min(n, pd.size_value);
    }
    pd.total = n;
  }
  uint64_t t0 = realtime_ns() / 1000;
  peer_send(p.peer, POCL_RMSG_PEER_DATA, p.id, &pd, sizeof pd, bytes, n,
            nullptr, n > 0 ? st : nullptr);
  LOG_DEBUG(sid_, "PUSH %llu: %llu bytes sent %llu-%llu us",
            (unsigned long long)p.id, (unsigned long long)n,
            (unsigned long long)t0,
            (unsigned long long)(realtime_ns() / 1000));
}

// MIGRATE_IN: the migration's event is completed by run_peer once it has
// written what the peer pushed (PeerSlot); see order_gates for who waits
// on it natively.  A MIGRATE_IN with waits (our client sends none) is a
// native marker on them and on a user event that run_peer sets, as
// before.  run_peer writes with a blocking call on a private queue rather
// than completing a write enqueued here behind a user event: NVIDIA's
// OpenCL ran such a write of 1 MiB 18 ms after the event (measured on the
// H200), against 0.3 ms for a write enqueued once the bytes are in.  No
// ordering is lost: the PUSH waited for everything before.  Bytes past a
// content size are left as the staging had them: they carry no meaning.
bool Session::migrate_in(const Decoded &d)
{
  const pocl_remote_migrate &c = d.migrate;
  const uint64_t id = d.hdr.id;
  Queue *q = find_queue(c.cmd.queue_id);
  Mem *dst = find_mem(c.dst_id);
  Mem *size = c.dst_size_id ? find_buffer(c.dst_size_id) : nullptr;
  Whole w;
  cl_int err = check_migration(c, q, dst, c.dst_size_id, size, w);
  if (err == CL_SUCCESS && !peer_connected(c.peer))
    err = CL_DEVICE_NOT_AVAILABLE;
  Staging *st = nullptr;
  cl_event ue = nullptr;
  if (err == CL_SUCCESS &&
      (st = Staging::create(c.size + 8, 2, pinning(*q, c.size))) == nullptr)
    err = CL_OUT_OF_HOST_MEMORY;
  if (err == CL_SUCCESS && d.waits.count > 0 &&
      (ue = clCreateUserEvent(contexts_[q->platform], &err)) == nullptr) {
    st->unref();
    st->unref();
    st = nullptr;
  }
  cl_command_queue tq = nullptr;
  if (err == CL_SUCCESS && (tq = transfer_queue(*q, err)) == nullptr) {
    st->unref();
    st->unref();
    if (ue != nullptr)
      clReleaseEvent(ue);
    st = nullptr;
  }
  PeerSlot slot{c.size,  c.peer,
                nullptr, nullptr,
                nullptr, tq,
                nullptr, nullptr,
                false,   {w.region[0], w.region[1], w.region[2]},
                0,       nullptr};
  if (err == CL_SUCCESS) {
    st->size = 0;
    memset(st->data() + c.size, 0, 8);
    const cl_command_queue cq = q->q;
    Outcome o = run(id, c.cmd, d.waits, *q, st, Pending::MigrateIn, ue,
                    [&](cl_uint n, const cl_event *wl, cl_event *ev) {
                      if (ue != nullptr)
                        return clEnqueueMarkerWithWaitList(cq, n, wl, ev);
                      *ev = nullptr;
                      return CL_SUCCESS;
                    });
    if (o == Outcome::Ok) {
      slot.staging = st;
      slot.ue = ue;
      // Not completed before the slot is published: only the slot does.
      slot.p = completions_.find(id, ue == nullptr ? &q->gates : nullptr);
      if (ue == nullptr) {
        // What follows on q waits for the bytes natively (order_gates).
        completions_.gate(slot.p);
        q->gates.push_back(id);
      }
      slot.image = dst->pixel_size != 0;
      slot.dst = slot.image ? dst->m : dst->buf;
      clRetainMemObject(slot.dst);
      if (size != nullptr) {
        slot.size_buf = size->buf;
        clRetainMemObject(slot.size_buf);
      }
    } else {
      st->unref();
      if (ue != nullptr)
        clReleaseEvent(ue);
      if (o == Outcome::Protocol)
        return false;
    }
  } else
    complete_now(id, err);
  // The peer's bytes come regardless: the slot takes them, or drops them.
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!peer_slots_.emplace(id, slot).second) {
      LOG_ERR(sid_, "MIGRATE_IN %llu repeated", (unsigned long long)id);
      if (slot.staging != nullptr)
        finish_peer_slot(slot, CL_DEVICE_NOT_AVAILABLE);
      return false;
    }
  }
  data_cv_.notify_all();
  LOG_DEBUG(sid_, "MIGRATE_IN %llu enqueued at %llu us", (unsigned long long)id,
            (unsigned long long)(realtime_ns() / 1000));
  return true;
}

// COPY of a buffer with a content size: only the bytes before the content
// size are copied.  The size is known only on the device, once the waits
// are done, so the copy goes through host memory: the size, the source and
// the destination regions are read, merged in the callback of the last
// read, and the destination region is written back.
bool Session::copy_content(const Decoded &d, Queue &q, Mem &src, Mem &dst,
                           Mem &size)
{
  const pocl_remote_mem_cmd &c = d.mem;
  const uint64_t n = c.region[0];
  uint64_t total;
  Staging *st = nullptr;
  cl_event ue = nullptr;
  cl_int err = CL_SUCCESS;
  if (size.size < 8 || !add_ok(2 * n, 8, total) || n > total)
    err = CL_INVALID_MEM_OBJECT;
  else if ((st = Staging::create(total, 1, pinning(q, total))) == nullptr)
    err = CL_OUT_OF_HOST_MEMORY;
  else if ((ue = clCreateUserEvent(contexts_[q.platform], &err)) == nullptr) {
    st->unref();
    st = nullptr;
  }
  if (err != CL_SUCCESS) {
    complete_now(d.hdr.id, err);
    return true;
  }
  // Layout: [source n][destination n][size 8].
  struct Merge {
    Staging *st;
    uint64_t n, src_offset;
    cl_event ue;
  };
  Merge *mg = new Merge{st, n, c.src_origin[0], ue};
  const cl_command_queue cq = q.q;
  cl_event last = nullptr;
  auto enqueue = [&](cl_uint nw, const cl_event *wl, cl_event *ev) {
    cl_event e[3] = {};
    cl_int r = clEnqueueReadBuffer(cq, size.buf, CL_FALSE, 0, 8,
                                   st->data() + 2 * n, nw, wl, &e[0]);
    if (r == CL_SUCCESS)
      r = clEnqueueReadBuffer(cq, src.buf, CL_FALSE, c.src_origin[0], n,
                              st->data(), nw, wl, &e[1]);
    if (r == CL_SUCCESS)
      r = clEnqueueReadBuffer(cq, dst.buf, CL_FALSE, c.dst_origin[0], n,
                              st->data() + n, nw, wl, &e[2]);
    if (r == CL_SUCCESS)
      r = clEnqueueMarkerWithWaitList(cq, 3, e, &last);
    for (cl_event x : e)
      if (x != nullptr)
        clReleaseEvent(x);
    if (r != CL_SUCCESS)
      return r;
    std::vector<cl_event> all(wl, wl + nw);
    all.push_back(ue);
    return clEnqueueWriteBuffer(cq, dst.buf, CL_FALSE, c.dst_origin[0], n,
                                st->data() + n, cl_uint(all.size()), all.data(),
                                ev);
  };
  st->refs.fetch_add(1); // one for the merge callback
  // Not gated on ue: the merge completes it without the client's help.
  Outcome o = run(d.hdr.id, c.cmd, d.waits, q, st, Pending::Plain, nullptr,
                  enqueue);
  if (last == nullptr) {
    // Nothing was enqueued: the command already failed.
    st->unref();
    clReleaseEvent(ue);
    delete mg;
    return o != Outcome::Protocol;
  }
  auto merge = [](cl_event, cl_int status, void *user) {
    Merge *m = static_cast<Merge *>(user);
    if (status == CL_COMPLETE) {
      uint64_t content;
      memcpy(&content, m->st->data() + 2 * m->n, 8);
      uint64_t k = content > m->src_offset
                       ? std::min(m->n, content - m->src_offset)
                       : 0;
      memcpy(m->st->data() + m->n, m->st->data(), k);
    }
    clSetUserEventStatus(m->ue, status == CL_COMPLETE ? CL_COMPLETE
                                                      : CL_INVALID_EVENT);
    clReleaseEvent(m->ue);
    m->st->unref();
    delete m;
  };
  if (clSetEventCallback(last, CL_COMPLETE, merge, mg) != CL_SUCCESS)
    merge(last, CL_INVALID_EVENT, mg);
  clReleaseEvent(last);
  return o != Outcome::Protocol;
}

} // namespace pocld
