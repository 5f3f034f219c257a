/* test_multi_server.c - one context over several servers (and a local
   device): migrations between servers, dependencies that cross servers,
   content-size transfers.  Run by test_multi_server.sh with every device of
   the context configured through POCL_DEVICES; asserts exact values and the
   byte counters of CL_DEVICE_REMOTE_TRAFFIC_POCL.  */

#define TEST_NAME "multi_server"
#include "remote_test_util.c"

#include <sys/socket.h>
#include <sys/un.h>

#include "CL/cl_ext_pocl.h"
#include "pocl_remote_ext.h"

#define MAX_DEVS 8
#define N (256 * 1024) /* ints: a 1 MiB buffer */

static const char *source
    = "__kernel void add(__global int *a, int v) {\n"
      "  a[get_global_id(0)] += v;\n"
      "}\n"
      "__kernel void combine(__global int *d, __global const int *a,\n"
      "                      __global const int *b) {\n"
      "  size_t i = get_global_id(0);\n"
      "  d[i] = a[i] * 3 + b[i];\n"
      "}\n";

static cl_context ctx;
static cl_device_id devs[MAX_DEVS];
static cl_uint ndev;
static cl_command_queue queues[MAX_DEVS], ooo[MAX_DEVS];
static cl_kernel k_add[MAX_DEVS], k_combine;
static int is_remote[MAX_DEVS];
static char server[MAX_DEVS][256]; /* "host:port" of a remote device */

static pocl_remote_traffic
traffic (cl_uint d)
{
  pocl_remote_traffic t;
  memset (&t, 0, sizeof (t));
  if (is_remote[d])
    CHECK (clGetDeviceInfo (devs[d], CL_DEVICE_REMOTE_TRAFFIC_POCL, sizeof (t),
                            &t, NULL));
  return t;
}

/* Sums over the distinct servers (devices of one server share counters). */
static void
totals (uint64_t *client, uint64_t *peer)
{
  cl_uint d, e;
  *client = *peer = 0;
  for (d = 0; d < ndev; ++d)
    {
      if (!is_remote[d])
        continue;
      pocl_remote_traffic t = traffic (d), u;
      int seen = 0;
      for (e = 0; e < d; ++e)
        if (is_remote[e] && (u = traffic (e), u.bytes_sent == t.bytes_sent))
          seen = 1;
      if (seen)
        continue;
      *client += t.bytes_sent + t.bytes_received;
      *peer += t.peer_bytes_received;
    }
}

static void
add_on (cl_uint d, cl_mem buf, int v, size_t n, cl_uint nw, const cl_event *w,
        cl_event *ev, cl_command_queue q)
{
  CHECK (clSetKernelArg (k_add[d], 0, sizeof (buf), &buf));
  CHECK (clSetKernelArg (k_add[d], 1, sizeof (v), &v));
  CHECK (clEnqueueNDRangeKernel (q ? q : queues[d], k_add[d], 1, NULL, &n,
                                 NULL, nw, w, ev));
}

static void
expect_all (cl_uint d, cl_mem buf, size_t n, int want)
{
  int *h = xmalloc (n * sizeof (int));
  size_t i;
  CHECK (clEnqueueReadBuffer (queues[d], buf, CL_TRUE, 0, n * sizeof (int), h,
                              0, NULL, NULL));
  for (i = 0; i < n; ++i)
    if (h[i] != want)
      fail ("element %zu is %d, expected %d", i, h[i], want);
  free (h);
}

/* A 1 MiB buffer incremented on each device in turn, 4 rounds: every
   move is an implicit migration; between servers the bytes go server to
   server.  */
