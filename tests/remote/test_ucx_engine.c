/* test_ucx_engine.c - the UCX engine of protocol/transports/ucx/pocl_remote_ucx.h between
   two processes of this host, over whatever UCX_TLS lets UCX use (the
   tests run it with tcp, and with shared memory): the processes exchange
   their worker addresses over a socketpair, as two PoCL-R ends do over
   their link; the parent sends payloads of 4 bytes to 64 MiB (the largest
   from registered memory), the child receives each under its tag and
   checks every byte, then 64 MiB once more in 1 MiB pieces all in flight,
   told piece by piece in order; a receive of a larger message than its buffer,
   one whose message never comes, and pieces sent that the other end never
   receives (a send cannot be cancelled: its endpoint is closed under it) fail
   within their time limits instead of hanging.  Prints "ucx_engine: PASS" or
   the failure.  */

#include "pocl_remote_ucx.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SECRET 0x5eedf00dcafe1234ull

static void
logged (const char *m)
{
  fprintf (stderr, "ucx_engine: %s\n", m);
}

static int
fail (const char *what)
{
  printf ("ucx_engine: FAIL: %s\n", what);
  return 1;
}

static int
io_all (int fd, void *p, size_t n, int out)
{
  char *c = p;
  while (n > 0)
    {
      ssize_t r = out ? write (fd, c, n) : read (fd, c, n);
      if (r <= 0)
        return -1;
      c += r;
      n -= (size_t)r;
    }
  return 0;
}

/* The receiver's prefix: grows piece by piece, in order.  */
static uint64_t grown_calls, grown_to;
static void
grown_cb (void *arg, uint64_t from, uint64_t to)
{
  (void)arg;
  if (from == grown_to && to > from)
    ++grown_calls;
  grown_to = to;
}

static unsigned char
pattern (size_t i, unsigned k)
{
  return (unsigned char)(i * 131 + k * 7 + (i >> 13));
}

