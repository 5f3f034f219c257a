/* test_cross_platform.c - migrations between two remote devices of one
   server that are in two native platforms (contexts) there: pocld copies
   through its own memory, and none of the buffer's bytes cross the client.
   Run by test_cross_platform.sh against a pocld that gives each device a
   context of its own (POCLD_CONTEXT_PER_DEVICE=1), with POCL_DEVICES
   "remote remote" naming its devices 0 and 1.  Asserts bits and the byte
   counters of CL_DEVICE_REMOTE_TRAFFIC_POCL.  */

#define TEST_NAME "cross_platform"
#include "remote_test_util.c"

#include "CL/cl_ext_pocl.h"
#include "pocl_remote_ext.h"

/* Messages of the commands between the first write and the last read: far
   below one buffer of the larger sizes, which would cross twice (read to the
   client, written back) if the migrations went through it.  */
#define COMMAND_BYTES_MAX 16384

static const char *source
    = "__kernel void add(__global int *a, int v) {\n"
      "  a[get_global_id(0)] += v;\n"
      "}\n";

static cl_context ctx;
static cl_device_id devs[2];
static cl_command_queue queues[2];
static cl_kernel k_add[2];
static clSetContentSizeBufferPoCL_fn set_size;

static uint64_t
client_bytes (void)
{
  pocl_remote_traffic t;
  /* the devices share their server's counters */
  CHECK (clGetDeviceInfo (devs[0], CL_DEVICE_REMOTE_TRAFFIC_POCL, sizeof (t),
                          &t, NULL));
  return t.bytes_sent + t.bytes_received;
}

static void
add_on (int d, cl_mem buf, int v, size_t n, cl_event *wait, cl_event *ev)
{
  CHECK (clSetKernelArg (k_add[d], 0, sizeof (buf), &buf));
  CHECK (clSetKernelArg (k_add[d], 1, sizeof (v), &v));
  CHECK (clEnqueueNDRangeKernel (queues[d], k_add[d], 1, NULL, &n, NULL,
                                 wait ? 1 : 0, wait, ev));
}

/* A buffer of `bytes` goes 0 -> 1 (a kernel on 1 consumes the output of
   one on 0), 1 -> 0 (clEnqueueMigrateMemObjects, then a kernel on 0), and
   0 -> 1 again (a kernel on 1): its ints end up 15 above what was
   written.  With
   `content` > 0 the buffer has a content-size buffer saying so.  */
static void
round_trip (size_t bytes, size_t content)
{
  size_t n = bytes / 4, i;
  cl_int err;
  cl_mem buf = clCreateBuffer (ctx, CL_MEM_READ_WRITE, bytes, NULL, &err);
  CHECK (err);
  cl_mem size = NULL;
  if (content > 0)
    {
      size = clCreateBuffer (ctx, CL_MEM_READ_WRITE, 8, NULL, &err);
      CHECK (err);
      CHECK (set_size (buf, size));
      uint64_t c = content;
      CHECK (clEnqueueWriteBuffer (queues[0], size, CL_TRUE, 0, 8, &c, 0,
                                   NULL, NULL));
    }
  int *h = xmalloc (bytes);
  for (i = 0; i < n; ++i)
    h[i] = (int)(i * 2654435761u);
  CHECK (clEnqueueWriteBuffer (queues[0], buf, CL_TRUE, 0, bytes, h, 0, NULL,
                               NULL));
  uint64_t before = client_bytes ();
  cl_event e0, e1, m0, e2, e3;
  add_on (0, buf, 1, n, NULL, &e0);
  add_on (1, buf, 2, n, &e0, &e1);
  CHECK (clEnqueueMigrateMemObjects (queues[0], 1, &buf, 0, 1, &e1, &m0));
  add_on (0, buf, 4, n, &m0, &e2);
  add_on (1, buf, 8, n, &e2, &e3);
  CHECK (clWaitForEvents (1, &e3));
  uint64_t moved = client_bytes () - before;
  int *out = xmalloc (bytes);
  CHECK (clEnqueueReadBuffer (queues[1], buf, CL_TRUE, 0, bytes, out, 0, NULL,
                              NULL));
  size_t check = content > 0 ? content / 4 : n;
  for (i = 0; i < check; ++i)
    if (out[i] != (int)(i * 2654435761u) + 15)
      fail ("%zu bytes%s: element %zu is %d, expected %d", bytes,
            content ? " with a content size" : "", i, out[i],
            (int)(i * 2654435761u) + 15);
  if (moved > COMMAND_BYTES_MAX)
    fail ("%zu bytes%s: %llu bytes crossed the client during three "
          "migrations",
          bytes, content ? " with a content size" : "",
          (unsigned long long)moved);
  note ("%zu bytes%s: bits right, %llu bytes through the client for 4 "
        "kernels and 3 migrations",
        bytes, content ? " with a content size" : "",
        (unsigned long long)moved);
  CHECK (clReleaseEvent (e0));
  CHECK (clReleaseEvent (e1));
  CHECK (clReleaseEvent (m0));
  CHECK (clReleaseEvent (e2));
  CHECK (clReleaseEvent (e3));
  free (h);
  free (out);
  CHECK (clReleaseMemObject (buf));
  if (size)
    CHECK (clReleaseMemObject (size));
}

/* An image written on device 0 and read on device 1: a COPY_IMAGE between
   the platforms.  */
