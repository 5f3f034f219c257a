/* test_session_death.c - a session process that dies (here: a kernel that
   writes to a wild address kills the CPU device's process, as a vendor
   library that aborts would) costs only what was in flight:
   - the commands pending in it fail with a negative status, and a blocking
     read behind them returns an error;
   - the device reads unavailable until a context asks for it again;
   - the next context on the device gets a fresh session and computes
     bit-exact results, and so does a device list from clGetDeviceIDs;
   - the dead session's context stays refused and never reaches the new
     session.  */

#define TEST_NAME "session_death"
#include "remote_test_util.c"

static const char *src
    = "__kernel void wild (ulong addr)\n"
      "{ *(__global volatile int *)addr = 42; }\n"
      "__kernel void add (__global const uint *a, __global uint *b)\n"
      "{ size_t i = get_global_id (0); b[i] = a[i] + 3u * (uint)i; }\n";

#define N 4096

/* Builds src in a new context on dev and checks `add` bit for bit.  */
static void
run_add (cl_device_id dev, const char *what)
{
  cl_int err;
  cl_context ctx = clCreateContext (NULL, 1, &dev, NULL, NULL, &err);
  if (err != CL_SUCCESS)
    fail ("%s: clCreateContext returned %d (%s)", what, err, clerr (err));
  cl_command_queue q = clCreateCommandQueue (ctx, dev, 0, &err);
  CHECK_ERR (err, "clCreateCommandQueue");
  cl_program p = build_program (ctx, dev, src, NULL);
  cl_kernel k = create_kernel (p, "add");
  uint32_t *a = xmalloc (N * 4), *b = xmalloc (N * 4);
  for (uint32_t i = 0; i < N; ++i)
    a[i] = mix32 (7, i);
  cl_mem ma = buffer_from (ctx, q, CL_MEM_READ_ONLY, N * 4, a);
  cl_mem mb = create_buffer (ctx, CL_MEM_WRITE_ONLY, N * 4, NULL);
  CHECK (clSetKernelArg (k, 0, sizeof (cl_mem), &ma));
  CHECK (clSetKernelArg (k, 1, sizeof (cl_mem), &mb));
  size_t gws = N;
  CHECK (clEnqueueNDRangeKernel (q, k, 1, NULL, &gws, NULL, 0, NULL, NULL));
  CHECK (clEnqueueReadBuffer (q, mb, CL_TRUE, 0, N * 4, b, 0, NULL, NULL));
  for (uint32_t i = 0; i < N; ++i)
    if (b[i] != a[i] + 3u * i)
      fail ("%s: element %u is 0x%x, expected 0x%x", what, i, b[i],
            a[i] + 3u * i);
  clReleaseMemObject (ma);
  clReleaseMemObject (mb);
  clReleaseKernel (k);
  clReleaseProgram (p);
  clReleaseCommandQueue (q);
  clReleaseContext (ctx);
  free (a);
  free (b);
  note ("%s: %d elements bit-exact", what, N);
}

static cl_bool
available (cl_device_id dev)
{
  cl_bool up = CL_TRUE;
  CHECK (clGetDeviceInfo (dev, CL_DEVICE_AVAILABLE, sizeof (up), &up, NULL));
  return up;
}

