/* test_svm.c - shared virtual memory through remote as on the local device
   (run with the argument "local" for the same checks there): coarse-grained
   allocations written through maps, a kernel that follows pointers stored
   in SVM memory (a linked list built on the host across two allocations),
   results read back through a map, bit-exact; the same on fine-grained
   allocations without maps, where the device has them; SVM memcpy and fill
   between allocations and host memory; a buffer made on SVM memory;
   zero-size allocations; fine-grained allocations freed on one thread
   while kernels launch on another.  */

#define TEST_NAME "svm"
#include "remote_test_util.c"

#define NODES 1000

static cl_device_id dev;
static cl_context ctx;
static cl_command_queue q;
static cl_program prog;

/* The device's view of struct node below: 64-bit pointers on both sides.  */
static const char *src
    = "typedef struct node { __global struct node *next; uint value;\n"
      "                      uint out; } node;\n"
      "__kernel void walk (__global node *head, __global ulong *result)\n"
      "{ ulong sum = 0, n = 0;\n"
      "  for (__global node *p = head; p; p = p->next, ++n)\n"
      "    { p->out = p->value * 3u + (uint)n; sum += p->value; }\n"
      "  result[0] = sum; result[1] = n; }\n"
      "__kernel void twice (__global uint *a) {\n"
      "  a[get_global_id (0)] *= 2u; }\n"
      "__kernel void even_bytes (__global uchar *a) {\n"
      "  size_t i = get_global_id (0); if (i % 2 == 0) a[i] = (uchar)(i % 251); }\n"
      "__kernel void add_one (__global uint *a) { a[get_global_id (0)] += 1u; }\n";

typedef struct node
{
  struct node *next;
  uint32_t value;
  uint32_t out;
} node;

/* Nodes alternate between a and b, in an order that jumps around.  */
static node *
build_list (node *a, node *b)
{
  node *head = NULL;
  for (uint32_t i = 0; i < NODES; ++i)
    {
      uint32_t k = NODES - 1 - i;
      node *n = (k % 2 ? b : a) + (k * 7919u) % NODES;
      n->value = k * 2654435761u;
      n->out = 0;
      n->next = head;
      head = n;
    }
  return head;
}

static void
check_list (node *head, const uint64_t *result, const char *what)
{
  uint64_t sum = 0, n = 0;
  for (node *p = head; p; p = p->next, ++n)
    {
      if (p->out != p->value * 3u + (uint32_t)n)
        fail ("%s: node %llu holds %u, expected %u", what,
              (unsigned long long)n, p->out, p->value * 3u + (uint32_t)n);
      sum += p->value;
    }
  if (n != NODES || result[0] != sum || result[1] != n)
    fail ("%s: the kernel saw %llu nodes summing to %llu, expected %llu and "
          "%llu",
          what, (unsigned long long)result[1], (unsigned long long)result[0],
          (unsigned long long)n, (unsigned long long)sum);
}

static void
walk (node *head, uint64_t *result, node *a, node *b)
{
  cl_kernel k = create_kernel (prog, "walk");
  void *ptrs[2] = { a, b };
  CHECK (clSetKernelArgSVMPointer (k, 0, head));
  CHECK (clSetKernelArgSVMPointer (k, 1, result));
  CHECK (clSetKernelExecInfo (k, CL_KERNEL_EXEC_INFO_SVM_PTRS, sizeof (ptrs),
                              ptrs));
  size_t g = 1;
  CHECK (clEnqueueNDRangeKernel (q, k, 1, NULL, &g, NULL, 0, NULL, NULL));
  CHECK (clFinish (q));
  clReleaseKernel (k);
}

static void *
svm_alloc (cl_svm_mem_flags flags, size_t size)
{
  void *p = clSVMAlloc (ctx, flags, size, 0);
  if (p == NULL)
    fail ("clSVMAlloc of %zu bytes (flags %#llx) failed", size,
          (unsigned long long)flags);
  return p;
}

