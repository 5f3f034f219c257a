/* test_outage.c - the client side of remote/outage_* (test_outage.sh): a
   server that goes silent while a buffer moves between two servers.

   Usage: test_outage within|beyond MIB DIR
   Devices: remote 0 (server A) and remote 1 (server B, whose link the script
   sets down and up again).  One context of both.  Each iteration migrates
   the buffer (MIB MiB of uint) to B, increments every word there, waits,
   reads it back from B and checks every word, migrates it back to A,
   increments it there and waits.  The program
   creates DIR/ready; the script cuts B's link, creates DIR/down, and
   creates DIR/over once the link is up again.
   within: DIR/ready after two iterations, the cut lands in a migration.
           The outage is shorter than pocld's session grace.  Every call
           succeeds (commands wait out the outage), five more iterations run
           after DIR/over, and every word read back is exactly the count of
           increments.
   beyond: DIR/ready in the third iteration once B's kernel has completed,
           the next command after DIR/down: the buffer's latest content is
           on B alone.  The outage outlasts the grace.  Calls fail, with
           codes that the specification allows for each call; a word read
           back is never an old value: a read either fails or returns
           exactly the increments that completed.  A's device goes on in a
           context of its own, and a new context on B (its link up again)
           runs on a fresh session.  */

#define TEST_NAME "outage"
#include "remote_test_util.c"

#include <sys/stat.h>

static const char *source = "__kernel void inc (__global uint *b)\n"
                            "{ b[get_global_id (0)] += 1u; }\n";

static const char *dir;
static int beyond;

static int
exists (const char *name)
{
  char p[4096];
  struct stat st;
  snprintf (p, sizeof (p), "%s/%s", dir, name);
  return stat (p, &st) == 0;
}

static void
touch (const char *name)
{
  char p[4096];
  snprintf (p, sizeof (p), "%s/%s", dir, name);
  FILE *f = fopen (p, "w");
  if (f == NULL)
    fail ("cannot create %s", p);
  fclose (f);
}

/* Errors an enqueue call may return for a device it can no longer reach:
   every enqueue call may return CL_OUT_OF_RESOURCES, a blocking one also the
   failure of an event it waited for.  */