int
main (void)
{
  static const size_t sizes[]
      = { 4, 4096, 65536 + 3, 1u << 20, 16u << 20, 64u << 20 };
  const unsigned count = sizeof (sizes) / sizeof (sizes[0]);
  int sv[2];
  if (socketpair (AF_UNIX, SOCK_STREAM, 0, sv) != 0)
    return fail ("socketpair");
  fflush (stdout);
  pid_t pid = fork ();
  if (pid < 0)
    return fail ("fork");
  const int parent = pid > 0, fd = parent ? sv[0] : sv[1];
  close (parent ? sv[1] : sv[0]);

  pocl_remote_ucx *u = pocl_remote_ucx_engine (logged);
  void *addr = NULL;
  size_t len = 0, their_len = 0;
  if (u == NULL || pocl_remote_ucx_address (u, &addr, &len) != 0)
    return fail ("no UCX engine");
  char *their = NULL;
  if (io_all (fd, &len, sizeof (len), 1) || io_all (fd, addr, len, 1)
      || io_all (fd, &their_len, sizeof (their_len), 0) || their_len > 65536
      || (their = malloc (their_len)) == NULL
      || io_all (fd, their, their_len, 0))
    return fail ("exchanging the worker addresses");
  pocl_remote_ucx_free_address (u, addr);
  pocl_remote_ucx_ep *ep = pocl_remote_ucx_connect (u, their, their_len, NULL);
  if (ep == NULL)
    return fail ("no endpoint");

  unsigned char *buf = malloc (sizes[count - 1] + 16);
  if (buf == NULL)
    return fail ("memory");
  if (parent && pocl_remote_ucx_register (u, buf, sizes[count - 1]) != 0)
    return fail ("registering the largest buffer");
  for (unsigned k = 0; k < count; ++k)
    {
      size_t n = sizes[k], got = 0, i;
      uint64_t tag = pocl_remote_ucx_tag (SECRET, 77, k * (uint64_t)n);
      char ack = 0;
      if (parent)
        {
          for (i = 0; i < n; ++i)
            buf[i] = pattern (i, k);
          if (pocl_remote_ucx_send (ep, tag, buf, n, 20000) != 0
              || io_all (fd, &ack, 1, 0) || ack != 'y')
            return fail ("a payload did not arrive whole");
          continue;
        }
      memset (buf, 0, n);
      int r = pocl_remote_ucx_recv (u, tag, buf, n, &got, 20000);
      for (i = 0; r == 0 && got == n && i < n; ++i)
        if (buf[i] != pattern (i, k))
          break;
      ack = r == 0 && got == n && i == n ? 'y' : 'n';
      if (io_all (fd, &ack, 1, 1) || ack != 'y')
        {
          fprintf (
              stderr,
              "ucx_engine: %zu bytes: status %d, %zu in, first bad byte %zu\n",
              n, r, got, i);
          return fail ("a payload was not received intact");
        }
    }
  /* The largest again, as 1 MiB pieces all in flight; the receiver hears
     of the prefix piece by piece.  */
  {
    size_t n = sizes[count - 1], i;
    uint64_t arrived = 0, seq = 1000;
    char ack = 0;
    if (parent)
      {
        for (i = 0; i < n; ++i)
          buf[i] = pattern (i, 99);
        if (pocl_remote_ucx_send_pieces (ep, SECRET, seq, buf, n, 1u << 20,
                                         20000, NULL)
                != 0
            || io_all (fd, &ack, 1, 0) || ack != 'y')
          return fail ("a payload in pieces did not arrive whole");
      }
    else
      {
        memset (buf, 0, n);
        grown_calls = 0;
        int r = pocl_remote_ucx_recv_pieces (u, SECRET, seq, buf, n, 1u << 20,
                                             20000, NULL, grown_cb, NULL,
                                             &arrived);
        for (i = 0; r == 0 && i < n; ++i)
          if (buf[i] != pattern (i, 99))
            break;
        ack = r == 0 && arrived == n && i == n
                      && grown_calls == pocl_remote_ucx_pieces (n, 1u << 20)
                  ? 'y'
                  : 'n';
        if (io_all (fd, &ack, 1, 1) || ack != 'y')
          return fail ("a payload in pieces was not received intact, in "
                       "order");
      }
  }
  if (parent)
    {
      /* 64 bytes into the child's 16-byte receive, then nothing.  */
      if (pocl_remote_ucx_send (ep, pocl_remote_ucx_tag (SECRET, 78, 0), buf,
                                64, 20000)
          != 0)
        return fail ("the oversized send");
      /* 16 MiB in pieces that the child, alive, never receives.  */
      struct timespec t0, t1;
      clock_gettime (CLOCK_MONOTONIC, &t0);
      if (pocl_remote_ucx_send_pieces (ep, SECRET, 2000, buf, 16u << 20,
                                       4u << 20, 500, NULL)
          == 0)
        return fail ("pieces that nobody received were sent");
      clock_gettime (CLOCK_MONOTONIC, &t1);
      double s = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9;
      char done = 'd';
      if (io_all (fd, &done, 1, 1))
        return fail ("telling the child");
      if (s > 5)
        return fail ("the unreceived send was not bounded by its limit");
      if (pocl_remote_ucx_send (ep, pocl_remote_ucx_tag (SECRET, 80, 0), buf,
                                4, 500)
          == 0)
        return fail ("a send on the endpoint closed under a timed-out send");
      int status = 1;
      if (waitpid (pid, &status, 0) != pid || !WIFEXITED (status)
          || WEXITSTATUS (status) != 0)
        return fail ("the receiving process failed");
      pocl_remote_ucx_disconnect (ep);
      printf ("ucx_engine: PASS: %u payloads of 4 B to 64 MiB bit-exact, "
              "64 MiB in 1 MiB pieces in order, oversized, missing and "
              "unreceived messages refused in time\n",
              count);
      return 0;
    }
  size_t got = 0;
  if (pocl_remote_ucx_recv (u, pocl_remote_ucx_tag (SECRET, 78, 0), buf, 16,
                            &got, 20000)
      == 0)
    return fail ("a message larger than its receive was taken");
  struct timespec t0, t1;
  clock_gettime (CLOCK_MONOTONIC, &t0);
  if (pocl_remote_ucx_recv (u, pocl_remote_ucx_tag (SECRET, 79, 0), buf, 16,
                            &got, 500)
      == 0)
    return fail ("a message that was never sent was received");
  clock_gettime (CLOCK_MONOTONIC, &t1);
  double s = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9;
  if (s < 0.4 || s > 5)
    return fail ("the missing message's wait was not bounded by its limit");
  char done = 0;
  if (io_all (fd, &done, 1, 0) || done != 'd')
    return fail ("the parent's unreceived send");
  pocl_remote_ucx_disconnect (ep);
  return 0;
}
