/* test_server_killed.c - the client side of remote/server_killed.

   Usage: test_server_killed POCLD_PID
   Run by test_server_killed.sh through run_remote.sh against a pocld of its
   own (POCLD_PID), which this program kills with SIGKILL halfway.

   1. A normal write/read round trip works (the server is really there).
   2. A kernel that never finishes by itself (it spins until a flag that stays
      0 equals a nonzero key) is enqueued, followed by a non-blocking read that depends on
      it; both are still pending a moment later.
   3. A helper thread SIGKILLs pocld while the main thread sits in a blocking
      clEnqueueReadBuffer behind the spinning kernel.
   4. Within 20 s (alarm): the blocking read returns an error, never
      CL_SUCCESS (patch 0110), and its event has a negative status;
      clWaitForEvents on the kernel's
      event returns an error; the kernel's and both reads' event statuses are
      negative; clFinish returns.
   5. Within 20 s more: CL_DEVICE_AVAILABLE is CL_FALSE; a new buffer plus a
      blocking write, a kernel launch, and a build of a new program on that
      device all report an error (return code or negative event status)
      instead of hanging; releasing everything returns.

   Never checks how long anything took, only that it ended (the alarm bounds
   every step so a hang becomes a FAIL with the step's name).  SIGPIPE is left
   at its default on purpose: a driver that writes to the dead socket without
   MSG_NOSIGNAL kills this process, which the script reports.  */

#define TEST_NAME "server_killed"
#include "remote_test_util.c"

#include <pthread.h>
#include <time.h>

static const char *source
    = "__kernel void spin (volatile __global uint *flag, __global uint *out,\n"
      "                    uint key)\n"
      "{\n"
      "  uint n = 0;\n"
      "  while (flag[0] != key)\n"
      "    ++n;\n"
      "  out[0] = n;\n"
      "}\n"
      "__kernel void inc (__global uint *b)\n"
      "{ b[get_global_id (0)] += 1u; }\n";

static pid_t pocld_pid;

static int
is_pocld (pid_t pid)
{
  char path[64], buf[4096];
  snprintf (path, sizeof (path), "/proc/%d/cmdline", (int)pid);
  FILE *f = fopen (path, "rb");
  if (f == NULL)
    return 0;
  size_t n = fread (buf, 1, sizeof (buf) - 1, f);
  fclose (f);
  buf[n] = 0;
  const char *base = strrchr (buf, '/');
  base = base ? base + 1 : buf;
  return strcmp (base, "pocld") == 0;
}

static void *
killer (void *arg)
{
  (void)arg;
  /* Pacing only: give the blocking read time to start blocking.  */
  sleep (1);
  if (kill (pocld_pid, SIGKILL) != 0)
    {
      fprintf (stderr, "%s: FAIL: kill(%d, SIGKILL): %s\n", TEST_NAME,
               (int)pocld_pid, strerror (errno));
      _exit (1);
    }
  printf ("%s: killed pocld (pid %d) with SIGKILL\n", TEST_NAME,
          (int)pocld_pid);
  fflush (stdout);
  return NULL;
}

/* An operation "reports an error" when its return code is an error or, if
   it returned CL_SUCCESS, its event ended with a negative status.  */
static int
failed_op (cl_int ret, cl_event ev, cl_int *ev_status)
{
  *ev_status = 1;
  if (ev)
    {
      /* A command that was enqueued must end either way.  */
      clWaitForEvents (1, &ev);
      *ev_status = event_status (ev);
    }
  if (ret != CL_SUCCESS)
    return 1;
  return ev && *ev_status < 0;
}

