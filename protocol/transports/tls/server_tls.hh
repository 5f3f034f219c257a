// server_tls.hh - TLS on pocld's connections (doc/security.md):
// configuration and the handshakes of the TLS transport (transport.hh).  A
// TLS link's I/O is shared with the client (pocl_remote_link_tls.c).  Part
// of pocld, not of the protocol library.
#pragma once

#include "transport.hh"

#include <string>

namespace pocld {

// --tls-cert, --tls-key and --tls-ca (may be null: the system's CAs verify
// peer servers).  Loads them in the listener: at startup, and on SIGHUP for
// the sessions forked after it.  False, logged, on failure (the contexts in
// use then stay), also when pocld was built without libssl.
bool tls_configure(const char *cert, const char *key, const char *ca);
// True once a certificate is configured: every connection, command, data
// and peer, must then use TLS.
bool tls_on();

// The TLS transport's entries (transport.hh).  accept: the server side of
// the handshake, after STARTTLS (read here unless `greeted`); later sends
// wait for the socket at most as long as its SO_SNDTIMEO.  dial: STARTTLS
// (for a peer socket `session_id` becomes the route) and the client side,
// to a peer server whose certificate must be valid for `host` and signed
// by the --tls-ca.
bool tls_accept(Conn &c, bool greeted, int timeout_ms, std::string &why,
                bool *answer);
bool tls_dial(Conn &c, const std::string &host, uint32_t role,
              const uint8_t *session_id, int timeout_ms, std::string &why);

} // namespace pocld