static void
ping_pong (void)
{
  const int rounds = 4;
  cl_int err;
  cl_mem buf = clCreateBuffer (ctx, CL_MEM_READ_WRITE, N * sizeof (int), NULL,
                               &err);
  CHECK (err);
  int zero = 0;
  CHECK (clEnqueueFillBuffer (queues[0], buf, &zero, sizeof (zero), 0,
                              N * sizeof (int), 0, NULL, NULL));
  CHECK (clFinish (queues[0]));
  uint64_t c0, p0, c1, p1;
  totals (&c0, &p0);
  cl_event prev = NULL;
  int r, moves = 0;
  cl_uint d;
  for (r = 0; r < rounds; ++r)
    for (d = 0; d < ndev; ++d)
      {
        cl_event ev;
        add_on (d, buf, 1, N, prev ? 1 : 0, prev ? &prev : NULL, &ev, NULL);
        if (prev)
          CHECK (clReleaseEvent (prev));
        prev = ev;
        ++moves;
      }
  CHECK (clWaitForEvents (1, &prev));
  CHECK (clReleaseEvent (prev));
  totals (&c1, &p1);
  expect_all (ndev - 1, buf, N, rounds * (int)ndev);
  note ("ping-pong: %d kernels on %u devices, %.1f MiB between servers, "
        "%.1f MiB through the client",
        moves, ndev, (double)(p1 - p0) / (1 << 20),
        (double)(c1 - c0) / (1 << 20));
  /* Between two remote devices nothing passes through the client: its
     traffic stays far below one buffer per move.  */
  int all_remote = 1;
  for (d = 0; d < ndev; ++d)
    all_remote &= is_remote[d];
  if (all_remote && c1 - c0 >= (uint64_t)N * sizeof (int))
    fail ("%llu bytes went through the client",
          (unsigned long long)(c1 - c0));
  CHECK (clReleaseMemObject (buf));
}

/* 40 dependent kernels hopping over the devices, each adding its own
   value: the order-independent sum proves each ran once, the events prove
   the order.  */
static void
chain (void)
{
  cl_int err;
  const size_t n = 64;
  cl_mem buf = clCreateBuffer (ctx, CL_MEM_READ_WRITE, n * sizeof (int), NULL,
                               &err);
  CHECK (err);
  int zero = 0, i, want = 0;
  CHECK (clEnqueueFillBuffer (queues[0], buf, &zero, sizeof (zero), 0,
                              n * sizeof (int), 0, NULL, NULL));
  cl_event prev = NULL;
  for (i = 1; i <= 40; ++i)
    {
      cl_event ev;
      cl_uint d = (cl_uint)(i * 7 % (int)ndev);
      add_on (d, buf, i, n, prev ? 1 : 0, prev ? &prev : NULL, &ev, NULL);
      if (prev)
        CHECK (clReleaseEvent (prev));
      prev = ev;
      want += i;
    }
  CHECK (clWaitForEvents (1, &prev));
  CHECK (clReleaseEvent (prev));
  expect_all (0, buf, n, want);
  CHECK (clReleaseMemObject (buf));
}

/* Out-of-order queues: a and b written on two devices at once, d computed
   on a third from both, with the wait list naming both.  */