static void
image_move (void)
{
  const size_t w = 256, hgt = 128, bytes = w * hgt * 4;
  cl_image_format fmt = { CL_RGBA, CL_UNSIGNED_INT8 };
  cl_image_desc desc;
  memset (&desc, 0, sizeof (desc));
  desc.image_type = CL_MEM_OBJECT_IMAGE2D;
  desc.image_width = w;
  desc.image_height = hgt;
  cl_int err;
  cl_mem img = clCreateImage (ctx, CL_MEM_READ_WRITE, &fmt, &desc, NULL, &err);
  CHECK (err);
  unsigned char *h = xmalloc (bytes), *out = xmalloc (bytes);
  size_t i;
  for (i = 0; i < bytes; ++i)
    h[i] = (unsigned char)(i * 31 + 7);
  size_t origin[3] = { 0, 0, 0 }, region[3] = { w, hgt, 1 };
  CHECK (clEnqueueWriteImage (queues[0], img, CL_TRUE, origin, region, 0, 0,
                              h, 0, NULL, NULL));
  uint64_t before = client_bytes ();
  CHECK (clEnqueueMigrateMemObjects (queues[1], 1, &img, 0, 0, NULL, NULL));
  CHECK (clFinish (queues[1]));
  uint64_t moved = client_bytes () - before;
  CHECK (clEnqueueReadImage (queues[1], img, CL_TRUE, origin, region, 0, 0,
                             out, 0, NULL, NULL));
  if (memcmp (h, out, bytes) != 0)
    fail ("image: the bytes read on device 1 differ from those written on 0");
  if (moved > COMMAND_BYTES_MAX)
    fail ("image: %llu bytes crossed the client in its migration",
          (unsigned long long)moved);
  note ("image %zux%zu: bits right, %llu bytes through the client", w, hgt,
        (unsigned long long)moved);
  free (h);
  free (out);
  CHECK (clReleaseMemObject (img));
}

/* A migration whose wait failed (a user event set to an error): the kernel
   behind it fails too, and the devices go on.  */
static void
failed_wait (void)
{
  const size_t n = 1024;
  cl_int err;
  cl_mem buf = clCreateBuffer (ctx, CL_MEM_READ_WRITE, n * 4, NULL, &err);
  CHECK (err);
  int zero = 0;
  CHECK (clEnqueueFillBuffer (queues[0], buf, &zero, 4, 0, n * 4, 0, NULL,
                              NULL));
  CHECK (clFinish (queues[0]));
  cl_event ue = clCreateUserEvent (ctx, &err);
  CHECK (err);
  cl_event e0, e1;
  add_on (0, buf, 1, n, &ue, &e0);
  add_on (1, buf, 2, n, &e0, &e1);
  CHECK (clFlush (queues[1]));
  CHECK (clSetUserEventStatus (ue, -1));
  cl_int st = CL_COMPLETE;
  clWaitForEvents (1, &e1);
  CHECK (clGetEventInfo (e1, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof (st),
                         &st, NULL));
  if (st >= 0)
    fail ("a kernel behind a failed migration wait ended with status %d", st);
  CHECK (clReleaseEvent (ue));
  CHECK (clReleaseEvent (e0));
  CHECK (clReleaseEvent (e1));
  CHECK (clReleaseMemObject (buf));
  note ("a failed wait: the kernel behind the migration failed (%d)", st);
}

int
main (void)
{
  watchdog (240, "the cross-platform migrations");
  cl_platform_id plat;
  CHECK (clGetPlatformIDs (1, &plat, NULL));
  cl_uint nd = 0;
  CHECK (clGetDeviceIDs (plat, CL_DEVICE_TYPE_ALL, 2, devs, &nd));
  if (nd != 2)
    fail ("expected 2 remote devices, found %u", nd);
  cl_int err;
  ctx = clCreateContext (NULL, 2, devs, NULL, NULL, &err);
  CHECK (err);
  set_size = (clSetContentSizeBufferPoCL_fn)
      clGetExtensionFunctionAddressForPlatform (plat,
                                                "clSetContentSizeBufferPoCL");
  if (set_size == NULL)
    fail ("no clSetContentSizeBufferPoCL");
  cl_program prog = clCreateProgramWithSource (ctx, 1, &source, NULL, &err);
  CHECK (err);
  CHECK (clBuildProgram (prog, 2, devs, NULL, NULL, NULL));
  int d;
  for (d = 0; d < 2; ++d)
    {
      queues[d] = clCreateCommandQueue (ctx, devs[d], 0, &err);
      CHECK (err);
      k_add[d] = clCreateKernel (prog, "add", &err);
      CHECK (err);
    }

  static const size_t sizes[] = { 4, 4096 + 12, 1 << 20, 16 << 20 };
  size_t s;
  for (s = 0; s < sizeof (sizes) / sizeof (sizes[0]); ++s)
    {
      round_trip (sizes[s], 0);
      round_trip (sizes[s], sizes[s] > 4 ? (sizes[s] / 2) & ~(size_t)3 : 4);
    }
  image_move ();
  failed_wait ();
  /* the devices still work */
  round_trip (1 << 20, 0);

  for (d = 0; d < 2; ++d)
    {
      CHECK (clReleaseKernel (k_add[d]));
      CHECK (clReleaseCommandQueue (queues[d]));
    }
  CHECK (clReleaseProgram (prog));
  CHECK (clReleaseContext (ctx));
  printf ("%s: PASS: migrations between two platforms of one server, "
          "none through the client\n",
          TEST_NAME);
  return 0;
}
