/* small_transfer_probe.c - how long a native OpenCL runtime takes to read
   and to write 4 bytes of a buffer, by three means: a blocking call, a
   non-blocking one flushed and waited for with clWaitForEvents, and one
   flushed and polled; then a blocking read right after a kernel on another
   queue wrote the buffer, as a migration's source reads it, also on an
   out-of-order queue with profiling (a PoCL client's default queue); a
   blocking transfer from and into page-locked memory (pocld's staging of
   reads), while another thread of the process polls a socket (pocld's
   readers spin), and some time after the transfer before (a migration's
   ends are idle between their hops); and, with two devices, the native
   counterpart of remote_bench's 4-byte migration. pocld's migrations of small
   buffers use the fastest means (doc/benchmarks.md).  Runs on the first
   platform.  */

#define CL_TARGET_OPENCL_VERSION 120
#include "probe.h"
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#define ITERS 2000

static const char *touch_src
    = "__kernel void touch (__global uchar *b) { b[0] = b[0]; }\n";

/* Median microseconds of a 4-byte read on q right after `touch` ran on
   q2 (finished): the buffer comes back from the kernel's queue.  With q2
   on another device: a migration there by clEnqueueMigrateMemObjects, as
   remote_bench measures it, each way in turn.  */
static double
after_kernel (cl_command_queue q, cl_command_queue q2, cl_kernel touch,
              cl_mem b, int migrate, double *t)
{
  size_t one = 1;
  int v, i;
  for (i = -100; i < ITERS; ++i)
    {
      cl_command_queue from = migrate && (i & 1) ? q : q2;
      cl_command_queue to = from == q ? q2 : q;
      if (clEnqueueNDRangeKernel (from, touch, 1, NULL, &one, NULL, 0, NULL,
                                  NULL)
          || clFinish (from))
        return -1;
      double t0 = now_us ();
      if (migrate ? clEnqueueMigrateMemObjects (to, 1, &b, 0, 0, NULL, NULL)
                        || clFinish (to)
                  : clEnqueueReadBuffer (to, b, CL_TRUE, 0, 4, &v, 0, NULL,
                                         NULL))
        return -1;
      if (i >= 0)
        t[i] = now_us () - t0;
    }
  qsort (t, ITERS, sizeof (double), cmp_double);
  return t[ITERS / 2];
}

/* Median microseconds of a blocking 4-byte transfer on q while a marker on
   q2 waits for a user event, as a destination pocld writes a migration's
   bytes while the MIGRATE_IN marker on the client's queue waits for them
   (doc/benchmarks.md, stop 19).  */
static void CL_CALLBACK
on_marker (cl_event e, cl_int status, void *arg)
{
  (void)e;
  (void)status;
  (void)arg;
}

/* With `callback`, the marker has a completion callback too, as pocld
   registers one on every command's event.  */
static double
gated (cl_context c, cl_command_queue q, cl_command_queue q2, cl_mem b,
       int write, int callback, double *t)
{
  int v = 7, i;
  for (i = -100; i < ITERS; ++i)
    {
      cl_int err;
      cl_event ue = clCreateUserEvent (c, &err), m = NULL;
      if (err || clEnqueueMarkerWithWaitList (q2, 1, &ue, &m)
          || (callback
              && clSetEventCallback (m, CL_COMPLETE, on_marker, NULL))
          || clFlush (q2))
        return -1;
      double t0 = now_us ();
      err = write ? clEnqueueWriteBuffer (q, b, CL_TRUE, 0, 4, &v, 0, NULL,
                                          NULL)
                  : clEnqueueReadBuffer (q, b, CL_TRUE, 0, 4, &v, 0, NULL,
                                         NULL);
      double dt = now_us () - t0;
      clSetUserEventStatus (ue, CL_COMPLETE);
      if (err || clWaitForEvents (1, &m))
        return -1;
      clReleaseEvent (m);
      clReleaseEvent (ue);
      if (i >= 0)
        t[i] = dt;
    }
  qsort (t, ITERS, sizeof (double), cmp_double);
  return t[ITERS / 2];
}

