/* chain_cpu.c - CPU time against wall time of the 100-kernel chain (a
   kernel incrementing one counter, 100 launches, clFinish), on the first
   device whose name does ("remote") or does not ("native") contain
   "pocl-remote": N chains back to back, then the median chain, the wall
   time per chain and this process's CPU time per chain (all its threads:
   the application's and the driver's; natively PoCL's workers too).
   "rtt N" prints the loopback TCP round trip's median over N ping-pongs
   instead.  tools/bench.sh chain adds pocld's CPU time over the same chains,
   and the ratio of the remote chain to the native one plus the round trip.
   "events": as a SYCL runtime submits, on an out-of-order queue, each
   kernel waiting for the previous one's event, then a wait for the last
   event (tools/bench.sh sycl-chain).
     chain_cpu native|remote CHAINS [events]
     chain_cpu rtt ITERATIONS  */

#define CL_TARGET_OPENCL_VERSION 120
#include "bench_common.h"
#include <sys/resource.h>

static double
cpu_us (void)
{
  struct rusage r;
  getrusage (RUSAGE_SELF, &r);
  return (r.ru_utime.tv_sec + r.ru_stime.tv_sec) * 1e6 + r.ru_utime.tv_usec
         + r.ru_stime.tv_usec;
}

int
main (int argc, char **argv)
{
  if (argc != 3 && !(argc == 4 && strcmp (argv[3], "events") == 0))
    {
      fprintf (stderr,
               "usage: %s native|remote CHAINS [events], or rtt ITERATIONS\n",
               argv[0]);
      return 2;
    }
  int events = argc == 4;
  if (strcmp (argv[1], "rtt") == 0)
    {
      printf ("rtt: median %.1f us\n", loopback_rtt (atoi (argv[2])).median);
      return 0;
    }
  int remote = strcmp (argv[1], "remote") == 0, n = atoi (argv[2]);
  static const char *src = "__kernel void inc (__global int *c) { c[0] += 1; }\n";
  cl_platform_id ps[8];
  cl_uint np = 0, i, j;
  cl_device_id d = NULL;
  clGetPlatformIDs (8, ps, &np);
  for (i = 0; i < np && !d; ++i)
    {
      cl_device_id ds[16];
      cl_uint nd = 0;
      clGetDeviceIDs (ps[i], CL_DEVICE_TYPE_ALL, 16, ds, &nd);
      for (j = 0; j < nd && !d; ++j)
        {
          char name[256];
          clGetDeviceInfo (ds[j], CL_DEVICE_NAME, sizeof (name), name, NULL);
          if ((strstr (name, "pocl-remote") != NULL) == remote)
            d = ds[j];
        }
    }
  if (d == NULL || n < 1)
    {
      fprintf (stderr, "chain_cpu: no %s device\n", argv[1]);
      return 1;
    }
  cl_int e;
  cl_context c = clCreateContext (NULL, 1, &d, NULL, NULL, &e);
  cl_command_queue q = clCreateCommandQueue (
      c, d, events ? CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE : 0, &e);
  if (q == NULL)
    return 1;
  cl_program pr = clCreateProgramWithSource (c, 1, &src, NULL, &e);
  if (clBuildProgram (pr, 1, &d, NULL, NULL, NULL) != CL_SUCCESS)
    return 1;
  cl_kernel k = clCreateKernel (pr, "inc", &e);
  cl_mem b = clCreateBuffer (c, CL_MEM_READ_WRITE, 4, NULL, &e);
  clSetKernelArg (k, 0, sizeof (b), &b);
  size_t g = 1;
  double *v = malloc (n * sizeof (double));
  int r, s;
  for (r = -50; r < n; ++r)
    {
      static double c0, w0;
      if (r == 0)
        c0 = cpu_us (), w0 = now_us ();
      double t = now_us ();
      if (events)
        {
          cl_event prev = NULL, ev;
          for (s = 0; s < 100; ++s)
            {
              if (clEnqueueNDRangeKernel (q, k, 1, NULL, &g, NULL,
                                          prev != NULL, prev ? &prev : NULL,
                                          &ev)
                  != CL_SUCCESS)
                return 1;
              if (prev != NULL)
                clReleaseEvent (prev);
              prev = ev;
            }
          if (clWaitForEvents (1, &prev) != CL_SUCCESS)
            return 1;
          clReleaseEvent (prev);
        }
      else
        {
          for (s = 0; s < 100; ++s)
            clEnqueueNDRangeKernel (q, k, 1, NULL, &g, NULL, 0, NULL, NULL);
          if (clFinish (q) != CL_SUCCESS)
            return 1;
        }
      if (r >= 0)
        v[r] = now_us () - t;
      if (r == n - 1)
        {
          double w = now_us () - w0, cpu = cpu_us () - c0;
          printf ("%s: %d chains, median %.0f us, wall %.0f us and this "
                  "process's CPU %.0f us per chain\n",
                  argv[1], n, summarize (v, n).median, w / n, cpu / n);
        }
    }
  fflush (stdout);
  return 0;
}
