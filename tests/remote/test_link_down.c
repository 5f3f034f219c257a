/* test_link_down.c - the client side of remote/link_down: what an
   application sees while its link to pocld is down.

   Usage: test_link_down CONTROL_SOCKET
   Run by test_link_down.sh through a fault_proxy whose control socket is
   CONTROL_SOCKET, with POCL_REMOTE_RECONNECT_TIMEOUT_MS short (2 s).
   1. A write / kernel / read round verifies.
   2. The proxy pauses (cuts everything, refuses new connections).  A round
      enqueued now is accepted; CL_DEVICE_AVAILABLE turns false.
   3. The proxy resumes: the round completes and verifies, and
      CL_DEVICE_AVAILABLE turns true again.
   4. The proxy pauses for good: a blocking read returns an error (or a
      failed event) once the reconnect time limit has passed, clFinish
      returns, CL_DEVICE_AVAILABLE stays false, every release returns.
   Each step is bounded by the watchdog; nothing checks how long it took.  */

#define TEST_NAME "link_down"
#include "remote_test_util.c"

#include <sys/socket.h>
#include <sys/un.h>

#define WORDS 65536

static const char *source = "__kernel void inc (__global uint *b)\n"
                            "{ b[get_global_id (0)] += 1u; }\n";

static void
proxy (const char *path, const char *cmd)
{
  int fd = socket (AF_UNIX, SOCK_STREAM, 0);
  struct sockaddr_un a;
  memset (&a, 0, sizeof (a));
  a.sun_family = AF_UNIX;
  snprintf (a.sun_path, sizeof (a.sun_path), "%s", path);
  char reply[128] = "";
  if (fd < 0 || connect (fd, (struct sockaddr *)&a, sizeof (a)) != 0
      || write (fd, cmd, strlen (cmd)) != (ssize_t)strlen (cmd)
      || read (fd, reply, sizeof (reply) - 1) <= 0
      || strncmp (reply, "ok", 2) != 0)
    fail ("the proxy did not take '%s' (%s)", cmd, reply);
  close (fd);
  note ("proxy: %s", cmd);
}

static cl_bool
available (cl_device_id dev)
{
  cl_bool a = CL_FALSE;
  CHECK (clGetDeviceInfo (dev, CL_DEVICE_AVAILABLE, sizeof (a), &a, NULL));
  return a;
}

static void
wait_available (cl_device_id dev, cl_bool want)
{
  while (available (dev) != want)
    usleep (10000);
}

static void
enqueue_round (cl_command_queue q, cl_kernel k, cl_mem b, uint32_t *host,
               uint32_t *back, uint32_t round)
{
  const size_t n = WORDS;
  for (size_t i = 0; i < n; ++i)
    host[i] = mix32 (round, (uint32_t)i);
  memset (back, 0, n * sizeof (uint32_t));
  CHECK (clEnqueueWriteBuffer (q, b, CL_FALSE, 0, n * 4, host, 0, NULL, NULL));
  CHECK (clSetKernelArg (k, 0, sizeof (b), &b));
  CHECK (clEnqueueNDRangeKernel (q, k, 1, NULL, &n, NULL, 0, NULL, NULL));
  CHECK (clEnqueueReadBuffer (q, b, CL_FALSE, 0, n * 4, back, 0, NULL, NULL));
  CHECK (clFlush (q));
}

static void
check_round (const uint32_t *host, const uint32_t *back, const char *which)
{
  for (size_t i = 0; i < WORDS; ++i)
    if (back[i] != host[i] + 1u)
      fail ("%s: word %zu is 0x%08x, expected 0x%08x", which, i, back[i],
            host[i] + 1u);
}

int
main (int argc, char **argv)
{
  if (argc != 2)
    {
      fprintf (stderr, "usage: %s CONTROL_SOCKET\n", argv[0]);
      return 2;
    }
  const char *ctl = argv[1];
  uint32_t *host = xmalloc (WORDS * 4), *back = xmalloc (WORDS * 4);

  watchdog (120, "setup and a first round");
  cl_device_id dev;
  cl_context ctx;
  cl_command_queue q = open_remote_queue (&dev, &ctx);
  cl_program p = build_program (ctx, dev, source, NULL);
  cl_kernel k = create_kernel (p, "inc");
  cl_mem b = create_buffer (ctx, CL_MEM_READ_WRITE, WORDS * 4, NULL);
  enqueue_round (q, k, b, host, back, 1);
  CHECK (clFinish (q));
  check_round (host, back, "before the link went down");
  if (!available (dev))
    fail ("CL_DEVICE_AVAILABLE is false before the link went down");

  watchdog (30, "CL_DEVICE_AVAILABLE turning false while the link is down");
  proxy (ctl, "pause");
  enqueue_round (q, k, b, host, back, 2);
  wait_available (dev, CL_FALSE);
  note ("CL_DEVICE_AVAILABLE is false; the round is enqueued");

  watchdog (30, "the round after the link came back");
  proxy (ctl, "resume");
  CHECK (clFinish (q));
  check_round (host, back, "enqueued while the link was down");
  wait_available (dev, CL_TRUE);
  note ("the round verified and CL_DEVICE_AVAILABLE is true again");

  watchdog (30, "a blocking read after the link went down for good");
  proxy (ctl, "pause");
  cl_event ev = NULL;
  cl_int err = clEnqueueReadBuffer (q, b, CL_TRUE, 0, WORDS * 4, back, 0,
                                    NULL, &ev);
  cl_int st = ev ? event_status (ev) : CL_COMPLETE;
  if (err == CL_SUCCESS && st >= 0)
    fail ("a read succeeded with the server out of reach");
  note ("the read reported %d (%s), its event %d", err, clerr (err), st);
  cl_int f = clFinish (q);
  note ("clFinish returned %d (%s)", f, clerr (f));
  if (available (dev))
    fail ("CL_DEVICE_AVAILABLE is true after the session was given up");

  watchdog (30, "releasing everything");
  if (ev)
    clReleaseEvent (ev);
  clReleaseMemObject (b);
  clReleaseKernel (k);
  clReleaseProgram (p);
  clReleaseCommandQueue (q);
  clReleaseContext (ctx);
  alarm (0);
  free (host);
  free (back);
  printf ("%s: PASS: commands survived a link outage, and a lasting one "
          "gave errors\n",
          TEST_NAME);
  return 0;
}
