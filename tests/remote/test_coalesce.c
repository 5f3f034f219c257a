/* test_coalesce.c - kernels held back to leave with later ones
   (POCL_REMOTE_COALESCE, lib/CL/devices/remote/channel/remote_send.c) keep
   their order and their completion, whether the application flushes or
   not.  Run with POCL_REMOTE_COALESCE=64 (the default on two CPUs) and =0
   (remote_tests.cmake).

   1. A burst of 2000 dependent kernels, b = 3b + i, then clFinish: the bits
      of b are those of the 2000 steps in order.
   2. A burst after which the application polls the last kernel's status
      with no flush or wait: it completes (the reader sends what is held
      once nothing sent before is in flight).
   3. The same while a kernel of another queue waits for a user event (in
      flight until the application sets it): the burst completes all the
      same (the timer sends it), then the gated kernel once the event is
      set.
   4. Two threads, each a burst on a queue of its own: both results are
      right.  */

#define TEST_NAME "coalesce"
#include "remote_test_util.c"

#include <time.h>

static const char *source = "__kernel void stir (__global uint *b, uint i)\n"
                            "{ b[0] = b[0] * 3u + i; }\n";

static cl_context ctx;
static cl_device_id dev;
static cl_program prog;

static cl_uint
expected (cl_uint start, cl_uint n)
{
  cl_uint v = start;
  for (cl_uint i = 0; i < n; ++i)
    v = v * 3u + i;
  return v;
}

static cl_mem
counter (cl_command_queue q, cl_uint v)
{
  cl_int err;
  cl_mem b = clCreateBuffer (ctx, CL_MEM_READ_WRITE, sizeof (v), NULL, &err);
  CHECK_ERR (err, "clCreateBuffer");
  CHECK (
      clEnqueueWriteBuffer (q, b, CL_TRUE, 0, sizeof (v), &v, 0, NULL, NULL));
  return b;
}

static cl_uint
value (cl_command_queue q, cl_mem b)
{
  cl_uint v = 0;
  CHECK (
      clEnqueueReadBuffer (q, b, CL_TRUE, 0, sizeof (v), &v, 0, NULL, NULL));
  return v;
}

/* n kernels stepping b from i = 0, back to back; the last one's event in
 *last if last is not NULL.  */
static void
burst (cl_command_queue q, cl_kernel k, cl_mem b, cl_uint n, cl_event *last)
{
  size_t g = 1;
  CHECK (clSetKernelArg (k, 0, sizeof (b), &b));
  for (cl_uint i = 0; i < n; ++i)
    {
      CHECK (clSetKernelArg (k, 1, sizeof (i), &i));
      CHECK (clEnqueueNDRangeKernel (q, k, 1, NULL, &g, NULL, 0, NULL,
                                     i + 1 == n ? last : NULL));
    }
}

