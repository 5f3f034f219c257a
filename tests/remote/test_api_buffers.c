/* test_api_buffers.c - buffer API coverage through the remote driver.

   Usage: test_api_buffers [remote|local]   (default remote)
   Run through run_remote.sh.  "local" runs the same checks on the first
   non-remote device (POCL_DEVICES=pthread) to tell a driver bug from a test
   bug.  Every result is compared bit for bit with a host-side model:

   - CL_MEM_USE_HOST_PTR: a kernel's result is visible through a read map,
     and clEnqueueReadBuffer returns it too;
   - CL_MEM_COPY_HOST_PTR: the buffer holds the initial data, later changes
     to the host array do not reach it;
   - CL_MEM_ALLOC_HOST_PTR: filled through a write-invalidate map, used by a
     kernel, read back;
   - clEnqueueRead/Write/Copy/FillBuffer with offsets, fill patterns of 1 to
     128 bytes;
   - transfers of 8 to 13 MiB, which move in 4 MiB parts: odd sizes and
     offsets, a kernel between write and read, a wait across queues,
     profiling times in order;
   - clEnqueueRead/Write/CopyBufferRect (3-D regions, distinct buffer and
     host pitches, nonzero origins);
   - clEnqueueMapBuffer read and write maps with offsets, unmap, then reads;
   - sub-buffers (at CL_DEVICE_MEM_BASE_ADDR_ALIGN offsets) as kernel
     arguments: writes land at the right place of the parent, nothing
     outside them changes;
   - __local arguments (work-group reductions, two local sizes);
   - scalar arguments of several sizes and alignments: char, uchar, short,
     int, long, float, float4, double (if supported), interleaved.
   Each check runs on its own (run_sub): a failed check, or one that hangs
   past its watchdog, is reported with the step it was in and the next check
   still runs; the verdict line counts them.  */

#define TEST_NAME "api_buffers"
#include "remote_test_util.c"

static const char *source
    = "__kernel void add1 (__global uint *b)\n"
      "{ b[get_global_id (0)] += 1u; }\n"
      "\n"
      "__kernel void scale (__global const uint *src, __global uint *dst,\n"
      "                     uint mul)\n"
      "{ size_t i = get_global_id (0); dst[i] = src[i] * mul + (uint)i; }\n"
      "\n"
      "__kernel void wgsum (__global const uint *in, __global uint *out,\n"
      "                     __local uint *scratch, __local uint *scratch2)\n"
      "{\n"
      "  size_t l = get_local_id (0), n = get_local_size (0);\n"
      "  scratch[l] = in[get_global_id (0)];\n"
      "  scratch2[l] = 1u;\n"
      "  barrier (CLK_LOCAL_MEM_FENCE);\n"
      "  for (size_t s = n / 2; s > 0; s /= 2)\n"
      "    {\n"
      "      if (l < s)\n"
      "        {\n"
      "          scratch[l] += scratch[l + s];\n"
      "          scratch2[l] += scratch2[l + s];\n"
      "        }\n"
      "      barrier (CLK_LOCAL_MEM_FENCE);\n"
      "    }\n"
      "  if (l == 0)\n"
      "    {\n"
      "      out[2 * get_group_id (0)] = scratch[0];\n"
      "      out[2 * get_group_id (0) + 1] = scratch2[0];\n"
      "    }\n"
      "}\n"
      "\n"
      "__kernel void scalars (__global uchar *out, char c, long l, short s,\n"
      "                       float4 f4, int i, uchar uc, float f, ulong ul)\n"
      "{\n"
      "  if (get_global_id (0) != 0) return;\n"
      "  *(__global char *)(out + 0) = c;\n"
      "  *(__global uchar *)(out + 1) = uc;\n"
      "  *(__global short *)(out + 2) = s;\n"
      "  *(__global int *)(out + 4) = i;\n"
      "  *(__global long *)(out + 8) = l;\n"
      "  *(__global float *)(out + 16) = f;\n"
      "  *(__global ulong *)(out + 24) = ul;\n"
      "  *(__global float4 *)(out + 32) = f4;\n"
      "  /* computed from several arguments: catches swapped slots */\n"
      "  *(__global long *)(out + 48) = l * 3 + c - s + i + uc;\n"
      "}\n"
      "\n"
      "#ifdef USE_DOUBLE\n"
      "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
      "__kernel void dscalar (__global double *out, double d, char c)\n"
      "{ out[0] = d; out[1] = d * 2.0 + (double)c; }\n"
      "#endif\n";

static cl_device_id dev;
static cl_context ctx;
static cl_command_queue q;
static cl_program prog;

/* After a failed check: let whatever it left queued finish.  */
static void
drain (void)
{
  clFinish (q);
}

static void
fill_u32 (uint32_t *p, size_t n, uint32_t stream)
{
  for (size_t i = 0; i < n; ++i)
    p[i] = mix32 (stream, (uint32_t)i);
}

