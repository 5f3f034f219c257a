/* test_usm.c - unified shared memory (cl_intel_unified_shared_memory)
   through remote, with exact results: the capabilities, each allocation
   kind and clGetMemAllocInfoINTEL's answers, memcpy in every direction
   between host, device and shared allocations and the application's
   memory, fills of every pattern size and memset, a kernel on USM pointer
   arguments, a kernel that follows pointers stored in USM memory (indirect
   access), migrations and advice, free and blocking free, copies that wait
   for a user event ahead of a barrier on an out-of-order queue, and the
   errors of bad arguments, and the host's access to a CPU device's
   device allocations (kernels' results read, the host's writes used, a
   thread counting there while commands go, buffer reads and writes on
   it).
   "local" runs the same checks on the first device that is not remote
   (Intel's OpenCL CPU runtime: remote/usm_intel_local), so that local and
   remote give the same answers; "no-usm-local", on a device
   without USM (PoCL's pthread), checks that it has none and that the
   functions say so.  */

#define TEST_NAME "usm"
#include "remote_test_util.c"

#include <CL/cl_ext.h>

#define N 4096
/* the extension's first advice value (0x4208 to 0x420F are reserved for
   advice; Intel's runtime refuses 0)  */
#define ADVICE 0x4208

static cl_device_id dev;
static cl_context ctx;
static cl_command_queue q;
static cl_program prog;

static clHostMemAllocINTEL_fn host_alloc;
static clDeviceMemAllocINTEL_fn device_alloc;
static clSharedMemAllocINTEL_fn shared_alloc;
static clMemFreeINTEL_fn mem_free;
static clMemBlockingFreeINTEL_fn blocking_free;
static clGetMemAllocInfoINTEL_fn alloc_info;
static clSetKernelArgMemPointerINTEL_fn set_arg;
static clEnqueueMemFillINTEL_fn mem_fill;
static clEnqueueMemsetINTEL_fn mem_set;
static clEnqueueMemcpyINTEL_fn mem_copy;
static clEnqueueMigrateMemINTEL_fn migrate;
static clEnqueueMemAdviseINTEL_fn advise;

static const char *src
    = "__kernel void scale_add (__global uint *dst, __global const uint *a,\n"
      "                   __global const uint *b) {\n"
      "  size_t i = get_global_id (0); dst[i] = a[i] * 3u + b[i]; }\n"
      "typedef struct table { __global uint *dev; __global uint *host;\n"
      "                       __global struct table *next; uint n; } table;\n"
      "__kernel void follow (__global table *t, __global ulong *out) {\n"
      "  ulong sum = 0, k = 0;\n"
      "  for (__global table *p = t; p; p = p->next, ++k)\n"
      "    for (uint i = 0; i < p->n; ++i)\n"
      "      { sum += p->dev[i] ^ p->host[i]; p->host[i] = p->dev[i] + 1u; }\n"
      "  out[0] = sum; out[1] = k; }\n";

/* The host's view of struct table: 64-bit pointers on both sides.  */
typedef struct table
{
  uint32_t *dev;
  uint32_t *host;
  struct table *next;
  uint32_t n;
} table;

static void *
lookup (cl_platform_id plat, const char *name)
{
  void *f = clGetExtensionFunctionAddressForPlatform (plat, name);
  if (f == NULL)
    fail ("clGetExtensionFunctionAddressForPlatform (%s) returned NULL",
          name);
  return f;
}

static void
lookup_all (void)
{
  cl_platform_id plat;
  CHECK (clGetDeviceInfo (dev, CL_DEVICE_PLATFORM, sizeof (plat), &plat,
                          NULL));
  host_alloc = lookup (plat, "clHostMemAllocINTEL");
  device_alloc = lookup (plat, "clDeviceMemAllocINTEL");
  shared_alloc = lookup (plat, "clSharedMemAllocINTEL");
  mem_free = lookup (plat, "clMemFreeINTEL");
  blocking_free = lookup (plat, "clMemBlockingFreeINTEL");
  alloc_info = lookup (plat, "clGetMemAllocInfoINTEL");
  set_arg = lookup (plat, "clSetKernelArgMemPointerINTEL");
  mem_fill = lookup (plat, "clEnqueueMemFillINTEL");
  mem_copy = lookup (plat, "clEnqueueMemcpyINTEL");
  migrate = lookup (plat, "clEnqueueMigrateMemINTEL");
  advise = lookup (plat, "clEnqueueMemAdviseINTEL");
  /* the extension's deprecated first name: not every runtime has it */
  mem_set = clGetExtensionFunctionAddressForPlatform (plat,
                                                      "clEnqueueMemsetINTEL");
}

static int
has_extension (const char *name)
{
  size_t n = 0;
  CHECK (clGetDeviceInfo (dev, CL_DEVICE_EXTENSIONS, 0, NULL, &n));
  char *ext = xmalloc (n + 1);
  CHECK (clGetDeviceInfo (dev, CL_DEVICE_EXTENSIONS, n, ext, NULL));
  ext[n] = 0;
  int found = 0;
  size_t len = strlen (name);
  for (char *p = strstr (ext, name); p && !found; p = strstr (p + 1, name))
    found = (p == ext || p[-1] == ' ') && (p[len] == 0 || p[len] == ' ');
  free (ext);
  return found;
}

static void *
alloc (cl_unified_shared_memory_type_intel kind, size_t size,
       const cl_mem_properties_intel *props)
{
  cl_int err = CL_SUCCESS;
  void *p = kind == CL_MEM_TYPE_HOST_INTEL
                ? host_alloc (ctx, props, size, 0, &err)
            : kind == CL_MEM_TYPE_DEVICE_INTEL
                ? device_alloc (ctx, dev, props, size, 0, &err)
                : shared_alloc (ctx, dev, props, size, 0, &err);
  CHECK_ERR (err, "USM allocation");
  if (p == NULL)
    fail ("USM allocation of kind %#x returned NULL", (unsigned)kind);
  return p;
}

