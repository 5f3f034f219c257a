/* test_event_status.c - event status transitions and failed dependencies
   through the remote driver, as a local device shows them.

   Usage: test_event_status [remote|local]   (default remote; "local" runs
   the same checks on the first non-remote device).

   - Transitions: two kernels on an in-order queue, the first gated on a
     user event.  While the gate is pending neither is CL_RUNNING.  Their
     CL_SUBMITTED, CL_RUNNING and CL_COMPLETE callbacks are each called once,
     in that order, and the second kernel runs only once the first is
     complete.  On the remote device, the gated kernel reads CL_RUNNING (or
     CL_COMPLETE) as soon as clSetUserEventStatus returns: the server has it
     and its dependencies are done (a local device may still read
     CL_SUBMITTED until a worker takes it).
   - Failed user event: kernels gated on it, directly, through an in-order
     queue, and through an out-of-order queue's wait list, end with a
     negative status, clWaitForEvents on them returns
     CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST, and none of them ran;
     so do commands enqueued after the user event failed.
   - Blocking calls whose command failed (its dependency failed while the
     call waited): clEnqueueReadBuffer, clEnqueueWriteBuffer and
     clEnqueueMapBuffer return CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST,
     not CL_SUCCESS; the read leaves the destination untouched.  */

#define TEST_NAME "event_status"
#include "remote_test_util.c"

static const char *source
    = "__kernel void stamp (__global uint *b, uint v)\n"
      "{ size_t i = get_global_id (0); b[i] = v + (uint)i; }\n";

#define N 1024

static cl_device_id dev;
static cl_context ctx;
static cl_program prog;
static cl_command_queue q, oq;
static int remote;

static cl_int
status_of (cl_event e)
{
  cl_int s = 0;
  CHECK (clGetEventInfo (e, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof (s), &s,
                         NULL));
  return s;
}

static cl_mem
filled_buffer (cl_uint value)
{
  cl_int err;
  cl_mem b = clCreateBuffer (ctx, CL_MEM_READ_WRITE, N * sizeof (cl_uint),
                             NULL, &err);
  CHECK_ERR (err, "clCreateBuffer");
  CHECK (clEnqueueFillBuffer (q, b, &value, sizeof (value), 0,
                              N * sizeof (cl_uint), 0, NULL, NULL));
  CHECK (clFinish (q));
  return b;
}

static cl_kernel
stamp_kernel (cl_mem b, cl_uint v)
{
  cl_int err;
  cl_kernel k = clCreateKernel (prog, "stamp", &err);
  CHECK_ERR (err, "clCreateKernel");
  CHECK (clSetKernelArg (k, 0, sizeof (b), &b));
  CHECK (clSetKernelArg (k, 1, sizeof (v), &v));
  return k;
}

static void
enqueue_stamp (cl_command_queue cq, cl_kernel k, cl_uint nwait,
               const cl_event *wait, cl_event *ev)
{
  size_t gws = N;
  CHECK (clEnqueueNDRangeKernel (cq, k, 1, NULL, &gws, NULL, nwait, wait, ev));
}

/* Every element of b is `value`: nothing wrote it.  */
static void
expect_untouched (cl_mem b, cl_uint value, const char *what)
{
  cl_uint host[N];
  CHECK (clEnqueueReadBuffer (q, b, CL_TRUE, 0, sizeof (host), host, 0, NULL,
                              NULL));
  for (size_t i = 0; i < N; ++i)
    EXPECT (host[i] == value, "%s: element %zu is %u, not %u: it ran", what,
            i, host[i], value);
}

/* The callbacks of one command: the order they came in.  */
struct transitions
{
  int seq[3]; /* SUBMITTED, RUNNING, COMPLETE: the call's number, from 1 */
  int calls[3];
  cl_event before; /* must be complete when this one runs, or NULL */
  int before_done_when_running;
};
static int callback_seq;
static pthread_mutex_t cb_lock = PTHREAD_MUTEX_INITIALIZER;

static void CL_CALLBACK
on_status (cl_event e, cl_int status, void *data)
{
  struct transitions *t = data;
  int i = status == CL_SUBMITTED ? 0 : status == CL_RUNNING ? 1 : 2;
  int before_done = -1;
  if (i == 1 && t->before)
    {
      cl_int s = 0;
      clGetEventInfo (t->before, CL_EVENT_COMMAND_EXECUTION_STATUS,
                      sizeof (s), &s, NULL);
      before_done = s == CL_COMPLETE;
    }
  pthread_mutex_lock (&cb_lock);
  t->seq[i] = ++callback_seq;
  t->calls[i]++;
  if (before_done >= 0)
    t->before_done_when_running = before_done;
  pthread_mutex_unlock (&cb_lock);
  (void)e;
}

