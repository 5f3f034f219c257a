/* test_builtin_kernels.c - built-in kernels through remote as on the local
   device (run with the argument "local" for the same checks there): the
   device's CL_DEVICE_BUILT_IN_KERNELS (PoCL's CPU list) and its _WITH_VERSION
   form; a program of pocl.add.i8 and org.khronos.openvx.scale_image.nn.u8
   made with clCreateProgramWithBuiltInKernels and built; its kernels' names,
   argument counts and argument info (names, type names, qualifiers); both
   kernels run, results checked bit for bit against the host; and the error
   codes for a name the device does not offer and for NULL, empty and
   name-less lists.  */

#define TEST_NAME "builtin_kernels"
#include "remote_test_util.c"

/* What PoCL 3.1's CPU devices offer (lib/CL/devices/common.c).  */
static const char expected_list[]
    = "pocl.add.i8;org.khronos.openvx.scale_image.nn.u8;"
      "org.khronos.openvx.scale_image.bl.u8;"
      "org.khronos.openvx.tensor_convert_depth.wrap.u8.f32";
static const char program_names[]
    = "pocl.add.i8;org.khronos.openvx.scale_image.nn.u8";

static cl_device_id dev;
static cl_context ctx;
static cl_command_queue q;
static cl_program prog;

static void
test_device_list (void)
{
  char list[1024] = { 0 };
  size_t n = 0;
  CHECK (clGetDeviceInfo (dev, CL_DEVICE_BUILT_IN_KERNELS, sizeof (list),
                          list, &n));
  if (strcmp (list, expected_list) != 0 || n != strlen (expected_list) + 1)
    fail ("CL_DEVICE_BUILT_IN_KERNELS is '%s' (%zu bytes), expected '%s'",
          list, n, expected_list);
  cl_name_version nv[8];
  CHECK (clGetDeviceInfo (dev, CL_DEVICE_BUILT_IN_KERNELS_WITH_VERSION,
                          sizeof (nv), nv, &n));
  if (n != 4 * sizeof (cl_name_version))
    fail ("CL_DEVICE_BUILT_IN_KERNELS_WITH_VERSION has %zu bytes, expected "
          "4 entries",
          n);
  const char *p = expected_list;
  for (int i = 0; i < 4; ++i)
    {
      size_t len = strcspn (p, ";");
      if (strlen (nv[i].name) != len || strncmp (nv[i].name, p, len) != 0
          || nv[i].version != CL_MAKE_VERSION (1, 2, 0))
        fail ("built-in kernel %d with version is '%s' %#x", i, nv[i].name,
              nv[i].version);
      p += len + 1;
    }
  cl_device_type type = 0;
  CHECK (clGetDeviceInfo (dev, CL_DEVICE_TYPE, sizeof (type), &type, NULL));
  if (type != CL_DEVICE_TYPE_CPU)
    fail ("CL_DEVICE_TYPE is %#llx, expected the server's CPU",
          (unsigned long long)type);
  note ("CL_DEVICE_BUILT_IN_KERNELS '%s', 4 with version 1.2.0", list);
}

static void
test_program (void)
{
  char names[256] = { 0 };
  size_t nk = 0;
  cl_program_binary_type bt = 0;
  CHECK (clGetProgramInfo (prog, CL_PROGRAM_NUM_KERNELS, sizeof (nk), &nk,
                           NULL));
  CHECK (clGetProgramInfo (prog, CL_PROGRAM_KERNEL_NAMES, sizeof (names),
                           names, NULL));
  CHECK (clGetProgramBuildInfo (prog, dev, CL_PROGRAM_BINARY_TYPE,
                                sizeof (bt), &bt, NULL));
  if (nk != 2 || strcmp (names, program_names) != 0
      || bt != CL_PROGRAM_BINARY_TYPE_NONE)
    fail ("the program has %zu kernels '%s', binary type %#x; expected 2 "
          "'%s', none",
          nk, names, (unsigned)bt, program_names);
  cl_kernel ks[4];
  cl_uint got = 0;
  CHECK (clCreateKernelsInProgram (prog, 4, ks, &got));
  if (got != 2)
    fail ("clCreateKernelsInProgram made %u kernels, expected 2", got);
  for (cl_uint i = 0; i < got; ++i)
    {
      char kn[128] = { 0 };
      CHECK (clGetKernelInfo (ks[i], CL_KERNEL_FUNCTION_NAME, sizeof (kn), kn,
                              NULL));
      if (strncmp (kn, i == 0 ? "pocl.add.i8" : program_names + 12, 64) != 0)
        fail ("kernel %u of clCreateKernelsInProgram is '%s'", i, kn);
      clReleaseKernel (ks[i]);
    }
  note ("program: 2 kernels '%s', binary type NONE", names);
}