static void
test_caps (void)
{
  static const cl_device_info caps[3]
      = { CL_DEVICE_HOST_MEM_CAPABILITIES_INTEL,
          CL_DEVICE_DEVICE_MEM_CAPABILITIES_INTEL,
          CL_DEVICE_SINGLE_DEVICE_SHARED_MEM_CAPABILITIES_INTEL };
  if (!has_extension ("cl_intel_unified_shared_memory"))
    fail ("cl_intel_unified_shared_memory is not in CL_DEVICE_EXTENSIONS");
  for (int i = 0; i < 3; ++i)
    {
      cl_device_unified_shared_memory_capabilities_intel c = 0;
      CHECK (clGetDeviceInfo (dev, caps[i], sizeof (c), &c, NULL));
      if (!(c & CL_UNIFIED_SHARED_MEMORY_ACCESS_INTEL))
        fail ("capabilities %#x: %#llx lack CL_UNIFIED_SHARED_MEMORY_ACCESS",
              caps[i], (unsigned long long)c);
    }
}

static void
expect_info (void *p, const void *base, cl_unified_shared_memory_type_intel type,
             size_t size, cl_device_id device, const char *what)
{
  cl_unified_shared_memory_type_intel t = 0;
  void *b = (void *)1;
  size_t s = 1;
  cl_device_id d = (cl_device_id)1;
  CHECK (alloc_info (ctx, p, CL_MEM_ALLOC_TYPE_INTEL, sizeof (t), &t, NULL));
  CHECK (alloc_info (ctx, p, CL_MEM_ALLOC_BASE_PTR_INTEL, sizeof (b), &b,
                     NULL));
  if (t != type || b != base)
    fail ("%s: type %#x base %p, expected %#x and %p", what, (unsigned)t, b,
          (unsigned)type, base);
  if (type == CL_MEM_TYPE_UNKNOWN_INTEL)
    return;
  CHECK (alloc_info (ctx, p, CL_MEM_ALLOC_SIZE_INTEL, sizeof (s), &s, NULL));
  CHECK (alloc_info (ctx, p, CL_MEM_ALLOC_DEVICE_INTEL, sizeof (d), &d,
                     NULL));
  if (s != size || d != device)
    fail ("%s: size %zu device %p, expected %zu and %p", what, s, (void *)d,
          size, (void *)device);
}

static void
test_alloc_info (void)
{
  const size_t size = 3 * N + 12;
  uint8_t *h = alloc (CL_MEM_TYPE_HOST_INTEL, size, NULL);
  uint8_t *dv = alloc (CL_MEM_TYPE_DEVICE_INTEL, size, NULL);
  uint8_t *sh = alloc (CL_MEM_TYPE_SHARED_INTEL, size, NULL);
  expect_info (h, h, CL_MEM_TYPE_HOST_INTEL, size, NULL, "host");
  expect_info (h + size - 1, h, CL_MEM_TYPE_HOST_INTEL, size, NULL,
               "host, last byte");
  expect_info (dv, dv, CL_MEM_TYPE_DEVICE_INTEL, size, dev, "device");
  expect_info (dv + 100, dv, CL_MEM_TYPE_DEVICE_INTEL, size, dev,
               "device, inside");
  expect_info (sh, sh, CL_MEM_TYPE_SHARED_INTEL, size, dev, "shared");
  expect_info (sh + size / 2, sh, CL_MEM_TYPE_SHARED_INTEL, size, dev,
               "shared, inside");
  int local_var = 0;
  expect_info (&local_var, NULL, CL_MEM_TYPE_UNKNOWN_INTEL, 0, NULL,
               "a stack address");

  /* flags as given */
  cl_mem_properties_intel props[]
      = { CL_MEM_ALLOC_FLAGS_INTEL, CL_MEM_ALLOC_WRITE_COMBINED_INTEL, 0 };
  void *wc = alloc (CL_MEM_TYPE_HOST_INTEL, 64, props);
  cl_mem_alloc_flags_intel flags = 0;
  CHECK (alloc_info (ctx, wc, CL_MEM_ALLOC_FLAGS_INTEL, sizeof (flags),
                     &flags, NULL));
  if (flags != CL_MEM_ALLOC_WRITE_COMBINED_INTEL)
    fail ("CL_MEM_ALLOC_FLAGS_INTEL %#llx, expected write-combined",
          (unsigned long long)flags);
  CHECK (alloc_info (ctx, h, CL_MEM_ALLOC_FLAGS_INTEL, sizeof (flags), &flags,
                     NULL));
  if (flags != 0)
    fail ("CL_MEM_ALLOC_FLAGS_INTEL %#llx without flags",
          (unsigned long long)flags);

  /* host and shared memory is the host's to use directly */
  for (size_t i = 0; i < size; ++i)
    {
      h[i] = (uint8_t)(i * 7);
      sh[i] = (uint8_t)(i * 13);
    }
  for (size_t i = 0; i < size; ++i)
    if (h[i] != (uint8_t)(i * 7) || sh[i] != (uint8_t)(i * 13))
      fail ("host or shared memory does not hold what was written");
  CHECK (mem_free (ctx, wc));
  CHECK (mem_free (ctx, h));
  CHECK (mem_free (ctx, dv));
  CHECK (mem_free (ctx, sh));
  expect_info (h, NULL, CL_MEM_TYPE_UNKNOWN_INTEL, 0, NULL, "freed host");
  expect_info (dv, NULL, CL_MEM_TYPE_UNKNOWN_INTEL, 0, NULL, "freed device");
}

