/* test_connection_cut.c - the client side of remote/proxy_cut_*: a client
   whose connections to pocld are cut (tools/fault_proxy.cc sits in between)
   reconnects and resumes its session; nothing it enqueued is lost or runs
   twice, and every result is exact.

   Usage: test_connection_cut ITERATIONS WORDS
   Run through run_remote.sh with the proxy's port.  Each iteration, all
   non-blocking and then one clFinish: writes WORDS uint32 (a pattern of the
   iteration; 64 KiB and more travel on the data socket) and 1024 more
   (inline on the command socket), runs a kernel that adds 1 to each word of
   both, a kernel that increments a global counter once per work-item
   (atomic_inc), reads both buffers back and checks every word.  At the end
   the counter must be exactly ITERATIONS * (WORDS + 1024): a command lost in
   a cut, or run twice after one, changes it.  CL_DEVICE_AVAILABLE must be
   true again (within 20 s: a cut after the last read starts a resume).
   The proxy cuts wherever its rules say; cuts must not show.

   With CONNECTION_CUT_STOP_FILE set, the run ends 10 iterations after that
   file appears (or after ITERATIONS): a script that changes the network
   under the client keeps it busy until the change was seen.

   PASS when every check held; FAIL on any error, wrong word, wrong count,
   or a step that hung (watchdog).  */

#define TEST_NAME "connection_cut"
#include "remote_test_util.c"

#define SMALL 1024

static const char *source
    = "__kernel void inc (__global uint *b)\n"
      "{ b[get_global_id (0)] += 1u; }\n"
      "__kernel void count (__global uint *c)\n"
      "{ atomic_inc (c); }\n";

/* Enqueues one iteration on buffer b (n words from host) and reads it back
   into back.  */
static void
enqueue_round (cl_command_queue q, cl_kernel inc, cl_kernel count, cl_mem b,
               cl_mem counter, const uint32_t *host, uint32_t *back, size_t n)
{
  const size_t bytes = n * sizeof (uint32_t);
  CHECK (clEnqueueWriteBuffer (q, b, CL_FALSE, 0, bytes, host, 0, NULL,
                               NULL));
  CHECK (clSetKernelArg (inc, 0, sizeof (b), &b));
  CHECK (clEnqueueNDRangeKernel (q, inc, 1, NULL, &n, NULL, 0, NULL, NULL));
  CHECK (clSetKernelArg (count, 0, sizeof (counter), &counter));
  CHECK (clEnqueueNDRangeKernel (q, count, 1, NULL, &n, NULL, 0, NULL, NULL));
  CHECK (clEnqueueReadBuffer (q, b, CL_FALSE, 0, bytes, back, 0, NULL, NULL));
}

static void
check_round (const uint32_t *host, const uint32_t *back, size_t n,
             unsigned iter, const char *which)
{
  for (size_t i = 0; i < n; ++i)
    if (back[i] != host[i] + 1u)
      fail ("iteration %u, %s buffer: word %zu is 0x%08x, expected 0x%08x",
            iter, which, i, back[i], host[i] + 1u);
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
  uint32_t small[SMALL], small_back[SMALL];

  watchdog (120, "setup (device, context, queue, build)");
  cl_device_id dev;
  cl_context ctx;
  cl_command_queue q = open_remote_queue (&dev, &ctx);
  cl_program prog = build_program (ctx, dev, source, NULL);
  cl_kernel inc = create_kernel (prog, "inc");
  cl_kernel count = create_kernel (prog, "count");
  cl_mem big = create_buffer (ctx, CL_MEM_READ_WRITE, words * sizeof (uint32_t),
                              NULL);
  cl_mem little = create_buffer (ctx, CL_MEM_READ_WRITE, sizeof (small), NULL);
  cl_uint zero = 0;
  cl_mem counter = create_buffer (ctx, CL_MEM_READ_WRITE
                                           | CL_MEM_COPY_HOST_PTR,
                                  sizeof (zero), &zero);

  const char *stop_file = getenv ("CONNECTION_CUT_STOP_FILE");
  unsigned done = 0, stop_at = iterations;
  for (unsigned it = 0; it < stop_at; ++it)
    {
      if (stop_file && stop_at == iterations && access (stop_file, F_OK) == 0
          && it + 10 < stop_at)
        stop_at = it + 10;
      watchdog (60, "an iteration (reconnects included)");
      for (size_t i = 0; i < words; ++i)
        host[i] = mix32 (it, (uint32_t)i);
      for (size_t i = 0; i < SMALL; ++i)
        small[i] = mix32 (it + 0x10000u, (uint32_t)i);
      memset (back, 0, words * sizeof (uint32_t));
      memset (small_back, 0, sizeof (small_back));
      enqueue_round (q, inc, count, big, counter, host, back, words);
      enqueue_round (q, inc, count, little, counter, small, small_back, SMALL);
      CHECK (clFinish (q));
      check_round (host, back, words, it, "large");
      check_round (small, small_back, SMALL, it, "small");
      done = it + 1;
    }

  watchdog (60, "the counter");
  cl_uint got = 0;
  CHECK (clEnqueueReadBuffer (q, counter, CL_TRUE, 0, sizeof (got), &got, 0,
                              NULL, NULL));
  const uint64_t want = (uint64_t)done * (words + SMALL);
  if (got != (cl_uint)want)
    fail ("the counter is %u, expected %llu: commands were %s", got,
          (unsigned long long)want, got < want ? "lost" : "run twice");
  /* A cut after the last read (of an ACK, say) leaves a resume under way:
     the device must be back within the client's reconnect time.  */
  cl_bool avail = CL_FALSE;
  for (int tries = 0; !avail && tries < 2000; ++tries)
    {
      if (tries > 0)
        usleep (10000);
      CHECK (clGetDeviceInfo (dev, CL_DEVICE_AVAILABLE, sizeof (avail),
                              &avail, NULL));
    }
  if (!avail)
    fail ("CL_DEVICE_AVAILABLE is still false 20 s after the run");

  clReleaseMemObject (counter);
  clReleaseMemObject (little);
  clReleaseMemObject (big);
  clReleaseKernel (count);
  clReleaseKernel (inc);
  clReleaseProgram (prog);
  clReleaseCommandQueue (q);
  clReleaseContext (ctx);
  alarm (0);
  free (host);
  free (back);
  printf ("%s: PASS: %u iterations verified, counter exactly %llu\n",
          TEST_NAME, done, (unsigned long long)want);
  return 0;
}
