// server.hh - listening sockets, handshakes and the session registry.
#pragma once

#include "devices.hh"
#include "session.hh"

#include <condition_variable>
#include <csignal>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>

namespace pocld {

class Server {
public:
  explicit Server(const Devices &devs) : devs_(devs) {}
  Server(const Server &) = delete;
  Server &operator=(const Server &) = delete;

  // Binds the command port and port + 1 (data); false, logged, on failure.
  bool listen(const std::string &address, uint16_t port);
  // Accepts connections until *stop is set by a signal handler; signals are
  // delivered only while waiting, with `waitmask` as the signal mask.  Then
  // ends every session and waits for all connection threads; false if some
  // did not finish in time.
  bool run(const volatile sig_atomic_t *stop, const sigset_t *waitmask);

private:
  void spawn(int fd, bool data_port);
  void serve(int fd, bool data_port);
  void serve_command(int fd, const char *peer);
  void serve_data(int fd, const pocl_remote_hello &hello, const char *peer);
  void refuse(int fd, const char *peer, const char *why);

  const Devices &devs_;
  int listen_fd_[2] = {-1, -1};

  std::mutex mu_;
  std::condition_variable threads_cv_;
  unsigned threads_ = 0; // connection threads alive
  bool stopping_ = false;
  std::set<int> handshaking_; // accepted, not yet owned by a session
  std::map<SessionId, std::shared_ptr<Session>> sessions_;
};

} // namespace pocld
