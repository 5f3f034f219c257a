// output.cc - kernel printf output, forwarded to the clients as OUTPUT.
#include "output.hh"

#include "log.hh"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <mutex>
#include <poll.h>
#include <thread>
#include <unistd.h>

namespace pocld {

namespace {

// Output nobody has picked up (no command completes) is kept up to this
// much; the rest is dropped.
constexpr size_t kMaxHeld = 16u << 20;

int g_pipe = -1; // read end, non-blocking
std::mutex g_order; // held from a take to its send (take_output)
std::mutex g_mu;
std::string g_held;                 // guarded by g_mu
std::atomic<bool> g_pending{false}; // g_held is not empty

// Appends what the pipe holds; g_mu held.
void read_pipe()
{
  char buf[65536];
  ssize_t n;
  while ((n = read(g_pipe, buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))
    if (n > 0) {
      size_t keep = std::min<size_t>(n, kMaxHeld - g_held.size());
      if (keep < size_t(n))
        LOG_WARN("-",
                 "kernel output: %zu bytes dropped, nobody to send "
                 "them to",
                 size_t(n) - keep);
      g_held.append(buf, keep);
    }
  g_pending.store(!g_held.empty(), std::memory_order_release);
}

void collect()
{
  pollfd p{g_pipe, POLLIN, 0};
  for (;;) {
    if (poll(&p, 1, -1) < 0 && errno != EINTR)
      return;
    std::lock_guard<std::mutex> lock(g_mu);
    read_pipe();
  }
}

} // namespace

void start_output_capture()
{
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    LOG_WARN("-", "kernel output not forwarded: pipe: %s", strerror(errno));
    return;
  }
  // Room for a burst of output while the collector catches up.
  fcntl(fds[1], F_SETPIPE_SZ, 1 << 20);
  fcntl(fds[0], F_SETFL, O_NONBLOCK);
  fflush(stdout);
  if (dup2(fds[1], STDOUT_FILENO) < 0) {
    LOG_WARN("-", "kernel output not forwarded: dup2: %s", strerror(errno));
    close(fds[0]);
    close(fds[1]);
    return;
  }
  close(fds[1]);
  // Runtimes that print through stdio must not sit on a buffer.
  setvbuf(stdout, nullptr, _IONBF, 0);
  g_pipe = fds[0];
  // Lives as long as the process; it holds no resources worth releasing.
  std::thread(collect).detach();
}

bool take_output(std::string &out, bool drain,
                 std::unique_lock<std::mutex> &order)
{
  if (g_pipe < 0 || (!drain && !g_pending.load(std::memory_order_acquire)))
    return false;
  std::unique_lock<std::mutex> taking(g_order);
  std::lock_guard<std::mutex> lock(g_mu);
  if (drain)
    read_pipe();
  if (g_held.empty())
    return false;
  out.clear();
  out.swap(g_held);
  g_pending.store(false, std::memory_order_relaxed);
  order = std::move(taking);
  return true;
}

} // namespace pocld
