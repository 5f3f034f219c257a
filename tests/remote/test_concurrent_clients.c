/* test_concurrent_clients.c - several client processes on one pocld at once.

   Usage: test_concurrent_clients [CLIENTS [ITERATIONS]]  (default 4, 300)
   Run through run_remote.sh (POCL_DEVICES=remote, POCL_REMOTE0_PARAMETERS).

   The parent forks CLIENTS children before it touches OpenCL; each child is
   an independent PoCL-R client (own session on the same pocld): it builds a
   kernel, then ITERATIONS times writes data that is distinct per client and
   per iteration, launches the kernel, reads the result back and compares it
   bit for bit with the value computed on the host.  Every 16th iteration
   uses a buffer large enough (>= POCL_REMOTE_DATA_SOCKET_THRESHOLD) to go over
   the data socket; the sizes also differ per client.  The children start
   together (a pipe releases them) so their sessions overlap.  PASS when every
   child verified every iteration; FAIL names the child, the iteration and the
   first wrong element.  */

#define TEST_NAME "concurrent_clients"
#include "remote_test_util.c"

#include <sys/wait.h>
#include <time.h>

static const char *source
    = "__kernel void mixk (__global const uint *in, __global uint *out,\n"
      "                    uint salt, uint n)\n"
      "{\n"
      "  uint i = (uint)get_global_id (0);\n"
      "  if (i >= n) return;\n"
      "  uint x = in[i] ^ salt;\n"
      "  x = x * 2654435761u + i;\n"
      "  x ^= x >> 13;\n"
      "  out[i] = x + (salt << 3);\n"
      "}\n";

static uint32_t
expect_val (uint32_t in, uint32_t salt, uint32_t i)
{
  uint32_t x = in ^ salt;
  x = x * 2654435761u + i;
  x ^= x >> 13;
  return x + (salt << 3);
}

static int
run_client (int id, int iterations)
{
  cl_device_id dev;
  cl_context ctx;
  cl_command_queue q = open_remote_queue (&dev, &ctx);
  cl_program prog = build_program (ctx, dev, source, NULL);
  cl_kernel k = create_kernel (prog, "mixk");

  /* Sizes differ per client: small ones on the command socket, big ones
     (> 64 KiB) on the data socket.  */
  const uint32_t small_n = 1000 + 37 * (uint32_t)id;
  const uint32_t big_n = 40000 + 111 * (uint32_t)id;
  cl_mem in_s = create_buffer (ctx, CL_MEM_READ_ONLY, small_n * 4, NULL);
  cl_mem out_s = create_buffer (ctx, CL_MEM_WRITE_ONLY, small_n * 4, NULL);
  cl_mem in_b = create_buffer (ctx, CL_MEM_READ_ONLY, big_n * 4, NULL);
  cl_mem out_b = create_buffer (ctx, CL_MEM_WRITE_ONLY, big_n * 4, NULL);
  uint32_t *in = xmalloc (big_n * 4), *out = xmalloc (big_n * 4);
  unsigned long checked = 0;

  for (int it = 0; it < iterations; ++it)
    {
      int big = (it % 16) == 15;
      uint32_t n = big ? big_n : small_n;
      cl_mem bi = big ? in_b : in_s, bo = big ? out_b : out_s;
      uint32_t stream = (uint32_t)id * 100003u + (uint32_t)it;
      uint32_t salt = mix32 (0xC0FFEEu + (uint32_t)id, (uint32_t)it);
      for (uint32_t i = 0; i < n; ++i)
        in[i] = mix32 (stream, i);
      memset (out, 0xEE, n * 4);

      CHECK (clEnqueueWriteBuffer (q, bi, CL_FALSE, 0, n * 4, in, 0, NULL,
                                   NULL));
      CHECK (clSetKernelArg (k, 0, sizeof (cl_mem), &bi));
      CHECK (clSetKernelArg (k, 1, sizeof (cl_mem), &bo));
      CHECK (clSetKernelArg (k, 2, sizeof (salt), &salt));
      CHECK (clSetKernelArg (k, 3, sizeof (n), &n));
      size_t global = n;
      CHECK (clEnqueueNDRangeKernel (q, k, 1, NULL, &global, NULL, 0, NULL,
                                     NULL));
      cl_event rd;
      CHECK (clEnqueueReadBuffer (q, bo, CL_TRUE, 0, n * 4, out, 0, NULL,
                                  &rd));
      cl_int st = event_status (rd);
      if (st != CL_COMPLETE)
        fail ("client %d iteration %d: read event status %d (%s)", id, it, st,
              clerr (st));
      clReleaseEvent (rd);
      for (uint32_t i = 0; i < n; ++i)
        {
          uint32_t want = expect_val (in[i], salt, i);
          if (out[i] != want)
            fail ("client %d iteration %d (%s buffer, n=%u): out[%u] = "
                  "0x%08x, expected 0x%08x",
                  id, it, big ? "big" : "small", n, i, out[i], want);
        }
      checked += n;
      /* The input buffer is reused: this in-order queue's next write must
         not overtake the kernel, which the read above already ensured.  */
    }
  CHECK (clFinish (q));
  clReleaseMemObject (in_s);
  clReleaseMemObject (out_s);
  clReleaseMemObject (in_b);
  clReleaseMemObject (out_b);
  clReleaseKernel (k);
  clReleaseProgram (prog);
  clReleaseCommandQueue (q);
  clReleaseContext (ctx);
  free (in);
  free (out);
  note ("client %d: verified %d launches, %lu elements", id, iterations,
        checked);
  return 0;
}

