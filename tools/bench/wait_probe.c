/* wait_probe.c - how soon each way of learning a command's completion
   returns on the native device: clFinish, clWaitForEvents, an event
   callback, polling the event's status, and a second thread blocked in
   clWaitForEvents (pocld's waiter); for a no-op and for a copy kernel over
   2^25 doubles (about 200 us on an H100), 40 runs each, min and median in
   us.  On NVIDIA's OpenCL a callback set while the kernel still runs comes
   about 20 ms late (tools/gpu_bench.sh runs this; doc/benchmarks.md).  */

#define CL_TARGET_OPENCL_VERSION 120
#include "probe.h"
#include <pthread.h>
#include <stdlib.h>

#define RUNS 40

static volatile int called_back, waited;
static cl_event waited_for;

static void CL_CALLBACK
on_complete (cl_event e, cl_int s, void *u)
{
  called_back = 1;
}

static void *
waiter (void *arg)
{
  clWaitForEvents (1, &waited_for);
  waited = 1;
  return NULL;
}

int
main (void)
{
  static const char *names[] = { "clFinish", "clWaitForEvents",
                                 "callback (main spins on a flag)",
                                 "polling the event status",
                                 "a thread in clWaitForEvents" };
  static const char *src
      = "__kernel void copy (__global const double *a, __global double *b)"
        "{ size_t i = get_global_id (0); b[i] = a[i]; }\n"
        "__kernel void noop (void) {}\n";
  cl_platform_id p;
  cl_device_id d;
  cl_int err;
  if (first_device (&p, &d))
    return 1;
  cl_context c = clCreateContext (NULL, 1, &d, NULL, NULL, &err);
  cl_command_queue q = clCreateCommandQueue (c, d, 0, &err);
  cl_program pr = clCreateProgramWithSource (c, 1, &src, NULL, &err);
  if (clBuildProgram (pr, 1, &d, NULL, NULL, NULL) != CL_SUCCESS)
    return 1;
  cl_kernel kc = clCreateKernel (pr, "copy", &err);
  cl_kernel kn = clCreateKernel (pr, "noop", &err);
  size_t n = (size_t)1 << 25, one = 1;
  cl_mem a = clCreateBuffer (c, CL_MEM_READ_WRITE, n * 8, NULL, &err);
  cl_mem b = clCreateBuffer (c, CL_MEM_READ_WRITE, n * 8, NULL, &err);
  if (err != CL_SUCCESS)
    return 1;
  clSetKernelArg (kc, 0, sizeof a, &a);
  clSetKernelArg (kc, 1, sizeof b, &b);
  for (int k = 0; k < 2; ++k)
    for (int m = 0; m < 5; ++m)
      {
        double v[RUNS];
        for (int r = 0; r < RUNS; ++r)
          {
            cl_event ev;
            called_back = waited = 0;
            double t0 = now_us ();
            if (k == 0)
              clEnqueueNDRangeKernel (q, kc, 1, NULL, &n, NULL, 0, NULL, &ev);
            else
              clEnqueueNDRangeKernel (q, kn, 1, NULL, &one, NULL, 0, NULL,
                                      &ev);
            if (m == 0)
              clFinish (q);
            else if (m == 1)
              clWaitForEvents (1, &ev);
            else if (m == 2)
              {
                clSetEventCallback (ev, CL_COMPLETE, on_complete, NULL);
                clFlush (q);
                while (!called_back)
                  ;
              }
            else if (m == 3)
              {
                cl_int st;
                clFlush (q);
                do
                  clGetEventInfo (ev, CL_EVENT_COMMAND_EXECUTION_STATUS,
                                  sizeof st, &st, NULL);
                while (st > CL_COMPLETE);
              }
            else
              {
                pthread_t t;
                waited_for = ev;
                clFlush (q);
                pthread_create (&t, NULL, waiter, NULL);
                while (!waited)
                  ;
                pthread_join (t, NULL);
              }
            v[r] = now_us () - t0;
            clFinish (q);
            clReleaseEvent (ev);
          }
        qsort (v, RUNS, sizeof (double), cmp_double);
        printf ("%-22s %-34s min %8.1f median %8.1f us\n",
                k ? "no-op" : "copy 2^25 doubles", names[m], v[0],
                v[RUNS / 2]);
      }
  return 0;
}
