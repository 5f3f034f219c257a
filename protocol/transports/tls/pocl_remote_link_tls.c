/* pocl_remote_link_tls.c - the TLS link (pocl_remote_link.h): a socket and
   its pocl_remote_tls, whose I/O (pocl_remote_tls.h) both sides share.
   Part of the protocol library where the build found libssl; the
   handshakes are each side's (client_tls.c, server_tls.cc).  */

#ifdef POCL_REMOTE_HAVE_TLS

#include "pocl_remote_link.h"
#include "pocl_remote_tls.h"

#include <sys/socket.h>
#include <unistd.h>

static pocl_remote_tls *
tls_of (pocl_remote_link *l)
{
  return (pocl_remote_tls *)l->state;
}

static int
tls_send (pocl_remote_link *l, struct iovec *iov, int count)
{
  return pocl_remote_tls_sendv (tls_of (l), iov, count);
}

/* No spin: TLS reads whole records into buffers of its own, and polling
   the socket would not tell whether one is complete.  */
static long
tls_recv (pocl_remote_link *l, void *buf, size_t n, uint64_t spin_ns)
{
  (void)spin_ns;
  return pocl_remote_tls_recv (tls_of (l), buf, n);
}

static void
tls_set_timeout (pocl_remote_link *l, int ms)
{
  tls_of (l)->recv_timeout_ms = ms > 0 ? ms : -1;
}

static void
tls_shutdown (pocl_remote_link *l)
{
  int fd = __atomic_load_n (&l->fd, __ATOMIC_ACQUIRE);
  if (fd >= 0)
    shutdown (fd, SHUT_RDWR);
}

static void
tls_close (pocl_remote_link *l)
{
  int fd = __atomic_exchange_n (&l->fd, -1, __ATOMIC_ACQ_REL);
  pocl_remote_tls_free (tls_of (l));
  l->state = NULL;
  if (fd >= 0)
    close (fd);
}

const pocl_remote_link_ops pocl_remote_tls_link_ops = {
  "tls",           tls_send,     tls_recv,  pocl_remote_stream_recv_full,
  tls_set_timeout, tls_shutdown, tls_close,
};

void
pocl_remote_tls_link (pocl_remote_link *l, struct pocl_remote_tls *t)
{
  pocl_remote_link n;
  n.ops = &pocl_remote_tls_link_ops;
  n.fd = t->fd;
  n.state = t;
  pocl_remote_link_set (l, &n);
}

#endif
