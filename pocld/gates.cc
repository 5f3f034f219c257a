// gates.cc - what commands wait on besides each other: the MIGRATE_INs
// whose bytes are still to come (a queue's gates), and the foreign events
// the client or a peer reports.
#include "completions.hh"

#include "log.hh"

namespace pocld {

// A MIGRATE_IN enqueues nothing native and makes no event: the client
// hears of it from run_peer, and NVIDIA's blocking write of the bytes took
// 1.2-4.5 us longer while a user event of the context was pending
// (measured natively).  What must wait for the bytes natively waits on a
// bridge, a user event its completion sets (Pending::bridges): commands
// that wait on the migration (open), and the queue's later commands,
// behind a marker enqueued when the first of them comes while the bytes
// are still to come.  q.gates: the queue's MIGRATE_INs not yet ordered so.
void Completions::order_gates(Queue &q, cl_context ctx)
{
  if (q.gates.empty())
    return;
  std::vector<cl_event> &bridges = gate_bridges_;
  bridges.clear();
  {
    std::lock_guard<std::mutex> lock(ev_mu_);
    for (uint64_t id : q.gates) {
      auto it = events_.find(id);
      if (it == events_.end())
        continue; // retired: the bytes are in
      cl_int err = CL_SUCCESS;
      if (cl_event b = bridge(it->second, ctx, err))
        bridges.push_back(b);
      else
        LOG_WARN(sid_,
                 "no user event (%d): later commands do not wait for "
                 "migration %llu",
                 err, (unsigned long long)id);
    }
  }
  q.gates.clear();
  if (bridges.empty())
    return;
  cl_int err = clEnqueueMarkerWithWaitList(q.q, cl_uint(bridges.size()),
                                           bridges.data(), nullptr);
  if (err != CL_SUCCESS)
    LOG_WARN(sid_,
             "no marker after %zu migrations (%d): later commands do not "
             "wait for them",
             bridges.size(), err);
  else
    LOG_DEBUG(sid_, "a queue's marker waits for migrations still coming: %zu",
              bridges.size());
  for (cl_event e : bridges)
    clReleaseEvent(e);
}

cl_int Completions::foreign_wait(uint64_t id, uint32_t platform, cl_context ctx,
                                 std::vector<cl_event> &out)
{
  std::lock_guard<std::mutex> lock(foreign_mu_);
  if (foreign_.size() - foreign_known_.size() >= kMaxForeignPending &&
      foreign_.count(id) == 0) {
    LOG_ERR(sid_, "commands wait on %zu unreported foreign events",
            foreign_.size() - foreign_known_.size());
    return kProtocolError;
  }
  Foreign &f = foreign_[id];
  if (f.known)
    return f.status == CL_COMPLETE
               ? CL_SUCCESS
               : CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST;
  for (auto &ue : f.ues)
    if (ue.first == platform) {
      clRetainEvent(ue.second);
      out.push_back(ue.second);
      return CL_SUCCESS;
    }
  cl_int err = CL_SUCCESS;
  // The queue exists, so its platform's context does too.
  cl_event ue = clCreateUserEvent(ctx, &err);
  if (ue == nullptr)
    return err;
  f.ues.emplace_back(platform, ue);
  clRetainEvent(ue);
  out.push_back(ue);
  return CL_SUCCESS;
}

// A foreign event reached its final status (from the client or a peer).
void Completions::foreign_done(uint64_t id, cl_int status)
{
  bool failed = false;
  {
    std::lock_guard<std::mutex> lock(foreign_mu_);
    Foreign &f = foreign_[id];
    if (f.known) {
      LOG_DEBUG(sid_, "event %llu reported again", (unsigned long long)id);
      return;
    }
    f.known = true;
    f.status = status;
    // Bounded: the oldest known entries go (they have no user events).
    foreign_known_.push_back(id);
    while (foreign_known_.size() > kForeignKnownKept) {
      foreign_.erase(foreign_known_.front());
      foreign_known_.pop_front();
    }
    for (auto &ue : f.ues) {
      clSetUserEventStatus(ue.second, status);
      clReleaseEvent(ue.second);
    }
    failed = status < 0 && !f.ues.empty();
    f.ues.clear();
    f.ues.shrink_to_fit();
  }
  if (failed)
    sweep_failed();
}

// What nobody will report now fails.
void Completions::fail_foreign()
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

bool Completions::subscribe(uint64_t event_id, uint32_t peer, cl_int &status)
{
  status = CL_COMPLETE;
  std::lock_guard<std::mutex> lock(ev_mu_);
  auto it = events_.find(event_id);
  if (it != events_.end() && it->second.kind != Pending::Push) {
    it->second.subscribers.push_back(peer);
    return true;
  }
  // The client subscribes only after sending the command here: not in
  // the table means retired.
  auto f = failed_ids_.find(event_id);
  if (f != failed_ids_.end())
    status = f->second;
  return false;
}

} // namespace pocld
