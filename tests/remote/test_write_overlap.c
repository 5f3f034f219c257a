/* test_write_overlap.c - a large write whose bytes are still on their way
   holds up neither commands on other queues nor the server's command
   reader; later commands on its own in-order queue still see its bytes.

   Usage: test_write_overlap [remote|local] [MiB]   (default remote, 64)

   The source of the write is memory whose second half is not there yet
   (userfaultfd, missing pages): the client's send of the bytes stops in
   the middle, deterministically, until the test supplies that half.
   Meanwhile a kernel and a 4-byte read of its result on queue B must
   complete (so before the write can), and then the same behind a user
   event that the test sets meanwhile (its NOTIFY_EVENT goes on the command
   socket behind the WRITE).  Then the rest of the bytes go, and
   a copy of the written buffer right behind the write on queue A holds
   every written bit.  Without userfaultfd (no permission), and with
   "local", only the bits are checked.

   test_write_overlap remote MiB measure ROUNDS: no test; prints how long
   the kernel and read on queue B take when enqueued as the write's bytes
   start to leave (held at their first page, then all let go at once),
   against the same on an idle queue B, and how long the write takes
   (doc/benchmarks.md, "Commands behind a large write").  */

#define TEST_NAME "write_overlap"
#include "remote_test_util.c"

#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>

static const char *source
    = "__kernel void bump (__global uint *x, uint v) { x[0] += v; }\n";

static cl_command_queue qa;
static cl_mem big;
static void *src;
static size_t size;
static cl_event write_ev;

static uint32_t
pattern (size_t i)
{
  return (uint32_t)(i * 2654435761u) ^ 0x5a5a1234u;
}

static void *
write_thread (void *arg)
{
  (void)arg;
  cl_int err = clEnqueueWriteBuffer (qa, big, CL_FALSE, 0, size, src, 0, NULL,
                                     &write_ev);
  if (err != CL_SUCCESS)
    fail ("clEnqueueWriteBuffer: %s", clerr (err));
  return NULL;
}

/* Is thread `tid` of this process in a system call that sends?  */
static int
in_send (unsigned tid)
{
  char path[64];
  long nr = -1;
  snprintf (path, sizeof path, "/proc/self/task/%u/syscall", tid);
  FILE *f = fopen (path, "r");
  if (f != NULL)
    {
      if (fscanf (f, "%ld", &nr) != 1)
        nr = -1;
      fclose (f);
    }
  return nr == SYS_sendmsg || nr == SYS_sendto || nr == SYS_writev
         || nr == SYS_write;
}

/* Waits until the client's send of the write's bytes stops at a missing
   page of src (the WRITE is on its way then).  A fault elsewhere (a copy in
   user space before the driver has the command) gets its page, and the
   wait goes on.  */
static void
wait_send_held (int uffd, const uint32_t *want)
{
  long page = sysconf (_SC_PAGESIZE);
  for (;;)
    {
      struct pollfd pfd = { uffd, POLLIN, 0 };
      struct uffd_msg m;
      if (poll (&pfd, 1, 60000) != 1 || read (uffd, &m, sizeof m) != sizeof m)
        fail ("the write's bytes never reached a missing page");
      if (m.event != UFFD_EVENT_PAGEFAULT)
        continue;
      if (in_send (m.arg.pagefault.feat.ptid))
        return;
      uintptr_t at = m.arg.pagefault.address & ~(uintptr_t)(page - 1);
      struct uffdio_copy c
          = { .dst = at,
              .src = (uintptr_t)want + (at - (uintptr_t)src),
              .len = (uint64_t)page,
              .mode = 0 };
      if (ioctl (uffd, UFFDIO_COPY, &c) != 0 && errno != EEXIST)
        fail ("UFFDIO_COPY: %s", strerror (errno));
    }
}

/* Supplies [off, off + len) of src from want, skipping pages already
   there; wakes the threads waiting for them.  */
