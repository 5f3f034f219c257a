/* usm_bench.c - what unified shared memory costs a kernel launch through
   remote (doc/device-info.md, "Unified shared memory"): a one-work-item
   kernel that increments the first int of its pointer argument, enqueued
   and waited for with clFinish, on a device allocation and on host and
   shared allocations of several sizes, natively and through remote in one
   run, next to the loopback TCP round trip (RTT) of the same run.  Through
   remote a host or shared allocation travels to the server with every
   kernel and what the kernel changed comes back; a device allocation stays
   there.

   Devices as in remote_bench.c (bench_common.h): the first "pocl-remote"
   device, and the first other one as the native reference.  A device
   without USM (PoCL's CPU device) is measured on its equivalents: host and
   shared allocations as fine-grained SVM, device ones as coarse-grained.
   After each series the host reads the counter of a host or shared
   allocation: it must count every launch.

     usm_bench [ITERATIONS]  */

#define CL_TARGET_OPENCL_VERSION 300
#define _GNU_SOURCE
#include "bench_common.h"
#include <CL/cl_ext.h>

typedef struct dev
{
  cl_device_id id;
  char name[256];
  cl_context ctx;
  cl_command_queue q;
  cl_kernel noop, touch;
  /* USM's functions, or NULL: SVM instead */
  clSharedMemAllocINTEL_fn shared;
  clHostMemAllocINTEL_fn host;
  clDeviceMemAllocINTEL_fn device;
  clMemBlockingFreeINTEL_fn free;
  clSetKernelArgMemPointerINTEL_fn arg;
} dev;

static const char *src = "__kernel void noop (void) {}\n"
                         "__kernel void touch (__global int *p) { p[0] += 1; }\n";

static void
setup (dev *d)
{
  cl_int err;
  cl_platform_id plat;
  d->ctx = clCreateContext (NULL, 1, &d->id, NULL, NULL, &err);
  CHECK (err);
  d->q = clCreateCommandQueue (d->ctx, d->id, 0, &err);
  CHECK (err);
  cl_program p = clCreateProgramWithSource (d->ctx, 1, &src, NULL, &err);
  CHECK (err);
  CHECK (clBuildProgram (p, 1, &d->id, NULL, NULL, NULL));
  d->noop = clCreateKernel (p, "noop", &err);
  CHECK (err);
  d->touch = clCreateKernel (p, "touch", &err);
  CHECK (err);
  clReleaseProgram (p);
  cl_device_unified_shared_memory_capabilities_intel caps = 0;
  CHECK (clGetDeviceInfo (d->id, CL_DEVICE_PLATFORM, sizeof (plat), &plat,
                          NULL));
  if (clGetDeviceInfo (d->id, CL_DEVICE_SINGLE_DEVICE_SHARED_MEM_CAPABILITIES_INTEL,
                       sizeof (caps), &caps, NULL)
          != CL_SUCCESS
      || caps == 0)
    return;
  d->shared = clGetExtensionFunctionAddressForPlatform (
      plat, "clSharedMemAllocINTEL");
  d->host
      = clGetExtensionFunctionAddressForPlatform (plat, "clHostMemAllocINTEL");
  d->device = clGetExtensionFunctionAddressForPlatform (
      plat, "clDeviceMemAllocINTEL");
  d->free = clGetExtensionFunctionAddressForPlatform (
      plat, "clMemBlockingFreeINTEL");
  d->arg = clGetExtensionFunctionAddressForPlatform (
      plat, "clSetKernelArgMemPointerINTEL");
  if (!d->shared || !d->host || !d->device || !d->free || !d->arg)
    d->shared = NULL;
}

enum kind
{
  DEVICE,
  HOST,
  SHARED
};
static const char *kind_names[] = { "device", "host", "shared" };

/* The median and minimum launch on an allocation of `kind` and `bytes`,
   us; checks the counter where the host can read it.  */
