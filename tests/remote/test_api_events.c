/* test_api_events.c - events, queues and synchronisation through the remote
   driver.

   Usage: test_api_events [remote|local]   (default remote; "local" runs the
   same checks on the first non-remote device, for diagnosis).

   - Out-of-order queue (if the device supports one) with explicit wait
     lists: a chain write -> k1 -> k2 -> read and a diamond (two independent
     kernels, then one that needs both): results bit-exact, which they are
     only if the dependencies were honoured.
   - User events: a kernel gated on a user event has not run while the event
     is pending (its event is not complete, and a read of its output buffer
     through a second queue still returns the old contents); after
     clSetUserEventStatus(CL_COMPLETE) it runs and its result is read back.
     A command gated on a user event set to an error ends with a negative
     status and does not run.
   - Markers and barriers: clEnqueueMarkerWithWaitList /
     clEnqueueBarrierWithWaitList on the out-of-order queue order later
     commands after earlier ones; a marker with a wait list completes after
     exactly those events.
   - Event callbacks (CL_SUBMITTED, CL_RUNNING, CL_COMPLETE) on a command and
     CL_COMPLETE on a user event are all called (bounded wait), with the right
     status and user data.
   - Profiling: CL_PROFILING_COMMAND_QUEUED <= SUBMIT <= START <= END, all
     nonzero, for a kernel, a write, a read and a copy; profiling info of a
     user event is CL_PROFILING_INFO_NOT_AVAILABLE.
   - clGetEventInfo: command type, queue, context of remote events.
   - A queue and context released by the application and freed by their
     last command's completion while another thread is in clCreateContext:
     no deadlock.
   - A chain of 301 kernels on an in-order queue, the middle one waited for
     from another queue: both results exact.
   - A chain as SYCL runtimes submit it: 300 kernels on an out-of-order
     queue with profiling, each waiting for the previous one's event, every
     event held; the 100th also waits for a user event, set once all are
     enqueued; the middle one waited for from the host first.  Every event
     complete, each kernel's start after the previous one's end, the result
     exact.
   Each check runs on its own (run_sub): a failed check, or one that hangs
   past its watchdog, is reported with the step it was in and the next check
   still runs; the verdict line counts them.  */

#define TEST_NAME "api_events"
#include "remote_test_util.c"

#include <pthread.h>

static const char *source
    = "__kernel void affine (__global uint *b, uint mul, uint add)\n"
      "{ size_t i = get_global_id (0); b[i] = b[i] * mul + add; }\n"
      "__kernel void combine (__global const uint *x, __global const uint *y,\n"
      "                       __global uint *z)\n"
      "{ size_t i = get_global_id (0); z[i] = x[i] ^ (y[i] << 1); }\n"
      "__kernel void stamp (__global uint *b, uint v)\n"
      "{ size_t i = get_global_id (0); b[i] = v + (uint)i; }\n";

#define N 4096

static cl_device_id dev;
static cl_context ctx;
static cl_program prog;
/* in-order, second in-order, profiling, out-of-order (or NULL) */
static cl_command_queue q, q2, pq, oq;

/* After a failed check: let whatever it left queued finish (bounded by
   the watchdog; a check that failed with a user event still pending has
   set it first).  */
static cl_event pending_user; /* a gating user event not yet set */

static void
drain (void)
{
  if (pending_user)
    clSetUserEventStatus (pending_user, CL_COMPLETE);
  pending_user = NULL;
  clFinish (q);
  clFinish (q2);
  clFinish (pq);
  clFinish (oq);
}

static void
expect_u32 (const uint32_t *got, const uint32_t *want, size_t n,
            const char *what)
{
  for (size_t i = 0; i < n; ++i)
    if (got[i] != want[i])
      fail ("%s: element %zu is 0x%08x, expected 0x%08x", what, i, got[i],
            want[i]);
}

static cl_kernel
affine_kernel (cl_mem b, cl_uint mul, cl_uint add)
{
  cl_kernel k = create_kernel (prog, "affine");
  CHECK (clSetKernelArg (k, 0, sizeof (cl_mem), &b));
  CHECK (clSetKernelArg (k, 1, sizeof (mul), &mul));
  CHECK (clSetKernelArg (k, 2, sizeof (add), &add));
  return k;
}

/* ------------------------------------------------------------------ */

