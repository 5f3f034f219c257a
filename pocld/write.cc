// write.cc - the native write of a WRITE* whose bytes come on the data
// socket (WriteJob): the command reader hands it over and goes on, the data
// reader enqueues it part by part as the bytes come and launches it.  The
// command reader waits for the launch only before a message that needs the
// write enqueued first (a kernel and read on queue B behind a 64 MiB write
// on queue A took 38 ms, the time of the write's bytes, against 0.2 idle:
// remote/write_overlap, doc/benchmarks.md "Commands behind a large write").
#include "session.hh"

#include "log.hh"

#include <algorithm>
#include <chrono>
#include <utility>
#include <vector>

namespace pocld {

// Command reader.  p is opened, with its staging; its waits are in waits_.
void Session::hand_over(Pending *p, Queue &q, uint64_t size, bool in_parts,
                        WriteEnqueue enqueue)
{
  // The write's completion adopts none of q's commands without an event:
  // those are the command reader's (Session::run).
  if (!q.untracked.empty())
    cover(q);
  // One allocation per write of POCL_REMOTE_DATA_SOCKET_THRESHOLD (64 KiB)
  // or more, next to whose bytes it costs nothing.
  WriteJob *j = new WriteJob{
      p,    q.q,      contexts_[q.platform], waits_, std::move(enqueue),
      size, in_parts, in_.hdr.type};
  waits_.clear(); // their references are the job's
  write_busy_ = true;
  write_id_ = p->id;
  write_queue_ = p->queue_id;
  std::unique_lock<std::mutex> lock(mu_);
  data_slots_.push_back(DataSlot{p->id, size, p->staging, j});
  write_launching_ = true;
  data_cv_.notify_all();
  // No data reader since the connection broke (until the resume): the write
  // waits behind a user event, as it does when the reader ends under it.
  // Before the first data socket the job waits for its reader.
  if (!data_running_ && client_.has_data())
    defer_queued(lock);
}

// Command reader.  May message d go before write_id_ is enqueued whole?
// Commands of other queues that do not wait on it, and the messages that
// only report or ask (NOTIFY_EVENT, SUBSCRIBE, CLOCK; ACK is not
// dispatched).  Anything else may need it: commands of its queue come after
// it there, a wait on it needs its event, FINISH's marker and the frees
// must follow it, and another data-socket write would be a second job.
bool Session::overtakes_write(const Decoded &d) const
{
  const uint32_t t = d.hdr.type;
  if (t == POCL_RMSG_NOTIFY_EVENT || t == POCL_RMSG_SUBSCRIBE ||
      t == POCL_RMSG_CLOCK)
    return true;
  if (t < POCL_RMSG_NDRANGE || t > POCL_RMSG_MIGRATE_IN ||
      d.cmd.queue_id == write_queue_)
    return false;
  if ((t == POCL_RMSG_WRITE || t == POCL_RMSG_WRITE_RECT ||
       t == POCL_RMSG_WRITE_IMAGE) &&
      (d.cmd.flags & POCL_RCMD_DATA_ON_DATA_SOCKET))
    return false;
  for (uint32_t i = 0; i < d.waits.count; ++i) {
    const pocl_remote_wait w = d.waits[i];
    if (w.origin == POCL_REMOTE_WAIT_SAME_SERVER && w.event_id == write_id_)
      return false;
  }
  return true;
}

// Command reader: until the job handed over last is launched.  The client
// sends the bytes right behind the command; one that stops sending them
// gets as long as one that stops reading (SO_SNDTIMEO).
void Session::wait_write()
{
  constexpr auto kPatience = std::chrono::seconds(60);
  flush_dirty();
  std::unique_lock<std::mutex> lock(mu_);
  uint64_t parts = data_parts_.load(std::memory_order_relaxed);
  while (write_launching_) {
    // Ended without a data socket: none is coming for it.
    if (fatal_ && !data_running_) {
      defer_queued(lock);
      continue;
    }
    if (launched_cv_.wait_for(lock, kPatience) == std::cv_status::no_timeout)
      continue;
    const uint64_t now = data_parts_.load(std::memory_order_relaxed);
    if (!write_launching_ || now != parts || fatal_) {
      parts = now;
      continue;
    }
    LOG_ERR(sid_,
            "the bytes of write %llu stopped for 60 s, closing the session",
            (unsigned long long)write_id_);
    // The data reader ends on the shutdown and launches the write.
    fatal_ = true;
    lock.unlock();
    client_.drop_connection();
    lock.lock();
  }
  write_busy_ = false;
}

// Enqueues bytes [j.done, to) of the write after the part before it (the
// first after the command's waits), and after j.ue for the rest of a write
// cut short.  Flushed at once: the device copies this part while the next
// comes in.
void Session::write_part(WriteJob &j, uint64_t to)
{
  if (j.err != CL_SUCCESS || (to == j.done && j.last != nullptr))
    return;
  const uint8_t *src = j.p->staging->data();
  cl_event ev = nullptr;
  const uint64_t trace_t0 = POCLD_TRACE_T0();
  if (j.last == nullptr) {
    if (j.ue != nullptr) {
      clRetainEvent(j.ue);
      j.waits.push_back(j.ue);
    }
    j.err = j.enqueue(src, j.done, to - j.done, cl_uint(j.waits.size()),
                      j.waits.empty() ? nullptr : j.waits.data(), &ev);
  } else {
    const cl_event w[2] = {j.last, j.ue};
    j.err = j.enqueue(src, j.done, to - j.done, j.ue ? 2 : 1, w, &ev);
  }
  if (j.err != CL_SUCCESS)
    return;
  POCLD_TRACE_SPAN(NativeEnqueue, j.p->id, j.type, to - j.done, trace_t0);
  clFlush(j.q);
  if (j.first == nullptr) {
    j.first = ev;
    clRetainEvent(ev);
  }
  if (j.last != nullptr)
    clReleaseEvent(j.last);
  j.last = ev;
  j.done = to;
}

WriteJob *Session::defer_job(DataSlot &s)
{
  WriteJob *j = std::exchange(s.job, nullptr);
  if (j->err != CL_SUCCESS)
    return j; // nothing more is enqueued
  cl_int err = CL_SUCCESS;
  s.ue = clCreateUserEvent(j->ctx, &err);
  if (s.ue == nullptr) {
    j->err = err;
    return j;
  }
  clRetainEvent(s.ue);
  j->ue = s.ue;
  return j;
}

void Session::defer_queued(std::unique_lock<std::mutex> &lock)
{
  for (;;) {
    auto it = std::find_if(data_slots_.begin(), data_slots_.end(),
                           [](const DataSlot &s) { return s.job != nullptr; });
    if (it == data_slots_.end())
      return;
    WriteJob *j = defer_job(*it);
    lock.unlock();
    finish_job(j);
    lock.lock();
  }
}

// All the write's bytes are in, or j->ue stands for the rest: what is not
// enqueued goes now, and the command is launched as Session::launch does,
// touching nothing of the command reader's (the job's queue has no
// untracked commands, the parts were flushed, the in-flight count is
// atomic).
void Session::finish_job(WriteJob *j)
{
  Pending *p = j->p;
  const uint64_t id = p->id;
  write_part(*j, j->size);
  if (j->ue != nullptr)
    completions_.gate(p);
  if (j->last == nullptr) {
    // Nothing reached the runtime.  Peers may have subscribed meanwhile.
    const cl_int err = j->err;
    p->staging->unref();
    client_.report_failure(id, err);
    std::vector<uint32_t> subs;
    completions_.retire_unlaunched(p, err, subs);
    if (!subs.empty())
      notify_subscribers(id, err, subs);
  } else {
    // Parts are on their way with the staging: the command completes with
    // the last of them, and with the error if not all could be written.
    if (j->first != j->last)
      p->first = j->first;
    else
      clReleaseEvent(j->first);
    p->error = j->err;
    completions_.started();
    // A sweep (the command reader's, after a failed NOTIFY_EVENT) sees the
    // event only with its callback registered (see sweep_failed).
    std::unique_lock<std::mutex> sweep = completions_.sweep_guard(p->platform);
    completions_.set_event(p, j->last);
    completions_.watch(p, sweep.owns_lock());
  }
  for (cl_event e : j->waits)
    clReleaseEvent(e);
  if (j->ue != nullptr)
    clReleaseEvent(j->ue);
  delete j;
  {
    std::lock_guard<std::mutex> lock(mu_);
    write_launching_ = false;
  }
  launched_cv_.notify_all();
}

} // namespace pocld
