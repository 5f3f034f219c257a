/* completion_probe.c - how soon a native OpenCL runtime reports that a no-op
   kernel finished, by four means: clFinish, an event callback waking a
   waiting thread, clWaitForEvents, and polling the event status.  pocld
   picks callback or waiting per platform from these figures
   (doc/benchmarks.md).  Runs on the first device of the first platform.  */

#define CL_TARGET_OPENCL_VERSION 120
#include "probe.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static int done;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;

static void CL_CALLBACK
on_complete (cl_event e, cl_int status, void *user)
{
  pthread_mutex_lock (&mu);
  done = 1;
  pthread_cond_signal (&cv);
  pthread_mutex_unlock (&mu);
}

int
main (void)
{
  cl_platform_id p;
  cl_device_id d;
  cl_int err;
  if (first_device (&p, &d))
    return 1;
  cl_context c = clCreateContext (NULL, 1, &d, NULL, NULL, &err);
  cl_command_queue q = clCreateCommandQueue (c, d, 0, &err);
  const char *src = "__kernel void noop (__global int *x) {}";
  cl_program pr = clCreateProgramWithSource (c, 1, &src, NULL, &err);
  if (clBuildProgram (pr, 1, &d, NULL, NULL, NULL))
    return 1;
  cl_kernel k = clCreateKernel (pr, "noop", &err);
  cl_mem b = clCreateBuffer (c, 0, 4, NULL, &err);
  clSetKernelArg (k, 0, sizeof (b), &b);

  const int n = 3000;
  const char *names[] = { "clFinish", "callback + condition variable",
                          "clWaitForEvents", "polling the status" };
  double *v = malloc (n * sizeof (double));
  size_t g = 1;
  for (int mode = 0; mode < 4; ++mode)
    {
      for (int i = -100; i < n; ++i)
        {
          cl_event ev;
          cl_int st;
          done = 0;
          double t0 = now_us ();
          clEnqueueNDRangeKernel (q, k, 1, NULL, &g, NULL, 0, NULL, &ev);
          switch (mode)
            {
            case 0:
              clFinish (q);
              break;
            case 1:
              clSetEventCallback (ev, CL_COMPLETE, on_complete, NULL);
              clFlush (q);
              pthread_mutex_lock (&mu);
              while (!done)
                pthread_cond_wait (&cv, &mu);
              pthread_mutex_unlock (&mu);
              break;
            case 2:
              clFlush (q);
              clWaitForEvents (1, &ev);
              break;
            default:
              clFlush (q);
              do
                clGetEventInfo (ev, CL_EVENT_COMMAND_EXECUTION_STATUS,
                                sizeof (st), &st, NULL);
              while (st > 0);
            }
          if (i >= 0)
            v[i] = now_us () - t0;
          clReleaseEvent (ev);
        }
      qsort (v, n, sizeof (double), cmp_double);
      printf ("%-30s min %.1f  median %.1f  p99 %.1f us\n", names[mode], v[0],
              v[n / 2], v[n * 99 / 100]);
    }
  return 0;
}