static void
test_out_of_order (void)
{
  uint32_t *init = xmalloc (N * 4), *want = xmalloc (N * 4),
           *got = xmalloc (N * 4);
  size_t g = N;
  for (size_t i = 0; i < N; ++i)
    init[i] = mix32 (60, (uint32_t)i);

  /* chain: write -> (x*3+1) -> (x*5+7) -> read; the order matters */
  cl_mem a = create_buffer (ctx, CL_MEM_READ_WRITE, N * 4, NULL);
  cl_kernel k1 = affine_kernel (a, 3, 1), k2 = affine_kernel (a, 5, 7);
  cl_event e[4];
  CHECK (clEnqueueWriteBuffer (oq, a, CL_FALSE, 0, N * 4, init, 0, NULL,
                               &e[0]));
  CHECK (clEnqueueNDRangeKernel (oq, k1, 1, NULL, &g, NULL, 1, &e[0], &e[1]));
  CHECK (clEnqueueNDRangeKernel (oq, k2, 1, NULL, &g, NULL, 1, &e[1], &e[2]));
  CHECK (clEnqueueReadBuffer (oq, a, CL_FALSE, 0, N * 4, got, 1, &e[2],
                              &e[3]));
  CHECK (clWaitForEvents (1, &e[3]));
  for (size_t i = 0; i < N; ++i)
    want[i] = (init[i] * 3 + 1) * 5 + 7;
  expect_u32 (got, want, N, "out-of-order chain write->k1->k2->read");
  for (int i = 0; i < 4; ++i)
    {
      if (event_status (e[i]) != CL_COMPLETE)
        fail ("chain event %d status %d", i, event_status (e[i]));
      clReleaseEvent (e[i]);
    }

  /* diamond: x and y computed independently, then z = x ^ (y << 1) */
  cl_mem x = create_buffer (ctx, CL_MEM_READ_WRITE, N * 4, NULL);
  cl_mem y = create_buffer (ctx, CL_MEM_READ_WRITE, N * 4, NULL);
  cl_mem z = create_buffer (ctx, CL_MEM_READ_WRITE, N * 4, NULL);
  cl_kernel kx = affine_kernel (x, 7, 3), ky = affine_kernel (y, 11, 5);
  cl_kernel kc = create_kernel (prog, "combine");
  CHECK (clSetKernelArg (kc, 0, sizeof (cl_mem), &x));
  CHECK (clSetKernelArg (kc, 1, sizeof (cl_mem), &y));
  CHECK (clSetKernelArg (kc, 2, sizeof (cl_mem), &z));
  cl_event wx, wy, ex, ey, ec, er;
  CHECK (clEnqueueWriteBuffer (oq, x, CL_FALSE, 0, N * 4, init, 0, NULL,
                               &wx));
  CHECK (clEnqueueWriteBuffer (oq, y, CL_FALSE, 0, N * 4, init, 0, NULL,
                               &wy));
  CHECK (clEnqueueNDRangeKernel (oq, kx, 1, NULL, &g, NULL, 1, &wx, &ex));
  CHECK (clEnqueueNDRangeKernel (oq, ky, 1, NULL, &g, NULL, 1, &wy, &ey));
  cl_event both[2] = { ex, ey };
  CHECK (clEnqueueNDRangeKernel (oq, kc, 1, NULL, &g, NULL, 2, both, &ec));
  memset (got, 0, N * 4);
  CHECK (clEnqueueReadBuffer (oq, z, CL_FALSE, 0, N * 4, got, 1, &ec, &er));
  CHECK (clWaitForEvents (1, &er));
  for (size_t i = 0; i < N; ++i)
    want[i] = (init[i] * 7 + 3) ^ ((init[i] * 11 + 5) << 1);
  expect_u32 (got, want, N, "out-of-order diamond");
  cl_event all[6] = { wx, wy, ex, ey, ec, er };
  for (int i = 0; i < 6; ++i)
    clReleaseEvent (all[i]);

  /* marker and barrier on the out-of-order queue */
  cl_event m1, s1, s2;
  cl_kernel sx = create_kernel (prog, "stamp"), sy = create_kernel (prog,
                                                                   "stamp");
  cl_uint vx = 0x1000, vy = 0x2000;
  CHECK (clSetKernelArg (sx, 0, sizeof (cl_mem), &x));
  CHECK (clSetKernelArg (sx, 1, sizeof (vx), &vx));
  CHECK (clSetKernelArg (sy, 0, sizeof (cl_mem), &y));
  CHECK (clSetKernelArg (sy, 1, sizeof (vy), &vy));
  CHECK (clEnqueueNDRangeKernel (oq, sx, 1, NULL, &g, NULL, 0, NULL, &s1));
  CHECK (clEnqueueNDRangeKernel (oq, sy, 1, NULL, &g, NULL, 0, NULL, &s2));
  /* barrier: everything after it waits for everything before it */
  CHECK (clEnqueueBarrierWithWaitList (oq, 0, NULL, NULL));
  CHECK (clEnqueueNDRangeKernel (oq, kc, 1, NULL, &g, NULL, 0, NULL, NULL));
  CHECK (clEnqueueBarrierWithWaitList (oq, 0, NULL, NULL));
  CHECK (clEnqueueMarkerWithWaitList (oq, 0, NULL, &m1));
  CHECK (clWaitForEvents (1, &m1));
  /* the marker completed: so did everything before it */
  if (event_status (s1) != CL_COMPLETE || event_status (s2) != CL_COMPLETE)
    fail ("marker complete but earlier kernels are not (status %d, %d)",
          event_status (s1), event_status (s2));
  cl_command_type ct = 0;
  CHECK (clGetEventInfo (m1, CL_EVENT_COMMAND_TYPE, sizeof (ct), &ct, NULL));
  if (ct != CL_COMMAND_MARKER)
    fail ("marker event has command type 0x%x", ct);
  CHECK (clEnqueueReadBuffer (oq, z, CL_TRUE, 0, N * 4, got, 0, NULL, NULL));
  for (size_t i = 0; i < N; ++i)
    want[i] = (vx + (uint32_t)i) ^ ((vy + (uint32_t)i) << 1);
  expect_u32 (got, want, N, "kernel after a barrier on an out-of-order queue");

  /* a marker with a wait list */
  cl_event m2;
  CHECK (clEnqueueMarkerWithWaitList (oq, 1, &s1, &m2));
  CHECK (clWaitForEvents (1, &m2));
  CHECK (clFinish (oq));
  clReleaseEvent (m1);
  clReleaseEvent (m2);
  clReleaseEvent (s1);
  clReleaseEvent (s2);
  clReleaseKernel (sx);
  clReleaseKernel (sy);
  clReleaseKernel (k1);
  clReleaseKernel (k2);
  clReleaseKernel (kx);
  clReleaseKernel (ky);
  clReleaseKernel (kc);
  clReleaseMemObject (a);
  clReleaseMemObject (x);
  clReleaseMemObject (y);
  clReleaseMemObject (z);
  free (init);
  free (want);
  free (got);
  note ("out-of-order queue: chain, diamond, barriers and markers OK");
}