static void
expect_bytes (const void *got, const void *want, size_t n, const char *what)
{
  long d = first_diff (got, want, n);
  if (d >= 0)
    fail ("%s: byte %ld of %zu is 0x%02x, expected 0x%02x", what, d, n,
          ((const unsigned char *)got)[d], ((const unsigned char *)want)[d]);
}

static void
run1d (cl_kernel k, size_t global, size_t *local)
{
  CHECK (clEnqueueNDRangeKernel (q, k, 1, NULL, &global, local, 0, NULL,
                                 NULL));
}

/* ------------------------------------------------------------------ */

#define HN 1024

static void
test_use_host_ptr (void)
{
  const size_t N = HN;
  cl_kernel add1 = create_kernel (prog, "add1");
  uint32_t *host = NULL;
  if (posix_memalign ((void **)&host, 4096, N * 4))
    fail ("posix_memalign");
  uint32_t *want = xmalloc (N * 4), *got = xmalloc (N * 4);
  fill_u32 (host, N, 1);
  for (size_t i = 0; i < N; ++i)
    want[i] = host[i] + 1;
  cl_mem m = create_buffer (ctx, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR,
                            N * 4, host);
  CHECK (clSetKernelArg (add1, 0, sizeof (cl_mem), &m));
  run1d (add1, N, NULL);
  cl_int err;
  uint32_t *mp = clEnqueueMapBuffer (q, m, CL_TRUE, CL_MAP_READ, 0, N * 4, 0,
                                     NULL, NULL, &err);
  CHECK_ERR (err, "clEnqueueMapBuffer(USE_HOST_PTR, read)");
  expect_bytes (mp, want, N * 4, "USE_HOST_PTR: kernel result seen by a map");
  CHECK (clEnqueueUnmapMemObject (q, m, mp, 0, NULL, NULL));
  memset (got, 0, N * 4);
  CHECK (clEnqueueReadBuffer (q, m, CL_TRUE, 0, N * 4, got, 0, NULL, NULL));
  expect_bytes (got, want, N * 4, "USE_HOST_PTR: read back");
  clReleaseMemObject (m);
  note ("CL_MEM_USE_HOST_PTR: kernel result visible through map and read");
  clReleaseKernel (add1);
  free (host);
  free (want);
  free (got);
}

static void
test_copy_host_ptr (void)
{
  const size_t N = HN;
  cl_kernel add1 = create_kernel (prog, "add1");
  uint32_t *host = xmalloc (N * 4), *want = xmalloc (N * 4),
           *got = xmalloc (N * 4);
  fill_u32 (host, N, 2);
  memcpy (want, host, N * 4);
  cl_mem m = create_buffer (ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                            N * 4, host);
  memset (host, 0x77, N * 4); /* must not reach the buffer */
  CHECK (clEnqueueReadBuffer (q, m, CL_TRUE, 0, N * 4, got, 0, NULL, NULL));
  expect_bytes (got, want, N * 4, "COPY_HOST_PTR: initial contents");
  CHECK (clSetKernelArg (add1, 0, sizeof (cl_mem), &m));
  run1d (add1, N, NULL);
  CHECK (clEnqueueReadBuffer (q, m, CL_TRUE, 0, N * 4, got, 0, NULL, NULL));
  for (size_t i = 0; i < N; ++i)
    want[i] += 1;
  expect_bytes (got, want, N * 4, "COPY_HOST_PTR: after a kernel");
  clReleaseMemObject (m);
  note ("CL_MEM_COPY_HOST_PTR: copied at creation, independent afterwards");
  clReleaseKernel (add1);
  free (host);
  free (want);
  free (got);
}

static void
test_alloc_host_ptr (void)
{
  const size_t N = HN;
  cl_kernel add1 = create_kernel (prog, "add1");
  uint32_t *want = xmalloc (N * 4), *got = xmalloc (N * 4), *mp;
  cl_int err;
  /* filled through a write-invalidate map */
  cl_mem m = create_buffer (ctx, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, N * 4,
                     NULL);
  mp = clEnqueueMapBuffer (q, m, CL_TRUE, CL_MAP_WRITE_INVALIDATE_REGION, 0,
                           N * 4, 0, NULL, NULL, &err);
  CHECK_ERR (err, "clEnqueueMapBuffer(ALLOC_HOST_PTR, write-invalidate)");
  fill_u32 (mp, N, 3);
  fill_u32 (want, N, 3);
  CHECK (clEnqueueUnmapMemObject (q, m, mp, 0, NULL, NULL));
  CHECK (clSetKernelArg (add1, 0, sizeof (cl_mem), &m));
  run1d (add1, N, NULL);
  for (size_t i = 0; i < N; ++i)
    want[i] += 1;
  CHECK (clEnqueueReadBuffer (q, m, CL_TRUE, 0, N * 4, got, 0, NULL, NULL));
  expect_bytes (got, want, N * 4, "ALLOC_HOST_PTR: map-write, kernel, read");
  clReleaseMemObject (m);
  note ("CL_MEM_ALLOC_HOST_PTR: map-written data used by a kernel");
  clReleaseKernel (add1);
  free (want);
  free (got);
}