enum how
{
  BLOCKING,
  WAIT,
  POLL
};

static cl_int
transfer (cl_command_queue q, cl_mem b, int write, enum how how, int *v)
{
  cl_event e = NULL;
  cl_bool blocking = how == BLOCKING;
  cl_int err = write ? clEnqueueWriteBuffer (q, b, blocking, 0, 4, v, 0, NULL,
                                             blocking ? NULL : &e)
                     : clEnqueueReadBuffer (q, b, blocking, 0, 4, v, 0, NULL,
                                            blocking ? NULL : &e);
  if (err || blocking)
    return err;
  clFlush (q);
  if (how == WAIT)
    err = clWaitForEvents (1, &e);
  else
    {
      cl_int st = CL_QUEUED;
      while (!err && st > CL_COMPLETE)
        err = clGetEventInfo (e, CL_EVENT_COMMAND_EXECUTION_STATUS,
                              sizeof (st), &st, NULL);
    }
  clReleaseEvent (e);
  return err;
}

/* A thread that polls an idle socket, as pocld's readers do between
   messages.  */
static atomic_int polling;

static void *
poller (void *arg)
{
  int fd = *(int *)arg;
  char c;
  while (atomic_load (&polling))
    (void)!recv (fd, &c, 1, MSG_DONTWAIT);
  return NULL;
}

/* Median microseconds of a blocking 4-byte transfer from or into host,
   each `idle` microseconds after the one before (spent spinning): a
   migration's source and destination wait for the network between
   theirs.  */
static double
blocking_after (cl_command_queue q, cl_mem b, int write, int *host,
                double idle, double *t)
{
  int i;
  for (i = -100; i < ITERS; ++i)
    {
      double t0 = now_us ();
      while (now_us () - t0 < idle)
        ;
      t0 = now_us ();
      if (transfer (q, b, write, BLOCKING, host))
        return -1;
      if (i >= 0)
        t[i] = now_us () - t0;
    }
  qsort (t, ITERS, sizeof (double), cmp_double);
  return t[ITERS / 2];
}

static double
blocking (cl_command_queue q, cl_mem b, int write, int *host, double *t)
{
  return blocking_after (q, b, write, host, 0, t);
}