/* ------------------------------------------------------------------ */

static void
test_user_events (void)
{
  size_t g = N;
  uint32_t *got = xmalloc (N * 4), *want = xmalloc (N * 4),
           *old = xmalloc (N * 4);
  for (size_t i = 0; i < N; ++i)
    old[i] = mix32 (61, (uint32_t)i);
  cl_mem b = buffer_from (ctx, q, CL_MEM_READ_WRITE, N * 4, old);
  cl_int err;
  cl_event u = clCreateUserEvent (ctx, &err);
  CHECK_ERR (err, "clCreateUserEvent");
  pending_user = u;
  cl_kernel k = create_kernel (prog, "stamp");
  cl_uint v = 0xABC00000u;
  CHECK (clSetKernelArg (k, 0, sizeof (cl_mem), &b));
  CHECK (clSetKernelArg (k, 1, sizeof (v), &v));
  cl_event ek;
  CHECK (clEnqueueNDRangeKernel (q, k, 1, NULL, &g, NULL, 1, &u, &ek));
  CHECK (clFlush (q));
  usleep (300000); /* pacing only: give a wrongly ungated kernel time to run */
  cl_int st = event_status (ek);
  if (st == CL_COMPLETE || st < 0)
    fail ("the kernel gated on a pending user event has status %d (%s)", st,
          clerr (st));
  /* it has not run: the buffer, read through another queue, is unchanged */
  step ("a blocking read through a second queue while a kernel on the "
        "first waits for a user event");
  CHECK (clEnqueueReadBuffer (q2, b, CL_TRUE, 0, N * 4, got, 0, NULL, NULL));
  expect_u32 (got, old, N, "buffer of a kernel gated on a pending user event");
  if (event_status (ek) == CL_COMPLETE)
    fail ("the gated kernel completed before its user event was set");

  pending_user = NULL;
  CHECK (clSetUserEventStatus (u, CL_COMPLETE));
  step ("clWaitForEvents on a kernel whose user event was set CL_COMPLETE");
  CHECK (clWaitForEvents (1, &ek));
  CHECK (clEnqueueReadBuffer (q, b, CL_TRUE, 0, N * 4, got, 0, NULL, NULL));
  for (size_t i = 0; i < N; ++i)
    want[i] = v + (uint32_t)i;
  expect_u32 (got, want, N, "gated kernel after clSetUserEventStatus");
  clReleaseEvent (ek);
  clReleaseEvent (u);
  note ("user event: gated kernel had not run while pending, ran after "
        "CL_COMPLETE");

  /* a user event set to an error: the gated command fails, does not run */
  cl_event u2 = clCreateUserEvent (ctx, &err);
  CHECK_ERR (err, "clCreateUserEvent(2)");
  pending_user = u2;
  cl_uint v2 = 0x0DD00000u;
  cl_kernel k2 = create_kernel (prog, "stamp");
  CHECK (clSetKernelArg (k2, 0, sizeof (cl_mem), &b));
  CHECK (clSetKernelArg (k2, 1, sizeof (v2), &v2));
  cl_event ek2;
  CHECK (clEnqueueNDRangeKernel (q2, k2, 1, NULL, &g, NULL, 1, &u2, &ek2));
  CHECK (clFlush (q2));
  pending_user = NULL;
  CHECK (clSetUserEventStatus (u2, -1234));
  step ("clWaitForEvents on a kernel gated by a user event that was set to "
        "-1234 (it must end with an error status)");
  cl_int wr = clWaitForEvents (1, &ek2);
  st = event_status (ek2);
  if (st >= 0)
    fail ("a kernel gated on a user event set to -1234 ended with status %d "
          "(clWaitForEvents %d)",
          st, wr);
  step ("clFinish on the queue of the kernel whose user event failed");
  CHECK (clFinish (q2));
  step ("reading the buffer after the failed user event");
  CHECK (clEnqueueReadBuffer (q, b, CL_TRUE, 0, N * 4, got, 0, NULL, NULL));
  expect_u32 (got, want, N,
              "buffer of a kernel whose user event failed (must not have run)");
  clReleaseEvent (ek2);
  clReleaseEvent (u2);
  clReleaseKernel (k);
  clReleaseKernel (k2);
  clReleaseMemObject (b);
  free (got);
  free (want);
  free (old);
  note ("user event set to an error: gated kernel failed (status %d), did "
        "not run",
        st);
}

