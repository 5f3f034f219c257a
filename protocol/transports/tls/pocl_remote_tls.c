/* pocl_remote_tls.c - TLS on PoCL-R connections (pocl_remote_tls.h):
   OpenSSL's libssl under the connection's lock, over a non-blocking
   socket.  */

#include "pocl_remote_tls.h"

#ifdef POCL_REMOTE_HAVE_TLS

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

void
pocl_remote_tls_ctx_defaults (SSL_CTX *ctx)
{
  SSL_CTX_set_min_proto_version (ctx, TLS1_3_VERSION);
  SSL_CTX_set_mode (ctx, SSL_MODE_ENABLE_PARTIAL_WRITE
                             | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  SSL_CTX_set_read_ahead (ctx, 1);
}

/* The socket under an SSL object.  OpenSSL's own socket BIO writes without
   MSG_NOSIGNAL: a peer that closed would kill the application with SIGPIPE
   (pocld ignores it, an application using the driver need not).  */
static int
pocl_remote_bio_write (BIO *b, const char *buf, size_t n, size_t *done)
{
  ssize_t r;
  BIO_clear_retry_flags (b);
  do
    r = send ((int)(intptr_t)BIO_get_data (b), buf, n, MSG_NOSIGNAL);
  while (r < 0 && errno == EINTR);
  if (r < 0)
    {
      if (errno == EAGAIN || errno == EWOULDBLOCK)
        BIO_set_retry_write (b);
      return 0;
    }
  *done = (size_t)r;
  return 1;
}

static int
pocl_remote_bio_read (BIO *b, char *buf, size_t n, size_t *done)
{
  ssize_t r;
  BIO_clear_retry_flags (b);
  do
    r = recv ((int)(intptr_t)BIO_get_data (b), buf, n, 0);
  while (r < 0 && errno == EINTR);
  if (r <= 0)
    {
      if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        BIO_set_retry_read (b);
      return 0;
    }
  *done = (size_t)r;
  return 1;
}

static long
pocl_remote_bio_ctrl (BIO *b, int cmd, long num, void *ptr)
{
  (void)b;
  (void)num;
  (void)ptr;
  return cmd == BIO_CTRL_FLUSH ? 1 : 0;
}

static BIO_METHOD *pocl_remote_bio_method_;

static void
pocl_remote_bio_method_init (void)
{
  BIO_METHOD *m = BIO_meth_new (BIO_get_new_index () | BIO_TYPE_SOURCE_SINK,
                                "pocl-remote socket");
  if (m != NULL
      && (!BIO_meth_set_write_ex (m, pocl_remote_bio_write)
          || !BIO_meth_set_read_ex (m, pocl_remote_bio_read)
          || !BIO_meth_set_ctrl (m, pocl_remote_bio_ctrl)))
    {
      BIO_meth_free (m);
      m = NULL;
    }
  pocl_remote_bio_method_ = m;
}

pocl_remote_tls *
pocl_remote_tls_new (SSL_CTX *ctx, int fd, int server)
{
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once (&once, pocl_remote_bio_method_init);
  if (pocl_remote_bio_method_ == NULL)
    return NULL;
  pocl_remote_tls *t = (pocl_remote_tls *)calloc (1, sizeof (*t));
  if (t == NULL)
    return NULL;
  t->ssl = SSL_new (ctx);
  BIO *bio = BIO_new (pocl_remote_bio_method_);
  if (t->ssl == NULL || bio == NULL)
    {
      BIO_free (bio);
      SSL_free (t->ssl);
      free (t);
      return NULL;
    }
  BIO_set_data (bio, (void *)(intptr_t)fd);
  BIO_set_init (bio, 1);
  SSL_set_bio (t->ssl, bio, bio);
  if (server)
    SSL_set_accept_state (t->ssl);
  else
    SSL_set_connect_state (t->ssl);
  t->fd = fd;
  t->recv_timeout_ms = t->send_timeout_ms = -1;
  pthread_mutex_init (&t->lock, NULL);
  fcntl (fd, F_SETFL, fcntl (fd, F_GETFL) | O_NONBLOCK);
  return t;
}

void
pocl_remote_tls_free (pocl_remote_tls *t)
{
  if (t == NULL)
    return;
  SSL_free (t->ssl);
  pthread_mutex_destroy (&t->lock);
  free (t);
}

/* Waits until fd is ready for what SSL asked for (`want`): 0, or -1 on a
   timeout or a poll error.  A closed or failed socket counts as ready: the
   next SSL call reports it.  */
static int
pocl_remote_tls_wait (int fd, int want, int timeout_ms)
{
  struct pollfd p;
  p.fd = fd;
  p.events = want == SSL_ERROR_WANT_WRITE ? POLLOUT : POLLIN;
  p.revents = 0;
  for (;;)
    {
      int r = poll (&p, 1, timeout_ms);
      if (r > 0)
        return 0;
      if (r < 0 && errno == EINTR)
        continue;
      if (r == 0)
        errno = ETIMEDOUT;
      return -1;
    }
}

/* One SSL_read or SSL_write of up to n bytes, waiting for the socket as
   needed: the bytes done (> 0), 0 at the peer's close_notify, -1 on an
   error, a timeout or a close without close_notify.  */
static int
pocl_remote_tls_call (pocl_remote_tls *t, int write, void *buf, int n)
{
  for (;;)
    {
      pthread_mutex_lock (&t->lock);
      ERR_clear_error ();
      int r = write ? SSL_write (t->ssl, buf, n) : SSL_read (t->ssl, buf, n);
      int e = r > 0 ? SSL_ERROR_NONE : SSL_get_error (t->ssl, r);
      pthread_mutex_unlock (&t->lock);
      if (r > 0)
        return r;
      if (e == SSL_ERROR_ZERO_RETURN)
        return 0;
      if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE)
        {
          /* Never a retryable errno: callers retry plain sockets' EINTR,
             and a failed SSL object fails again at once.  An end without
             close_notify leaves errno as it was.  */
          if (e != SSL_ERROR_SYSCALL)
            errno = EPROTO;
          else if (errno == 0 || errno == EINTR || errno == EAGAIN)
            errno = ECONNRESET;
          return -1;
        }
      if (pocl_remote_tls_wait (
              t->fd, e, write ? t->send_timeout_ms : t->recv_timeout_ms))
        return -1;
    }
}

