/* small_transfer_probe.c - how long a native OpenCL runtime takes to read
   and to write 4 bytes of a buffer, by three means: a blocking call, a
   non-blocking one flushed and waited for with clWaitForEvents, and one
   flushed and polled; then blocking ones in the settings of a pocld that
   moves a buffer between servers: right after a kernel on another queue
   used the buffer, as a migration's source reads it (also on an
   out-of-order queue with profiling, a PoCL client's default queue); while
   a marker on another queue waits for a user event; from and into
   page-locked memory (pocld's staging of reads); while another thread of
   the process polls a socket (pocld's readers spin); some time after the
   transfer before (a migration's ends are idle between their hops),
   spinning, polling a socket in the same thread or asleep; alternating
   writes and reads (a server's migrations alternate between source and
   destination); in a thread woken by a socket (pocld's peer reader writes
   what it receives), also with another thread reading in between; after
   what a server does between two of its writes in overhead_bench's moves
   (a kernel, a read, a pending user event); and, with two devices, the
   native counterpart of remote_bench's 4-byte migration.  pocld's
   migrations of small buffers use the fastest means (doc/benchmarks.md).
   Runs on the first platform.  */

#define CL_TARGET_OPENCL_VERSION 120
#include "bench_common.h"
#include <stdatomic.h>

#define ITERS 2000

static const char *touch_src
    = "__kernel void touch (__global uchar *b) { b[0] = b[0]; }\n";

/* Median microseconds of a blocking 4-byte read (or write) on q right
   after `touch` ran on q2 (finished): the buffer comes back from the
   kernel's queue.  MIGRATE, with q2 on another device: a migration there by
   clEnqueueMigrateMemObjects, as remote_bench measures it, each way in
   turn.  */
enum after
{
  READ_AFTER,
  WRITE_AFTER,
  MIGRATE_AFTER
};

static double
after_kernel (cl_command_queue q, cl_command_queue q2, cl_kernel touch,
              cl_mem b, enum after what, double *t)
{
  size_t one = 1;
  int v = 7, i;
  for (i = -100; i < ITERS; ++i)
    {
      cl_command_queue from = what == MIGRATE_AFTER && (i & 1) ? q : q2;
      cl_command_queue to = from == q ? q2 : q;
      if (clEnqueueNDRangeKernel (from, touch, 1, NULL, &one, NULL, 0, NULL,
                                  NULL)
          || clFinish (from))
        return -1;
      double t0 = now_us ();
      cl_int err;
      if (what == MIGRATE_AFTER)
        err = clEnqueueMigrateMemObjects (to, 1, &b, 0, 0, NULL, NULL)
              || clFinish (to);
      else if (what == WRITE_AFTER)
        err = clEnqueueWriteBuffer (to, b, CL_TRUE, 0, 4, &v, 0, NULL, NULL);
      else
        err = clEnqueueReadBuffer (to, b, CL_TRUE, 0, 4, &v, 0, NULL, NULL);
      if (err)
        return -1;
      if (i >= 0)
        t[i] = now_us () - t0;
    }
  return summarize (t, ITERS).median;
}

/* Median microseconds of a blocking 4-byte transfer on q while a marker on
   q2 waits for a user event, as a destination pocld writes a migration's
   bytes while the MIGRATE_IN marker on the client's queue waits for them
   (doc/benchmarks.md, "The 4-byte migration and its floor").  */
static void CL_CALLBACK
on_marker (cl_event e, cl_int status, void *arg)
{
  (void)e;
  (void)status;
  (void)arg;
}

/* With `callback`, the marker has a completion callback too, as pocld
   registers one on every command's event.  */
