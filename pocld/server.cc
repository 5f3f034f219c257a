// server.cc - the listener: listening sockets, one process per session, the
// session registry, data-socket hand-over, shutdown.  It never calls OpenCL,
// and it has no thread but the main one, so fork() is safe at any point.
#include "server.hh"

#include "child.hh"
#include "cl.hh" // error codes only: the listener calls no OpenCL
#include "log.hh"
#include "pocl_remote_auth.h"
#include "pocl_remote_tcp.h"
#include "server_tls.hh"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

namespace pocld {

namespace {

// Connections whose HELLO the listener reads itself (data and peer sockets, and
// command sockets over the session limit); more are closed at once, so that
// connecting without speaking cannot pile up descriptors.
constexpr size_t kMaxHandshakes = 128;
// On stop, how long session processes get to end after SIGTERM before
// SIGKILL, and how long SIGKILLed ones are then waited for.
constexpr uint64_t kStopGraceMs = 5000;
constexpr uint64_t kKillWaitMs = 2000;
// The startup device discovery (the old pocld did it before listening too);
// a platform that hangs in it must not keep pocld from serving.
constexpr uint64_t kDiscoveryTimeoutMs = 30000;
// A peer that accepts no bytes for this long is considered gone; this
// bounds how long a completion callback can block on a stuck client.
constexpr int kSendTimeoutS = 60;

uint64_t now_ms() { return monotonic_ns() / 1000000; }

int listen_on(const std::string &address, uint16_t port)
{
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo *res = nullptr;
  std::string service = std::to_string(port);
  int gai = getaddrinfo(address.c_str(), service.c_str(), &hints, &res);
  if (gai != 0) {
    LOG_ERR("-", "cannot resolve %s: %s", address.c_str(), gai_strerror(gai));
    return -1;
  }
  int fd = -1, err = 0;
  for (addrinfo *ai = res; ai != nullptr && fd < 0; ai = ai->ai_next) {
    fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      err = errno;
      continue;
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 ||
        ::listen(fd, SOMAXCONN) != 0) {
      err = errno;
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(res);
  if (fd < 0)
    LOG_ERR("-", "cannot listen on %s port %u: %s", address.c_str(), port,
            strerror(err));
  return fd;
}

// Waits for a signal (SIGCHLD included) or timeout_ms.
void pause_ms(uint64_t timeout_ms, const sigset_t *waitmask)
{
  timespec ts{time_t(timeout_ms / 1000), long(timeout_ms % 1000) * 1000000};
  ppoll(nullptr, 0, &ts, waitmask);
}

} // namespace

bool Server::listen(const std::string &address, uint16_t port,
                    uint16_t peer_port)
{
  if (port > 65535 - POCL_REMOTE_DATA_PORT_OFFSET) {
    LOG_ERR("-", "port %u leaves no room for the data port", port);
    return false;
  }
  const uint16_t ports[3] = {
      port, uint16_t(port + POCL_REMOTE_DATA_PORT_OFFSET), peer_port};
  for (int i = 0; i < 3; ++i) {
    listen_fd_[i] = listen_on(address, ports[i]);
    if (listen_fd_[i] < 0) {
      for (int j = 0; j < i; ++j) {
        close(listen_fd_[j]);
        listen_fd_[j] = -1;
      }
      return false;
    }
  }
  return true;
}

// In a freshly forked child: closes every descriptor of the listener except
// the ones the child keeps.
void Server::close_for_child(int keep_a, int keep_b)
{
  auto drop = [&](int fd) {
    if (fd >= 0 && fd != keep_a && fd != keep_b)
      close(fd);
  };
  for (int fd : listen_fd_)
    drop(fd);
  for (auto &c : children_)
    drop(c.second.ctl);
  for (Handshake &h : handshakes_)
    drop(h.fd);
}

long Server::discover_devices()
{
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) {
    LOG_WARN("-", "device discovery: pipe: %s", strerror(errno));
    return -1;
  }
  pid_t listener = getpid();
  pid_t pid = fork();
  if (pid == 0) {
    close(p[0]);
    child_setup(listener);
    run_device_logger(p[1]);
  }
  close(p[1]);
  if (pid < 0) {
    LOG_WARN("-", "device discovery: fork: %s", strerror(errno));
    close(p[0]);
    return -1;
  }
  std::string text;
  const uint64_t end = now_ms() + kDiscoveryTimeoutMs;
  bool finished = false;
  for (uint64_t now; (now = now_ms()) < end;) {
    pollfd pfd{p[0], POLLIN, 0};
    int pr = poll(&pfd, 1, int(end - now));
    if (pr == 0 || (pr < 0 && errno == EINTR))
      continue;
    if (pr < 0)
      break;
    char buf[4096];
    ssize_t n = read(p[0], buf, sizeof buf);
    if (n > 0)
      text.append(buf, n);
    else if (n == 0) {
      finished = true;
      break;
    } else if (errno != EINTR && errno != EAGAIN)
      break;
  }
  close(p[0]);
  if (!finished) {
    LOG_WARN("-",
             "device discovery did not finish within %llu s; each session "
             "probes its platforms itself",
             (unsigned long long)kDiscoveryTimeoutMs / 1000);
    kill(pid, SIGKILL);
  }
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
    ;
  if (!finished || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
    return -1;
  hints_ = parse_hints(text);
  long ndev = -1;
  if (sscanf(text.c_str(), "devices %ld", &ndev) != 1)
    ndev = -1;
  return ndev;
}

void Server::run(const volatile sig_atomic_t *stop,
                 volatile sig_atomic_t *reload, void (*on_reload)(),
                 const sigset_t *waitmask)
{
  std::vector<pollfd> fds;
  std::vector<pid_t> pids; // for fds[3 .. 3 + pids.size())
  while (!*stop) {
    if (*reload) {
      *reload = 0;
      on_reload();
    }
    fds.clear();
    pids.clear();
    for (int fd : listen_fd_)
      fds.push_back({fd, POLLIN, 0});
    for (auto &c : children_)
      if (c.second.ctl >= 0) {
        fds.push_back({c.second.ctl, POLLIN, 0});
        pids.push_back(c.first);
      }
    const size_t hs_base = fds.size();
    uint64_t deadline = UINT64_MAX;
    for (Handshake &h : handshakes_) {
      fds.push_back({h.fd, POLLIN, 0});
      deadline = std::min(deadline, h.deadline_ms);
    }
    timespec ts{}, *tsp = nullptr;
    if (deadline != UINT64_MAX) {
      uint64_t now = now_ms(), left = deadline > now ? deadline - now : 0;
      ts = {time_t(left / 1000), long(left % 1000) * 1000000};
      tsp = &ts;
    }
    int n = ppoll(fds.data(), fds.size(), tsp, waitmask);
    if (n < 0 && errno != EINTR) {
      LOG_ERR("-", "poll: %s", strerror(errno));
      break;
    }
    reap();
    if (n <= 0) {
      // Interrupted (a signal) or a handshake deadline.
      for (size_t j = handshakes_.size(); j-- > 0;)
        if (now_ms() >= handshakes_[j].deadline_ms &&
            read_hello(handshakes_[j]))
          handshakes_.erase(handshakes_.begin() + j);
      continue;
    }
    // Handshakes first, from the back, so that erasing keeps the indices of
    // the ones not looked at yet; new ones are appended only afterwards.
    for (size_t j = handshakes_.size(); j-- > 0;)
      if ((fds[hs_base + j].revents != 0 ||
           now_ms() >= handshakes_[j].deadline_ms) &&
          read_hello(handshakes_[j]))
        handshakes_.erase(handshakes_.begin() + j);
    for (size_t i = 0; i < pids.size(); ++i)
      if (fds[3 + i].revents != 0) {
        auto it = children_.find(pids[i]);
        if (it != children_.end() && it->second.ctl >= 0)
          child_input(it->first, it->second);
      }
    for (uint32_t role = 0; role < 3; ++role)
      if (fds[role].revents & POLLIN)
        accept_on(role);
  }
}

void Server::accept_on(uint32_t role)
{
  int fd = accept4(listen_fd_[role], nullptr, nullptr, SOCK_CLOEXEC);
  if (fd < 0) {
    LOG_WARN("-", "accept: %s", strerror(errno));
    // Out of descriptors: let some connections end instead of spinning.
    if (errno == EMFILE || errno == ENFILE)
      usleep(100000);
    return;
  }
  // The options of every PoCL-R link, the client's end having the same:
  // a client or peer that goes silent is noticed within seconds.
  pocl_remote_tcp_tune(fd);
  timeval tv{kSendTimeoutS, 0};
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  PeerName peer(fd);
  // A new session: its own process at once, which does the handshake.
  if (role == POCL_REMOTE_ROLE_COMMAND && children_.size() < max_sessions_)
    return fork_session(fd, peer.s);
  // A data or peer socket, or a session over the limit: the HELLO is read here (a
  // refusal is answered only after it, so that the close does not reset the
  // connection with the client's HELLO unread).
  if (handshakes_.size() >= kMaxHandshakes) {
    LOG_WARN("-", "%zu connections in their handshake, closing a new one",
             handshakes_.size());
    close(fd);
    return;
  }
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  Handshake h;
  h.fd = fd;
  h.role = role;
  h.deadline_ms = now_ms() + kHandshakeTimeoutMs;
  h.peer = peer.s;
  handshakes_.push_back(h);
}

void Server::fork_session(int fd, const char *peer)
{
  int sp[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) != 0) {
    LOG_ERR("-", "refusing %s: socketpair: %s", peer, strerror(errno));
    close(fd);
    return;
  }
  pid_t listener = getpid();
  pid_t pid = fork();
  if (pid == 0) {
    close(sp[0]);
    close_for_child(fd, sp[1]);
    child_setup(listener);
    run_session_process(fd, sp[1], peer, hints_);
  }
  close(sp[1]);
  close(fd);
  if (pid < 0) {
    LOG_ERR("-", "refusing %s: fork: %s", peer, strerror(errno));
    close(sp[0]);
    return;
  }
  Child c;
  c.ctl = sp[0];
  c.peer = peer;
  c.key = psk;
  children_.emplace(pid, c);
  LOG_DEBUG("-", "session process %d for %s", int(pid), peer);
}

bool Server::read_hello(Handshake &h)
{
  char *buf = h.challenged ? reinterpret_cast<char *>(&h.auth)
                           : reinterpret_cast<char *>(&h.msg);
  const size_t want = h.challenged ? sizeof h.auth : sizeof h.msg;
  ssize_t r = recv(h.fd, buf + h.got, want - h.got, MSG_DONTWAIT);
  if (r > 0)
    h.got += r;
  else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
    refuse(h.fd, h.peer.c_str(), "no handshake", false, 0);
    return true;
  }
  if (h.got == want && h.challenged) {
    if (const char *bad = auth_problem(h.msg.hello, h.key, h.challenge, h.auth))
      refuse(h.fd, h.peer.c_str(), bad, true, CL_INVALID_VALUE);
    else
      route(h.fd, h.msg.hello, h.peer.c_str());
    return true;
  }
  if (h.got == want)
    return hello_done(h);
  if (now_ms() >= h.deadline_ms) {
    refuse(h.fd, h.peer.c_str(), "no handshake", false, 0);
    return true;
  }
  return false;
}