int
main (int argc, char **argv)
{
  int clients = argc > 1 ? atoi (argv[1]) : 4;
  int iterations = argc > 2 ? atoi (argv[2]) : 300;
  if (clients < 1 || clients > 64 || iterations < 1)
    {
      fprintf (stderr, "usage: %s [CLIENTS (1..64) [ITERATIONS]]\n", argv[0]);
      return 2;
    }

  /* Children block on this pipe until all of them exist: then they all
     connect and work at the same time.  */
  int go[2];
  if (pipe (go))
    fail ("pipe: %s", strerror (errno));
  pid_t pids[64];
  for (int c = 0; c < clients; ++c)
    {
      pid_t p = fork ();
      if (p < 0)
        fail ("fork: %s", strerror (errno));
      if (p == 0)
        {
          close (go[1]);
          char b;
          ssize_t r = read (go[0], &b, 1); /* EOF = go */
          (void)r;
          close (go[0]);
          /* A child must not outlive the test: bounded by its own alarm. */
          watchdog (240, "a client's launches and read-backs");
          exit (run_client (c, iterations));
        }
      pids[c] = p;
    }
  close (go[0]);
  close (go[1]); /* release them */

  /* Parent: collect every child, bounded.  */
  int failed = 0, remaining = clients;
  time_t deadline = time (NULL) + 270;
  while (remaining > 0)
    {
      int status;
      pid_t p = waitpid (-1, &status, WNOHANG);
      if (p == 0)
        {
          if (time (NULL) > deadline)
            {
              for (int c = 0; c < clients; ++c)
                if (pids[c] > 0)
                  kill (pids[c], SIGKILL);
              fail ("%d client(s) still running after 270 s; killed them",
                    remaining);
            }
          usleep (50000);
          continue;
        }
      if (p < 0)
        fail ("waitpid: %s", strerror (errno));
      for (int c = 0; c < clients; ++c)
        if (pids[c] == p)
          {
            pids[c] = -1;
            --remaining;
            if (!WIFEXITED (status) || WEXITSTATUS (status) != 0)
              {
                ++failed;
                if (WIFSIGNALED (status))
                  fprintf (stderr, "%s: client %d killed by signal %d\n",
                           TEST_NAME, c, WTERMSIG (status));
                else
                  fprintf (stderr, "%s: client %d exited with status %d\n",
                           TEST_NAME, c, WEXITSTATUS (status));
              }
          }
    }
  if (failed)
    fail ("%d of %d concurrent clients failed (see their messages above)",
          failed, clients);
  printf ("%s: PASS: %d concurrent clients x %d launches verified "
          "bit-exactly\n",
          TEST_NAME, clients, iterations);
  return 0;
}
