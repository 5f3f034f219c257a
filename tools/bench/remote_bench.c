/* remote_bench.c - latency and bandwidth of a remote device against a local
   one and against the loopback TCP round trip, all measured in one run;
   with a second remote device (another server), migrations between the
   two servers too.

   Devices: the first whose CL_DEVICE_NAME contains "pocl-remote" is the
   remote one, the next such one on another server the migration peer; the
   first other device (or the one whose name contains $BENCH_LOCAL, if set)
   is the local reference.  Prints one table; every figure is in
   microseconds or GB/s.

   remote_bench --reconnect CONTROL ITERATIONS: the remote device reaches
   its pocld through tools/fault_proxy.cc, whose control socket is CONTROL;
   each round cuts every connection ("cut all") and times a no-op kernel
   enqueued right after it, to its completion: the driver notices the cut,
   reconnects, resumes the session and replays the kernel.

   remote_bench ITERATIONS --row LABEL: one line, for tools/bench.sh
   security and gpu (see row).

   remote_bench ITERATIONS --migrations LABEL: the migration sweep alone,
   4 B to 1 GiB, for tools/bench.sh transports (see migrations).

   remote_bench ITERATIONS --client LABEL: the client's own writes and reads
   of 1 MiB to 256 MiB against loopback TCP in the same run, for
   tools/bench.sh transports (see client_sweep).  */

#define CL_TARGET_OPENCL_VERSION 120
#define _GNU_SOURCE
#include "bench_common.h"
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* Loopback TCP bandwidth over `streams` connections, each moving its
   share of the bytes from a thread of its own.  Like iperf, from one
   untouched (zero-page) buffer into a 1 MiB one that stays in the cache;
   with `whole`, from a written buffer of `size` bytes into another, as a
   remote transfer must move them.  One stream is the reference of the
   64 MiB transfers' target (doc/benchmarks.md, Method); four show what
   several streams, as lanes make, can reach (doc/benchmarks.md, Lanes,
   has 1 to 8).  */
typedef struct sink_arg
{
  int fd;
  size_t size;
  char *dst; /* NULL: a 1 MiB buffer, over and over */
} sink_arg;

static void *
sink_thread (void *p)
{
  sink_arg *a = (sink_arg *)p;
  char *buf = a->dst ? NULL : malloc (1 << 20);
  size_t got = 0;
  while (got < a->size)
    {
      ssize_t r = a->dst ? recv (a->fd, a->dst + got, a->size - got, 0)
                         : recv (a->fd, buf, 1 << 20, 0);
      if (r <= 0)
        break;
      got += r;
    }
  send (a->fd, "k", 1, 0);
  free (buf);
  return NULL;
}

typedef struct source_arg
{
  int fd;
  size_t size;
  const char *src;
} source_arg;

static void *
source_thread (void *p)
{
  source_arg *a = (source_arg *)p;
  size_t sent = 0;
  char ack;
  while (sent < a->size)
    {
      ssize_t w = send (a->fd, a->src + sent, a->size - sent, 0);
      if (w <= 0)
        exit (1);
      sent += w;
    }
  if (recv (a->fd, &ack, 1, 0) != 1)
    exit (1);
  return NULL;
}

#define MAX_STREAMS 8

