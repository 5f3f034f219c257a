/* client_tls.c - the client's TLS transport (remote_transport.h,
   doc/security.md): the client's context, STARTTLS and the handshake.  A
   link's I/O is shared with pocld (pocl_remote_link_tls.c).  pocld's
   certificate must chain to POCL_REMOTE_TLS_CA (a PEM file; the system's
   CAs without it) and be valid for the host connected to.  Part of the
   client driver's channel, not of the protocol library.  */

#include <arpa/inet.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "pocl_debug.h"
#include "pocl_remote_auth.h"
#include "pocl_remote_tls.h"
#include "remote_transport.h"
#include <unistd.h>

#ifdef POCL_REMOTE_HAVE_TLS
#include <openssl/err.h>
#include <openssl/x509.h>
#endif

/* POCL_REMOTE_TLS=1: connect to every pocld with TLS.  */
int
pocl_remote_tls_wanted (void)
{
  const char *v = getenv ("POCL_REMOTE_TLS");
  return v != NULL && strcmp (v, "0") != 0 && v[0] != '\0';
}

#ifdef POCL_REMOTE_HAVE_TLS

static pthread_mutex_t ctx_lock = PTHREAD_MUTEX_INITIALIZER;
static SSL_CTX *client_ctx = NULL;

/* The one client context, made on first use.  */
static SSL_CTX *
tls_context (void)
{
  pthread_mutex_lock (&ctx_lock);
  if (client_ctx == NULL)
    {
      /* No cleanup at exit: the driver still writes (BYE, from a
         destructor) and its readers may still read while the process
         exits; OpenSSL's own exit handler would free what they use.  This
         takes effect when the driver is the process's first OpenSSL user.  */
      OPENSSL_init_ssl (OPENSSL_INIT_NO_ATEXIT, NULL);
      const char *ca = getenv ("POCL_REMOTE_TLS_CA");
      SSL_CTX *ctx = SSL_CTX_new (TLS_client_method ());
      if (ctx != NULL)
        {
          pocl_remote_tls_ctx_defaults (ctx);
          SSL_CTX_set_verify (ctx, SSL_VERIFY_PEER, NULL);
          if ((ca != NULL ? SSL_CTX_load_verify_locations (ctx, ca, NULL)
                          : SSL_CTX_set_default_verify_paths (ctx))
              != 1)
            {
              unsigned long e = ERR_get_error ();
              POCL_MSG_ERR ("remote: cannot load the CA certificates %s: "
                            "%s\n",
                            ca ? ca : "(system)",
                            e ? ERR_reason_error_string (e) : "?");
              SSL_CTX_free (ctx);
              ctx = NULL;
            }
        }
      client_ctx = ctx;
    }
  SSL_CTX *ctx = client_ctx;
  pthread_mutex_unlock (&ctx_lock);
  return ctx;
}

/* On fd, connected to host:port: STARTTLS in the clear (role; session_id,
   NULL on the command link, gives the route) and the TLS handshake.  NULL,
   logged, on failure.  */
static struct pocl_remote_tls *
tls_start (int fd, const char *host, unsigned port, uint32_t role,
           const uint8_t *session_id, int timeout_ms)
{
  SSL_CTX *ctx = tls_context ();
  if (ctx == NULL)
    return NULL;

  struct
  {
    pocl_remote_hdr h;
    pocl_remote_starttls st;
  } msg;
  memset (&msg, 0, sizeof (msg));
  msg.h.type = POCL_RMSG_STARTTLS;
  msg.h.body_size = sizeof (msg.st);
  msg.st.magic = POCL_REMOTE_MAGIC;
  msg.st.version = POCL_REMOTE_PROTOCOL_VERSION;
  msg.st.role = role;
  if (session_id != NULL && pocl_remote_route (session_id, msg.st.route))
    return NULL;
  /* A fresh socket takes STARTTLS at once; a short send is a broken one.  */
  if (send (fd, &msg, sizeof (msg), MSG_NOSIGNAL) != (ssize_t)sizeof (msg))
    {
      POCL_MSG_ERR ("remote: cannot send STARTTLS to %s:%u\n", host, port);
      return NULL;
    }

  struct pocl_remote_tls *t = pocl_remote_tls_new (ctx, fd, 0);
  if (t == NULL)
    return NULL;
  /* An address is checked against the certificate's IP entries, a name
     against its DNS names (and sent as SNI).  */
  unsigned char addr[16];
  int is_ip = inet_pton (AF_INET, host, addr) == 1
              || inet_pton (AF_INET6, host, addr) == 1;
  int named
      = is_ip ? X509_VERIFY_PARAM_set1_ip_asc (SSL_get0_param (t->ssl), host)
              : SSL_set1_host (t->ssl, host) == 1
                    && SSL_set_tlsext_host_name (t->ssl, host) == 1;
  char why[256];
  const char *bad = named != 1 ? "cannot check the server's name"
                               : pocl_remote_tls_handshake (t, timeout_ms, why,
                                                            sizeof (why));
  if (bad != NULL)
    {
      POCL_MSG_ERR ("remote: TLS with pocld at %s:%u failed: %s\n", host, port,
                    bad);
      pocl_remote_tls_free (t);
      return NULL;
    }
  return t;
}

int
pocl_remote_tls_open (pocl_remote_link *l, const char *host, uint16_t port,
                      uint32_t role, const uint8_t *session_id, int timeout_ms)
{
  int fd = pocl_remote_tcp_connect (host, port, timeout_ms);
  if (fd < 0)
    {
      pocl_remote_link_clear (l);
      return -1;
    }
  /* A TCP link meanwhile, so that a shutdown breaks the handshake.  */
  pocl_remote_tcp_link (l, fd);
  struct pocl_remote_tls *t
      = tls_start (fd, host, port, role, session_id, timeout_ms);
  if (t == NULL)
    {
      pocl_remote_link_close (l);
      return -1;
    }
  pocl_remote_tls_link (l, t);
  return 0;
}

#else

int
pocl_remote_tls_open (pocl_remote_link *l, const char *host, uint16_t port,
                      uint32_t role, const uint8_t *session_id, int timeout_ms)
{
  (void)role;
  (void)session_id;
  (void)timeout_ms;
  pocl_remote_link_clear (l);
  POCL_MSG_ERR ("remote: TLS to %s:%u needs OpenSSL's libssl, which this "
                "driver was built without\n",
                host, port);
  return -1;
}

#endif
