/* small_transfer_probe.c - how long a native OpenCL runtime takes to read
   and to write 4 bytes of a buffer, by three means: a blocking call, a
   non-blocking one flushed and waited for with clWaitForEvents, and one
   flushed and polled.  pocld's migrations of small buffers use the fastest
   (doc/benchmarks.md).  Runs on the first device of the first platform.  */

#define CL_TARGET_OPENCL_VERSION 120
#include "probe.h"
#include <stdlib.h>

#define ITERS 2000

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
  cl_int err
      = write ? clEnqueueWriteBuffer (q, b, blocking, 0, 4, v, 0, NULL,
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

int
main (void)
{
  static const char *names[3]
      = { "blocking call", "flush + clWaitForEvents", "flush + polling" };
  cl_platform_id p;
  cl_device_id d;
  cl_int err;
  if (first_device (&p, &d))
    return 1;
  cl_context c = clCreateContext (NULL, 1, &d, NULL, NULL, &err);
  cl_command_queue q = clCreateCommandQueue (c, d, 0, &err);
  cl_mem b = clCreateBuffer (c, CL_MEM_READ_WRITE, 4, NULL, &err);
  if (err)
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
  free (t);
  clReleaseMemObject (b);
  clReleaseCommandQueue (q);
  clReleaseContext (c);
  return 0;
}
