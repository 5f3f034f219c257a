// run.hh - Session::run, the common path of every enqueued command; a
// template, so that each handler's enqueue call is inlined.
#pragma once

#include "session.hh"

namespace pocld {

// Enqueues `first` (reading or writing the 8-byte content size), then
// `second` after it and after the command's waits: the size must be in
// place before the data moves, on in-order and out-of-order queues alike.
template <class A, class B>
cl_int chained(cl_uint n, const cl_event *w, cl_event *ev, A first, B second)
{
  cl_event e1 = nullptr;
  cl_int err = first(n, w, &e1);
  if (err != CL_SUCCESS)
    return err;
  std::vector<cl_event> all(w, w + n);
  all.push_back(e1);
  err = second(cl_uint(all.size()), all.data(), ev);
  clReleaseEvent(e1);
  return err;
}

// Reserves the event, builds the wait list, enqueues natively through
// `enqueue` and arranges for the completion.  Takes over one reference of
// `st`.  extra_wait: one more event the command waits for (data arrival).
template <class F>
Session::Outcome Session::run(uint64_t id, const pocl_remote_cmd &c,
                              const WaitList &waits, Queue &q, Staging *st,
                              Pending::Kind kind, cl_event extra_wait,
                              F enqueue, bool may_elide)
{
  cl_int err = CL_SUCCESS;
  if (kind != Pending::MigrateIn)
    order_gates(q);
  Pending *p = open_cmd(id, waits, q, c.queue_id, err);
  if (p == nullptr) {
    if (st != nullptr)
      st->unref();
    if (err == kProtocolError)
      return Outcome::Protocol;
    complete_now(id, err);
    return Outcome::Failed;
  }
  p->staging = st;
  p->flags = c.flags;
  p->set_kind(kind);
  if (kind == Pending::Push || kind == Pending::PushStream) {
    p->peer = push_.peer;
    p->push_size = push_.size;
    p->push_has_size = push_.has_size;
  }
  if (extra_wait != nullptr) {
    completions_.gate(p);
    clRetainEvent(extra_wait);
    waits_.push_back(extra_wait);
  }
  // A gated command must not cover earlier ones: they would be reported
  // only once the client released it, and the client may be waiting for
  // them first.  On an out-of-order queue only a command that waits for
  // the chain's last one covers the chain (it may have failed to launch,
  // and another come instead).
  if (!q.untracked.empty() &&
      (p->gated ||
       (!q.elide &&
        !(waits.count == 1 && waits[0].origin == POCL_REMOTE_WAIT_SAME_SERVER &&
          waits[0].event_id == q.untracked.back()->id))))
    cover(q);
  // NVIDIA's OpenCL charges several microseconds for every event it hands
  // out (doc/benchmarks.md), and on a CPU device every callback is
  // a write and a wake-up of the client: a command the next one will
  // cover goes without, unless the application holds its event (it may be
  // timing it, or waiting for it to start the next step: matmul's parts
  // lost their overlap when they were reported together).
  const bool elide = may_elide && q.elide && !p->gated &&
                     !(c.flags & (POCL_RCMD_PROFILING | POCL_RCMD_WATCHED)) &&
                     next_ndrange_queue_ == c.queue_id;
  // Out-of-order queue, as SYCL runtimes submit: when the next command,
  // already here, waits for this one alone, this one keeps its native event
  // (that wait) but gets no callback, and is reported with the next one,
  // which cannot end before it: one callback and one COMPLETION batch for
  // a chain instead of one per command (doc/pocld.md, "Chains on
  // out-of-order queues").  Its report waits for the chain's next command.
  const bool chain = may_elide && !q.elide && !p->gated &&
                     next_ndrange_queue_ == c.queue_id && next_sole_wait_ == id;
  cl_event ev = nullptr;
  const uint64_t trace_t0 = POCLD_TRACE_T0();
  err =
      enqueue(static_cast<cl_uint>(waits_.size()),
              waits_.empty() ? nullptr : waits_.data(), elide ? nullptr : &ev);
  POCLD_TRACE_SPAN(NativeEnqueue, id, in_.hdr.type, 0, trace_t0);
  if (chain && err == CL_SUCCESS) {
    release_waits();
    p->ev = ev;
    p->chained = true;
    q.untracked.push_back(p);
    trailing_ = &q;
    trailing_id_ = c.queue_id;
    enqueued(q);
    return Outcome::Ok;
  }
  if (elide && err == CL_SUCCESS) {
    release_waits();
    p->ev = nullptr;
    q.untracked.push_back(p);
    trailing_ = &q;
    trailing_id_ = c.queue_id;
    enqueued(q);
    return Outcome::Ok;
  }
  launch(p, err, ev, q);
  return err == CL_SUCCESS ? Outcome::Ok : Outcome::Failed;
}

} // namespace pocld
