// server.cc - listening sockets, handshakes and the session registry.
#include "server.hh"

#include "log.hh"

#include <arpa/inet.h>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <system_error>
#include <thread>
#include <unistd.h>

namespace pocld {

namespace {

// A silent peer may hold a connection thread no longer than this.
constexpr int kHandshakeTimeoutMs = 10000;
// Connections still in their handshake; more are closed at once, so that
// connecting without speaking cannot pile up threads.
constexpr size_t kMaxHandshakes = 128;
// On stop, how long sessions get to end.  One whose kernel never returns
// (CPU kernels cannot be interrupted) would otherwise keep pocld alive.
constexpr auto kStopGrace = std::chrono::seconds(10);
// A peer that accepts no bytes for this long is considered gone; this
// bounds how long a completion callback can block on a stuck client.
constexpr int kSendTimeoutS = 60;

struct PeerName {
  char s[INET6_ADDRSTRLEN + 8] = "?";
  explicit PeerName(int fd)
  {
    sockaddr_storage a{};
    socklen_t len = sizeof a;
    if (getpeername(fd, reinterpret_cast<sockaddr *>(&a), &len) != 0)
      return;
    char host[INET6_ADDRSTRLEN] = "?";
    unsigned port = 0;
    if (a.ss_family == AF_INET) {
      auto *in = reinterpret_cast<sockaddr_in *>(&a);
      inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
      port = ntohs(in->sin_port);
    } else if (a.ss_family == AF_INET6) {
      auto *in = reinterpret_cast<sockaddr_in6 *>(&a);
      inet_ntop(AF_INET6, &in->sin6_addr, host, sizeof host);
      port = ntohs(in->sin6_port);
    }
    snprintf(s, sizeof s, "%s:%u", host, port);
  }
};

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

} // namespace

bool Server::listen(const std::string &address, uint16_t port)
{
  if (port > 65535 - POCL_REMOTE_DATA_PORT_OFFSET) {
    LOG_ERR("-", "port %u leaves no room for the data port", port);
    return false;
  }
  listen_fd_[0] = listen_on(address, port);
  if (listen_fd_[0] < 0)
    return false;
  listen_fd_[1] = listen_on(address, port + POCL_REMOTE_DATA_PORT_OFFSET);
  if (listen_fd_[1] < 0) {
    close(listen_fd_[0]);
    listen_fd_[0] = -1;
    return false;
  }
  return true;
}

bool Server::run(const volatile sig_atomic_t *stop, const sigset_t *waitmask)
{
  pollfd fds[2] = {{listen_fd_[0], POLLIN, 0}, {listen_fd_[1], POLLIN, 0}};
  while (!*stop) {
    if (ppoll(fds, 2, nullptr, waitmask) < 0) {
      if (errno == EINTR)
        continue;
      LOG_ERR("-", "poll: %s", strerror(errno));
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (!(fds[i].revents & POLLIN))
        continue;
      int fd = accept4(fds[i].fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) {
        LOG_WARN("-", "accept: %s", strerror(errno));
        // Out of descriptors: let some connections end instead of spinning.
        if (errno == EMFILE || errno == ENFILE)
          usleep(100000);
        continue;
      }
      spawn(fd, i == 1);
    }
  }
  LOG_INFO("-", "stopping");
  close(listen_fd_[0]);
  close(listen_fd_[1]);
  std::unique_lock<std::mutex> lock(mu_);
  stopping_ = true;
  for (auto &s : sessions_)
    s.second->shutdown_sockets();
  for (int fd : handshaking_)
    shutdown(fd, SHUT_RDWR);
  if (threads_cv_.wait_for(lock, kStopGrace, [&] { return threads_ == 0; }))
    return true;
  LOG_WARN("-",
           "%u connections did not end within %lld s (a kernel still "
           "running?), exiting without them",
           threads_, (long long)kStopGrace.count());
  return false;
}

void Server::spawn(int fd, bool data_port)
{
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
  timeval tv{kSendTimeoutS, 0};
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  std::lock_guard<std::mutex> lock(mu_);
  if (handshaking_.size() >= kMaxHandshakes) {
    LOG_WARN("-", "%zu connections in their handshake, closing a new one",
             handshaking_.size());
    close(fd);
    return;
  }
  try {
    std::thread([this, fd, data_port] {
      serve(fd, data_port);
      std::lock_guard<std::mutex> l(mu_);
      if (--threads_ == 0)
        threads_cv_.notify_all();
    }).detach();
  } catch (const std::system_error &e) {
    LOG_ERR("-", "cannot start a connection thread: %s", e.what());
    close(fd);
    return;
  }
  ++threads_;
  handshaking_.insert(fd);
}

void Server::refuse(int fd, const char *peer, const char *why)
{
  LOG_WARN("-", "refusing %s: %s", peer, why);
  {
    std::lock_guard<std::mutex> lock(mu_);
    handshaking_.erase(fd);
  }
  close(fd);
}

void Server::serve(int fd, bool data_port)
{
  PeerName peer(fd);
  struct {
    pocl_remote_hdr hdr;
    pocl_remote_hello hello;
  } msg;
  static_assert(sizeof msg ==
                    sizeof(pocl_remote_hdr) + sizeof(pocl_remote_hello),
                "packed handshake");
  if (!recv_deadline(fd, &msg, sizeof msg, kHandshakeTimeoutMs))
    return refuse(fd, peer.s, "no handshake");
  const pocl_remote_hello &h = msg.hello;
  if (msg.hdr.type != POCL_RMSG_HELLO ||
      msg.hdr.body_size != sizeof(pocl_remote_hello) ||
      msg.hdr.payload_size != 0 || h.magic != POCL_REMOTE_MAGIC)
    return refuse(fd, peer.s, "not a PoCL-R HELLO");
  const uint8_t zero[16] = {};
  const char *bad = nullptr;
  if (h.version != POCL_REMOTE_PROTOCOL_VERSION)
    bad = "protocol version mismatch";
  else if (h.role !=
           (data_port ? POCL_REMOTE_ROLE_DATA : POCL_REMOTE_ROLE_COMMAND))
    bad = "wrong role for this port";
  else if (!data_port && memcmp(h.session_id, zero, sizeof zero) != 0)
    bad = "command socket with a session id";
  if (bad != nullptr) {
    send_hello_reply(fd, CL_INVALID_VALUE, zero, 0);
    return refuse(fd, peer.s, bad);
  }
  if (data_port)
    serve_data(fd, h, peer.s);
  else
    serve_command(fd, peer.s);
}

void Server::serve_command(int fd, const char *peer)
{
  SessionId id;
  std::shared_ptr<Session> s;
  {
    std::lock_guard<std::mutex> lock(mu_);
    do {
      if (getrandom(id.data(), id.size(), 0) != ssize_t(id.size())) {
        LOG_ERR("-", "getrandom: %s", strerror(errno));
        handshaking_.erase(fd);
        close(fd);
        return;
      }
    } while (sessions_.count(id));
    handshaking_.erase(fd);
    if (stopping_) {
      close(fd);
      return;
    }
    // From here the session owns fd.
    s = std::make_shared<Session>(devs_, id, fd);
    sessions_[id] = s;
  }
  LOG_INFO(s->sid(), "new session from %s", peer);
  if (send_hello_reply(fd, CL_SUCCESS, id.data(),
                       static_cast<uint32_t>(devs_.devices.size())))
    s->run_commands();
  std::lock_guard<std::mutex> lock(mu_);
  sessions_.erase(id);
}

void Server::serve_data(int fd, const pocl_remote_hello &hello,
                        const char *peer)
{
  SessionId id;
  memcpy(id.data(), hello.session_id, id.size());
  std::shared_ptr<Session> s;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = sessions_.find(id);
    if (it != sessions_.end())
      s = it->second;
  }
  if (s == nullptr || !s->attach_data(fd)) {
    const uint8_t zero[16] = {};
    send_hello_reply(fd, CL_INVALID_VALUE, zero, 0);
    return refuse(fd, peer,
                  s ? "session already has a data socket" : "unknown session");
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    handshaking_.erase(fd);
  }
  LOG_INFO(s->sid(), "data socket from %s", peer);
  s->run_data();
}

} // namespace pocld
