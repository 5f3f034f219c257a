/* overhead_bench.c - command overhead and migration speed, each measured
   natively and through remote in one run, next to the loopback TCP round
   trip (RTT) of the same run, with the ratios against the targets of
   doc/benchmarks.md (Method):

   - noop:    no-op kernel enqueue + clFinish; target native + RTT + 10 us;
   - stream:  BabelStream's kernels over three arrays of 2^N doubles
              (default N = 25), each kernel then clFinish, best of 20:
              copy, mul, add, triad; dot then reads back its partial sums
              (4 per compute unit, 528 on an H100) with a blocking read.
              Target: a kernel with buffer arguments costs what the no-op
              costs (native + RTT + 10 us), dot native + two RTT;
   - chain:   100 dependent kernels, one clFinish; ratio to native + RTT;
   - events:  the chain as a SYCL runtime submits it: an out-of-order queue,
              each kernel waiting for the previous one's event (every event
              held), then a wait for the last one; ratio to native + RTT;
   - build:   the benchmark's program built again from its source, as an
              application does at each start (clCreateProgramWithSource,
              clBuildProgram, clReleaseProgram; the kernel cache is warm);
              ratio to native + RTT;
   - cmdbuf:  the chain recorded once into a command buffer
              (cl_khr_command_buffer: 100 kernels, each after the previous
              one's sync point) and enqueued, then clFinish; ratio to
              native + RTT (through remote one message per enqueue);
   - migrate: with a second remote device on another server, a 4-byte
              clEnqueueMigrateMemObjects + clFinish between the servers
              (min, median, p90: a median far above the minimum means that
              something waits), and 16 / 64 / 256 MiB migrations (and 1 GiB
              with -g) against the client's own 64 MiB write rate of the
              same run and its writes of the same size, one before each
              move.  The 4-byte move's floor is measured too: the native
              device's blocking 4-byte read and write (a migration's source
              reads, its destination writes), back to back and each after
              100 us without commands, and 1.5 RTT (client to source,
              source to destination, destination to client).

   Devices as in remote_bench.c: the first "pocl-remote" device is the
   remote one, the next one on another server the migration peer, the first
   other device (or the one whose name contains $BENCH_LOCAL) the native
   reference.  With BENCH_NATIVE_ICD=LIBRARY (or a directory of .icd
   files) the native reference is that OpenCL library's device, measured first in a child process that loads
   only it: another PoCL (5's CPU device) cannot live in one process with
   the client's (one soname).

     overhead_bench [-n LOG2_ELEMENTS] [-i ITERATIONS] [-g] [-m MOVES]
                    [PARTS...]

   MOVES: migrations of each size from 16 MiB (default 10 of 16 MiB, 4 of
   the others).

   PARTS are noop, stream, chain, events, build, cmdbuf, migrate (default:
   all).  */

#define CL_TARGET_OPENCL_VERSION 120
#define _GNU_SOURCE
#include "bench_common.h"
#include <CL/cl_ext.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- devices ---- */

typedef struct dev
{
  cl_device_id id;
  char name[256];
  cl_context ctx;
  cl_command_queue q;
  cl_program prog;
  cl_uint units;
} dev;

static const char *src
    = "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
      "#define S 0.4\n"
      "__kernel void noop (void) {}\n"
      "__kernel void inc (__global int *c) { c[0] += 1; }\n"
      "__kernel void copy (__global const double *a, __global double *c)\n"
      "{ size_t i = get_global_id (0); c[i] = a[i]; }\n"
      "__kernel void mul (__global double *b, __global const double *c)\n"
      "{ size_t i = get_global_id (0); b[i] = S * c[i]; }\n"
      "__kernel void add (__global const double *a, __global const double *b,"
      " __global double *c)\n"
      "{ size_t i = get_global_id (0); c[i] = a[i] + b[i]; }\n"
      "__kernel void triad (__global double *a, __global const double *b,"
      " __global const double *c)\n"
      "{ size_t i = get_global_id (0); a[i] = b[i] + S * c[i]; }\n"
      "__kernel void stream_dot (__global const double *a, __global const double *b,"
      " __global double *sum, __local double *wg, ulong n)\n"
      "{\n"
      "  size_t i = get_global_id (0), li = get_local_id (0);\n"
      "  double t = 0.0;\n"
      "  for (; i < n; i += get_global_size (0)) t += a[i] * b[i];\n"
      "  wg[li] = t;\n"
      "  for (size_t o = get_local_size (0) / 2; o > 0; o /= 2) {\n"
      "    barrier (CLK_LOCAL_MEM_FENCE);\n"
      "    if (li < o) wg[li] += wg[li + o];\n"
      "  }\n"
      "  if (li == 0) sum[get_group_id (0)] = wg[0];\n"
      "}\n";

