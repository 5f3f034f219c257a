/* two_process_probe.c - what a 4-byte migration's native steps cost when
   its two servers are two processes on one device (two pocld on one GPU):
   process A reads 4 bytes with a blocking call, tells B over a pipe, B
   writes 4 bytes with a blocking call and answers; each process has its
   own context on the first device of the first platform, as each pocld
   has.  Beside it, in the same run: the pipe's round trip alone, and the
   same read and write both in one process (one context).  The difference
   is what the device charges for switching between the two processes'
   contexts, which a migration between two servers on one GPU pays.  Then
   the same with B holding, while A reads, a marker on another queue behind
   a user event that B completes after its write: a MIGRATE_IN's marker,
   which pocld enqueues when the MIGRATE_IN comes, before the bytes; and
   with another thread of B waiting for that marker meanwhile, as pocld's
   completion waiter does; and without the gate, A running a kernel that
   touches its buffer (and waiting for it) before each round, untimed, as
   overhead_bench's migrations do.
   With the argument "ooo", B's gated marker is on an out-of-order queue
   with profiling, as the queues a PoCL client sends migrations on are.
     OCL_ICD_FILENAMES=<library> ./two_process_probe [ooo]  */

#define CL_TARGET_OPENCL_VERSION 120
#include "bench_common.h"
#include <sys/wait.h>

#define ITERS 2000

/* the properties of B's second queue, where its gated marker goes */
static cl_command_queue_properties q2_props;

typedef struct side
{
  cl_context ctx;
  cl_command_queue q, q2;
  cl_mem b;
  cl_event gate, marker;
  cl_kernel touch;
  int v;
  /* GATED_WAITER: the waiting thread's turn (1: wait for `marker`) */
  pthread_t waiter;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int turn;
} side;

enum mode
{
  PIPE_ONLY,
  TRANSFERS,
  GATED,
  GATED_WAITER,
  AFTER_KERNEL
};

static int
open_side (side *s)
{
  cl_device_id d;
  cl_int err;
  if (first_queue (&d, &s->ctx, &s->q))
    return -1;
  s->b = clCreateBuffer (s->ctx, CL_MEM_READ_WRITE, 4, NULL, &err);
  s->q2 = clCreateCommandQueue (s->ctx, d, q2_props, &err);
  s->gate = s->marker = NULL;
  s->v = 1;
  if (s->q2 == NULL)
    return -1;
  static const char *src
      = "__kernel void touch (__global uchar *b) { b[0] = b[0]; }\n";
  cl_program p = clCreateProgramWithSource (s->ctx, 1, &src, NULL, &err);
  if (p == NULL || clBuildProgram (p, 1, &d, NULL, NULL, NULL)
      || (s->touch = clCreateKernel (p, "touch", &err)) == NULL
      || clSetKernelArg (s->touch, 0, sizeof (s->b), &s->b))
    return -1;
  return s->b ? (int)clEnqueueWriteBuffer (s->q, s->b, CL_TRUE, 0, 4, &s->v, 0,
                                           NULL, NULL)
              : -1;
}

static int
blocking_read (side *s)
{
  return clEnqueueReadBuffer (s->q, s->b, CL_TRUE, 0, 4, &s->v, 0, NULL, NULL);
}

static int
blocking_write (side *s)
{
  return clEnqueueWriteBuffer (s->q, s->b, CL_TRUE, 0, 4, &s->v, 0, NULL,
                               NULL);
}

/* A marker on q2 behind a new user event, flushed.  */
static int
close_gate (side *s)
{
  cl_int err;
  s->gate = clCreateUserEvent (s->ctx, &err);
  if (s->gate == NULL
      || clEnqueueMarkerWithWaitList (s->q2, 1, &s->gate, &s->marker))
    return -1;
  return clFlush (s->q2);
}

static void *
wait_markers (void *arg)
{
  side *s = arg;
  pthread_mutex_lock (&s->mu);
  for (;;)
    {
      while (s->turn == 0)
        pthread_cond_wait (&s->cv, &s->mu);
      if (s->turn < 0)
        break;
      cl_event m = s->marker;
      pthread_mutex_unlock (&s->mu);
      clWaitForEvents (1, &m);
      pthread_mutex_lock (&s->mu);
      s->turn = 0;
      pthread_cond_broadcast (&s->cv);
    }
  pthread_mutex_unlock (&s->mu);
  return NULL;
}

static void
set_turn (side *s, int turn)
{
  pthread_mutex_lock (&s->mu);
  s->turn = turn;
  pthread_cond_broadcast (&s->cv);
  pthread_mutex_unlock (&s->mu);
}

/* Completes the gate and waits for its marker (or for the waiter to have
   seen it complete).  */
static int
open_gate (side *s, int waiter)
{
  int r = clSetUserEventStatus (s->gate, CL_COMPLETE);
  if (waiter)
    {
      pthread_mutex_lock (&s->mu);
      while (s->turn != 0)
        pthread_cond_wait (&s->cv, &s->mu);
      pthread_mutex_unlock (&s->mu);
    }
  else
    r = r || clWaitForEvents (1, &s->marker);
  clReleaseEvent (s->gate);
  clReleaseEvent (s->marker);
  return r;
}

