/* test_reload_client.c - one session that lives through pocld's reloads
   (test_reload.sh): a vector add on the remote device, verified, in ROUNDS
   rounds on the same context, queue and kernel.  Before each round after the
   first it waits for the file GATE.<round> to appear, so that the script can
   reload pocld and cut the connection in between.

   Usage: remote_test_reload_client GATE ROUNDS N
   Prints "reload_client: round R verified" per round, then PASS.  */

#define TEST_NAME "reload_client"
#include "remote_test_util.c"

static const char *source
    = "__kernel void add (__global const float *a, __global const float *b,\n"
      "                   __global float *c)\n"
      "{ size_t i = get_global_id (0); c[i] = a[i] + b[i]; }\n";

/* Waits up to 120 s for `path` to exist.  */
static void
wait_for (const char *path)
{
  for (int i = 0; i < 1200; ++i)
    {
      if (access (path, F_OK) == 0)
        return;
      usleep (100000);
    }
  fail ("no %s after 120 s", path);
}

int
main (int argc, char **argv)
{
  if (argc != 4)
    fail ("usage: remote_test_reload_client GATE ROUNDS N");
  const char *gate = argv[1];
  int rounds = atoi (argv[2]);
  size_t n = (size_t)atol (argv[3]);
  cl_device_id dev;
  cl_context ctx;
  cl_command_queue q = open_remote_queue (&dev, &ctx);
  cl_int err;
  cl_program prog = clCreateProgramWithSource (ctx, 1, &source, NULL, &err);
  CHECK_ERR (err, "clCreateProgramWithSource");
  CHECK (clBuildProgram (prog, 1, &dev, NULL, NULL, NULL));
  cl_kernel k = clCreateKernel (prog, "add", &err);
  CHECK_ERR (err, "clCreateKernel");
  size_t bytes = n * sizeof (float);
  float *a = xmalloc (bytes), *b = xmalloc (bytes), *c = xmalloc (bytes);
  cl_mem ba = clCreateBuffer (ctx, CL_MEM_READ_ONLY, bytes, NULL, &err);
  CHECK_ERR (err, "clCreateBuffer a");
  cl_mem bb = clCreateBuffer (ctx, CL_MEM_READ_ONLY, bytes, NULL, &err);
  CHECK_ERR (err, "clCreateBuffer b");
  cl_mem bc = clCreateBuffer (ctx, CL_MEM_WRITE_ONLY, bytes, NULL, &err);
  CHECK_ERR (err, "clCreateBuffer c");
  CHECK (clSetKernelArg (k, 0, sizeof ba, &ba));
  CHECK (clSetKernelArg (k, 1, sizeof bb, &bb));
  CHECK (clSetKernelArg (k, 2, sizeof bc, &bc));
  for (int r = 0; r < rounds; ++r)
    {
      if (r > 0)
        {
          char path[4096];
          snprintf (path, sizeof path, "%s.%d", gate, r);
          wait_for (path);
        }
      for (size_t i = 0; i < n; ++i)
        {
          a[i] = (float)(i % 1000) + r;
          b[i] = (float)(i % 7) * 0.5f;
        }
      CHECK (
          clEnqueueWriteBuffer (q, ba, CL_FALSE, 0, bytes, a, 0, NULL, NULL));
      CHECK (
          clEnqueueWriteBuffer (q, bb, CL_FALSE, 0, bytes, b, 0, NULL, NULL));
      CHECK (clEnqueueNDRangeKernel (q, k, 1, NULL, &n, NULL, 0, NULL, NULL));
      CHECK (clEnqueueReadBuffer (q, bc, CL_TRUE, 0, bytes, c, 0, NULL, NULL));
      for (size_t i = 0; i < n; ++i)
        EXPECT (c[i] == a[i] + b[i], "round %d: c[%zu] = %g, not %g", r, i,
                c[i], a[i] + b[i]);
      note ("round %d verified", r);
    }
  clReleaseMemObject (ba);
  clReleaseMemObject (bb);
  clReleaseMemObject (bc);
  clReleaseKernel (k);
  clReleaseProgram (prog);
  clReleaseCommandQueue (q);
  clReleaseContext (ctx);
  free (a);
  free (b);
  free (c);
  printf ("%s: PASS\n", TEST_NAME);
  return 0;
}