static void
setup (dev *d)
{
  cl_int err;
  d->ctx = clCreateContext (NULL, 1, &d->id, NULL, NULL, &err);
  CHECK (err);
  d->q = clCreateCommandQueue (d->ctx, d->id, 0, &err);
  CHECK (err);
  d->prog = clCreateProgramWithSource (d->ctx, 1, &src, NULL, &err);
  CHECK (err);
  err = clBuildProgram (d->prog, 1, &d->id, NULL, NULL, NULL);
  if (err != CL_SUCCESS)
    {
      char log[4096] = "";
      clGetProgramBuildInfo (d->prog, d->id, CL_PROGRAM_BUILD_LOG,
                             sizeof (log), log, NULL);
      fprintf (stderr, "build on %s failed (%d):\n%s\n", d->name, err, log);
      exit (1);
    }
  CHECK (clGetDeviceInfo (d->id, CL_DEVICE_MAX_COMPUTE_UNITS,
                          sizeof (d->units), &d->units, NULL));
}

static cl_kernel
kernel (dev *d, const char *name)
{
  cl_int err;
  cl_kernel k = clCreateKernel (d->prog, name, &err);
  if (err != CL_SUCCESS)
    {
      fprintf (stderr, "kernel %s on %s: %d\n", name, d->name, err);
      exit (1);
    }
  return k;
}

/* local NULL: only the remote devices (the native one is measured in a
   process of its own, see native_child); remote NULL: only the local one.  */
static int
find_devices (dev *remote, dev *local, dev *peer)
{
  bench_device r, l, p;
  find_bench_devices (&r, &l, &p);
  int ok = (remote == NULL || r.id) && (local == NULL || l.id);
  if (!ok)
    fprintf (stderr, "need %s\n",
             local == NULL    ? "a pocl-remote device"
             : remote == NULL ? "a local device"
                              : "a pocl-remote device and a local device");
  if (local)
    {
      memset (local, 0, sizeof (*local));
      local->id = l.id;
      strcpy (local->name, l.name);
    }
  if (remote)
    {
      memset (remote, 0, sizeof (*remote));
      memset (peer, 0, sizeof (*peer));
      remote->id = r.id;
      strcpy (remote->name, r.name);
      peer->id = p.id;
      strcpy (peer->name, p.name);
    }
  return ok;
}

/* ---- no-op and chain ---- */

static stats
noop_latency (dev *d, int iters)
{
  cl_kernel k = kernel (d, "noop");
  stats s = noop_series (d->q, k, iters);
  clReleaseKernel (k);
  return s;
}

/* A build of the benchmark's source, again (setup built it once).  */
static stats
rebuild (dev *d, int iters)
{
  double *v = malloc (iters * sizeof (double));
  for (int i = 0; i < iters; ++i)
    {
      cl_int err;
      double t0 = now_us ();
      cl_program p = clCreateProgramWithSource (d->ctx, 1, &src, NULL, &err);
      CHECK (err);
      CHECK (clBuildProgram (p, 1, &d->id, NULL, NULL, NULL));
      CHECK (clReleaseProgram (p));
      v[i] = now_us () - t0;
    }
  stats s = summarize (v, iters);
  free (v);
  return s;
}

/* events: the chain as a SYCL runtime submits it (chain_series), on an
   out-of-order queue of its own.  */
