// completions.cc - the event table and completions: a command's entry and
// its launch (Session::open_cmd, launch), each command's completion action
// (Pending::done), how completions are observed (native callbacks, the
// waiter) and the sweep of silent failures.
#include "completions.hh"

#include "log.hh"
#include "output.hh"
#include "session.hh"

#include <algorithm>

namespace pocld {

uint32_t max_pending_commands = 65536;

namespace {

// The command whose callback watch() is registering on this thread: a
// runtime may call it right there, for a command that already ended.
thread_local const Pending *t_registering = nullptr;

// While a cover completes its covered commands: whether the kernels'
// output has been drained for them (they all ended before the cover, so
// one read of the pipe takes whatever they printed).
thread_local bool *t_drained = nullptr;

void CL_CALLBACK on_event_complete(cl_event, cl_int status, void *user)
{
  Pending *p = static_cast<Pending *>(user);
  if (status < 0)
    p->owner->fail_later(p, status);
  else
    p->owner->complete(p, status);
}

// Device timestamps of a profiled command, in server CLOCK_REALTIME ns.
void profile(cl_event ev, int64_t offset, pocl_remote_completion &c)
{
  const cl_profiling_info params[4] = {
      CL_PROFILING_COMMAND_QUEUED, CL_PROFILING_COMMAND_SUBMIT,
      CL_PROFILING_COMMAND_START, CL_PROFILING_COMMAND_END};
  uint64_t *out[4] = {&c.ts_queued, &c.ts_submit, &c.ts_start, &c.ts_end};
  for (int i = 0; i < 4; ++i) {
    cl_ulong t = 0;
    if (clGetEventProfilingInfo(ev, params[i], sizeof t, &t, nullptr) ==
            CL_SUCCESS &&
        t != 0)
      *out[i] = t + offset;
  }
}

// The device times of a profiled command.
void stamp(const Pending *p, pocl_remote_completion &c)
{
  if (!(p->flags & POCL_RCMD_PROFILING))
    return;
  profile(p->ev, p->ts_offset, c);
  if (p->first != nullptr) {
    // Done in parts: it started when the first part did.
    pocl_remote_completion f{};
    profile(p->first, p->ts_offset, f);
    c.ts_queued = f.ts_queued;
    c.ts_submit = f.ts_submit;
    c.ts_start = f.ts_start;
  }
}

} // namespace

const CompleteFn Completions::kDone[Pending::Kinds] = {
    complete_plain,       // Plain
    complete_read,        // Read
    complete_kernel,      // Kernel
    complete_finish,      // Finish
    complete_push,        // Push
    complete_migrate_in,  // MigrateIn
    complete_push,        // PushStream
    complete_read_stream, // ReadStream
    complete_cover,       // Cover
};

Completions::Completions(Session &s, ClientChannel &client, const Devices &devs,
                         const char *sid)
    : s_(s), client_(client), devs_(devs), sid_(sid)
{
}

Completions::~Completions() { stop(); }

void Completions::stop()
{
  stop_waiter();
  stop_failer();
}

void Completions::complete(Pending *p, cl_int exec_status)
{
  // Called at registration, PoCL passes CL_COMPLETE even for a command that
  // failed; ask the event itself: a command may fail on its own (a CUSTOM
  // device's built-in kernel), with its own code.
  if (p == t_registering && exec_status == CL_COMPLETE)
    clGetEventInfo(p->ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof exec_status,
                   &exec_status, nullptr);
  // PoCL ends a command behind a failed dependency with its generic
  // CL_FAILED (-1, no OpenCL code); the client gets the specification's.
  if (exec_status == -1)
    exec_status = CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST;
  if (p->kind != Pending::Cover && p->kind != Pending::Finish)
    POCLD_TRACE(NativeComplete, p->id, 0, 0);
  pocl_remote_completion c{};
  c.status = exec_status < 0 ? exec_status : p->error;
  // The covered commands ended before this one.  If this one failed, so may
  // have those without an event (a CUDA error poisons the context); not for
  // p->error, which is this command's own (a part of it).
  const bool batch = !p->covered.empty() && client_.begin_batch();
  if (!p->covered.empty()) {
    bool drained = false;
    t_drained = &drained;
    for (Pending *e : p->covered) {
      cl_int st = exec_status < 0 ? exec_status : CL_COMPLETE;
      // A chained command has its own event, and its own outcome.
      if (e->chained)
        clGetEventInfo(e->ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st,
                       nullptr);
      complete(e, st);
    }
    t_drained = nullptr;
    p->covered.clear();
  }
  // A cover's own COMPLETION joins the batch only if it is a plain one.
  if (batch && p->kind != Pending::Kernel && p->kind != Pending::Plain)
    client_.end_batch();
  p->done(*this, p, c, batch);
}

void Completions::complete_cover(Completions &cs, Pending *p,
                                 pocl_remote_completion &, bool)
{
  if (cs.devs_.platforms[p->platform].silent_failures) {
    std::lock_guard<std::mutex> lock(cs.ev_mu_);
    cs.covers_.erase(std::find(cs.covers_.begin(), cs.covers_.end(), p));
  }
  clReleaseEvent(p->ev);
  delete p;
  cs.retire_one();
}

void Completions::complete_finish(Completions &cs, Pending *p,
                                  pocl_remote_completion &c, bool batch)
{
  stamp(p, c);
  const uint64_t id = p->id;
  cl_event ev = p->ev, first = p->first;
  Staging *st = p->staging;
  // A failed command's event stays referenced until the session ends: PoCL
  // 3.1 leaves failed events in the notify lists of the events they waited
  // for, and would touch them there once those complete.
  const bool keep = c.status < 0;
  {
    std::lock_guard<std::mutex> lock(cs.ev_mu_);
    cs.finishing_.erase(
        std::find(cs.finishing_.begin(), cs.finishing_.end(), p));
    if (keep)
      cs.failed_.push_back(ev);
  }
  delete p;
  // Like clFinish: failed commands have their own completions.
  cs.client_.reply(id, CL_SUCCESS);
  cs.finish_up(st, ev, first, keep, batch);
}

void Completions::complete_push(Completions &cs, Pending *p,
                                pocl_remote_completion &c, bool batch)
{
  stamp(p, c);
  const uint64_t id = p->id;
  cl_event ev = p->ev, first = p->first;
  Staging *st = p->staging;
  const bool keep = c.status < 0;
  if (p->kind == Pending::Push)
    cs.s_.send_push({true, id, p->peer, p->push_size, p->push_has_size},
                    p->staging, c.status);
  {
    std::lock_guard<std::mutex> lock(cs.ev_mu_);
    cs.ungate(p);
    cs.spare_.push_back(cs.events_.extract(id));
    if (keep)
      cs.failed_.push_back(ev);
  }
  cs.finish_up(st, ev, first, keep, batch);
}

void Completions::complete_plain(Completions &cs, Pending *p,
                                 pocl_remote_completion &c, bool batch)
{
  stamp(p, c);
  cs.report(p, c, batch, nullptr, 0, false, false);
}

// An NDRANGE's staging holds its fine-grained SVM regions.
void Completions::complete_kernel(Completions &cs, Pending *p,
                                  pocl_remote_completion &c, bool batch)
{
  stamp(p, c);
  const uint8_t *changes = nullptr;
  uint64_t len = 0;
  if (p->staging != nullptr && c.status == CL_COMPLETE)
    len = svm_changes(*p->staging, changes);
  cs.report(p, c, batch, changes, len, false, true);
}

void Completions::complete_read(Completions &cs, Pending *p,
                                pocl_remote_completion &c, bool batch)
{
  stamp(p, c);
  const void *data = nullptr;
  uint64_t len = 0;
  if (c.status == CL_COMPLETE) {
    Staging *st = p->staging;
    data = st->data();
    len = st->size;
    if (p->flags & POCL_RCMD_CONTENT_SIZE) {
      uint64_t content, offset;
      memcpy(&content, st->data() + len, 8);
      memcpy(&offset, st->data() + len + 8, 8);
      len = content > offset ? std::min(len, content - offset) : 0;
    }
  }
  cs.report(p, c, batch, data, len, false, false);
}

// A streamed read's completion follows its READ_DATA parts.
void Completions::complete_read_stream(Completions &cs, Pending *p,
                                       pocl_remote_completion &c, bool batch)
{
  stamp(p, c);
  cs.report(p, c, batch, nullptr, 0, true, false);
}

void Completions::complete_migrate_in(Completions &cs, Pending *p,
                                      pocl_remote_completion &c, bool batch)
{
  // Its marker waits for this completion to run: asking it cost NVIDIA
  // some 6 us of every migration (PoCL's client migrates on its profiled
  // default queues), for no times at all.  The bytes are in place now.
  if (p->flags & POCL_RCMD_PROFILING)
    c.ts_queued = c.ts_submit = c.ts_start = c.ts_end = realtime_ns();
  c.peer_bytes = p->staging->size;
  LOG_DEBUG(cs.sid_, "migration %llu written by %llu us",
            (unsigned long long)p->id,
            (unsigned long long)(realtime_ns() / 1000));
  cs.report(p, c, batch, nullptr, 0, false, false);
}

void Completions::report(Pending *p, pocl_remote_completion &c, bool batch,
                         const void *data, uint64_t len, bool on_data,
                         bool kernel)
{
  const uint64_t id = p->id;
  cl_event ev = p->ev, first = p->first;
  Staging *st = p->staging;
  const bool keep = c.status < 0;
  Sock sock = len >= POCL_REMOTE_DATA_SOCKET_THRESHOLD || on_data
                  ? Sock::Data
                  : Sock::Command;
  std::string output;
  const bool drain = kernel && (t_drained == nullptr || !*t_drained);
  std::unique_lock<std::mutex> output_order;
  if (take_output(output, drain, output_order)) {
    client_.send(sock, POCL_RMSG_OUTPUT, id, nullptr, 0, output.data(),
                 output.size());
    output_order.unlock();
  }
  if (drain && t_drained != nullptr)
    *t_drained = true;
  if (!(p->flags & POCL_RCMD_SILENT))
    client_.send(sock, POCL_RMSG_COMPLETION, id, &c, sizeof c, data, len,
                 data != nullptr ? st : nullptr);
  // Retire the event: later waits on it count it as complete.  Bridges
  // are taken in the same critical section so none can be added late.
  std::vector<cl_event> bridges;
  std::vector<uint32_t> subs;
  {
    std::lock_guard<std::mutex> lock(ev_mu_);
    bridges.swap(p->bridges);
    subs.swap(p->subscribers);
    ungate(p);
    spare_.push_back(events_.extract(id));
    if (keep) {
      if (ev != nullptr)
        failed_.push_back(ev);
      if (first != nullptr)
        failed_.push_back(first);
      failed_ids_[id] = c.status;
    }
  }
  // What waits on this command learns of it after the client does.
  if (!bridges.empty() || !subs.empty())
    client_.flush_batch();
  for (cl_event b : bridges) {
    clSetUserEventStatus(b, c.status);
    clReleaseEvent(b);
  }
  if (!subs.empty())
    s_.notify_subscribers(id, c.status, subs);
  finish_up(st, ev, first, keep, batch);
}

void Completions::finish_up(Staging *st, cl_event ev, cl_event first, bool keep,
                            bool batch)
{
  if (st != nullptr)
    st->unref();
  if (!keep) {
    if (ev != nullptr)
      clReleaseEvent(ev);
    if (first != nullptr)
      clReleaseEvent(first);
  }
  if (batch)
    client_.end_batch();
  retire_one();
}

// Last action of a completion: after this the session may be destroyed.
void Completions::retire_one()
{
  if (inflight_.fetch_sub(1) == 1 && draining_.load()) {
    std::lock_guard<std::mutex> lock(ev_mu_);
    drained_cv_.notify_all();
  }
}

Pending *Completions::open(uint64_t id, const WaitList &waits, const Queue &q,
                           uint64_t queue_id, cl_context ctx, bool gated,
                           std::vector<cl_event> &out, cl_int &err)
{
  Pending *p = nullptr;
  {
    std::lock_guard<std::mutex> lock(ev_mu_);
    for (uint32_t i = 0; i < waits.count && err == CL_SUCCESS; ++i) {
      pocl_remote_wait w = waits[i];
      if (w.origin != POCL_REMOTE_WAIT_SAME_SERVER)
        continue;
      // Not in the table: retired, i.e. complete.
      auto it = events_.find(w.event_id);
      if (it == events_.end())
        continue;
      Pending &o = it->second;
      gated |= o.gated;
      cl_event oe = o.ev != nullptr ? o.ev : o.cover;
      if (o.platform == q.platform && oe != nullptr) {
        clRetainEvent(oe);
        out.push_back(oe);
        continue;
      }
      // Native events cannot cross contexts, and a MIGRATE_IN has none
      // (order_gates).
      cl_event ue = bridge(o, ctx, err);
      if (ue != nullptr)
        out.push_back(ue);
    }
    if (err == CL_SUCCESS && events_.size() >= max_pending_commands) {
      err = CL_OUT_OF_RESOURCES;
      if (!pending_limit_logged_)
        LOG_WARN(sid_,
                 "%zu commands pending (--max-pending): failing more with "
                 "CL_OUT_OF_RESOURCES",
                 events_.size());
      pending_limit_logged_ = true;
    }
    if (err == CL_SUCCESS) {
      std::pair<EventTable::iterator, bool> r;
      if (!spare_.empty()) {
        EventTable::node_type nh = std::move(spare_.back());
        spare_.pop_back();
        nh.key() = id;
        auto ins = events_.insert(std::move(nh));
        r = {ins.position, ins.inserted};
        if (!ins.inserted)
          spare_.push_back(std::move(ins.node));
      } else
        r = events_.try_emplace(id);
      if (r.second) {
        p = &r.first->second;
        auto g = gated_by_queue_.find(queue_id);
        p->gated = false;
        p->queue_id = queue_id;
        if (gated || (g != gated_by_queue_.end() && g->second > 0)) {
          p->gated = true;
          ++gated_by_queue_[queue_id];
        }
      } else {
        LOG_ERR(sid_, "event id %llu is already in use",
                (unsigned long long)id);
        err = kProtocolError;
      }
    }
  }
  if (p == nullptr)
    return nullptr;
  p->owner = this;
  p->id = id;
  p->ev = nullptr;
  p->staging = nullptr;
  p->ts_offset = q.ts_offset;
  p->platform = q.platform;
  p->flags = 0;
  p->set_kind(Pending::Plain);
  p->first = nullptr;
  p->error = CL_SUCCESS;
  p->subscribers.clear();
  p->cover = nullptr;
  return p;
}

// A user event in context ctx that o's completion sets (complete), with a
// reference for the caller.  Under ev_mu_, so that o cannot complete before
// it holds the bridge.
cl_event Completions::bridge(Pending &o, cl_context ctx, cl_int &err)
{
  cl_event ue = clCreateUserEvent(ctx, &err);
  if (ue != nullptr) {
    o.bridges.push_back(ue);
    clRetainEvent(ue);
  }
  return ue;
}

Pending *Completions::find(uint64_t id, std::vector<uint64_t> *gates)
{
  // A queue that takes only migrations (PoCL's client migrates on hidden
  // default queues) drops its retired MIGRATE_INs from Queue::gates from
  // this many on.
  constexpr size_t kGatesPrune = 16;
  std::lock_guard<std::mutex> lock(ev_mu_);
  if (gates != nullptr && gates->size() >= kGatesPrune)
    gates->erase(
        std::remove_if(gates->begin(), gates->end(),
                       [&](uint64_t g) { return events_.count(g) == 0; }),
        gates->end());
  return &events_.find(id)->second;
}

void Completions::drop(uint64_t id)
{
  std::lock_guard<std::mutex> lock(ev_mu_);
  auto it = events_.find(id);
  if (it != events_.end())
    ungate(&it->second);
  spare_.push_back(events_.extract(id));
}

void Completions::retire_unlaunched(Pending *p, cl_int err,
                                    std::vector<uint32_t> &subs)
{
  std::lock_guard<std::mutex> lock(ev_mu_);
  subs.swap(p->subscribers);
  ungate(p);
  failed_ids_[p->id] = err;
  spare_.push_back(events_.extract(p->id));
}

// The same test as open's, made before the command exists (to choose its
// staging).
bool Completions::gated_now(const WaitList &waits, uint64_t queue_id)
{
  for (uint32_t i = 0; i < waits.count; ++i)
    if (waits[i].origin != POCL_REMOTE_WAIT_SAME_SERVER)
      return true;
  std::lock_guard<std::mutex> lock(ev_mu_);
  auto g = gated_by_queue_.find(queue_id);
  if (g != gated_by_queue_.end() && g->second > 0)
    return true;
  for (uint32_t i = 0; i < waits.count; ++i) {
    auto it = events_.find(waits[i].event_id);
    if (it != events_.end() && it->second.gated)
      return true;
  }
  return false;
}

// gate() and ungate() keep gated_by_queue_; ungate() runs under ev_mu_.
void Completions::gate(Pending *p)
{
  std::lock_guard<std::mutex> lock(ev_mu_);
  if (!p->gated) {
    p->gated = true;
    ++gated_by_queue_[p->queue_id];
  }
}

void Completions::ungate(Pending *p)
{
  if (!p->gated)
    return;
  auto g = gated_by_queue_.find(p->queue_id);
  if (g != gated_by_queue_.end() && --g->second == 0)
    gated_by_queue_.erase(g);
}

std::unique_lock<std::mutex> Completions::sweep_guard(uint32_t platform)
{
  std::unique_lock<std::mutex> lock(sweep_mu_, std::defer_lock);
  if (devs_.platforms[platform].silent_failures)
    lock.lock();
  return lock;
}

void Completions::set_event(Pending *p, cl_event ev)
{
  std::lock_guard<std::mutex> lock(ev_mu_);
  p->ev = ev;
}

void Completions::track_finish(Pending *p)
{
  std::lock_guard<std::mutex> lock(ev_mu_);
  finishing_.push_back(p);
}

void Completions::keep_failed(const std::vector<cl_event> &evs)
{
  std::lock_guard<std::mutex> lock(ev_mu_);
  failed_.insert(failed_.end(), evs.begin(), evs.end());
}

void Completions::watch(Pending *p, bool sweep_held)
{
  const Platform &pl = devs_.platforms[p->platform];
  // A MIGRATE_IN is completed by run_peer right after the bytes are written
  // (a callback on its marker would only add the runtime's latency), a
  // streamed PUSH by its pusher thread.
  if (p->self_completing())
    return;
  if (pl.wait_completion && !p->gated) {
    wait_for(p);
    return;
  }
  // sweep_failed looks only at platforms that fail commands silently; on
  // the others (NVIDIA's) it cannot race with this registration.
  std::unique_lock<std::mutex> lock(sweep_mu_, std::defer_lock);
  if (pl.silent_failures && !sweep_held)
    lock.lock();
  t_registering = p;
  cl_int err = clSetEventCallback(p->ev, CL_COMPLETE, on_event_complete, p);
  t_registering = nullptr;
  if (err != CL_SUCCESS) {
    // Should not happen with a valid event; complete it synchronously.
    LOG_WARN(sid_, "clSetEventCallback failed (%d), waiting", err);
    clWaitForEvents(1, &p->ev);
    cl_int st = CL_COMPLETE;
    clGetEventInfo(p->ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st,
                   nullptr);
    complete(p, st);
  }
}

void Completions::watch_cover(Pending *p)
{
  if (devs_.platforms[p->platform].wait_completion) {
    wait_for(p);
    return;
  }
  // A platform that fails commands silently never calls back a cover behind
  // a failed command: sweep_failed looks at covers too (covers_).  And a
  // callback registered after the failure gets CL_COMPLETE: complete() asks
  // the event itself, as for commands (launch).
  std::unique_lock<std::mutex> sweep_lock(sweep_mu_, std::defer_lock);
  if (devs_.platforms[p->platform].silent_failures) {
    sweep_lock.lock();
    std::lock_guard<std::mutex> lock(ev_mu_);
    covers_.push_back(p);
  }
  t_registering = p;
  cl_int err = clSetEventCallback(p->ev, CL_COMPLETE, on_event_complete, p);
  t_registering = nullptr;
  if (err != CL_SUCCESS) {
    LOG_WARN(sid_, "clSetEventCallback failed on a marker, waiting");
    clWaitForEvents(1, &p->ev);
    cl_int st = CL_COMPLETE;
    clGetEventInfo(p->ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st,
                   nullptr);
    complete(p, st);
  }
}

// Completes the commands that failed without a callback
// (Platform::silent_failures).  Runs after a user event was failed (by the
// command reader, a peer reader or the teardown): such failures spread
// synchronously, and under sweep_mu_ no callback is being registered, so
// what is found failed here is never called back.  Completing one may fail
// bridges, hence the rounds.
void Completions::sweep_failed()
{
  // Candidates are taken under the lock; one that succeeds meanwhile may be
  // completed and recycled by its callback, so only its event is used.
  std::vector<std::pair<Pending *, cl_event>> seen;
  // Peer readers sweep too: one sweep at a time, and none while the command
  // reader registers a callback (a failed command is called back right
  // there, and must not be completed twice).
  std::lock_guard<std::mutex> sweep_lock(sweep_mu_);
  auto consider = [&](Pending *p) {
    // ev is null while the command reader is still launching it.
    // Those complete themselves, whatever happens.
    // The waiter's commands too: it reports failures itself.
    const Platform &pl = devs_.platforms[p->platform];
    if (p->ev != nullptr && !p->chained && !p->self_completing() &&
        pl.silent_failures && !(pl.wait_completion && !p->gated)) {
      clRetainEvent(p->ev);
      seen.emplace_back(p, p->ev);
    }
  };
  bool again = true;
  while (again) {
    again = false;
    seen.clear();
    {
      std::lock_guard<std::mutex> lock(ev_mu_);
      for (auto &e : events_)
        consider(&e.second);
      for (Pending *p : finishing_)
        consider(p);
      for (Pending *p : covers_)
        consider(p);
    }
    for (auto &s : seen) {
      cl_int st = CL_COMPLETE;
      clGetEventInfo(s.second, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st,
                     &st, nullptr);
      clReleaseEvent(s.second);
      if (st < 0) {
        complete(s.first, CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST);
        again = true;
      }
    }
  }
}

// Callbacks may still be running after the queues finished; they touch the
// session.
void Completions::drain()
{
  draining_ = true;
  {
    std::unique_lock<std::mutex> lock(ev_mu_);
    drained_cv_.wait(lock, [&] { return inflight_.load() == 0; });
  }
  stop();
  spare_.clear();
  for (cl_event ev : failed_)
    clReleaseEvent(ev);
  failed_.clear();
}

// The command reader's side (Session::run, run.hh): a command's entry,
// opened with its wait list before the native enqueue, and its launch after.

void Session::release_waits()
{
  for (cl_event e : waits_)
    clReleaseEvent(e);
  waits_.clear();
}

Pending *Session::open_cmd(uint64_t id, const WaitList &waits, const Queue &q,
                           uint64_t queue_id, cl_int &err)
{
  waits_.clear();
  bool gated = false;
  // Foreign events first, each under foreign_mu_ (peer readers complete
  // them); a peer's event is one the client does not forward.  The decoder
  // admitted only known origins.
  for (uint32_t i = 0; i < waits.count; ++i) {
    pocl_remote_wait w = waits[i];
    if (w.origin != POCL_REMOTE_WAIT_SAME_SERVER) {
      size_t before = waits_.size();
      err = completions_.foreign_wait(w.event_id, q.platform,
                                      contexts_[q.platform], waits_);
      gated |= waits_.size() > before;
    }
    if (err != CL_SUCCESS) {
      release_waits();
      return nullptr;
    }
  }
  // A command waited on must have an event, or a cover that has one (the
  // chained commands of an out-of-order queue have theirs).
  if (trailing_ != nullptr && trailing_->elide)
    for (uint32_t i = 0; i < waits.count; ++i)
      if (waits[i].origin == POCL_REMOTE_WAIT_SAME_SERVER) {
        cover_trailing();
        break;
      }
  Pending *p = completions_.open(id, waits, q, queue_id, contexts_[q.platform],
                                 gated, waits_, err);
  if (p == nullptr)
    release_waits();
  return p;
}

void Session::launch(Pending *p, cl_int err, cl_event ev, Queue &q)
{
  release_waits();
  if (err != CL_SUCCESS) {
    uint64_t id = p->id;
    if (p->staging != nullptr)
      p->staging->unref();
    if (p->kind == Pending::Finish) {
      delete p;
      reply(id, err);
      return;
    }
    // No bridges yet: only later commands can add them.
    completions_.drop(id);
    complete_now(id, err);
    return;
  }
  enqueued(q);
  // An ungated command reports the commands before it that went without an
  // event (Session::run); a marker covers them for any other.
  if (!q.untracked.empty() && (p->gated || p->self_completing()))
    cover(q);
  // A sweep (peer readers run them too) must see p either without its
  // event or with its callback: found failed in between, it would be
  // completed twice, once more by a callback registered after the failure.
  std::unique_lock<std::mutex> sweep_lock =
      completions_.sweep_guard(p->platform);
  p->ev = ev;
  if (p->kind == Pending::Finish)
    completions_.track_finish(p);
  if (!q.untracked.empty())
    adopt(p, q);
  completions_.watch(p, sweep_lock.owns_lock());
}

} // namespace pocld
