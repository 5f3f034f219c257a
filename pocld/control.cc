// control.cc - HELLO checks, peer names, and the listener <-> session
// process control channel.
#include "control.hh"

#include "pocl_remote_auth.h"

#include <arpa/inet.h>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <netinet/in.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

namespace pocld {

std::string psk;

bool make_challenge(const pocl_remote_hello &hello, const std::string &key,
                    ChallengeMsg &out)
{
  out = ChallengeMsg{};
  out.hdr.type = POCL_RMSG_AUTH_CHALLENGE;
  out.hdr.body_size = sizeof out.c;
  if (getrandom(out.c.nonce, sizeof out.c.nonce, 0) != sizeof out.c.nonce)
    return false;
  if (key.empty())
    return true;
  out.c.flags = POCL_REMOTE_AUTH_REQUIRED;
  return pocl_remote_auth_proof(key.data(), key.size(), 1, &hello,
                                out.c.nonce, out.c.proof) == 0;
}

const char *auth_problem(const pocl_remote_hello &hello, const std::string &key,
                         const ChallengeMsg &challenge, const AuthMsg &auth)
{
  if (auth.hdr.type != POCL_RMSG_AUTH ||
      auth.hdr.body_size != sizeof(pocl_remote_auth) ||
      auth.hdr.payload_size != 0)
    return "no AUTH after the challenge";
  if (key.empty())
    return nullptr;
  uint8_t want[POCL_REMOTE_MAC_SIZE];
  if (pocl_remote_auth_proof(key.data(), key.size(), 0, &hello,
                             challenge.c.nonce, want) != 0)
    return "cannot compute the key proof";
  if (pocl_remote_auth_equal(want, auth.a.proof))
    return nullptr;
  const uint8_t zero[POCL_REMOTE_MAC_SIZE] = {};
  return memcmp(auth.a.proof, zero, sizeof zero) == 0
             ? "client has no pre-shared key"
             : "wrong pre-shared key";
}

const char *authenticate(Conn conn, const pocl_remote_hello &hello,
                         bool *answer)
{
  *answer = false;
  ChallengeMsg c;
  if (!make_challenge(hello, psk, c))
    return "cannot make a challenge";
  AuthMsg a;
  if (!send_msg(conn, c.hdr.type, 0, &c.c, sizeof c.c, nullptr, 0) ||
      !recv_deadline(conn, &a, sizeof a, kHandshakeTimeoutMs))
    return "no AUTH after the challenge";
  const char *bad = auth_problem(hello, psk, c, a);
  *answer = bad != nullptr;
  return bad;
}

const char *answer_challenge(const pocl_remote_hello &hello,
                             const ChallengeMsg &challenge, AuthMsg &out)
{
  out = AuthMsg{};
  out.hdr.type = POCL_RMSG_AUTH;
  out.hdr.body_size = sizeof out.a;
  if (challenge.hdr.type != POCL_RMSG_AUTH_CHALLENGE ||
      challenge.hdr.body_size != sizeof challenge.c ||
      challenge.hdr.payload_size != 0)
    return "no AUTH_CHALLENGE";
  if (psk.empty())
    return challenge.c.flags & POCL_REMOTE_AUTH_REQUIRED
               ? "the peer requires a pre-shared key, we have none"
               : nullptr;
  uint8_t want[POCL_REMOTE_MAC_SIZE];
  if (!(challenge.c.flags & POCL_REMOTE_AUTH_REQUIRED) ||
      pocl_remote_auth_proof(psk.data(), psk.size(), 1, &hello,
                             challenge.c.nonce, want) != 0 ||
      !pocl_remote_auth_equal(want, challenge.c.proof))
    return "the peer does not prove our pre-shared key";
  if (pocl_remote_auth_proof(psk.data(), psk.size(), 0, &hello,
                             challenge.c.nonce, out.a.proof) != 0)
    return "cannot compute the key proof";
  return nullptr;
}

const char *hello_problem(const HelloMsg &m, uint32_t role, bool *answer)
{
  *answer = false;
  const pocl_remote_hello &h = m.hello;
  if (m.hdr.type == POCL_RMSG_STARTTLS)
    return "client asks for TLS, which this server does not have "
           "(--tls-cert)";
  if (m.hdr.type != POCL_RMSG_HELLO ||
      m.hdr.body_size != sizeof(pocl_remote_hello) || m.hdr.payload_size != 0 ||
      h.magic != POCL_REMOTE_MAGIC)
    return "not a PoCL-R HELLO";
  *answer = true;
  const uint8_t zero[16] = {};
  bool has_id = memcmp(h.session_id, zero, sizeof zero) != 0;
  if (h.version != POCL_REMOTE_PROTOCOL_VERSION)
    return "protocol version mismatch";
  // The data port also takes resumes and lanes.
  const bool resume = role == POCL_REMOTE_ROLE_DATA &&
                      h.role == POCL_REMOTE_ROLE_COMMAND && has_id;
  const bool lane =
      role == POCL_REMOTE_ROLE_DATA && h.role == POCL_REMOTE_ROLE_LANE;
  if (h.role != role && !resume && !lane)
    return "wrong role for this port";
  if (role == POCL_REMOTE_ROLE_COMMAND && has_id)
    return "command socket with a session id (a resume goes to the data port)";
  if (role != POCL_REMOTE_ROLE_COMMAND && !has_id)
    return "unknown session";
  if (role == POCL_REMOTE_ROLE_PEER
          ? POCL_REMOTE_PEER_INDEX_OF(h.peer_index) >= POCL_REMOTE_MAX_PEERS ||
                POCL_REMOTE_PEER_LANE_OF(h.peer_index) > POCL_REMOTE_MAX_LANES
      : lane ? h.peer_index < 1 || h.peer_index > POCL_REMOTE_MAX_LANES
             : h.peer_index != 0)
    return lane ? "bad lane number" : "bad peer index or lane number";
  *answer = false;
  return nullptr;
}

const char *starttls_problem(const HelloMsg &m, uint32_t port, bool *answer,
                             uint32_t &role, SessionId &route)
{
  *answer = false;
  if (m.hdr.type == POCL_RMSG_HELLO && m.hello.magic == POCL_REMOTE_MAGIC) {
    *answer = true;
    return "client does not use TLS, which this server requires";
  }
  pocl_remote_starttls st;
  static_assert(sizeof st == sizeof m.hello, "STARTTLS is a HELLO's size");
  memcpy(&st, &m.hello, sizeof st);
  if (m.hdr.type != POCL_RMSG_STARTTLS || m.hdr.body_size != sizeof st ||
      m.hdr.payload_size != 0 || st.magic != POCL_REMOTE_MAGIC)
    return "not a PoCL-R STARTTLS";
  if (st.version != POCL_REMOTE_PROTOCOL_VERSION)
    return "protocol version mismatch";
  memcpy(route.data(), st.route, route.size());
  const SessionId zero{};
  const bool resume = port == POCL_REMOTE_ROLE_DATA &&
                      st.role == POCL_REMOTE_ROLE_COMMAND && route != zero;
  const bool lane =
      port == POCL_REMOTE_ROLE_DATA && st.role == POCL_REMOTE_ROLE_LANE;
  if (st.role != port && !resume && !lane)
    return "wrong role for this port";
  if (port == POCL_REMOTE_ROLE_COMMAND && route != zero)
    return "command socket with a route (a resume goes to the data port)";
  if (port != POCL_REMOTE_ROLE_COMMAND && route == zero)
    return "unknown session";
  role = st.role;
  return nullptr;
}

PeerName::PeerName(int fd)
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

bool ctl_send(int ctl, const CtlMsg &m, int fd, bool dontwait)
{
  iovec iov{const_cast<CtlMsg *>(&m), sizeof m};
  msghdr mh{};
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  alignas(cmsghdr) char cbuf[CMSG_SPACE(sizeof(int))];
  if (fd >= 0) {
    memset(cbuf, 0, sizeof cbuf);
    mh.msg_control = cbuf;
    mh.msg_controllen = sizeof cbuf;
    cmsghdr *c = CMSG_FIRSTHDR(&mh);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd, sizeof fd);
  }
  int flags = MSG_NOSIGNAL | (dontwait ? MSG_DONTWAIT : 0);
  ssize_t n;
  do
    n = sendmsg(ctl, &mh, flags);
  while (n < 0 && errno == EINTR);
  // SOCK_SEQPACKET: all of the message or nothing.
  return n == ssize_t(sizeof m);
}

