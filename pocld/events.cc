// events.cc - the covers of the commands that go without an event, and the
// events of other servers: their notifications and subscriptions (a
// command's entry and launch, and the completions: completions.cc).
#include "session.hh"

#include "log.hh"

namespace pocld {

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
