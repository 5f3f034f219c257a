/* ucx_probe.c - what the UCX engine (protocol/pocl_remote_ucx.h) moves
   between two processes of this host, against loopback TCP in the same
   run: for each size, the median over ROUNDS of a payload from a buffer in
   one process to a buffer in the other (the receiver's checks excluded),
   over UCX (whatever UCX_TLS selects: tcp, sm for shared memory, ...) and
   over one TCP socket on loopback (the same buffers, send and recv).

     ucx_probe [ROUNDS]     (default 9)

   Built from the repository's root with
     cc -O2 -Iprotocol -o ucx_probe tools/bench/ucx_probe.c \
       protocol/pocl_remote_ucx.c $(pkg-config --cflags ucx) -lpthread
   (the engine loads libucp.so.0 itself).  UCX_TLS=tcp and UCX_TLS=sm,self
   are the two cases worth comparing.  */

#define CL_TARGET_OPENCL_VERSION 120
#include "pocl_remote_ucx.h"
#include "probe.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

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

static void
quiet (const char *m)
{
  fprintf (stderr, "ucx_probe: %s\n", m);
}

/* A connected loopback TCP pair.  */
static int
tcp_pair (int *a, int *b)
{
  int l = socket (AF_INET, SOCK_STREAM, 0), one = 1;
  struct sockaddr_in sa;
  socklen_t sl = sizeof (sa);
  memset (&sa, 0, sizeof (sa));
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl (INADDR_LOOPBACK);
  if (l < 0 || bind (l, (struct sockaddr *)&sa, sizeof (sa)) || listen (l, 1)
      || getsockname (l, (struct sockaddr *)&sa, &sl))
    return -1;
  *a = socket (AF_INET, SOCK_STREAM, 0);
  if (connect (*a, (struct sockaddr *)&sa, sizeof (sa)))
    return -1;
  *b = accept (l, NULL, NULL);
  close (l);
  setsockopt (*a, IPPROTO_TCP, TCP_NODELAY, &one, sizeof (one));
  setsockopt (*b, IPPROTO_TCP, TCP_NODELAY, &one, sizeof (one));
  return *b < 0 ? -1 : 0;
}

int
main (int argc, char **argv)
{
  static const size_t sizes[]
      = { 64u << 10, 1u << 20, 16u << 20, 64u << 20, 256u << 20, 1u << 30 };
  const int count = sizeof (sizes) / sizeof (sizes[0]);
  int rounds = argc > 1 ? atoi (argv[1]) : 9, sv[2], ta, tb;
  if (rounds < 1 || socketpair (AF_UNIX, SOCK_STREAM, 0, sv) != 0
      || tcp_pair (&ta, &tb) != 0)
    return 1;
  fflush (stdout);
  pid_t pid = fork ();
  const int sender = pid > 0, fd = sender ? sv[0] : sv[1];
  const int tcp = sender ? ta : tb;
  pocl_remote_ucx *u = pocl_remote_ucx_engine (quiet);
  void *addr;
  size_t len, their_len;
  if (u == NULL || pocl_remote_ucx_address (u, &addr, &len) != 0)
    return 1;
  char *their = NULL;
  if (io_all (fd, &len, sizeof (len), 1) || io_all (fd, addr, len, 1)
      || io_all (fd, &their_len, sizeof (their_len), 0) || their_len > 65536
      || (their = malloc (their_len)) == NULL
      || io_all (fd, their, their_len, 0))
    return 1;
  pocl_remote_ucx_ep *ep = pocl_remote_ucx_connect (u, their, their_len, NULL);
  char *buf = malloc (sizes[count - 1]);
  if (ep == NULL || buf == NULL)
    return 1;
  memset (buf, 1, sizes[count - 1]);
  pocl_remote_ucx_register (u, buf, sizes[count - 1]);
  if (sender)
    printf ("%-10s %14s %14s   (GB/s, median of %d; UCX_TLS=%s)\n", "bytes",
            "UCX", "loopback TCP", rounds,
            getenv ("UCX_TLS") ? getenv ("UCX_TLS") : "(all)");
  for (int k = 0; k < count; ++k)
    {
      size_t n = sizes[k], got;
      double t[2][64];
      int r;
      for (r = -1; r < rounds && r < 64; ++r)
        for (int way = 0; way < 2; ++way)
          {
            char go = 'g';
            /* Both ready: the receiver posts, then says so.  */
            if (sender)
              {
                if (io_all (fd, &go, 1, 0))
                  return 1;
                double t0 = now_us ();
                if (way == 0 ? pocl_remote_ucx_send (
                        ep, pocl_remote_ucx_tag (1, k, r + 1), buf, n, 60000)
                             : io_all (tcp, buf, n, 1))
                  return 1;
                if (io_all (fd, &go, 1, 0))
                  return 1;
                if (r >= 0)
                  t[way][r] = n / ((now_us () - t0) * 1e3);
              }
            else
              {
                if (io_all (fd, &go, 1, 1))
                  return 1;
                if (way == 0 ? pocl_remote_ucx_recv (
                        u, pocl_remote_ucx_tag (1, k, r + 1), buf, n, &got,
                        60000)
                             : io_all (tcp, buf, n, 0))
                  return 1;
                if (io_all (fd, &go, 1, 1))
                  return 1;
              }
          }
      if (sender)
        {
          qsort (t[0], rounds, sizeof (double), cmp_double);
          qsort (t[1], rounds, sizeof (double), cmp_double);
          printf ("%-10zu %14.2f %14.2f\n", n, t[0][rounds / 2],
                  t[1][rounds / 2]);
        }
    }
  pocl_remote_ucx_disconnect (ep);
  if (sender)
    waitpid (pid, NULL, 0);
  return 0;
}