static void
test_coarse (void)
{
  size_t size = NODES * sizeof (node);
  node *a = svm_alloc (CL_MEM_READ_WRITE, size);
  node *b = svm_alloc (CL_MEM_READ_WRITE, size);
  uint64_t *result = svm_alloc (CL_MEM_READ_WRITE, 16);
  CHECK (clEnqueueSVMMap (q, CL_TRUE, CL_MAP_WRITE_INVALIDATE_REGION, a, size,
                          0, NULL, NULL));
  CHECK (clEnqueueSVMMap (q, CL_TRUE, CL_MAP_WRITE, b, size, 0, NULL, NULL));
  node *head = build_list (a, b);
  CHECK (clEnqueueSVMUnmap (q, a, 0, NULL, NULL));
  CHECK (clEnqueueSVMUnmap (q, b, 0, NULL, NULL));
  walk (head, result, a, b);
  CHECK (clEnqueueSVMMap (q, CL_TRUE, CL_MAP_READ, a, size, 0, NULL, NULL));
  CHECK (clEnqueueSVMMap (q, CL_TRUE, CL_MAP_READ, b, size, 0, NULL, NULL));
  CHECK (clEnqueueSVMMap (q, CL_TRUE, CL_MAP_READ, result, 16, 0, NULL, NULL));
  check_list (head, result, "coarse-grained list");
  CHECK (clEnqueueSVMUnmap (q, a, 0, NULL, NULL));
  CHECK (clEnqueueSVMUnmap (q, b, 0, NULL, NULL));
  CHECK (clEnqueueSVMUnmap (q, result, 0, NULL, NULL));
  CHECK (clFinish (q));
  clSVMFree (ctx, a);
  clSVMFree (ctx, b);
  clSVMFree (ctx, result);
  note ("coarse-grained: a %d-node list over two allocations, written "
        "through maps, walked by a kernel, read back through maps",
        NODES);
}

/* The device's SVM capabilities; notes a skip without fine-grained
   buffers.  */
static cl_device_svm_capabilities
fine_grained_caps (void)
{
  cl_device_svm_capabilities caps = 0;
  CHECK (clGetDeviceInfo (dev, CL_DEVICE_SVM_CAPABILITIES, sizeof (caps),
                          &caps, NULL));
  if (!(caps & CL_DEVICE_SVM_FINE_GRAIN_BUFFER))
    note ("no fine-grained buffers on this device: skipped");
  return caps;
}

static void
test_fine (void)
{
  cl_device_svm_capabilities caps = fine_grained_caps ();
  if (!(caps & CL_DEVICE_SVM_FINE_GRAIN_BUFFER))
    return;
  if (caps & CL_DEVICE_SVM_ATOMICS)
    note ("the device offers SVM atomics");
  cl_svm_mem_flags f = CL_MEM_READ_WRITE | CL_MEM_SVM_FINE_GRAIN_BUFFER;
  size_t size = NODES * sizeof (node);
  node *a = svm_alloc (f, size);
  node *b = svm_alloc (f, size);
  uint64_t *result = svm_alloc (f, 16);
  node *head = build_list (a, b);
  walk (head, result, a, b);
  check_list (head, result, "fine-grained list");
  /* again, changed on the host in between */
  for (node *p = head; p; p = p->next)
    p->value ^= 0x5a5a5a5au;
  walk (head, result, a, b);
  check_list (head, result, "fine-grained list, changed");
  clSVMFree (ctx, a);
  clSVMFree (ctx, b);
  clSVMFree (ctx, result);
  /* kernels back to back: each sees what the one before wrote */
  enum
  {
    N = 5000
  };
  uint32_t *v = svm_alloc (f, N * 4);
  for (uint32_t i = 0; i < N; ++i)
    v[i] = i;
  cl_kernel k = create_kernel (prog, "twice");
  CHECK (clSetKernelArgSVMPointer (k, 0, v));
  size_t g = N;
  for (int r = 0; r < 3; ++r)
    CHECK (clEnqueueNDRangeKernel (q, k, 1, NULL, &g, NULL, 0, NULL, NULL));
  CHECK (clFinish (q));
  for (uint32_t i = 0; i < N; ++i)
    if (v[i] != i * 8)
      fail ("three kernels in a row on fine-grained memory: element %u is "
            "%u, expected %u",
            i, v[i], i * 8);
  /* the host writes other bytes of the allocation while a kernel runs:
     both writes stand */
  g = N / 2;
  CHECK (clEnqueueNDRangeKernel (q, k, 1, NULL, &g, NULL, 0, NULL, NULL));
  for (uint32_t i = N / 2; i < N; ++i)
    v[i] = 12345u;
  CHECK (clFinish (q));
  for (uint32_t i = 0; i < N; ++i)
    if (v[i] != (i < N / 2 ? i * 16 : 12345u))
      fail ("a kernel on one half, the host on the other: element %u is %u, "
            "expected %u",
            i, v[i], i < N / 2 ? i * 16 : 12345u);
  clReleaseKernel (k);
  clSVMFree (ctx, v);
  /* byte by byte, interleaved: the kernel writes the even bytes while the
     host writes the odd ones (OpenCL-CTS test_svm svm_byte_granularity) */
  enum
  {
    B = 4096
  };
  unsigned char *bytes = svm_alloc (f, B);
  memset (bytes, 0xEE, B);
  k = create_kernel (prog, "even_bytes");
  CHECK (clSetKernelArgSVMPointer (k, 0, bytes));
  g = B;
  CHECK (clEnqueueNDRangeKernel (q, k, 1, NULL, &g, NULL, 0, NULL, NULL));
  CHECK (clFlush (q));
  for (uint32_t i = 1; i < B; i += 2)
    bytes[i] = (unsigned char)(i % 241);
  CHECK (clFinish (q));
  for (uint32_t i = 0; i < B; ++i)
    if (bytes[i] != (i % 2 == 0 ? i % 251 : i % 241))
      {
        fail ("the kernel on the even bytes, the host on the odd ones: byte "
              "%u is %u, expected %u",
              i, bytes[i], i % 2 == 0 ? i % 251 : i % 241);
        break;
      }
  clReleaseKernel (k);
  clSVMFree (ctx, bytes);
  note ("fine-grained: the same list without maps, twice; three kernels in "
        "a row; the host writing one half while a kernel writes the other; "
        "the host and a kernel writing interleaved bytes");
}

