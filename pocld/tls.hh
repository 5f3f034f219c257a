// tls.hh - TLS on pocld's connections (doc/security.md): configuration,
// handshakes, and the connection type that the socket I/O of wire.hh takes.
// The I/O itself is shared with the client (protocol/pocl_remote_tls.h).
#pragma once

#include "pocl_remote_protocol.h"

#include <cstddef>
#include <string>
#include <sys/types.h>
#include <sys/uio.h>

struct pocl_remote_tls;

namespace pocld {

// One connection: its socket and, on a TLS connection, the TLS state (null
// on a plain one: the I/O functions test only that pointer).
struct Conn {
  int fd = -1;
  pocl_remote_tls *tls = nullptr;
  Conn() = default;
  Conn(int f, pocl_remote_tls *t = nullptr) : fd(f), tls(t) {}
};

// --tls-cert, --tls-key and --tls-ca (may be null: the system's CAs verify
// peer servers).  Loads them in the listener: at startup, and on SIGHUP for
// the sessions forked after it.  False, logged, on failure (the contexts in
// use then stay), also when pocld was built without libssl.
bool tls_configure(const char *cert, const char *key, const char *ca);
// True once a certificate is configured: every connection, command, data
// and peer, must then use TLS.
bool tls_on();

// The server side of a handshake on the connected socket fd (made
// non-blocking), bounded by timeout_ms: the state, or null with `why`.
// Later sends wait for the socket at most as long as its SO_SNDTIMEO.
pocl_remote_tls *tls_accept(int fd, int timeout_ms, std::string &why);
// The client side, to a peer server: its certificate must be valid for
// `host` and signed by the --tls-ca.
pocl_remote_tls *tls_connect(int fd, const std::string &host, int timeout_ms,
                             std::string &why);
void tls_free(pocl_remote_tls *t);

// The STARTTLS message a connection to a TLS server starts with: for a
// data or peer socket, `session_id` (null on a command socket) becomes the
// route.  False if the route cannot be computed.
bool make_starttls(uint32_t role, const uint8_t *session_id,
                   pocl_remote_hdr &hdr, pocl_remote_starttls &body);

// The I/O of wire.cc on a TLS connection.  Like recv: > 0, 0 at the end,
// -1 on an error; recv_timeout_ms bounds each wait for the socket (-1:
// none).  tls_send: the pieces in order, whole.
ssize_t tls_recv(pocl_remote_tls *t, void *buf, size_t n, int timeout_ms);
bool tls_send(pocl_remote_tls *t, const iovec *iov, int count);

} // namespace pocld
