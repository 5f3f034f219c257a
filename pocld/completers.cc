// completers.cc - the session's two completion threads, started on first
// use: the waiter, which waits for the commands of platforms whose callbacks
// cannot be relied on (Platform::wait_completion) in the order they were
// enqueued, and the failer, which completes the failures a runtime calls
// back while it holds a lock that a completion's own locks must not nest in
// (completions.hh, failed_mu_).
#include "completions.hh"

namespace pocld {

void Completions::wait_for(Pending *p)
{
  // Under the lock: the data reader launches writes too.
  std::lock_guard<std::mutex> lock(wait_mu_);
  waiting_.push_back(p);
  if (!waiter_.joinable())
    waiter_ = std::thread(&Completions::waiter_loop, this);
  wait_cv_.notify_one();
}

// Waits for the ungated commands in the order they were enqueued: each will
// finish without the client's help, so this never blocks for good, but one
// that finishes early behind a long one is reported when that one is.
void Completions::waiter_loop()
{
  std::unique_lock<std::mutex> lock(wait_mu_);
  for (;;) {
    wait_cv_.wait(lock, [&] { return waiter_stop_ || !waiting_.empty(); });
    if (waiting_.empty())
      return;
    Pending *p = waiting_.front();
    waiting_.pop_front();
    lock.unlock();
    clWaitForEvents(1, &p->ev);
    cl_int st = CL_COMPLETE;
    clGetEventInfo(p->ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st,
                   nullptr);
    complete(p, st);
    lock.lock();
  }
}

void Completions::fail_later(Pending *p, cl_int status)
{
  std::lock_guard<std::mutex> lock(failed_mu_);
  failing_.emplace_back(p, status);
  if (!failer_.joinable())
    failer_ = std::thread(&Completions::failer_loop, this);
  failed_cv_.notify_one();
}

void Completions::failer_loop()
{
  std::vector<std::pair<Pending *, cl_int>> batch;
  std::unique_lock<std::mutex> lock(failed_mu_);
  for (;;) {
    failed_cv_.wait(lock, [&] { return failer_stop_ || !failing_.empty(); });
    if (failing_.empty())
      return;
    batch.swap(failing_);
    lock.unlock();
    for (auto &f : batch)
      complete(f.first, f.second);
    batch.clear();
    lock.lock();
  }
}

void Completions::stop_failer()
{
  std::thread t;
  {
    std::lock_guard<std::mutex> lock(failed_mu_);
    failer_stop_ = true;
    t.swap(failer_);
  }
  failed_cv_.notify_one();
  if (t.joinable())
    t.join();
}

void Completions::stop_waiter()
{
  {
    std::lock_guard<std::mutex> lock(wait_mu_);
    waiter_stop_ = true;
  }
  wait_cv_.notify_one();
  if (waiter_.joinable())
    waiter_.join();
}

} // namespace pocld