/* ------------------------------------------------------------------ */

typedef struct
{
  pthread_mutex_t lock;
  int called[3]; /* submitted, running, complete */
  cl_int status[3];
  void *user;
} cb_record;

static cb_record rec = { PTHREAD_MUTEX_INITIALIZER, { 0 }, { 0 }, NULL };
static cb_record urec = { PTHREAD_MUTEX_INITIALIZER, { 0 }, { 0 }, NULL };

static void CL_CALLBACK
callback (cl_event ev, cl_int status, void *user)
{
  (void)ev;
  cb_record *r = (cb_record *)((void **)user)[0];
  int slot = (int)(intptr_t)((void **)user)[1];
  pthread_mutex_lock (&r->lock);
  r->called[slot]++;
  r->status[slot] = status;
  r->user = user;
  pthread_mutex_unlock (&r->lock);
}

static int
called (cb_record *r, int slot)
{
  pthread_mutex_lock (&r->lock);
  int c = r->called[slot];
  pthread_mutex_unlock (&r->lock);
  return c;
}

static void
wait_called (cb_record *r, int slot, const char *what)
{
  for (int i = 0; i < 200 && !called (r, slot); ++i)
    usleep (50000);
  if (!called (r, slot))
    fail ("the %s callback was not called within 10 s", what);
}

