/* bench_common.h - what the benchmark programs share: a monotonic clock in
   microseconds, a spin of some microseconds, failing on an OpenCL error,
   the summary of a series of timings, the no-op and the 100-kernel chain
   as both benchmarks time them, the first device of the first
   platform (and a queue of it), the loopback TCP round trip of the same
   run, whether two remote devices share a server, and the migration of a
   buffer between two devices.  */

#ifndef POCL_REMOTE_BENCH_COMMON_H
#define POCL_REMOTE_BENCH_COMMON_H

#include <CL/cl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static inline double
now_us (void)
{
  struct timespec t;
  clock_gettime (CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

/* Spins for us microseconds: the calling thread stays awake, the
   device's own threads may not.  */
static inline void
idle_us (double us)
{
  double t = now_us () + us;
  while (now_us () < t)
    ;
}

static inline int
cmp_double (const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* 0 and the device, or -1 after saying there is none.  */
static inline int
first_device (cl_platform_id *p, cl_device_id *d)
{
  if (clGetPlatformIDs (1, p, NULL)
      || clGetDeviceIDs (*p, CL_DEVICE_TYPE_ALL, 1, d, NULL))
    {
      fprintf (stderr, "no OpenCL device\n");
      return -1;
    }
  return 0;
}

/* 0 with a context and an in-order queue of the first device of the first
   platform, or -1 after saying why not.  */
static inline int
first_queue (cl_device_id *d, cl_context *c, cl_command_queue *q)
{
  cl_platform_id p;
  cl_int err;
  if (first_device (&p, d))
    return -1;
  *c = clCreateContext (NULL, 1, d, NULL, NULL, &err);
  *q = *c ? clCreateCommandQueue (*c, *d, 0, &err) : NULL;
  if (*q == NULL)
    {
      fprintf (stderr, "no context or queue (%d)\n", err);
      return -1;
    }
  return 0;
}

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

/* The no-op: a one-work-item kernel K enqueued on Q and waited for with
   clFinish, ITERS times after 200 untimed.  */
static inline stats
noop_series (cl_command_queue q, cl_kernel k, int iters)
{
  size_t g = 1;
  double *v = malloc (iters * sizeof (double));
  int i;
  for (i = -200; i < iters; ++i)
    {
      double t0 = now_us ();
      CHECK (clEnqueueNDRangeKernel (q, k, 1, NULL, &g, NULL, 0, NULL, NULL));
      CHECK (clFinish (q));
      if (i >= 0)
        v[i] = now_us () - t0;
    }
  stats s = summarize (v, iters);
  free (v);
  return s;
}

/* The chain: LEN dependent launches of INC, which increments COUNTER's
   first int, on the in-order Q and one clFinish, ITERS times after 5
   untimed; the counter is checked after each, so that the chain really
   ran.  NAME is the device's, for the message.  EVENTS: as a SYCL runtime
   submits, on an out-of-order Q, each launch waits for the previous one's
   event, then a wait for the last event instead of clFinish.  */
static inline stats
chain_series (cl_command_queue q, cl_kernel inc, cl_mem counter,
              const char *name, int len, int iters, int events)
{
  size_t g = 1;
  double *v = malloc (iters * sizeof (double));
  int i, j, zero = 0, got = 0;
  for (i = -5; i < iters; ++i)
    {
      CHECK (clEnqueueWriteBuffer (q, counter, CL_TRUE, 0, 4, &zero, 0, NULL,
                                   NULL));
      double t0 = now_us ();
      cl_event prev = NULL, ev;
      for (j = 0; j < len; ++j)
        {
          CHECK (clEnqueueNDRangeKernel (q, inc, 1, NULL, &g, NULL,
                                         prev != NULL, prev ? &prev : NULL,
                                         events ? &ev : NULL));
          if (prev != NULL)
            clReleaseEvent (prev);
          prev = events ? ev : NULL;
        }
      if (events)
        {
          CHECK (clWaitForEvents (1, &prev));
          clReleaseEvent (prev);
        }
      else
        CHECK (clFinish (q));
      if (i >= 0)
        v[i] = now_us () - t0;
      CHECK (clEnqueueReadBuffer (q, counter, CL_TRUE, 0, 4, &got, 0, NULL,
                                  NULL));
      if (got != len)
        {
          fprintf (stderr, "chain on %s counted %d, expected %d\n", name, got,
                   len);
          exit (1);
        }
    }
  stats s = summarize (v, iters);
  free (v);
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

/* A benchmark's devices, by CL_DEVICE_NAME: the first "pocl-remote" device
   is the remote one, the next such one of another server the migration
   peer, the first other device (or the first whose name contains
   $BENCH_LOCAL) the native reference.  What is not found stays zero.  */
typedef struct bench_device
{
  cl_device_id id;
  char name[256];
} bench_device;

static inline void
find_bench_devices (bench_device *remote, bench_device *local,
                    bench_device *peer)
{
  cl_platform_id plats[16];
  cl_uint np = 0, i, j;
  const char *want = getenv ("BENCH_LOCAL");
  memset (remote, 0, sizeof (*remote));
  memset (local, 0, sizeof (*local));
  memset (peer, 0, sizeof (*peer));
  clGetPlatformIDs (16, plats, &np);
  for (i = 0; i < np; ++i)
    {
      cl_device_id devs[32];
      cl_uint nd = 0;
      if (clGetDeviceIDs (plats[i], CL_DEVICE_TYPE_ALL, 32, devs, &nd))
        continue;
      for (j = 0; j < nd; ++j)
        {
          char name[256];
          clGetDeviceInfo (devs[j], CL_DEVICE_NAME, sizeof (name), name, NULL);
          bench_device *d = NULL;
          if (!strstr (name, "pocl-remote"))
            d = !local->id && (!want || strstr (name, want)) ? local : NULL;
          else if (!remote->id)
            d = remote;
          else if (!peer->id && !same_server (name, remote->name))
            d = peer;
          if (d)
            {
              d->id = devs[j];
              strcpy (d->name, name);
            }
        }
    }
}

/* Migrations between two devices (of two servers), in one context of
   both: a buffer moves A -> B -> A ... with clEnqueueMigrateMemObjects,
   each move waited for.  Before each move a kernel rewrites the buffer's
   first byte (with its own value) where it is, untimed: otherwise both
   would hold the latest content after the first round and nothing would
   move.  The bytes are checked at the end.  With `writes`, each move
   comes after a blocking write of as many bytes to A (another buffer),
   timed into *writes: the client's own transfer rate under the same
   conditions as the moves beside it.  */
static inline stats
migration_paired (cl_device_id a, cl_device_id b, size_t size, int iters,
                  stats *writes)
{
  cl_int err;
  cl_device_id ids[2] = { a, b };
  cl_context ctx = clCreateContext (NULL, 2, ids, NULL, NULL, &err);
  CHECK (err);
  cl_command_queue q[2];
  q[0] = clCreateCommandQueue (ctx, a, 0, &err);
  CHECK (err);
  q[1] = clCreateCommandQueue (ctx, b, 0, &err);
  CHECK (err);
  cl_mem buf = clCreateBuffer (ctx, CL_MEM_READ_WRITE, size, NULL, &err);
  CHECK (err);
  cl_mem wbuf = NULL;
  if (writes)
    {
      wbuf = clCreateBuffer (ctx, CL_MEM_READ_WRITE, size, NULL, &err);
      CHECK (err);
    }
  static const char *touch_src
      = "__kernel void touch (__global uchar *b) { b[0] = b[0]; }\n";
  cl_program p = clCreateProgramWithSource (ctx, 1, &touch_src, NULL, &err);
  CHECK (err);
  CHECK (clBuildProgram (p, 2, ids, NULL, NULL, NULL));
  cl_kernel touch = clCreateKernel (p, "touch", &err);
  CHECK (err);
  CHECK (clSetKernelArg (touch, 0, sizeof (buf), &buf));
  size_t one = 1, i;
  unsigned char *h = malloc (size), *back = malloc (size);
  for (i = 0; i < size; ++i)
    h[i] = (unsigned char)(i * 13 + 1);
  CHECK (clEnqueueWriteBuffer (q[0], buf, CL_TRUE, 0, size, h, 0, NULL, NULL));
  double *v = malloc (iters * sizeof (double)),
         *w = malloc (iters * sizeof (double));
  int k;
  for (k = -2; k < iters; ++k)
    {
      cl_command_queue from = q[(k + 2) % 2], to = q[(k + 3) % 2];
      if (writes)
        {
          double w0 = now_us ();
          CHECK (clEnqueueWriteBuffer (q[0], wbuf, CL_TRUE, 0, size, h, 0,
                                       NULL, NULL));
          if (k >= 0)
            w[k] = now_us () - w0;
        }
      CHECK (clEnqueueNDRangeKernel (from, touch, 1, NULL, &one, NULL, 0, NULL,
                                     NULL));
      CHECK (clFinish (from));
      double t0 = now_us ();
      CHECK (clEnqueueMigrateMemObjects (to, 1, &buf, 0, 0, NULL, NULL));
      CHECK (clFinish (to));
      if (k >= 0)
        v[k] = now_us () - t0;
    }
  CHECK (clEnqueueReadBuffer (q[0], buf, CL_TRUE, 0, size, back, 0, NULL,
                              NULL));
  if (memcmp (h, back, size))
    {
      fprintf (stderr, "migration of %zu bytes corrupted the data\n", size);
      exit (1);
    }
  stats s = summarize (v, iters);
  if (writes)
    {
      *writes = summarize (w, iters);
      clReleaseMemObject (wbuf);
    }
  free (v);
  free (w);
  free (h);
  free (back);
  clReleaseMemObject (buf);
  clReleaseKernel (touch);
  clReleaseProgram (p);
  clReleaseCommandQueue (q[0]);
  clReleaseCommandQueue (q[1]);
  clReleaseContext (ctx);
  return s;
}

static inline stats
migration (cl_device_id a, cl_device_id b, size_t size, int iters)
{
  return migration_paired (a, b, size, iters, NULL);
}

#endif
