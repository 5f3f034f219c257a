// events.cc - the command reader's side of completions: a command's wait
// list and entry, its launch, and the covers of the commands that go without
// an event (the table and the completions themselves: completions.cc).
#include "session.hh"

#include "log.hh"

namespace pocld {

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

// A native command went into q: it is flushed before the reader blocks,
// and the session waits for its completion before it ends.
void Session::enqueued(Queue &q)
{
  if (!q.dirty) {
    q.dirty = true;
    dirty_.push_back(&q);
  }
  completions_.started();
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

// p covers q's untracked commands: they are reported when p completes.
void Session::adopt(Pending *p, Queue &q)
{
  if (!q.untracked.empty())
    LOG_DEBUG(sid_, "%s covers %zu commands",
              p->kind == Pending::Cover ? "a marker" : "a command",
              q.untracked.size());
  // Not retained: a covered command leaves the event table (the only
  // place waits find `cover`) inside p's completion, before p's event is
  // released.
  for (Pending *c : q.untracked)
    c->cover = p->ev;
  p->covered.swap(q.untracked);
  if (trailing_ == &q)
    trailing_ = nullptr;
}

void Session::cover(Queue &q)
{
  order_gates(q);
  cl_event ev = nullptr;
  cl_int err = clEnqueueMarkerWithWaitList(q.q, 0, nullptr, &ev);
  if (err != CL_SUCCESS) {
    LOG_WARN(sid_, "no marker to cover %zu commands (%d), finishing the queue",
             q.untracked.size(), err);
    clFinish(q.q);
    std::vector<Pending *> done;
    done.swap(q.untracked);
    for (Pending *c : done)
      completions_.complete(c, CL_COMPLETE);
    if (trailing_ == &q)
      trailing_ = nullptr;
    return;
  }
  Pending *p = new Pending{};
  p->owner = &completions_;
  p->ev = ev;
  p->platform = q.platform;
  p->set_kind(Pending::Cover);
  p->gated = false;
  enqueued(q);
  adopt(p, q);
  completions_.watch_cover(p);
}

void Session::cover_trailing()
{
  if (trailing_ != nullptr && !trailing_->untracked.empty())
    cover(*trailing_);
  trailing_ = nullptr;
}

bool Session::notify(const Msg &m)
{
  pocl_remote_notify n;
  memcpy(&n, m.body, sizeof n);
  if (n.status > CL_COMPLETE) {
    LOG_WARN(sid_, "NOTIFY_EVENT %llu with non-final status %d ignored",
             (unsigned long long)n.event_id, n.status);
    return true;
  }
  completions_.foreign_done(n.event_id, n.status);
  return true;
}

// SUBSCRIBE: the peer hears of the event's completion, now if it is over.
bool Session::subscribe(const Msg &m)
{
  pocl_remote_subscribe s;
  memcpy(&s, m.body, sizeof s);
  if (s.peer_index >= POCL_REMOTE_MAX_PEERS) {
    LOG_ERR(sid_, "SUBSCRIBE for peer %u", s.peer_index);
    return false;
  }
  cl_int status;
  if (completions_.subscribe(s.event_id, s.peer_index, status))
    return true;
  notify_subscribers(s.event_id, status, {s.peer_index});
  return true;
}

void Session::notify_subscribers(uint64_t id, cl_int status,
                                 const std::vector<uint32_t> &subs)
{
  pocl_remote_notify n{id, status, 0};
  for (uint32_t peer : subs)
    peer_send(peer, POCL_RMSG_PEER_NOTIFY, 0, &n, sizeof n, nullptr, 0);
}

} // namespace pocld