static void
fill_pattern (uint32_t *p, size_t n, uint32_t seed)
{
  for (size_t i = 0; i < n; ++i)
    p[i] = (uint32_t)i * 2654435761u + seed;
}

static void
expect_pattern (const uint32_t *p, size_t n, uint32_t seed, const char *what)
{
  for (size_t i = 0; i < n; ++i)
    if (p[i] != (uint32_t)i * 2654435761u + seed)
      fail ("%s: word %zu is %#x, expected %#x", what, i, p[i],
            (uint32_t)i * 2654435761u + seed);
}

/* Every direction: malloc -> host -> device -> device -> shared -> malloc,
   and shared -> host, host -> shared, malloc -> device, device -> malloc,
   some blocking, some on an event.  */
static void
test_memcpy (void)
{
  const size_t bytes = N * sizeof (uint32_t);
  uint32_t *m = xmalloc (bytes), *back = xmalloc (bytes);
  uint32_t *h = alloc (CL_MEM_TYPE_HOST_INTEL, bytes, NULL);
  uint32_t *d1 = alloc (CL_MEM_TYPE_DEVICE_INTEL, bytes, NULL);
  uint32_t *d2 = alloc (CL_MEM_TYPE_DEVICE_INTEL, bytes, NULL);
  uint32_t *sh = alloc (CL_MEM_TYPE_SHARED_INTEL, bytes, NULL);
  cl_event e;
  fill_pattern (m, N, 1);
  CHECK (mem_copy (q, CL_TRUE, h, m, bytes, 0, NULL, NULL));
  expect_pattern (h, N, 1, "malloc -> host");
  CHECK (mem_copy (q, CL_FALSE, d1, h, bytes, 0, NULL, NULL));
  CHECK (mem_copy (q, CL_FALSE, d2, d1, bytes, 0, NULL, NULL));
  CHECK (mem_copy (q, CL_FALSE, sh, d2, bytes, 0, NULL, &e));
  CHECK (clWaitForEvents (1, &e));
  cl_command_type type = 0;
  CHECK (clGetEventInfo (e, CL_EVENT_COMMAND_TYPE, sizeof (type), &type,
                         NULL));
  if (type != CL_COMMAND_MEMCPY_INTEL)
    fail ("a USM memcpy's event has command type %#x", type);
  CHECK (clReleaseEvent (e));
  expect_pattern (sh, N, 1, "host -> device -> device -> shared");
  CHECK (mem_copy (q, CL_TRUE, back, sh, bytes, 0, NULL, NULL));
  expect_pattern (back, N, 1, "shared -> malloc");

  fill_pattern (sh, N, 2);
  CHECK (mem_copy (q, CL_TRUE, h, sh, bytes, 0, NULL, NULL));
  expect_pattern (h, N, 2, "shared -> host");
  fill_pattern (h, N, 3);
  CHECK (mem_copy (q, CL_TRUE, sh, h, bytes, 0, NULL, NULL));
  expect_pattern (sh, N, 3, "host -> shared");
  fill_pattern (m, N, 4);
  CHECK (mem_copy (q, CL_FALSE, d1, m, bytes, 0, NULL, NULL));
  memset (back, 0, bytes);
  CHECK (mem_copy (q, CL_TRUE, back, d1, bytes, 0, NULL, NULL));
  expect_pattern (back, N, 4, "malloc -> device -> malloc");
  /* a part, at offsets */
  memset (back, 0, bytes);
  CHECK (mem_copy (q, CL_TRUE, back + 5, d1 + 17, 100 * sizeof (uint32_t), 0,
                   NULL, NULL));
  for (size_t i = 0; i < 100; ++i)
    if (back[5 + i] != (uint32_t)(17 + i) * 2654435761u + 4)
      fail ("device -> malloc at offsets: word %zu", i);
  if (back[4] != 0 || back[105] != 0)
    fail ("device -> malloc at offsets wrote outside the range");
  /* 0 bytes: nothing copied, nothing filled */
  CHECK (mem_copy (q, CL_TRUE, back, d1, 0, 0, NULL, NULL));
  CHECK (mem_fill (q, d1, "\0\0\0\0", 4, 0, 0, NULL, NULL));
  CHECK (clFinish (q));
  if (back[0] != 0 || back[5] != 17u * 2654435761u + 4)
    fail ("a copy of 0 bytes changed the destination");
  CHECK (mem_free (ctx, h));
  CHECK (mem_free (ctx, d1));
  CHECK (mem_free (ctx, d2));
  CHECK (mem_free (ctx, sh));
  free (m);
  free (back);
}