bool Server::hello_done(Handshake &h)
{
  bool answer = false;
  uint32_t tls_role = h.role;
  SessionId tls_route{};
  const char *bad =
      tls_on() ? starttls_problem(h.msg, h.role, &answer, tls_role, tls_route)
               : hello_problem(h.msg, h.role, &answer);
  if (bad != nullptr) {
    refuse(h.fd, h.peer.c_str(), bad, answer, CL_INVALID_VALUE);
    return true;
  }
  if (h.role == POCL_REMOTE_ROLE_COMMAND) {
    // Command connections come here only when over the session limit.
    // Behind a STARTTLS, a reply in the clear would not be understood.
    char why[96];
    snprintf(why, sizeof why, "at the limit of %u sessions (--max-sessions)",
             max_sessions_);
    refuse(h.fd, h.peer.c_str(), why, !tls_on(), CL_OUT_OF_RESOURCES);
    return true;
  }
  if (tls_on()) {
    // The session's process does the TLS handshake, then HELLO and AUTH
    // inside it: the listener cannot hand over a TLS connection.
    pocl_remote_hello hello{};
    hello.role = tls_role;
    route(h.fd, hello, h.peer.c_str(), &tls_route);
    return true;
  }
  // Authenticated before it is routed to its session (the id only picks the
  // key).  The challenge fits a fresh socket's send buffer: a short send is a
  // broken connection.
  h.key = key_for(h.msg.hello);
  if (!make_challenge(h.msg.hello, h.key, h.challenge) ||
      send(h.fd, &h.challenge, sizeof h.challenge,
           MSG_DONTWAIT | MSG_NOSIGNAL) != ssize_t(sizeof h.challenge)) {
    refuse(h.fd, h.peer.c_str(), "cannot send the challenge", false, 0);
    return true;
  }
  h.challenged = true;
  h.got = 0;
  return false;
}

