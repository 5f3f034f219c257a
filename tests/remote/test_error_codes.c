/* test_error_codes.c - errors through the remote driver are the same OpenCL
   codes the local device gives.

   Run through run_remote.sh with RUN_REMOTE_DEVICES="pthread remote": one
   platform with the local pthread device and the remote device (served by
   pocld's own pthread device).  Every check runs the same call on each
   device, in a context of its own (so context-wide limits are that device's),
   and requires (a) the expected code on the remote device and (b) the same
   code as the local device in this same run:

   - clBuildProgram of source with an undeclared identifier:
     CL_BUILD_PROGRAM_FAILURE, CL_PROGRAM_BUILD_STATUS = CL_BUILD_ERROR, and a
     non-empty CL_PROGRAM_BUILD_LOG that names the undeclared identifier;
   - clBuildProgram with an unknown option: same code as local (and an error);
   - clCreateKernel with a name the program lacks: CL_INVALID_KERNEL_NAME;
   - clEnqueueNDRangeKernel, global 100, local 7: CL_INVALID_WORK_GROUP_SIZE
     (OpenCL 1.2 uniform work-groups; the program is built -cl-std=CL1.2);
   - clEnqueueNDRangeKernel with an argument left unset:
     CL_INVALID_KERNEL_ARGS;
   - clSetKernelArg with a wrong index / a wrong scalar size:
     CL_INVALID_ARG_INDEX / CL_INVALID_ARG_SIZE;
   - clCreateBuffer of CL_DEVICE_MAX_MEM_ALLOC_SIZE + 1 bytes:
     CL_INVALID_BUFFER_SIZE (and both devices report the same max);
   - clEnqueueReadBuffer past the end (offset 1000 + 100 bytes of a
     1024-byte buffer, and 1 byte at offset 1024): CL_INVALID_VALUE;
   - clEnqueueWriteBuffer past the end: CL_INVALID_VALUE;
   - clEnqueueCopyBuffer with overlapping regions of one buffer:
     CL_MEM_COPY_OVERLAP;
   - clCreateProgramWithBinary of a garbage binary, then clBuildProgram of
     it: the first error is CL_INVALID_BINARY (at either step);
   - clGetKernelWorkGroupInfo of a kernel with static and argument local
     memory: the same work-group size, preferred multiple, local and private
     memory as the local device (what the device's compiler decided);
   - after all that, the remote device still runs a kernel correctly (the
     errors left no broken state behind).  */

#define TEST_NAME "error_codes"
#include "remote_test_util.c"

static const char *good_src
    = "__kernel void good (__global uint *p, uint v)\n"
      "{ p[get_global_id (0)] = v + (uint)get_global_id (0); }\n";

static const char *bad_src
    = "__kernel void bad (__global int *p)\n"
      "{ p[0] = undeclared_identifier_xyz42 + 1; }\n";

typedef struct
{
  const char *label;
  cl_device_id dev;
  cl_context ctx;
  cl_command_queue q;
  cl_program good;
  cl_kernel k;
  cl_mem buf;
} side;

static int failures = 0;

/* Compares a check's codes: remote must equal `want` (when want != 1) and
   the local code.  */
static void
compare (const char *what, cl_int local, cl_int remote, cl_int want)
{
  int ok = 1;
  if (want != 1 && remote != want)
    ok = 0;
  if (remote != local)
    ok = 0;
  if (want == 1 && remote == CL_SUCCESS)
    ok = 0;
  if (ok)
    printf ("%s: ok   %-58s local %d (%s), remote %d (%s)\n", TEST_NAME, what,
            local, clerr (local), remote, clerr (remote));
  else
    {
      printf ("%s: FAIL %-58s local %d (%s), remote %d (%s), expected %s\n",
              TEST_NAME, what, local, clerr (local), remote, clerr (remote),
              want == 1 ? "an error, the same on both" : clerr (want));
      ++failures;
    }
  fflush (stdout);
}

static void
setup (side *s, cl_device_id dev, const char *label)
{
  cl_int err;
  memset (s, 0, sizeof (*s));
  s->label = label;
  s->dev = dev;
  s->ctx = clCreateContext (NULL, 1, &dev, NULL, NULL, &err);
  CHECK_ERR (err, "clCreateContext");
  s->q = clCreateCommandQueue (s->ctx, dev, 0, &err);
  CHECK_ERR (err, "clCreateCommandQueue");
  s->good = build_program (s->ctx, dev, good_src, "-cl-std=CL1.2");
  s->k = create_kernel (s->good, "good");
  s->buf = create_buffer (s->ctx, CL_MEM_READ_WRITE, 1024, NULL);
}

