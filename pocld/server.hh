// server.hh - the listener: listening sockets, one process per session, the
// session registry, data-socket hand-over, shutdown.  It never calls OpenCL.
#pragma once

#include "control.hh"
#include "devices.hh"

#include <csignal>
#include <cstdint>
#include <map>
#include <string>
#include <sys/types.h>
#include <vector>

namespace pocld {

class Server {
public:
  explicit Server(unsigned max_sessions) : max_sessions_(max_sessions) {}
  Server(const Server &) = delete;
  Server &operator=(const Server &) = delete;

  // Binds the command port, port + 1 (data) and the peer port; false,
  // logged, on failure.
  bool listen(const std::string &address, uint16_t port, uint16_t peer_port);
  // Has a short-lived process discover and log the devices (the listener
  // itself must not initialise OpenCL, see doc/pocld.md) and keeps what it
  // learnt about the platforms for the session processes.  The device
  // count, or -1 if the discovery did not finish.
  long discover_devices();
  // Accepts connections until *stop is set by a signal handler; signals
  // (SIGINT, SIGTERM, SIGHUP, SIGCHLD) are delivered only while waiting,
  // with `waitmask` as the signal mask.  Whenever *reload is set, clears it
  // and calls on_reload between two waits.
  void run(const volatile sig_atomic_t *stop, volatile sig_atomic_t *reload,
           void (*on_reload)(), const sigset_t *waitmask);
  // Ends every session process: SIGTERM, a grace period, SIGKILL.
  void stop(const sigset_t *waitmask);

private:
  // A session process.
  struct Child {
    int ctl = -1; // our end of its control socketpair; -1 once closed
    bool registered = false; // `id` is in by_id_
    SessionId id{};
    SessionId route{}; // with TLS: what its connections' STARTTLS names
    std::string key;   // the pre-shared key it was forked with
    char sid[9] = "-";
    std::string peer;
  };
  // A connection whose HELLO the listener reads itself: every data-port
  // connection, and command-port ones refused for the session limit.
  struct Handshake {
    int fd;
    uint32_t role; // the port's: POCL_REMOTE_ROLE_*
    size_t got = 0; // of msg, then of auth
    HelloMsg msg;
    bool challenged = false; // challenge sent, auth being read
    ChallengeMsg challenge;
    std::string key; // the one the challenge was made with
    AuthMsg auth;
    uint64_t deadline_ms;
    std::string peer;
  };

  void accept_on(uint32_t role);
  void fork_session(int fd, const char *peer);
  void close_for_child(int keep_a, int keep_b);
  bool read_hello(Handshake &h); // true when it is done with h.fd
  bool hello_done(Handshake &h); // true when it is done with h.fd
  void route(int fd, const pocl_remote_hello &hello, const char *peer,
             const SessionId *tls_route = nullptr);
  void refuse(int fd, const char *peer, const char *why, bool answer,
              int32_t status);
  const std::string &key_for(const pocl_remote_hello &hello) const;
  void child_input(pid_t pid, Child &c);
  void drop_registration(Child &c);
  void reap();

  const unsigned max_sessions_;
  std::vector<PlatformHint> hints_; // inherited by session processes
  bool stopping_ = false;
  int listen_fd_[3] = {-1, -1, -1}; // by role: command, data, peer
  std::map<pid_t, Child> children_;   // until reaped: the session count
  std::map<SessionId, pid_t> by_id_;  // registered, control socket open
  std::map<SessionId, pid_t> by_route_; // the same, by route, with TLS
  std::vector<Handshake> handshakes_; // in the order they arrived
};

} // namespace pocld
