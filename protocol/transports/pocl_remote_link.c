/* pocl_remote_link.c - what every link shares (pocl_remote_link.h): the
   link that is not connected, recv_full over recv, the spins' clock.
   Part of the protocol library.  */

#include "pocl_remote_link.h"

uint64_t
pocl_remote_link_now_ns (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int
pocl_remote_stream_recv_full (pocl_remote_link *l, void *buf, size_t n)
{
  char *p = (char *)buf;
  while (n > 0)
    {
      long r = l->ops->recv (l, p, n, 0);
      if (r <= 0)
        return -1;
      p += r;
      n -= (size_t)r;
    }
  return 0;
}

/* A cleared link's: a reader that took its copy after the connection was
   taken away (pocld's data reader racing a detach) fails as on a closed
   socket.  */
static int
no_send (pocl_remote_link *l, struct iovec *iov, int count)
{
  (void)l;
  (void)iov;
  (void)count;
  errno = ENOTCONN;
  return -1;
}

static long
no_recv (pocl_remote_link *l, void *buf, size_t n, uint64_t spin_ns)
{
  (void)l;
  (void)buf;
  (void)n;
  (void)spin_ns;
  errno = ENOTCONN;
  return -1;
}

static int
no_recv_full (pocl_remote_link *l, void *buf, size_t n)
{
  return no_recv (l, buf, n, 0) < 0 ? -1 : 0;
}

static void
no_set_timeout (pocl_remote_link *l, int ms)
{
  (void)l;
  (void)ms;
}

static void
no_op (pocl_remote_link *l)
{
  (void)l;
}

const pocl_remote_link_ops pocl_remote_no_link_ops = {
  "none", no_send, no_recv, no_recv_full, no_set_timeout, no_op, no_op,
};