static double
gated (cl_context c, cl_command_queue q, cl_command_queue q2, cl_mem b,
       int write, int callback, double *t)
{
  int v = 7, i;
  for (i = -100; i < ITERS; ++i)
    {
      cl_int err;
      cl_event ue = clCreateUserEvent (c, &err), m = NULL;
      if (err || clEnqueueMarkerWithWaitList (q2, 1, &ue, &m)
          || (callback
              && clSetEventCallback (m, CL_COMPLETE, on_marker, NULL))
          || clFlush (q2))
        return -1;
      double t0 = now_us ();
      err = write ? clEnqueueWriteBuffer (q, b, CL_TRUE, 0, 4, &v, 0, NULL,
                                          NULL)
                  : clEnqueueReadBuffer (q, b, CL_TRUE, 0, 4, &v, 0, NULL,
                                         NULL);
      double dt = now_us () - t0;
      clSetUserEventStatus (ue, CL_COMPLETE);
      if (err || clWaitForEvents (1, &m))
        return -1;
      clReleaseEvent (m);
      clReleaseEvent (ue);
      if (i >= 0)
        t[i] = dt;
    }
  return summarize (t, ITERS).median;
}

enum how
{
  BLOCKING,
  WAIT,
  POLL
};

static cl_int
transfer (cl_command_queue q, cl_mem b, int write, enum how how, int *v)
{
  cl_event e = NULL;
  cl_bool blocking = how == BLOCKING;
  cl_int err = write ? clEnqueueWriteBuffer (q, b, blocking, 0, 4, v, 0, NULL,
                                             blocking ? NULL : &e)
                     : clEnqueueReadBuffer (q, b, blocking, 0, 4, v, 0, NULL,
                                            blocking ? NULL : &e);
  if (err || blocking)
    return err;
  clFlush (q);
  if (how == WAIT)
    err = clWaitForEvents (1, &e);
  else
    {
      cl_int st = CL_QUEUED;
      while (!err && st > CL_COMPLETE)
        err = clGetEventInfo (e, CL_EVENT_COMMAND_EXECUTION_STATUS,
                              sizeof (st), &st, NULL);
    }
  clReleaseEvent (e);
  return err;
}

/* A thread that polls an idle socket, as pocld's readers do between
   messages.  */
static atomic_int polling;

static void *
poller (void *arg)
{
  int fd = *(int *)arg;
  char c;
  while (atomic_load (&polling))
    (void)!recv (fd, &c, 1, MSG_DONTWAIT);
  return NULL;
}

/* A thread that waits on a socket for a byte, then makes one blocking
   transfer and answers, as pocld's peer reader receives a PEER_DATA and
   writes it: `poll` spins on the socket meanwhile (pocld's readers do for
   400 us), else it blocks in recv.  The transfer is timed in the thread.  */
struct relay
{
  int fd, write, poll;
  cl_command_queue q;
  cl_mem b;
  double *t;
};

static void *
relay_thread (void *arg)
{
  struct relay *r = arg;
  int v = 7, i;
  char c;
  for (i = -100; i < ITERS; ++i)
    {
      ssize_t k;
      while ((k = recv (r->fd, &c, 1, r->poll ? MSG_DONTWAIT : 0)) != 1)
        if (k == 0)
          return NULL; /* relayed stopped early */
      double t0 = now_us ();
      cl_int err = transfer (r->q, r->b, r->write, BLOCKING, &v);
      if (i >= 0)
        r->t[i] = err ? 1e9 : now_us () - t0;
      if (send (r->fd, "x", 1, 0) != 1)
        break;
    }
  return NULL;
}

/* Median microseconds of the relay's transfers, one every ~100 us.  With
   rq, this thread reads on rq 50 us before each of them, as a server that
   is a migration's source between two in which it is the destination reads
   on its command reader and writes on its peer reader.  */
static double
relayed (cl_command_queue q, cl_mem b, int write, int poll,
         cl_command_queue rq, double *t)
{
  int sv[2], i, v;
  pthread_t th;
  char c;
  if (socketpair (AF_UNIX, SOCK_STREAM, 0, sv))
    return -1;
  struct relay r = { sv[1], write, poll, q, b, t };
  if (pthread_create (&th, NULL, relay_thread, &r))
    return -1;
  for (i = -100; i < ITERS; ++i)
    {
      idle_us (50);
      if (rq != NULL && transfer (rq, b, 0, BLOCKING, &v))
        break;
      idle_us (50);
      if (send (sv[0], "x", 1, 0) != 1 || recv (sv[0], &c, 1, 0) != 1)
        break;
    }
  shutdown (sv[0], SHUT_RDWR);
  pthread_join (th, NULL);
  close (sv[0]);
  close (sv[1]);
  return i == ITERS ? summarize (t, ITERS).median : -1;
}