static void
test_copy_fill (void)
{
  enum
  {
    N = 4096
  };
  size_t size = N * 4;
  uint32_t *a = svm_alloc (CL_MEM_READ_WRITE, size);
  uint32_t *b = svm_alloc (CL_MEM_READ_WRITE, size);
  uint32_t *host = xmalloc (size), *back = xmalloc (size);
  uint32_t pattern = 0xdeadbeefu;
  for (uint32_t i = 0; i < N; ++i)
    host[i] = i * 2246822519u;
  CHECK (clEnqueueSVMMemFill (q, a, &pattern, 4, size, 0, NULL, NULL));
  CHECK (clEnqueueSVMMemcpy (q, CL_FALSE, b, a, size, 0, NULL, NULL));
  CHECK (clEnqueueSVMMemcpy (q, CL_FALSE, a + 100, host + 100, 4 * 1000, 0,
                             NULL, NULL));
  cl_kernel k = create_kernel (prog, "twice");
  CHECK (clSetKernelArgSVMPointer (k, 0, a + 64));
  size_t g = 2048;
  CHECK (clEnqueueNDRangeKernel (q, k, 1, NULL, &g, NULL, 0, NULL, NULL));
  CHECK (clEnqueueSVMMemcpy (q, CL_TRUE, back, a, size, 0, NULL, NULL));
  for (uint32_t i = 0; i < N; ++i)
    {
      uint32_t v = i >= 100 && i < 1100 ? host[i] : pattern;
      if (i >= 64 && i < 64 + 2048)
        v *= 2u;
      if (back[i] != v)
        fail ("fill, copy from the host, kernel at an offset: element %u is "
              "%#x, expected %#x",
              i, back[i], v);
    }
  CHECK (clEnqueueSVMMap (q, CL_TRUE, CL_MAP_READ, b, size, 0, NULL, NULL));
  for (uint32_t i = 0; i < N; ++i)
    if (b[i] != pattern)
      fail ("copy between allocations: element %u is %#x", i, b[i]);
  CHECK (clEnqueueSVMUnmap (q, b, 0, NULL, NULL));
  CHECK (clEnqueueSVMMigrateMem (q, 1, (const void **)&a, NULL, 0, 0, NULL,
                                 NULL));
  CHECK (clFinish (q));
  clReleaseKernel (k);
  clSVMFree (ctx, a);
  clSVMFree (ctx, b);
  free (host);
  free (back);
  note ("SVM fill, copies between allocations and from and to the host, a "
        "kernel on an inner pointer, migration");
}

/* A buffer made on SVM memory is that memory: a kernel through either
   sees the other's writes.  */