static void
test_rw_copy_fill (void)
{
  const size_t B = 8192;
  unsigned char *model = xmalloc (B), *got = xmalloc (B), *src = xmalloc (B);
  cl_mem a = create_buffer (ctx, CL_MEM_READ_WRITE, B, NULL);
  cl_mem b = create_buffer (ctx, CL_MEM_READ_WRITE, B, NULL);

  fill_u32 ((uint32_t *)src, B / 4, 10);
  memcpy (model, src, B);
  CHECK (clEnqueueWriteBuffer (q, a, CL_TRUE, 0, B, src, 0, NULL, NULL));
  /* partial writes at odd offsets and sizes */
  fill_u32 ((uint32_t *)src, B / 4, 11);
  CHECK (clEnqueueWriteBuffer (q, a, CL_FALSE, 13, 1001, src + 5, 0, NULL,
                               NULL));
  memcpy (model + 13, src + 5, 1001);
  CHECK (clEnqueueWriteBuffer (q, a, CL_TRUE, B - 7, 7, src + 100, 0, NULL,
                               NULL));
  memcpy (model + B - 7, src + 100, 7);
  CHECK (clEnqueueReadBuffer (q, a, CL_TRUE, 0, B, got, 0, NULL, NULL));
  expect_bytes (got, model, B, "write at offsets, read whole");
  memset (got, 0, B);
  CHECK (clEnqueueReadBuffer (q, a, CL_TRUE, 999, 3333, got, 0, NULL, NULL));
  expect_bytes (got, model + 999, 3333, "read at an offset");
  note ("read/write with offsets OK");

  /* copy: whole, then a part to an offset */
  CHECK (clEnqueueCopyBuffer (q, a, b, 0, 0, B, 0, NULL, NULL));
  unsigned char *modelb = xmalloc (B);
  memcpy (modelb, model, B);
  CHECK (clEnqueueCopyBuffer (q, a, b, 17, 4000, 2049, 0, NULL, NULL));
  memmove (modelb + 4000, model + 17, 2049);
  /* copy within one buffer, non-overlapping */
  CHECK (clEnqueueCopyBuffer (q, b, b, 0, 6144, 1024, 0, NULL, NULL));
  memmove (modelb + 6144, modelb, 1024);
  CHECK (clEnqueueReadBuffer (q, b, CL_TRUE, 0, B, got, 0, NULL, NULL));
  expect_bytes (got, modelb, B, "copy buffer");
  note ("copy (whole, offset, within one buffer) OK");

  /* fill with every allowed pattern size */
  size_t psizes[] = { 1, 2, 4, 8, 16, 32, 64, 128 };
  for (size_t pi = 0; pi < sizeof (psizes) / sizeof (psizes[0]); ++pi)
    {
      size_t ps = psizes[pi];
      unsigned char pat[128];
      for (size_t i = 0; i < ps; ++i)
        pat[i] = (unsigned char)(0x30 + pi * 16 + i * 7);
      size_t off = ps * 3, size = ps * (7 + pi * 5);
      CHECK (clEnqueueFillBuffer (q, b, pat, ps, off, size, 0, NULL, NULL));
      for (size_t i = 0; i < size; ++i)
        modelb[off + i] = pat[i % ps];
      CHECK (clEnqueueReadBuffer (q, b, CL_TRUE, 0, B, got, 0, NULL, NULL));
      char what[64];
      snprintf (what, sizeof (what), "fill with a %zu-byte pattern", ps);
      expect_bytes (got, modelb, B, what);
    }
  note ("fill with 1..128-byte patterns OK");

  clReleaseMemObject (a);
  clReleaseMemObject (b);
  free (model);
  free (modelb);
  free (got);
  free (src);
}

/* Transfers large enough to move in parts (writes as their bytes arrive,
   reads of 8 MiB and more as READ_DATA): sizes and offsets that are no
   multiple of the 4 MiB part, a kernel between a non-blocking write and a
   read on one queue, a read on another queue waiting on a write's event,
   and profiling timestamps in order.  */
