// lanes.cc - payloads striped over the data socket and a session's lanes.
// One TCP stream moves about 3.5 GB/s from and to memory on the H200 host,
// four about 10 (doc/benchmarks.md): the copies in and out of the kernel are
// bound by the one core that makes them.
#include "lanes.hh"

#include <algorithm>
#include <atomic>
#include <sys/socket.h>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

namespace pocld {
namespace {

constexpr uint64_t kStripe = POCL_REMOTE_STRIPE;

// move(k) moves stream k's stripes.  A stream that cannot have a thread
// goes after stream 0, in the caller's: the peer's streams are independent,
// so that only delays it.  A failed stream shuts the others down (with
// keep_main, a failed lane only the lanes).  Bit k of the result: stream k
// failed.
template <class F>
uint32_t fork_streams(const Conn *streams, unsigned count, F move,
                      bool keep_main = false)
{
  std::atomic<uint32_t> failed{0};
  auto run = [&](unsigned k) {
    if (move(k))
      return;
    uint32_t before = failed.fetch_or(1u << k);
    if (before == 0)
      for (unsigned j = keep_main && k != 0 ? 1 : 0; j < count; ++j)
        shutdown(streams[j].fd, SHUT_RDWR);
  };
  std::vector<std::thread> threads;
  unsigned k = 1;
  try {
    threads.reserve(count - 1);
    for (; k < count; ++k)
      threads.emplace_back(run, k);
  } catch (const std::exception &) {
  }
  run(0);
  for (unsigned j = k; j < count; ++j)
    run(j);
  for (std::thread &t : threads)
    t.join();
  return failed.load();
}

Striped outcome(uint32_t failed)
{
  return failed == 0 ? Striped::Ok
         : failed & 1 ? Striped::MainFailed
                      : Striped::LaneFailed;
}

// Stream k's stripes of [0, n) at base (dropped when base is null).
bool recv_stream(const Conn &c, unsigned k, unsigned count, uint8_t *base,
                 uint64_t n,
                 const std::function<void(unsigned, uint64_t)> *done)
{
  uint64_t stripes = 0;
  for (uint64_t off = k * kStripe; off < n; off += count * kStripe) {
    uint64_t len = std::min(kStripe, n - off);
    if (!(base ? recv_exact(c, base + off, len) : recv_discard(c, len)))
      return false;
    if (done != nullptr && *done)
      (*done)(k, ++stripes);
  }
  return true;
}

bool send_stream(const Conn &c, unsigned k, unsigned count,
                 const uint8_t *base, uint64_t n)
{
  for (uint64_t off = k * kStripe; off < n; off += count * kStripe) {
    iovec iov{const_cast<uint8_t *>(base) + off, std::min(kStripe, n - off)};
    if (!send_iov(c, &iov, 1))
      return false;
  }
  return true;
}

} // namespace

bool stripe_send(const Conn *streams, unsigned count, const uint8_t *base,
                 uint64_t n)
{
  return fork_streams(streams, count, [&](unsigned k) {
           return send_stream(streams[k], k, count, base, n);
         }) == 0;
}

bool send_striped(const Conn *streams, unsigned count, uint32_t type,
                  uint64_t id, const void *body, size_t body_len,
                  const uint8_t *payload, uint64_t n)
{
  pocl_remote_hdr h{type | POCL_RMSG_LANES(count - 1),
                    static_cast<uint32_t>(body_len), n, id};
  iovec iov[2] = {{&h, sizeof h}, {const_cast<void *>(body), body_len}};
  return send_iov(streams[0], iov, body_len ? 2 : 1) &&
         stripe_send(streams, count, payload, n);
}

bool stripe_recv(const Conn *streams, unsigned count, uint8_t *base, uint64_t n,
                 const std::function<void(unsigned, uint64_t)> &done)
{
  return fork_streams(streams, count, [&](unsigned k) {
           return recv_stream(streams[k], k, count, base, n, &done);
         }) == 0;
}

Striped send_striped_keep(const Conn *streams, unsigned count, uint32_t type,
                          uint64_t id, const void *body, size_t body_len,
                          const uint8_t *payload, uint64_t n)
{
  pocl_remote_hdr h{type | POCL_RMSG_LANES(count - 1),
                    static_cast<uint32_t>(body_len), n, id};
  iovec iov[2] = {{&h, sizeof h}, {const_cast<void *>(body), body_len}};
  if (!send_iov(streams[0], iov, body_len ? 2 : 1))
    return Striped::MainFailed;
  return outcome(fork_streams(
      streams, count,
      [&](unsigned k) { return send_stream(streams[k], k, count, payload, n); },
      true));
}

Striped stripe_recv_keep(const Conn *streams, unsigned count, uint8_t *base,
                         uint64_t n,
                         const std::function<void(unsigned, uint64_t)> *done)
{
  return outcome(fork_streams(
      streams, count,
      [&](unsigned k) {
        return recv_stream(streams[k], k, count, base, n, done);
      },
      true));
}

uint64_t stripe_prefix(const uint64_t *stripes, unsigned count, uint64_t n)
{
  // Stream k's first missing stripe is stripe k + stripes[k] * count.
  uint64_t first = stripes[0] * count;
  for (unsigned k = 1; k < count; ++k)
    first = std::min(first, k + stripes[k] * count);
  return std::min(n, first * kStripe);
}

StripePrefix::StripePrefix(unsigned count, uint64_t n, uint64_t step,
                           Grown grown)
    : done([this](unsigned k, uint64_t stripes) { stripe_in(k, stripes); }),
      count_(count), n_(n), step_(step), grown_(std::move(grown))
{
}

void StripePrefix::stripe_in(unsigned k, uint64_t stripes)
{
  std::lock_guard<std::mutex> lock(mu_);
  stripes_[k] = stripes;
  const uint64_t to = stripe_prefix(stripes_, count_, n_);
  if (!grown_ || to - given_ < step_)
    return;
  grown_(given_, to);
  given_ = to;
}

uint64_t StripePrefix::prefix()
{
  std::lock_guard<std::mutex> lock(mu_);
  return stripe_prefix(stripes_, count_, n_);
}

uint64_t StripePrefix::given()
{
  std::lock_guard<std::mutex> lock(mu_);
  return given_;
}

} // namespace pocld