static void
ooo_cross (void)
{
  cl_int err;
  const size_t n = 4096;
  cl_mem a = clCreateBuffer (ctx, CL_MEM_READ_WRITE, n * 4, NULL, &err);
  cl_mem b = clCreateBuffer (ctx, CL_MEM_READ_WRITE, n * 4, NULL, &err);
  cl_mem d = clCreateBuffer (ctx, CL_MEM_READ_WRITE, n * 4, NULL, &err);
  CHECK (err);
  int round;
  for (round = 0; round < 5; ++round)
    {
      cl_uint da = (cl_uint)round % ndev, db = (cl_uint)(round + 1) % ndev,
              dd = (cl_uint)(round + 2) % ndev;
      int zero = 0;
      cl_event fa, fb, ea, eb, ed;
      CHECK (clEnqueueFillBuffer (ooo[da], a, &zero, 4, 0, n * 4, 0, NULL,
                                  &fa));
      CHECK (clEnqueueFillBuffer (ooo[db], b, &zero, 4, 0, n * 4, 0, NULL,
                                  &fb));
      add_on (da, a, round + 5, n, 1, &fa, &ea, ooo[da]);
      add_on (db, b, round + 100, n, 1, &fb, &eb, ooo[db]);
      cl_event both[2] = { ea, eb };
      CHECK (clSetKernelArg (k_combine, 0, sizeof (d), &d));
      CHECK (clSetKernelArg (k_combine, 1, sizeof (a), &a));
      CHECK (clSetKernelArg (k_combine, 2, sizeof (b), &b));
      cl_kernel kc = k_combine;
      (void)dd;
      CHECK (clEnqueueNDRangeKernel (ooo[dd], kc, 1, NULL, &n, NULL, 2, both,
                                     &ed));
      CHECK (clWaitForEvents (1, &ed));
      expect_all (dd, d, n, (round + 5) * 3 + round + 100);
      cl_event all[5] = { fa, fb, ea, eb, ed };
      int j;
      for (j = 0; j < 5; ++j)
        CHECK (clReleaseEvent (all[j]));
    }
  CHECK (clReleaseMemObject (a));
  CHECK (clReleaseMemObject (b));
  CHECK (clReleaseMemObject (d));
}

/* Device 0 and the first device of another server, in *dst: 1 if device 0
   is remote and there is one; else `what` fails if `required`, or is
   skipped (0).  */
static int
two_servers (cl_uint *dst, const char *what, int required)
{
  for (*dst = 1; *dst < ndev; ++*dst)
    if (is_remote[*dst] && strcmp (server[*dst], server[0]) != 0)
      break;
  if (is_remote[0] && *dst < ndev)
    return 1;
  if (required)
    fail ("%s: needs remote devices on two servers", what);
  note ("%s: needs remote devices on two servers, skipped", what);
  return 0;
}

/* cl_pocl_content_size: of a buffer only the first `content` bytes are
   meaningful; a migration to another server and a read move just those.  */
