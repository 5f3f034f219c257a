// server_tls.cc - TLS on pocld's connections: configuration and handshakes
// (server_tls.hh).
#include "server_tls.hh"

#include "control.hh"
#include "log.hh"
#include "pocl_remote_auth.h"
#include "pocl_remote_tls.h"
#include "wire.hh"

#include <arpa/inet.h>
#include <cstring>
#include <sys/socket.h>

#ifdef POCL_REMOTE_HAVE_TLS
#include <openssl/err.h>
#include <openssl/x509.h>
#endif

namespace pocld {

#ifdef POCL_REMOTE_HAVE_TLS

namespace {

// Accepting (our certificate) and connecting to peers (verifying theirs).
SSL_CTX *g_server = nullptr;
SSL_CTX *g_client = nullptr;

std::string ssl_error()
{
  unsigned long e = ERR_get_error();
  const char *r = e ? ERR_reason_error_string(e) : nullptr;
  return r ? r : "unknown error";
}

} // namespace

bool tls_configure(const char *cert, const char *key, const char *ca)
{
  // Built aside and swapped in whole: a reload that fails keeps the old ones.
  ERR_clear_error();
  SSL_CTX *server = SSL_CTX_new(TLS_server_method());
  SSL_CTX *client = SSL_CTX_new(TLS_client_method());
  auto fail = [&](const std::string &what) {
    LOG_ERR("-", "TLS: %s: %s", what.c_str(), ssl_error().c_str());
    SSL_CTX_free(server);
    SSL_CTX_free(client);
    return false;
  };
  if (server == nullptr || client == nullptr)
    return fail("cannot make a context");
  pocl_remote_tls_ctx_defaults(server);
  pocl_remote_tls_ctx_defaults(client);
  // No resumption: the tickets would only be extra messages.
  SSL_CTX_set_num_tickets(server, 0);
  if (SSL_CTX_use_certificate_chain_file(server, cert) != 1)
    return fail(std::string("cannot use the certificate ") + cert);
  if (SSL_CTX_use_PrivateKey_file(server, key, SSL_FILETYPE_PEM) != 1 ||
      SSL_CTX_check_private_key(server) != 1)
    return fail(std::string("cannot use the key ") + key);
  SSL_CTX_set_verify(client, SSL_VERIFY_PEER, nullptr);
  if ((ca != nullptr ? SSL_CTX_load_verify_locations(client, ca, nullptr)
                     : SSL_CTX_set_default_verify_paths(client)) != 1)
    return fail(std::string("cannot load the CA certificates ") +
                (ca ? ca : "(system)"));
  // Only the listener reloads, and it holds no connection that uses them:
  // session processes have their own copies since their fork.
  SSL_CTX_free(g_server);
  SSL_CTX_free(g_client);
  g_server = server;
  g_client = client;
  return true;
}

bool tls_on() { return g_server != nullptr; }

namespace {

// The handshake on t; false (t freed) with `why` said.
bool handshake(pocl_remote_tls *t, int timeout_ms, std::string &why)
{
  char buf[256];
  if (const char *bad =
          pocl_remote_tls_handshake(t, timeout_ms, buf, sizeof buf)) {
    why = std::string("TLS handshake failed: ") + bad;
    pocl_remote_tls_free(t);
    return false;
  }
  return true;
}

} // namespace

namespace {

// The STARTTLS message a connection to a TLS server starts with: for a
// data or peer socket, `session_id` (null on a command socket) becomes the
// route.  False if the route cannot be computed.
bool make_starttls(uint32_t role, const uint8_t *session_id,
                   pocl_remote_hdr &hdr, pocl_remote_starttls &body)
{
  hdr = pocl_remote_hdr{};
  hdr.type = POCL_RMSG_STARTTLS;
  hdr.body_size = sizeof body;
  body = pocl_remote_starttls{};
  body.magic = POCL_REMOTE_MAGIC;
  body.version = POCL_REMOTE_PROTOCOL_VERSION;
  body.role = role;
  return session_id == nullptr ||
         pocl_remote_route(session_id, body.route) == 0;
}

} // namespace

bool tls_accept(Conn &c, bool greeted, int timeout_ms, std::string &why,
                bool *answer)
{
  *answer = false;
  // A command socket: STARTTLS in the clear first (the listener read the
  // others' to route them).
  if (!greeted) {
    HelloMsg msg;
    uint32_t role;
    SessionId route;
    if (pocl_remote_link_recv_deadline(&c, &msg, sizeof msg, timeout_ms)) {
      why = "no handshake";
      return false;
    }
    if (const char *bad = starttls_problem(msg, POCL_REMOTE_ROLE_COMMAND,
                                           answer, role, route)) {
      why = bad;
      return false;
    }
  }
  pocl_remote_tls *t = pocl_remote_tls_new(g_server, c.fd, 1);
  if (t == nullptr) {
    why = "out of memory";
    return false;
  }
  timeval tv{};
  socklen_t len = sizeof tv;
  if (getsockopt(c.fd, SOL_SOCKET, SO_SNDTIMEO, &tv, &len) == 0 &&
      (tv.tv_sec != 0 || tv.tv_usec != 0))
    t->send_timeout_ms = int(tv.tv_sec * 1000 + tv.tv_usec / 1000);
  if (!handshake(t, timeout_ms, why))
    return false;
  pocl_remote_tls_link(&c, t);
  return true;
}

bool tls_dial(Conn &c, const std::string &host, uint32_t role,
              const uint8_t *session_id, int timeout_ms, std::string &why)
{
  pocl_remote_hdr sh;
  pocl_remote_starttls st;
  if (!make_starttls(role, session_id, sh, st) ||
      !send_msg(c, sh.type, 0, &st, sizeof st, nullptr, 0)) {
    why = "cannot send STARTTLS";
    return false;
  }
  pocl_remote_tls *t = pocl_remote_tls_new(g_client, c.fd, 0);
  if (t == nullptr) {
    why = "out of memory";
    return false;
  }
  // An address is checked against the certificate's IP entries, a name
  // against its DNS names (and sent as SNI).
  unsigned char addr[16];
  bool is_ip = inet_pton(AF_INET, host.c_str(), addr) == 1 ||
               inet_pton(AF_INET6, host.c_str(), addr) == 1;
  X509_VERIFY_PARAM *vp = SSL_get0_param(t->ssl);
  if (is_ip ? X509_VERIFY_PARAM_set1_ip_asc(vp, host.c_str()) != 1
            : (SSL_set1_host(t->ssl, host.c_str()) != 1 ||
               SSL_set_tlsext_host_name(t->ssl, host.c_str()) != 1)) {
    why = "cannot check the name " + host;
    pocl_remote_tls_free(t);
    return false;
  }
  if (!handshake(t, timeout_ms, why))
    return false;
  pocl_remote_tls_link(&c, t);
  return true;
}

#else

bool tls_configure(const char *, const char *, const char *)
{
  LOG_ERR("-", "TLS needs OpenSSL's libssl, which this pocld was built "
               "without");
  return false;
}

bool tls_on() { return false; }

bool tls_accept(Conn &, bool, int, std::string &why, bool *answer)
{
  *answer = false;
  why = "no TLS in this build";
  return false;
}

bool tls_dial(Conn &, const std::string &, uint32_t, const uint8_t *, int,
              std::string &why)
{
  why = "no TLS in this build";
  return false;
}

#endif

} // namespace pocld