static stats
chain (dev *d, int len, int iters, int events)
{
  cl_int err;
  cl_command_queue q = d->q;
  if (events)
    {
      q = clCreateCommandQueue (d->ctx, d->id,
                                CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE, &err);
      CHECK (err);
    }
  cl_kernel k = kernel (d, "inc");
  cl_mem c = clCreateBuffer (d->ctx, CL_MEM_READ_WRITE, 4, NULL, &err);
  CHECK (err);
  CHECK (clSetKernelArg (k, 0, sizeof (c), &c));
  stats s = chain_series (q, k, c, d->name, len, iters, events);
  clReleaseMemObject (c);
  clReleaseKernel (k);
  if (events)
    clReleaseCommandQueue (q);
  return s;
}

/* cmdbuf: the chain of `len` inc kernels recorded once (each waiting for
   the previous one's sync point), enqueued `iters` times, each followed by
   clFinish and a check of the count.  min -1: the device has no command
   buffers.  */
static stats
cmdbuf_chain (dev *d, int len, int iters)
{
  stats none = { -1, -1, -1 };
  cl_platform_id p;
  CHECK (clGetDeviceInfo (d->id, CL_DEVICE_PLATFORM, sizeof (p), &p, NULL));
#define FN(name) ((name##_fn)clGetExtensionFunctionAddressForPlatform (p, #name))
  clCreateCommandBufferKHR_fn create = FN (clCreateCommandBufferKHR);
  clCommandNDRangeKernelKHR_fn record = FN (clCommandNDRangeKernelKHR);
  clFinalizeCommandBufferKHR_fn finalize = FN (clFinalizeCommandBufferKHR);
  clEnqueueCommandBufferKHR_fn enqueue = FN (clEnqueueCommandBufferKHR);
  clReleaseCommandBufferKHR_fn release = FN (clReleaseCommandBufferKHR);
#undef FN
  if (!create || !record || !finalize || !enqueue || !release)
    return none;
  cl_int err;
  cl_kernel k = kernel (d, "inc");
  cl_mem c = clCreateBuffer (d->ctx, CL_MEM_READ_WRITE, 4, NULL, &err);
  CHECK (err);
  CHECK (clSetKernelArg (k, 0, sizeof (c), &c));
  /* a run may be enqueued before the last one's completion callback has
     made the buffer executable again */
  cl_command_buffer_properties_khr props[]
      = { CL_COMMAND_BUFFER_FLAGS_KHR, CL_COMMAND_BUFFER_SIMULTANEOUS_USE_KHR,
          0 };
  cl_command_buffer_khr cb = create (1, &d->q, props, &err);
  CHECK (err);
  size_t g = 1;
  cl_sync_point_khr sp = 0;
  for (int j = 0; j < len; ++j)
    CHECK (record (cb, NULL, NULL, k, 1, NULL, &g, NULL, j > 0, j ? &sp : NULL,
                   &sp, NULL));
  CHECK (finalize (cb));
  double *v = malloc (iters * sizeof (double));
  int zero = 0, got = 0;
  for (int i = -5; i < iters; ++i)
    {
      CHECK (clEnqueueWriteBuffer (d->q, c, CL_TRUE, 0, 4, &zero, 0, NULL,
                                   NULL));
      double t0 = now_us ();
      CHECK (enqueue (0, NULL, cb, 0, NULL, NULL));
      CHECK (clFinish (d->q));
      if (i >= 0)
        v[i] = now_us () - t0;
      CHECK (clEnqueueReadBuffer (d->q, c, CL_TRUE, 0, 4, &got, 0, NULL,
                                  NULL));
      if (got != len)
        {
          fprintf (stderr, "command buffer on %s counted %d, expected %d\n",
                   d->name, got, len);
          exit (1);
        }
    }
  stats s = summarize (v, iters);
  free (v);
  CHECK (release (cb));
  clReleaseMemObject (c);
  clReleaseKernel (k);
  return s;
}

/* The native and remote figures of a chain, and the ratio.  */
static void
print_chain (const char *title, const char *what, stats l, stats rm, double r)
{
  printf ("\n%-28s %10s %10s %10s\n", title, "min", "median", "p90");
  printf ("%-28s %10.1f %10.1f %10.1f\n", "native", l.min, l.median, l.p90);
  printf ("%-28s %10.1f %10.1f %10.1f\n", "remote", rm.min, rm.median,
          rm.p90);
  printf ("%s: remote / (native + RTT) = %.2fx (median), %.2fx (min)\n", what,
          rm.median / (l.median + r), rm.min / (l.min + r));
}