static void
content_size_of (size_t bytes, uint64_t content)
{
  cl_platform_id plat;
  CHECK (clGetDeviceInfo (devs[0], CL_DEVICE_PLATFORM, sizeof (plat), &plat,
                          NULL));
  clSetContentSizeBufferPoCL_fn set_size
      = (clSetContentSizeBufferPoCL_fn)clGetExtensionFunctionAddressForPlatform (
          plat, "clSetContentSizeBufferPoCL");
  if (set_size == NULL)
    fail ("no clSetContentSizeBufferPoCL");
  cl_uint src = 0, dst;
  if (!two_servers (&dst, "content size", 0))
    return;
  cl_int err;
  cl_mem buf = clCreateBuffer (ctx, CL_MEM_READ_WRITE, bytes, NULL, &err);
  cl_mem size = clCreateBuffer (ctx, CL_MEM_READ_WRITE, 8, NULL, &err);
  CHECK (err);
  CHECK (set_size (buf, size));
  int *h = xmalloc (bytes);
  size_t i;
  for (i = 0; i < bytes / 4; ++i)
    h[i] = (int)i;
  CHECK (clEnqueueWriteBuffer (queues[src], buf, CL_TRUE, 0, bytes, h, 0, NULL,
                               NULL));
  CHECK (clEnqueueWriteBuffer (queues[src], size, CL_TRUE, 0, 8, &content, 0,
                               NULL, NULL));

  /* A read of the whole buffer brings only the content.  With cuts
     (test_multi_server.sh) a message cut inside is sent again after the
     resume: the read is repeated until one went uncut, up to 8 times.  */
  int tries = getenv ("MULTI_SERVER_CUTS") ? 8 : 1;
  uint64_t got;
  do
    {
      pocl_remote_traffic t0 = traffic (src);
      memset (h, 0xff, bytes);
      CHECK (clEnqueueReadBuffer (queues[src], buf, CL_TRUE, 0, bytes, h, 0,
                                  NULL, NULL));
      pocl_remote_traffic t1 = traffic (src);
      for (i = 0; i < content / 4; ++i)
        if (h[i] != (int)i)
          fail ("content-size read: element %zu is %d", i, h[i]);
      got = t1.bytes_received - t0.bytes_received;
    }
  while (got > content + 1024 && --tries > 0);
  if (got < content || got > content + 1024)
    fail ("content-size read received %llu bytes for %llu of content",
          (unsigned long long)got, (unsigned long long)content);

  /* an explicit migration to another server pushes only the content */
  pocl_remote_traffic p0 = traffic (dst);
  CHECK (clEnqueueMigrateMemObjects (queues[dst], 1, &buf, 0, 0, NULL, NULL));
  CHECK (clFinish (queues[dst]));
  pocl_remote_traffic p1 = traffic (dst);
  uint64_t pushed = p1.peer_bytes_received - p0.peer_bytes_received;
  if (pushed != content)
    fail ("migration pushed %llu bytes, content size is %llu",
          (unsigned long long)pushed, (unsigned long long)content);
  /* the content arrived intact: add 1 on the destination and check */
  add_on (dst, buf, 1, content / 4, 0, NULL, NULL, NULL);
  CHECK (clEnqueueReadBuffer (queues[dst], buf, CL_TRUE, 0, content, h, 0,
                              NULL, NULL));
  for (i = 0; i < content / 4; ++i)
    if (h[i] != (int)i + 1)
      fail ("after migration: element %zu is %d", i, h[i]);
  note ("content size: read moved %llu bytes, migration %llu, of a %zu-byte "
        "buffer",
        (unsigned long long)got, (unsigned long long)pushed, bytes);
  free (h);
  CHECK (clReleaseMemObject (buf));
  CHECK (clReleaseMemObject (size));
}

/* 4 KiB of 1 MiB (one message), 1 KiB of 16 KiB (small enough for the
   servers' blocking reads and writes), and 5 MiB + 12 bytes of 20 MiB: a
   buffer that large is pushed in chunks, and the content size ends
   mid-chunk.  */
static void
content_size (void)
{
  content_size_of (N * sizeof (int), 4096);
  content_size_of (16384, 1024);
  content_size_of (20u << 20, (5u << 20) + 12);
}

/* Explicit migrations around all devices, the data checked at the end: a
   small buffer, and one of 18 MiB that moves in chunks.  */
static void
explicit_migration_of (size_t n)
{
  cl_int err;
  int *h = xmalloc (n * sizeof (int));
  size_t i;
  for (i = 0; i < n; ++i)
    h[i] = (int)(i * 31);
  cl_mem buf = clCreateBuffer (ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                               n * sizeof (int), h, &err);
  CHECK (err);
  cl_uint d;
  for (d = 0; d < ndev; ++d)
    CHECK (clEnqueueMigrateMemObjects (queues[d], 1, &buf, 0, 0, NULL, NULL));
  for (d = 0; d < ndev; ++d)
    CHECK (clFinish (queues[d]));
  memset (h, 0, n * sizeof (int));
  CHECK (clEnqueueReadBuffer (queues[ndev - 1], buf, CL_TRUE, 0,
                              n * sizeof (int), h, 0, NULL, NULL));
  for (i = 0; i < n; ++i)
    if (h[i] != (int)(i * 31))
      fail ("element %zu is %d after the migrations", i, h[i]);
  free (h);
  CHECK (clReleaseMemObject (buf));
}

static void
explicit_migration (void)
{
  explicit_migration_of (1000);
  explicit_migration_of ((18u << 20) / 4 + 5);
}

/* A read through one server's queue of a buffer last written on another
   server comes straight from that server: the first server's peers push it
   nothing, the second sends at least the buffer.  The read waits for the
   kernel that wrote it, which it was not told about (the buffer's last
   command), and a kernel on the first server afterwards still migrates it
   there and sees the right bytes.  */