// Hands a connection whose HELLO names a session to that session's process:
// a data socket, a peer's connection or a resuming command socket.  With
// TLS, `tls_route` names the session instead of the HELLO, which has only
// the role: the session's process reads the HELLO inside TLS.
void Server::route(int fd, const pocl_remote_hello &hello, const char *peer,
                   const SessionId *tls_route)
{
  SessionId id;
  memcpy(id.data(), hello.session_id, id.size());
  auto it = tls_route ? by_route_.find(*tls_route) : by_id_.find(id);
  if (it != (tls_route ? by_route_.end() : by_id_.end())) {
    Child &c = children_.at(it->second);
    CtlMsg m{};
    m.type = kCtlAttach;
    m.role = hello.role;
    m.peer_index = hello.peer_index;
    memcpy(m.seen, hello.seen, sizeof m.seen);
    memcpy(m.id, c.id.data(), sizeof m.id);
    snprintf(m.peer, sizeof m.peer, "%s", peer);
    // The session's readers block on their sockets.
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    if (ctl_send(c.ctl, m, fd, true)) {
      LOG_DEBUG(c.sid, "socket from %s handed to session process %d", peer,
                int(it->second));
      close(fd);
      return;
    }
    LOG_WARN(c.sid, "cannot hand a socket to session process %d: %s",
             int(it->second), strerror(errno));
  }
  refuse(fd, peer, "unknown session", tls_route == nullptr, CL_INVALID_VALUE);
}