/* ---- stream kernels ---- */

enum
{
  COPY,
  MUL,
  ADD,
  TRIAD,
  DOT,
  NKERNELS
};
static const char *knames[NKERNELS] = { "copy", "mul", "add", "triad", "dot" };
/* dot () is an OpenCL built-in function */
static const char *kfuncs[NKERNELS]
    = { "copy", "mul", "add", "triad", "stream_dot" };
/* bytes moved per element, as BabelStream counts them */
static const int kbytes[NKERNELS] = { 16, 16, 24, 24, 16 };

/* Best-of-`iters` microseconds of each kernel (dot: with the blocking read
   of its partial sums) on arrays of n doubles; checks the final values
   against the host's arithmetic.  */
static void
stream (dev *d, size_t n, int iters, double best[NKERNELS])
{
  cl_int err;
  size_t bytes = n * sizeof (double);
  cl_mem a = clCreateBuffer (d->ctx, CL_MEM_READ_WRITE, bytes, NULL, &err);
  CHECK (err);
  cl_mem b = clCreateBuffer (d->ctx, CL_MEM_READ_WRITE, bytes, NULL, &err);
  CHECK (err);
  cl_mem c = clCreateBuffer (d->ctx, CL_MEM_READ_WRITE, bytes, NULL, &err);
  CHECK (err);
  double init[3] = { 0.1, 0.2, 0.0 };
  CHECK (clEnqueueFillBuffer (d->q, a, &init[0], 8, 0, bytes, 0, NULL, NULL));
  CHECK (clEnqueueFillBuffer (d->q, b, &init[1], 8, 0, bytes, 0, NULL, NULL));
  CHECK (clEnqueueFillBuffer (d->q, c, &init[2], 8, 0, bytes, 0, NULL, NULL));
  CHECK (clFinish (d->q));

  size_t wg = 256, maxwg = 0;
  CHECK (clGetDeviceInfo (d->id, CL_DEVICE_MAX_WORK_GROUP_SIZE,
                          sizeof (maxwg), &maxwg, NULL));
  while (wg > maxwg)
    wg /= 2;
  size_t groups = 4 * d->units;
  cl_mem sums = clCreateBuffer (d->ctx, CL_MEM_WRITE_ONLY,
                                groups * sizeof (double), NULL, &err);
  CHECK (err);
  double *partial = malloc (groups * sizeof (double));
  cl_ulong nn = n;

  cl_kernel k[NKERNELS];
  int i;
  for (i = 0; i < NKERNELS; ++i)
    k[i] = kernel (d, kfuncs[i]);
  CHECK (clSetKernelArg (k[COPY], 0, sizeof (a), &a));
  CHECK (clSetKernelArg (k[COPY], 1, sizeof (c), &c));
  CHECK (clSetKernelArg (k[MUL], 0, sizeof (b), &b));
  CHECK (clSetKernelArg (k[MUL], 1, sizeof (c), &c));
  CHECK (clSetKernelArg (k[ADD], 0, sizeof (a), &a));
  CHECK (clSetKernelArg (k[ADD], 1, sizeof (b), &b));
  CHECK (clSetKernelArg (k[ADD], 2, sizeof (c), &c));
  CHECK (clSetKernelArg (k[TRIAD], 0, sizeof (a), &a));
  CHECK (clSetKernelArg (k[TRIAD], 1, sizeof (b), &b));
  CHECK (clSetKernelArg (k[TRIAD], 2, sizeof (c), &c));
  CHECK (clSetKernelArg (k[DOT], 0, sizeof (a), &a));
  CHECK (clSetKernelArg (k[DOT], 1, sizeof (b), &b));
  CHECK (clSetKernelArg (k[DOT], 2, sizeof (sums), &sums));
  CHECK (clSetKernelArg (k[DOT], 3, wg * sizeof (double), NULL));
  CHECK (clSetKernelArg (k[DOT], 4, sizeof (nn), &nn));

  /* BabelStream's order; the host follows the values.  */
  double ha = 0.1, hb = 0.2, hc = 0.0, sum = 0.0;
  for (i = 0; i < NKERNELS; ++i)
    best[i] = 1e30;
  int it;
  for (it = -1; it < iters; ++it)
    for (i = 0; i < NKERNELS; ++i)
      {
        size_t g = i == DOT ? groups * wg : n, l = wg;
        double t0 = now_us ();
        CHECK (clEnqueueNDRangeKernel (d->q, k[i], 1, NULL, &g,
                                       i == DOT ? &l : NULL, 0, NULL, NULL));
        if (i == DOT)
          CHECK (clEnqueueReadBuffer (d->q, sums, CL_TRUE, 0,
                                      groups * sizeof (double), partial, 0,
                                      NULL, NULL));
        else
          CHECK (clFinish (d->q));
        double t = now_us () - t0;
        if (it >= 0 && t < best[i])
          best[i] = t;
        switch (i)
          {
          case COPY:
            hc = ha;
            break;
          case MUL:
            hb = 0.4 * hc;
            break;
          case ADD:
            hc = ha + hb;
            break;
          case TRIAD:
            ha = hb + 0.4 * hc;
            break;
          default:
            {
              size_t j;
              sum = 0.0;
              for (j = 0; j < groups; ++j)
                sum += partial[j];
            }
          }
      }
  /* spot checks at both ends */
  double got[3][2];
  cl_mem arr[3] = { a, b, c };
  double want[3] = { ha, hb, hc };
  for (i = 0; i < 3; ++i)
    {
      CHECK (clEnqueueReadBuffer (d->q, arr[i], CL_TRUE, 0, 8, &got[i][0], 0,
                                  NULL, NULL));
      CHECK (clEnqueueReadBuffer (d->q, arr[i], CL_TRUE, bytes - 8, 8,
                                  &got[i][1], 0, NULL, NULL));
      /* the device may contract a * b + c into an fma */
      if (fabs (got[i][0] - want[i]) > 1e-12 * fabs (want[i])
          || fabs (got[i][1] - want[i]) > 1e-12 * fabs (want[i]))
        {
          fprintf (stderr, "stream on %s: array %d holds %g/%g, not %g\n",
                   d->name, i, got[i][0], got[i][1], want[i]);
          exit (1);
        }
    }
  double wsum = ha * hb * n;
  if (sum < wsum * (1 - 1e-6) || sum > wsum * (1 + 1e-6))
    {
      fprintf (stderr, "stream on %s: dot %g, not %g\n", d->name, sum, wsum);
      exit (1);
    }
  for (i = 0; i < NKERNELS; ++i)
    clReleaseKernel (k[i]);
  free (partial);
  clReleaseMemObject (sums);
  clReleaseMemObject (a);
  clReleaseMemObject (b);
  clReleaseMemObject (c);
}