static void
watch (cl_event e, struct transitions *t)
{
  const cl_int kinds[3] = { CL_SUBMITTED, CL_RUNNING, CL_COMPLETE };
  for (int i = 0; i < 3; ++i)
    CHECK (clSetEventCallback (e, kinds[i], on_status, t));
}

static int
all_called (struct transitions *t, int n)
{
  pthread_mutex_lock (&cb_lock);
  int done = 1;
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < 3; ++i)
      done &= t[j].calls[i] > 0;
  pthread_mutex_unlock (&cb_lock);
  return done;
}

static void
test_transitions (void)
{
  cl_int err;
  cl_mem b = filled_buffer (0);
  cl_kernel k1 = stamp_kernel (b, 100), k2 = stamp_kernel (b, 200);
  cl_event gate = clCreateUserEvent (ctx, &err);
  CHECK_ERR (err, "clCreateUserEvent");
  cl_event e1, e2;
  /* static: the callbacks may still come after a failed check left */
  static struct transitions t[2];
  memset (t, 0, sizeof (t));
  enqueue_stamp (q, k1, 1, &gate, &e1);
  enqueue_stamp (q, k2, 0, NULL, &e2);
  t[1].before = e1;
  watch (e1, &t[0]);
  watch (e2, &t[1]);

  step ("the gated kernels' status");
  for (int j = 0; j < 2; ++j)
    {
      cl_int s = status_of (j ? e2 : e1);
      EXPECT (s == CL_QUEUED || s == CL_SUBMITTED,
              "kernel %d reads %s while its gate is pending", j + 1,
              clerr (s));
    }
  CHECK (clSetUserEventStatus (gate, CL_COMPLETE));
  cl_int s1 = status_of (e1);
  if (remote)
    EXPECT (s1 == CL_RUNNING || s1 == CL_COMPLETE,
            "the kernel whose gate opened reads %s, not CL_RUNNING",
            clerr (s1));
  else /* NVIDIA's may still read CL_QUEUED */
    EXPECT (s1 == CL_QUEUED || s1 == CL_SUBMITTED || s1 == CL_RUNNING
                || s1 == CL_COMPLETE,
            "the kernel whose gate opened reads %s", clerr (s1));

  step ("the kernels' completion");
  CHECK (clWaitForEvents (1, &e2));
  EXPECT (status_of (e1) == CL_COMPLETE && status_of (e2) == CL_COMPLETE,
          "statuses %s and %s after the wait", clerr (status_of (e1)),
          clerr (status_of (e2)));
  step ("the status callbacks");
  while (!all_called (t, 2))
    usleep (1000);
  pthread_mutex_lock (&cb_lock);
  for (int j = 0; j < 2; ++j)
    {
      EXPECT (t[j].calls[0] == 1 && t[j].calls[1] == 1 && t[j].calls[2] == 1,
              "kernel %d: SUBMITTED, RUNNING, COMPLETE callbacks called %d, "
              "%d, %d times",
              j + 1, t[j].calls[0], t[j].calls[1], t[j].calls[2]);
      EXPECT (t[j].seq[0] < t[j].seq[1] && t[j].seq[1] < t[j].seq[2],
              "kernel %d: callbacks in the order SUBMITTED %d, RUNNING %d, "
              "COMPLETE %d",
              j + 1, t[j].seq[0], t[j].seq[1], t[j].seq[2]);
    }
  EXPECT (t[1].before_done_when_running == 1,
          "the second kernel was CL_RUNNING before the first completed");
  EXPECT (t[0].seq[2] < t[1].seq[1],
          "the second kernel ran (callback %d) before the first completed "
          "(callback %d)",
          t[1].seq[1], t[0].seq[2]);
  pthread_mutex_unlock (&cb_lock);

  clReleaseEvent (e1);
  clReleaseEvent (e2);
  clReleaseEvent (gate);
  clReleaseKernel (k1);
  clReleaseKernel (k2);
  clReleaseMemObject (b);
}

