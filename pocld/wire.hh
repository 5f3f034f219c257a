// wire.hh - message I/O on links (transport.hh), framing and payload
// parsing.
#pragma once

#include "pocl_remote_protocol.h"
#include "transport.hh"

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace pocld {

// A session's id, as HELLO and HELLO_REPLY carry it.
using SessionId = std::array<uint8_t, 16>;

// One received message.  body and payload point into the reader's buffer and
// stay valid until the next call to MsgReader::next (channel.hh).
struct Msg {
  pocl_remote_hdr hdr;
  const uint8_t *body;
  const uint8_t *payload;
};

// Bounds-checked sequential access to a payload.  Every accessor fails
// (returns null/false) instead of reading past the end.
class Cursor {
public:
  Cursor(const uint8_t *p, uint64_t n) : p_(p), left_(n) {}
  uint64_t left() const { return left_; }
  const uint8_t *take(uint64_t n)
  {
    if (n > left_)
      return nullptr;
    const uint8_t *r = p_;
    p_ += n;
    left_ -= n;
    return r;
  }
  template <class T> bool get(T &out)
  {
    const uint8_t *q = take(sizeof(T));
    if (q == nullptr)
      return false;
    memcpy(&out, q, sizeof(T));
    return true;
  }

private:
  const uint8_t *p_;
  uint64_t left_;
};

template <class T> T load(const uint8_t *p)
{
  T v;
  memcpy(&v, p, sizeof v);
  return v;
}

inline bool add_ok(uint64_t a, uint64_t b, uint64_t &r)
{
  return !__builtin_add_overflow(a, b, &r);
}
inline bool mul_ok(uint64_t a, uint64_t b, uint64_t &r)
{
  return !__builtin_mul_overflow(a, b, &r);
}

// All of iov's bytes, in order (may advance iov's entries).
bool send_iov(Conn c, iovec *iov, int count);
// One message (header, body, payload) with one send of the link; an ACK
// before it in the same send where ack is not null.
bool send_msg(Conn c, uint32_t type, uint64_t id, const void *body,
              size_t body_len, const void *payload, uint64_t payload_len,
              const pocl_remote_ack *ack = nullptr);
// One message whose payload goes the way the connection's bulk transport
// marks it (*mark; 0: inline, send_msg): POCL_REMOTE_BULK_OK, _PARTIAL or
// _BROKEN.  src: when a payload still being read is ready (inline: all of
// it before the send).
int send_bulk(Conn c, pocl_remote_bulk &b, uint32_t type, uint64_t id,
              const void *body, size_t body_len, const uint8_t *payload,
              uint64_t payload_len, uint32_t *mark = nullptr,
              const pocl_remote_bulk_src *src = nullptr);
// How long a session whose client connections broke waits for the client
// to resume it (--session-grace), and a peer link for its other end; set
// by main before any fork.  Every HELLO_REPLY says it: the client tries
// to resume for as long.
extern int session_grace_ms;

// seen: a resume's counts (pocl_remote_hello_reply), or null.
bool send_hello_reply(Conn c, int32_t status, const uint8_t session_id[16],
                      uint32_t num_devices, const uint64_t *seen = nullptr);
// Blocks until n bytes arrived; false on EOF or error.
bool recv_exact(Conn c, void *buf, uint64_t n);
// recv_exact, polling the link first for as long as the command reader
// does (POCLD_SPIN_US): for readers whose next message is often close.
bool recv_exact_spin(Conn c, void *buf, uint64_t n);
// Reads and drops n bytes (a payload nobody wants); false as recv_exact.
bool recv_discard(Conn c, uint64_t n);
// As recv_exact, but gives up after timeout_ms in total.
bool recv_deadline(Conn c, void *buf, size_t n, int timeout_ms);
// A bulk receive's listener (pocl_remote_bulk_io) calling f(from, to) as
// the payload's gap-free prefix grows by `step`.
template <class F> pocl_remote_bulk_io grown_by(F &f, uint64_t step)
{
  pocl_remote_bulk_io io{};
  io.grown = [](void *arg, uint64_t from, uint64_t to) {
    (*static_cast<F *>(arg))(from, to);
  };
  io.grown_arg = &f;
  io.step = step;
  return io;
}

// How long a reader polls its link before it blocks (POCLD_SPIN_US).
uint64_t spin_ns();
uint64_t realtime_ns();
uint64_t monotonic_ns();

} // namespace pocld
