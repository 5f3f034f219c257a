/* test_command_buffers.c - command buffers (cl_khr_command_buffer) through
   remote as on the local device (run with the argument "local" for the same
   checks there): a buffer of fills, kernels (their argument values as
   recorded, not as set later), a copy, a rectangular copy and a barrier,
   ordered by sync points, enqueued many times on an in-order and an
   out-of-order queue, every word of the three buffers compared with the
   host's replay of the same commands; a run behind a user event (not started
   before the event is set; its event completes as one command of type
   CL_COMMAND_COMMAND_BUFFER_KHR); many buffers made and released; and the
   error codes of bad use.  Through remote each run is one message (the
   server makes the buffer once, doc/protocol.md, "Command buffers").  */

#define TEST_NAME "command_buffers"
#include "remote_test_util.c"

#include <CL/cl_ext.h>
#include <unistd.h>

enum
{
  N = 1024, /* words per buffer; a rectangle view: 32 rows of 32 words */
  RUNS = 50
};

static const char source[]
    = "kernel void add (global uint *a, global const uint *b, uint k)\n"
      "{ size_t i = get_global_id (0); a[i] = a[i] + b[i] * k; }\n"
      "kernel void scale (global uint *a, uint m)\n"
      "{ size_t i = get_global_id (0); a[i] = a[i] * m + 1u; }\n";

static cl_device_id dev;
static cl_context ctx;
static cl_program prog;
static cl_kernel k_add, k_scale;

static clCreateCommandBufferKHR_fn create_cb;
static clFinalizeCommandBufferKHR_fn finalize_cb;
static clReleaseCommandBufferKHR_fn release_cb;
static clEnqueueCommandBufferKHR_fn enqueue_cb;
static clCommandNDRangeKernelKHR_fn cmd_ndrange;
static clCommandCopyBufferKHR_fn cmd_copy;
static clCommandCopyBufferRectKHR_fn cmd_copy_rect;
static clCommandFillBufferKHR_fn cmd_fill;
static clCommandBarrierWithWaitListKHR_fn cmd_barrier;
static clGetCommandBufferInfoKHR_fn info_cb;