static void
test_large (void)
{
  const size_t B = (13u << 20) + 12344, W = (8u << 20) + 7, R = (9u << 20) + 5;
  uint32_t *src = xmalloc (B), *model = xmalloc (B), *got = xmalloc (B);
  cl_mem a = create_buffer (ctx, CL_MEM_READ_WRITE, B, NULL);
  cl_kernel add1 = create_kernel (prog, "add1");
  CHECK (clSetKernelArg (add1, 0, sizeof (a), &a));

  step ("non-blocking write, kernel, read at an offset");
  fill_u32 (src, B / 4, 40);
  CHECK (clEnqueueWriteBuffer (q, a, CL_FALSE, 0, B, src, 0, NULL, NULL));
  run1d (add1, B / 4, NULL);
  for (size_t i = 0; i < B / 4; ++i)
    model[i] = src[i] + 1u;
  CHECK (clEnqueueReadBuffer (q, a, CL_TRUE, (1u << 20) + 3, R, got, 0, NULL,
                              NULL));
  expect_bytes (got, (char *)model + (1u << 20) + 3, R, "read after kernel");

  step ("write at an odd offset, whole read");
  fill_u32 (src, B / 4, 41);
  CHECK (clEnqueueWriteBuffer (q, a, CL_TRUE, 4093, W, src, 0, NULL, NULL));
  memcpy ((char *)model + 4093, src, W);
  CHECK (clEnqueueReadBuffer (q, a, CL_TRUE, 0, B, got, 0, NULL, NULL));
  expect_bytes (got, model, B, "write at an offset");

  step ("a read on a second profiling queue waits on the write's event");
  cl_int err;
  cl_command_queue pq = clCreateCommandQueue (ctx, dev,
                                              CL_QUEUE_PROFILING_ENABLE, &err);
  CHECK_ERR (err, "clCreateCommandQueue (profiling)");
  cl_event w, r;
  fill_u32 (src, B / 4, 42);
  CHECK (clEnqueueWriteBuffer (pq, a, CL_FALSE, 0, B, src, 0, NULL, &w));
  memset (got, 0, B);
  CHECK (clEnqueueReadBuffer (q, a, CL_TRUE, 0, B, got, 1, &w, &r));
  expect_bytes (got, src, B, "read waiting on a write of another queue");
  CHECK (clReleaseEvent (r));
  CHECK (clEnqueueReadBuffer (pq, a, CL_FALSE, 0, B, got, 0, NULL, &r));
  CHECK (clWaitForEvents (1, &r));
  expect_bytes (got, src, B, "profiled read");
  cl_event evs[2] = { w, r };
  for (int k = 0; k < 2; ++k)
    {
      cl_ulong t[4];
      cl_profiling_info what[4]
          = { CL_PROFILING_COMMAND_QUEUED, CL_PROFILING_COMMAND_SUBMIT,
              CL_PROFILING_COMMAND_START, CL_PROFILING_COMMAND_END };
      for (int i = 0; i < 4; ++i)
        CHECK (clGetEventProfilingInfo (evs[k], what[i], sizeof (t[i]), &t[i],
                                        NULL));
      if (!(t[0] <= t[1] && t[1] <= t[2] && t[2] < t[3]))
        fail ("%s: profiling times out of order: %llu %llu %llu %llu",
              k ? "read" : "write", (unsigned long long)t[0],
              (unsigned long long)t[1], (unsigned long long)t[2],
              (unsigned long long)t[3]);
      CHECK (clReleaseEvent (evs[k]));
    }
  CHECK (clReleaseCommandQueue (pq));
  note ("large transfers in parts (writes, reads at offsets, profiled) OK");

  clReleaseKernel (add1);
  clReleaseMemObject (a);
  free (src);
  free (model);
  free (got);
}

/* Host model of a rect copy between two linear byte spaces.  */
static void
rect_copy (unsigned char *dst, const size_t dorg[3], size_t drp, size_t dsp,
           const unsigned char *src, const size_t sorg[3], size_t srp,
           size_t ssp, const size_t region[3])
{
  for (size_t z = 0; z < region[2]; ++z)
    for (size_t y = 0; y < region[1]; ++y)
      memmove (dst + dorg[0] + (dorg[1] + y) * drp + (dorg[2] + z) * dsp,
               src + sorg[0] + (sorg[1] + y) * srp + (sorg[2] + z) * ssp,
               region[0]);
}