/* Build of invalid source: the code, the status and the log.  */
static cl_int
bad_build (side *s, char **log_out, cl_build_status *bs)
{
  cl_int err;
  cl_program p = clCreateProgramWithSource (s->ctx, 1, &bad_src, NULL, &err);
  CHECK_ERR (err, "clCreateProgramWithSource(bad)");
  cl_int r = clBuildProgram (p, 1, &s->dev, NULL, NULL, NULL);
  *bs = CL_BUILD_NONE;
  CHECK (clGetProgramBuildInfo (p, s->dev, CL_PROGRAM_BUILD_STATUS,
                                sizeof (*bs), bs, NULL));
  *log_out = build_log (p, s->dev);
  clReleaseProgram (p);
  return r;
}

static cl_int
bad_option_build (side *s)
{
  cl_int err;
  cl_program p = clCreateProgramWithSource (s->ctx, 1, &good_src, NULL, &err);
  CHECK_ERR (err, "clCreateProgramWithSource(good)");
  cl_int r = clBuildProgram (p, 1, &s->dev, "-fno-such-option-xyz42", NULL,
                             NULL);
  clReleaseProgram (p);
  return r;
}

static cl_int
wrong_kernel_name (side *s)
{
  cl_int err = CL_SUCCESS;
  cl_kernel k = clCreateKernel (s->good, "no_such_kernel_xyz", &err);
  if (k)
    clReleaseKernel (k);
  return err;
}

static cl_int
bad_local_size (side *s)
{
  cl_uint v = 1;
  CHECK (clSetKernelArg (s->k, 0, sizeof (cl_mem), &s->buf));
  CHECK (clSetKernelArg (s->k, 1, sizeof (v), &v));
  size_t global = 100, local = 7;
  return clEnqueueNDRangeKernel (s->q, s->k, 1, NULL, &global, &local, 0,
                                 NULL, NULL);
}

static cl_int
unset_arg (side *s)
{
  cl_int err;
  cl_kernel k = clCreateKernel (s->good, "good", &err);
  CHECK_ERR (err, "clCreateKernel(good)");
  CHECK (clSetKernelArg (k, 0, sizeof (cl_mem), &s->buf));
  size_t global = 16;
  cl_int r = clEnqueueNDRangeKernel (s->q, k, 1, NULL, &global, NULL, 0, NULL,
                                     NULL);
  clFinish (s->q);
  clReleaseKernel (k);
  return r;
}

static cl_int
arg_index (side *s)
{
  cl_uint v = 0;
  return clSetKernelArg (s->k, 2, sizeof (v), &v);
}

static cl_int
arg_size (side *s)
{
  cl_ulong v = 0;
  return clSetKernelArg (s->k, 1, sizeof (v), &v);
}

static cl_ulong
max_alloc (side *s)
{
  cl_ulong m = 0;
  CHECK (clGetDeviceInfo (s->dev, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof (m), &m,
                          NULL));
  return m;
}

static cl_int
too_big_buffer (side *s)
{
  cl_int err = CL_SUCCESS;
  cl_mem m = clCreateBuffer (s->ctx, CL_MEM_READ_WRITE,
                             (size_t)max_alloc (s) + 1, NULL, &err);
  if (m)
    clReleaseMemObject (m);
  return err;
}

static cl_int
read_past_end (side *s, size_t off, size_t n)
{
  char host[256];
  return clEnqueueReadBuffer (s->q, s->buf, CL_TRUE, off, n, host, 0, NULL,
                              NULL);
}

static cl_int
write_past_end (side *s)
{
  char host[256];
  memset (host, 1, sizeof (host));
  return clEnqueueWriteBuffer (s->q, s->buf, CL_TRUE, 1000, 100, host, 0,
                               NULL, NULL);
}

static cl_int
copy_overlap (side *s)
{
  return clEnqueueCopyBuffer (s->q, s->buf, s->buf, 0, 100, 200, 0, NULL,
                              NULL);
}

/* Returns clCreateProgramWithBinary's code; *build gets clBuildProgram's
   (or 1 when there was no program to build).  */
static cl_int
garbage_binary (side *s, cl_int *build)
{
  unsigned char junk[512];
  for (size_t i = 0; i < sizeof (junk); ++i)
    junk[i] = (unsigned char)mix32 (9, (uint32_t)i);
  const unsigned char *bins[1] = { junk };
  size_t len = sizeof (junk);
  cl_int bin_status = CL_SUCCESS, err = CL_SUCCESS;
  cl_program p = clCreateProgramWithBinary (s->ctx, 1, &s->dev, &len, bins,
                                            &bin_status, &err);
  *build = 1;
  if (err != CL_SUCCESS)
    return err;
  *build = clBuildProgram (p, 1, &s->dev, NULL, NULL, NULL);
  clReleaseProgram (p);
  return err;
}

