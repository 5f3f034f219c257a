// data.cc - the data socket: attaching it, and its reader, which takes the
// bytes of WRITE* commands (DATA, striped over the lanes when large) into
// their staging in command order and writes them to the device as they come
// (write.cc).
#include "session.hh"

#include "lanes.hh"
#include "log.hh"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sys/socket.h>
#include <unistd.h>

namespace pocld {

bool Session::attach_data(Conn c)
{
  std::unique_lock<std::mutex> lock(mu_);
  if (closing_)
    return false;
  // A data socket still attached is from an earlier attempt of this client
  // to connect (one that failed half-way, or that the server has not seen
  // break yet): the newest one wins.
  int old;
  pocl_remote_tls *old_tls;
  // First, so that a send blocked on them lets go of data_.mu.
  old = data_.fd.load();
  if (old >= 0)
    shutdown(old, SHUT_RDWR);
  shutdown_lanes();
  {
    std::lock_guard<std::mutex> dlock(data_.mu);
    old = data_.fd.exchange(-1);
    old_tls = std::exchange(data_.tls, nullptr);
  }
  if (old >= 0)
    shutdown(old, SHUT_RDWR);
  data_stop_ = true;
  data_cv_.notify_all();
  data_cv_.wait(lock, [&] { return !data_running_; });
  data_stop_ = false;
  {
    // The old connection's: the client opens new ones after this socket.
    std::lock_guard<std::mutex> dlock(data_.mu);
    close_lanes();
  }
  if (old >= 0) {
    tls_free(old_tls);
    close(old);
    LOG_INFO(sid_, "a newer data socket replaces the one attached");
  }
  // The reply, then the messages the client missed, go out before the
  // socket is published, so that nothing can overtake them.
  std::lock_guard<std::mutex> dlock(data_.mu);
  if (!send_hello_reply(c, CL_SUCCESS, id_.data(),
                        static_cast<uint32_t>(devs_.devices.size())) ||
      !replay(data_, c, client_seen_data_))
    return false;
  data_.tls = c.tls;
  data_.fd = c.fd;
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

// A striped DATA: its stripes land in the staging, and the bytes in without
// a gap go to the device as they grow (a write in parts), from the stream
// threads.  in: those bytes at the end.
bool Session::recv_striped(const Conn *streams, unsigned count,
                           const DataSlot &s, uint64_t &in)
{
  WriteJob *j = s.job != nullptr && s.job->in_parts ? s.job : nullptr;
  StripePrefix prefix(count, s.size, kChunk, [&](uint64_t, uint64_t to) {
    data_parts_.fetch_add(1, std::memory_order_relaxed);
    if (j != nullptr)
      write_part(*j, to);
  });
  const bool ok =
      stripe_recv(streams, count, s.staging ? s.staging->data() : nullptr,
                  s.size, prefix.done);
  in = prefix.prefix();
  return ok;
}

void Session::run_data()
{
  // Under the lock: detach() takes the TLS state away under it.
  Conn c = [&] {
    std::lock_guard<std::mutex> lock(data_.mu);
    return Conn(data_.fd.load(), data_.tls);
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
    const unsigned lanes = POCL_RMSG_LANE_COUNT(h.type);
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
    Conn streams[POCL_REMOTE_MAX_LANES + 1];
    if (lanes > 0 && (!lane_streams(c, lanes, streams) || s.in != 0)) {
      LOG_ERR(sid_,
              "DATA for event %llu in stripes over %u lanes, which this "
              "session does not have, or sent again so",
              (unsigned long long)s.id, lanes);
      fail_slot(s);
      std::lock_guard<std::mutex> lock(mu_);
      fatal_ = true;
      break;
    }
    // In parts, each written to the device (a write in parts) while the
    // next one comes in.  After a break the client sends all the bytes
    // again: those already in are skipped.
    uint64_t in = s.in;
    bool ok = lanes > 0 ? recv_striped(streams, lanes + 1, s, in)
                        : recv_discard(c, s.in);
    while (ok && in < s.size) {
      uint64_t len = std::min(kChunk, s.size - in);
      ok = s.staging ? recv_exact(c, s.staging->data() + in, len)
                     : recv_discard(c, len);
      if (!ok)
        break;
      in += len;
      data_parts_.fetch_add(1, std::memory_order_relaxed);
      if (s.job != nullptr && s.job->in_parts)
        write_part(*s.job, in);
    }
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
  if (data_.fd.load() == c.fd)
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
