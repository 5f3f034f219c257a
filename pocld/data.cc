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
  // First, so that a send blocked on them lets go of data_.mu.  Not on
  // the first data socket: the bulk transport's shutdown ends UCX for the
  // session (a resumed one carries its payloads on TCP).
  const bool again = has_data_;
  pocl_remote_link_shutdown(&data_.link);
  if (again)
    data_bulk_.ops->shutdown(&data_bulk_);
  Conn old;
  {
    std::lock_guard<std::mutex> dlock(data_.mu);
    old = take(data_.link);
  }
  pocl_remote_link_shutdown(&old);
  data_stop_ = true;
  data_cv_.notify_all();
  data_cv_.wait(lock, [&] { return !data_running_; });
  data_stop_ = false;
  if (again) {
    // The old connection's: the client opens new ones after this socket.
    std::lock_guard<std::mutex> dlock(data_.mu);
    data_bulk_.ops->close(&data_bulk_);
  }
  if (old.up()) {
    pocl_remote_link_close(&old);
    LOG_INFO(sid_, "a newer data socket replaces the one attached");
  }
  // The reply, then the messages the client missed, go out before the
  // socket is published, so that nothing can overtake them.
  std::lock_guard<std::mutex> dlock(data_.mu);
  if (!send_hello_reply(c, CL_SUCCESS, id_.data(),
                        static_cast<uint32_t>(devs_.devices.size())) ||
      !replay(data_, c, client_seen_data_))
    return false;
  pocl_remote_link_set(&data_.link, &c);
  has_data_ = true;
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
  // Under the lock: detach() takes the link away under it.
  Conn c = [&] {
    std::lock_guard<std::mutex> lock(data_.mu);
    return data_.link;
  }();
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
      if (!client_ucx_hello(c, h))
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
    int got = recv_discard(c, skip)
                  ? data_bulk_.ops->recv(&data_bulk_, &c, mark,
                                         s.staging ? s.staging->data() + skip
                                                   : nullptr,
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
    if (seen_[1].fetch_add(1, std::memory_order_relaxed) % 16 == 15)
      send_ack(); // each DATA may hold much of the client's memory
  }
  // Writes cannot complete without the data socket: have the client resume,
  // unless a newer connection has replaced this socket already.
  if (holds(data_.link, c))
    drop_connection();
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
