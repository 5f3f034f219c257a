/* arg_info_probe.c - builds a program holding an argument-less kernel with
   and without -cl-kernel-arg-info on the first device of the first platform.
   NVIDIA's compiler fails the former (ptxas: "Parsing error near '}'"),
   which is why pocld retries builds without the option
   (doc/benchmarks.md).  */

#define CL_TARGET_OPENCL_VERSION 120
#include "probe.h"
#include <stdio.h>

int
main (void)
{
  cl_platform_id p;
  cl_device_id d;
  cl_int err;
  if (first_device (&p, &d))
    return 1;
  cl_context c = clCreateContext (NULL, 1, &d, NULL, NULL, &err);
  const char *srcs[] = { "__kernel void noop (void) {}\n",
                         "__kernel void inc (__global int *c) { c[0]++; }\n" };
  const char *opts[] = { "", "-cl-kernel-arg-info" };
  for (int s = 0; s < 2; ++s)
    for (int o = 0; o < 2; ++o)
      {
        cl_program pr = clCreateProgramWithSource (c, 1, &srcs[s], NULL, &err);
        err = clBuildProgram (pr, 1, &d, opts[o], NULL, NULL);
        printf ("%s kernel, options '%s': clBuildProgram = %d\n",
                s ? "one-argument" : "argument-less", opts[o], err);
        clReleaseProgram (pr);
      }
  return 0;
}
