/* pocl_remote_link_tcp.c - the TCP link (pocl_remote_link.h): one blocking
   socket.  Part of the protocol library.  */

#include "pocl_remote_link.h"

#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

static int
fd_of (pocl_remote_link *l)
{
  return __atomic_load_n (&l->fd, __ATOMIC_ACQUIRE);
}

/* One sendmsg for the whole message where the socket takes it: a command
   and its payload leave in one system call.  */
static int
tcp_send (pocl_remote_link *l, struct iovec *iov, int count)
{
  int fd = fd_of (l);
  struct msghdr mh;
  memset (&mh, 0, sizeof (mh));
  mh.msg_iov = iov;
  mh.msg_iovlen = (size_t)count;
  while (mh.msg_iovlen > 0)
    {
      ssize_t w = sendmsg (fd, &mh, MSG_NOSIGNAL);
      if (w < 0)
        {
          if (errno == EINTR)
            continue;
          return -1;
        }
      /* A partial write: drop what went out, continue with the rest.  */
      size_t done = (size_t)w;
      while (mh.msg_iovlen > 0 && done >= mh.msg_iov->iov_len)
        {
          done -= mh.msg_iov->iov_len;
          ++mh.msg_iov;
          --mh.msg_iovlen;
        }
      if (mh.msg_iovlen > 0)
        {
          mh.msg_iov->iov_base = (char *)mh.msg_iov->iov_base + done;
          mh.msg_iov->iov_len -= done;
        }
    }
  return 0;
}

static inline void
spin_pause (void)
{
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause ();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

static long
tcp_recv (pocl_remote_link *l, void *buf, size_t n, uint64_t spin_ns)
{
  int fd = fd_of (l);
  ssize_t r;
  if (spin_ns > 0)
    {
      uint64_t end = pocl_remote_link_now_ns () + spin_ns;
      do
        {
          r = recv (fd, buf, n, MSG_DONTWAIT);
          if (r >= 0
              || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
            return r;
          spin_pause ();
        }
      while (pocl_remote_link_now_ns () < end);
    }
  do
    r = recv (fd, buf, n, 0);
  while (r < 0 && errno == EINTR);
  return r;
}

/* MSG_WAITALL: a large payload in as few system calls as the socket
   allows.  */
static int
tcp_recv_full (pocl_remote_link *l, void *buf, size_t n)
{
  int fd = fd_of (l);
  char *p = (char *)buf;
  while (n > 0)
    {
      ssize_t r = recv (fd, p, n, MSG_WAITALL);
      if (r > 0)
        {
          p += r;
          n -= (size_t)r;
        }
      else if (r == 0 || errno != EINTR)
        return -1;
    }
  return 0;
}

static void
tcp_set_timeout (pocl_remote_link *l, int ms)
{
  struct timeval tv = { 0, 0 };
  if (ms > 0)
    {
      tv.tv_sec = ms / 1000;
      tv.tv_usec = (ms % 1000) * 1000;
    }
  setsockopt (fd_of (l), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof (tv));
}

static void
tcp_shutdown (pocl_remote_link *l)
{
  int fd = fd_of (l);
  if (fd >= 0)
    shutdown (fd, SHUT_RDWR);
}

static void
tcp_close (pocl_remote_link *l)
{
  int fd = __atomic_exchange_n (&l->fd, -1, __ATOMIC_ACQ_REL);
  if (fd >= 0)
    close (fd);
}

const pocl_remote_link_ops pocl_remote_tcp_link_ops = {
  "tcp",           tcp_send,     tcp_recv,  tcp_recv_full,
  tcp_set_timeout, tcp_shutdown, tcp_close,
};