static void
read_from_holder (void)
{
  cl_uint src = 0, dst;
  if (!two_servers (&dst, "read from the holder", 0))
    return;
  cl_int err;
  const size_t bytes = N * sizeof (int);
  cl_mem buf = clCreateBuffer (ctx, CL_MEM_READ_WRITE, bytes, NULL, &err);
  CHECK (err);
  int *h = xmalloc (bytes), zero = 0;
  CHECK (clEnqueueFillBuffer (queues[dst], buf, &zero, sizeof (zero), 0, bytes,
                              0, NULL, NULL));
  CHECK (clFinish (queues[dst]));
  add_on (src, buf, 5, N, 0, NULL, NULL, NULL);
  pocl_remote_traffic s0 = traffic (src), d0 = traffic (dst);
  CHECK (clEnqueueReadBuffer (queues[dst], buf, CL_TRUE, 0, bytes, h, 0, NULL,
                              NULL));
  pocl_remote_traffic s1 = traffic (src), d1 = traffic (dst);
  size_t i;
  for (i = 0; i < N; ++i)
    if (h[i] != 5)
      fail ("read from the holder: element %zu is %d, expected 5", i, h[i]);
  uint64_t pushed = d1.peer_bytes_received - d0.peer_bytes_received;
  uint64_t from_src = s1.bytes_received - s0.bytes_received;
  if (pushed != 0 || from_src < bytes)
    fail ("read through server %s: it was pushed %llu bytes, %s sent %llu",
          server[dst], (unsigned long long)pushed, server[src],
          (unsigned long long)from_src);
  add_on (dst, buf, 2, N, 0, NULL, NULL, NULL);
  expect_all (src, buf, N, 7);
  note ("read through one server's queue: %llu bytes from the server that "
        "had them, none pushed",
        (unsigned long long)from_src);
  free (h);
  CHECK (clReleaseMemObject (buf));
}

/* Migrations followed at once by commands of the destination's queues, no
   clFinish between: two small buffers migrated back to back to one queue,
   then a kernel on each; on an out-of-order queue a barrier and a kernel
   without waits.  40 rounds, alternating between two servers.  pocld
   enqueues a MIGRATE_IN's marker only when its queue's next command comes
   (order_gates): what follows sees the moved bytes.  */
static void
migrate_then_use (void)
{
  cl_uint src = 0, dst;
  if (!two_servers (&dst, "migrate then use", 0))
    return;
  const size_t n = 16;
  const int rounds = 40;
  cl_int err;
  cl_mem a
      = clCreateBuffer (ctx, CL_MEM_READ_WRITE, n * sizeof (int), NULL, &err);
  CHECK (err);
  cl_mem b
      = clCreateBuffer (ctx, CL_MEM_READ_WRITE, n * sizeof (int), NULL, &err);
  CHECK (err);
  int zero = 0, r;
  CHECK (clEnqueueFillBuffer (queues[src], a, &zero, sizeof (zero), 0,
                              n * sizeof (int), 0, NULL, NULL));
  CHECK (clEnqueueFillBuffer (queues[src], b, &zero, sizeof (zero), 0,
                              n * sizeof (int), 0, NULL, NULL));
  CHECK (clFinish (queues[src]));
  cl_mem both[2] = { a, b };
  for (r = 0; r < rounds; ++r)
    {
      cl_uint d = r % 2 ? src : dst;
      if (r % 4 == 3)
        {
          CHECK (
              clEnqueueMigrateMemObjects (ooo[d], 2, both, 0, 0, NULL, NULL));
          CHECK (clEnqueueBarrierWithWaitList (ooo[d], 0, NULL, NULL));
          add_on (d, a, 1, n, 0, NULL, NULL, ooo[d]);
          CHECK (clEnqueueBarrierWithWaitList (ooo[d], 0, NULL, NULL));
          add_on (d, b, 2, n, 0, NULL, NULL, ooo[d]);
          CHECK (clFinish (ooo[d]));
          continue;
        }
      CHECK (clEnqueueMigrateMemObjects (queues[d], 1, &a, 0, 0, NULL, NULL));
      CHECK (clEnqueueMigrateMemObjects (queues[d], 1, &b, 0, 0, NULL, NULL));
      add_on (d, a, 1, n, 0, NULL, NULL, NULL);
      add_on (d, b, 2, n, 0, NULL, NULL, NULL);
      if (r % 4 == 2)
        CHECK (clFinish (queues[d]));
    }
  CHECK (clFinish (queues[src]));
  CHECK (clFinish (queues[dst]));
  expect_all (src, a, n, rounds);
  expect_all (dst, b, n, 2 * rounds);
  CHECK (clReleaseMemObject (a));
  CHECK (clReleaseMemObject (b));
}