int
main (void)
{
  watchdog (180, "the whole test");
  cl_device_id dev;
  cl_context ctx;
  cl_int err;
  cl_command_queue q = open_remote_queue (&dev, &ctx);
  run_add (dev, "before the crash");

  cl_program p = build_program (ctx, dev, src, NULL);
  cl_kernel wild = create_kernel (p, "wild");
  cl_ulong addr = 64; /* unmapped in every process */
  CHECK (clSetKernelArg (wild, 0, sizeof (addr), &addr));
  uint32_t data[16] = { 0 }, back[16];
  for (int i = 0; i < 16; ++i)
    back[i] = 0xA5A5A5A5u;
  cl_mem m = buffer_from (ctx, q, CL_MEM_READ_WRITE, sizeof (data), data);
  cl_event crash_ev, after_ev;
  size_t one = 1;
  step ("a kernel that kills the session process");
  CHECK (clEnqueueNDRangeKernel (q, wild, 1, NULL, &one, NULL, 0, NULL,
                                 &crash_ev));
  CHECK (clEnqueueWriteBuffer (q, m, CL_FALSE, 0, sizeof (data), data, 0,
                               NULL, &after_ev));
  err = clEnqueueReadBuffer (q, m, CL_TRUE, 0, sizeof (back), back, 0, NULL,
                             NULL);
  if (err == CL_SUCCESS)
    fail ("a blocking read behind the crash returned CL_SUCCESS");
  note ("the blocking read behind the crash returned %d (%s)", err,
        clerr (err));
  clFinish (q);
  cl_int st = event_status (crash_ev), st2 = event_status (after_ev);
  if (st >= 0 || st2 >= 0)
    fail ("pending commands of the dead session: statuses %d (%s) and %d "
          "(%s), expected negative",
          st, clerr (st), st2, clerr (st2));
  note ("the crashed kernel: %s, the write after it: %s", clerr (st),
        clerr (st2));
  if (available (dev))
    fail ("CL_DEVICE_AVAILABLE is true after the session died");

  /* The dead session's context: commands fail, nothing crashes.  */
  cl_event late;
  err = clEnqueueWriteBuffer (q, m, CL_FALSE, 0, sizeof (data), data, 0, NULL,
                              &late);
  if (err == CL_SUCCESS)
    {
      clWaitForEvents (1, &late);
      if (event_status (late) >= 0)
        fail ("a command in the dead session's context completed");
      clReleaseEvent (late);
    }

  step ("a new context on the same device");
  run_add (dev, "new context after the crash");
  if (!available (dev))
    fail ("CL_DEVICE_AVAILABLE is false with a new session");

  /* Still refused in the old context while the new session runs.  */
  err = clEnqueueWriteBuffer (q, m, CL_FALSE, 0, sizeof (data), data, 0, NULL,
                              &late);
  if (err == CL_SUCCESS)
    {
      clWaitForEvents (1, &late);
      if (event_status (late) >= 0)
        fail ("a command of the dead session's context completed in the new "
              "session");
      clReleaseEvent (late);
    }
  clReleaseEvent (crash_ev);
  clReleaseEvent (after_ev);
  clReleaseMemObject (m);
  clReleaseKernel (wild);
  clReleaseProgram (p);
  clReleaseCommandQueue (q);
  clReleaseContext (ctx);
  /* the new session is unaffected by the old context's releases */
  run_add (dev, "after releasing the dead session's objects");

  step ("a second crash, then the device from clGetDeviceIDs");
  q = open_remote_queue (&dev, &ctx);
  p = build_program (ctx, dev, src, NULL);
  wild = create_kernel (p, "wild");
  CHECK (clSetKernelArg (wild, 0, sizeof (addr), &addr));
  CHECK (clEnqueueNDRangeKernel (q, wild, 1, NULL, &one, NULL, 0, NULL,
                                 &crash_ev));
  clWaitForEvents (1, &crash_ev);
  if (event_status (crash_ev) >= 0)
    fail ("the second crash completed");
  clReleaseEvent (crash_ev);
  clReleaseKernel (wild);
  clReleaseProgram (p);
  clReleaseCommandQueue (q);
  clReleaseContext (ctx);
  /* need_remote_device enumerates the devices and checks availability */
  cl_device_id again = need_remote_device ();
  if (again != dev)
    fail ("clGetDeviceIDs returned another device handle after the crash");
  run_add (again, "enumerated again after a second crash");

  printf ("%s: PASS: two crashed sessions failed their pending commands, "
          "and new contexts ran bit-exact on fresh sessions\n",
          TEST_NAME);
  return 0;
}