/* Median GB/s of blocking writes and reads of `size` bytes, each after
   gap_us without commands.  */
static void
transfer_rate (dev *d, size_t size, int iters, double gap_us, double *wr,
               double *rd)
{
  cl_int err;
  cl_mem b = clCreateBuffer (d->ctx, CL_MEM_READ_WRITE, size, NULL, &err);
  CHECK (err);
  char *h = malloc (size);
  memset (h, 5, size);
  double *w = malloc (iters * sizeof (double)),
         *r = malloc (iters * sizeof (double));
  int k;
  for (k = -1; k < iters; ++k)
    {
      idle_us (gap_us);
      double t0 = now_us ();
      CHECK (clEnqueueWriteBuffer (d->q, b, CL_TRUE, 0, size, h, 0, NULL,
                                   NULL));
      double t1 = now_us ();
      idle_us (gap_us);
      double t2 = now_us ();
      CHECK (clEnqueueReadBuffer (d->q, b, CL_TRUE, 0, size, h, 0, NULL,
                                  NULL));
      double t3 = now_us ();
      if (k >= 0)
        {
          w[k] = size / (t1 - t0) / 1e3;
          r[k] = size / (t3 - t2) / 1e3;
        }
    }
  *wr = summarize (w, iters).median;
  *rd = summarize (r, iters).median;
  free (w);
  free (r);
  free (h);
  clReleaseMemObject (b);
}