static double
loopback_bandwidth (size_t size, int iters, int whole, int streams)
{
  double *v = malloc (iters * sizeof (double));
  char *data = calloc (1, size), *dst = whole ? malloc (size) : NULL;
  size_t share = size / streams;
  if (whole)
    {
      memset (data, 1, size);
      memset (dst, 0, size);
    }
  int k, i;
  for (k = 0; k < iters; ++k)
    {
      int ls = socket (AF_INET, SOCK_STREAM, 0);
      struct sockaddr_in a;
      socklen_t alen = sizeof (a);
      memset (&a, 0, sizeof (a));
      a.sin_family = AF_INET;
      a.sin_addr.s_addr = htonl (INADDR_LOOPBACK);
      bind (ls, (struct sockaddr *)&a, sizeof (a));
      listen (ls, MAX_STREAMS);
      getsockname (ls, (struct sockaddr *)&a, &alen);
      sink_arg sa[MAX_STREAMS];
      source_arg so[MAX_STREAMS];
      pthread_t sink[MAX_STREAMS], source[MAX_STREAMS];
      for (i = 0; i < streams; ++i)
        {
          so[i].fd = socket (AF_INET, SOCK_STREAM, 0);
          connect (so[i].fd, (struct sockaddr *)&a, sizeof (a));
          so[i].size = share;
          so[i].src = data + i * share;
          sa[i].fd = accept (ls, NULL, NULL);
          sa[i].size = share;
          sa[i].dst = dst ? dst + i * share : NULL;
          pthread_create (&sink[i], NULL, sink_thread, &sa[i]);
        }
      double t0 = now_us ();
      for (i = 0; i < streams; ++i)
        pthread_create (&source[i], NULL, source_thread, &so[i]);
      for (i = 0; i < streams; ++i)
        pthread_join (source[i], NULL);
      v[k] = size / (now_us () - t0) / 1e3;
      for (i = 0; i < streams; ++i)
        {
          pthread_join (sink[i], NULL);
          close (so[i].fd);
          close (sa[i].fd);
        }
      close (ls);
    }
  qsort (v, iters, sizeof (double), cmp_double);
  double med = v[iters / 2];
  free (v);
  free (data);
  free (dst);
  return med;
}

/* ---- OpenCL measurements ---- */

typedef struct dev
{
  cl_device_id id;
  char name[256];
  cl_context ctx;
  cl_command_queue q;
  cl_kernel noop, inc;
  cl_mem counter;
} dev;

static const char *src
    = "__kernel void noop (void) {}\n"
      "__kernel void inc (__global int *c) { c[0] += 1; }\n";

static void
setup (dev *d)
{
  cl_int err;
  d->ctx = clCreateContext (NULL, 1, &d->id, NULL, NULL, &err);
  CHECK (err);
  d->q = clCreateCommandQueue (d->ctx, d->id, 0, &err);
  CHECK (err);
  cl_program p = clCreateProgramWithSource (d->ctx, 1, &src, NULL, &err);
  CHECK (err);
  err = clBuildProgram (p, 1, &d->id, NULL, NULL, NULL);
  if (err != CL_SUCCESS)
    {
      char log[4096] = "";
      clGetProgramBuildInfo (p, d->id, CL_PROGRAM_BUILD_LOG, sizeof (log), log,
                             NULL);
      fprintf (stderr, "build on %s failed (%d):\n%s\n", d->name, err, log);
      exit (1);
    }
  d->noop = clCreateKernel (p, "noop", &err);
  CHECK (err);
  d->inc = clCreateKernel (p, "inc", &err);
  CHECK (err);
  d->counter = clCreateBuffer (d->ctx, CL_MEM_READ_WRITE, 4, NULL, &err);
  CHECK (err);
  CHECK (clSetKernelArg (d->inc, 0, sizeof (cl_mem), &d->counter));
  clReleaseProgram (p);
}

static stats
noop_latency (dev *d, int iters)
{
  return noop_series (d->q, d->noop, iters);
}

/* 100 dependent kernels (in-order queue) and one clFinish.  */
static stats
chain (dev *d, int len, int iters)
{
  return chain_series (d->q, d->inc, d->counter, d->name, len, iters, 0);
}

/* Best-of and median bandwidth of blocking 64 MiB writes and reads, with
   the data checked after the last read.  */
static void
bandwidth (dev *d, size_t size, int iters, double *wr, double *rd)
{
  cl_int err;
  cl_mem b = clCreateBuffer (d->ctx, CL_MEM_READ_WRITE, size, NULL, &err);
  CHECK (err);
  unsigned char *h = malloc (size), *back = malloc (size);
  size_t i;
  for (i = 0; i < size; ++i)
    h[i] = (unsigned char)(i * 7 + 3);
  double *w = malloc (iters * sizeof (double)),
         *r = malloc (iters * sizeof (double));
  int k;
  for (k = -1; k < iters; ++k)
    {
      double t0 = now_us ();
      CHECK (clEnqueueWriteBuffer (d->q, b, CL_TRUE, 0, size, h, 0, NULL,
                                   NULL));
      double t1 = now_us ();
      CHECK (
          clEnqueueReadBuffer (d->q, b, CL_TRUE, 0, size, back, 0, NULL, NULL));
      double t2 = now_us ();
      if (k >= 0)
        {
          w[k] = size / (t1 - t0) / 1e3;
          r[k] = size / (t2 - t1) / 1e3;
        }
    }
  if (memcmp (h, back, size))
    {
      fprintf (stderr, "bandwidth: data mismatch on %s\n", d->name);
      exit (1);
    }
  qsort (w, iters, sizeof (double), cmp_double);
  qsort (r, iters, sizeof (double), cmp_double);
  *wr = w[iters / 2];
  *rd = r[iters / 2];
  free (w);
  free (r);
  free (h);
  free (back);
  clReleaseMemObject (b);
}

