/* matmul.c - C = A x B over all devices of one context: the rows of C are
   split evenly between the devices, each computes its block, in MATMUL_PIECES
   parts, into buffers of its own, and the parts are gathered into one
   result buffer on the first device with clEnqueueCopyBuffer (the runtime
   migrates each part there: between PoCL-R servers, server to server).  A
   part moves while the device computes the next one.  The result is checked
   against a CPU reference.

   Usage: remote_matmul [N [DEVICES [REPEAT]]]
     N: matrix size (N x N floats, default 512, a multiple of 16, at most
        16384)
     DEVICES: how many of the platform's devices to use (default all)
     REPEAT: timed repetitions after one warm-up (default 3)
   Prints "matmul: verified NxN (R rows checked) on D devices, best T ms"
   and exits 0, or explains the failure and exits non-zero.  The elements
   are small integers, so every sum is exact and the check is bit-exact (in
   the order of summation the kernel uses, too).  */

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
#include <time.h>

#define TILE 16
#define MAX_DEVICES 16
#define MAX_PIECES 16

static const char *kernel_source
    = "#define TILE 16\n"
      "__kernel void matmul (__global const float *a,\n"
      "                      __global const float *b,\n"
      "                      __global float *c, uint n, uint row0)\n"
      "{\n"
      "  __local float ta[TILE][TILE], tb[TILE][TILE];\n"
      "  uint lx = get_local_id (0), ly = get_local_id (1);\n"
      "  uint col = get_global_id (0), row = get_global_id (1);\n"
      "  float sum = 0.0f;\n"
      "  for (uint t = 0; t < n; t += TILE)\n"
      "    {\n"
      "      ta[ly][lx] = a[(row0 + row) * n + t + lx];\n"
      "      tb[ly][lx] = b[(t + ly) * n + col];\n"
      "      barrier (CLK_LOCAL_MEM_FENCE);\n"
      "      for (uint k = 0; k < TILE; ++k)\n"
      "        sum += ta[ly][k] * tb[k][lx];\n"
      "      barrier (CLK_LOCAL_MEM_FENCE);\n"
      "    }\n"
      "  c[row * n + col] = sum;\n"
      "}\n";