static void
test_rect (void)
{
  /* buffer: rows of 64 bytes, 16 rows per slice, 4 slices */
  const size_t BRP = 64, BSP = 64 * 16, BZ = 4, B = BSP * BZ;
  /* host: rows of 40 bytes, 10 rows per slice, 4 slices */
  const size_t HRP = 40, HSP = 40 * 10, H = HSP * 4;
  unsigned char *model = xmalloc (B), *got = xmalloc (B);
  unsigned char *host = xmalloc (H), *hgot = xmalloc (H), *hmodel = xmalloc (H);
  fill_u32 ((uint32_t *)model, B / 4, 20);
  cl_mem a = buffer_from (ctx, q, CL_MEM_READ_WRITE, B, model);
  fill_u32 ((uint32_t *)host, H / 4, 21);

  size_t borg[3] = { 3, 2, 1 }, horg[3] = { 1, 1, 0 }, reg[3] = { 20, 5, 2 };
  CHECK (clEnqueueWriteBufferRect (q, a, CL_TRUE, borg, horg, reg, BRP, BSP,
                                   HRP, HSP, host, 0, NULL, NULL));
  rect_copy (model, borg, BRP, BSP, host, horg, HRP, HSP, reg);
  CHECK (clEnqueueReadBuffer (q, a, CL_TRUE, 0, B, got, 0, NULL, NULL));
  expect_bytes (got, model, B, "clEnqueueWriteBufferRect");

  /* read a different 3-D region into a host layout with other pitches */
  size_t borg2[3] = { 10, 3, 0 }, horg2[3] = { 5, 2, 1 },
         reg2[3] = { 30, 7, 3 };
  memset (hgot, 0xAB, H);
  memset (hmodel, 0xAB, H);
  CHECK (clEnqueueReadBufferRect (q, a, CL_TRUE, borg2, horg2, reg2, BRP, BSP,
                                  HRP, HSP, hgot, 0, NULL, NULL));
  rect_copy (hmodel, horg2, HRP, HSP, model, borg2, BRP, BSP, reg2);
  expect_bytes (hgot, hmodel, H, "clEnqueueReadBufferRect");

  /* zero pitches: tightly packed (row pitch = region[0]) */
  size_t zorg[3] = { 0, 0, 0 }, reg3[3] = { 16, 4, 2 };
  memset (hgot, 0xCD, H);
  memset (hmodel, 0xCD, H);
  CHECK (clEnqueueReadBufferRect (q, a, CL_TRUE, borg, zorg, reg3, BRP, BSP,
                                  0, 0, hgot, 0, NULL, NULL));
  rect_copy (hmodel, zorg, 16, 16 * 4, model, borg, BRP, BSP, reg3);
  expect_bytes (hgot, hmodel, H, "clEnqueueReadBufferRect (packed host)");

  /* copy rect: into a second buffer with other pitches, and within one */
  const size_t CRP = 48, CSP = 48 * 12, C = CSP * 3;
  unsigned char *cmodel = xmalloc (C), *cgot = xmalloc (C);
  fill_u32 ((uint32_t *)cmodel, C / 4, 22);
  cl_mem c = buffer_from (ctx, q, CL_MEM_READ_WRITE, C, cmodel);
  size_t sorg[3] = { 7, 4, 1 }, dorg[3] = { 2, 1, 0 }, reg4[3] = { 33, 9, 3 };
  CHECK (clEnqueueCopyBufferRect (q, a, c, sorg, dorg, reg4, BRP, BSP, CRP,
                                  CSP, 0, NULL, NULL));
  rect_copy (cmodel, dorg, CRP, CSP, model, sorg, BRP, BSP, reg4);
  CHECK (clEnqueueReadBuffer (q, c, CL_TRUE, 0, C, cgot, 0, NULL, NULL));
  expect_bytes (cgot, cmodel, C, "clEnqueueCopyBufferRect (two buffers)");

  size_t s5[3] = { 0, 0, 0 }, d5[3] = { 0, 0, 2 }, reg5[3] = { 64, 16, 1 };
  CHECK (clEnqueueCopyBufferRect (q, a, a, s5, d5, reg5, BRP, BSP, BRP, BSP,
                                  0, NULL, NULL));
  rect_copy (model, d5, BRP, BSP, model, s5, BRP, BSP, reg5);
  CHECK (clEnqueueReadBuffer (q, a, CL_TRUE, 0, B, got, 0, NULL, NULL));
  expect_bytes (got, model, B, "clEnqueueCopyBufferRect (within a buffer)");
  note ("rect write/read/copy (3-D regions, distinct pitches) OK");

  clReleaseMemObject (a);
  clReleaseMemObject (c);
  free (model);
  free (got);
  free (host);
  free (hgot);
  free (hmodel);
  free (cmodel);
  free (cgot);
}