/* Fills the three (zeroed first); 0, with a message, without a remote and
   a local device.  */
static int
find_devices (dev *remote, dev *local, dev *peer)
{
  bench_device r, l, p;
  find_bench_devices (&r, &l, &p);
  memset (remote, 0, sizeof (*remote));
  memset (local, 0, sizeof (*local));
  memset (peer, 0, sizeof (*peer));
  remote->id = r.id;
  strcpy (remote->name, r.name);
  local->id = l.id;
  strcpy (local->name, l.name);
  peer->id = p.id;
  strcpy (peer->name, p.name);
  if (!r.id || !l.id)
    fprintf (stderr, "need a pocl-remote device and a local device\n");
  return r.id && l.id;
}

/* One command to fault_proxy's control socket.  */
static void
proxy_command (const char *path, const char *cmd)
{
  int fd = socket (AF_UNIX, SOCK_STREAM, 0);
  struct sockaddr_un a;
  char reply[128] = "";
  memset (&a, 0, sizeof (a));
  a.sun_family = AF_UNIX;
  snprintf (a.sun_path, sizeof (a.sun_path), "%s", path);
  if (fd < 0 || connect (fd, (struct sockaddr *)&a, sizeof (a)) != 0
      || write (fd, cmd, strlen (cmd)) != (ssize_t)strlen (cmd)
      || read (fd, reply, sizeof (reply) - 1) <= 0 || strncmp (reply, "ok", 2))
    {
      fprintf (stderr, "fault_proxy did not take '%s': %s\n", cmd, reply);
      exit (1);
    }
  close (fd);
}

static int
reconnect_bench (const char *control, int iters)
{
  dev remote, local, peer;
  if (!find_devices (&remote, &local, &peer))
    return 1;
  setup (&remote);
  stats rtt = loopback_rtt (2000);
  stats rn = noop_latency (&remote, 2000);
  double *v = malloc (iters * sizeof (double));
  size_t g = 1;
  int i;
  for (i = 0; i < iters; ++i)
    {
      proxy_command (control, "cut all\n");
      double t0 = now_us ();
      CHECK (clEnqueueNDRangeKernel (remote.q, remote.noop, 1, NULL, &g, NULL,
                                     0, NULL, NULL));
      CHECK (clFinish (remote.q));
      v[i] = now_us () - t0;
      /* the next cut on a settled connection */
      usleep (20000);
    }
  stats rc = summarize (v, iters);
  free (v);
  printf ("remote device: %s (through fault_proxy)\n\n", remote.name);
  printf ("%-34s %10s %10s %10s\n", "latency (us)", "min", "median", "p99");
  printf ("%-34s %10.1f %10.1f %10.1f\n", "loopback TCP round trip (64 B)",
          rtt.min, rtt.median, rtt.p99);
  printf ("%-34s %10.1f %10.1f %10.1f\n", "no-op kernel, remote", rn.min,
          rn.median, rn.p99);
  printf ("%-34s %10.1f %10.1f %10.1f\n", "cut, then no-op kernel", rc.min,
          rc.median, rc.p99);
  printf ("\nreconnect (cut to the completion of a command sent after it, "
          "median): %.0f us = %.1f round trips, %.1fx the no-op\n",
          rc.median, rc.median / rtt.median, rc.median / rn.median);
  return 0;
}

/* The remote device only: loopback round trip, no-op latency and 64 MiB
   bandwidth, in the same run, on one line labelled `label`.  */