long
pocl_remote_tls_recv (pocl_remote_tls *t, void *buf, size_t n)
{
  return pocl_remote_tls_call (t, 0, buf,
                               n < (size_t)1 << 30 ? (int)n : 1 << 30);
}

static int
pocl_remote_tls_write_all (pocl_remote_tls *t, const char *p, size_t n)
{
  while (n > 0)
    {
      int chunk
          = n < POCL_REMOTE_TLS_WRITE_MAX ? (int)n : POCL_REMOTE_TLS_WRITE_MAX;
      int r = pocl_remote_tls_call (t, 1, (void *)p, chunk);
      if (r <= 0)
        return -1;
      p += r;
      n -= (size_t)r;
    }
  return 0;
}

int
pocl_remote_tls_sendv (pocl_remote_tls *t, const struct iovec *iov, int count)
{
  char buf[POCL_REMOTE_TLS_RECORD];
  size_t used = 0;
  int i;
  for (i = 0; i < count; ++i)
    {
      const char *p = (const char *)iov[i].iov_base;
      size_t n = iov[i].iov_len;
      if (used + n <= sizeof (buf))
        {
          memcpy (buf + used, p, n);
          used += n;
          continue;
        }
      /* Fill the record up, send it, then the rest from where it is.  */
      size_t fill = sizeof (buf) - used;
      memcpy (buf + used, p, fill);
      p += fill;
      n -= fill;
      if (pocl_remote_tls_write_all (t, buf, sizeof (buf)))
        return -1;
      used = 0;
      if (n >= sizeof (buf))
        {
          if (pocl_remote_tls_write_all (t, p, n))
            return -1;
        }
      else
        {
          memcpy (buf, p, n);
          used = n;
        }
    }
  return used > 0 ? pocl_remote_tls_write_all (t, buf, used) : 0;
}

const char *
pocl_remote_tls_handshake (pocl_remote_tls *t, int timeout_ms, char *why,
                           size_t why_len)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  long long deadline = ts.tv_sec * 1000LL + ts.tv_nsec / 1000000 + timeout_ms;
  for (;;)
    {
      ERR_clear_error ();
      int r = SSL_do_handshake (t->ssl);
      if (r == 1)
        return NULL;
      int e = SSL_get_error (t->ssl, r);
      if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
        {
          clock_gettime (CLOCK_MONOTONIC, &ts);
          long long left
              = deadline - (ts.tv_sec * 1000LL + ts.tv_nsec / 1000000);
          if (left > 0 && pocl_remote_tls_wait (t->fd, e, (int)left) == 0)
            continue;
          snprintf (why, why_len, "no TLS handshake within %d ms", timeout_ms);
          return why;
        }
      long verify = SSL_get_verify_result (t->ssl);
      unsigned long code = ERR_peek_last_error ();
      const char *reason = code ? ERR_reason_error_string (code) : NULL;
      if (verify != X509_V_OK)
        snprintf (why, why_len, "%s (%s)", reason ? reason : "TLS error",
                  X509_verify_cert_error_string (verify));
      else if (reason != NULL)
        snprintf (why, why_len, "%s", reason);
      else
        snprintf (why, why_len, "connection closed in the TLS handshake");
      return why;
    }
}

#endif