static void
test_callbacks (void)
{
  size_t g = N;
  cl_mem b = create_buffer (ctx, CL_MEM_READ_WRITE, N * 4, NULL);
  cl_kernel k = affine_kernel (b, 1, 1);
  cl_int err;
  cl_event u = clCreateUserEvent (ctx, &err);
  CHECK_ERR (err, "clCreateUserEvent");
  pending_user = u;
  cl_event ek;
  CHECK (clEnqueueNDRangeKernel (q, k, 1, NULL, &g, NULL, 1, &u, &ek));
  static void *ud[3][2], *uud[2];
  const cl_int types[3] = { CL_SUBMITTED, CL_RUNNING, CL_COMPLETE };
  for (int i = 0; i < 3; ++i)
    {
      ud[i][0] = &rec;
      ud[i][1] = (void *)(intptr_t)i;
      CHECK (clSetEventCallback (ek, types[i], callback, ud[i]));
    }
  uud[0] = &urec;
  uud[1] = (void *)(intptr_t)2;
  CHECK (clSetEventCallback (u, CL_COMPLETE, callback, uud));
  CHECK (clFlush (q));
  if (called (&rec, 2))
    fail ("CL_COMPLETE callback called while the command was gated");
  pending_user = NULL;
  CHECK (clSetUserEventStatus (u, CL_COMPLETE));
  CHECK (clWaitForEvents (1, &ek));
  wait_called (&rec, 2, "CL_COMPLETE");
  wait_called (&rec, 0, "CL_SUBMITTED");
  wait_called (&rec, 1, "CL_RUNNING");
  wait_called (&urec, 2, "user event's CL_COMPLETE");
  if (rec.status[2] != CL_COMPLETE)
    fail ("CL_COMPLETE callback got status %d", rec.status[2]);
  if (urec.status[2] != CL_COMPLETE)
    fail ("user event's callback got status %d", urec.status[2]);
  for (int i = 0; i < 3; ++i)
    if (rec.called[i] != 1)
      fail ("callback %d was called %d times", i, rec.called[i]);
  /* a callback registered on an already-complete event is called too */
  cb_record late = { PTHREAD_MUTEX_INITIALIZER, { 0 }, { 0 }, NULL };
  void *lud[2] = { &late, (void *)(intptr_t)2 };
  CHECK (clSetEventCallback (ek, CL_COMPLETE, callback, lud));
  wait_called (&late, 2, "late-registered CL_COMPLETE");
  CHECK (clFinish (q));
  clReleaseEvent (ek);
  clReleaseEvent (u);
  clReleaseKernel (k);
  clReleaseMemObject (b);
  note ("event callbacks: SUBMITTED, RUNNING, COMPLETE, user event, "
        "late registration all called once with CL_COMPLETE");
}

/* ------------------------------------------------------------------ */

/* The last reference to a queue and its context is held by a command gated
   on a user event; a second thread sets the event while this one creates
   and releases contexts.  clCreateContext waits for the server's reply to
   its default queue under PoCL's global context lock; the completion that
   frees the old context must not need that lock on the thread that reads
   the replies (CLBlast's tests hung there: a new context per routine).  */
static cl_event release_gate;

static void *
set_gate_later (void *arg)
{
  (void)arg;
  usleep (20000);
  clSetUserEventStatus (release_gate, CL_COMPLETE);
  clReleaseEvent (release_gate);
  return NULL;
}

static void
test_release_while_creating (void)
{
  for (int round = 0; round < 10; ++round)
    {
      cl_int err;
      cl_context c = clCreateContext (NULL, 1, &dev, NULL, NULL, &err);
      CHECK_ERR (err, "clCreateContext");
      cl_command_queue cq = clCreateCommandQueue (c, dev, 0, &err);
      CHECK_ERR (err, "clCreateCommandQueue");
      release_gate = clCreateUserEvent (c, &err);
      CHECK_ERR (err, "clCreateUserEvent");
      CHECK (clEnqueueMarkerWithWaitList (cq, 1, &release_gate, NULL));
      CHECK (clFlush (cq));
      clReleaseCommandQueue (cq);
      clReleaseContext (c);
      pthread_t t;
      if (pthread_create (&t, NULL, set_gate_later, NULL) != 0)
        fail ("pthread_create failed");
      for (int i = 0; i < 100; ++i)
        {
          cl_context other = clCreateContext (NULL, 1, &dev, NULL, NULL, &err);
          CHECK_ERR (err, "clCreateContext (while the gate is set)");
          clReleaseContext (other);
        }
      pthread_join (t, NULL);
    }
  note ("released context freed by its last completion while others are "
        "created: 10 rounds");
}

/* ------------------------------------------------------------------ */

