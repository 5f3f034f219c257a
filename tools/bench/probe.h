/* probe.h - what remote_bench and the native probes share: a monotonic
   clock in microseconds, a spin of some microseconds, a comparison of
   doubles for qsort, and the first device of the first platform (and a
   queue of it).  */

#ifndef POCL_REMOTE_PROBE_H
#define POCL_REMOTE_PROBE_H

#include <CL/cl.h>
#include <stdio.h>
#include <time.h>

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

#endif