static int
row (dev *remote, int iters, const char *label)
{
  setup (remote);
  stats rtt = loopback_rtt (iters);
  stats rn = noop_latency (remote, iters);
  stats rtt2 = loopback_rtt (iters);
  double rw, rr;
  bandwidth (remote, 64u << 20, 5, &rw, &rr);
  printf ("%-10s %10.1f %10.1f %10.1f %10.1f %10.2f %10.2f\n", label,
          (rtt.median + rtt2.median) / 2, rn.min, rn.median, rn.p99, rw, rr);
  return 0;
}

/* One line per size, labelled `label`: the median migration between the
   two servers, its GB/s, and the client's own blocking write of the same
   size to the first server with the migration's share of it; the 4-byte
   row also against the remote no-op and the loopback round trip measured
   here.  */
static int
migrations (dev *remote, dev *peer, int iters, const char *label)
{
  static const size_t sizes[]
      = { 4, 4096, 64 << 10, 1 << 20, 16 << 20, 64 << 20, 256u << 20,
          1u << 30 };
  size_t i;
  if (peer->id == NULL)
    {
      fprintf (stderr, "--migrations needs remote devices of two servers\n");
      return 1;
    }
  setup (remote);
  stats rtt = loopback_rtt (iters);
  stats rn = noop_latency (remote, iters);
  for (i = 0; i < sizeof (sizes) / sizeof (sizes[0]); ++i)
    {
      size_t sz = sizes[i];
      int n = sz >= (256u << 20) ? 3
              : sz >= (1u << 20) ? 10
              : iters / 4 > 20   ? iters / 4
                                 : 20;
      double us = migration (remote->id, peer->id, sz, n).median;
      if (sz < (1u << 20))
        {
          printf ("%-9s %10zu %10.1f us %6.2fx no-op %6.2fx round trip\n",
                  label, sz, us, us / rn.median, us / rtt.median);
          continue;
        }
      double w, r;
      bandwidth (remote, sz, sz >= (256u << 20) ? 3 : 5, &w, &r);
      printf ("%-9s %10zu %10.1f us %6.2f GB/s, client write %6.2f GB/s: "
              "%3.0f%%\n",
              label, sz, us, sz / us / 1e3, w, 100 * sz / us / 1e3 / w);
    }
  return 0;
}

/* One line per size, labelled `label`: the client's blocking write and
   read of the remote device (median GB/s), against the loopback TCP
   ceiling measured here: one stream, and four (the best of the two).  */
static int
client_sweep (dev *remote, const char *label)
{
  static const size_t sizes[] = { 1 << 20, 16 << 20, 64 << 20, 256u << 20 };
  size_t i;
  setup (remote);
  double one = loopback_bandwidth (64u << 20, 5, 1, 1);
  double four = loopback_bandwidth (64u << 20, 5, 1, 4);
  double tcp = one > four ? one : four;
  for (i = 0; i < sizeof (sizes) / sizeof (sizes[0]); ++i)
    {
      double w, r;
      bandwidth (remote, sizes[i], sizes[i] >= (256u << 20) ? 3 : 5, &w, &r);
      printf ("%-11s %10zu write %6.2f GB/s read %6.2f GB/s: %3.0f%% / %3.0f%% "
              "of loopback TCP (%.2f GB/s: 1 stream %.2f, 4 streams %.2f)\n",
              label, sizes[i], w, r, 100 * w / tcp, 100 * r / tcp, tcp, one,
              four);
    }
  return 0;
}

