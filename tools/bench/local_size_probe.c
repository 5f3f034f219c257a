/* local_size_probe.c - how fast the native device runs the stream
   benchmark's copy kernel (tools/bench/overhead_bench.c, 2^25 doubles)
   with no local size given (the runtime picks) and with each power of two
   from 32 up to the device's maximum, best of 20 kernel + clFinish in us.
   Through remote the server's runtime used to get the local size that
   PoCL's core picked on the client (doc/benchmarks.md).  */

#define CL_TARGET_OPENCL_VERSION 120
#include "probe.h"

int
main (void)
{
  static const char *src
      = "__kernel void copy (__global const double *a, __global double *c)"
        "{ size_t i = get_global_id (0); c[i] = a[i]; }\n";
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
  size_t n = (size_t)1 << 25, max = 0;
  cl_mem a = clCreateBuffer (c, CL_MEM_READ_WRITE, n * 8, NULL, &err);
  cl_mem b = clCreateBuffer (c, CL_MEM_READ_WRITE, n * 8, NULL, &err);
  if (err != CL_SUCCESS)
    return 1;
  clSetKernelArg (k, 0, sizeof a, &a);
  clSetKernelArg (k, 1, sizeof b, &b);
  clGetDeviceInfo (d, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof max, &max, NULL);
  for (size_t l = 16; l <= max; l *= 2)
    {
      size_t local = l, *lp = l == 16 ? NULL : &local;
      double best = 1e30;
      for (int r = -2; r < 20; ++r)
        {
          double t0 = now_us ();
          if (clEnqueueNDRangeKernel (q, k, 1, NULL, &n, lp, 0, NULL, NULL)
              || clFinish (q))
            return 1;
          double t = now_us () - t0;
          if (r >= 0 && t < best)
            best = t;
        }
      if (lp == NULL)
        printf ("copy 2^25 doubles, no local size:   best %7.1f us\n", best);
      else
        printf ("copy 2^25 doubles, local size %4zu: best %7.1f us\n", l,
                best);
    }
  return 0;
}