static void
test_map (void)
{
  const size_t B = 16384;
  unsigned char *model = xmalloc (B), *got = xmalloc (B);
  fill_u32 ((uint32_t *)model, B / 4, 30);
  cl_mem m = create_buffer (ctx, CL_MEM_READ_WRITE, B, NULL);
  CHECK (clEnqueueWriteBuffer (q, m, CL_TRUE, 0, B, model, 0, NULL, NULL));
  cl_int err;

  /* read map at an offset */
  unsigned char *p = clEnqueueMapBuffer (q, m, CL_TRUE, CL_MAP_READ, 1000,
                                         5000, 0, NULL, NULL, &err);
  CHECK_ERR (err, "clEnqueueMapBuffer(read, offset 1000)");
  expect_bytes (p, model + 1000, 5000, "read map at an offset");
  CHECK (clEnqueueUnmapMemObject (q, m, p, 0, NULL, NULL));

  /* write map: modify part, unmap, read */
  cl_event mev;
  p = clEnqueueMapBuffer (q, m, CL_FALSE, CL_MAP_WRITE | CL_MAP_READ, 4096,
                          4096, 0, NULL, &mev, &err);
  CHECK_ERR (err, "clEnqueueMapBuffer(write, non-blocking)");
  CHECK (clWaitForEvents (1, &mev));
  clReleaseEvent (mev);
  expect_bytes (p, model + 4096, 4096, "read-write map contents");
  for (size_t i = 0; i < 4096; i += 3)
    {
      p[i] ^= 0x5A;
      model[4096 + i] ^= 0x5A;
    }
  cl_event uev;
  CHECK (clEnqueueUnmapMemObject (q, m, p, 0, NULL, &uev));
  CHECK (clWaitForEvents (1, &uev));
  clReleaseEvent (uev);
  CHECK (clEnqueueReadBuffer (q, m, CL_TRUE, 0, B, got, 0, NULL, NULL));
  expect_bytes (got, model, B, "after a write map + unmap");

  /* write-invalidate map of the tail, then a kernel reads it */
  p = clEnqueueMapBuffer (q, m, CL_TRUE, CL_MAP_WRITE_INVALIDATE_REGION,
                          B - 2048, 2048, 0, NULL, NULL, &err);
  CHECK_ERR (err, "clEnqueueMapBuffer(write-invalidate)");
  for (size_t i = 0; i < 2048; ++i)
    p[i] = model[B - 2048 + i] = (unsigned char)(i * 13 + 1);
  CHECK (clEnqueueUnmapMemObject (q, m, p, 0, NULL, NULL));
  cl_kernel add1 = create_kernel (prog, "add1");
  CHECK (clSetKernelArg (add1, 0, sizeof (cl_mem), &m));
  run1d (add1, B / 4, NULL);
  for (size_t i = 0; i < B / 4; ++i)
    {
      uint32_t v;
      memcpy (&v, model + 4 * i, 4);
      v += 1;
      memcpy (model + 4 * i, &v, 4);
    }
  CHECK (clEnqueueReadBuffer (q, m, CL_TRUE, 0, B, got, 0, NULL, NULL));
  expect_bytes (got, model, B, "write-invalidate map, then a kernel");

  /* two maps of one buffer at once */
  unsigned char *p1 = clEnqueueMapBuffer (q, m, CL_TRUE, CL_MAP_READ, 0, 64,
                                          0, NULL, NULL, &err);
  CHECK_ERR (err, "first of two maps");
  unsigned char *p2 = clEnqueueMapBuffer (q, m, CL_TRUE, CL_MAP_READ, 8192,
                                          64, 0, NULL, NULL, &err);
  CHECK_ERR (err, "second of two maps");
  cl_uint mapcount = 0;
  CHECK (clGetMemObjectInfo (m, CL_MEM_MAP_COUNT, sizeof (mapcount),
                             &mapcount, NULL));
  expect_bytes (p1, model, 64, "first of two maps");
  expect_bytes (p2, model + 8192, 64, "second of two maps");
  CHECK (clEnqueueUnmapMemObject (q, m, p2, 0, NULL, NULL));
  CHECK (clEnqueueUnmapMemObject (q, m, p1, 0, NULL, NULL));
  CHECK (clFinish (q));
  note ("map/unmap (read, read-write, write-invalidate, two at once; map "
        "count was %u) OK",
        mapcount);
  clReleaseKernel (add1);
  clReleaseMemObject (m);
  free (model);
  free (got);
}