static void
check_profile (cl_event e, const char *what)
{
  cl_ulong t[4];
  const cl_profiling_info p[4]
      = { CL_PROFILING_COMMAND_QUEUED, CL_PROFILING_COMMAND_SUBMIT,
          CL_PROFILING_COMMAND_START, CL_PROFILING_COMMAND_END };
  static const char *pn[4] = { "QUEUED", "SUBMIT", "START", "END" };
  for (int i = 0; i < 4; ++i)
    {
      cl_int r = clGetEventProfilingInfo (e, p[i], sizeof (t[i]), &t[i],
                                          NULL);
      if (r != CL_SUCCESS)
        fail ("%s: clGetEventProfilingInfo(%s) returned %d (%s)", what, pn[i],
              r, clerr (r));
      if (t[i] == 0)
        fail ("%s: CL_PROFILING_COMMAND_%s is 0", what, pn[i]);
    }
  for (int i = 0; i < 3; ++i)
    if (t[i] > t[i + 1])
      fail ("%s: %s (%llu) > %s (%llu)", what, pn[i],
            (unsigned long long)t[i], pn[i + 1],
            (unsigned long long)t[i + 1]);
}

static void
test_profiling (void)
{
  size_t g = N;
  uint32_t *h = xmalloc (N * 4), *got = xmalloc (N * 4);
  for (size_t i = 0; i < N; ++i)
    h[i] = mix32 (62, (uint32_t)i);
  cl_mem a = create_buffer (ctx, CL_MEM_READ_WRITE, N * 4, NULL);
  cl_mem c = create_buffer (ctx, CL_MEM_READ_WRITE, N * 4, NULL);
  cl_kernel k = affine_kernel (a, 9, 2);
  cl_event ew, ek, ec, er;
  CHECK (clEnqueueWriteBuffer (pq, a, CL_FALSE, 0, N * 4, h, 0, NULL, &ew));
  CHECK (clEnqueueNDRangeKernel (pq, k, 1, NULL, &g, NULL, 0, NULL, &ek));
  CHECK (clEnqueueCopyBuffer (pq, a, c, 0, 0, N * 4, 0, NULL, &ec));
  CHECK (clEnqueueReadBuffer (pq, c, CL_TRUE, 0, N * 4, got, 0, NULL, &er));
  for (size_t i = 0; i < N; ++i)
    h[i] = h[i] * 9 + 2;
  expect_u32 (got, h, N, "profiled write/kernel/copy/read");
  CHECK (clFinish (pq));
  check_profile (ew, "write");
  check_profile (ek, "kernel");
  check_profile (ec, "copy");
  check_profile (er, "read");

  cl_command_type ct = 0;
  cl_command_queue eq = NULL;
  cl_context ec_ctx = NULL;
  CHECK (clGetEventInfo (ek, CL_EVENT_COMMAND_TYPE, sizeof (ct), &ct, NULL));
  CHECK (clGetEventInfo (ek, CL_EVENT_COMMAND_QUEUE, sizeof (eq), &eq, NULL));
  CHECK (clGetEventInfo (ek, CL_EVENT_CONTEXT, sizeof (ec_ctx), &ec_ctx,
                         NULL));
  if (ct != CL_COMMAND_NDRANGE_KERNEL || eq != pq || ec_ctx != ctx)
    fail ("clGetEventInfo of a kernel event: type 0x%x queue %p context %p",
          ct, (void *)eq, (void *)ec_ctx);

  cl_int err;
  cl_event u = clCreateUserEvent (ctx, &err);
  CHECK_ERR (err, "clCreateUserEvent");
  cl_ulong t;
  cl_int r = clGetEventProfilingInfo (u, CL_PROFILING_COMMAND_QUEUED,
                                      sizeof (t), &t, NULL);
  if (r != CL_PROFILING_INFO_NOT_AVAILABLE)
    fail ("profiling info of a user event returned %d (%s), expected "
          "CL_PROFILING_INFO_NOT_AVAILABLE",
          r, clerr (r));
  CHECK (clSetUserEventStatus (u, CL_COMPLETE));
  clReleaseEvent (u);
  clReleaseEvent (ew);
  clReleaseEvent (ek);
  clReleaseEvent (ec);
  clReleaseEvent (er);
  clReleaseKernel (k);
  clReleaseMemObject (a);
  clReleaseMemObject (c);
  free (h);
  free (got);
  note ("profiling: queued <= submit <= start <= end, all nonzero, for "
        "write, kernel, copy, read");
}

/* A long chain on the in-order queue q sent in one burst, with one command
   in the middle that the application holds an event of and that q2 waits
   on.  pocld enqueues most of such a chain without native events, each
   reported when a later one completes (doc/pocld.md): every command must
   still be reported, and a wait from another queue must hold.  */