static void
test_fill (void)
{
  const size_t bytes = 1024;
  uint8_t *d = alloc (CL_MEM_TYPE_DEVICE_INTEL, bytes, NULL);
  uint8_t *sh = alloc (CL_MEM_TYPE_SHARED_INTEL, bytes, NULL);
  uint8_t *back = xmalloc (bytes);
  uint8_t pattern[128];
  for (size_t ps = 1; ps <= 128; ps *= 2)
    {
      for (size_t i = 0; i < ps; ++i)
        pattern[i] = (uint8_t)(ps * 3 + i * 5 + 1);
      /* the middle half: the rest keeps the previous fill */
      memset (sh, 0xEE, bytes);
      CHECK (mem_fill (q, d, "\xAB", 1, bytes, 0, NULL, NULL));
      CHECK (mem_fill (q, d + 256, pattern, ps, 512, 0, NULL, NULL));
      CHECK (mem_fill (q, sh + 256, pattern, ps, 512, 0, NULL, NULL));
      CHECK (mem_copy (q, CL_TRUE, back, d, bytes, 0, NULL, NULL));
      CHECK (clFinish (q));
      for (size_t i = 0; i < bytes; ++i)
        {
          int in = i >= 256 && i < 768;
          uint8_t want_d = in ? pattern[(i - 256) % ps] : 0xAB;
          uint8_t want_s = in ? pattern[(i - 256) % ps] : 0xEE;
          if (back[i] != want_d || sh[i] != want_s)
            fail ("fill of pattern size %zu: byte %zu is %#x/%#x, expected "
                  "%#x/%#x",
                  ps, i, back[i], sh[i], want_d, want_s);
        }
    }
  if (mem_set != NULL)
    {
      CHECK (mem_set (q, d + 3, 0x5A, 10, 0, NULL, NULL));
      CHECK (mem_copy (q, CL_TRUE, back, d, 16, 0, NULL, NULL));
      for (size_t i = 0; i < 16; ++i)
        if (back[i] != (i >= 3 && i < 13 ? 0x5A : 0xAB))
          fail ("memset: byte %zu is %#x", i, back[i]);
    }
  else
    note ("clEnqueueMemsetINTEL: not offered by this runtime");
  CHECK (mem_free (ctx, d));
  CHECK (mem_free (ctx, sh));
  free (back);
}

/* dst (host) = a (shared) * 3 + b (device)  */
static void
test_kernel_args (void)
{
  const size_t bytes = N * sizeof (uint32_t);
  uint32_t *dst = alloc (CL_MEM_TYPE_HOST_INTEL, bytes, NULL);
  uint32_t *a = alloc (CL_MEM_TYPE_SHARED_INTEL, bytes, NULL);
  uint32_t *b = alloc (CL_MEM_TYPE_DEVICE_INTEL, bytes, NULL);
  uint32_t *m = xmalloc (bytes);
  fill_pattern (a, N, 7);
  fill_pattern (m, N, 11);
  memset (dst, 0, bytes);
  CHECK (mem_copy (q, CL_FALSE, b, m, bytes, 0, NULL, NULL));
  cl_kernel k = create_kernel (prog, "scale_add");
  CHECK (set_arg (k, 0, dst));
  CHECK (set_arg (k, 1, a));
  CHECK (set_arg (k, 2, b));
  size_t global = N;
  CHECK (clEnqueueNDRangeKernel (q, k, 1, NULL, &global, NULL, 0, NULL,
                                 NULL));
  CHECK (clFinish (q));
  for (size_t i = 0; i < N; ++i)
    if (dst[i] != a[i] * 3u + m[i])
      fail ("scale_add: word %zu is %#x, expected %#x", i, dst[i],
            a[i] * 3u + m[i]);
  /* again, with a pointer inside the allocation: the second half */
  CHECK (set_arg (k, 0, dst + N / 2));
  CHECK (set_arg (k, 1, a + N / 2));
  CHECK (set_arg (k, 2, b + N / 2));
  fill_pattern (a, N, 8);
  global = N / 2;
  CHECK (clEnqueueNDRangeKernel (q, k, 1, NULL, &global, NULL, 0, NULL,
                                 NULL));
  CHECK (clFinish (q));
  for (size_t i = 0; i < N; ++i)
    {
      uint32_t want = (uint32_t)i * 2654435761u + (i < N / 2 ? 7 : 8);
      if (dst[i] != want * 3u + m[i])
        fail ("scale_add on the second half: word %zu is %#x", i, dst[i]);
    }
  CHECK (clReleaseKernel (k));
  CHECK (mem_free (ctx, dst));
  CHECK (mem_free (ctx, a));
  CHECK (mem_free (ctx, b));
  free (m);
}

/* Two tables in shared memory, linked, each pointing to a device and a
   host allocation: the kernel gets only the first table.  */
static void
test_indirect (void)
{
  const uint32_t n = 1000;
  table *t = alloc (CL_MEM_TYPE_SHARED_INTEL, 2 * sizeof (table), NULL);
  uint32_t *dv = alloc (CL_MEM_TYPE_DEVICE_INTEL, 2 * n * sizeof (uint32_t),
                        NULL);
  uint32_t *h = alloc (CL_MEM_TYPE_HOST_INTEL, 2 * n * sizeof (uint32_t),
                       NULL);
  uint64_t *out = alloc (CL_MEM_TYPE_SHARED_INTEL, 2 * sizeof (uint64_t),
                         NULL);
  uint32_t *m = xmalloc (2 * n * sizeof (uint32_t));
  fill_pattern (m, 2 * n, 21);
  fill_pattern (h, 2 * n, 22);
  CHECK (mem_copy (q, CL_TRUE, dv, m, 2 * n * sizeof (uint32_t), 0, NULL,
                   NULL));
  t[0] = (table){ dv, h, &t[1], n };
  t[1] = (table){ dv + n, h + n, NULL, n };
  uint64_t want = 0;
  for (uint32_t i = 0; i < 2 * n; ++i)
    want += m[i] ^ h[i];
  cl_kernel k = create_kernel (prog, "follow");
  cl_bool yes = CL_TRUE;
  CHECK (clSetKernelExecInfo (
      k, CL_KERNEL_EXEC_INFO_INDIRECT_HOST_ACCESS_INTEL, sizeof (yes), &yes));
  CHECK (clSetKernelExecInfo (
      k, CL_KERNEL_EXEC_INFO_INDIRECT_DEVICE_ACCESS_INTEL, sizeof (yes),
      &yes));
  CHECK (clSetKernelExecInfo (
      k, CL_KERNEL_EXEC_INFO_INDIRECT_SHARED_ACCESS_INTEL, sizeof (yes),
      &yes));
  void *ptrs[2] = { dv, h };
  CHECK (clSetKernelExecInfo (k, CL_KERNEL_EXEC_INFO_USM_PTRS_INTEL,
                              sizeof (ptrs), ptrs));
  CHECK (set_arg (k, 0, t));
  CHECK (set_arg (k, 1, out));
  size_t one = 1;
  CHECK (clEnqueueNDRangeKernel (q, k, 1, NULL, &one, NULL, 0, NULL, NULL));
  CHECK (clFinish (q));
  if (out[0] != want || out[1] != 2)
    fail ("follow: sum %llu over %llu tables, expected %llu over 2",
          (unsigned long long)out[0], (unsigned long long)out[1],
          (unsigned long long)want);
  for (uint32_t i = 0; i < 2 * n; ++i)
    if (h[i] != m[i] + 1u)
      fail ("follow: host word %u is %#x, expected %#x", i, h[i], m[i] + 1u);
  CHECK (clReleaseKernel (k));
  CHECK (mem_free (ctx, t));
  CHECK (mem_free (ctx, dv));
  CHECK (mem_free (ctx, h));
  CHECK (mem_free (ctx, out));
  free (m);
}