/* After the errors: the remote side still computes.  */
/* A kernel with static and argument local memory: its work-group info as
   the device's compiler decided it (the same device on both sides).  */
static const char *locals_src
    = "__kernel void locals (__global uint *o, __local uint *arg)\n"
      "{ __local uint fixed[96];\n"
      "  fixed[get_local_id (0)] = (uint)get_local_id (0);\n"
      "  arg[get_local_id (0)] = fixed[0];\n"
      "  barrier (CLK_LOCAL_MEM_FENCE);\n"
      "  o[get_global_id (0)] = arg[0] + fixed[1]; }\n";

static void
kernel_wg_info (side *s, size_t out[4])
{
  cl_program p = build_program (s->ctx, s->dev, locals_src, NULL);
  cl_kernel k = create_kernel (p, "locals");
  CHECK (clSetKernelArg (k, 1, 200, NULL));
  cl_ulong local = 0;
  CHECK (clGetKernelWorkGroupInfo (k, s->dev, CL_KERNEL_WORK_GROUP_SIZE,
                                   sizeof (size_t), &out[0], NULL));
  CHECK (clGetKernelWorkGroupInfo (
      k, s->dev, CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE,
      sizeof (size_t), &out[1], NULL));
  CHECK (clGetKernelWorkGroupInfo (k, s->dev, CL_KERNEL_LOCAL_MEM_SIZE,
                                   sizeof (local), &local, NULL));
  out[2] = (size_t)local;
  CHECK (clGetKernelWorkGroupInfo (k, s->dev, CL_KERNEL_PRIVATE_MEM_SIZE,
                                   sizeof (local), &local, NULL));
  out[3] = (size_t)local;
  clReleaseKernel (k);
  clReleaseProgram (p);
}

static void
still_works (side *s)
{
  cl_uint v = 0x1234u, got[64];
  CHECK (clSetKernelArg (s->k, 0, sizeof (cl_mem), &s->buf));
  CHECK (clSetKernelArg (s->k, 1, sizeof (v), &v));
  size_t global = 64, local = 8;
  CHECK (clEnqueueNDRangeKernel (s->q, s->k, 1, NULL, &global, &local, 0,
                                 NULL, NULL));
  CHECK (clEnqueueReadBuffer (s->q, s->buf, CL_TRUE, 0, sizeof (got), got, 0,
                              NULL, NULL));
  for (cl_uint i = 0; i < 64; ++i)
    if (got[i] != v + i)
      fail ("%s device after the error checks: element %u is 0x%x, expected "
            "0x%x",
            s->label, i, got[i], v + i);
}

