/* test_trace.c - the client of remote/trace (test_trace.sh): commands whose
   traces test_trace.py checks.  On the first remote device: a write of
   TRACE_WRITE bytes, TRACE_CHAIN dependent kernels, a read.  With a second
   remote device (another server): the buffer migrated there, one kernel
   there, and a read from there.  A kernel run first on each device
   (clFinish) builds the kernel there, so that the traced chain shows
   commands, not the first launch's compilation.  Every result is checked.
   The event ids follow the order of the commands: doc/tracing.md's
   pictures select them (tools/trace_plot.py --ids).  With the argument
   "hold", the client then keeps its sessions open for up to 60 s, so that
   the servers are stopped under it (their traces are written on SIGTERM).  */

#define TEST_NAME "trace"
#include "remote_test_util.c"

#define TRACE_N (64 * 1024)
#define TRACE_WRITE (TRACE_N * sizeof (cl_int))
#define TRACE_CHAIN 10

static const char *src
    = "__kernel void inc (__global int *a) { a[get_global_id (0)] += 1; }\n";

int
main (int argc, char **argv)
{
  cl_device_id devs[64], remote[2];
  cl_uint n = all_devices (devs, 64), nr = 0;
  char name[512];
  for (cl_uint i = 0; i < n && nr < 2; ++i)
    {
      device_name (devs[i], name, sizeof (name));
      if (strstr (name, REMOTE_NAME_PART))
        remote[nr++] = devs[i];
    }
  if (nr == 0)
    fail ("no remote device");
  cl_int err;
  cl_context ctx = clCreateContext (NULL, nr, remote, NULL, NULL, &err);
  CHECK_ERR (err, "clCreateContext");
  cl_command_queue q[2];
  for (cl_uint i = 0; i < nr; ++i)
    {
      q[i] = clCreateCommandQueue (ctx, remote[i], 0, &err);
      CHECK_ERR (err, "clCreateCommandQueue");
    }
  cl_program p = clCreateProgramWithSource (ctx, 1, &src, NULL, &err);
  CHECK_ERR (err, "clCreateProgramWithSource");
  CHECK (clBuildProgram (p, nr, remote, NULL, NULL, NULL));
  cl_kernel k = clCreateKernel (p, "inc", &err);
  CHECK_ERR (err, "clCreateKernel");
  cl_mem buf
      = clCreateBuffer (ctx, CL_MEM_READ_WRITE, TRACE_WRITE, NULL, &err);
  CHECK_ERR (err, "clCreateBuffer");
  cl_int *host = xmalloc (TRACE_WRITE);
  for (int i = 0; i < TRACE_N; ++i)
    host[i] = i;
  size_t g = TRACE_N;
  /* the warm-up kernels on buffers of their own: no migrations */
  for (cl_uint i = 0; i < nr; ++i)
    {
      cl_mem scratch
          = clCreateBuffer (ctx, CL_MEM_READ_WRITE, TRACE_WRITE, NULL, &err);
      CHECK_ERR (err, "clCreateBuffer");
      CHECK (clSetKernelArg (k, 0, sizeof (scratch), &scratch));
      CHECK (clEnqueueNDRangeKernel (q[i], k, 1, NULL, &g, NULL, 0, NULL,
                                     NULL));
      CHECK (clFinish (q[i]));
      CHECK (clReleaseMemObject (scratch));
    }
  CHECK (clSetKernelArg (k, 0, sizeof (buf), &buf));
  CHECK (clEnqueueWriteBuffer (q[0], buf, CL_FALSE, 0, TRACE_WRITE, host, 0,
                               NULL, NULL));
  for (int i = 0; i < TRACE_CHAIN; ++i)
    CHECK (clEnqueueNDRangeKernel (q[0], k, 1, NULL, &g, NULL, 0, NULL, NULL));
  CHECK (clEnqueueReadBuffer (q[0], buf, CL_TRUE, 0, TRACE_WRITE, host, 0,
                              NULL, NULL));
  for (int i = 0; i < TRACE_N; ++i)
    if (host[i] != i + TRACE_CHAIN)
      fail ("chain: element %d is %d, expected %d", i, host[i],
            i + TRACE_CHAIN);
  int expect = TRACE_CHAIN;
  if (nr == 2)
    {
      cl_event moved;
      CHECK (clEnqueueMigrateMemObjects (q[1], 1, &buf, 0, 0, NULL, &moved));
      CHECK (clEnqueueNDRangeKernel (q[1], k, 1, NULL, &g, NULL, 1, &moved,
                                     NULL));
      CHECK (clEnqueueReadBuffer (q[1], buf, CL_TRUE, 0, TRACE_WRITE, host, 0,
                                  NULL, NULL));
      CHECK (clReleaseEvent (moved));
      expect++;
      for (int i = 0; i < TRACE_N; ++i)
        if (host[i] != i + expect)
          fail ("migration: element %d is %d, expected %d", i, host[i],
                i + expect);
    }
  free (host);
  clReleaseMemObject (buf);
  clReleaseKernel (k);
  clReleaseProgram (p);
  for (cl_uint i = 0; i < nr; ++i)
    clReleaseCommandQueue (q[i]);
  clReleaseContext (ctx);
  printf ("trace: client done: %d kernels on %u servers, results right\n",
          expect, nr);
  if (argc > 1 && strcmp (argv[1], "hold") == 0)
    {
      printf ("trace: holding the sessions\n");
      fflush (stdout);
      sleep (60);
    }
  return 0;
}