int
main (int argc, char **argv)
{
  if (argc == 4 && strcmp (argv[1], "--reconnect") == 0)
    return reconnect_bench (argv[2], atoi (argv[3]));
  int iters = argc > 1 ? atoi (argv[1]) : 2000;
  dev remote, local, peer;
  if (!find_devices (&remote, &local, &peer))
    return 1;
  if (argc > 3 && strcmp (argv[2], "--row") == 0)
    return row (&remote, iters, argv[3]);
  if (argc > 3 && strcmp (argv[2], "--migrations") == 0)
    return migrations (&remote, &peer, iters, argv[3]);
  if (argc > 3 && strcmp (argv[2], "--client") == 0)
    return client_sweep (&remote, argv[3]);
  setup (&remote);
  setup (&local);

  /* interleave so that machine noise hits both sides alike */
  stats rtt = loopback_rtt (iters);
  stats ln = noop_latency (&local, iters);
  stats rn = noop_latency (&remote, iters);
  stats rtt2 = loopback_rtt (iters);
  stats lc = chain (&local, 100, 20);
  stats rc = chain (&remote, 100, 20);
  double lw, lr, rw, rr, tcp = loopback_bandwidth (64u << 20, 5, 0, 1);
  double tcp_whole = loopback_bandwidth (64u << 20, 5, 1, 1);
  double tcp_four = loopback_bandwidth (64u << 20, 5, 1, 4);
  bandwidth (&local, 64u << 20, 5, &lw, &lr);
  bandwidth (&remote, 64u << 20, 5, &rw, &rr);

  double rtt_med = (rtt.median + rtt2.median) / 2;
  printf ("remote device: %s\nlocal device:  %s\n\n", remote.name,
          local.name);
  printf ("%-34s %10s %10s %10s\n", "latency (us)", "min", "median", "p99");
  printf ("%-34s %10.1f %10.1f %10.1f\n", "loopback TCP round trip (64 B)",
          rtt.min < rtt2.min ? rtt.min : rtt2.min, rtt_med,
          rtt.p99 > rtt2.p99 ? rtt.p99 : rtt2.p99);
  printf ("%-34s %10.1f %10.1f %10.1f\n", "no-op kernel, local", ln.min,
          ln.median, ln.p99);
  printf ("%-34s %10.1f %10.1f %10.1f\n", "no-op kernel, remote", rn.min,
          rn.median, rn.p99);
  printf ("%-34s %10.1f %10.1f %10.1f\n", "100-kernel chain, local", lc.min,
          lc.median, lc.p99);
  printf ("%-34s %10.1f %10.1f %10.1f\n", "100-kernel chain, remote", rc.min,
          rc.median, rc.p99);
  printf ("\n%-34s %10s %10s\n", "64 MiB bandwidth (GB/s)", "write", "read");
  printf ("%-34s %10.2f %10.2f\n", "loopback TCP, one stream", tcp, tcp);
  printf ("%-34s %10.2f %10.2f\n", "loopback TCP, 64 MiB to 64 MiB",
          tcp_whole, tcp_whole);
  printf ("%-34s %10.2f %10.2f\n", "  the same over 4 streams", tcp_four,
          tcp_four);
  printf ("%-34s %10.2f %10.2f\n", "local", lw, lr);
  printf ("%-34s %10.2f %10.2f\n", "remote", rw, rr);
  printf ("\nremote no-op - local no-op - round trip (median): %.1f us "
          "(goal <= 10)\n",
          rn.median - ln.median - rtt_med);
  printf ("remote 64 MiB write / read vs loopback TCP: %.0f%% / %.0f%% "
          "(64 MiB to 64 MiB: %.0f%% / %.0f%%; over 4 streams: %.0f%% / "
          "%.0f%%)\n",
          100 * rw / tcp, 100 * rr / tcp, 100 * rw / tcp_whole,
          100 * rr / tcp_whole, 100 * rw / tcp_four, 100 * rr / tcp_four);
  printf ("100-chain remote / (local + round trip) (median): %.2fx\n",
          rc.median / (lc.median + rtt_med));
  if (peer.id == NULL)
    return 0;

  printf ("\nmigration between two servers: %s -> %s\n", remote.name,
          peer.name);
  double m4
      = migration (remote.id, peer.id, 4, iters / 4 > 20 ? iters / 4 : 20)
            .median;
  printf ("%-34s %10.1f us (%.2fx the remote no-op; goal <= 1.5x)\n",
          "4-byte migration (median)", m4, m4 / rn.median);
  printf ("%-34s %12s %10s\n", "migration size", "median us", "GB/s");
  static const size_t sizes[]
      = { 4, 4096, 64 << 10, 1 << 20, 16 << 20, 64 << 20, 256u << 20 };
  size_t i;
  for (i = 0; i < sizeof (sizes) / sizeof (sizes[0]); ++i)
    {
      size_t sz = sizes[i];
      int n = sz >= (64u << 20) ? 3 : sz >= (1u << 20) ? 10 : 50;
      double us = migration (remote.id, peer.id, sz, n).median;
      printf ("%-34zu %12.1f %10.3f\n", sz, us, sz / us / 1e3);
    }
  return 0;
}