static stats
launch (dev *d, enum kind kind, size_t bytes, int iters)
{
  cl_int err = CL_SUCCESS;
  int *p;
  if (d->shared)
    p = kind == DEVICE ? d->device (d->ctx, d->id, NULL, bytes, 0, &err)
        : kind == HOST ? d->host (d->ctx, NULL, bytes, 0, &err)
                       : d->shared (d->ctx, d->id, NULL, bytes, 0, &err);
  else
    {
      cl_device_svm_capabilities svm = 0;
      CHECK (clGetDeviceInfo (d->id, CL_DEVICE_SVM_CAPABILITIES, sizeof (svm),
                              &svm, NULL));
      cl_svm_mem_flags f = CL_MEM_READ_WRITE;
      if (kind != DEVICE && (svm & CL_DEVICE_SVM_FINE_GRAIN_BUFFER))
        f |= CL_MEM_SVM_FINE_GRAIN_BUFFER;
      p = clSVMAlloc (d->ctx, f, bytes, 0);
    }
  CHECK (err);
  if (p == NULL)
    {
      fprintf (stderr, "%s: no %s allocation of %zu bytes\n", d->name,
               kind_names[kind], bytes);
      exit (1);
    }
  int zero = 0;
  if (d->shared)
    CHECK (d->arg (d->touch, 0, p));
  else
    CHECK (clSetKernelArgSVMPointer (d->touch, 0, p));
  if (kind != DEVICE)
    *p = zero;
  else if (d->shared)
    {
      cl_platform_id plat;
      CHECK (clGetDeviceInfo (d->id, CL_DEVICE_PLATFORM, sizeof (plat), &plat,
                              NULL));
      clEnqueueMemcpyINTEL_fn copy = clGetExtensionFunctionAddressForPlatform (
          plat, "clEnqueueMemcpyINTEL");
      CHECK (copy (d->q, CL_TRUE, p, &zero, sizeof (zero), 0, NULL, NULL));
    }
  else
    CHECK (clEnqueueSVMMemcpy (d->q, CL_TRUE, p, &zero, sizeof (zero), 0,
                               NULL, NULL));
  stats s = noop_series (d->q, d->touch, iters);
  if (kind != DEVICE && *p != iters + 200)
    {
      fprintf (stderr, "%s: the %s allocation counts %d launches of %d\n",
               d->name, kind_names[kind], *p, iters + 200);
      exit (1);
    }
  if (d->shared)
    CHECK (d->free (d->ctx, p));
  else
    clSVMFree (d->ctx, p);
  return s;
}

int
main (int argc, char **argv)
{
  int iters = argc > 1 ? atoi (argv[1]) : 500;
  bench_device r, l, peer;
  find_bench_devices (&r, &l, &peer);
  if (!r.id || !l.id)
    {
      fprintf (stderr, "need a pocl-remote device and a local device\n");
      return 1;
    }
  dev remote, local;
  memset (&remote, 0, sizeof (remote));
  memset (&local, 0, sizeof (local));
  remote.id = r.id;
  local.id = l.id;
  strcpy (remote.name, r.name);
  strcpy (local.name, l.name);
  setup (&remote);
  setup (&local);
  if (!remote.shared)
    {
      fprintf (stderr, "%s has no USM\n", remote.name);
      return 1;
    }
  printf ("remote: %s (USM)\nnative: %s (%s)\n", remote.name, local.name,
          local.shared ? "USM" : "SVM: fine-grained for host and shared");

  stats rtt = loopback_rtt (iters);
  stats ln = noop_series (local.q, local.noop, iters);
  stats rn = noop_series (remote.q, remote.noop, iters);
  printf ("\n%-26s %10s %10s %10s %12s\n", "launch + clFinish (us)", "native",
          "remote", "extra", "extra - RTT");
  printf ("%-26s %10s %10.1f\n", "loopback round trip (RTT)", "",
          rtt.median);
  printf ("%-26s %10.1f %10.1f %10.1f %12.1f\n", "no-op, no argument",
          ln.median, rn.median, rn.median - ln.median,
          rn.median - ln.median - rtt.median);
  static const struct
  {
    enum kind kind;
    size_t bytes;
  } cases[] = { { DEVICE, 16u << 20 }, { HOST, 4096 },   { SHARED, 4096 },
                { SHARED, 64u << 10 }, { SHARED, 1u << 20 },
                { SHARED, 16u << 20 } };
  for (size_t i = 0; i < sizeof (cases) / sizeof (cases[0]); ++i)
    {
      int n = cases[i].bytes >= (16u << 20) ? iters / 10 : iters;
      stats a = launch (&local, cases[i].kind, cases[i].bytes, n);
      stats b = launch (&remote, cases[i].kind, cases[i].bytes, n);
      char what[64];
      snprintf (what, sizeof (what), "%s, %zu KiB", kind_names[cases[i].kind],
                cases[i].bytes >> 10);
      printf ("%-26s %10.1f %10.1f %10.1f %12.1f\n", what, a.median,
              b.median, b.median - a.median, b.median - a.median - rtt.median);
    }
  printf ("(medians; extra: remote - native; a host or shared allocation "
          "travels with every kernel, a device allocation stays on the "
          "server)\n");
  return 0;
}