/* Tells the fault proxy in front of the second server's peer port
   (test_multi_server.sh lanes) to cut the peer lanes now.  */
static void
cut_peer_lanes (const char *control)
{
  struct sockaddr_un a;
  memset (&a, 0, sizeof (a));
  a.sun_family = AF_UNIX;
  snprintf (a.sun_path, sizeof (a.sun_path), "%s", control);
  int fd = socket (AF_UNIX, SOCK_STREAM, 0);
  char reply[128] = "";
  if (fd < 0 || connect (fd, (struct sockaddr *)&a, sizeof (a)) != 0
      || write (fd, "cut lanes\n", 10) != 10
      || read (fd, reply, sizeof (reply) - 1) <= 0)
    fail ("cannot reach the fault proxy at %s", control);
  close (fd);
  note ("fault proxy: %s", strtok (reply, "\n"));
}

/* MULTI_SERVER_LARGE (test_multi_server.sh lanes): buffers of 1, 3, 16
   and 64 MiB migrated to another server and back, bit for bit, each way
   pushing exactly the buffer's bytes; from 2 MiB on they go striped over
   the peer lanes.  With MULTI_SERVER_LANE_CUT (a fault proxy's control
   socket) the peer lanes are cut while the 64 MiB buffer moves, 8 ms after
   the migration is flushed (MULTI_SERVER_LANE_CUT_US; on the 2-core machine
   2 ms cut under the first chunk, 8 ms under the first or a later one, at
   times one its sender had all sent, so that only the receiver saw the
   loss): the rest goes on the peer link, neither lost nor doubled.  Then content sizes
   ending mid-stripe in striped pushes.  */