typedef struct arg_expect
{
  const char *name, *type_name;
  cl_kernel_arg_address_qualifier aq;
  cl_kernel_arg_type_qualifier tq;
} arg_expect;

static void
check_args (cl_kernel k, const char *kname, const arg_expect *a, cl_uint n)
{
  cl_uint num = 0;
  CHECK (clGetKernelInfo (k, CL_KERNEL_NUM_ARGS, sizeof (num), &num, NULL));
  if (num != n)
    fail ("%s has %u arguments, expected %u", kname, num, n);
  for (cl_uint i = 0; i < n; ++i)
    {
      char name[64] = { 0 }, type[64] = { 0 };
      cl_kernel_arg_address_qualifier aq = 0;
      cl_kernel_arg_access_qualifier acc = 0;
      cl_kernel_arg_type_qualifier tq = 0;
      CHECK (clGetKernelArgInfo (k, i, CL_KERNEL_ARG_NAME, sizeof (name), name,
                                 NULL));
      CHECK (clGetKernelArgInfo (k, i, CL_KERNEL_ARG_TYPE_NAME, sizeof (type),
                                 type, NULL));
      CHECK (clGetKernelArgInfo (k, i, CL_KERNEL_ARG_ADDRESS_QUALIFIER,
                                 sizeof (aq), &aq, NULL));
      CHECK (clGetKernelArgInfo (k, i, CL_KERNEL_ARG_ACCESS_QUALIFIER,
                                 sizeof (acc), &acc, NULL));
      CHECK (clGetKernelArgInfo (k, i, CL_KERNEL_ARG_TYPE_QUALIFIER,
                                 sizeof (tq), &tq, NULL));
      if (strcmp (name, a[i].name) != 0 || strcmp (type, a[i].type_name) != 0
          || aq != a[i].aq || acc != CL_KERNEL_ARG_ACCESS_NONE
          || tq != a[i].tq)
        fail ("%s argument %u: '%s' of type '%s', address %#x, access %#x, "
              "type qualifiers %#llx; expected '%s' '%s' %#x %#x %#llx",
              kname, i, name, type, aq, acc, (unsigned long long)tq,
              a[i].name, a[i].type_name, a[i].aq, CL_KERNEL_ARG_ACCESS_NONE,
              (unsigned long long)a[i].tq);
    }
  cl_int err = clGetKernelArgInfo (k, n, CL_KERNEL_ARG_NAME, 0, NULL, NULL);
  if (err != CL_INVALID_ARG_INDEX)
    fail ("%s: argument info of index %u returned %d (%s)", kname, n, err,
          clerr (err));
}

#define G CL_KERNEL_ARG_ADDRESS_GLOBAL
#define P CL_KERNEL_ARG_ADDRESS_PRIVATE
#define IN (CL_KERNEL_ARG_TYPE_CONST | CL_KERNEL_ARG_TYPE_RESTRICT)
#define OUT CL_KERNEL_ARG_TYPE_RESTRICT

