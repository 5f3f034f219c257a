/* read_probe.c - how soon a small read queued behind a kernel completes on
   the native device, by the host memory it reads into and by who waits: the
   dot of tools/bench/overhead_bench.c (a copy-sized kernel, then its 528
   partial sums read back) as an application runs it (a blocking read) and
   as pocld runs it (a non-blocking read into staging, a waiter thread
   waiting for the kernel's event, then for the read's).  Prints, over 40
   runs, the median time from the kernel's enqueue to the read's end, and
   from the kernel's end (as its waiter saw it) to the read's.  On NVIDIA a
   non-blocking read into pageable memory finishes tens of microseconds
   after the kernel where one into page-locked memory does not
   (doc/benchmarks.md).  */

#define CL_TARGET_OPENCL_VERSION 120
#include "probe.h"
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define RUNS 40
#define SUMS 528

static cl_event wait_ev[2];
static double seen[2];
static int go, done;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;

/* pocld's waiter: parked on a condition variable, then clWaitForEvents on
   each event in order.  */
static void *
waiter (void *arg)
{
  (void)arg;
  for (;;)
    {
      pthread_mutex_lock (&mu);
      while (!go)
        pthread_cond_wait (&cv, &mu);
      go = 0;
      pthread_mutex_unlock (&mu);
      if (wait_ev[0] == NULL)
        return NULL;
      for (int i = 0; i < 2; ++i)
        {
          clWaitForEvents (1, &wait_ev[i]);
          seen[i] = now_us ();
        }
      __atomic_store_n (&done, 1, __ATOMIC_RELEASE);
    }
}

int
main (void)
{
  static const char *src
      = "__kernel void copy (__global const double *a, __global double *b)"
        "{ size_t i = get_global_id (0); b[i] = a[i]; }\n";
  static const char *names[] = { "blocking read (the application)",
                                 "pageable, waited in this thread",
                                 "pinned, waited in this thread",
                                 "pageable, pocld's waiter thread",
                                 "pinned, pocld's waiter thread" };
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
  cl_kernel k = clCreateKernel (pr, "copy", &err);
  size_t n = (size_t)1 << 25;
  cl_mem a = clCreateBuffer (c, CL_MEM_READ_WRITE, n * 8, NULL, &err);
  cl_mem b = clCreateBuffer (c, CL_MEM_READ_WRITE, n * 8, NULL, &err);
  cl_mem pin = clCreateBuffer (c, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR,
                               SUMS * 8, NULL, &err);
  if (err != CL_SUCCESS)
    return 1;
  double *pinned = clEnqueueMapBuffer (q, pin, CL_TRUE,
                                       CL_MAP_READ | CL_MAP_WRITE, 0, SUMS * 8,
                                       0, NULL, NULL, &err);
  double *pageable = malloc (SUMS * 8);
  if (pinned == NULL || pageable == NULL)
    return 1;
  memset (pageable, 0, SUMS * 8);
  clSetKernelArg (k, 0, sizeof a, &a);
  clSetKernelArg (k, 1, sizeof b, &b);
  pthread_t t;
  pthread_create (&t, NULL, waiter, NULL);
  for (int m = 0; m < 5; ++m)
    {
      double total[RUNS], after[RUNS];
      for (int r = -3; r < RUNS; ++r)
        {
          cl_event ke, re;
          double *dst = m == 2 || m == 4 ? pinned : pageable;
          double t0 = now_us (), kend = 0, rend;
          clEnqueueNDRangeKernel (q, k, 1, NULL, &n, NULL, 0, NULL, &ke);
          if (m == 0)
            {
              clEnqueueReadBuffer (q, b, CL_TRUE, 0, SUMS * 8, dst, 0, NULL,
                                   &re);
              rend = now_us ();
            }
          else
            {
              clEnqueueReadBuffer (q, b, CL_FALSE, 0, SUMS * 8, dst, 0, NULL,
                                   &re);
              clFlush (q);
              if (m <= 2)
                {
                  clWaitForEvents (1, &ke);
                  kend = now_us ();
                  clWaitForEvents (1, &re);
                  rend = now_us ();
                }
              else
                {
                  wait_ev[0] = ke;
                  wait_ev[1] = re;
                  pthread_mutex_lock (&mu);
                  go = 1;
                  pthread_cond_signal (&cv);
                  pthread_mutex_unlock (&mu);
                  while (!__atomic_load_n (&done, __ATOMIC_ACQUIRE))
                    ;
                  done = 0;
                  kend = seen[0];
                  rend = seen[1];
                }
            }
          if (r >= 0)
            {
              total[r] = rend - t0;
              after[r] = kend > 0 ? rend - kend : 0;
            }
          clReleaseEvent (ke);
          clReleaseEvent (re);
        }
      qsort (total, RUNS, sizeof (double), cmp_double);
      qsort (after, RUNS, sizeof (double), cmp_double);
      printf ("copy 2^25 doubles + %d-byte read, %-32s total %7.1f, read "
              "after the kernel %6.1f us (medians)\n",
              SUMS * 8, names[m], total[RUNS / 2], after[RUNS / 2]);
    }
  wait_ev[0] = NULL;
  pthread_mutex_lock (&mu);
  go = 1;
  pthread_cond_signal (&cv);
  pthread_mutex_unlock (&mu);
  pthread_join (t, NULL);
  return 0;
}