static double
now_s (void)
{
  struct timespec t;
  clock_gettime (CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

/* Polls e's status, as an application that neither flushes nor waits,
   until it is final or 20 s are over: the status.  */
static cl_int
poll_status (cl_event e)
{
  double end = now_s () + 20;
  cl_int s = CL_QUEUED;
  while (now_s () < end)
    {
      CHECK (clGetEventInfo (e, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof (s),
                             &s, NULL));
      if (s <= CL_COMPLETE)
        break;
      usleep (100);
    }
  return s;
}

struct worker
{
  cl_command_queue q;
  cl_kernel k;
  cl_mem b;
};

static void *
run_worker (void *p)
{
  struct worker *w = p;
  burst (w->q, w->k, w->b, 1000, NULL);
  CHECK (clFinish (w->q));
  return NULL;
}

int
main (int argc, char **argv)
{
  watchdog (240, "the test");
  char name[256];
  dev = open_test_device (argc, argv, name, sizeof (name), &ctx);
  prog = build_program (ctx, dev, source, NULL);
  cl_int err;
  cl_command_queue q = clCreateCommandQueue (ctx, dev, 0, &err);
  CHECK_ERR (err, "clCreateCommandQueue");
  cl_command_queue q2 = clCreateCommandQueue (ctx, dev, 0, &err);
  CHECK_ERR (err, "clCreateCommandQueue");
  cl_kernel k = create_kernel (prog, "stir");
  cl_kernel k2 = create_kernel (prog, "stir");

  /* 1 */
  step ("a burst of 2000 kernels");
  cl_mem b = counter (q, 7);
  burst (q, k, b, 2000, NULL);
  CHECK (clFinish (q));
  cl_uint got = value (q, b), want = expected (7, 2000);
  EXPECT (got == want, "2000 kernels in a burst: %#x, not %#x", got, want);
  note ("2000 kernels in a burst: in order");

  /* 2 */
  step ("a burst polled with no flush");
  cl_event last;
  burst (q, k, b, 100, &last);
  cl_int s = poll_status (last);
  EXPECT (s == CL_COMPLETE,
          "the last of a burst, polled with no flush, reads %d after 20 s", s);
  clReleaseEvent (last);
  want = expected (want, 100);
  got = value (q, b);
  EXPECT (got == want, "the polled burst: %#x, not %#x", got, want);
  note ("a burst polled with no flush: completed");

  /* 3 */
  step ("a burst polled while a kernel waits for a user event");
  cl_event gate = clCreateUserEvent (ctx, &err);
  CHECK_ERR (err, "clCreateUserEvent");
  cl_mem gated = counter (q2, 1);
  cl_event g_ev;
  size_t g = 1;
  cl_uint nine = 9;
  CHECK (clSetKernelArg (k2, 0, sizeof (gated), &gated));
  CHECK (clSetKernelArg (k2, 1, sizeof (nine), &nine));
  CHECK (clEnqueueNDRangeKernel (q2, k2, 1, NULL, &g, NULL, 1, &gate, &g_ev));
  burst (q, k, b, 100, &last);
  s = poll_status (last);
  EXPECT (s == CL_COMPLETE,
          "the last of a burst behind a gated kernel, polled with no flush, "
          "reads %d after 20 s",
          s);
  clReleaseEvent (last);
  CHECK (clGetEventInfo (g_ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof (s),
                         &s, NULL));
  EXPECT (s > CL_COMPLETE, "the gated kernel ran before its event (%d)", s);
  CHECK (clSetUserEventStatus (gate, CL_COMPLETE));
  s = poll_status (g_ev);
  EXPECT (s == CL_COMPLETE, "the gated kernel reads %d after its event", s);
  clReleaseEvent (g_ev);
  clReleaseEvent (gate);
  want = expected (want, 100);
  got = value (q, b);
  EXPECT (got == want, "the burst behind the gated kernel: %#x, not %#x", got,
          want);
  got = value (q2, gated);
  EXPECT (got == 3u + 9u, "the gated kernel: %u, not 12", got);
  note ("a burst behind a gated kernel: completed, then the gated one");

  /* 4 */
  step ("two threads' bursts");
  struct worker w[2]
      = { { q, k, counter (q, 5) }, { q2, k2, counter (q2, 11) } };
  pthread_t t[2];
  for (int i = 0; i < 2; ++i)
    if (pthread_create (&t[i], NULL, run_worker, &w[i]))
      fail ("pthread_create");
  for (int i = 0; i < 2; ++i)
    pthread_join (t[i], NULL);
  got = value (q, w[0].b);
  EXPECT (got == expected (5, 1000), "thread 1's burst: %#x, not %#x", got,
          expected (5, 1000));
  got = value (q2, w[1].b);
  EXPECT (got == expected (11, 1000), "thread 2's burst: %#x, not %#x", got,
          expected (11, 1000));
  note ("two threads' bursts: both in order");

  for (int i = 0; i < 2; ++i)
    clReleaseMemObject (w[i].b);
  clReleaseMemObject (gated);
  clReleaseMemObject (b);
  clReleaseKernel (k);
  clReleaseKernel (k2);
  clReleaseCommandQueue (q);
  clReleaseCommandQueue (q2);
  clReleaseProgram (prog);
  clReleaseContext (ctx);
  const char *c = getenv ("POCL_REMOTE_COALESCE");
  printf ("%s: PASS: bursts keep their order and complete without a flush "
          "(POCL_REMOTE_COALESCE=%s)\n",
          TEST_NAME, c ? c : "unset");
  return 0;
}