static int
want (int argc, char **argv, int first, const char *part)
{
  int i;
  if (first >= argc)
    return 1;
  for (i = first; i < argc; ++i)
    if (strcmp (argv[i], part) == 0)
      return 1;
  return 0;
}

/* Chains per figure: a tenth of the iterations, at least 20 (20 alone
   left the 2-core machine's median to a few scheduling accidents).  */
static int
chains (int iters)
{
  return iters / 10 > 20 ? iters / 10 : 20;
}

/* A local device's figures, measured where the remote ones are not.  */
typedef struct native
{
  char name[256];
  cl_uint units;
  stats noop, chain, events, build, cmdbuf;
  double stream[NKERNELS];
  /* blocking 4-byte read and write, us: back to back, and each after
     IDLE_GAP_US without commands */
  double rd4, wr4, rd4_idle, wr4_idle;
} native;

/* A migration's source reads about this long after its last command (the
   client's clFinish, then the PUSH), its destination writes longer after
   its own; a device's threads may be asleep by then (PoCL's CPU device).  */
#define IDLE_GAP_US 100

/* 4-byte migrations per figure.  */
static int
moves4 (int iters)
{
  return iters / 4 > 40 ? iters / 4 : 40;
}

/* The native device's blocking 4-byte read and write (a migration's
   source reads, its destination writes), us, back to back and each after
   IDLE_GAP_US without commands.  */
static void
transfer4 (dev *d, int iters, native *n)
{
  double gwr, grd;
  transfer_rate (d, 4, moves4 (iters), 0, &gwr, &grd);
  n->rd4 = 4 / grd / 1e3;
  n->wr4 = 4 / gwr / 1e3;
  transfer_rate (d, 4, moves4 (iters), IDLE_GAP_US, &gwr, &grd);
  n->rd4_idle = 4 / grd / 1e3;
  n->wr4_idle = 4 / gwr / 1e3;
}

/* BENCH_NATIVE_ICD: the native device is another build of the same
   library as the client's (PoCL 5's CPU device beside our PoCL: one
   soname, so the second one loaded in a process finds no devices), so it
   runs in a child process of its own that loads only that library, before
   the remote parts; its figures come back through a pipe.  */
static int
native_child (const char *icd, int argc, char **argv, int first, int log2n,
              int iters, native *out)
{
  int fd[2];
  if (pipe (fd) != 0)
    return 0;
  fflush (stdout);
  pid_t pid = fork ();
  if (pid == 0)
    {
      close (fd[0]);
      /* A directory of .icd files (Debian 12's loader ignores
         OCL_ICD_FILENAMES), else the library itself.  */
      struct stat st;
      if (stat (icd, &st) == 0 && S_ISDIR (st.st_mode))
        setenv ("OCL_ICD_VENDORS", icd, 1);
      else
        setenv ("OCL_ICD_FILENAMES", icd, 1);
      /* The client's settings: with our build tree's POCL_BUILDING an
         installed PoCL finds no drivers, and POCL_DEVICES names the
         remote ones.  */
      unsetenv ("POCL_BUILDING");
      unsetenv ("POCL_DEVICES");
      dev local;
      native n;
      memset (&n, 0, sizeof (n));
      if (!find_devices (NULL, &local, NULL))
        _exit (1);
      setup (&local);
      strcpy (n.name, local.name);
      n.units = local.units;
      n.noop = noop_latency (&local, iters);
      if (want (argc, argv, first, "stream"))
        stream (&local, (size_t)1 << log2n, 20, n.stream);
      if (want (argc, argv, first, "chain"))
        n.chain = chain (&local, 100, chains (iters), 0);
      if (want (argc, argv, first, "events"))
        n.events = chain (&local, 100, chains (iters), 1);
      if (want (argc, argv, first, "build"))
        n.build = rebuild (&local, chains (iters));
      if (want (argc, argv, first, "cmdbuf"))
        n.cmdbuf = cmdbuf_chain (&local, 100, chains (iters));
      if (want (argc, argv, first, "migrate"))
        transfer4 (&local, iters, &n);
      _exit (write (fd[1], &n, sizeof (n)) == (ssize_t)sizeof (n) ? 0 : 1);
    }
  close (fd[1]);
  ssize_t got = pid > 0 ? read (fd[0], out, sizeof (*out)) : -1;
  close (fd[0]);
  int status = 0;
  if (pid > 0)
    waitpid (pid, &status, 0);
  return got == (ssize_t)sizeof (*out);
}

