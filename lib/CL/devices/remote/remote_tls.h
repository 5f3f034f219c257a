/* remote_tls.h - TLS on the driver's connections to pocld
   (doc/security.md).  A connection is plain when its pocl_remote_tls
   pointer is NULL: the I/O call sites test only that.  */

#ifndef POCL_REMOTE_TLS_CLIENT_H
#define POCL_REMOTE_TLS_CLIENT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

struct pocl_remote_tls;

/* POCL_REMOTE_TLS=1: connect to every pocld with TLS.  */
int pocl_remote_tls_wanted (void);

/* On fd, connected to host:port: STARTTLS in the clear (role; session_id,
   NULL on the command socket, gives the route) and the TLS handshake.
   pocld's certificate must chain to POCL_REMOTE_TLS_CA (a PEM file; the
   system's CAs without it) and be valid for host.  fd becomes
   non-blocking.  NULL, logged, on failure.  */
struct pocl_remote_tls *pocl_remote_tls_start (int fd, const char *host,
                                               unsigned port, uint32_t role,
                                               const uint8_t *session_id,
                                               int timeout_ms);

/* Frees the TLS state (NULL: nothing); the socket stays open.  */
void pocl_remote_tls_destroy (struct pocl_remote_tls *t);

/* Like recv: bytes (> 0), 0 at the end, -1 on an error.  Each wait for the
   socket is bounded by pocl_remote_tls_set_timeout (ms; -1, the default:
   no bound).  */
long pocl_remote_tls_read (struct pocl_remote_tls *t, void *buf, size_t n);
void pocl_remote_tls_set_timeout (struct pocl_remote_tls *t, int ms);

/* The pieces in order, whole: 0, or -1 on an error.  */
int pocl_remote_tls_write (struct pocl_remote_tls *t, const struct iovec *iov,
                           int count);

#endif
