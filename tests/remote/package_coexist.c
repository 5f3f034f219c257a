/* package_coexist.c - every OpenCL platform the ICD loader finds, each of its
   devices with a kernel run and its result checked: two PoCL libraries in one
   process (package/install, test_package.sh).

   Usage: package_coexist [LIBRARY]
   LIBRARY, where given, is dlopen()ed (RTLD_NOW | RTLD_LOCAL) before the first
   OpenCL call, so that it is loaded before the ICD loader loads the others:
   a library that a plugin of the process brought in earlier.
   Prints one line per platform ("platform P: N devices") and per device
   ("device P.D: <name>: kernel ok" or what failed); exits 0 only when every
   platform has a device and every kernel's result is right.  */

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#define N 1024
#define MAX_PLATFORMS 8
#define MAX_DEVICES 8

static const char *source
    = "__kernel void scramble (__global const uint *in, __global uint *out)\n"
      "{\n"
      "  size_t i = get_global_id (0);\n"
      "  out[i] = (in[i] * 2654435761u) ^ (uint)i;\n"
      "}\n";

#define TRY(ok, what)                                                         \
  do                                                                          \
    {                                                                         \
      if (!(ok))                                                              \
        {                                                                     \
          *why = (what);                                                      \
          goto out;                                                           \
        }                                                                     \
    }                                                                         \
  while (0)

/* One kernel on DEV; 0 when every output word is right, else WHY says what
   failed.  */
static int
run_kernel (cl_device_id dev, const char **why)
{
  static cl_uint in[N], out[N];
  cl_int err;
  cl_context ctx = NULL;
  cl_command_queue q = NULL;
  cl_program prog = NULL;
  cl_kernel k = NULL;
  cl_mem bin = NULL, bout = NULL;
  size_t global = N;
  int rc = 1;
  unsigned i;

  for (i = 0; i < N; ++i)
    {
      in[i] = i * 7919u + 13u;
      out[i] = 0;
    }
  ctx = clCreateContext (NULL, 1, &dev, NULL, NULL, &err);
  TRY (err == CL_SUCCESS, "clCreateContext");
  q = clCreateCommandQueue (ctx, dev, 0, &err);
  TRY (err == CL_SUCCESS, "clCreateCommandQueue");
  prog = clCreateProgramWithSource (ctx, 1, &source, NULL, &err);
  TRY (err == CL_SUCCESS, "clCreateProgramWithSource");
  err = clBuildProgram (prog, 1, &dev, NULL, NULL, NULL);
  TRY (err == CL_SUCCESS, "clBuildProgram");
  k = clCreateKernel (prog, "scramble", &err);
  TRY (err == CL_SUCCESS, "clCreateKernel");
  bin = clCreateBuffer (ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                        sizeof (in), in, &err);
  TRY (err == CL_SUCCESS, "clCreateBuffer");
  bout = clCreateBuffer (ctx, CL_MEM_WRITE_ONLY, sizeof (out), NULL, &err);
  TRY (err == CL_SUCCESS, "clCreateBuffer");
  err = clSetKernelArg (k, 0, sizeof (bin), &bin);
  TRY (err == CL_SUCCESS, "clSetKernelArg");
  err = clSetKernelArg (k, 1, sizeof (bout), &bout);
  TRY (err == CL_SUCCESS, "clSetKernelArg");
  err = clEnqueueNDRangeKernel (q, k, 1, NULL, &global, NULL, 0, NULL, NULL);
  TRY (err == CL_SUCCESS, "clEnqueueNDRangeKernel");
  err = clEnqueueReadBuffer (q, bout, CL_TRUE, 0, sizeof (out), out, 0, NULL,
                             NULL);
  TRY (err == CL_SUCCESS, "clEnqueueReadBuffer");
  *why = "wrong result";
  for (i = 0; i < N; ++i)
    if (out[i] != ((in[i] * 2654435761u) ^ i))
      goto out;
  rc = 0;
out:
  if (bout)
    clReleaseMemObject (bout);
  if (bin)
    clReleaseMemObject (bin);
  if (k)
    clReleaseKernel (k);
  if (prog)
    clReleaseProgram (prog);
  if (q)
    clReleaseCommandQueue (q);
  if (ctx)
    clReleaseContext (ctx);
  return rc;
}

int
main (int argc, char **argv)
{
  cl_platform_id platforms[MAX_PLATFORMS];
  cl_uint np = 0, p;
  int failed = 0;

  if (argc > 2)
    {
      fprintf (stderr, "usage: package_coexist [LIBRARY]\n");
      return 2;
    }
  if (argc == 2 && dlopen (argv[1], RTLD_NOW | RTLD_LOCAL) == NULL)
    {
      fprintf (stderr, "package_coexist: %s\n", dlerror ());
      return 2;
    }
  if (clGetPlatformIDs (MAX_PLATFORMS, platforms, &np) != CL_SUCCESS)
    {
      printf ("no platforms\n");
      return 1;
    }
  if (np > MAX_PLATFORMS)
    np = MAX_PLATFORMS;
  for (p = 0; p < np; ++p)
    {
      cl_device_id devices[MAX_DEVICES];
      cl_uint nd = 0, d;
      if (clGetDeviceIDs (platforms[p], CL_DEVICE_TYPE_ALL, MAX_DEVICES,
                          devices, &nd)
          != CL_SUCCESS)
        nd = 0;
      if (nd > MAX_DEVICES)
        nd = MAX_DEVICES;
      printf ("platform %u: %u devices\n", p, nd);
      failed |= nd == 0;
      for (d = 0; d < nd; ++d)
        {
          char name[256] = "";
          const char *why = "";
          clGetDeviceInfo (devices[d], CL_DEVICE_NAME, sizeof (name) - 1, name,
                           NULL);
          if (run_kernel (devices[d], &why) == 0)
            printf ("device %u.%u: %s: kernel ok\n", p, d, name);
          else
            {
              printf ("device %u.%u: %s: kernel failed: %s\n", p, d, name,
                      why);
              failed = 1;
            }
        }
    }
  fflush (stdout);
  return failed;
}