static void
allowed_enqueue (const char *call, cl_int e)
{
  if (e != CL_OUT_OF_RESOURCES && e != CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
    fail ("%s returned %s, which the specification does not allow here", call,
          clerr (e));
}

/* clFinish: CL_INVALID_COMMAND_QUEUE, CL_OUT_OF_RESOURCES,
   CL_OUT_OF_HOST_MEMORY.  */
static void
allowed_finish (cl_int e)
{
  if (e != CL_OUT_OF_RESOURCES && e != CL_OUT_OF_HOST_MEMORY)
    fail ("clFinish returned %s, which the specification does not allow",
          clerr (e));
}

/* 1 when the kernel's event completed, 0 when it failed; checks the call's
   code.  */
static int
kernel_done (cl_int enq, cl_event ev, const char *where)
{
  if (enq != CL_SUCCESS)
    {
      if (!beyond)
        fail ("%s: clEnqueueNDRangeKernel: %s", where, clerr (enq));
      allowed_enqueue ("clEnqueueNDRangeKernel", enq);
      return 0;
    }
  cl_int st = CL_QUEUED;
  CHECK (clGetEventInfo (ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof (st),
                         &st, NULL));
  clReleaseEvent (ev);
  if (st == CL_COMPLETE)
    return 1;
  if (st >= 0)
    fail ("%s: the kernel is %d after clFinish", where, st);
  if (!beyond)
    fail ("%s: the kernel failed: %s", where, clerr (st));
  return 0;
}

static void
check_words (const cl_uint *h, size_t words, cl_uint want, const char *what)
{
  size_t i;
  for (i = 0; i < words; ++i)
    if (h[i] != want)
      fail ("%s: word %zu is %u, expected %u: %s", what, i, h[i], want,
            h[i] < want ? "a completed increment was lost" : "counted twice");
}

/* A context of one device runs the kernel on a fresh buffer, bit-exact.  */
static void
run_alone (cl_device_id dev, const char *what)
{
  cl_int err;
  cl_context ctx = clCreateContext (NULL, 1, &dev, NULL, NULL, &err);
  CHECK (err);
  cl_command_queue q = clCreateCommandQueue (ctx, dev, 0, &err);
  CHECK (err);
  cl_program p = clCreateProgramWithSource (ctx, 1, &source, NULL, &err);
  CHECK (err);
  CHECK (clBuildProgram (p, 1, &dev, NULL, NULL, NULL));
  cl_kernel k = clCreateKernel (p, "inc", &err);
  CHECK (err);
  size_t words = 1 << 16;
  cl_uint *h = xmalloc (words * sizeof (cl_uint));
  size_t i;
  for (i = 0; i < words; ++i)
    h[i] = (cl_uint)i;
  cl_mem b = clCreateBuffer (ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                             words * sizeof (cl_uint), h, &err);
  CHECK (err);
  CHECK (clSetKernelArg (k, 0, sizeof (b), &b));
  CHECK (clEnqueueNDRangeKernel (q, k, 1, NULL, &words, NULL, 0, NULL, NULL));
  CHECK (clEnqueueReadBuffer (q, b, CL_TRUE, 0, words * sizeof (cl_uint), h,
                              0, NULL, NULL));
  for (i = 0; i < words; ++i)
    if (h[i] != (cl_uint)i + 1)
      fail ("%s: word %zu is %u, expected %u", what, i, h[i], (cl_uint)i + 1);
  free (h);
  clReleaseMemObject (b);
  clReleaseKernel (k);
  clReleaseProgram (p);
  clReleaseCommandQueue (q);
  clReleaseContext (ctx);
  note ("%s: a context of its own runs bit-exact", what);
}

int
main (int argc, char **argv)
{
  if (argc != 4
      || (strcmp (argv[1], "within") != 0 && strcmp (argv[1], "beyond") != 0))
    {
      fprintf (stderr, "usage: test_outage within|beyond MIB DIR\n");
      return 2;
    }
  beyond = strcmp (argv[1], "beyond") == 0;
  size_t words = (size_t)atoi (argv[2]) << 18;
  dir = argv[3];
  watchdog (beyond ? 400 : 300, "the outage run");

  cl_device_id devs[2];
  if (all_devices (devs, 2) != 2)
    fail ("two remote devices expected");
  cl_int err;
  cl_context ctx = clCreateContext (NULL, 2, devs, NULL, NULL, &err);
  CHECK (err);
  cl_command_queue qa = clCreateCommandQueue (ctx, devs[0], 0, &err);
  CHECK (err);
  cl_command_queue qb = clCreateCommandQueue (ctx, devs[1], 0, &err);
  CHECK (err);
  cl_program p = clCreateProgramWithSource (ctx, 1, &source, NULL, &err);
  CHECK (err);
  CHECK (clBuildProgram (p, 2, devs, NULL, NULL, NULL));
  cl_kernel k = clCreateKernel (p, "inc", &err);
  CHECK (err);
  cl_uint *h = xmalloc (words * sizeof (cl_uint));
  memset (h, 0, words * sizeof (cl_uint));
  cl_mem b = clCreateBuffer (ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                             words * sizeof (cl_uint), h, &err);
  CHECK (err);
  CHECK (clSetKernelArg (k, 0, sizeof (b), &b));

  cl_uint done = 0; /* increments whose kernel completed */
  unsigned iter = 0, after = 0, failures = 0;
  while (!exists ("over") || (!beyond && after < 5))
    {
      cl_command_queue qs[2] = { qb, qa };
      int half;
      for (half = 0; half < 2; ++half)
        {
          cl_command_queue q = qs[half];
          cl_event ev = NULL;
          cl_int m = clEnqueueMigrateMemObjects (q, 1, &b, 0, 0, NULL, NULL);
          if (m != CL_SUCCESS)
            {
              if (!beyond)
                fail ("iteration %u: clEnqueueMigrateMemObjects: %s", iter,
                      clerr (m));
              allowed_enqueue ("clEnqueueMigrateMemObjects", m);
            }
          cl_int e = clEnqueueNDRangeKernel (q, k, 1, NULL, &words, NULL, 0,
                                             NULL, &ev);
          cl_int f = clFinish (q);
          if (f != CL_SUCCESS)
            {
              if (!beyond)
                fail ("iteration %u: clFinish: %s", iter, clerr (f));
              allowed_finish (f);
            }
          int ok = kernel_done (e, ev, half ? "on A" : "on B");
          done += ok;
          failures += !ok;
          if (half == 0 && ok)
            {
              /* the bytes cross B's client link too, and are checked */
              cl_int r = clEnqueueReadBuffer (qb, b, CL_TRUE, 0,
                                              words * sizeof (cl_uint), h, 0,
                                              NULL, NULL);
              if (r == CL_SUCCESS)
                check_words (h, words, done, "a read from B");
              else if (!beyond)
                fail ("iteration %u: the read from B: %s", iter, clerr (r));
              else
                allowed_enqueue ("clEnqueueReadBuffer", r);
            }
          if (iter == 2 && half == 0 && beyond)
            {
              /* The latest content is on B alone now.  */
              touch ("ready");
              while (!exists ("down"))
                usleep (10000);
            }
        }
      ++iter;
      if (iter == 2 && !beyond)
        touch ("ready");
      if (exists ("over"))
        ++after;
      if (beyond && failures > 0 && exists ("over"))
        break;
    }
  note ("%u iterations, %u increments completed, %u failed", iter, done,
        failures);

  /* The read, on A: exactly what completed, or an error.  */
  cl_int r = clEnqueueReadBuffer (qa, b, CL_TRUE, 0, words * sizeof (cl_uint),
                                  h, 0, NULL, NULL);
  if (r != CL_SUCCESS)
    {
      if (!beyond)
        fail ("the final read: %s", clerr (r));
      allowed_enqueue ("clEnqueueReadBuffer", r);
      note ("the final read failed (%s): the buffer's content was on B",
            clerr (r));
    }
  else
    check_words (h, words, done, "the final read");
  if (!beyond)
    {
      if (failures)
        fail ("%u commands failed", failures);
      note ("every word is %u", done);
    }
  else
    {
      run_alone (devs[0], "A");
      run_alone (devs[1], "B, on a fresh session");
    }
  free (h);
  clReleaseMemObject (b);
  clReleaseKernel (k);
  clReleaseProgram (p);
  clReleaseCommandQueue (qa);
  clReleaseCommandQueue (qb);
  clReleaseContext (ctx);
  printf ("%s: PASS\n", TEST_NAME);
  return 0;
}
