// control.hh - what the listener and the session processes share: the HELLO
// checks, peer names, and the control channel between them (one AF_UNIX
// SOCK_SEQPACKET socketpair per session process, sockets passed with
// SCM_RIGHTS).
#pragma once

#include "wire.hh"

#include <cstdint>
#include <string>

namespace pocld {

// A silent peer may hold a connection in its handshake no longer than this.
constexpr int kHandshakeTimeoutMs = 10000;

// The first 64 bytes on every connection.
struct HelloMsg {
  pocl_remote_hdr hdr;
  pocl_remote_hello hello;
};
static_assert(sizeof(HelloMsg) ==
                  sizeof(pocl_remote_hdr) + sizeof(pocl_remote_hello),
              "packed handshake");

// The pre-shared key (--psk-file or POCLD_PSK), empty for none.  Set in the
// listener (at startup, again on SIGHUP) before the sessions it forks use
// it; the peer connections use it too.
extern std::string psk;

struct ChallengeMsg {
  pocl_remote_hdr hdr;
  pocl_remote_auth_challenge c;
};
struct AuthMsg {
  pocl_remote_hdr hdr;
  pocl_remote_auth a;
};

// The AUTH_CHALLENGE answering `hello`: a fresh nonce and, with a key, this
// server's proof with `key` (empty: none).  False when no random bytes
// could be had.
bool make_challenge(const pocl_remote_hello &hello, const std::string &key,
                    ChallengeMsg &out);
// Why the client's AUTH must be refused (a wrong proof of `key`, or none
// while there is a key), or nullptr.
const char *auth_problem(const pocl_remote_hello &hello, const std::string &key,
                         const ChallengeMsg &challenge, const AuthMsg &auth);
// The whole handshake after an acceptable HELLO on a blocking socket:
// AUTH_CHALLENGE out, AUTH in (bounded by kHandshakeTimeoutMs).  Why it
// failed, or nullptr; *answer as for hello_problem.
const char *authenticate(Conn c, const pocl_remote_hello &hello, bool *answer);
// Our side of a handshake as the client (peer connections): checks the
// server's challenge (with a key, the server must prove it) and fills AUTH.
const char *answer_challenge(const pocl_remote_hello &hello,
                             const ChallengeMsg &challenge, AuthMsg &out);

// Why a HELLO arriving with this role (the port's) must be refused, or
// nullptr.  *answer: the peer speaks PoCL-R, so it gets a HELLO_REPLY with
// CL_INVALID_VALUE before the close; otherwise it is closed without one.
// A command HELLO must carry the zero session id, a data HELLO a non-zero one;
// a command HELLO with a session id (a resume) comes to the data port.
const char *hello_problem(const HelloMsg &m, uint32_t role, bool *answer);
// With TLS (tls_on): why the first bytes of a connection to this `port`
// (a role), which must be STARTTLS, are refused, or nullptr with its role
// (the port's, or a resume's command role on the data port) and route.
// *answer: a plain client's HELLO, answered in the clear.
const char *starttls_problem(const HelloMsg &m, uint32_t port, bool *answer,
                             uint32_t &role, SessionId &route);

// "address:port" of a socket's peer, for log lines.
struct PeerName {
  char s[64] = "?";
  explicit PeerName(int fd);
};

// Control messages.  Only the listener and its own children speak this, on
// sockets nobody else can reach; still, each side checks what it gets.
enum CtlType : uint32_t {
  // session process -> listener: `id` is the new session's id.
  kCtlRegister = 1,
  // listener -> session process: status 0, or -1 if the id is taken (the
  // process draws another one).
  kCtlRegistered = 2,
  // listener -> session process, with a socket attached: a connection whose
  // HELLO (role `role`, this session's id) the listener has read and checked:
  // the data socket, a peer's connection, or a resuming command socket.
  kCtlAttach = 3,
};

struct CtlMsg {
  uint32_t type;
  uint32_t role;  // kCtlAttach
  int32_t status; // kCtlRegistered
  uint32_t peer_index; // kCtlAttach of a peer connection
  uint8_t id[16];
  char peer[64]; // kCtlAttach: the socket's peer (NUL-terminated)
  uint64_t seen[2]; // kCtlAttach of a resume: the HELLO's counts
};

// Sends one message, with `fd` attached when fd >= 0.  MSG_DONTWAIT when
// `dontwait` (the listener never blocks on a child).  False on failure.
bool ctl_send(int ctl, const CtlMsg &m, int fd, bool dontwait);
// Receives one message; *fd gets an attached descriptor (close-on-exec) or
// -1.  1: a message; 0: the peer closed; -1: error or a malformed message
// (any descriptor that came with it is closed).
int ctl_recv(int ctl, CtlMsg &m, int *fd);

} // namespace pocld