int
main (int argc, char **argv)
{
  if (argc != 2 || atoi (argv[1]) <= 1)
    {
      fprintf (stderr, "usage: %s POCLD_PID\n", argv[0]);
      return 2;
    }
  pocld_pid = (pid_t)atoi (argv[1]);
  if (!is_pocld (pocld_pid))
    fail ("pid %d is not a running pocld", (int)pocld_pid);

  watchdog (120, "setup (device, build, round trip) before the kill");
  cl_int err;
  cl_device_id dev;
  cl_context ctx;
  cl_command_queue q = open_remote_queue (&dev, &ctx);
  cl_program prog = build_program (ctx, dev, source, NULL);
  cl_kernel spin = create_kernel (prog, "spin");
  cl_kernel inc = create_kernel (prog, "inc");

  /* 1. round trip */
  uint32_t zero4[4] = { 0, 0, 0, 0 }, vals[256], back[256];
  for (int i = 0; i < 256; ++i)
    vals[i] = mix32 (77, (uint32_t)i);
  /* The flag never becomes the key: the kernel spins until pocld dies.  An
     explicit write (not COPY_HOST_PTR) keeps this test about server death
     only.  */
  cl_mem flag = create_buffer (ctx, CL_MEM_READ_WRITE, sizeof (zero4), NULL);
  CHECK (clEnqueueWriteBuffer (q, flag, CL_TRUE, 0, sizeof (zero4), zero4, 0,
                               NULL, NULL));
  cl_mem out = create_buffer (ctx, CL_MEM_READ_WRITE, sizeof (back), NULL);
  cl_mem other = create_buffer (ctx, CL_MEM_READ_WRITE, sizeof (back), NULL);
  CHECK (clEnqueueWriteBuffer (q, other, CL_TRUE, 0, sizeof (vals), vals, 0,
                               NULL, NULL));
  CHECK (clEnqueueReadBuffer (q, other, CL_TRUE, 0, sizeof (back), back, 0,
                              NULL, NULL));
  EXPECT (memcmp (back, vals, sizeof (vals)) == 0,
          "round trip before the kill returned wrong data");
  note ("round trip before the kill OK");

  /* 2. the never-ending kernel and a read behind it */
  CHECK (clSetKernelArg (spin, 0, sizeof (cl_mem), &flag));
  CHECK (clSetKernelArg (spin, 1, sizeof (cl_mem), &out));
  const cl_uint key = 0xFEEDF00Du;
  CHECK (clSetKernelArg (spin, 2, sizeof (key), &key));
  size_t one = 1;
  cl_event ev_k, ev_r, ev_b = NULL;
  CHECK (clEnqueueNDRangeKernel (q, spin, 1, NULL, &one, &one, 0, NULL,
                                 &ev_k));
  uint32_t out_host[256], other_host[256];
  memset (out_host, 0xCD, sizeof (out_host));
  memset (other_host, 0xCD, sizeof (other_host));
  CHECK (clEnqueueReadBuffer (q, out, CL_FALSE, 0, sizeof (out_host),
                              out_host, 0, NULL, &ev_r));
  CHECK (clFlush (q));
  usleep (500000); /* pacing: let the kernel reach the server */
  cl_int st_k = event_status (ev_k), st_r = event_status (ev_r);
  if (st_k <= CL_COMPLETE)
    fail ("the spinning kernel ended before the kill (status %d %s): it "
          "cannot have run correctly",
          st_k, clerr (st_k));
  if (st_r <= CL_COMPLETE)
    fail ("the read behind the spinning kernel ended before the kill "
          "(status %d %s)",
          st_r, clerr (st_r));
  note ("kernel (status %d) and read (status %d) pending; killing pocld "
        "during a blocking read",
        st_k, st_r);

  /* 3./4. kill while blocked */
  pthread_t th;
  if (pthread_create (&th, NULL, killer, NULL))
    fail ("pthread_create failed");
  watchdog (21, "the blocking read / events to fail after pocld was killed "
                "(bound: 20 s after the kill)");
  cl_int ret_b = clEnqueueReadBuffer (q, other, CL_TRUE, 0, sizeof (other_host),
                                      other_host, 0, NULL, &ev_b);
  pthread_join (th, NULL);
  cl_int st_b = 1;
  if (ev_b)
    st_b = event_status (ev_b);
  note ("blocking read returned %d (%s), its event status %d (%s)", ret_b,
        clerr (ret_b), st_b, clerr (st_b));
  if (ret_b == CL_SUCCESS)
    fail ("the blocking read returned CL_SUCCESS (its event status %d %s) "
          "after the server was killed: the caller would trust data that "
          "never arrived",
          st_b, clerr (st_b));

  cl_int ret_w = clWaitForEvents (1, &ev_k);
  st_k = event_status (ev_k);
  st_r = event_status (ev_r);
  note ("clWaitForEvents(kernel) returned %d (%s); kernel status %d (%s), "
        "read status %d (%s)",
        ret_w, clerr (ret_w), st_k, clerr (st_k), st_r, clerr (st_r));
  if (ret_w == CL_SUCCESS)
    fail ("clWaitForEvents on the kernel killed with its server returned "
          "CL_SUCCESS (expected CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)");
  if (st_k >= 0)
    fail ("the killed kernel's event status is %d (%s), expected < 0", st_k,
          clerr (st_k));
  cl_int ret_wr = clWaitForEvents (1, &ev_r);
  st_r = event_status (ev_r);
  if (st_r >= 0 || ret_wr == CL_SUCCESS)
    fail ("the read queued behind the killed kernel: clWaitForEvents %d, "
          "status %d (%s), expected an error and a status < 0",
          ret_wr, st_r, clerr (st_r));
  if (st_b >= 0)
    fail ("the blocking read's event status is %d (%s), expected < 0", st_b,
          clerr (st_b));
  cl_int ret_f = clFinish (q);
  note ("clFinish returned %d (%s)", ret_f, clerr (ret_f));

  /* 5. the device afterwards */
  watchdog (20, "API calls on the device after its server died");
  cl_bool avail = CL_TRUE;
  CHECK (clGetDeviceInfo (dev, CL_DEVICE_AVAILABLE, sizeof (avail), &avail,
                          NULL));
  if (avail != CL_FALSE)
    fail ("CL_DEVICE_AVAILABLE is still CL_TRUE after the server died");
  note ("CL_DEVICE_AVAILABLE = CL_FALSE");

  cl_int st;
  cl_mem nb = clCreateBuffer (ctx, CL_MEM_READ_WRITE, 4096, NULL, &err);
  if (err != CL_SUCCESS)
    note ("clCreateBuffer after the loss: %d (%s)", err, clerr (err));
  else
    {
      cl_event ev = NULL;
      cl_int r = clEnqueueWriteBuffer (q, nb, CL_TRUE, 0, sizeof (vals), vals,
                                       0, NULL, &ev);
      if (!failed_op (r, ev, &st))
        fail ("clCreateBuffer + blocking clEnqueueWriteBuffer after the "
              "server died: returned %d, event status %d: no error",
              r, st);
      note ("clCreateBuffer OK (lazy), blocking write after the loss: %d "
            "(%s), event status %d (%s)",
            r, clerr (r), st, clerr (st));
      if (ev)
        clReleaseEvent (ev);
    }

  {
    cl_event ev = NULL;
    size_t g = 16;
    CHECK (clSetKernelArg (inc, 0, sizeof (cl_mem), &other));
    cl_int r
        = clEnqueueNDRangeKernel (q, inc, 1, NULL, &g, NULL, 0, NULL, &ev);
    if (r == CL_SUCCESS)
      clFlush (q);
    if (!failed_op (r, r == CL_SUCCESS ? ev : NULL, &st))
      fail ("kernel launch after the server died: returned %d, event status "
            "%d: no error",
            r, st);
    note ("kernel launch after the loss: %d (%s), event status %d", r,
          clerr (r), st);
    if (ev)
      clReleaseEvent (ev);
  }

  {
    char src[256];
    snprintf (src, sizeof (src),
              "/* %d-%ld */ __kernel void fresh (__global int *p) "
              "{ p[0] = 1; }\n",
              (int)getpid (), (long)time (NULL));
    const char *s = src;
    cl_program p2 = clCreateProgramWithSource (ctx, 1, &s, NULL, &err);
    CHECK_ERR (err, "clCreateProgramWithSource (after the loss)");
    cl_int r = clBuildProgram (p2, 1, &dev, NULL, NULL, NULL);
    if (r == CL_SUCCESS)
      fail ("clBuildProgram of a new program on the dead server's device "
            "returned CL_SUCCESS");
    note ("clBuildProgram after the loss: %d (%s)", r, clerr (r));
    clReleaseProgram (p2);
  }

  {
    cl_command_queue q2 = clCreateCommandQueue (ctx, dev, 0, &err);
    note ("clCreateCommandQueue after the loss: %d (%s)", err, clerr (err));
    if (err == CL_SUCCESS)
      clReleaseCommandQueue (q2);
  }

  watchdog (20, "releasing the objects of the dead device");
  if (nb)
    clReleaseMemObject (nb);
  clReleaseEvent (ev_k);
  clReleaseEvent (ev_r);
  if (ev_b)
    clReleaseEvent (ev_b);
  clReleaseMemObject (flag);
  clReleaseMemObject (out);
  clReleaseMemObject (other);
  clReleaseKernel (spin);
  clReleaseKernel (inc);
  clReleaseProgram (prog);
  clReleaseCommandQueue (q);
  clReleaseContext (ctx);
  watchdog (0, NULL);
  printf ("%s: PASS: after SIGKILL of pocld every pending and new operation "
          "failed in bounded time and the device went unavailable\n",
          TEST_NAME);
  return 0;
}