static void
test_migrate_advise (void)
{
  uint32_t *sh = alloc (CL_MEM_TYPE_SHARED_INTEL, 4096, NULL);
  cl_event e[2];
  fill_pattern (sh, 1024, 5);
  CHECK (migrate (q, sh, 4096, CL_MIGRATE_MEM_OBJECT_HOST, 0, NULL, &e[0]));
  CHECK (advise (q, sh, 4096, ADVICE, 1, &e[0], &e[1]));
  CHECK (clWaitForEvents (2, e));
  cl_command_type t0 = 0, t1 = 0;
  CHECK (clGetEventInfo (e[0], CL_EVENT_COMMAND_TYPE, sizeof (t0), &t0,
                         NULL));
  CHECK (clGetEventInfo (e[1], CL_EVENT_COMMAND_TYPE, sizeof (t1), &t1,
                         NULL));
  if (t0 != CL_COMMAND_MIGRATEMEM_INTEL || t1 != CL_COMMAND_MEMADVISE_INTEL)
    fail ("migrate and advise events have command types %#x and %#x", t0,
          t1);
  expect_pattern (sh, 1024, 5, "shared after migrate and advise");
  CHECK (clReleaseEvent (e[0]));
  CHECK (clReleaseEvent (e[1]));
  CHECK (mem_free (ctx, sh));
}

/* A blocking free waits for the kernel that writes the allocation.  */
static void
test_free (void)
{
  const size_t bytes = N * sizeof (uint32_t);
  uint32_t *dst = alloc (CL_MEM_TYPE_SHARED_INTEL, bytes, NULL);
  uint32_t *a = alloc (CL_MEM_TYPE_SHARED_INTEL, bytes, NULL);
  uint32_t *b = alloc (CL_MEM_TYPE_DEVICE_INTEL, bytes, NULL);
  fill_pattern (a, N, 9);
  CHECK (mem_fill (q, b, "\x01\x00\x00\x00", 4, bytes, 0, NULL, NULL));
  cl_kernel k = create_kernel (prog, "scale_add");
  CHECK (set_arg (k, 0, dst));
  CHECK (set_arg (k, 1, a));
  CHECK (set_arg (k, 2, b));
  size_t global = N;
  cl_event e;
  CHECK (clEnqueueNDRangeKernel (q, k, 1, NULL, &global, NULL, 0, NULL, &e));
  CHECK (blocking_free (ctx, b));
  cl_int st = 0;
  CHECK (clGetEventInfo (e, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof (st),
                         &st, NULL));
  if (st != CL_COMPLETE)
    fail ("clMemBlockingFreeINTEL returned before the kernel completed (%d)",
          st);
  for (size_t i = 0; i < N; ++i)
    if (dst[i] != a[i] * 3u + 1u)
      fail ("scale_add before the blocking free: word %zu is %#x", i, dst[i]);
  expect_info (b, NULL, CL_MEM_TYPE_UNKNOWN_INTEL, 0, NULL,
               "after a blocking free");
  CHECK (clReleaseEvent (e));
  CHECK (clReleaseKernel (k));
  CHECK (mem_free (ctx, NULL));
  CHECK (blocking_free (ctx, NULL));
  CHECK (mem_free (ctx, dst));
  CHECK (mem_free (ctx, a));
}

/* As SYCL submits: on an out-of-order queue, a copy waiting for a user
   event, a copy back waiting for it, and a barrier after both, all before
   the user event is set, while a shared allocation is live (copies then
   leave the client once their dependencies are done).  Everything
   completes, exact: a barrier that reached the server before the copies
   it waited for was enqueued ahead of them, and each waited for the other
   (dpctl's test_sycl_timer).  */