static void
test_subbuffers (void)
{
  cl_uint align_bits = 0;
  CHECK (clGetDeviceInfo (dev, CL_DEVICE_MEM_BASE_ADDR_ALIGN,
                          sizeof (align_bits), &align_bits, NULL));
  size_t al = align_bits / 8;
  if (al < 4)
    al = 4;
  const size_t B = al * 16;
  uint32_t *model = xmalloc (B), *got = xmalloc (B);
  fill_u32 (model, B / 4, 40);
  cl_mem parent = buffer_from (ctx, q, CL_MEM_READ_WRITE, B, model);
  cl_int err;
  cl_buffer_region r1 = { al * 2, al * 3 }, r2 = { al * 9, al * 3 };
  cl_mem s1 = clCreateSubBuffer (parent, CL_MEM_READ_WRITE,
                                 CL_BUFFER_CREATE_TYPE_REGION, &r1, &err);
  CHECK_ERR (err, "clCreateSubBuffer(1)");
  cl_mem s2 = clCreateSubBuffer (parent, CL_MEM_READ_WRITE,
                                 CL_BUFFER_CREATE_TYPE_REGION, &r2, &err);
  CHECK_ERR (err, "clCreateSubBuffer(2)");

  /* scale: s2[i] = s1[i] * 5 + i  */
  cl_kernel k = create_kernel (prog, "scale");
  cl_uint mul = 5;
  CHECK (clSetKernelArg (k, 0, sizeof (cl_mem), &s1));
  CHECK (clSetKernelArg (k, 1, sizeof (cl_mem), &s2));
  CHECK (clSetKernelArg (k, 2, sizeof (mul), &mul));
  size_t n = r1.size / 4;
  run1d (k, n, NULL);
  for (size_t i = 0; i < n; ++i)
    model[r2.origin / 4 + i] = model[r1.origin / 4 + i] * 5 + (uint32_t)i;
  CHECK (clEnqueueReadBuffer (q, parent, CL_TRUE, 0, B, got, 0, NULL, NULL));
  expect_bytes (got, model, B, "sub-buffers as kernel args (parent view)");

  /* read through the sub-buffer itself, and a kernel on the parent after */
  uint32_t *sg = xmalloc (r2.size);
  CHECK (clEnqueueReadBuffer (q, s2, CL_TRUE, 0, r2.size, sg, 0, NULL, NULL));
  expect_bytes (sg, model + r2.origin / 4, r2.size, "read of a sub-buffer");
  /* write through the sub-buffer, check the parent */
  fill_u32 (sg, r1.size / 4, 41);
  CHECK (clEnqueueWriteBuffer (q, s1, CL_TRUE, 4, r1.size - 8, sg + 1, 0,
                               NULL, NULL));
  memcpy ((char *)model + r1.origin + 4, sg + 1, r1.size - 8);
  cl_kernel add1 = create_kernel (prog, "add1");
  CHECK (clSetKernelArg (add1, 0, sizeof (cl_mem), &parent));
  run1d (add1, B / 4, NULL);
  for (size_t i = 0; i < B / 4; ++i)
    model[i] += 1;
  CHECK (clEnqueueReadBuffer (q, parent, CL_TRUE, 0, B, got, 0, NULL, NULL));
  expect_bytes (got, model, B, "sub-buffer write, then parent kernel");
  note ("sub-buffers (offsets %zu and %zu) as kernel args and in transfers "
        "OK",
        r1.origin, r2.origin);

  clReleaseKernel (k);
  clReleaseKernel (add1);
  clReleaseMemObject (s1);
  clReleaseMemObject (s2);
  clReleaseMemObject (parent);
  free (model);
  free (got);
  free (sg);
}

static void
test_local_args (void)
{
  const size_t N = 4096;
  uint32_t *in = xmalloc (N * 4), *out = xmalloc (N * 2 * 4);
  for (size_t i = 0; i < N; ++i)
    in[i] = mix32 (50, (uint32_t)i) & 0xFFFFu;
  cl_mem bi = buffer_from (ctx, q, CL_MEM_READ_ONLY, N * 4, in);
  cl_mem bo = create_buffer (ctx, CL_MEM_WRITE_ONLY, N * 2 * 4, NULL);
  cl_kernel k = create_kernel (prog, "wgsum");
  size_t locals[] = { 64, 256 };
  for (int li = 0; li < 2; ++li)
    {
      size_t L = locals[li];
      CHECK (clSetKernelArg (k, 0, sizeof (cl_mem), &bi));
      CHECK (clSetKernelArg (k, 1, sizeof (cl_mem), &bo));
      CHECK (clSetKernelArg (k, 2, L * 4, NULL));
      CHECK (clSetKernelArg (k, 3, L * 4, NULL));
      run1d (k, N, &L);
      size_t groups = N / L;
      CHECK (clEnqueueReadBuffer (q, bo, CL_TRUE, 0, groups * 2 * 4, out, 0,
                                  NULL, NULL));
      for (size_t g = 0; g < groups; ++g)
        {
          uint32_t s = 0;
          for (size_t i = 0; i < L; ++i)
            s += in[g * L + i];
          if (out[2 * g] != s || out[2 * g + 1] != L)
            fail ("__local reduction, local size %zu, group %zu: sum %u "
                  "count %u, expected %u and %zu",
                  L, g, out[2 * g], out[2 * g + 1], s, L);
        }
    }
  note ("__local arguments (two per kernel, local sizes 64 and 256) OK");
  clReleaseKernel (k);
  clReleaseMemObject (bi);
  clReleaseMemObject (bo);
  free (in);
  free (out);
}

static int g_have_double;

