// data.cc - the data socket: attaching it, and its reader, which takes the
// bytes of WRITE* commands (DATA, striped over the lanes when large) into
// their staging in command order and writes them to the device as they come
// (write.cc).
#include "session.hh"

#include "log.hh"

#include <algorithm>
#include <cstring>

namespace pocld {

bool Session::attach_data(Conn c)
{
  std::unique_lock<std::mutex> lock(mu_);
  if (closing_)
    return false;
  // A data socket still attached is from an earlier attempt of this client
  // to connect (one that failed half-way, or that the server has not seen
  // break yet): the newest one wins.
  bool again;
  Conn old = client_.take_data(again);
  data_stop_ = true;
  data_cv_.notify_all();
  data_cv_.wait(lock, [&] { return !data_running_; });
  data_stop_ = false;
  client_.end_data(old, again);
  if (!client_.install_data(c, client_seen_data_))
    return false;
  data_running_ = true;
  return true;
}

// A slot whose bytes will never come: its write, if not launched yet, is
// launched behind a user event, which fails, as the command then does.
void Session::fail_slot(DataSlot &s)
{
  if (s.job != nullptr)
    finish_job(defer_job(s));
  if (s.ue != nullptr) {
    clSetUserEventStatus(s.ue, CL_DEVICE_NOT_AVAILABLE);
    clReleaseEvent(s.ue);
  }
  if (s.staging != nullptr)
    s.staging->unref();
}

void Session::run_data()
{
  Conn c = client_.data_link();
  pocl_remote_bulk &bulk = client_.data_bulk();
  LOG_DEBUG(sid_, "data socket attached");
  for (;;) {
    pocl_remote_hdr h;
    if (!recv_exact(c, &h, sizeof h))
      break;
    const uint64_t trace_t0 = POCLD_TRACE_T0();
    DecodeError e;
    if (!check_data_header(h, e)) {
      LOG_ERR(sid_, "%s", e.why);
      std::lock_guard<std::mutex> lock(mu_);
      fatal_ = true;
      break;
    }
    if (h.type == POCL_RMSG_UCX_HELLO) {
      if (!client_.ucx_hello(c, h))
        break;
      continue;
    }
    // How the payload comes (the bulk transport's mark).
    const uint32_t mark = h.type & ~POCL_RMSG_TYPE_OF(h.type);
    // The command reader registers the slot when it handles the WRITE*;
    // DATA can overtake it since the sockets are independent.
    DataSlot s;
    {
      std::unique_lock<std::mutex> lock(mu_);
      data_cv_.wait(lock, [&] {
        return !data_slots_.empty() || closing_ || data_stop_;
      });
      if (closing_ || data_stop_)
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
      std::lock_guard<std::mutex> lock(mu_);
      fatal_ = true;
      break;
    }
    // A first sending may come in stripes; one sent again after a cut
    // inside its bytes never does (the client replays it inline).
    if (mark != 0 && s.in != 0) {
      LOG_ERR(sid_, "DATA for event %llu sent again in stripes",
              (unsigned long long)s.id);
      fail_slot(s);
      std::lock_guard<std::mutex> lock(mu_);
      fatal_ = true;
      break;
    }
    // After a break the client sends all the bytes again: those already in
    // are skipped.  The rest is written to the device (a write in parts)
    // as it comes, kChunk at a time, from the bulk transport's threads.
    WriteJob *j = s.job != nullptr && s.job->in_parts ? s.job : nullptr;
    const uint64_t skip = s.in;
    auto grown = [&](uint64_t, uint64_t to) {
      data_parts_.fetch_add(1, std::memory_order_relaxed);
      if (j != nullptr)
        write_part(*j, skip + to);
    };
    const pocl_remote_bulk_io io = grown_by(grown, kChunk);
    uint64_t arrived = 0;
    int got =
        recv_discard(c, skip)
            ? bulk.ops->recv(&bulk, &c, mark,
                             s.staging ? s.staging->data() + skip : nullptr,
                             s.size - skip, &io, &arrived)
            : POCL_REMOTE_BULK_BROKEN;
    if (got == POCL_REMOTE_BULK_REFUSED) {
      LOG_ERR(sid_,
              "DATA for event %llu marked %#x (lanes or UCX), which this "
              "session does not have",
              (unsigned long long)s.id, mark);
      fail_slot(s);
      std::lock_guard<std::mutex> lock(mu_);
      fatal_ = true;
      break;
    }
    const uint64_t in = skip + arrived;
    const bool ok = got == POCL_REMOTE_BULK_OK;
    if (!ok) {
      // Cut inside the bytes: the client sends them again after a resume,
      // and the job goes behind a user event when this reader ends.
      LOG_INFO(sid_, "DATA for event %llu cut after %llu of %llu bytes",
               (unsigned long long)s.id, (unsigned long long)in,
               (unsigned long long)s.size);
      s.in = s.staging != nullptr ? in : 0;
      std::lock_guard<std::mutex> lock(mu_);
      data_slots_.push_front(s);
      break;
    }
    POCLD_TRACE_SPAN(DataRecv, s.id, POCL_RMSG_DATA, s.size, trace_t0);
    if (mark == POCL_RMSG_UCX)
      LOG_DEBUG(sid_, "%llu bytes for %llu from the client over UCX",
                (unsigned long long)s.size, (unsigned long long)s.id);
    if (s.job != nullptr)
      finish_job(s.job);
    if (s.ue != nullptr) {
      clSetUserEventStatus(s.ue, CL_COMPLETE);
      clReleaseEvent(s.ue);
    }
    if (s.staging != nullptr)
      s.staging->unref();
    client_.data_seen();
  }
  // Writes cannot complete without the data socket: have the client resume,
  // unless a newer connection has replaced this socket already.
  if (client_.holds_data(c))
    client_.drop_connection();
  // A write whose bytes stopped coming is launched, its rest behind a user
  // event, before this reader counts as ended, under mu_: the command
  // reader, handing a job over, sees either the reader running or it ended
  // (and then defers the job itself).
  std::unique_lock<std::mutex> lock(mu_);
  defer_queued(lock);
  data_running_ = false;
  data_cv_.notify_all();
}

} // namespace pocld