static void
test_held_before_barrier (void)
{
  cl_int err = CL_SUCCESS;
  const size_t bytes = N * sizeof (uint32_t);
  cl_command_queue oq = clCreateCommandQueue (
      ctx, dev,
      CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE | CL_QUEUE_PROFILING_ENABLE,
      &err);
  CHECK_ERR (err, "clCreateCommandQueue (out of order)");
  uint32_t *sh = alloc (CL_MEM_TYPE_SHARED_INTEL, 64, NULL);
  uint32_t *d = alloc (CL_MEM_TYPE_DEVICE_INTEL, bytes, NULL);
  uint32_t *src = malloc (bytes), *dst = calloc (N, sizeof (uint32_t));
  if (src == NULL || dst == NULL)
    fail ("out of memory");
  fill_pattern (src, N, 5);
  cl_event u = clCreateUserEvent (ctx, &err);
  CHECK_ERR (err, "clCreateUserEvent");
  cl_event e[3];
  CHECK (mem_copy (oq, CL_FALSE, d, src, bytes, 1, &u, &e[0]));
  CHECK (mem_copy (oq, CL_FALSE, dst, d, bytes, 1, &e[0], &e[1]));
  CHECK (clEnqueueBarrierWithWaitList (oq, 0, NULL, &e[2]));
  CHECK (clSetUserEventStatus (u, CL_COMPLETE));
  CHECK (clWaitForEvents (1, &e[2]));
  CHECK (clFinish (oq));
  for (size_t i = 0; i < N; ++i)
    if (dst[i] != src[i])
      fail ("the copy back before the barrier: word %zu is %#x, not %#x", i,
            dst[i], src[i]);
  for (int i = 0; i < 3; ++i)
    CHECK (clReleaseEvent (e[i]));
  CHECK (clReleaseEvent (u));
  CHECK (mem_free (ctx, d));
  CHECK (mem_free (ctx, sh));
  CHECK (clReleaseCommandQueue (oq));
  free (src);
  free (dst);
}

