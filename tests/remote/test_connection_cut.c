/* test_connection_cut.c - the client side of remote/proxy_cut: a client whose
   connection to pocld is cut (tools/fault_proxy.cc sits in between) gets
   OpenCL errors in bounded time: no hang, no crash, and no wrong data
   reported as success.

   Usage: test_connection_cut ITERATIONS WORDS
   Run through run_remote.sh with the proxy's port.  Each iteration writes
   WORDS uint32 (a pattern of the iteration; 64 KiB and more travel on the
   data socket), runs a kernel that adds 1 to each, and reads them back, all
   blocking, each with an event; a read whose call and event report success
   must have returned exactly the expected words.  The proxy cuts somewhere in this; the first call (or event) that
   reports an error ends the loop.  Then, each under the watchdog: clFinish
   returns; one more write/kernel/read round either reports an error or
   verifies (today it must fail: nothing reconnects yet); every object is
   released.

   PASS when an error came and everything after it returned.  FAIL when all
   iterations verified (the cut never happened), when a successful read
   returned wrong data, or when a step hung.  */

#define TEST_NAME "connection_cut"
#include "remote_test_util.c"

static const char *source
    = "__kernel void inc (__global uint *b)\n"
      "{ b[get_global_id (0)] += 1u; }\n";

/* The call's error, or else its event's negative status (PoCL's blocking
   transfers return CL_SUCCESS and report a failed command in the event).  */
static cl_int
outcome (cl_int ret, cl_event ev)
{
  if (ret != CL_SUCCESS)
    return ret;
  cl_int st = event_status (ev);
  clReleaseEvent (ev);
  return st < 0 ? st : CL_SUCCESS;
}

/* One round: 0 verified, otherwise the first error (a negative return code
   or event status).  */
static cl_int
round_trip (cl_command_queue q, cl_kernel k, cl_mem buf, uint32_t *host,
            uint32_t *back, size_t words, uint32_t iter, const char **what)
{
  const size_t bytes = words * sizeof (uint32_t);
  for (size_t i = 0; i < words; ++i)
    host[i] = mix32 (iter, (uint32_t)i);
  cl_int err;
  cl_event ev = NULL;
  *what = "clEnqueueWriteBuffer";
  err = clEnqueueWriteBuffer (q, buf, CL_TRUE, 0, bytes, host, 0, NULL, &ev);
  if ((err = outcome (err, ev)))
    return err;
  *what = "clSetKernelArg";
  if ((err = clSetKernelArg (k, 0, sizeof (buf), &buf)))
    return err;
  cl_event kev = NULL;
  *what = "clEnqueueNDRangeKernel";
  if ((err = clEnqueueNDRangeKernel (q, k, 1, NULL, &words, NULL, 0, NULL,
                                     &kev)))
    return err;
  memset (back, 0, bytes);
  *what = "clEnqueueReadBuffer";
  err = clEnqueueReadBuffer (q, buf, CL_TRUE, 0, bytes, back, 0, NULL, &ev);
  err = outcome (err, ev);
  cl_int st = event_status (kev);
  clReleaseEvent (kev);
  if (err)
    return err;
  if (st < 0)
    {
      *what = "the kernel's event";
      return st;
    }
  for (size_t i = 0; i < words; ++i)
    if (back[i] != host[i] + 1u)
      fail ("iteration %u: a read reported success but word %zu is 0x%08x, "
            "expected 0x%08x",
            iter, i, back[i], host[i] + 1u);
  return CL_SUCCESS;
}

int
main (int argc, char **argv)
{
  if (argc != 3 || atoi (argv[1]) < 1 || atoi (argv[2]) < 1)
    {
      fprintf (stderr, "usage: %s ITERATIONS WORDS\n", argv[0]);
      return 2;
    }
  const unsigned iterations = (unsigned)atoi (argv[1]);
  const size_t words = (size_t)atoi (argv[2]);
  uint32_t *host = xmalloc (words * sizeof (uint32_t));
  uint32_t *back = xmalloc (words * sizeof (uint32_t));

  /* Setup may itself be cut (a rule on an early message): that is an error
     like any other, as long as it is reported.  */
  watchdog (120, "setup (device, context, queue, build)");
  cl_int err;
  cl_device_id dev = need_remote_device ();
  cl_context ctx = clCreateContext (NULL, 1, &dev, NULL, NULL, &err);
  cl_command_queue q = NULL;
  cl_program prog = NULL;
  cl_kernel k = NULL;
  cl_mem buf = NULL;
  const char *what = "clCreateContext";
  if (err == CL_SUCCESS)
    {
      what = "clCreateCommandQueue";
      q = clCreateCommandQueue (ctx, dev, 0, &err);
    }
  if (err == CL_SUCCESS)
    {
      what = "clBuildProgram";
      prog = clCreateProgramWithSource (ctx, 1, &source, NULL, &err);
      if (err == CL_SUCCESS)
        err = clBuildProgram (prog, 1, &dev, NULL, NULL, NULL);
    }
  if (err == CL_SUCCESS)
    {
      what = "clCreateKernel";
      k = clCreateKernel (prog, "inc", &err);
    }
  if (err == CL_SUCCESS)
    {
      what = "clCreateBuffer";
      buf = clCreateBuffer (ctx, CL_MEM_READ_WRITE, words * sizeof (uint32_t),
                            NULL, &err);
    }

  unsigned done = 0;
  if (err == CL_SUCCESS)
    {
      watchdog (120, "the round trips until the cut");
      for (; done < iterations; ++done)
        if ((err = round_trip (q, k, buf, host, back, words, done, &what)))
          break;
    }
  if (err == CL_SUCCESS)
    fail ("all %u iterations verified: the connection was never cut", done);
  note ("after %u verified iterations, %s reported %d (%s)", done, what, err,
        clerr (err));

  if (q != NULL)
    {
      watchdog (30, "clFinish after the cut");
      cl_int f = clFinish (q);
      note ("clFinish after the cut returned %d (%s)", f, clerr (f));
      if (k != NULL && buf != NULL)
        {
          watchdog (30, "one more round after the cut");
          cl_int again = round_trip (q, k, buf, host, back, words, 999999,
                                     &what);
          if (again == CL_SUCCESS)
            fail ("a round after the cut verified: nothing reconnects yet, "
                  "so it cannot have reached the server");
          note ("one more round after the cut: %s reported %d (%s)", what,
                again, clerr (again));
        }
    }

  watchdog (30, "releasing everything after the cut");
  if (buf)
    clReleaseMemObject (buf);
  if (k)
    clReleaseKernel (k);
  if (prog)
    clReleaseProgram (prog);
  if (q)
    clReleaseCommandQueue (q);
  if (ctx)
    clReleaseContext (ctx);
  alarm (0);
  free (host);
  free (back);
  printf ("%s: PASS: the cut gave an error (%d, %s) after %u iterations and "
          "every later call returned\n",
          TEST_NAME, err, clerr (err), done);
  return 0;
}
