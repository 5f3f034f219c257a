/* bench_common.h - what remote_bench and overhead_bench share: failing on
   an OpenCL error, the summary of a series of timings, the loopback TCP
   round trip of the same run, and whether two remote devices share a
   server.  */

#ifndef POCL_REMOTE_BENCH_COMMON_H
#define POCL_REMOTE_BENCH_COMMON_H

#include "probe.h"
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define CHECK(x)                                                              \
  do                                                                          \
    {                                                                         \
      cl_int e_ = (x);                                                        \
      if (e_ != CL_SUCCESS)                                                   \
        {                                                                     \
          fprintf (stderr, "%s:%d: %s = %d\n", __FILE__, __LINE__, #x, e_);   \
          exit (1);                                                           \
        }                                                                     \
    }                                                                         \
  while (0)

typedef struct stats
{
  double min, median, p90, p99;
} stats;

static inline stats
summarize (double *v, int n)
{
  stats s;
  qsort (v, n, sizeof (double), cmp_double);
  s.min = v[0];
  s.median = v[n / 2];
  s.p90 = v[(int)(n * 0.9)];
  s.p99 = v[(int)(n * 0.99)];
  return s;
}

static inline void *
echo_thread (void *arg)
{
  int fd = *(int *)arg;
  char buf[64];
  for (;;)
    {
      ssize_t got = 0;
      while (got < 64)
        {
          ssize_t r = recv (fd, buf + got, 64 - got, 0);
          if (r <= 0)
            return NULL;
          got += r;
        }
      if (send (fd, buf, 64, 0) != 64)
        return NULL;
    }
}

static inline stats
loopback_rtt (int iters)
{
  int ls = socket (AF_INET, SOCK_STREAM, 0), one = 1;
  struct sockaddr_in a;
  socklen_t alen = sizeof (a);
  memset (&a, 0, sizeof (a));
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl (INADDR_LOOPBACK);
  if (bind (ls, (struct sockaddr *)&a, sizeof (a)) || listen (ls, 1)
      || getsockname (ls, (struct sockaddr *)&a, &alen))
    {
      perror ("loopback");
      exit (1);
    }
  int c = socket (AF_INET, SOCK_STREAM, 0);
  if (connect (c, (struct sockaddr *)&a, sizeof (a)))
    {
      perror ("connect");
      exit (1);
    }
  int s = accept (ls, NULL, NULL);
  setsockopt (c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof (one));
  setsockopt (s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof (one));
  pthread_t th;
  pthread_create (&th, NULL, echo_thread, &s);

  double *v = malloc (iters * sizeof (double));
  char buf[64] = { 0 };
  int i;
  for (i = -100; i < iters; ++i)
    {
      double t0 = now_us ();
      ssize_t got = 0;
      if (send (c, buf, 64, 0) != 64)
        exit (1);
      while (got < 64)
        {
          ssize_t r = recv (c, buf + got, 64 - got, 0);
          if (r <= 0)
            exit (1);
          got += r;
        }
      if (i >= 0)
        v[i] = now_us () - t0;
    }
  close (c);
  pthread_join (th, NULL);
  close (s);
  close (ls);
  stats st = summarize (v, iters);
  free (v);
  return st;
}

static inline int
same_server (const char *x, const char *y)
{
  const char *sx = strrchr (x, '/'), *sy = strrchr (y, '/');
  return sx && sy && sx - x == sy - y && strncmp (x, y, sx - x) == 0;
}

#endif