static void
test_long_chain (void)
{
  enum { LEN = 300, MID = 150 };
  uint32_t *init = xmalloc (N * 4), *got = xmalloc (N * 4),
           *want = xmalloc (N * 4);
  for (size_t i = 0; i < N; ++i)
    init[i] = (uint32_t)(i * 2654435761u);
  cl_int err;
  cl_mem b = clCreateBuffer (ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                             N * 4, init, &err);
  CHECK_ERR (err, "clCreateBuffer");
  cl_mem c = clCreateBuffer (ctx, CL_MEM_READ_WRITE, N * 4, NULL, &err);
  CHECK_ERR (err, "clCreateBuffer");
  cl_kernel inc = affine_kernel (b, 1, 1);
  cl_kernel stamp = create_kernel (prog, "stamp");
  cl_uint seven = 7;
  CHECK (clSetKernelArg (stamp, 0, sizeof (cl_mem), &c));
  CHECK (clSetKernelArg (stamp, 1, sizeof (seven), &seven));
  size_t g = N;
  cl_event mid = NULL, rd = NULL;
  step ("enqueueing the chain");
  for (int i = 0; i < LEN; ++i)
    {
      if (i == MID)
        CHECK (clEnqueueNDRangeKernel (q, stamp, 1, NULL, &g, NULL, 0, NULL,
                                       &mid));
      CHECK (clEnqueueNDRangeKernel (q, inc, 1, NULL, &g, NULL, 0, NULL,
                                     NULL));
    }
  step ("reading what the middle command wrote, from the other queue");
  CHECK (clEnqueueReadBuffer (q2, c, CL_FALSE, 0, N * 4, got, 1, &mid, &rd));
  CHECK (clWaitForEvents (1, &rd));
  for (size_t i = 0; i < N; ++i)
    want[i] = 7 + (uint32_t)i;
  expect_u32 (got, want, N, "the middle command's output");
  cl_int st = 1;
  CHECK (clGetEventInfo (mid, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof (st),
                         &st, NULL));
  if (st != CL_COMPLETE)
    fail ("the middle command's status is %d after a wait on it", st);
  step ("finishing the chain");
  CHECK (clFinish (q));
  CHECK (clEnqueueReadBuffer (q, b, CL_TRUE, 0, N * 4, got, 0, NULL, NULL));
  for (size_t i = 0; i < N; ++i)
    want[i] = init[i] + LEN;
  expect_u32 (got, want, N, "the chain's buffer");
  clReleaseEvent (mid);
  clReleaseEvent (rd);
  clReleaseKernel (inc);
  clReleaseKernel (stamp);
  clReleaseMemObject (b);
  clReleaseMemObject (c);
  free (init);
  free (got);
  free (want);
  note ("%d kernels on an in-order queue, the middle one waited for from "
        "another queue: exact",
        LEN + 1);
}