/* Median microseconds of blocking 4-byte writes on qw and of reads on qr,
   alternating 50 us apart, as a server's migrations alternate between
   reading the buffer (source) and writing it (destination).  */
static void
alternating (cl_command_queue qr, cl_command_queue qw, cl_mem b, double *t,
             double *wr, double *rd)
{
  double *r = malloc (ITERS * sizeof (double));
  int v = 7, i, k;
  for (i = -100; i < ITERS; ++i)
    for (k = 0; k < 2; ++k)
      {
        idle_us (50);
        double t0 = now_us ();
        if (transfer (k ? qw : qr, b, k, BLOCKING, &v))
          {
            *wr = *rd = -1;
            free (r);
            return;
          }
        if (i >= 0)
          (k ? t : r)[i] = now_us () - t0;
      }
  *wr = summarize (t, ITERS).median;
  *rd = summarize (r, ITERS).median;
  free (r);
}

/* Median microseconds of a blocking 4-byte write on q that follows what a
   server did since its last one in overhead_bench's moves, 50 us apart:
   with `kernel`, `touch` on q2 (finished); a blocking read on q, into
   `pinned` host memory if given (pocld's read staging); with `ue`, a user
   event made (a MIGRATE_IN's) and set after the write.  */
static double
write_after_round (cl_context c, cl_command_queue q, cl_command_queue q2,
                   cl_kernel touch, cl_mem b, int kernel, int *pinned, int ue,
                   double *t)
{
  size_t one = 1;
  int v = 7, i;
  for (i = -100; i < ITERS; ++i)
    {
      cl_int err = CL_SUCCESS;
      cl_event u = NULL;
      if (kernel)
        err = clEnqueueNDRangeKernel (q2, touch, 1, NULL, &one, NULL, 0, NULL,
                                      NULL)
              || clFinish (q2);
      if (!err)
        err = transfer (q, b, 0, BLOCKING, pinned ? pinned : &v);
      idle_us (50);
      if (!err && ue)
        u = clCreateUserEvent (c, &err);
      idle_us (50);
      double t0 = now_us ();
      if (!err)
        err = transfer (q, b, 1, BLOCKING, &v);
      if (i >= 0)
        t[i] = now_us () - t0;
      if (u != NULL)
        {
          clSetUserEventStatus (u, CL_COMPLETE);
          clReleaseEvent (u);
        }
      if (err)
        return -1;
    }
  return summarize (t, ITERS).median;
}

/* How a thread spends the time between two transfers: spinning on the
   clock, polling a socket that stays empty (pocld's peer reader until a
   PEER_DATA comes, which it then writes), or asleep.  */
enum idle_how
{
  SPIN,
  POLL_SOCKET,
  SLEEP
};

/* Median microseconds of a blocking 4-byte transfer from or into host,
   each `idle` microseconds after the one before, spent as `how` says
   (fd: the socket to poll): a migration's source and destination wait
   for the network between theirs.  */
static double
blocking_after (cl_command_queue q, cl_mem b, int write, int *host,
                double idle, enum idle_how how, int fd, double *t)
{
  int i;
  char c;
  for (i = -100; i < ITERS; ++i)
    {
      double t0 = now_us ();
      if (how == SLEEP)
        usleep ((useconds_t)idle);
      else if (how == POLL_SOCKET)
        while (now_us () - t0 < idle)
          (void)!recv (fd, &c, 1, MSG_DONTWAIT);
      else
        idle_us (idle);
      t0 = now_us ();
      if (transfer (q, b, write, BLOCKING, host))
        return -1;
      if (i >= 0)
        t[i] = now_us () - t0;
    }
  return summarize (t, ITERS).median;
}