static void
test_buffer_on_svm (void)
{
  enum
  {
    N = 300000
  }; /* over the data socket threshold */
  cl_int err;
  uint32_t *a = svm_alloc (CL_MEM_READ_WRITE, N * 4);
  CHECK (clEnqueueSVMMap (q, CL_TRUE, CL_MAP_WRITE_INVALIDATE_REGION, a, N * 4,
                          0, NULL, NULL));
  for (uint32_t i = 0; i < N; ++i)
    a[i] = i + 17;
  CHECK (clEnqueueSVMUnmap (q, a, 0, NULL, NULL));
  cl_kernel k = create_kernel (prog, "twice");
  size_t g = N;
  CHECK (clSetKernelArgSVMPointer (k, 0, a));
  CHECK (clEnqueueNDRangeKernel (q, k, 1, NULL, &g, NULL, 0, NULL, NULL));
  cl_mem m = clCreateBuffer (ctx, CL_MEM_USE_HOST_PTR, N * 4, a, &err);
  CHECK_ERR (err, "clCreateBuffer on SVM memory");
  CHECK (clSetKernelArg (k, 0, sizeof (m), &m));
  CHECK (clEnqueueNDRangeKernel (q, k, 1, NULL, &g, NULL, 0, NULL, NULL));
  CHECK (clEnqueueSVMMap (q, CL_TRUE, CL_MAP_READ, a, N * 4, 0, NULL, NULL));
  for (uint32_t i = 0; i < N; ++i)
    if (a[i] != (i + 17) * 4)
      fail ("SVM then a buffer on it: element %u is %u, expected %u", i, a[i],
            (i + 17) * 4);
  CHECK (clEnqueueSVMUnmap (q, a, 0, NULL, NULL));
  CHECK (clFinish (q));
  clReleaseMemObject (m);
  clReleaseKernel (k);
  clSVMFree (ctx, a);
  note ("a kernel on SVM memory, then on a buffer made on it: both doubled");
}

static int freed_count;

static void CL_CALLBACK
count_freed (cl_command_queue queue, cl_uint n, void *ptrs[], void *user)
{
  (void)queue;
  freed_count += (int)n;
  for (cl_uint i = 0; i < n; ++i)
    clSVMFree ((cl_context)user, ptrs[i]);
}

/* clEnqueueSVMFree, with and without a callback, behind a kernel that uses
   the memory.  */
static void
test_enqueue_free (void)
{
  void *p[2] = { svm_alloc (CL_MEM_READ_WRITE, 4096),
                 svm_alloc (CL_MEM_READ_WRITE, 4096) };
  void *r = svm_alloc (CL_MEM_READ_WRITE, 4096);
  cl_kernel k = create_kernel (prog, "twice");
  CHECK (clSetKernelArgSVMPointer (k, 0, p[0]));
  size_t g = 1024;
  CHECK (clEnqueueNDRangeKernel (q, k, 1, NULL, &g, NULL, 0, NULL, NULL));
  CHECK (clEnqueueSVMFree (q, 2, p, count_freed, ctx, 0, NULL, NULL));
  CHECK (clEnqueueSVMFree (q, 1, &r, NULL, NULL, 0, NULL, NULL));
  CHECK (clFinish (q));
  if (freed_count != 2)
    fail ("clEnqueueSVMFree's callback freed %d pointers, expected 2",
          freed_count);
  /* the addresses can be had again */
  void *again = svm_alloc (CL_MEM_READ_WRITE, 3 * 4096);
  clSVMFree (ctx, again);
  clReleaseKernel (k);
  note ("clEnqueueSVMFree with a callback and without, behind a kernel");
}

static void
test_zero_size (void)
{
  void *p = clSVMAlloc (ctx, CL_MEM_READ_WRITE, 0, 0);
  if (p != NULL)
    fail ("a zero-size SVM allocation returned %p, expected NULL", p);
  /* one byte: a page of its own on both sides */
  char *c = svm_alloc (CL_MEM_READ_WRITE, 1);
  CHECK (clEnqueueSVMMemFill (q, c, "x", 1, 1, 0, NULL, NULL));
  char got = 0;
  CHECK (clEnqueueSVMMemcpy (q, CL_TRUE, &got, c, 1, 0, NULL, NULL));
  if (got != 'x')
    fail ("a one-byte allocation holds %#x", got);
  clSVMFree (ctx, c);
  note ("zero-size allocation: NULL; one byte: usable");
}

/* A launch carries every fine-grained allocation; one freed on another
   thread meanwhile must not make the server refuse the launch (it did when
   the free reached the server first), nor lose what the kernels did.  */
