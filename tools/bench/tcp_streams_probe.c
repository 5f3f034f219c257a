/* tcp_streams_probe.c - what loopback TCP moves from and to memory: 64 MiB
   over 1, 2, 4 and 8 streams (a thread per end of each), between written
   buffers the size of the transfer, and, for one stream, iperf-like
   (from the zero page into a 1 MiB buffer that stays in the cache) and with
   one end cache-resident.  The figures behind the lanes' default
   (doc/benchmarks.md): one stream is bound by the core that copies it.  */

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define SIZE (64u << 20)
#define HOT (1u << 20)
#define MAX_STREAMS 8
#define ROUNDS 7

static char *zero, *hot_src, *src, *dst;

typedef struct end
{
  int fd;
  char *base; /* NULL: the 1 MiB cache-resident buffer, over and over */
  size_t len;
} end;

static double
now_us (void)
{
  struct timespec t;
  clock_gettime (CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static void *
sink (void *p)
{
  end *e = (end *)p;
  char *hot = e->base ? NULL : calloc (1, HOT);
  size_t got = 0;
  while (got < e->len)
    {
      size_t want = e->len - got;
      if (hot && want > HOT)
        want = HOT;
      ssize_t r = recv (e->fd, hot ? hot : e->base + got, want, 0);
      if (r <= 0)
        break;
      got += (size_t)r;
    }
  send (e->fd, "k", 1, 0);
  free (hot);
  return NULL;
}

static void *
source (void *p)
{
  end *e = (end *)p;
  size_t sent = 0;
  char ack;
  while (sent < e->len)
    {
      size_t off = e->base ? sent : sent % HOT, want = e->len - sent;
      if (!e->base && want > HOT - off)
        want = HOT - off;
      ssize_t w = send (e->fd, (e->base ? e->base : hot_src) + off, want, 0);
      if (w <= 0)
        exit (1);
      sent += (size_t)w;
    }
  if (recv (e->fd, &ack, 1, 0) != 1)
    exit (1);
  return NULL;
}

/* GB/s of one 64 MiB transfer from `from` into `to` (NULL: cache-resident)
   over `streams` connections, each taking its share.  */
static double
transfer (char *from, char *to, int streams)
{
  int ls = socket (AF_INET, SOCK_STREAM, 0), i;
  struct sockaddr_in a;
  socklen_t alen = sizeof (a);
  memset (&a, 0, sizeof (a));
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl (INADDR_LOOPBACK);
  if (bind (ls, (struct sockaddr *)&a, sizeof (a)) || listen (ls, MAX_STREAMS)
      || getsockname (ls, (struct sockaddr *)&a, &alen))
    exit (1);
  end tx[MAX_STREAMS], rx[MAX_STREAMS];
  pthread_t tt[MAX_STREAMS], rt[MAX_STREAMS];
  size_t share = SIZE / streams;
  for (i = 0; i < streams; ++i)
    {
      tx[i].fd = socket (AF_INET, SOCK_STREAM, 0);
      if (connect (tx[i].fd, (struct sockaddr *)&a, sizeof (a)))
        exit (1);
      tx[i].base = from ? from + i * share : NULL;
      tx[i].len = share;
      rx[i].fd = accept (ls, NULL, NULL);
      rx[i].base = to ? to + i * share : NULL;
      rx[i].len = share;
      pthread_create (&rt[i], NULL, sink, &rx[i]);
    }
  double t0 = now_us ();
  for (i = 0; i < streams; ++i)
    pthread_create (&tt[i], NULL, source, &tx[i]);
  for (i = 0; i < streams; ++i)
    pthread_join (tt[i], NULL);
  double gbs = SIZE / (now_us () - t0) / 1e3;
  for (i = 0; i < streams; ++i)
    {
      pthread_join (rt[i], NULL);
      close (tx[i].fd);
      close (rx[i].fd);
    }
  close (ls);
  return gbs;
}

static int
cmp (const void *x, const void *y)
{
  double a = *(const double *)x, b = *(const double *)y;
  return (a > b) - (a < b);
}

int
main (void)
{
  struct
  {
    const char *name;
    char **from, **to;
    int streams;
  } cases[] = {
    { "zero page -> 1 MiB (iperf-like)", &zero, NULL, 1 },
    { "64 MiB -> 1 MiB", &src, NULL, 1 },
    { "1 MiB -> 64 MiB", NULL, &dst, 1 },
    { "64 MiB -> 64 MiB, 1 stream", &src, &dst, 1 },
    { "64 MiB -> 64 MiB, 2 streams", &src, &dst, 2 },
    { "64 MiB -> 64 MiB, 4 streams", &src, &dst, 4 },
    { "64 MiB -> 64 MiB, 8 streams", &src, &dst, 8 },
  };
  const int n = sizeof (cases) / sizeof (cases[0]);
  double v[sizeof (cases) / sizeof (cases[0])][ROUNDS];
  int c, r;
  zero = calloc (1, SIZE);
  hot_src = malloc (HOT);
  src = malloc (SIZE);
  dst = malloc (SIZE);
  memset (hot_src, 1, HOT);
  memset (src, 2, SIZE);
  memset (dst, 0, SIZE);
  /* interleaved, so that machine noise hits every case alike */
  for (r = 0; r < ROUNDS; ++r)
    for (c = 0; c < n; ++c)
      v[c][r] = transfer (cases[c].from ? *cases[c].from : NULL,
                          cases[c].to ? *cases[c].to : NULL,
                          cases[c].streams);
  printf ("loopback TCP, 64 MiB, median of %d (GB/s):\n", ROUNDS);
  for (c = 0; c < n; ++c)
    {
      qsort (v[c], ROUNDS, sizeof (double), cmp);
      printf ("  %-36s %6.2f (%.2f-%.2f)\n", cases[c].name, v[c][ROUNDS / 2],
              v[c][0], v[c][ROUNDS - 1]);
    }
  return 0;
}
