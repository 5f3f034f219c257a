/* chain_probe.c - what a native OpenCL runtime charges for the ways pocld
   can drive a chain of 100 dependent kernels on an in-order queue: the
   application's own way (enqueue all, clFinish), a flush after every
   enqueue (pocld flushes when its reader would block, so a chain that
   arrives slowly is flushed command by command), an event per command
   waited for in order by another thread (pocld's waiter), or noticed by a
   callback, events released at once, and an event (or a marker with one)
   on every tenth command only, as pocld does on NVIDIA (doc/pocld.md).
   Runs on the first device of the first platform; medians in us.  */

#define CL_TARGET_OPENCL_VERSION 120
#include "probe.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LEN 100
#define ITERS 30

enum
{
  PLAIN,
  FLUSH_EACH,
  WAITER,
  WAITER_POLL,
  CALLBACKS,
  WAITER_FLUSH_EACH,
  RELEASED,
  EVERY_TENTH,
  MARKER_TENTH,
  MODES
};
static const char *names[MODES]
    = { "enqueue all, clFinish",
        "clFlush after each",
        "events, waiter thread (clWaitForEvents)",
        "events, waiter thread (polls status)",
        "events, a callback each",
        "events, waiter, clFlush after each",
        "events, released at once",
        "an event on every 10th, waiter",
        "a marker with event after every 10th, waiter" };

static cl_command_queue q;
static cl_kernel k;
static cl_event evs[LEN];
static int ready, done_count;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;

static void CL_CALLBACK
on_complete (cl_event e, cl_int status, void *user)
{
  pthread_mutex_lock (&mu);
  ++done_count;
  pthread_cond_signal (&cv);
  pthread_mutex_unlock (&mu);
}

/* Waits for evs[0..LEN) in order, as pocld's waiter does.  */
static void *
waiter (void *arg)
{
  int poll = *(int *)arg, i;
  for (i = 0; i < LEN; ++i)
    {
      if (evs[i] == NULL)
        continue;
      pthread_mutex_lock (&mu);
      while (ready <= i)
        pthread_cond_wait (&cv, &mu);
      pthread_mutex_unlock (&mu);
      if (poll)
        {
          cl_int st = CL_QUEUED;
          while (st > CL_COMPLETE)
            clGetEventInfo (evs[i], CL_EVENT_COMMAND_EXECUTION_STATUS,
                            sizeof st, &st, NULL);
        }
      else
        clWaitForEvents (1, &evs[i]);
      clReleaseEvent (evs[i]);
    }
  return NULL;
}

static double
run (int mode)
{
  size_t g = 1;
  int i, poll = mode == WAITER_POLL;
  int use_events = mode >= WAITER && mode != MARKER_TENTH;
  int flush = mode == FLUSH_EACH || mode == WAITER_FLUSH_EACH;
  pthread_t th;
  ready = done_count = 0;
  int threaded = mode == WAITER || mode == WAITER_POLL
                 || mode == WAITER_FLUSH_EACH || mode == EVERY_TENTH
                 || mode == MARKER_TENTH;
  memset (evs, 0, sizeof evs);
  if (threaded)
    pthread_create (&th, NULL, waiter, &poll);
  double t0 = now_us ();
  for (i = 0; i < LEN; ++i)
    {
      int tenth = i % 10 == 9;
      clEnqueueNDRangeKernel (q, k, 1, NULL, &g, NULL, 0, NULL,
                              use_events && (mode != EVERY_TENTH || tenth)
                                  ? &evs[i]
                                  : NULL);
      if (mode == MARKER_TENTH && tenth)
        clEnqueueMarkerWithWaitList (q, 0, NULL, &evs[i]);
      if (mode == RELEASED)
        clReleaseEvent (evs[i]);
      if (mode == CALLBACKS)
        {
          clSetEventCallback (evs[i], CL_COMPLETE, on_complete, NULL);
          clReleaseEvent (evs[i]);
        }
      if (flush)
        clFlush (q);
      if (threaded)
        {
          pthread_mutex_lock (&mu);
          ready = i + 1;
          pthread_cond_signal (&cv);
          pthread_mutex_unlock (&mu);
        }
    }
  if (threaded)
    pthread_join (th, NULL);
  else if (mode == CALLBACKS)
    {
      pthread_mutex_lock (&mu);
      while (done_count < LEN)
        pthread_cond_wait (&cv, &mu);
      pthread_mutex_unlock (&mu);
    }
  clFinish (q);
  return now_us () - t0;
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
  q = clCreateCommandQueue (c, d, 0, &err);
  const char *src = "__kernel void inc (__global int *x) { ++*x; }";
  cl_program pr = clCreateProgramWithSource (c, 1, &src, NULL, &err);
  if (clBuildProgram (pr, 1, &d, NULL, NULL, NULL))
    return 1;
  k = clCreateKernel (pr, "inc", &err);
  cl_mem buf = clCreateBuffer (c, CL_MEM_READ_WRITE, 4, NULL, &err);
  clSetKernelArg (k, 0, sizeof buf, &buf);
  int mode, i, zero = 0, got = 0;
  printf ("100 dependent kernels, native, median of %d (us):\n", ITERS);
  for (mode = 0; mode < MODES; ++mode)
    {
      double v[ITERS];
      for (i = -3; i < ITERS; ++i)
        {
          clEnqueueWriteBuffer (q, buf, CL_TRUE, 0, 4, &zero, 0, NULL, NULL);
          double t = run (mode);
          clEnqueueReadBuffer (q, buf, CL_TRUE, 0, 4, &got, 0, NULL, NULL);
          if (got != LEN)
            {
              fprintf (stderr, "%s: counted %d\n", names[mode], got);
              return 1;
            }
          if (i >= 0)
            v[i] = t;
        }
      qsort (v, ITERS, sizeof v[0], cmp_double);
      printf ("  %-42s %8.1f (min %.1f)\n", names[mode], v[ITERS / 2], v[0]);
    }
  return 0;
}