static double
blocking (cl_command_queue q, cl_mem b, int write, int *host, double *t)
{
  return blocking_after (q, b, write, host, 0, SPIN, -1, t);
}

int
main (void)
{
  static const char *names[3]
      = { "blocking call", "flush + clWaitForEvents", "flush + polling" };
  cl_platform_id p;
  cl_device_id ds[2];
  cl_uint nd = 0;
  cl_int err;
  if (first_device (&p, &ds[0]))
    return 1;
  clGetDeviceIDs (p, CL_DEVICE_TYPE_ALL, 2, ds, &nd);
  cl_device_id d = ds[0];
  cl_context c = clCreateContext (NULL, nd, ds, NULL, NULL, &err);
  cl_command_queue q = clCreateCommandQueue (c, d, 0, &err);
  cl_command_queue q2 = clCreateCommandQueue (c, d, 0, &err);
  cl_command_queue other
      = nd > 1 ? clCreateCommandQueue (c, ds[1], 0, &err) : NULL;
  cl_mem b = clCreateBuffer (c, CL_MEM_READ_WRITE, 4, NULL, &err);
  cl_program pr = clCreateProgramWithSource (c, 1, &touch_src, NULL, &err);
  if (err || clBuildProgram (pr, nd, ds, NULL, NULL, NULL))
    return 1;
  cl_kernel touch = clCreateKernel (pr, "touch", &err);
  if (err || clSetKernelArg (touch, 0, sizeof (b), &b))
    return 1;
  double *t = malloc (ITERS * sizeof (double));
  int v = 7, write, how, i;
  printf ("4-byte transfers, native, median of %d (us):\n", ITERS);
  for (write = 0; write < 2; ++write)
    for (how = BLOCKING; how <= POLL; ++how)
      {
        for (i = -100; i < ITERS; ++i)
          {
            double t0 = now_us ();
            if (transfer (q, b, write, (enum how)how, &v))
              return 1;
            if (i >= 0)
              t[i] = now_us () - t0;
          }
        stats st = summarize (t, ITERS);
        printf ("  %-5s %-26s %7.1f (min %.1f)\n", write ? "write" : "read",
                names[how], st.median, st.min);
      }
  printf ("  read  blocking, after a kernel on another queue %7.1f\n",
          after_kernel (q, q2, touch, b, READ_AFTER, t));
  printf ("  write blocking, after a kernel on another queue %7.1f\n",
          after_kernel (q, q2, touch, b, WRITE_AFTER, t));
  /* PoCL's client migrates on hidden default queues made this way, and
     pocld makes their native queues alike.  */
  cl_command_queue ooo = clCreateCommandQueue (
      c, d, CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE | CL_QUEUE_PROFILING_ENABLE,
      &err);
  if (ooo != NULL)
    {
      printf ("  the same on an out-of-order, profiled queue    %7.1f\n",
              after_kernel (ooo, q2, touch, b, READ_AFTER, t));
    }
  if (ooo != NULL)
    {
      int cb;
      for (cb = 0; cb < 2; ++cb)
        {
          const char *with = cb ? ", called back" : "";
          printf ("  read  blocking, a marker on another queue gated%s %6.1f\n",
                  with, gated (c, q, ooo, b, 0, cb, t));
          printf ("  write blocking, a marker on another queue gated%s %6.1f\n",
                  with, gated (c, q, ooo, b, 1, cb, t));
        }
    }
  /* pocld's staging of a read: a mapped buffer made with
     CL_MEM_ALLOC_HOST_PTR (page-locked on NVIDIA's).  */
  cl_mem pin = clCreateBuffer (c, CL_MEM_ALLOC_HOST_PTR, 4096, NULL, &err);
  int *host
      = pin ? clEnqueueMapBuffer (q2, pin, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE,
                                  0, 4096, 0, NULL, NULL, &err)
            : NULL;
  if (host != NULL)
    for (write = 0; write < 2; ++write)
      printf ("  %-5s blocking, page-locked host memory       %7.1f\n",
              write ? "write" : "read", blocking (q, b, write, host, t));
  int sv[2];
  pthread_t th;
  int have_socket = socketpair (AF_UNIX, SOCK_STREAM, 0, sv) == 0;
  if (have_socket)
    {
      atomic_store (&polling, 1);
      if (pthread_create (&th, NULL, poller, &sv[0]) == 0)
        {
          for (write = 0; write < 2; ++write)
            printf ("  %-5s blocking, another thread polling a socket %5.1f\n",
                    write ? "write" : "read", blocking (q, b, write, &v, t));
          atomic_store (&polling, 0);
          pthread_join (th, NULL);
        }
    }
  static const double idles[] = { 20, 50, 200 };
  for (i = 0; i < 3; ++i)
    for (write = 0; write < 2; ++write)
      printf ("  %-5s blocking, %3.0f us after the one before     %7.1f\n",
              write ? "write" : "read", idles[i],
              blocking_after (q, b, write, &v, idles[i], SPIN, -1, t));
  for (i = 1; i < 3; ++i)
    for (write = 0; write < 2; ++write)
      {
        if (have_socket)
          printf ("  %-5s blocking, %3.0f us polling a socket before %6.1f\n",
                  write ? "write" : "read", idles[i],
                  blocking_after (q, b, write, &v, idles[i], POLL_SOCKET,
                                  sv[1], t));
        printf ("  %-5s blocking, %3.0f us asleep before            %7.1f\n",
                write ? "write" : "read", idles[i],
                blocking_after (q, b, write, &v, idles[i], SLEEP, -1, t));
      }
  if (have_socket)
    {
      close (sv[0]);
      close (sv[1]);
    }
  double awr, ard;
  alternating (q, q, b, t, &awr, &ard);
  printf ("  write / read blocking, alternating on one queue %5.1f / %.1f\n",
          awr, ard);
  alternating (q, q2, b, t, &awr, &ard);
  printf ("  write / read blocking, alternating, two queues  %5.1f / %.1f\n",
          awr, ard);
  for (write = 0; write < 2; ++write)
    for (i = 1; i >= 0; --i)
      printf ("  %-5s blocking, in a thread woken by a socket (%s) %5.1f\n",
              write ? "write" : "read", i ? "polled" : "recv",
              relayed (q, b, write, i, NULL, t));
  printf ("  write blocking, the same (polled), another thread reading on "
          "its queue %5.1f\n",
          relayed (q, b, 1, 1, q, t));
  printf ("  write blocking, the same, another thread reading on another "
          "queue %5.1f\n",
          relayed (q, b, 1, 1, q2, t));
  int k;
  for (k = 0; k < 8; ++k)
    if (host != NULL || !(k & 2))
      printf ("  write blocking, after a round:%s%s%s  %.1f\n",
              k & 1 ? " kernel," : "",
              k & 2 ? " read into page-locked," : " read,",
              k & 4 ? " user event pending" : "",
              write_after_round (c, q, q2, touch, b, k & 1,
                                 k & 2 ? host : NULL, k & 4, t));
  if (host != NULL)
    clEnqueueUnmapMemObject (q2, pin, host, 0, NULL, NULL);
  if (pin != NULL)
    {
      clFinish (q2);
      clReleaseMemObject (pin);
    }
  if (other != NULL)
    printf ("  migration between the two devices, one way     %7.1f\n",
            after_kernel (q, other, touch, b, MIGRATE_AFTER, t));
  free (t);
  if (ooo != NULL)
    clReleaseCommandQueue (ooo);
  clReleaseKernel (touch);
  clReleaseProgram (pr);
  if (other != NULL)
    clReleaseCommandQueue (other);
  clReleaseCommandQueue (q2);
  clReleaseMemObject (b);
  clReleaseCommandQueue (q);
  clReleaseContext (c);
  return 0;
}
