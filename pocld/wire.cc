// wire.cc - message I/O on links, framing and payload parsing.
#include "wire.hh"

#include "pocl_remote_cpus.h"

#include <cstdlib>
#include <ctime>
#include <sys/uio.h>
#include <unistd.h>

namespace pocld {

// How long the command reader (and a peer reader) polls its socket before
// it blocks: a client waiting for a completion sends its next command about
// one round trip after it, and the reader then takes it without a wake-up;
// a migration's bytes follow its PUSH as closely; 400 us covers
// kernels of a few hundred us too (an H100's stream kernels over 2^25
// doubles: 36-72 us less per kernel than 100; doc/benchmarks.md, "Polling
// before blocking").
// POCLD_SPIN_US; 0 on two CPUs or fewer, where the spinner would take the
// CPU the client's and the runtime's threads need.
uint64_t spin_ns()
{
  static const uint64_t t = [] {
    const char *env = getenv("POCLD_SPIN_US");
    long us = env != nullptr ? strtol(env, nullptr, 10)
                             : (pocl_remote_usable_cpus() > 2 ? 400 : 0);
    return us > 0 ? uint64_t(us) * 1000 : 0;
  }();
  return t;
}

bool send_iov(Conn c, iovec *iov, int count)
{
  return pocl_remote_link_send(&c, iov, count) == 0;
}

bool send_msg(Conn c, uint32_t type, uint64_t id, const void *body,
              size_t body_len, const void *payload, uint64_t payload_len,
              const pocl_remote_ack *ack)
{
  pocl_remote_hdr ah{POCL_RMSG_ACK, sizeof *ack, 0, 0};
  pocl_remote_hdr h;
  h.type = type;
  h.body_size = static_cast<uint32_t>(body_len);
  h.payload_size = payload_len;
  h.id = id;
  iovec iov[5] = {{&ah, sizeof ah},
                  {const_cast<pocl_remote_ack *>(ack), sizeof *ack},
                  {&h, sizeof h},
                  {const_cast<void *>(body), body_len},
                  {const_cast<void *>(payload), payload_len}};
  const int skip = ack != nullptr ? 0 : 2;
  return send_iov(c, iov + skip, (payload_len ? 5 : 4) - skip);
}

int send_bulk(Conn c, pocl_remote_bulk &b, uint32_t type, uint64_t id,
              const void *body, size_t body_len, const uint8_t *payload,
              uint64_t payload_len, uint32_t *mark_out,
              const pocl_remote_bulk_src *src)
{
  const uint32_t mark = b.ops->mark(&b, payload_len);
  if (mark_out != nullptr)
    *mark_out = mark;
  if (mark == 0) {
    if (src != nullptr)
      src->ready(src->arg, payload_len);
    return send_msg(c, type, id, body, body_len, payload, payload_len)
               ? POCL_REMOTE_BULK_OK
               : POCL_REMOTE_BULK_BROKEN;
  }
  pocl_remote_hdr h{type | mark, static_cast<uint32_t>(body_len), payload_len,
                    id};
  iovec iov[2] = {{&h, sizeof h}, {const_cast<void *>(body), body_len}};
  if (!send_iov(c, iov, body_len ? 2 : 1))
    return POCL_REMOTE_BULK_BROKEN;
  return b.ops->send(&b, &c, mark, payload, payload_len, src);
}

int session_grace_ms = 60000;

bool send_hello_reply(Conn c, int32_t status, const uint8_t session_id[16],
                      uint32_t num_devices, const uint64_t *seen)
{
  pocl_remote_hello_reply r{};
  if (seen != nullptr)
    memcpy(r.seen, seen, sizeof r.seen);
  r.magic = POCL_REMOTE_MAGIC;
  r.version = POCL_REMOTE_PROTOCOL_VERSION;
  r.status = status;
  r.num_devices = num_devices;
  memcpy(r.session_id, session_id, sizeof r.session_id);
  r.server_time_ns = realtime_ns();
  r.session_grace_ms = static_cast<uint32_t>(session_grace_ms);
  return send_msg(c, POCL_RMSG_HELLO_REPLY, 0, &r, sizeof r, nullptr, 0);
}

bool recv_exact(Conn c, void *buf, uint64_t n)
{
  return pocl_remote_link_recv_full(&c, buf, n) == 0;
}

bool recv_exact_spin(Conn c, void *buf, uint64_t n)
{
  if (n == 0)
    return true;
  long r = pocl_remote_link_recv(&c, buf, n, spin_ns());
  if (r <= 0)
    return false;
  return recv_exact(c, static_cast<char *>(buf) + r, n - uint64_t(r));
}

bool recv_discard(Conn c, uint64_t n)
{
  return pocl_remote_link_discard(&c, n) == 0;
}

bool recv_deadline(Conn c, void *buf, size_t n, int timeout_ms)
{
  return pocl_remote_link_recv_deadline(&c, buf, n, timeout_ms) == 0;
}

static uint64_t clock_ns(clockid_t c)
{
  timespec ts;
  clock_gettime(c, &ts);
  return uint64_t(ts.tv_sec) * 1000000000u + ts.tv_nsec;
}

uint64_t realtime_ns() { return clock_ns(CLOCK_REALTIME); }
uint64_t monotonic_ns() { return clock_ns(CLOCK_MONOTONIC); }

} // namespace pocld