enum
{
  CHURN_ROUNDS = 40,
  CHURN_BATCH = 32,
  LAUNCHES = 1500
};

static int churn_done;

static void *
churn (void *arg)
{
  void *p[CHURN_BATCH];
  cl_svm_mem_flags f = CL_MEM_READ_WRITE | CL_MEM_SVM_FINE_GRAIN_BUFFER;
  (void)arg;
  for (int r = 0; r < CHURN_ROUNDS; ++r)
    {
      for (int i = 0; i < CHURN_BATCH; ++i)
        {
          p[i] = svm_alloc (f, 32 + 64 * i);
          memset (p[i], r, 32);
        }
      /* back to back: each free may cross a launch's packing */
      for (int i = 0; i < CHURN_BATCH; ++i)
        clSVMFree (ctx, p[i]);
    }
  __atomic_store_n (&churn_done, 1, __ATOMIC_RELEASE);
  return NULL;
}

static void
test_free_during_launch (void)
{
  if (!(fine_grained_caps () & CL_DEVICE_SVM_FINE_GRAIN_BUFFER))
    return;
  enum
  {
    N = 64
  };
  cl_svm_mem_flags f = CL_MEM_READ_WRITE | CL_MEM_SVM_FINE_GRAIN_BUFFER;
  uint32_t *v = svm_alloc (f, N * 4);
  memset (v, 0, N * 4);
  cl_kernel k = create_kernel (prog, "add_one");
  CHECK (clSetKernelArgSVMPointer (k, 0, v));
  size_t g = N;
  pthread_t t;
  if (pthread_create (&t, NULL, churn, NULL) != 0)
    fail ("pthread_create");
  unsigned launched = 0;
  /* at least LAUNCHES, and as long as the frees go on */
  while (launched < LAUNCHES
         || !__atomic_load_n (&churn_done, __ATOMIC_ACQUIRE))
    {
      cl_event e;
      cl_int st = CL_COMPLETE;
      CHECK (clEnqueueNDRangeKernel (q, k, 1, NULL, &g, NULL, 0, NULL, &e));
      ++launched;
      cl_int err = clWaitForEvents (1, &e);
      CHECK (clGetEventInfo (e, CL_EVENT_COMMAND_EXECUTION_STATUS,
                             sizeof (st), &st, NULL));
      if (err != CL_SUCCESS || st != CL_COMPLETE)
        fail ("launch %u beside frees on another thread: wait %d, status "
              "%d %s",
              launched, err, st, clerr (st));
      CHECK (clReleaseEvent (e));
    }
  pthread_join (t, NULL);
  for (uint32_t i = 0; i < N; ++i)
    if (v[i] != launched)
      fail ("%u launches beside frees on another thread: element %u is %u",
            launched, i, v[i]);
  note ("%u launches beside %u frees", launched, CHURN_ROUNDS * CHURN_BATCH);
  clReleaseKernel (k);
  clSVMFree (ctx, v);
}

int
main (int argc, char **argv)
{
  watchdog (300, "the whole test");
  char name[256];
  cl_int err;
  dev = open_test_device (argc, argv, name, sizeof (name), &ctx);
  cl_device_svm_capabilities caps = 0;
  CHECK (clGetDeviceInfo (dev, CL_DEVICE_SVM_CAPABILITIES, sizeof (caps),
                          &caps, NULL));
  if (!(caps & CL_DEVICE_SVM_COARSE_GRAIN_BUFFER))
    fail ("the device reports no coarse-grained SVM (%#llx)",
          (unsigned long long)caps);
  q = clCreateCommandQueue (ctx, dev, 0, &err);
  CHECK_ERR (err, "clCreateCommandQueue");
  prog = build_program (ctx, dev, src, "-cl-std=CL2.0");
  run_sub ("coarse-grained SVM", test_coarse, 120);
  run_sub ("fine-grained SVM", test_fine, 120);
  run_sub ("SVM copies and fills", test_copy_fill, 120);
  run_sub ("a buffer on SVM memory", test_buffer_on_svm, 60);
  run_sub ("clEnqueueSVMFree", test_enqueue_free, 60);
  run_sub ("zero-size SVM", test_zero_size, 60);
  run_sub ("frees on another thread while kernels launch",
           test_free_during_launch, 120);
  if (sub_hung)
    return sub_finish ("");
  clReleaseProgram (prog);
  clReleaseCommandQueue (q);
  clReleaseContext (ctx);
  return sub_finish (name);
}