static void
test_add_i8 (void)
{
  enum
  {
    N = 4096
  };
  static const arg_expect args[3] = { { "input1", "char*", G, IN },
                                      { "input2", "char*", G, IN },
                                      { "output", "char*", G, OUT } };
  cl_kernel k = create_kernel (prog, "pocl.add.i8");
  check_args (k, "pocl.add.i8", args, 3);
  static signed char a[N], b[N], out[N];
  for (int i = 0; i < N; ++i)
    {
      a[i] = (signed char)(i * 37 + 11);
      b[i] = (signed char)(i * 101 - 7);
    }
  memset (out, 0x5a, sizeof (out));
  cl_mem ba = create_buffer (ctx, CL_MEM_COPY_HOST_PTR, N, a);
  cl_mem bb = create_buffer (ctx, CL_MEM_COPY_HOST_PTR, N, b);
  cl_mem bo = create_buffer (ctx, CL_MEM_READ_WRITE, N, NULL);
  CHECK (clSetKernelArg (k, 0, sizeof (cl_mem), &ba));
  CHECK (clSetKernelArg (k, 1, sizeof (cl_mem), &bb));
  CHECK (clSetKernelArg (k, 2, sizeof (cl_mem), &bo));
  size_t g = N;
  CHECK (clEnqueueNDRangeKernel (q, k, 1, NULL, &g, NULL, 0, NULL, NULL));
  CHECK (clEnqueueReadBuffer (q, bo, CL_TRUE, 0, N, out, 0, NULL, NULL));
  for (int i = 0; i < N; ++i)
    if (out[i] != (signed char)(a[i] + b[i]))
      fail ("pocl.add.i8: byte %d is %d, expected %d + %d", i, out[i], a[i],
            b[i]);
  clReleaseMemObject (ba);
  clReleaseMemObject (bb);
  clReleaseMemObject (bo);
  clReleaseKernel (k);
  note ("pocl.add.i8: argument info as PoCL's, %d bytes added with wrap", N);
}

/* The kernel's own arithmetic (common_builtin_kernels.cl): nearest pixel,
   indices x-major as there.  */
static unsigned char
scale_nn (const unsigned char *in, int x, int y, float ws, float hs, int iw)
{
  float xs = ((float)x + 0.5f) * ws - 0.5f, ys = ((float)y + 0.5f) * hs - 0.5f;
  /* both are positive here: truncation is floor */
  float xm = (float)(int)xs, ym = (float)(int)ys;
  int x1 = (int)xm, y1 = (int)ym;
  if (xs - xm >= 0.5f)
    x1++;
  if (ys - ym >= 0.5f)
    y1++;
  return in[x1 * iw + y1];
}

static void
test_scale_nn (void)
{
  enum
  {
    IW = 32,
    OW = 16
  };
  static const arg_expect args[6]
      = { { "input", "unsigned char*", G, IN },
          { "output", "unsigned char*", G, OUT },
          { "width_scale", "float", P, CL_KERNEL_ARG_TYPE_NONE },
          { "height_scale", "float", P, CL_KERNEL_ARG_TYPE_NONE },
          { "input_width", "int", P, CL_KERNEL_ARG_TYPE_NONE },
          { "input_height", "int", P, CL_KERNEL_ARG_TYPE_NONE } };
  const char *kname = "org.khronos.openvx.scale_image.nn.u8";
  cl_kernel k = create_kernel (prog, kname);
  check_args (k, kname, args, 6);
  static unsigned char in[IW * IW], out[OW * OW];
  for (int i = 0; i < IW * IW; ++i)
    in[i] = (unsigned char)(i * 7 + i / IW);
  cl_mem bi = create_buffer (ctx, CL_MEM_COPY_HOST_PTR, sizeof (in), in);
  cl_mem bo = create_buffer (ctx, CL_MEM_READ_WRITE, sizeof (out), NULL);
  float scale = (float)IW / OW;
  cl_int w = IW;
  CHECK (clSetKernelArg (k, 0, sizeof (cl_mem), &bi));
  CHECK (clSetKernelArg (k, 1, sizeof (cl_mem), &bo));
  CHECK (clSetKernelArg (k, 2, sizeof (float), &scale));
  CHECK (clSetKernelArg (k, 3, sizeof (float), &scale));
  CHECK (clSetKernelArg (k, 4, sizeof (cl_int), &w));
  CHECK (clSetKernelArg (k, 5, sizeof (cl_int), &w));
  cl_int err = clSetKernelArg (k, 4, 8, &w);
  if (err != CL_INVALID_ARG_SIZE)
    fail ("an 8-byte value for an int argument returned %d (%s)", err,
          clerr (err));
  size_t g[3] = { OW, OW, 1 };
  CHECK (clEnqueueNDRangeKernel (q, k, 3, NULL, g, NULL, 0, NULL, NULL));
  CHECK (clEnqueueReadBuffer (q, bo, CL_TRUE, 0, sizeof (out), out, 0, NULL,
                             NULL));
  for (int x = 0; x < OW; ++x)
    for (int y = 0; y < OW; ++y)
      {
        unsigned char want = scale_nn (in, x, y, scale, scale, IW);
        if (out[x * OW + y] != want)
          fail ("%s: pixel (%d, %d) is %u, expected %u", kname, x, y,
                out[x * OW + y], want);
      }
  clReleaseMemObject (bi);
  clReleaseMemObject (bo);
  clReleaseKernel (k);
  note ("%s: argument info as PoCL's, %dx%d -> %dx%d bit-exact", kname, IW,
        IW, OW, OW);
}