int
main (void)
{
  static const char *names[3]
      = { "blocking call", "flush + clWaitForEvents", "flush + polling" };
  cl_platform_id p;
  cl_device_id ds[2];
  cl_uint nd = 0;
  cl_int err;
  if (first_device (&p, &ds[0]))
    return 1;
  clGetDeviceIDs (p, CL_DEVICE_TYPE_ALL, 2, ds, &nd);
  cl_device_id d = ds[0];
  cl_context c = clCreateContext (NULL, nd, ds, NULL, NULL, &err);
  cl_command_queue q = clCreateCommandQueue (c, d, 0, &err);
  cl_command_queue q2 = clCreateCommandQueue (c, d, 0, &err);
  cl_command_queue other
      = nd > 1 ? clCreateCommandQueue (c, ds[1], 0, &err) : NULL;
  cl_mem b = clCreateBuffer (c, CL_MEM_READ_WRITE, 4, NULL, &err);
  cl_program pr = clCreateProgramWithSource (c, 1, &touch_src, NULL, &err);
  if (err || clBuildProgram (pr, nd, ds, NULL, NULL, NULL))
    return 1;
  cl_kernel touch = clCreateKernel (pr, "touch", &err);
  if (err || clSetKernelArg (touch, 0, sizeof (b), &b))
    return 1;
  double *t = malloc (ITERS * sizeof (double));
  int v = 7, write, how, i;
  printf ("4-byte transfers, native, median of %d (us):\n", ITERS);
  for (write = 0; write < 2; ++write)
    for (how = BLOCKING; how <= POLL; ++how)
      {
        for (i = -100; i < ITERS; ++i)
          {
            double t0 = now_us ();
            if (transfer (q, b, write, (enum how)how, &v))
              return 1;
            if (i >= 0)
              t[i] = now_us () - t0;
          }
        qsort (t, ITERS, sizeof (double), cmp_double);
        printf ("  %-5s %-26s %7.1f (min %.1f)\n", write ? "write" : "read",
                names[how], t[ITERS / 2], t[0]);
      }
  printf ("  read  blocking, after a kernel on another queue %7.1f\n",
          after_kernel (q, q2, touch, b, 0, t));
  /* PoCL's client migrates on hidden default queues made this way, and
     pocld makes their native queues alike.  */
  cl_command_queue ooo = clCreateCommandQueue (
      c, d, CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE | CL_QUEUE_PROFILING_ENABLE,
      &err);
  if (ooo != NULL)
    {
      printf ("  the same on an out-of-order, profiled queue    %7.1f\n",
              after_kernel (ooo, q2, touch, b, 0, t));
    }
  if (ooo != NULL)
    {
      int cb;
      for (cb = 0; cb < 2; ++cb)
        {
          const char *with = cb ? ", called back" : "";
          printf ("  read  blocking, a marker on another queue gated%s %6.1f\n",
                  with, gated (c, q, ooo, b, 0, cb, t));
          printf ("  write blocking, a marker on another queue gated%s %6.1f\n",
                  with, gated (c, q, ooo, b, 1, cb, t));
        }
    }
  /* pocld's staging of a read: a mapped buffer made with
     CL_MEM_ALLOC_HOST_PTR (page-locked on NVIDIA's).  */
  cl_mem pin = clCreateBuffer (c, CL_MEM_ALLOC_HOST_PTR, 4096, NULL, &err);
  int *host
      = pin ? clEnqueueMapBuffer (q2, pin, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE,
                                  0, 4096, 0, NULL, NULL, &err)
            : NULL;
  if (host != NULL)
    for (write = 0; write < 2; ++write)
      printf ("  %-5s blocking, page-locked host memory       %7.1f\n",
              write ? "write" : "read", blocking (q, b, write, host, t));
  int sv[2];
  pthread_t th;
  if (socketpair (AF_UNIX, SOCK_STREAM, 0, sv) == 0)
    {
      atomic_store (&polling, 1);
      if (pthread_create (&th, NULL, poller, &sv[0]) == 0)
        {
          for (write = 0; write < 2; ++write)
            printf ("  %-5s blocking, another thread polling a socket %5.1f\n",
                    write ? "write" : "read", blocking (q, b, write, &v, t));
          atomic_store (&polling, 0);
          pthread_join (th, NULL);
        }
      close (sv[0]);
      close (sv[1]);
    }
  static const double idles[] = { 20, 50, 200 };
  for (i = 0; i < 3; ++i)
    for (write = 0; write < 2; ++write)
      printf ("  %-5s blocking, %3.0f us after the one before     %7.1f\n",
              write ? "write" : "read", idles[i],
              blocking_after (q, b, write, &v, idles[i], t));
  if (host != NULL)
    clEnqueueUnmapMemObject (q2, pin, host, 0, NULL, NULL);
  if (pin != NULL)
    {
      clFinish (q2);
      clReleaseMemObject (pin);
    }
  if (other != NULL)
    printf ("  migration between the two devices, one way     %7.1f\n",
            after_kernel (q, other, touch, b, 1, t));
  free (t);
  if (ooo != NULL)
    clReleaseCommandQueue (ooo);
  clReleaseKernel (touch);
  clReleaseProgram (pr);
  if (other != NULL)
    clReleaseCommandQueue (other);
  clReleaseCommandQueue (q2);
  clReleaseMemObject (b);
  clReleaseCommandQueue (q);
  clReleaseContext (c);
  return 0;
}