#define EXPECT_ERR(call, want)                                                \
  do                                                                          \
    {                                                                         \
      cl_int got_ = (call);                                                   \
      if (got_ != (want))                                                     \
        fail ("%s returned %d %s, expected %s", #call, got_, clerr (got_),    \
              #want);                                                         \
    }                                                                         \
  while (0)

static void
test_bad_arguments (void)
{
  cl_int err = CL_SUCCESS;
  cl_ulong max = 0;
  CHECK (clGetDeviceInfo (dev, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof (max),
                          &max, NULL));
  if (device_alloc (ctx, dev, NULL, 0, 0, &err) != NULL
      || err != CL_INVALID_BUFFER_SIZE)
    fail ("a device allocation of 0 bytes: %d %s", err, clerr (err));
  if (shared_alloc (ctx, dev, NULL, (size_t)max + 1, 0, &err) != NULL
      || err != CL_INVALID_BUFFER_SIZE)
    fail ("a shared allocation over CL_DEVICE_MAX_MEM_ALLOC_SIZE: %d %s", err,
          clerr (err));
  if (host_alloc (ctx, NULL, 64, 3, &err) != NULL || err != CL_INVALID_VALUE)
    fail ("alignment 3: %d %s", err, clerr (err));
  cl_mem_properties_intel bad[] = { 0x7777, 0, 0 };
  if (host_alloc (ctx, bad, 64, 0, &err) != NULL || err != CL_INVALID_PROPERTY)
    fail ("an unknown property: %d %s", err, clerr (err));
  if (host_alloc (NULL, NULL, 64, 0, &err) != NULL
      || err != CL_INVALID_CONTEXT)
    fail ("no context: %d %s", err, clerr (err));
  if (device_alloc (ctx, NULL, NULL, 64, 0, &err) != NULL
      || err != CL_INVALID_DEVICE)
    fail ("a device allocation without a device: %d %s", err, clerr (err));

  uint8_t *d = alloc (CL_MEM_TYPE_DEVICE_INTEL, 1024, NULL);
  uint8_t pattern[4] = { 1, 2, 3, 4 };
  EXPECT_ERR (mem_fill (q, d, pattern, 3, 12, 0, NULL, NULL),
              CL_INVALID_VALUE);
  EXPECT_ERR (mem_fill (q, d, NULL, 4, 16, 0, NULL, NULL), CL_INVALID_VALUE);
  EXPECT_ERR (mem_fill (q, d + 2, pattern, 4, 16, 0, NULL, NULL),
              CL_INVALID_VALUE);
  EXPECT_ERR (mem_fill (q, d, pattern, 4, 10, 0, NULL, NULL),
              CL_INVALID_VALUE);
  EXPECT_ERR (mem_fill (q, NULL, pattern, 4, 16, 0, NULL, NULL),
              CL_INVALID_VALUE);
  /* NULL pointers to memcpy: CL_INVALID_VALUE by the specification (and
     PoCL), CL_INVALID_MEM_OBJECT from Intel's runtime: not compared */
  EXPECT_ERR (mem_copy (q, CL_TRUE, d + 8, d, 16, 0, NULL, NULL),
              CL_MEM_COPY_OVERLAP);
  cl_uint dummy;
  EXPECT_ERR (alloc_info (ctx, d, 0x7777, sizeof (dummy), &dummy, NULL),
              CL_INVALID_VALUE);
  EXPECT_ERR (mem_free (NULL, d), CL_INVALID_CONTEXT);
  cl_kernel k = create_kernel (prog, "scale_add");
  EXPECT_ERR (set_arg (k, 3, d), CL_INVALID_ARG_INDEX);
  cl_bool yes = CL_TRUE;
  EXPECT_ERR (clSetKernelExecInfo (
                  k, CL_KERNEL_EXEC_INFO_INDIRECT_DEVICE_ACCESS_INTEL, 1, &yes),
              CL_INVALID_VALUE);
  CHECK (clReleaseKernel (k));
  CHECK (mem_free (ctx, d));
}

/* The host writing its counters in a device allocation while the main
   thread sends commands.  */
typedef struct host_writer
{
  uint32_t *counts;
  size_t n;
  unsigned rounds;
} host_writer;

static void *
host_write_rounds (void *arg)
{
  host_writer *w = arg;
  for (unsigned r = 0; r < w->rounds; ++r)
    for (size_t i = 0; i < w->n; ++i)
      w->counts[i] += 1;
  return NULL;
}

/* A CPU device's device allocations are host memory: libraries (oneMKL)
   compute on them on the host.  Through remote the host sees the server's
   memory as of its touch, and its writes reach the commands it enqueues
   after them.  */
static void
test_host_access (void)
{
  cl_device_type type = 0;
  CHECK (clGetDeviceInfo (dev, CL_DEVICE_TYPE, sizeof (type), &type, NULL));
  if (!(type & CL_DEVICE_TYPE_CPU))
    {
      note ("not a CPU device: its device allocations are not the host's");
      return;
    }
  /* three pages and a part: the last page is the allocation's in part */
  const size_t n = 3 * 1024 + 25, bytes = n * sizeof (uint32_t);
  uint32_t *a = alloc (CL_MEM_TYPE_SHARED_INTEL, bytes, NULL);
  uint32_t *b = alloc (CL_MEM_TYPE_DEVICE_INTEL, bytes, NULL);
  uint32_t *d = alloc (CL_MEM_TYPE_DEVICE_INTEL, bytes, NULL);
  uint32_t *d2 = alloc (CL_MEM_TYPE_DEVICE_INTEL, bytes, NULL);
  uint32_t *back = xmalloc (bytes);
  uint32_t seven = 7;
  for (size_t i = 0; i < n; ++i)
    a[i] = (uint32_t)i;
  CHECK (mem_fill (q, b, &seven, sizeof (seven), bytes, 0, NULL, NULL));
  cl_kernel k = create_kernel (prog, "scale_add");
  size_t global = n;

  /* a kernel's result, read by the host */
  CHECK (set_arg (k, 0, d));
  CHECK (set_arg (k, 1, a));
  CHECK (set_arg (k, 2, b));
  CHECK (clEnqueueNDRangeKernel (q, k, 1, NULL, &global, NULL, 0, NULL, NULL));
  CHECK (clFinish (q));
  for (size_t i = 0; i < n; ++i)
    if (d[i] != 3u * (uint32_t)i + 7u)
      fail ("the host read %u at %zu of a kernel's result, expected %u", d[i],
            i, 3u * (uint32_t)i + 7u);

  /* the host's writes, every other element, used by a kernel */
  for (size_t i = 0; i < n; i += 2)
    d[i] = (uint32_t)i ^ 0x5555u;
  CHECK (set_arg (k, 0, d2));
  CHECK (set_arg (k, 1, d));
  CHECK (clEnqueueNDRangeKernel (q, k, 1, NULL, &global, NULL, 0, NULL, NULL));
  CHECK (mem_copy (q, CL_TRUE, back, d2, bytes, 0, NULL, NULL));
  for (size_t i = 0; i < n; ++i)
    {
      uint32_t in = i % 2 ? 3u * (uint32_t)i + 7u : (uint32_t)i ^ 0x5555u;
      if (back[i] != 3u * in + 7u || d2[i] != back[i])
        fail ("element %zu after the host's write: %u (the host reads %u), "
              "expected %u",
              i, back[i], d2[i], 3u * in + 7u);
    }

  /* a kernel overwrites what the host has read: the host reads the new */
  CHECK (set_arg (k, 0, d));
  CHECK (set_arg (k, 1, d2));
  CHECK (clEnqueueNDRangeKernel (q, k, 1, NULL, &global, NULL, 0, NULL, NULL));
  CHECK (clFinish (q));
  for (size_t i = 0; i < n; ++i)
    if (d[i] != 3u * back[i] + 7u)
      fail ("the host read %u at %zu after a kernel wrote there, expected %u",
            d[i], i, 3u * back[i] + 7u);

  /* a thread counts in d while this one sends: no increment is lost */
  CHECK (mem_fill (q, d, "\0\0\0\0", 4, bytes, 0, NULL, NULL));
  CHECK (clFinish (q));
  host_writer w = { d, n, 2000 };
  pthread_t t;
  if (pthread_create (&t, NULL, host_write_rounds, &w) != 0)
    fail ("pthread_create");
  for (int i = 0; i < 300; ++i)
    {
      CHECK (mem_fill (q, b, &seven, sizeof (seven), bytes, 0, NULL, NULL));
      CHECK (clFlush (q));
    }
  pthread_join (t, NULL);
  CHECK (mem_copy (q, CL_TRUE, back, d, bytes, 0, NULL, NULL));
  for (size_t i = 0; i < n; ++i)
    if (back[i] != w.rounds || d[i] != w.rounds)
      fail ("counter %zu: the server has %u, the host reads %u, expected %u",
            i, back[i], d[i], w.rounds);

  /* a buffer written from and read into device memory (SYCL runtimes do
     both): the server's runtime moves the bytes; a rectangle there fails
     through remote (doc/device-info.md), and the session goes on */
  char name[256];
  CHECK (clGetDeviceInfo (dev, CL_DEVICE_NAME, sizeof (name), name, NULL));
  int remote = strstr (name, REMOTE_NAME_PART) != NULL;
  cl_int err = CL_SUCCESS;
  cl_mem buf = clCreateBuffer (ctx, CL_MEM_READ_WRITE, bytes, NULL, &err);
  CHECK_ERR (err, "clCreateBuffer");
  for (size_t i = 0; i < n; ++i)
    d2[i] = 0xdead;
  size_t half = bytes / 2, origin[3] = { 0, 0, 0 }, region[3] = { 64, 1, 1 };
  cl_event ev[4];
  CHECK (clEnqueueWriteBuffer (q, buf, CL_FALSE, 0, bytes, d, 0, NULL,
                               &ev[0]));
  CHECK (clEnqueueReadBuffer (q, buf, CL_FALSE, 0, half, d2, 0, NULL,
                              &ev[1]));
  CHECK (clEnqueueReadBuffer (q, buf, CL_FALSE, half, bytes - half,
                              (char *)d2 + half, 0, NULL, &ev[2]));
  CHECK (clEnqueueReadBufferRect (q, buf, CL_FALSE, origin, origin, region,
                                  0, 0, 0, 0, b, 0, NULL, &ev[3]));
  /* commands behind the one that fails end too (a SYCL host task waits
     for them) */
  cl_event after[3];
  size_t one = 1;
  CHECK (clEnqueueMarkerWithWaitList (q, 1, &ev[3], &after[0]));
  CHECK (mem_copy (q, CL_FALSE, back, d, bytes, 1, &ev[3], &after[1]));
  CHECK (set_arg (k, 0, b));
  CHECK (clEnqueueNDRangeKernel (q, k, 1, NULL, &one, NULL, 1, &ev[3],
                                 &after[2]));
  clWaitForEvents (3, after);
  for (int i = 0; i < 3; ++i)
    {
      cl_int st = 0;
      CHECK (clGetEventInfo (after[i], CL_EVENT_COMMAND_EXECUTION_STATUS,
                             sizeof (st), &st, NULL));
      if (remote ? st >= 0 : st != CL_COMPLETE)
        fail ("a command behind the rectangle: status %d", st);
      CHECK (clReleaseEvent (after[i]));
    }
  clWaitForEvents (4, ev);
  for (int i = 0; i < 4; ++i)
    {
      cl_int st = 0;
      CHECK (clGetEventInfo (ev[i], CL_EVENT_COMMAND_EXECUTION_STATUS,
                             sizeof (st), &st, NULL));
      if (i == 3 && remote ? st >= 0 : st != CL_COMPLETE)
        fail ("buffer command %d on device memory: status %d", i, st);
      CHECK (clReleaseEvent (ev[i]));
    }
  CHECK (clReleaseMemObject (buf));
  CHECK (mem_copy (q, CL_TRUE, back, d2, bytes, 0, NULL, NULL));
  for (size_t i = 0; i < n; ++i)
    if (back[i] != w.rounds || d2[i] != w.rounds)
      fail ("after the buffer's write and reads, element %zu: the server "
            "has %u, the host reads %u, expected %u",
            i, back[i], d2[i], w.rounds);

  CHECK (clReleaseKernel (k));
  CHECK (mem_free (ctx, a));
  CHECK (mem_free (ctx, b));
  CHECK (mem_free (ctx, d));
  CHECK (mem_free (ctx, d2));
  free (back);
}

/* A device without USM: no extension, its queries refused, allocations
   refused, commands refused.  */
static int
no_usm (int argc, char **argv)
{
  char name[256];
  cl_int err = CL_SUCCESS;
  argv[1] = "local";
  dev = open_test_device (argc, argv, name, sizeof (name), &ctx);
  lookup_all ();
  if (has_extension ("cl_intel_unified_shared_memory"))
    fail ("the device lists cl_intel_unified_shared_memory");
  cl_device_unified_shared_memory_capabilities_intel c = 0;
  EXPECT_ERR (clGetDeviceInfo (dev, CL_DEVICE_HOST_MEM_CAPABILITIES_INTEL,
                               sizeof (c), &c, NULL),
              CL_INVALID_VALUE);
  if (host_alloc (ctx, NULL, 64, 0, &err) != NULL
      || err != CL_INVALID_OPERATION)
    fail ("a host allocation on a device without USM: %d %s", err,
          clerr (err));
  if (device_alloc (ctx, dev, NULL, 64, 0, &err) != NULL
      || err != CL_INVALID_OPERATION)
    fail ("a device allocation on a device without USM: %d %s", err,
          clerr (err));
  if (shared_alloc (ctx, NULL, NULL, 64, 0, &err) != NULL
      || err != CL_INVALID_OPERATION)
    fail ("a shared allocation on a device without USM: %d %s", err,
          clerr (err));
  q = clCreateCommandQueue (ctx, dev, 0, &err);
  CHECK_ERR (err, "clCreateCommandQueue");
  char m[16];
  EXPECT_ERR (mem_copy (q, CL_TRUE, m, m + 8, 8, 0, NULL, NULL),
              CL_INVALID_OPERATION);
  clReleaseCommandQueue (q);
  clReleaseContext (ctx);
  printf ("usm: PASS: %s has no USM, and says so\n", name);
  return 0;
}

int
main (int argc, char **argv)
{
  watchdog (300, "the whole test");
  if (argc > 1 && strcmp (argv[1], "no-usm-local") == 0)
    return no_usm (argc, argv);
  char name[256];
  cl_int err;
  dev = open_test_device (argc, argv, name, sizeof (name), &ctx);
  lookup_all ();
  q = clCreateCommandQueue (ctx, dev, 0, &err);
  CHECK_ERR (err, "clCreateCommandQueue");
  prog = build_program (ctx, dev, src, "");
  run_sub ("capabilities", test_caps, 60);
  run_sub ("allocations and clGetMemAllocInfoINTEL", test_alloc_info, 60);
  run_sub ("memcpy in every direction", test_memcpy, 120);
  run_sub ("fills and memset", test_fill, 120);
  run_sub ("a kernel on USM arguments", test_kernel_args, 120);
  run_sub ("a kernel following pointers in USM memory", test_indirect, 120);
  run_sub ("migrate and advise", test_migrate_advise, 60);
  run_sub ("free and blocking free", test_free, 120);
  run_sub ("copies held before a barrier", test_held_before_barrier, 60);
  run_sub ("bad arguments", test_bad_arguments, 60);
  run_sub ("the host's access to a CPU device's device allocations",
           test_host_access, 120);
  if (sub_hung)
    return sub_finish ("");
  clReleaseProgram (prog);
  clReleaseCommandQueue (q);
  clReleaseContext (ctx);
  return sub_finish (name);
}