static void
test_scalars (void)
{
  int have_double = g_have_double;
  cl_kernel k = create_kernel (prog, "scalars");
  cl_mem bo = create_buffer (ctx, CL_MEM_READ_WRITE, 64, NULL);
  unsigned char zero[64];
  memset (zero, 0, 64);
  CHECK (clEnqueueWriteBuffer (q, bo, CL_TRUE, 0, 64, zero, 0, NULL, NULL));
  cl_char c = -77;
  cl_long l = -0x123456789ABCDLL;
  cl_short s = -12345;
  cl_float4 f4 = { { 1.5f, -2.25f, 3.0e-38f, 65504.0f } };
  cl_int i = 0x7EADBEEF;
  cl_uchar uc = 0xE1;
  cl_float f = -0.0f;
  cl_ulong ul = 0xFEDCBA9876543210ULL;
  CHECK (clSetKernelArg (k, 0, sizeof (cl_mem), &bo));
  CHECK (clSetKernelArg (k, 1, sizeof (c), &c));
  CHECK (clSetKernelArg (k, 2, sizeof (l), &l));
  CHECK (clSetKernelArg (k, 3, sizeof (s), &s));
  CHECK (clSetKernelArg (k, 4, sizeof (f4), &f4));
  CHECK (clSetKernelArg (k, 5, sizeof (i), &i));
  CHECK (clSetKernelArg (k, 6, sizeof (uc), &uc));
  CHECK (clSetKernelArg (k, 7, sizeof (f), &f));
  CHECK (clSetKernelArg (k, 8, sizeof (ul), &ul));
  run1d (k, 1, NULL);
  unsigned char got[64], want[64];
  CHECK (clEnqueueReadBuffer (q, bo, CL_TRUE, 0, 64, got, 0, NULL, NULL));
  memset (want, 0, 64);
  memcpy (want + 0, &c, 1);
  memcpy (want + 1, &uc, 1);
  memcpy (want + 2, &s, 2);
  memcpy (want + 4, &i, 4);
  memcpy (want + 8, &l, 8);
  memcpy (want + 16, &f, 4);
  memcpy (want + 24, &ul, 8);
  memcpy (want + 32, &f4, 16);
  cl_long mix = l * 3 + c - s + i + uc;
  memcpy (want + 48, &mix, 8);
  expect_bytes (got, want, 64, "scalar args char/long/short/float4/int/"
                               "uchar/float/ulong");

  if (have_double)
    {
      cl_kernel kd = create_kernel (prog, "dscalar");
      cl_double d = -1.0 / 3.0;
      cl_char dc = 9;
      CHECK (clSetKernelArg (kd, 0, sizeof (cl_mem), &bo));
      CHECK (clSetKernelArg (kd, 1, sizeof (d), &d));
      CHECK (clSetKernelArg (kd, 2, sizeof (dc), &dc));
      run1d (kd, 1, NULL);
      cl_double dg[2], dw[2] = { d, d * 2.0 + 9.0 };
      CHECK (clEnqueueReadBuffer (q, bo, CL_TRUE, 0, sizeof (dg), dg, 0, NULL,
                                  NULL));
      expect_bytes (dg, dw, sizeof (dg), "double scalar arg");
      clReleaseKernel (kd);
    }
  note ("scalar arguments (char, uchar, short, int, long, ulong, float, "
        "float4%s) OK",
        have_double ? ", double" : "");
  clReleaseKernel (k);
  clReleaseMemObject (bo);
}

int
main (int argc, char **argv)
{
  watchdog (120, "setup (device, context, program build)");
  char name[256];
  dev = open_test_device (argc, argv, name, sizeof (name), &ctx);
  cl_int err;
  q = clCreateCommandQueue (ctx, dev, 0, &err);
  CHECK_ERR (err, "clCreateCommandQueue");
  cl_device_fp_config dfp = 0;
  clGetDeviceInfo (dev, CL_DEVICE_DOUBLE_FP_CONFIG, sizeof (dfp), &dfp, NULL);
  int have_double = dfp != 0;
  prog = build_program (ctx, dev, source,
                        have_double ? "-DUSE_DOUBLE" : NULL);

  sub_after_failure = drain;
  run_sub ("CL_MEM_USE_HOST_PTR", test_use_host_ptr, 45);
  run_sub ("CL_MEM_COPY_HOST_PTR", test_copy_host_ptr, 45);
  run_sub ("CL_MEM_ALLOC_HOST_PTR", test_alloc_host_ptr, 45);
  run_sub ("read/write/copy/fill", test_rw_copy_fill, 45);
  run_sub ("large transfers", test_large, 60);
  run_sub ("rect read/write/copy", test_rect, 45);
  run_sub ("map/unmap", test_map, 45);
  run_sub ("sub-buffers", test_subbuffers, 45);
  run_sub ("__local arguments", test_local_args, 45);
  g_have_double = have_double;
  run_sub ("scalar arguments", test_scalars, 45);

  if (sub_hung)
    return sub_finish ("");
  watchdog (60, "teardown (clFinish, releases)");
  clFinish (q);
  clReleaseProgram (prog);
  clReleaseCommandQueue (q);
  clReleaseContext (ctx);
  char what[320];
  snprintf (what, sizeof (what), "bit-exact on %s", name);
  return sub_finish (what);
}