#define CHECK(call)                                                           \
  do                                                                          \
    {                                                                         \
      cl_int check_err_ = (call);                                             \
      if (check_err_ != CL_SUCCESS)                                           \
        {                                                                     \
          fprintf (stderr, "matmul: %s failed with error %d (line %d)\n",     \
                   #call, check_err_, __LINE__);                              \
          exit (2);                                                           \
        }                                                                     \
    }                                                                         \
  while (0)

static double
now_ms (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int
main (int argc, char **argv)
{
  cl_uint n = argc > 1 ? (cl_uint)strtoul (argv[1], NULL, 10) : 512;
  cl_uint want = argc > 2 ? (cl_uint)strtoul (argv[2], NULL, 10) : 0;
  int repeat = argc > 3 ? atoi (argv[3]) : 3;
  /* MATMUL_PIECES: parts per device (default 4, at most MAX_PIECES) */
  const char *pieces_env = getenv ("MATMUL_PIECES");
  cl_uint pieces = pieces_env ? (cl_uint)atoi (pieces_env) : 4;
  if (pieces < 1 || pieces > MAX_PIECES)
    pieces = 4;
  /* up to 16384: every sum of small integers stays exact in a float, and
     an index in a matrix fits the kernel's uint */
  if (n == 0 || n % TILE != 0 || n > 16384 || repeat < 1)
    {
      fprintf (stderr, "matmul: N must be a multiple of %d up to 16384\n",
               TILE);
      return 2;
    }

  cl_platform_id platform;
  cl_device_id devs[MAX_DEVICES];
  cl_uint ndev = 0, d;
  cl_int err;
  CHECK (clGetPlatformIDs (1, &platform, NULL));
  CHECK (clGetDeviceIDs (platform, CL_DEVICE_TYPE_ALL, MAX_DEVICES, devs,
                         &ndev));
  if (want > 0 && want < ndev)
    ndev = want;
  /* every device gets whole tiles of rows */
  while (ndev > 1 && n / TILE < ndev)
    --ndev;

  cl_context ctx = clCreateContext (NULL, ndev, devs, NULL, NULL, &err);
  CHECK (err);
  cl_program prog
      = clCreateProgramWithSource (ctx, 1, &kernel_source, NULL, &err);
  CHECK (err);
  if (clBuildProgram (prog, ndev, devs, NULL, NULL, NULL) != CL_SUCCESS)
    {
      char log[4096] = "";
      clGetProgramBuildInfo (prog, devs[0], CL_PROGRAM_BUILD_LOG, sizeof (log),
                             log, NULL);
      fprintf (stderr, "matmul: build failed:\n%s\n", log);
      return 2;
    }

  size_t elems = (size_t)n * n, bytes = elems * sizeof (float);
  float *a = malloc (bytes), *b = malloc (bytes), *c = malloc (bytes);
  float *ref = malloc (bytes);
  if (!a || !b || !c || !ref)
    return 2;
  size_t i, j, k;
  for (i = 0; i < elems; ++i)
    {
      a[i] = (float)((i * 7) % 5);
      b[i] = (float)((i * 3) % 7) - 3.0f;
    }

  cl_mem ba = clCreateBuffer (ctx, CL_MEM_READ_ONLY, bytes, NULL, &err);
  CHECK (err);
  cl_mem bb = clCreateBuffer (ctx, CL_MEM_READ_ONLY, bytes, NULL, &err);
  CHECK (err);
  cl_mem bc = clCreateBuffer (ctx, CL_MEM_READ_WRITE, bytes, NULL, &err);
  CHECK (err);
  cl_command_queue q[MAX_DEVICES];
  cl_kernel kern[MAX_DEVICES];
  cl_mem part[MAX_DEVICES][MAX_PIECES];
  cl_uint row0[MAX_DEVICES], rows[MAX_DEVICES];
  cl_uint prow0[MAX_DEVICES][MAX_PIECES], prows[MAX_DEVICES][MAX_PIECES];
  cl_uint tiles = n / TILE, p;
  for (d = 0; d < ndev; ++d)
    {
      q[d] = clCreateCommandQueue (ctx, devs[d], 0, &err);
      CHECK (err);
      kern[d] = clCreateKernel (prog, "matmul", &err);
      CHECK (err);
      row0[d] = tiles * d / ndev * TILE;
      rows[d] = tiles * (d + 1) / ndev * TILE - row0[d];
      /* whole tiles per part; a part may be empty */
      for (p = 0; p < pieces; ++p)
        {
          cl_uint t = rows[d] / TILE;
          prow0[d][p] = row0[d] + t * p / pieces * TILE;
          prows[d][p] = row0[d] + t * (p + 1) / pieces * TILE - prow0[d][p];
          part[d][p] = NULL;
          if (prows[d][p] == 0)
            continue;
          part[d][p] = clCreateBuffer (ctx, CL_MEM_READ_WRITE,
                                       (size_t)prows[d][p] * n * sizeof (float),
                                       NULL, &err);
          CHECK (err);
        }
    }
  /* The inputs go to the first device once; the others get them from
     there (migrations between servers).  */
  CHECK (clEnqueueWriteBuffer (q[0], ba, CL_TRUE, 0, bytes, a, 0, NULL, NULL));
  CHECK (clEnqueueWriteBuffer (q[0], bb, CL_TRUE, 0, bytes, b, 0, NULL, NULL));

  double best = 0;
  int r;
  for (r = 0; r <= repeat; ++r)
    {
      double t0 = now_ms ();
      cl_event done[MAX_DEVICES][MAX_PIECES];
      for (d = 0; d < ndev; ++d)
        {
          for (p = 0; p < pieces; ++p)
            {
              if (part[d][p] == NULL)
                continue;
              size_t global[2] = { n, prows[d][p] }, local[2] = { TILE, TILE };
              CHECK (clSetKernelArg (kern[d], 0, sizeof (cl_mem), &ba));
              CHECK (clSetKernelArg (kern[d], 1, sizeof (cl_mem), &bb));
              CHECK (clSetKernelArg (kern[d], 2, sizeof (cl_mem), &part[d][p]));
              CHECK (clSetKernelArg (kern[d], 3, sizeof (cl_uint), &n));
              CHECK (clSetKernelArg (kern[d], 4, sizeof (cl_uint),
                                     &prow0[d][p]));
              CHECK (clEnqueueNDRangeKernel (q[d], kern[d], 2, NULL, global,
                                             local, 0, NULL, &done[d][p]));
            }
          CHECK (clFlush (q[d]));
        }
      /* gather: each part migrates to the first device, as soon as it is
         computed, and is copied into place there */
      for (p = 0; p < pieces; ++p)
        for (d = 0; d < ndev; ++d)
          {
            if (part[d][p] == NULL)
              continue;
            CHECK (clEnqueueCopyBuffer (
                q[0], part[d][p], bc, 0,
                (size_t)prow0[d][p] * n * sizeof (float),
                (size_t)prows[d][p] * n * sizeof (float), 1, &done[d][p],
                NULL));
            CHECK (clReleaseEvent (done[d][p]));
          }
      CHECK (clFinish (q[0]));
      double t = now_ms () - t0;
      if (r > 0 && (best == 0 || t < best))
        best = t;
    }
  CHECK (clEnqueueReadBuffer (q[0], bc, CL_TRUE, 0, bytes, c, 0, NULL, NULL));

  /* Every row up to N = 1024; beyond, the first and last row of each
     device's block and 128 rows spread over the matrix, so that the check
     stays in seconds.  */
  size_t checked = 0, stride = n > 1024 ? n / 128 + 1 : 1;
  for (i = 0; i < n; ++i)
    {
      int edge = 0;
      for (d = 0; d < ndev; ++d)
        edge |= i == row0[d] || i == row0[d] + rows[d] - 1;
      if (!edge && i % stride != 0)
        continue;
      float *r = ref + i * n;
      for (j = 0; j < n; ++j)
        r[j] = 0.0f;
      for (k = 0; k < n; ++k)
        for (j = 0; j < n; ++j)
          r[j] += a[i * n + k] * b[k * n + j];
      for (j = 0; j < n; ++j)
        if (c[i * n + j] != r[j])
          {
            fprintf (stderr, "matmul: C[%zu][%zu] is %g, expected %g\n", i,
                     j, c[i * n + j], r[j]);
            return 1;
          }
      ++checked;
    }
  printf ("matmul: verified %ux%u (%zu rows checked) on %u devices, best "
          "%.2f ms\n",
          n, n, checked, ndev, best);

  for (d = 0; d < ndev; ++d)
    {
      for (p = 0; p < pieces; ++p)
        if (part[d][p] != NULL)
          clReleaseMemObject (part[d][p]);
      clReleaseKernel (kern[d]);
      clReleaseCommandQueue (q[d]);
    }
  clReleaseMemObject (ba);
  clReleaseMemObject (bb);
  clReleaseMemObject (bc);
  clReleaseProgram (prog);
  clReleaseContext (ctx);
  free (a);
  free (b);
  free (c);
  free (ref);
  return 0;
}