int
main (void)
{
  watchdog (240, "the error-code checks");
  cl_device_id ldev = find_device (0), rdev = find_device (1);
  if (ldev == NULL)
    fail ("no local (non-remote) device: run with RUN_REMOTE_DEVICES=\"pthread "
          "remote\" (POCL_DEVICES=%s)",
          getenv ("POCL_DEVICES") ? getenv ("POCL_DEVICES") : "(unset)");
  rdev = need_remote_device ();
  char ln[256], rn[256];
  device_name (ldev, ln, sizeof (ln));
  device_name (rdev, rn, sizeof (rn));
  note ("local device '%s', remote device '%s'", ln, rn);

  side L, R;
  setup (&L, ldev, "local");
  setup (&R, rdev, "remote");

  {
    char *llog, *rlog;
    cl_build_status lbs, rbs;
    cl_int l = bad_build (&L, &llog, &lbs);
    cl_int r = bad_build (&R, &rlog, &rbs);
    compare ("clBuildProgram(invalid source)", l, r, CL_BUILD_PROGRAM_FAILURE);
    if (rbs != CL_BUILD_ERROR || lbs != CL_BUILD_ERROR)
      {
        printf ("%s: FAIL CL_PROGRAM_BUILD_STATUS after the failed build: "
                "local %d, remote %d, expected CL_BUILD_ERROR (%d)\n",
                TEST_NAME, lbs, rbs, CL_BUILD_ERROR);
        ++failures;
      }
    if (strlen (rlog) == 0
        || strstr (rlog, "undeclared_identifier_xyz42") == NULL)
      {
        printf ("%s: FAIL remote build log (%zu bytes) does not mention "
                "'undeclared_identifier_xyz42'; it is:\n%s\n(local log, %zu "
                "bytes:\n%s)\n",
                TEST_NAME, strlen (rlog), rlog, strlen (llog), llog);
        ++failures;
      }
    else
      printf ("%s: ok   remote build log (%zu bytes) names the error\n",
              TEST_NAME, strlen (rlog));
    free (llog);
    free (rlog);
  }
  compare ("clBuildProgram(unknown option)", bad_option_build (&L),
           bad_option_build (&R), 1);
  compare ("clCreateKernel(wrong name)", wrong_kernel_name (&L),
           wrong_kernel_name (&R), CL_INVALID_KERNEL_NAME);
  compare ("clEnqueueNDRangeKernel(global 100, local 7)", bad_local_size (&L),
           bad_local_size (&R), CL_INVALID_WORK_GROUP_SIZE);
  compare ("clEnqueueNDRangeKernel(argument 1 unset)", unset_arg (&L),
           unset_arg (&R), CL_INVALID_KERNEL_ARGS);
  compare ("clSetKernelArg(index 2 of 2)", arg_index (&L), arg_index (&R),
           CL_INVALID_ARG_INDEX);
  compare ("clSetKernelArg(8 bytes for a uint)", arg_size (&L), arg_size (&R),
           CL_INVALID_ARG_SIZE);
  {
    cl_ulong lm = max_alloc (&L), rm = max_alloc (&R);
    if (lm != rm)
      {
        printf ("%s: FAIL CL_DEVICE_MAX_MEM_ALLOC_SIZE local %llu, remote "
                "%llu\n",
                TEST_NAME, (unsigned long long)lm, (unsigned long long)rm);
        ++failures;
      }
    compare ("clCreateBuffer(MAX_MEM_ALLOC_SIZE + 1)", too_big_buffer (&L),
             too_big_buffer (&R), CL_INVALID_BUFFER_SIZE);
  }
  compare ("clEnqueueReadBuffer(1024-byte buffer, 1000 + 100)",
           read_past_end (&L, 1000, 100), read_past_end (&R, 1000, 100),
           CL_INVALID_VALUE);
  compare ("clEnqueueReadBuffer(1024-byte buffer, 1024 + 1)",
           read_past_end (&L, 1024, 1), read_past_end (&R, 1024, 1),
           CL_INVALID_VALUE);
  compare ("clEnqueueWriteBuffer(1024-byte buffer, 1000 + 100)",
           write_past_end (&L), write_past_end (&R), CL_INVALID_VALUE);
  compare ("clEnqueueCopyBuffer(same buffer, overlapping)", copy_overlap (&L),
           copy_overlap (&R), CL_MEM_COPY_OVERLAP);
  {
    /* The spec's code for a binary that is not one is CL_INVALID_BINARY,
       from clCreateProgramWithBinary or (if that cannot validate it, as a
       driver that must ask its server may not) from clBuildProgram: compare
       the first error of the create -> build sequence.  */
    cl_int lb, rb;
    cl_int lc = garbage_binary (&L, &lb), rc = garbage_binary (&R, &rb);
    note ("garbage binary: local create %d build %d, remote create %d build "
          "%d (1 = not built)",
          lc, lb, rc, rb);
    compare ("garbage binary: first error of create+build",
             lc != CL_SUCCESS ? lc : lb, rc != CL_SUCCESS ? rc : rb,
             CL_INVALID_BINARY);
  }

  {
    static const char *what[4]
        = { "CL_KERNEL_WORK_GROUP_SIZE",
            "CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE",
            "CL_KERNEL_LOCAL_MEM_SIZE (96 uints + a 200-byte argument)",
            "CL_KERNEL_PRIVATE_MEM_SIZE" };
    size_t l[4], r[4];
    kernel_wg_info (&L, l);
    kernel_wg_info (&R, r);
    for (int i = 0; i < 4; ++i)
      {
        int ok = l[i] == r[i] && (i != 2 || r[i] >= 96 * 4 + 200);
        printf ("%s: %s %-58s local %zu, remote %zu\n", TEST_NAME,
                ok ? "ok  " : "FAIL", what[i], l[i], r[i]);
        failures += !ok;
      }
  }

  still_works (&L);
  still_works (&R);
  note ("both devices still run a kernel correctly after the errors");

  side *sides[2] = { &L, &R };
  for (int i = 0; i < 2; ++i)
    {
      clReleaseMemObject (sides[i]->buf);
      clReleaseKernel (sides[i]->k);
      clReleaseProgram (sides[i]->good);
      clReleaseCommandQueue (sides[i]->q);
      clReleaseContext (sides[i]->ctx);
    }
  if (failures)
    fail ("%d error-code check(s) differ (see the FAIL lines above)",
          failures);
  printf ("%s: PASS: every error through the remote driver is the expected "
          "code and the same as the local device's\n",
          TEST_NAME);
  return 0;
}