static void
load_functions (void)
{
  cl_platform_id p;
  CHECK (clGetDeviceInfo (dev, CL_DEVICE_PLATFORM, sizeof (p), &p, NULL));
  char ext[8192] = { 0 };
  CHECK (clGetDeviceInfo (dev, CL_DEVICE_EXTENSIONS, sizeof (ext) - 1, ext,
                          NULL));
  if (strstr (ext, "cl_khr_command_buffer") == NULL)
    fail ("the device does not list cl_khr_command_buffer: %s", ext);
  /* The version this test's API is (the provisional 0.9), not the server's
     device's: through remote, PoCL's core records the buffers.  */
  cl_name_version nv[256];
  size_t nv_size = 0;
  CHECK (clGetDeviceInfo (dev, CL_DEVICE_EXTENSIONS_WITH_VERSION, sizeof (nv),
                          nv, &nv_size));
  cl_version cb_version = 0;
  for (size_t i = 0; i < nv_size / sizeof (nv[0]); ++i)
    if (strcmp (nv[i].name, "cl_khr_command_buffer") == 0)
      cb_version = nv[i].version;
  if (CL_VERSION_MAJOR (cb_version) != 0 || CL_VERSION_MINOR (cb_version) != 9)
    fail ("cl_khr_command_buffer's version is %u.%u.%u, not 0.9",
          CL_VERSION_MAJOR (cb_version), CL_VERSION_MINOR (cb_version),
          CL_VERSION_PATCH (cb_version));
#define GET(var, name)                                                        \
  var = (name##_fn)clGetExtensionFunctionAddressForPlatform (p, #name);       \
  if (var == NULL)                                                            \
    fail ("no %s", #name);
  GET (create_cb, clCreateCommandBufferKHR);
  GET (finalize_cb, clFinalizeCommandBufferKHR);
  GET (release_cb, clReleaseCommandBufferKHR);
  GET (enqueue_cb, clEnqueueCommandBufferKHR);
  GET (cmd_ndrange, clCommandNDRangeKernelKHR);
  GET (cmd_copy, clCommandCopyBufferKHR);
  GET (cmd_copy_rect, clCommandCopyBufferRectKHR);
  GET (cmd_fill, clCommandFillBufferKHR);
  GET (cmd_barrier, clCommandBarrierWithWaitListKHR);
  GET (info_cb, clGetCommandBufferInfoKHR);
#undef GET
}

/* The host's replay of one run of the recorded buffer (see record).  */
static void
host_run (cl_uint *a, cl_uint *b, cl_uint *c)
{
  for (int i = 0; i < N; ++i)
    {
      a[i] = 3;
      b[i] = 7;
    }
  for (int i = 0; i < N; ++i)
    a[i] = a[i] + b[i] * 2;
  memcpy (c + N / 2, a, N / 2 * sizeof (cl_uint));
  for (int i = 0; i < N; ++i)
    c[i] = c[i] * 5 + 1;
  /* rectangle: 8 rows of 4 words from c at (row 2, word 4), row pitch 32
     words, into b at (row 0, word 0) with a row pitch of 16 words */
  for (int r = 0; r < 8; ++r)
    memcpy (b + r * 16, c + (2 + r) * 32 + 4, 4 * sizeof (cl_uint));
}

static void
set_kernel_args (cl_mem a, cl_mem b, cl_mem c, cl_uint k, cl_uint m)
{
  CHECK (clSetKernelArg (k_add, 0, sizeof (cl_mem), &a));
  CHECK (clSetKernelArg (k_add, 1, sizeof (cl_mem), &b));
  CHECK (clSetKernelArg (k_add, 2, sizeof (k), &k));
  CHECK (clSetKernelArg (k_scale, 0, sizeof (cl_mem), &c));
  CHECK (clSetKernelArg (k_scale, 1, sizeof (m), &m));
}

/* fill A with 3 (sp1), fill B with 7 (sp2); add: A += B * 2 (sp1, sp2);
   copy the first half of A to the second half of C (after add); scale: C =
   C * 5 + 1 (after the copy); barrier; rectangle C -> B.  */
static cl_command_buffer_khr
record (cl_command_queue q, cl_mem a, cl_mem b, cl_mem c)
{
  cl_int err;
  /* runs are enqueued while the one before may be pending */
  cl_command_buffer_properties_khr props[]
      = { CL_COMMAND_BUFFER_FLAGS_KHR, CL_COMMAND_BUFFER_SIMULTANEOUS_USE_KHR,
          0 };
  cl_command_buffer_khr cb = create_cb (1, &q, props, &err);
  CHECK_ERR (err, "clCreateCommandBufferKHR");
  cl_sync_point_khr sp[8];
  cl_uint three = 3, seven = 7;
  CHECK (cmd_fill (cb, NULL, a, &three, sizeof (three), 0, N * 4, 0, NULL,
                   &sp[0], NULL));
  CHECK (cmd_fill (cb, NULL, b, &seven, sizeof (seven), 0, N * 4, 0, NULL,
                   &sp[1], NULL));
  set_kernel_args (a, b, c, 2, 5);
  size_t g = N;
  CHECK (cmd_ndrange (cb, NULL, NULL, k_add, 1, NULL, &g, NULL, 2, sp,
                      &sp[2], NULL));
  CHECK (cmd_copy (cb, NULL, a, c, 0, N / 2 * 4, N / 2 * 4, 1, &sp[2], &sp[3],
                   NULL));
  CHECK (cmd_ndrange (cb, NULL, NULL, k_scale, 1, NULL, &g, NULL, 1, &sp[3],
                      &sp[4], NULL));
  CHECK (cmd_barrier (cb, NULL, 0, NULL, &sp[5], NULL));
  size_t so[3] = { 16, 2, 0 }, dor[3] = { 0, 0, 0 }, rg[3] = { 16, 8, 1 };
  CHECK (cmd_copy_rect (cb, NULL, c, b, so, dor, rg, 128, 0, 64, 0, 1, &sp[5],
                        &sp[6], NULL));
  /* Arguments set after recording do not change the recorded commands.  */
  set_kernel_args (b, a, a, 1000, 1000);
  CHECK (finalize_cb (cb));
  return cb;
}

static void
compare (cl_command_queue q, cl_mem bufs[3], cl_uint *want[3],
         const char *what)
{
  static cl_uint got[N];
  static const char names[] = "ABC";
  for (int j = 0; j < 3; ++j)
    {
      CHECK (clEnqueueReadBuffer (q, bufs[j], CL_TRUE, 0, sizeof (got), got, 0,
                                  NULL, NULL));
      for (int i = 0; i < N; ++i)
        if (got[i] != want[j][i])
          fail ("%s: buffer %c word %d is %u, expected %u", what, names[j], i,
                got[i], want[j][i]);
    }
}

static void
runs (cl_command_queue_properties props, const char *what)
{
  cl_int err;
  cl_command_queue q = clCreateCommandQueue (ctx, dev, props, &err);
  CHECK_ERR (err, "clCreateCommandQueue");
  static cl_uint ha[N], hb[N], hc[N];
  for (int i = 0; i < N; ++i)
    hc[i] = (cl_uint)i * 2654435761u;
  cl_mem a = create_buffer (ctx, CL_MEM_READ_WRITE, N * 4, NULL);
  cl_mem b = create_buffer (ctx, CL_MEM_READ_WRITE, N * 4, NULL);
  cl_mem c = create_buffer (ctx, CL_MEM_COPY_HOST_PTR, N * 4, hc);
  cl_command_buffer_khr cb = record (q, a, b, c);
  cl_event last = NULL;
  for (int r = 0; r < RUNS; ++r)
    {
      /* out of order: each run waits for the one before, whose event is
         released only once the next run holds it */
      cl_event next = NULL;
      CHECK (enqueue_cb (0, NULL, cb, last ? 1 : 0, last ? &last : NULL,
                         &next));
      if (last != NULL)
        clReleaseEvent (last);
      last = next;
      host_run (ha, hb, hc);
    }
  CHECK (clWaitForEvents (1, &last));
  cl_int st = 0;
  CHECK (clGetEventInfo (last, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof (st),
                         &st, NULL));
  EXPECT (st == CL_COMPLETE, "%s: the last run's status is %d", what, st);
  clReleaseEvent (last);
  cl_mem bufs[3] = { a, b, c };
  cl_uint *want[3] = { ha, hb, hc };
  compare (q, bufs, want, what);
  CHECK (release_cb (cb));
  clReleaseMemObject (a);
  clReleaseMemObject (b);
  clReleaseMemObject (c);
  CHECK (clFinish (q));
  clReleaseCommandQueue (q);
  note ("%s: %d runs of 7 commands, every word as the host's replay", what,
        RUNS);
}

static void
test_in_order (void)
{
  runs (0, "in-order queue");
}

static void
test_out_of_order (void)
{
  runs (CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE, "out-of-order queue");
}

/* A run behind a user event: nothing of it runs before the event is set,
   and its own event is one command of the command buffer type.  */
static void
test_wait_list (void)
{
  cl_int err;
  cl_command_queue q = clCreateCommandQueue (ctx, dev, 0, &err);
  CHECK_ERR (err, "clCreateCommandQueue");
  static cl_uint ha[N], hb[N], hc[N], zero[N];
  for (int i = 0; i < N; ++i)
    hc[i] = (cl_uint)i;
  cl_mem a = create_buffer (ctx, CL_MEM_COPY_HOST_PTR, N * 4, zero);
  cl_mem b = create_buffer (ctx, CL_MEM_COPY_HOST_PTR, N * 4, zero);
  cl_mem c = create_buffer (ctx, CL_MEM_COPY_HOST_PTR, N * 4, hc);
  cl_command_buffer_khr cb = record (q, a, b, c);
  cl_event ue = clCreateUserEvent (ctx, &err);
  CHECK_ERR (err, "clCreateUserEvent");
  cl_event ev = NULL;
  CHECK (enqueue_cb (0, NULL, cb, 1, &ue, &ev));
  CHECK (clFlush (q));
  usleep (200000);
  cl_int st = 0;
  CHECK (clGetEventInfo (ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof (st),
                         &st, NULL));
  EXPECT (st > CL_RUNNING, "the run's status is %d before its user event", st);
  cl_command_type type = 0;
  CHECK (clGetEventInfo (ev, CL_EVENT_COMMAND_TYPE, sizeof (type), &type,
                         NULL));
  EXPECT (type == CL_COMMAND_COMMAND_BUFFER_KHR, "the run's type is %#x",
          type);
  CHECK (clSetUserEventStatus (ue, CL_COMPLETE));
  CHECK (clWaitForEvents (1, &ev));
  host_run (ha, hb, hc);
  cl_mem bufs[3] = { a, b, c };
  cl_uint *want[3] = { ha, hb, hc };
  compare (q, bufs, want, "behind a user event");
  clReleaseEvent (ev);
  clReleaseEvent (ue);
  CHECK (release_cb (cb));
  clReleaseMemObject (a);
  clReleaseMemObject (b);
  clReleaseMemObject (c);
  clReleaseCommandQueue (q);
  note ("behind a user event: queued until it was set, one event of type "
        "CL_COMMAND_COMMAND_BUFFER_KHR, results as the host's");
}

/* Buffers made, run once and released, one after the other: each of its
   own fill value.  */
static void
test_many (void)
{
  cl_int err;
  cl_command_queue q = clCreateCommandQueue (ctx, dev, 0, &err);
  CHECK_ERR (err, "clCreateCommandQueue");
  cl_mem a = create_buffer (ctx, CL_MEM_READ_WRITE, N * 4, NULL);
  enum
  {
    BUFFERS = 40
  };
  for (cl_uint i = 0; i < BUFFERS; ++i)
    {
      cl_command_buffer_khr cb = create_cb (1, &q, NULL, &err);
      CHECK_ERR (err, "clCreateCommandBufferKHR");
      cl_uint v = i * 7 + 1;
      CHECK (cmd_fill (cb, NULL, a, &v, sizeof (v), 0, N * 4, 0, NULL, NULL,
                       NULL));
      CHECK (finalize_cb (cb));
      CHECK (enqueue_cb (0, NULL, cb, 0, NULL, NULL));
      CHECK (release_cb (cb));
      cl_uint got[N];
      CHECK (clEnqueueReadBuffer (q, a, CL_TRUE, 0, sizeof (got), got, 0, NULL,
                                  NULL));
      for (int j = 0; j < N; ++j)
        if (got[j] != v)
          fail ("buffer %u: word %d is %u, expected %u", i, j, got[j], v);
    }
  clReleaseMemObject (a);
  clReleaseCommandQueue (q);
  note ("%d buffers made, run and released (each released before its run "
        "completed)",
        BUFFERS);
}

static void
expect_code (cl_int got, cl_int want, const char *what)
{
  if (got != want)
    fail ("%s returned %d (%s), expected %d (%s)", what, got, clerr (got),
          want, clerr (want));
}

static void
test_errors (void)
{
  cl_int err;
  cl_command_queue q = clCreateCommandQueue (ctx, dev, 0, &err);
  CHECK_ERR (err, "clCreateCommandQueue");
  cl_mem a = create_buffer (ctx, CL_MEM_READ_WRITE, N * 4, NULL);
  cl_command_buffer_khr cb = create_cb (1, &q, NULL, &err);
  CHECK_ERR (err, "clCreateCommandBufferKHR");
  cl_uint v = 1;
  cl_sync_point_khr sp;
  CHECK (cmd_fill (cb, NULL, a, &v, sizeof (v), 0, N * 4, 0, NULL, &sp, NULL));
  expect_code (enqueue_cb (0, NULL, cb, 0, NULL, NULL), CL_INVALID_OPERATION,
               "clEnqueueCommandBufferKHR of a buffer not finalized");
  cl_sync_point_khr bad = 99;
  expect_code (cmd_fill (cb, NULL, a, &v, sizeof (v), 0, N * 4, 1, &bad, NULL,
                         NULL),
               CL_INVALID_SYNC_POINT_WAIT_LIST_KHR,
               "clCommandFillBufferKHR waiting for an unknown sync point");
  expect_code (cmd_fill (cb, NULL, a, &v, sizeof (v), 0, N * 4 + 4, 0, NULL,
                         NULL, NULL),
               CL_INVALID_VALUE, "clCommandFillBufferKHR beyond the buffer");
  CHECK (finalize_cb (cb));
  cl_command_buffer_state_khr state = 0;
  CHECK (info_cb (cb, CL_COMMAND_BUFFER_STATE_KHR, sizeof (state), &state,
                  NULL));
  EXPECT (state == CL_COMMAND_BUFFER_STATE_EXECUTABLE_KHR,
          "the finalized buffer's state is %u", (unsigned)state);
  expect_code (cmd_fill (cb, NULL, a, &v, sizeof (v), 0, N * 4, 0, NULL, NULL,
                         NULL),
               CL_INVALID_OPERATION, "clCommandFillBufferKHR after finalize");
  expect_code (enqueue_cb (0, NULL, NULL, 0, NULL, NULL),
               CL_INVALID_COMMAND_BUFFER_KHR,
               "clEnqueueCommandBufferKHR of NULL");
  expect_code (enqueue_cb (0, NULL, cb, 1, NULL, NULL),
               CL_INVALID_EVENT_WAIT_LIST,
               "clEnqueueCommandBufferKHR with a NULL wait list of 1");
  CHECK (release_cb (cb));
  clReleaseMemObject (a);
  clReleaseCommandQueue (q);
  note ("error codes as the extension gives them");
}

int
main (int argc, char **argv)
{
  watchdog (300, "the whole test");
  char name[256];
  cl_int err;
  dev = open_test_device (argc, argv, name, sizeof (name), &ctx);
  load_functions ();
  prog = build_program (ctx, dev, source, NULL);
  k_add = create_kernel (prog, "add");
  k_scale = create_kernel (prog, "scale");
  (void)err;
  run_sub ("an in-order queue", test_in_order, 120);
  run_sub ("an out-of-order queue", test_out_of_order, 120);
  run_sub ("a run behind a user event", test_wait_list, 60);
  run_sub ("many buffers", test_many, 120);
  run_sub ("error codes", test_errors, 60);
  if (sub_hung)
    return sub_finish ("");
  clReleaseKernel (k_add);
  clReleaseKernel (k_scale);
  clReleaseProgram (prog);
  clReleaseContext (ctx);
  return sub_finish (name);
}