int
main (int argc, char **argv)
{
  int log2n = 25, iters = 1000, gib = 0, moves = 0, opt;
  while ((opt = getopt (argc, argv, "n:i:gm:")) != -1)
    switch (opt)
      {
      case 'n':
        log2n = atoi (optarg);
        break;
      case 'i':
        iters = atoi (optarg);
        break;
      case 'g':
        gib = 1;
        break;
      case 'm':
        moves = atoi (optarg);
        break;
      default:
        fprintf (stderr,
                 "usage: %s [-n LOG2_ELEMENTS] [-i ITERATIONS] [-g] "
                 "[-m MOVES] [noop|stream|chain|events|build|cmdbuf|migrate...]\n",
                 argv[0]);
        return 2;
      }
  /* Before this process loads any OpenCL library.  */
  const char *icd = getenv ("BENCH_NATIVE_ICD");
  native nat;
  memset (&nat, 0, sizeof (nat));
  if (icd && !native_child (icd, argc, argv, optind, log2n, iters, &nat))
    {
      fprintf (stderr, "no native figures from %s\n", icd);
      return 1;
    }
  dev remote, local, peer;
  if (!find_devices (&remote, icd ? NULL : &local, &peer))
    return 1;
  setup (&remote);
  if (icd)
    {
      strcpy (local.name, nat.name);
      local.units = nat.units;
    }
  else
    setup (&local);
  printf ("remote: %s\nnative: %s%s\n", remote.name, local.name,
          icd ? " (measured first, in a process of its own)" : "");

  stats rtt = loopback_rtt (iters);
  stats ln = icd ? nat.noop : noop_latency (&local, iters);
  stats rn = noop_latency (&remote, iters);
  stats rtt2 = loopback_rtt (iters);
  double r = (rtt.median + rtt2.median) / 2;
  double overhead = rn.median - ln.median;
  printf ("\n%-28s %10s %10s %10s\n", "latency (us)", "min", "median", "p90");
  printf ("%-28s %10.1f %10.1f %10.1f\n", "loopback round trip (RTT)",
          rtt.min < rtt2.min ? rtt.min : rtt2.min, r,
          rtt.p90 > rtt2.p90 ? rtt.p90 : rtt2.p90);
  printf ("%-28s %10.1f %10.1f %10.1f\n", "no-op, native", ln.min, ln.median,
          ln.p90);
  printf ("%-28s %10.1f %10.1f %10.1f\n", "no-op, remote", rn.min, rn.median,
          rn.p90);
  printf ("no-op: remote - native = %.1f us = RTT + %.1f us (target "
          "RTT + 10)\n",
          overhead, overhead - r);

  if (want (argc, argv, optind, "stream"))
    {
      size_t n = (size_t)1 << log2n;
      double nb[NKERNELS], rb[NKERNELS];
      int i;
      if (icd)
        memcpy (nb, nat.stream, sizeof (nb));
      else
        stream (&local, n, 20, nb);
      stream (&remote, n, 20, rb);
      printf ("\nstream kernels, 3 arrays of 2^%d doubles, best of 20, "
              "%u / %u partial sums (us; GB/s)\n",
              log2n, 4 * local.units, 4 * remote.units);
      printf ("%-8s %10s %8s %10s %8s %10s %8s %14s\n", "kernel", "native",
              "GB/s", "remote", "GB/s", "extra", "/no-op", "over target");
      for (i = 0; i < NKERNELS; ++i)
        {
          double extra = rb[i] - nb[i];
          double target = i == DOT ? 2 * r : r + 10;
          printf ("%-8s %10.1f %8.2f %10.1f %8.2f %10.1f %8.2f %14.1f\n",
                  knames[i], nb[i], kbytes[i] * (double)n / nb[i] / 1e3,
                  rb[i], kbytes[i] * (double)n / rb[i] / 1e3, extra,
                  extra / overhead, extra - target);
        }
      printf ("(extra: remote - native; /no-op: in units of the no-op's "
              "remote - native; over target: extra - (RTT + 10), dot: "
              "extra - 2 RTT)\n");
    }

  /* native first, then remote: in this order, not as two arguments */
  if (want (argc, argv, optind, "chain"))
    {
      stats lc = icd ? nat.chain : chain (&local, 100, chains (iters), 0);
      print_chain ("100-kernel chain (us)", "chain", lc,
                   chain (&remote, 100, chains (iters), 0), r);
    }
  if (want (argc, argv, optind, "events"))
    {
      stats le = icd ? nat.events : chain (&local, 100, chains (iters), 1);
      print_chain ("100 kernels, event chain (us)", "events", le,
                   chain (&remote, 100, chains (iters), 1), r);
    }

  if (want (argc, argv, optind, "build"))
    {
      stats lb = icd ? nat.build : rebuild (&local, chains (iters));
      print_chain ("program built again (us)", "build", lb,
                   rebuild (&remote, chains (iters)), r);
    }

  if (want (argc, argv, optind, "cmdbuf"))
    {
      stats lb = icd ? nat.cmdbuf : cmdbuf_chain (&local, 100, chains (iters));
      stats rb = cmdbuf_chain (&remote, 100, chains (iters));
      if (lb.min < 0 || rb.min < 0)
        printf ("\ncommand buffer: no cl_khr_command_buffer on the %s device\n",
                lb.min < 0 ? "native" : "remote");
      else
        print_chain ("100-kernel command buffer (us)", "cmdbuf", lb, rb, r);
    }

  if (peer.id && want (argc, argv, optind, "migrate"))
    {
      int n4 = moves4 (iters);
      stats m4 = migration (remote.id, peer.id, 4, n4);
      printf ("\nmigration between servers: %s -> %s\n", remote.name,
              peer.name);
      printf ("4-byte migration (us, %d moves): min %.1f, median %.1f, p90 "
              "%.1f; median/min %.1fx, median/remote no-op %.2fx (target "
              "1.5x)\n",
              n4, m4.min, m4.median, m4.p90, m4.median / m4.min,
              m4.median / rn.median);
      if (!icd)
        transfer4 (&local, iters, &nat);
      printf ("4-byte migration's floor: native blocking read %.1f + "
              "write %.1f + 1.5 RTT %.1f = %.1f us; 1.5x the remote "
              "no-op %.1f us\n",
              nat.rd4, nat.wr4, 1.5 * r, nat.rd4 + nat.wr4 + 1.5 * r,
              1.5 * rn.median);
      printf ("the same, each transfer %d us after the last command (as a "
              "move's are): read %.1f + write %.1f + 1.5 RTT = %.1f us\n",
              IDLE_GAP_US, nat.rd4_idle, nat.wr4_idle,
              nat.rd4_idle + nat.wr4_idle + 1.5 * r);
      double wr, rd;
      transfer_rate (&remote, 64u << 20, 5, 0, &wr, &rd);
      printf ("client 64 MiB write / read: %.2f / %.2f GB/s\n", wr, rd);
      static const size_t sizes[] = { 16u << 20, 64u << 20, 256u << 20,
                                      1u << 30 };
      size_t i;
      for (i = 0; i < 3u + gib; ++i)
        {
          int m = moves > 0 ? moves : i == 0 ? 10 : 4;
          stats w;
          stats s = migration_paired (remote.id, peer.id, sizes[i], m, &w);
          double gbs = sizes[i] / s.median / 1e3;
          double swr = sizes[i] / w.median / 1e3;
          printf ("migration %4zu MiB: median %.1f us, %.2f GB/s = %.0f%% of "
                  "the client's 64 MiB write, %.0f%% of its %zu MiB writes "
                  "between the moves (%.2f GB/s)\n",
                  sizes[i] >> 20, s.median, gbs, 100 * gbs / wr,
                  100 * gbs / swr, sizes[i] >> 20, swr);
        }
    }
  return 0;
}