// A connection that names a session (its data socket, a lane, a resume, a
// peer) proves the key that session's process was forked with: a reload
// does not cut open sessions off.  Others prove the current one.
const std::string &Server::key_for(const pocl_remote_hello &hello) const
{
  SessionId id;
  memcpy(id.data(), hello.session_id, id.size());
  auto it = by_id_.find(id);
  return it == by_id_.end() ? psk : children_.at(it->second).key;
}

void Server::refuse(int fd, const char *peer, const char *why, bool answer,
                    int32_t status)
{
  LOG_WARN("-", "refusing %s: %s", peer, why);
  if (answer) {
    const uint8_t zero[16] = {};
    send_hello_reply(fd, status, zero, 0);
  }
  close(fd);
}

void Server::drop_registration(Child &c)
{
  if (c.registered) {
    by_id_.erase(c.id);
    by_route_.erase(c.route);
  }
  c.registered = false;
}

void Server::child_input(pid_t pid, Child &c)
{
  CtlMsg m;
  int fd = -1;
  int r = ctl_recv(c.ctl, m, &fd);
  if (fd >= 0)
    close(fd); // children send no descriptors
  if (r == 1 && m.type == kCtlRegister && !c.registered) {
    SessionId id;
    memcpy(id.data(), m.id, id.size());
    CtlMsg rep{};
    rep.type = kCtlRegistered;
    memcpy(rep.id, m.id, sizeof rep.id);
    SessionId tls_route{};
    bool taken = by_id_.count(id) > 0;
    if (tls_on() && !taken)
      taken = pocl_remote_route(id.data(), tls_route.data()) != 0 ||
              by_route_.count(tls_route) > 0;
    rep.status = taken ? -1 : 0;
    if (rep.status == 0) {
      by_id_[id] = pid;
      if (tls_on())
        by_route_[tls_route] = pid;
      c.route = tls_route;
      c.registered = true;
      c.id = id;
      snprintf(c.sid, sizeof c.sid, "%02x%02x%02x%02x", id[0], id[1], id[2],
               id[3]);
    }
    // Never blocks: the process waits for this very reply.
    if (!ctl_send(c.ctl, rep, -1, true))
      LOG_WARN(c.sid, "session process %d: cannot answer it: %s", int(pid),
               strerror(errno));
    return;
  }
  if (r == 1)
    LOG_ERR(c.sid, "session process %d sent control message %u, killing it",
            int(pid), m.type);
  else if (r < 0)
    LOG_WARN(c.sid, "session process %d: control socket: %s", int(pid),
             strerror(errno));
  if (r != 0)
    kill(pid, SIGKILL);
  // The process is ending: nothing can be handed to it any more.
  drop_registration(c);
  close(c.ctl);
  c.ctl = -1;
}