static void
test_failed_user_event (void)
{
  cl_int err;
  cl_mem b = filled_buffer (7), ob = filled_buffer (7);
  cl_kernel k1 = stamp_kernel (b, 100), k2 = stamp_kernel (b, 200),
            k3 = stamp_kernel (ob, 300);
  cl_event gate = clCreateUserEvent (ctx, &err);
  CHECK_ERR (err, "clCreateUserEvent");
  cl_event e[3];
  enqueue_stamp (q, k1, 1, &gate, &e[0]);
  /* in order after k1 */
  enqueue_stamp (q, k2, 0, NULL, &e[1]);
  /* another queue, through the wait list */
  enqueue_stamp (oq, k3, 1, &e[0], &e[2]);
  CHECK (clFlush (q));
  CHECK (clFlush (oq));

  step ("the commands of a failed user event");
  CHECK (clSetUserEventStatus (gate, -1));
  err = clWaitForEvents (3, e);
  EXPECT (err == CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST,
          "clWaitForEvents on commands behind a failed user event returned "
          "%d (%s)",
          err, clerr (err));
  for (int i = 0; i < 3; ++i)
    {
      cl_int s = status_of (e[i]);
      EXPECT (s < 0, "command %d behind a failed user event reads %d (%s)",
              i + 1, s, clerr (s));
    }
  expect_untouched (b, 7, "the kernels behind a failed user event");
  expect_untouched (ob, 7, "the other queue's kernel behind a failed one");

  for (int i = 0; i < 3; ++i)
    clReleaseEvent (e[i]);
  clReleaseEvent (gate);
  clReleaseKernel (k1);
  clReleaseKernel (k2);
  clReleaseKernel (k3);
  clReleaseMemObject (b);
  clReleaseMemObject (ob);
}

/* Commands enqueued after their dependency failed: they fail too, and
   waiting for them returns (PoCL's core left them waiting forever, locally
   as through remote: patch 0112).  */
static void
test_already_failed (void)
{
  cl_int err;
  cl_mem b = filled_buffer (9);
  cl_kernel k = stamp_kernel (b, 400);
  cl_event gate = clCreateUserEvent (ctx, &err);
  CHECK_ERR (err, "clCreateUserEvent");
  CHECK (clSetUserEventStatus (gate, -1));
  cl_event e[2];
  enqueue_stamp (q, k, 1, &gate, &e[0]);
  CHECK (clEnqueueMarkerWithWaitList (oq, 1, &gate, &e[1]));
  err = clWaitForEvents (2, e);
  EXPECT (err == CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST,
          "clWaitForEvents on commands enqueued behind an already failed "
          "event returned %d (%s)",
          err, clerr (err));
  for (int i = 0; i < 2; ++i)
    {
      cl_int s = status_of (e[i]);
      EXPECT (s < 0, "command %d behind an already failed event reads %d "
              "(%s)", i + 1, s, clerr (s));
      clReleaseEvent (e[i]);
    }
  expect_untouched (b, 9, "a kernel behind an already failed event");
  /* The server knows the gate failed now and refuses each marker at once:
     its COMPLETION may come before the enqueuing thread has told the
     driver of the failed dependency, and the driver holds it until then;
     released on that thread, with no message after it, it waited for good
     (seen under TSan, about one run in 70 on a loaded machine).  Each
     marker is another go at that race, a narrow one: 15 runs of this loop
     under TSan without the fix did not hang.  */
  for (int i = 0; i < 50; ++i)
    {
      cl_event m;
      CHECK (clEnqueueMarkerWithWaitList (oq, 1, &gate, &m));
      err = clWaitForEvents (1, &m);
      EXPECT (err == CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST,
              "marker %d behind an already failed event: clWaitForEvents "
              "returned %d (%s)",
              i, err, clerr (err));
      clReleaseEvent (m);
    }
  clReleaseEvent (gate);
  clReleaseKernel (k);
  clReleaseMemObject (b);
}

/* Fails `gate` once the main thread's blocking call has created its
   command (PoCL's events hold their queue: its reference count rises), so
   that the command waits on a dependency that fails while it waits.  */
struct failer
{
  cl_command_queue queue;
  cl_uint base;
  cl_event gate;
};

static void *
fail_gate_later (void *arg)
{
  struct failer *f = arg;
  for (int i = 0; i < 5000; ++i)
    {
      cl_uint n = 0;
      clGetCommandQueueInfo (f->queue, CL_QUEUE_REFERENCE_COUNT, sizeof (n),
                             &n, NULL);
      if (n > f->base)
        break;
      usleep (1000);
    }
  /* the command's wait list is made right after its event */
  usleep (100000);
  clSetUserEventStatus (f->gate, -1);
  return NULL;
}