static void
large_migrations (void)
{
  static const size_t mib[] = { 1, 3, 16, 64 };
  const char *cut = getenv ("MULTI_SERVER_LANE_CUT");
  cl_uint src = 0, dst;
  two_servers (&dst, "large migrations", 1);
  size_t k, i;
  for (k = 0; k < sizeof (mib) / sizeof (mib[0]); ++k)
    {
      size_t bytes = mib[k] << 20, n = bytes / 4;
      cl_int err;
      cl_mem buf = clCreateBuffer (ctx, CL_MEM_READ_WRITE, bytes, NULL, &err);
      CHECK (err);
      uint32_t *h = xmalloc (bytes);
      for (i = 0; i < n; ++i)
        h[i] = ((uint32_t)(i * 2654435761u) ^ (uint32_t)k) & 0x3fffffffu;
      CHECK (clEnqueueWriteBuffer (queues[src], buf, CL_TRUE, 0, bytes, h, 0,
                                   NULL, NULL));
      cl_uint to[2] = { dst, src };
      int leg;
      for (leg = 0; leg < 2; ++leg)
        {
          cl_uint d = to[leg];
          pocl_remote_traffic t0 = traffic (d);
          CHECK (clEnqueueMigrateMemObjects (queues[d], 1, &buf, 0, 0, NULL,
                                             NULL));
          if (cut && mib[k] == 64 && leg == 0)
            {
              const char *us = getenv ("MULTI_SERVER_LANE_CUT_US");
              CHECK (clFlush (queues[d]));
              usleep (us ? (useconds_t)atoi (us) : 8000);
              cut_peer_lanes (cut);
            }
          CHECK (clFinish (queues[d]));
          pocl_remote_traffic t1 = traffic (d);
          uint64_t pushed = t1.peer_bytes_received - t0.peer_bytes_received;
          if (pushed != bytes)
            fail ("%zu MiB migration to device %u pushed %llu bytes", mib[k],
                  d, (unsigned long long)pushed);
          /* a kernel there, so that the way back moves new bytes */
          add_on (d, buf, 1, n, 0, NULL, NULL, NULL);
          for (i = 0; i < n; ++i)
            h[i] += 1;
        }
      uint32_t *got = xmalloc (bytes);
      CHECK (clEnqueueReadBuffer (queues[src], buf, CL_TRUE, 0, bytes, got, 0,
                                  NULL, NULL));
      if (memcmp (got, h, bytes) != 0)
        {
          for (i = 0; i < n && got[i] == h[i]; ++i)
            ;
          fail ("%zu MiB there and back: word %zu is %08x, not %08x", mib[k],
                i, got[i], h[i]);
        }
      note ("%zu MiB: there and back bit for bit", mib[k]);
      free (got);
      free (h);
      CHECK (clReleaseMemObject (buf));
    }
  content_size_of (16u << 20, (7u << 20) + 20);
  content_size_of (64u << 20, (9u << 20) + (1u << 19) + 44);
}

int
main (void)
{
  cl_int err;
  cl_uint d;
  main_thread = pthread_self ();
  ndev = all_devices (devs, MAX_DEVS);
  if (ndev < 2)
    fail ("%u devices; the test needs at least two", ndev);
  for (d = 0; d < ndev; ++d)
    {
      char name[256];
      device_name (devs[d], name, sizeof (name));
      const char *r = strstr (name, REMOTE_NAME_PART " ");
      is_remote[d] = r != NULL;
      if (r)
        {
          snprintf (server[d], sizeof (server[d]), "%s",
                    r + strlen (REMOTE_NAME_PART " "));
          char *slash = strrchr (server[d], '/');
          if (slash)
            *slash = 0;
        }
      note ("device %u: %s", d, name);
    }
  watchdog (120, "setup");
  ctx = clCreateContext (NULL, ndev, devs, NULL, NULL, &err);
  CHECK (err);
  cl_program p = clCreateProgramWithSource (ctx, 1, &source, NULL, &err);
  CHECK (err);
  CHECK (clBuildProgram (p, 0, NULL, NULL, NULL, NULL));
  for (d = 0; d < ndev; ++d)
    {
      queues[d] = clCreateCommandQueue (ctx, devs[d], 0, &err);
      CHECK (err);
      ooo[d] = clCreateCommandQueue (
          ctx, devs[d], CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE, &err);
      CHECK (err);
      k_add[d] = clCreateKernel (p, "add", &err);
      CHECK (err);
    }
  k_combine = clCreateKernel (p, "combine", &err);
  CHECK (err);

  run_sub ("ping_pong", ping_pong, 120);
  run_sub ("chain", chain, 120);
  run_sub ("ooo_cross", ooo_cross, 120);
  run_sub ("explicit_migration", explicit_migration, 120);
  run_sub ("content_size", content_size, 120);
  run_sub ("read_from_holder", read_from_holder, 120);
  run_sub ("migrate_then_use", migrate_then_use, 120);
  if (getenv ("MULTI_SERVER_LARGE"))
    run_sub ("large_migrations", large_migrations, 240);
  return sub_finish ("passed");
}