void Server::reap()
{
  int st = 0;
  pid_t pid;
  while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
    auto it = children_.find(pid);
    if (it == children_.end())
      continue;
    Child &c = it->second;
    drop_registration(c);
    if (c.ctl >= 0)
      close(c.ctl);
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
      LOG_DEBUG(c.sid, "session process %d exited", int(pid));
    else if (WIFEXITED(st))
      LOG_INFO(c.sid, "session process %d exited with status %d", int(pid),
               WEXITSTATUS(st));
    else if (WIFSIGNALED(st) && stopping_ &&
             (WTERMSIG(st) == SIGTERM || WTERMSIG(st) == SIGKILL))
      LOG_DEBUG(c.sid, "session process %d ended by signal %d", int(pid),
                WTERMSIG(st));
    else if (WIFSIGNALED(st))
      // A crashing kernel ends here: only its own session is gone.
      LOG_WARN(c.sid, "session process %d (client %s) killed by signal %d (%s)",
               int(pid), c.peer.c_str(), WTERMSIG(st), strsignal(WTERMSIG(st)));
    children_.erase(it);
  }
}

void Server::stop(const sigset_t *waitmask)
{
  stopping_ = true;
  for (int &fd : listen_fd_) {
    close(fd);
    fd = -1;
  }
  for (Handshake &h : handshakes_)
    close(h.fd);
  handshakes_.clear();
  reap();
  LOG_INFO("-", "stopping: %zu sessions", children_.size());
  for (auto &c : children_)
    kill(c.first, SIGTERM);
  uint64_t end = now_ms() + kStopGraceMs;
  for (uint64_t now; !children_.empty() && (now = now_ms()) < end; reap())
    pause_ms(end - now, waitmask);
  if (children_.empty())
    return;
  LOG_WARN("-",
           "%zu processes did not end within %llu ms of SIGTERM, killing "
           "them",
           children_.size(), (unsigned long long)kStopGraceMs);
  for (auto &c : children_)
    kill(c.first, SIGKILL);
  end = now_ms() + kKillWaitMs;
  for (uint64_t now; !children_.empty() && (now = now_ms()) < end; reap())
    pause_ms(end - now, waitmask);
  if (!children_.empty())
    LOG_WARN("-", "%zu processes still there after SIGKILL, leaving them",
             children_.size());
}

} // namespace pocld