static void
expect_refused (const char *names, const char *what)
{
  cl_int err = CL_SUCCESS;
  cl_program p = clCreateProgramWithBuiltInKernels (ctx, 1, &dev, names, &err);
  if (p != NULL || err != CL_INVALID_VALUE)
    fail ("clCreateProgramWithBuiltInKernels with %s returned %p, %d (%s); "
          "expected CL_INVALID_VALUE",
          what, (void *)p, err, clerr (err));
}

static void
test_errors (void)
{
  expect_refused ("pocl.no.such.kernel", "a name the device does not offer");
  expect_refused ("pocl.add.i8;pocl.add.i9", "one offered name, one not");
  expect_refused (NULL, "NULL names");
  expect_refused ("", "an empty list");
  expect_refused (";;", "a list of separators only");
  cl_int err = CL_SUCCESS;
  cl_program p
      = clCreateProgramWithBuiltInKernels (ctx, 0, NULL, "pocl.add.i8", &err);
  if (p != NULL || err != CL_INVALID_VALUE)
    fail ("clCreateProgramWithBuiltInKernels without devices returned %d "
          "(%s)",
          err, clerr (err));
  cl_kernel k = clCreateKernel (prog, "pocl.mul.i8", &err);
  if (k != NULL || err != CL_INVALID_KERNEL_NAME)
    fail ("clCreateKernel of a built-in kernel not in the program returned "
          "%d (%s)",
          err, clerr (err));
  note ("unknown names, NULL, empty and separator-only lists: "
        "CL_INVALID_VALUE; a kernel not in the program: "
        "CL_INVALID_KERNEL_NAME");
}

int
main (int argc, char **argv)
{
  watchdog (300, "the whole test");
  char name[256];
  cl_int err;
  dev = open_test_device (argc, argv, name, sizeof (name), &ctx);
  q = clCreateCommandQueue (ctx, dev, 0, &err);
  CHECK_ERR (err, "clCreateCommandQueue");
  prog = clCreateProgramWithBuiltInKernels (ctx, 1, &dev, program_names, &err);
  CHECK_ERR (err, "clCreateProgramWithBuiltInKernels");
  err = clBuildProgram (prog, 1, &dev, NULL, NULL, NULL);
  if (err != CL_SUCCESS)
    {
      char *log = build_log (prog, dev);
      fail ("clBuildProgram of built-in kernels returned %d (%s); log:\n%s",
            err, clerr (err), log);
    }
  run_sub ("the device's built-in kernels", test_device_list, 60);
  run_sub ("a program of built-in kernels", test_program, 60);
  run_sub ("pocl.add.i8", test_add_i8, 60);
  run_sub ("org.khronos.openvx.scale_image.nn.u8", test_scale_nn, 60);
  run_sub ("refused built-in kernel names", test_errors, 60);
  if (sub_hung)
    return sub_finish ("");
  clReleaseProgram (prog);
  clReleaseCommandQueue (q);
  clReleaseContext (ctx);
  return sub_finish (name);
}