enum blocking_kind
{
  READ,
  WRITE,
  MAP
};

static void
blocking_call_fails (enum blocking_kind kind)
{
  cl_int err;
  cl_mem b = filled_buffer (7);
  cl_kernel k = stamp_kernel (b, 100);
  struct failer f;
  f.queue = oq;
  f.gate = clCreateUserEvent (ctx, &err);
  CHECK_ERR (err, "clCreateUserEvent");
  cl_event ke;
  enqueue_stamp (oq, k, 1, &f.gate, &ke);
  CHECK (clGetCommandQueueInfo (oq, CL_QUEUE_REFERENCE_COUNT,
                                sizeof (f.base), &f.base, NULL));
  pthread_t th;
  if (pthread_create (&th, NULL, fail_gate_later, &f) != 0)
    fail ("pthread_create");
  cl_uint host[N];
  for (size_t i = 0; i < N; ++i)
    host[i] = 0xdeadbeef;
  const char *what;
  if (kind == READ)
    {
      what = "a blocking clEnqueueReadBuffer";
      err = clEnqueueReadBuffer (oq, b, CL_TRUE, 0, sizeof (host), host, 1,
                                 &ke, NULL);
    }
  else if (kind == WRITE)
    {
      what = "a blocking clEnqueueWriteBuffer";
      err = clEnqueueWriteBuffer (oq, b, CL_TRUE, 0, sizeof (host), host, 1,
                                  &ke, NULL);
    }
  else
    {
      what = "a blocking clEnqueueMapBuffer";
      void *p = clEnqueueMapBuffer (oq, b, CL_TRUE, CL_MAP_READ, 0,
                                    sizeof (host), 1, &ke, NULL, &err);
      if (err == CL_SUCCESS)
        {
          clEnqueueUnmapMemObject (oq, b, p, 0, NULL, NULL);
          clFinish (oq);
        }
      else
        EXPECT (p == NULL, "a failed blocking map returned a pointer");
    }
  pthread_join (th, NULL);
  EXPECT (err == CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST,
          "%s whose dependency failed returned %d (%s)", what, err,
          clerr (err));
  if (kind == READ)
    for (size_t i = 0; i < N; ++i)
      EXPECT (host[i] == 0xdeadbeef,
              "the failed read wrote element %zu (%#x)", i, host[i]);
  clReleaseEvent (ke);
  clReleaseEvent (f.gate);
  clReleaseKernel (k);
  clReleaseMemObject (b);
}

static void
test_blocking_read (void)
{
  blocking_call_fails (READ);
}

static void
test_blocking_write (void)
{
  blocking_call_fails (WRITE);
}

static void
test_blocking_map (void)
{
  blocking_call_fails (MAP);
}

static void
drain (void)
{
  clFinish (q);
  clFinish (oq);
}

int
main (int argc, char **argv)
{
  watchdog (120, "setup (device, context, program build)");
  char name[256];
  dev = open_test_device (argc, argv, name, sizeof (name), &ctx);
  remote = strstr (name, REMOTE_NAME_PART) != NULL;
  cl_int err;
  prog = build_program (ctx, dev, source, NULL);
  q = clCreateCommandQueue (ctx, dev, 0, &err);
  CHECK_ERR (err, "clCreateCommandQueue");
  cl_command_queue_properties qp = 0;
  CHECK (clGetDeviceInfo (dev, CL_DEVICE_QUEUE_PROPERTIES, sizeof (qp), &qp,
                          NULL));
  oq = clCreateCommandQueue (ctx, dev,
                             qp & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE, &err);
  CHECK_ERR (err, "clCreateCommandQueue(second)");

  sub_after_failure = drain;
  run_sub ("status transitions", test_transitions, 60);
  run_sub ("a failed user event", test_failed_user_event, 60);
  run_sub ("commands behind an already failed event", test_already_failed,
           60);
  run_sub ("a blocking read whose dependency failed", test_blocking_read, 60);
  run_sub ("a blocking write whose dependency failed", test_blocking_write,
           60);
  run_sub ("a blocking map whose dependency failed", test_blocking_map, 60);

  watchdog (60, "teardown");
  clReleaseCommandQueue (oq);
  clReleaseCommandQueue (q);
  clReleaseProgram (prog);
  clReleaseContext (ctx);
  return sub_finish ("passed");
}
