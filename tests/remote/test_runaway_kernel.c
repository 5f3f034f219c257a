/* test_runaway_kernel.c - the client side of remote/runaway_kernel.

   Usage: test_runaway_kernel spin | verify
   Run by test_runaway_kernel.sh through run_remote.sh, twice in a row
   against the same pocld.

   spin:   like upstream's regression/infinite_loop: enqueues a kernel whose
           work-items all run `for (;;);`, with enough work-groups to occupy
           every thread of the server's CPU device, waits a second so that it
           surely runs, and exits without waiting for it.
   verify: must be served anyway: builds a kernel, runs it on 64 Ki
           elements and checks every result, all within 30 s (watchdog).

   "runaway_kernel: PASS: ..." / "runaway_kernel: FAIL: <reason>".  */

#define TEST_NAME "runaway_kernel"
#include "remote_test_util.c"

static const char *spin_source
    = "__kernel void spin (__global int *out)\n"
      "{\n"
      "  for (;;);\n"
      "  out[get_global_id (0)] = 1;\n"
      "}\n";

static const char *verify_source
    = "__kernel void axpy (__global const uint *a, __global uint *b,\n"
      "                    uint k)\n"
      "{\n"
      "  size_t i = get_global_id (0);\n"
      "  b[i] = a[i] * k + (uint)i;\n"
      "}\n";

static void
setup (cl_device_id *dev, cl_context *ctx, cl_command_queue *q)
{
  cl_int err;
  *dev = need_remote_device ();
  *ctx = clCreateContext (NULL, 1, dev, NULL, NULL, &err);
  CHECK_ERR (err, "clCreateContext");
  *q = clCreateCommandQueue (*ctx, *dev, 0, &err);
  CHECK_ERR (err, "clCreateCommandQueue");
}

static int
spin (void)
{
  cl_device_id dev;
  cl_context ctx;
  cl_command_queue q;
  watchdog (120, "setting up the spinning kernel");
  setup (&dev, &ctx, &q);
  cl_program p = build_program (ctx, dev, spin_source, NULL);
  cl_kernel k = create_kernel (p, "spin");
  /* One work-item per work-group, many groups: every worker thread of the
     server's CPU device picks one up and never comes back.  */
  const size_t n = 4096, local = 1;
  cl_mem out = create_buffer (ctx, CL_MEM_READ_WRITE, n * sizeof (cl_int),
                              NULL);
  CHECK (clSetKernelArg (k, 0, sizeof (out), &out));
  CHECK (clEnqueueNDRangeKernel (q, k, 1, NULL, &n, &local, 0, NULL, NULL));
  CHECK (clFlush (q));
  sleep (1);
  note ("spinning kernel enqueued; exiting without waiting for it");
  fflush (stdout);
  /* exit, not _exit: the driver says goodbye like any application that
     returns from main, and pocld ends the session at once instead of
     keeping it for a reconnect.  */
  exit (0);
}

static int
verify (void)
{
  cl_device_id dev;
  cl_context ctx;
  cl_command_queue q;
  watchdog (30, "a normal kernel after a runaway one (connect, build, run, "
                "read back)");
  setup (&dev, &ctx, &q);
  step ("building a normal kernel after a runaway one");
  cl_program p = build_program (ctx, dev, verify_source, NULL);
  cl_kernel k = create_kernel (p, "axpy");
  const size_t n = 65536;
  cl_uint *a = xmalloc (n * sizeof (cl_uint));
  cl_uint *b = xmalloc (n * sizeof (cl_uint));
  for (size_t i = 0; i < n; ++i)
    a[i] = mix32 (7, (uint32_t)i);
  step ("running a normal kernel after a runaway one");
  cl_mem ma = buffer_from (ctx, q, CL_MEM_READ_ONLY, n * sizeof (cl_uint), a);
  cl_mem mb = create_buffer (ctx, CL_MEM_WRITE_ONLY, n * sizeof (cl_uint),
                             NULL);
  cl_uint kk = 2654435761u;
  CHECK (clSetKernelArg (k, 0, sizeof (ma), &ma));
  CHECK (clSetKernelArg (k, 1, sizeof (mb), &mb));
  CHECK (clSetKernelArg (k, 2, sizeof (kk), &kk));
  CHECK (clEnqueueNDRangeKernel (q, k, 1, NULL, &n, NULL, 0, NULL, NULL));
  CHECK (clEnqueueReadBuffer (q, mb, CL_TRUE, 0, n * sizeof (cl_uint), b, 0,
                              NULL, NULL));
  for (size_t i = 0; i < n; ++i)
    {
      cl_uint want = a[i] * kk + (cl_uint)i;
      if (b[i] != want)
        fail ("element %zu is %u, expected %u", i, b[i], want);
    }
  step ("releasing");
  CHECK (clReleaseMemObject (ma));
  CHECK (clReleaseMemObject (mb));
  CHECK (clReleaseKernel (k));
  CHECK (clReleaseProgram (p));
  CHECK (clReleaseCommandQueue (q));
  CHECK (clReleaseContext (ctx));
  alarm (0);
  free (a);
  free (b);
  printf ("%s: verified %zu elements after a runaway kernel\n", TEST_NAME, n);
  return 0;
}

int
main (int argc, char **argv)
{
  if (argc == 2 && strcmp (argv[1], "spin") == 0)
    return spin ();
  if (argc == 2 && strcmp (argv[1], "verify") == 0)
    return verify ();
  fprintf (stderr, "usage: %s spin | verify\n", argv[0]);
  return 2;
}
