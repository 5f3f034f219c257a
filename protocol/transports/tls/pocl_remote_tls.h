/* pocl_remote_tls.h - TLS on PoCL-R connections (doc/security.md): the I/O
   that the client driver (C) and pocld (C++) share.  OpenSSL's libssl, when
   the build found it (POCL_REMOTE_HAVE_TLS).

   An SSL object must not be used by two threads at once, and every
   connection has a reader thread and senders.  So each SSL call takes the
   connection's lock, the socket is non-blocking, and nobody waits for the
   socket while holding the lock: a sender blocked on a full socket must not
   keep the reader from draining the other direction (both ends sending bulk
   data on one data socket would deadlock).  There is no kTLS here, so the
   bytes go through SSL_read and SSL_write.  */

#ifndef POCL_REMOTE_TLS_H
#define POCL_REMOTE_TLS_H

#ifdef POCL_REMOTE_HAVE_TLS

#include <pthread.h>
#include <stddef.h>
#include <sys/uio.h>

#include <openssl/ssl.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pocl_remote_tls
{
  SSL *ssl;
  int fd;
  /* Bound of one wait for the socket, in ms; -1: none.  */
  int recv_timeout_ms;
  int send_timeout_ms;
  pthread_mutex_t lock; /* around every SSL call, never around a wait */
} pocl_remote_tls;

/* Small pieces of one message are gathered into a record of this size (one
   SSL_write, one send instead of one per piece); larger ones go out from
   where they are.  */
#define POCL_REMOTE_TLS_RECORD 16384
/* At most this much per SSL_write, so that the reader gets the lock in
   between the records of a large message.  */
#define POCL_REMOTE_TLS_WRITE_MAX (4 * POCL_REMOTE_TLS_RECORD)

/* What every context sets: TLS 1.3 only (both ends are ours), writes that
   may be partial and continue from a moved buffer, read-ahead (one recv for
   a record's header and body).  */
void pocl_remote_tls_ctx_defaults (SSL_CTX *ctx);

/* TLS state for the connected socket fd, which becomes non-blocking.  NULL
   when out of memory.  */
pocl_remote_tls *pocl_remote_tls_new (SSL_CTX *ctx, int fd, int server);

void pocl_remote_tls_free (pocl_remote_tls *t);

/* Like recv: up to n bytes (> 0), 0 at the end, -1 on an error.  */
long pocl_remote_tls_recv (pocl_remote_tls *t, void *buf, size_t n);

/* Sends the pieces in order, whole: 0, or -1 on an error.  The caller holds
   the connection's send lock, which keeps a message in one piece.  */
int pocl_remote_tls_sendv (pocl_remote_tls *t, const struct iovec *iov,
                           int count);

/* The TLS handshake, bounded by timeout_ms in all.  NULL, or why it failed
   (written into why).  */
const char *pocl_remote_tls_handshake (pocl_remote_tls *t, int timeout_ms,
                                       char *why, size_t why_len);

#ifdef __cplusplus
}
#endif

#endif /* POCL_REMOTE_HAVE_TLS */

#endif