int ctl_recv(int ctl, CtlMsg &m, int *fd)
{
  *fd = -1;
  iovec iov{&m, sizeof m};
  msghdr mh{};
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  alignas(cmsghdr) char cbuf[CMSG_SPACE(sizeof(int))];
  mh.msg_control = cbuf;
  mh.msg_controllen = sizeof cbuf;
  ssize_t n;
  do
    n = recvmsg(ctl, &mh, MSG_CMSG_CLOEXEC);
  while (n < 0 && errno == EINTR);
  if (n == 0)
    return 0;
  if (n < 0)
    return -1;
  for (cmsghdr *c = CMSG_FIRSTHDR(&mh); c != nullptr; c = CMSG_NXTHDR(&mh, c))
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
      for (size_t off = 0; off + sizeof(int) <= c->cmsg_len - CMSG_LEN(0);
           off += sizeof(int)) {
        int got;
        memcpy(&got, CMSG_DATA(c) + off, sizeof got);
        if (*fd < 0)
          *fd = got;
        else
          close(got); // one descriptor per message
      }
  if (n != ssize_t(sizeof m) || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
    if (*fd >= 0)
      close(*fd);
    *fd = -1;
    errno = EPROTO;
    return -1;
  }
  m.peer[sizeof m.peer - 1] = '\0';
  return 1;
}

} // namespace pocld