static void
supply (int uffd, const uint32_t *want, size_t off, size_t len)
{
  long page = sysconf (_SC_PAGESIZE);
  while (len > 0)
    {
      struct uffdio_copy c = { .dst = (uintptr_t)src + off,
                               .src = (uintptr_t)want + off,
                               .len = len,
                               .mode = 0 };
      if (ioctl (uffd, UFFDIO_COPY, &c) == 0)
        return;
      if (errno != EEXIST)
        fail ("UFFDIO_COPY: %s", strerror (errno));
      size_t done = (c.copy > 0 ? (size_t)c.copy : 0) + (size_t)page;
      if (done >= len)
        return;
      off += done;
      len -= done;
    }
}

static cl_int
status_of (cl_event e)
{
  cl_int s = 0;
  CHECK (clGetEventInfo (e, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof (s), &s,
                         NULL));
  return s;
}

/* Waits up to 20 s for e to complete (the server's command reader might
   wait behind the write); its status then.  */
static cl_int
wait_complete (cl_event e)
{
  for (int i = 0; i < 2000 && status_of (e) != CL_COMPLETE; ++i)
    usleep (10000);
  return status_of (e);
}

static double
now_us (void)
{
  struct timespec t;
  clock_gettime (CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int
cmp_double (const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* B's kernel and read: microseconds from before their enqueue to the
   read's completion.  */
static double
run_b (cl_command_queue qb, cl_kernel k, cl_mem small)
{
  size_t one = 1;
  cl_uint got;
  cl_event r;
  double t0 = now_us ();
  CHECK (clEnqueueNDRangeKernel (qb, k, 1, NULL, &one, NULL, 0, NULL, NULL));
  CHECK (clEnqueueReadBuffer (qb, small, CL_FALSE, 0, 4, &got, 0, NULL, &r));
  CHECK (clFlush (qb));
  CHECK (clWaitForEvents (1, &r));
  clReleaseEvent (r);
  return now_us () - t0;
}

static void
measure (int rounds, cl_command_queue qb, cl_kernel k, cl_mem small,
         const uint32_t *want)
{
  double idle[64], behind[64], write[64];
  if (rounds > 64)
    rounds = 64;
  for (int i = 0; i < rounds; ++i)
    {
      idle[i] = run_b (qb, k, small);
      src = mmap (NULL, size, PROT_READ | PROT_WRITE,
                  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      int uffd = (int)syscall (SYS_userfaultfd, O_CLOEXEC);
      struct uffdio_api api = { .api = UFFD_API,
                                .features = UFFD_FEATURE_THREAD_ID };
      struct uffdio_register reg = { .range = { (uintptr_t)src, size },
                                     .mode = UFFDIO_REGISTER_MODE_MISSING };
      if (src == MAP_FAILED || uffd < 0 || ioctl (uffd, UFFDIO_API, &api)
          || ioctl (uffd, UFFDIO_REGISTER, &reg))
        fail ("no userfaultfd: %s", strerror (errno));
      pthread_t t;
      if (pthread_create (&t, NULL, write_thread, NULL) != 0)
        fail ("pthread_create");
      wait_send_held (uffd, want);
      double t0 = now_us ();
      supply (uffd, want, 0, size);
      /* From the bytes' release: B is enqueued right then.  */
      behind[i] = run_b (qb, k, small);
      pthread_join (t, NULL);
      CHECK (clWaitForEvents (1, &write_ev));
      write[i] = now_us () - t0;
      clReleaseEvent (write_ev);
      close (uffd);
      munmap (src, size);
    }
  qsort (idle, rounds, sizeof (double), cmp_double);
  qsort (behind, rounds, sizeof (double), cmp_double);
  qsort (write, rounds, sizeof (double), cmp_double);
  printf ("%s: %zu MiB write, %d rounds, median (min-max) us: queue B idle "
          "%.0f (%.0f-%.0f), queue B behind the write %.0f (%.0f-%.0f), the "
          "write %.0f (%.0f-%.0f)\n",
          TEST_NAME, size >> 20, rounds, idle[rounds / 2], idle[0],
          idle[rounds - 1], behind[rounds / 2], behind[0], behind[rounds - 1],
          write[rounds / 2], write[0], write[rounds - 1]);
}

/* What main made (LeakSanitizer runs the test, tools/sanitize.sh).  */
static void
release_all (cl_context ctx, cl_program prog, cl_kernel k, cl_command_queue qb,
             cl_mem copy, cl_mem small)
{
  clReleaseMemObject (small);
  clReleaseMemObject (copy);
  clReleaseMemObject (big);
  clReleaseKernel (k);
  clReleaseProgram (prog);
  clReleaseCommandQueue (qb);
  clReleaseCommandQueue (qa);
  clReleaseContext (ctx);
}

int
main (int argc, char **argv)
{
  char name[256];
  cl_context ctx;
  cl_int err;
  int remote = !(argc > 1 && strcmp (argv[1], "local") == 0);
  size = (argc > 2 ? (size_t)atoi (argv[2]) : 64) << 20;
  main_thread = pthread_self ();
  watchdog (240, "the test");
  cl_device_id dev = open_test_device (argc, argv, name, sizeof name, &ctx);
  cl_program prog = build_program (ctx, dev, source, NULL);
  cl_kernel k = create_kernel (prog, "bump");
  qa = clCreateCommandQueue (ctx, dev, 0, &err);
  CHECK_ERR (err, "clCreateCommandQueue");
  cl_command_queue qb = clCreateCommandQueue (ctx, dev, 0, &err);
  CHECK_ERR (err, "clCreateCommandQueue");
  big = create_buffer (ctx, CL_MEM_READ_WRITE, size, NULL);
  cl_mem copy = create_buffer (ctx, CL_MEM_READ_WRITE, size, NULL);
  cl_uint zero = 0, v = 7;
  cl_mem small = create_buffer (ctx, CL_MEM_READ_WRITE, 4, NULL);
  CHECK (clEnqueueWriteBuffer (qb, small, CL_TRUE, 0, 4, &zero, 0, NULL,
                               NULL));
  CHECK (clSetKernelArg (k, 0, sizeof small, &small));
  CHECK (clSetKernelArg (k, 1, sizeof v, &v));
  CHECK (clFinish (qa));
  if (argc > 4 && strcmp (argv[3], "measure") == 0)
    {
      uint32_t *w = xmalloc (size);
      for (size_t i = 0; i < size / 4; ++i)
        w[i] = pattern (i);
      measure (atoi (argv[4]), qb, k, small, w);
      free (w);
      release_all (ctx, prog, k, qb, copy, small);
      return 0;
    }

  /* The first half is there; the second faults until supplied.  */
  const size_t half = size / 2;
  uint32_t *want = xmalloc (size);
  for (size_t i = 0; i < size / 4; ++i)
    want[i] = pattern (i);
  src = mmap (NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
              -1, 0);
  if (src == MAP_FAILED)
    fail ("mmap: %s", strerror (errno));
  memcpy (src, want, half);
  int uffd = (int)syscall (SYS_userfaultfd, O_CLOEXEC);
  struct uffdio_api api = { .api = UFFD_API,
                            .features = UFFD_FEATURE_THREAD_ID };
  struct uffdio_register reg
      = { .range = { (uintptr_t)src + half, size - half },
          .mode = UFFDIO_REGISTER_MODE_MISSING };
  /* Only the remote driver sends the bytes (a local device copies them in
     a worker thread: nothing to hold back there).  */
  int held = remote && uffd >= 0 && ioctl (uffd, UFFDIO_API, &api) == 0
             && ioctl (uffd, UFFDIO_REGISTER, &reg) == 0;
  if (!held)
    {
      if (remote)
        note ("no userfaultfd (%s): the bytes are not held back",
              strerror (errno));
      memcpy ((char *)src + half, (char *)want + half, size - half);
    }

  pthread_t t;
  if (pthread_create (&t, NULL, write_thread, NULL) != 0)
    fail ("pthread_create");
  cl_event copy_ev, bump_ev, read_ev, gate_ev, bump2_ev, read2_ev;
  cl_uint got = 0, got2 = 0;
  if (held)
    {
      /* The send stopped at the missing half: the WRITE is on its way,
         its bytes half so.  */
      wait_send_held (uffd, want);
      note ("the write's bytes are held back at the missing half");
    }
  size_t one = 1;
  CHECK (clEnqueueNDRangeKernel (qb, k, 1, NULL, &one, NULL, 0, NULL,
                                 &bump_ev));
  CHECK (clEnqueueReadBuffer (qb, small, CL_FALSE, 0, 4, &got, 0, NULL,
                              &read_ev));
  CHECK (clFlush (qb));
  if (held)
    {
      /* B must finish while the bytes are held back; give up after 20 s
         (the server's command reader waits behind the write), and let the
         bytes go before failing: the write thread holds the client.  */
      cl_int rs = wait_complete (read_ev);
      /* A command of B behind a user event that is set now: the client's
         NOTIFY_EVENT, behind the WRITE on the command socket, must reach
         the server meanwhile too.  */
      cl_int ns = rs;
      if (rs == CL_COMPLETE)
        {
          gate_ev = clCreateUserEvent (ctx, &err);
          CHECK_ERR (err, "clCreateUserEvent");
          CHECK (clEnqueueNDRangeKernel (qb, k, 1, NULL, &one, NULL, 1,
                                         &gate_ev, &bump2_ev));
          CHECK (clEnqueueReadBuffer (qb, small, CL_FALSE, 0, 4, &got2, 0,
                                      NULL, &read2_ev));
          CHECK (clFlush (qb));
          CHECK (clSetUserEventStatus (gate_ev, CL_COMPLETE));
          ns = wait_complete (read2_ev);
        }
      supply (uffd, want, half, size - half);
      if (rs != CL_COMPLETE)
        fail ("queue B's read is %s while the write's bytes are held back: "
              "it waits behind the write", clerr (rs));
      if (got != v)
        fail ("queue B's read gave %u, not %u", got, v);
      if (ns != CL_COMPLETE)
        fail ("queue B's read behind a user event set meanwhile is %s while "
              "the write's bytes are held back: the NOTIFY_EVENT waits "
              "behind the write",
              clerr (ns));
      if (got2 != 2 * v)
        fail ("queue B's read behind the user event gave %u, not %u", got2,
              2 * v);
      note ("queue B completed with the write's bytes held back, also "
            "behind a user event set meanwhile");
      clReleaseEvent (gate_ev);
      clReleaseEvent (bump2_ev);
      clReleaseEvent (read2_ev);
    }
  /* Behind the write on A, enqueued once the client has sent the write's
     bytes (it holds the write's event until then): the server gets the
     copy while the write's last bytes are still coming in or being
     written, and must run it after them.  */
  pthread_join (t, NULL);
  CHECK (clEnqueueCopyBuffer (qa, big, copy, 0, 0, size, 0, NULL, &copy_ev));
  CHECK (clFlush (qa));
  CHECK (clWaitForEvents (1, &read_ev));
  CHECK (clWaitForEvents (1, &write_ev));
  CHECK (clWaitForEvents (1, &copy_ev));
  if (status_of (write_ev) != CL_COMPLETE)
    fail ("the write ended with %s", clerr (status_of (write_ev)));
  uint32_t *out = xmalloc (size);
  CHECK (clEnqueueReadBuffer (qa, copy, CL_TRUE, 0, size, out, 0, NULL, NULL));
  long d = first_diff (out, want, size);
  if (d >= 0)
    fail ("the copy behind the write differs at byte %ld", d);
  CHECK (clEnqueueReadBuffer (qa, big, CL_TRUE, 0, size, out, 0, NULL, NULL));
  d = first_diff (out, want, size);
  if (d >= 0)
    fail ("the written buffer differs at byte %ld", d);
  printf ("%s: PASS: %s, %zu MiB write%s\n", TEST_NAME, name, size >> 20,
          held ? ", queue B served while its bytes were held back" : "");
  clReleaseEvent (copy_ev);
  clReleaseEvent (write_ev);
  clReleaseEvent (read_ev);
  clReleaseEvent (bump_ev);
  free (out);
  free (want);
  if (uffd >= 0)
    close (uffd);
  munmap (src, size);
  release_all (ctx, prog, k, qb, copy, small);
  return 0;
}