static void
test_event_chain (void)
{
  enum { LEN = 300, GATE = 100, MID = 150 };
  if (oq == NULL)
    {
      note ("no out-of-order queue: the event chain is skipped");
      return;
    }
  uint32_t *init = xmalloc (N * 4), *got = xmalloc (N * 4),
           *want = xmalloc (N * 4);
  for (size_t i = 0; i < N; ++i)
    init[i] = (uint32_t)(i * 2654435761u);
  cl_int err;
  cl_queue_properties props[]
      = { CL_QUEUE_PROPERTIES,
          CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE | CL_QUEUE_PROFILING_ENABLE,
          0 };
  cl_command_queue cq
      = clCreateCommandQueueWithProperties (ctx, dev, props, &err);
  CHECK_ERR (err, "clCreateCommandQueueWithProperties");
  cl_mem b = clCreateBuffer (ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                             N * 4, init, &err);
  CHECK_ERR (err, "clCreateBuffer");
  cl_kernel inc = affine_kernel (b, 1, 1);
  cl_event gate = clCreateUserEvent (ctx, &err);
  CHECK_ERR (err, "clCreateUserEvent");
  pending_user = gate;
  cl_event ev[LEN];
  size_t g = N;
  step ("enqueueing the chain");
  for (int i = 0; i < LEN; ++i)
    {
      cl_event w[2] = { i ? ev[i - 1] : NULL, gate };
      cl_uint nw = i == 0 ? 0 : i == GATE ? 2 : 1;
      CHECK (clEnqueueNDRangeKernel (cq, inc, 1, NULL, &g, NULL, nw,
                                     nw ? w : NULL, &ev[i]));
    }
  CHECK (clFlush (cq));
  step ("waiting for a kernel before the gate");
  CHECK (clWaitForEvents (1, &ev[GATE / 2]));
  CHECK (clSetUserEventStatus (gate, CL_COMPLETE));
  pending_user = NULL;
  step ("waiting for the middle kernel");
  CHECK (clWaitForEvents (1, &ev[MID]));
  step ("waiting for the last kernel");
  CHECK (clWaitForEvents (1, &ev[LEN - 1]));
  cl_ulong prev_end = 0;
  for (int i = 0; i < LEN; ++i)
    {
      cl_int st = 1;
      cl_ulong start = 0, end = 0;
      CHECK (clGetEventInfo (ev[i], CL_EVENT_COMMAND_EXECUTION_STATUS,
                             sizeof (st), &st, NULL));
      if (st != CL_COMPLETE)
        fail ("kernel %d of the chain is %d after the last one ended", i, st);
      CHECK (clGetEventProfilingInfo (ev[i], CL_PROFILING_COMMAND_START,
                                      sizeof (start), &start, NULL));
      CHECK (clGetEventProfilingInfo (ev[i], CL_PROFILING_COMMAND_END,
                                      sizeof (end), &end, NULL));
      if (start == 0 || end < start || start < prev_end)
        fail ("kernel %d ran from %llu to %llu, the one before it ended at "
              "%llu",
              i, (unsigned long long)start, (unsigned long long)end,
              (unsigned long long)prev_end);
      prev_end = end;
      clReleaseEvent (ev[i]);
    }
  CHECK (clEnqueueReadBuffer (cq, b, CL_TRUE, 0, N * 4, got, 0, NULL, NULL));
  for (size_t i = 0; i < N; ++i)
    want[i] = init[i] + LEN;
  expect_u32 (got, want, N, "the chain's buffer");
  clReleaseEvent (gate);
  clReleaseKernel (inc);
  clReleaseMemObject (b);
  clReleaseCommandQueue (cq);
  free (init);
  free (got);
  free (want);
  note ("%d kernels chained by events on an out-of-order queue, one gated: "
        "every event complete, in order, exact",
        LEN);
}

int
main (int argc, char **argv)
{
  watchdog (120, "setup (device, context, program build)");
  char name[256];
  dev = open_test_device (argc, argv, name, sizeof (name), &ctx);
  cl_int err;
  prog = build_program (ctx, dev, source, NULL);
  q = clCreateCommandQueue (ctx, dev, 0, &err);
  CHECK_ERR (err, "clCreateCommandQueue");
  q2 = clCreateCommandQueue (ctx, dev, 0, &err);
  CHECK_ERR (err, "clCreateCommandQueue(2)");
  pq = clCreateCommandQueue (ctx, dev, CL_QUEUE_PROFILING_ENABLE, &err);
  CHECK_ERR (err, "clCreateCommandQueue(PROFILING)");

  cl_command_queue_properties qp = 0;
  CHECK (clGetDeviceInfo (dev, CL_DEVICE_QUEUE_PROPERTIES, sizeof (qp), &qp,
                          NULL));
  if (qp & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE)
    {
      oq = clCreateCommandQueue (
          ctx, dev, CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE, &err);
      CHECK_ERR (err, "clCreateCommandQueue(OUT_OF_ORDER)");
    }
  else
    {
      /* same checks on an in-order queue: still exercises wait lists */
      note ("device reports no out-of-order queues: running those checks on "
            "an in-order queue");
      oq = clCreateCommandQueue (ctx, dev, 0, &err);
      CHECK_ERR (err, "clCreateCommandQueue(for the out-of-order checks)");
    }
  sub_after_failure = drain;
  run_sub ("out-of-order queue, wait lists, markers, barriers",
           test_out_of_order, 45);
  run_sub ("user events", test_user_events, 45);
  run_sub ("event callbacks", test_callbacks, 45);
  run_sub ("profiling", test_profiling, 45);
  run_sub ("a context freed by a completion during clCreateContext",
           test_release_while_creating, 45);
  run_sub ("a long chain, waited on in the middle", test_long_chain, 45);
  run_sub ("a chain of events on an out-of-order queue", test_event_chain,
           45);

  if (sub_hung)
    return sub_finish ("");
  watchdog (60, "teardown (releases)");
  clReleaseCommandQueue (oq);
  clReleaseCommandQueue (q);
  clReleaseCommandQueue (q2);
  clReleaseCommandQueue (pq);
  clReleaseProgram (prog);
  clReleaseContext (ctx);
  char what[320];
  snprintf (what, sizeof (what), "held on %s", name);
  return sub_finish (what);
}
