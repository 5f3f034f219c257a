/* pinned_rate_probe.c - how fast a native OpenCL runtime moves large
   blocks between a device and page-locked host memory (a mapped buffer made
   with CL_MEM_ALLOC_HOST_PTR, as pocld's staging is on NVIDIA's): blocking
   reads and writes of 1 to 256 MiB, median GB/s.  A streamed migration's
   source reads at this rate while the lanes send, its destination writes
   at it while they receive (pocld/migrate.cc, kPushReadMax).  Runs on the
   first device of the first platform.  */

#define CL_TARGET_OPENCL_VERSION 120
#include "probe.h"
#include <stdlib.h>

#define ITERS 10

int
main (void)
{
  cl_device_id d;
  cl_context c;
  cl_command_queue q;
  cl_int err;
  if (first_queue (&d, &c, &q))
    return 1;
  const size_t max = (size_t)256 << 20;
  cl_mem b = clCreateBuffer (c, CL_MEM_READ_WRITE, max, NULL, &err);
  cl_mem pin = clCreateBuffer (c, CL_MEM_ALLOC_HOST_PTR, max, NULL, &err);
  if (err)
    return 1;
  char *host = clEnqueueMapBuffer (q, pin, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE,
                                   0, max, 0, NULL, NULL, &err);
  if (host == NULL)
    return 1;
  double r[ITERS], w[ITERS];
  size_t n;
  printf ("page-locked transfers, native, median of %d (GB/s):\n", ITERS);
  for (n = (size_t)1 << 20; n <= max; n *= 4)
    {
      int i;
      for (i = -2; i < ITERS; ++i)
        {
          double t0 = now_us ();
          if (clEnqueueWriteBuffer (q, b, CL_TRUE, 0, n, host, 0, NULL, NULL))
            return 1;
          double t1 = now_us ();
          if (clEnqueueReadBuffer (q, b, CL_TRUE, 0, n, host, 0, NULL, NULL))
            return 1;
          double t2 = now_us ();
          if (i >= 0)
            {
              w[i] = n / (t1 - t0) / 1e3;
              r[i] = n / (t2 - t1) / 1e3;
            }
        }
      qsort (w, ITERS, sizeof (double), cmp_double);
      qsort (r, ITERS, sizeof (double), cmp_double);
      printf ("  %4zu MiB: read %6.2f, write %6.2f\n", n >> 20, r[ITERS / 2],
              w[ITERS / 2]);
    }
  clEnqueueUnmapMemObject (q, pin, host, 0, NULL, NULL);
  clFinish (q);
  clReleaseMemObject (pin);
  clReleaseMemObject (b);
  clReleaseCommandQueue (q);
  clReleaseContext (c);
  return 0;
}