/* B: waits for A's byte, writes (not PIPE_ONLY), answers.  */
static void
serve (int in, int out, enum mode m)
{
  side s;
  int gated = m == GATED || m == GATED_WAITER, waiter = m == GATED_WAITER;
  if (m != PIPE_ONLY && open_side (&s))
    _exit (1);
  if (waiter)
    {
      pthread_mutex_init (&s.mu, NULL);
      pthread_cond_init (&s.cv, NULL);
      s.turn = 0;
      if (pthread_create (&s.waiter, NULL, wait_markers, &s))
        _exit (1);
    }
  if (gated && close_gate (&s))
    _exit (1);
  if (waiter)
    set_turn (&s, 1);
  char c;
  while (read (in, &c, 1) == 1 && c != 'q')
    {
      if (m != PIPE_ONLY && blocking_write (&s))
        _exit (1);
      if (gated && (open_gate (&s, waiter) || close_gate (&s)))
        _exit (1);
      if (waiter)
        set_turn (&s, 1);
      if (write (out, &c, 1) != 1)
        _exit (1);
    }
  if (gated)
    open_gate (&s, waiter);
  if (waiter)
    {
      set_turn (&s, -1);
      pthread_join (s.waiter, NULL);
    }
  _exit (0);
}

/* Median us of A's rounds: a read (not PIPE_ONLY), then B's turn.  */
static double
rounds (enum mode m)
{
  int transfer = m != PIPE_ONLY;
  int ab[2], ba[2];
  if (pipe (ab) || pipe (ba))
    return -1;
  fflush (stdout);
  pid_t pid = fork ();
  if (pid == 0)
    {
      close (ab[1]);
      close (ba[0]);
      serve (ab[0], ba[1], m);
    }
  close (ab[0]);
  close (ba[1]);
  side s;
  double *t = malloc (ITERS * sizeof (double));
  int i, ok = !transfer || open_side (&s) == 0;
  char c = 'x';
  size_t one = 1;
  for (i = -100; ok && i < ITERS; ++i)
    {
      if (m == AFTER_KERNEL
          && (clEnqueueNDRangeKernel (s.q, s.touch, 1, NULL, &one, NULL, 0,
                                      NULL, NULL)
              || clFinish (s.q)))
        ok = 0;
      double t0 = now_us ();
      ok = (!transfer || blocking_read (&s) == 0) && write (ab[1], &c, 1) == 1
           && read (ba[0], &c, 1) == 1;
      if (i >= 0)
        t[i] = now_us () - t0;
    }
  c = 'q';
  if (write (ab[1], &c, 1) != 1)
    ok = 0;
  int status = 0;
  waitpid (pid, &status, 0);
  close (ab[1]);
  close (ba[0]);
  double med = ok && status == 0 ? summarize (t, ITERS).median : -1;
  free (t);
  return med;
}

/* Median us of a blocking read then a blocking write in one process.  */
static double
one_process (void)
{
  side s;
  if (open_side (&s))
    return -1;
  double *t = malloc (ITERS * sizeof (double));
  int i;
  for (i = -100; i < ITERS; ++i)
    {
      double t0 = now_us ();
      if (blocking_read (&s) || blocking_write (&s))
        {
          free (t);
          return -1;
        }
      if (i >= 0)
        t[i] = now_us () - t0;
    }
  double m = summarize (t, ITERS).median;
  free (t);
  return m;
}

/* rounds (m), or one_process () for m < 0, in a process of its own: an
   OpenCL runtime does not survive a fork, so this one loads none.  */
static double
measure (int m)
{
  int fd[2];
  double r = -1;
  if (pipe (fd))
    return -1;
  fflush (stdout);
  pid_t pid = fork ();
  if (pid == 0)
    {
      close (fd[0]);
      r = m < 0 ? one_process () : rounds ((enum mode)m);
      _exit (write (fd[1], &r, sizeof (r)) == sizeof (r) ? 0 : 1);
    }
  close (fd[1]);
  if (pid < 0 || read (fd[0], &r, sizeof (r)) != sizeof (r))
    r = -1;
  close (fd[0]);
  if (pid > 0)
    waitpid (pid, NULL, 0);
  return r;
}

int
main (int argc, char **argv)
{
  if (argc > 1 && strcmp (argv[1], "ooo") == 0)
    q2_props
        = CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE | CL_QUEUE_PROFILING_ENABLE;
  double pipe_rtt = measure (PIPE_ONLY);
  double two = measure (TRANSFERS);
  double gated = measure (GATED);
  double waited = measure (GATED_WAITER);
  double kernel = measure (AFTER_KERNEL);
  double pipe_rtt2 = measure (PIPE_ONLY);
  double one = measure (-1);
  if (pipe_rtt < 0 || two < 0 || gated < 0 || waited < 0 || kernel < 0
      || pipe_rtt2 < 0 || one < 0)
    {
      fprintf (stderr, "two_process_probe: a side failed\n");
      return 1;
    }
  double rtt = (pipe_rtt + pipe_rtt2) / 2;
  printf ("4-byte blocking read in A, then write in B (two processes, two "
          "contexts): %.1f us a round, pipe round trip %.1f us\n",
          two, rtt);
  printf ("the same in one process: read + write %.1f us\n", one);
  printf ("two processes' transfers: %.1f us, %.1f us more than in one\n",
          two - rtt, two - rtt - one);
  printf ("the same with B's gated marker pending during A's read (and "
          "completed after B's write): %.1f us a round, %.1f us more\n",
          gated, gated - two);
  printf ("the same with another thread of B waiting for the marker: %.1f "
          "us a round, %.1f us more than without the gate\n",
          waited, waited - two);
  printf ("without the gate, A's kernel (finished) before each round: %.1f "
          "us a round, %.1f us more than without it\n",
          kernel, kernel - two);
  return 0;
}
