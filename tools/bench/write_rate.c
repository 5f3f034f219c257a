/* write_rate.c - the median rate of an application's blocking writes of 16
   and 256 MiB to the first device of the first platform (a remote one
   through POCL_DEVICES=remote), 15 of each after two untimed:
   tools/gpu_dma_beside.sh compares it alone and beside another device's
   transfers.  */

#define CL_TARGET_OPENCL_VERSION 120
#include "probe.h"
#include <stdlib.h>
#include <string.h>

#define ITERS 15

int
main (void)
{
  static const size_t sizes[] = { (size_t)16 << 20, (size_t)256 << 20 };
  cl_device_id d;
  cl_context c;
  cl_command_queue q;
  cl_int err;
  if (first_queue (&d, &c, &q))
    return 1;
  int s;
  for (s = 0; s < 2; ++s)
    {
      size_t n = sizes[s];
      cl_mem b = clCreateBuffer (c, CL_MEM_READ_WRITE, n, NULL, &err);
      char *h = malloc (n);
      double v[ITERS];
      int i;
      if (b == NULL || h == NULL)
        return 1;
      memset (h, 3, n);
      for (i = -2; i < ITERS; ++i)
        {
          double t0 = now_us ();
          if (clEnqueueWriteBuffer (q, b, CL_TRUE, 0, n, h, 0, NULL, NULL))
            return 1;
          if (i >= 0)
            v[i] = n / (now_us () - t0) / 1e3;
        }
      qsort (v, ITERS, sizeof (double), cmp_double);
      printf ("%zu MiB writes: %.2f GB/s\n", n >> 20, v[ITERS / 2]);
      free (h);
      clReleaseMemObject (b);
    }
  clReleaseCommandQueue (q);
  clReleaseContext (c);
  return 0;
}
