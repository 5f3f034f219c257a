// lanes.hh - payloads striped over the data socket and a session's lanes
// (pocl_remote_lanes.h).
#pragma once
#include "wire.hh"

#include <functional>
#include <mutex>

namespace pocld {

// streams[0] is the data socket, streams[k] lane k.  Each function moves
// every stream's stripes of payload [0, n) at base, one thread per lane
// (the caller takes stream 0), so that each stream's copies have a core of
// their own.  A stream that fails shuts all of them down: the others would
// wait on the peer otherwise.  False if any failed.
bool stripe_send(const Conn *streams, unsigned count, const uint8_t *base,
                 uint64_t n);
// One message with its payload striped: header (type | POCL_RMSG_LANES)
// and body on streams[0], then the stripes.
bool send_striped(const Conn *streams, unsigned count, uint32_t type,
                  uint64_t id, const void *body, size_t body_len,
                  const uint8_t *payload, uint64_t n);
// base null: the stripes are dropped.  done(k, stripes), from stream k's
// thread, after each of its stripes.
bool stripe_recv(const Conn *streams, unsigned count, uint8_t *base, uint64_t n,
                 const std::function<void(unsigned, uint64_t)> &done);
// Peer links: a lane that fails shuts down the lanes only, and stream 0,
// which also frames the messages, goes on to the end of its stripes, so
// that the link survives it.
enum class Striped { Ok, LaneFailed, MainFailed };
Striped send_striped_keep(const Conn *streams, unsigned count, uint32_t type,
                          uint64_t id, const void *body, size_t body_len,
                          const uint8_t *payload, uint64_t n);
Striped stripe_recv_keep(
    const Conn *streams, unsigned count, uint8_t *base, uint64_t n,
    const std::function<void(unsigned, uint64_t)> *done = nullptr);
// How much of an n-byte payload is in without a gap, given the stripes in
// per stream.
uint64_t stripe_prefix(const uint64_t *stripes, unsigned count, uint64_t n);

// The gap-free prefix of an n-byte payload striped over `count` streams, as
// their threads report their stripes (`done`, for stripe_recv): whenever it
// has grown by `step` bytes or more past what `grown` was last given,
// grown(from, to) runs, under a mutex of this object, so that the bytes in
// go on to the device while the rest comes.  grown may be empty.
class StripePrefix {
public:
  using Grown = std::function<void(uint64_t from, uint64_t to)>;
  StripePrefix(unsigned count, uint64_t n, uint64_t step, Grown grown);
  StripePrefix(const StripePrefix &) = delete;
  StripePrefix &operator=(const StripePrefix &) = delete;
  const std::function<void(unsigned, uint64_t)> done;
  // The prefix in, and how much of it grown was given.
  uint64_t prefix();
  uint64_t given();

private:
  void stripe_in(unsigned k, uint64_t stripes);
  std::mutex mu_;
  const unsigned count_;
  const uint64_t n_, step_;
  const Grown grown_;
  uint64_t stripes_[POCL_REMOTE_MAX_LANES + 1] = {};
  uint64_t given_ = 0;
};

} // namespace pocld
