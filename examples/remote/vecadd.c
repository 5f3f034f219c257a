/* vecadd.c - add two vectors on the first PoCL-R ("pocl-remote") device and
   verify the result on the CPU.

   Usage: remote_vecadd [N]   (N defaults to 1048576)
   Prints "vecadd: verified N elements on <device name>" and exits 0; on an
   OpenCL error or any mismatch it prints what went wrong and exits non-zero.
 */

/* Plain OpenCL 1.2 API; PoCL's build may predefine a newer target version.  */
#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#ifndef CL_USE_DEPRECATED_OPENCL_1_2_APIS
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#endif
#include <CL/cl.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef DEVICE_NAME_PART
#define DEVICE_NAME_PART "pocl-remote"
#endif

static const char *kernel_source
    = "__kernel void vecadd (__global const float *a,\n"
      "                      __global const float *b,\n"
      "                      __global float *c, uint n)\n"
      "{\n"
      "  size_t i = get_global_id (0);\n"
      "  if (i < n)\n"
      "    c[i] = a[i] + b[i];\n"
      "}\n";

/* Report an OpenCL error with its code and where it happened, and fail.  */
#define CHECK(call)                                                           \
  do                                                                          \
    {                                                                         \
      cl_int check_err_ = (call);                                             \
      if (check_err_ != CL_SUCCESS)                                           \
        {                                                                     \
          fprintf (stderr, "vecadd: %s failed with error %d (line %d)\n",     \
                   #call, check_err_, __LINE__);                              \
          exit (2);                                                           \
        }                                                                     \
    }                                                                         \
  while (0)

#define CHECK_ERR(what, err)                                                  \
  do                                                                          \
    {                                                                         \
      if ((err) != CL_SUCCESS)                                                \
        {                                                                     \
          fprintf (stderr, "vecadd: %s failed with error %d (line %d)\n",     \
                   (what), (err), __LINE__);                                  \
          exit (2);                                                           \
        }                                                                     \
    }                                                                         \
  while (0)

/* Find the first device, on any platform, whose name contains
 * DEVICE_NAME_PART.  */
static cl_device_id
find_remote_device (char *name, size_t name_size)
{
  cl_uint nplatforms = 0;
  cl_int err = clGetPlatformIDs (0, NULL, &nplatforms);
  if (err == -1001 /* CL_PLATFORM_NOT_FOUND_KHR */ || nplatforms == 0)
    {
      fprintf (stderr, "vecadd: no OpenCL platforms found\n");
      exit (3);
    }
  CHECK_ERR ("clGetPlatformIDs", err);

  cl_platform_id *platforms = malloc (nplatforms * sizeof (cl_platform_id));
  if (platforms == NULL)
    exit (4);
  CHECK (clGetPlatformIDs (nplatforms, platforms, NULL));

  cl_device_id found = NULL;
  for (cl_uint p = 0; p < nplatforms && found == NULL; ++p)
    {
      cl_uint ndevices = 0;
      err = clGetDeviceIDs (platforms[p], CL_DEVICE_TYPE_ALL, 0, NULL,
                            &ndevices);
      if (err == CL_DEVICE_NOT_FOUND || ndevices == 0)
        continue;
      CHECK_ERR ("clGetDeviceIDs", err);
      cl_device_id *devices = malloc (ndevices * sizeof (cl_device_id));
      if (devices == NULL)
        exit (4);
      CHECK (clGetDeviceIDs (platforms[p], CL_DEVICE_TYPE_ALL, ndevices,
                             devices, NULL));
      for (cl_uint d = 0; d < ndevices; ++d)
        {
          CHECK (clGetDeviceInfo (devices[d], CL_DEVICE_NAME, name_size, name,
                                  NULL));
          if (strstr (name, DEVICE_NAME_PART) != NULL)
            {
              found = devices[d];
              break;
            }
        }
      free (devices);
    }
  free (platforms);

  if (found == NULL)
    {
      fprintf (stderr, "vecadd: no device whose name contains \"%s\"\n",
               DEVICE_NAME_PART);
      exit (3);
    }
  return found;
}

int
main (int argc, char **argv)
{
  cl_uint n = 1u << 20;
  if (argc > 1)
    {
      long v = strtol (argv[1], NULL, 10);
      if (v <= 0 || v > (1L << 28))
        {
          fprintf (stderr, "usage: %s [N (1..2^28)]\n", argv[0]);
          return 2;
        }
      n = (cl_uint)v;
    }
  size_t bytes = (size_t)n * sizeof (cl_float);

  char name[256] = "";
  cl_device_id device = find_remote_device (name, sizeof (name));

  cl_int err;
  cl_context ctx = clCreateContext (NULL, 1, &device, NULL, NULL, &err);
  CHECK_ERR ("clCreateContext", err);
  cl_command_queue queue = clCreateCommandQueue (ctx, device, 0, &err);
  CHECK_ERR ("clCreateCommandQueue", err);

  cl_program program
      = clCreateProgramWithSource (ctx, 1, &kernel_source, NULL, &err);
  CHECK_ERR ("clCreateProgramWithSource", err);
  err = clBuildProgram (program, 1, &device, NULL, NULL, NULL);
  if (err != CL_SUCCESS)
    {
      char log[4096] = "";
      clGetProgramBuildInfo (program, device, CL_PROGRAM_BUILD_LOG,
                             sizeof (log) - 1, log, NULL);
      fprintf (stderr, "vecadd: build log:\n%s\n", log);
      CHECK_ERR ("clBuildProgram", err);
    }
  cl_kernel kernel = clCreateKernel (program, "vecadd", &err);
  CHECK_ERR ("clCreateKernel", err);

  cl_float *a = malloc (bytes), *b = malloc (bytes), *c = malloc (bytes);
  if (a == NULL || b == NULL || c == NULL)
    {
      fprintf (stderr, "vecadd: out of host memory\n");
      return 4;
    }
  for (cl_uint i = 0; i < n; ++i)
    {
      /* Exactly representable values, so the device sum must match bit for
       * bit.  */
      a[i] = (cl_float)(i % 4096) * 0.5f;
      b[i] = (cl_float)(n - i) * 0.25f;
      c[i] = -1.0f;
    }

  cl_mem buf_a = clCreateBuffer (ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                                 bytes, a, &err);
  CHECK_ERR ("clCreateBuffer(a)", err);
  cl_mem buf_b = clCreateBuffer (ctx, CL_MEM_READ_ONLY, bytes, NULL, &err);
  CHECK_ERR ("clCreateBuffer(b)", err);
  cl_mem buf_c = clCreateBuffer (ctx, CL_MEM_WRITE_ONLY, bytes, NULL, &err);
  CHECK_ERR ("clCreateBuffer(c)", err);
  CHECK (clEnqueueWriteBuffer (queue, buf_b, CL_FALSE, 0, bytes, b, 0, NULL,
                               NULL));

  CHECK (clSetKernelArg (kernel, 0, sizeof (cl_mem), &buf_a));
  CHECK (clSetKernelArg (kernel, 1, sizeof (cl_mem), &buf_b));
  CHECK (clSetKernelArg (kernel, 2, sizeof (cl_mem), &buf_c));
  CHECK (clSetKernelArg (kernel, 3, sizeof (cl_uint), &n));

  size_t local = 64;
  size_t global = ((size_t)n + local - 1) / local * local;
  cl_event done;
  CHECK (clEnqueueNDRangeKernel (queue, kernel, 1, NULL, &global, &local, 0,
                                 NULL, &done));
  CHECK (clEnqueueReadBuffer (queue, buf_c, CL_TRUE, 0, bytes, c, 1, &done,
                              NULL));
  cl_int status = CL_QUEUED;
  CHECK (clGetEventInfo (done, CL_EVENT_COMMAND_EXECUTION_STATUS,
                         sizeof (status), &status, NULL));
  if (status != CL_COMPLETE)
    {
      fprintf (stderr,
               "vecadd: kernel event status %d, expected CL_COMPLETE\n",
               status);
      return 5;
    }

  size_t mismatches = 0;
  for (cl_uint i = 0; i < n; ++i)
    {
      cl_float want = a[i] + b[i];
      if (c[i] != want)
        {
          if (mismatches < 10)
            fprintf (stderr, "vecadd: c[%u] = %f, expected %f\n", i,
                     (double)c[i], (double)want);
          ++mismatches;
        }
    }

  CHECK (clReleaseEvent (done));
  CHECK (clReleaseMemObject (buf_a));
  CHECK (clReleaseMemObject (buf_b));
  CHECK (clReleaseMemObject (buf_c));
  CHECK (clReleaseKernel (kernel));
  CHECK (clReleaseProgram (program));
  CHECK (clReleaseCommandQueue (queue));
  CHECK (clReleaseContext (ctx));
  free (a);
  free (b);
  free (c);

  if (mismatches != 0)
    {
      fprintf (stderr, "vecadd: %zu of %u elements wrong on %s\n", mismatches,
               n, name);
      return 1;
    }
  printf ("vecadd: verified %u elements on %s\n", n, name);
  return 0;
}
