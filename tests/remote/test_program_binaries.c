/* test_program_binaries.c - program binaries through a remote device
   behave as on a local one (run with the argument "local" for the same
   checks on the local device):
   - CL_PROGRAM_BINARIES asked for without CL_PROGRAM_BINARY_SIZES first;
   - a compiled object and a library, each recreated from its binary with
     clCreateProgramWithBinary, link into an executable that computes
     bit-exact results;
   (binaries pocld refuses before a vendor library sees them:
   test_hostile_limits.c, which speaks the protocol itself);
   - a zero-sized NDRange succeeds and runs nothing (OpenCL 2.1).  */

#define TEST_NAME "program_binaries"
#include "remote_test_util.c"

static cl_device_id dev;
static cl_context ctx;
static cl_command_queue q;

static const char *lib_src = "uint lib_fn (uint x) { return x * 7u + 1u; }\n";
static const char *main_src
    = "uint lib_fn (uint x);\n"
      "__kernel void k (__global uint *o)\n"
      "{ size_t i = get_global_id (0); o[i] = lib_fn ((uint)i) ^ 0x5au; }\n";

/* The binary of p, asked for without its size first when !sizes_first.  */
static unsigned char *
binary_of (cl_program p, size_t *size, int sizes_first)
{
  unsigned char *b;
  if (sizes_first)
    {
      CHECK (clGetProgramInfo (p, CL_PROGRAM_BINARY_SIZES, sizeof (*size),
                               size, NULL));
      b = xmalloc (*size);
    }
  else
    b = xmalloc (16 << 20);
  unsigned char *bs[1] = { b };
  CHECK (clGetProgramInfo (p, CL_PROGRAM_BINARIES, sizeof (bs), bs, NULL));
  if (!sizes_first)
    CHECK (clGetProgramInfo (p, CL_PROGRAM_BINARY_SIZES, sizeof (*size), size,
                             NULL));
  if (*size == 0)
    fail ("a binary of 0 bytes");
  return b;
}

static cl_program
from_binary (const unsigned char *b, size_t size, const char *what)
{
  cl_int err, st = -1;
  cl_program p = clCreateProgramWithBinary (ctx, 1, &dev, &size, &b, &st,
                                            &err);
  if (err != CL_SUCCESS || st != CL_SUCCESS)
    fail ("clCreateProgramWithBinary (%s, %zu bytes): %d (%s), status %d",
          what, size, err, clerr (err), st);
  return p;
}

static void
check_linked (cl_program exe, const char *what)
{
  cl_int err;
  cl_kernel k = create_kernel (exe, "k");
  cl_mem m = create_buffer (ctx, CL_MEM_READ_WRITE, 256 * 4, NULL);
  CHECK (clSetKernelArg (k, 0, sizeof (m), &m));
  size_t g = 256;
  CHECK (clEnqueueNDRangeKernel (q, k, 1, NULL, &g, NULL, 0, NULL, NULL));
  uint32_t o[256];
  err = clEnqueueReadBuffer (q, m, CL_TRUE, 0, sizeof (o), o, 0, NULL, NULL);
  CHECK_ERR (err, "clEnqueueReadBuffer");
  for (uint32_t i = 0; i < 256; ++i)
    if (o[i] != ((i * 7u + 1u) ^ 0x5au))
      fail ("%s: element %u is 0x%x", what, i, o[i]);
  clReleaseMemObject (m);
  clReleaseKernel (k);
}

static void
test_objects_from_binaries (void)
{
  cl_int err;
  cl_program pl = clCreateProgramWithSource (ctx, 1, &lib_src, NULL, &err);
  CHECK_ERR (err, "clCreateProgramWithSource(lib)");
  cl_program pm = clCreateProgramWithSource (ctx, 1, &main_src, NULL, &err);
  CHECK_ERR (err, "clCreateProgramWithSource(main)");
  CHECK (clCompileProgram (pl, 1, &dev, NULL, 0, NULL, NULL, NULL, NULL));
  CHECK (clCompileProgram (pm, 1, &dev, NULL, 0, NULL, NULL, NULL, NULL));
  cl_program lib
      = clLinkProgram (ctx, 1, &dev, "-create-library", 1, &pl, NULL, NULL,
                       &err);
  CHECK_ERR (err, "clLinkProgram(-create-library)");
  size_t sm, sl;
  /* the object's binary without its size first: PoCL's core crashed */
  unsigned char *bm = binary_of (pm, &sm, 0);
  unsigned char *bl = binary_of (lib, &sl, 1);
  clReleaseProgram (pl);
  clReleaseProgram (pm);
  clReleaseProgram (lib);

  cl_program rm = from_binary (bm, sm, "compiled object");
  cl_program rl = from_binary (bl, sl, "library");
  cl_program_binary_type tm = 0, tl = 0;
  CHECK (clGetProgramBuildInfo (rm, dev, CL_PROGRAM_BINARY_TYPE, sizeof (tm),
                                &tm, NULL));
  CHECK (clGetProgramBuildInfo (rl, dev, CL_PROGRAM_BINARY_TYPE, sizeof (tl),
                                &tl, NULL));
  if (tm != CL_PROGRAM_BINARY_TYPE_COMPILED_OBJECT
      || tl != CL_PROGRAM_BINARY_TYPE_LIBRARY)
    fail ("binary types from binaries: 0x%x and 0x%x", (unsigned)tm,
          (unsigned)tl);
  cl_program ins[2] = { rm, rl };
  cl_program exe = clLinkProgram (ctx, 1, &dev, NULL, 2, ins, NULL, NULL,
                                  &err);
  CHECK_ERR (err, "clLinkProgram(object and library from binaries)");
  check_linked (exe, "linked from binaries");
  /* the executable's binary goes round once more */
  size_t se;
  unsigned char *be = binary_of (exe, &se, 0);
  cl_program re = from_binary (be, se, "executable");
  CHECK (clBuildProgram (re, 1, &dev, NULL, NULL, NULL));
  check_linked (re, "executable from its binary");
  clReleaseProgram (re);
  clReleaseProgram (exe);
  clReleaseProgram (rm);
  clReleaseProgram (rl);
  free (bm);
  free (bl);
  free (be);
  note ("compiled object (%zu bytes) and library (%zu bytes) from their "
        "binaries linked; results bit-exact",
        sm, sl);
}

static void
test_zero_size (void)
{
  cl_kernel k;
  cl_int err;
  cl_program pl = clCreateProgramWithSource (ctx, 1, &lib_src, NULL, &err);
  CHECK_ERR (err, "clCreateProgramWithSource");
  CHECK (clCompileProgram (pl, 1, &dev, NULL, 0, NULL, NULL, NULL, NULL));
  cl_program pm = clCreateProgramWithSource (ctx, 1, &main_src, NULL, &err);
  CHECK_ERR (err, "clCreateProgramWithSource");
  CHECK (clCompileProgram (pm, 1, &dev, NULL, 0, NULL, NULL, NULL, NULL));
  cl_program ins[2] = { pm, pl };
  cl_program exe = clLinkProgram (ctx, 1, &dev, NULL, 2, ins, NULL, NULL,
                                  &err);
  CHECK_ERR (err, "clLinkProgram");
  k = create_kernel (exe, "k");
  uint32_t init[16];
  for (int i = 0; i < 16; ++i)
    init[i] = 0xC0DE0000u + (uint32_t)i;
  cl_mem m = buffer_from (ctx, q, CL_MEM_READ_WRITE, sizeof (init), init);
  CHECK (clSetKernelArg (k, 0, sizeof (m), &m));
  size_t dims[3][3] = { { 0, 1, 1 }, { 4, 0, 1 }, { 4, 4, 0 } };
  for (cl_uint d = 1; d <= 3; ++d)
    {
      cl_event ev;
      err = clEnqueueNDRangeKernel (q, k, d, NULL, dims[d - 1], NULL, 0, NULL,
                                    &ev);
      if (err != CL_SUCCESS)
        fail ("a zero-sized %u-D NDRange returned %d (%s)", d, err,
              clerr (err));
      CHECK (clWaitForEvents (1, &ev));
      if (event_status (ev) != CL_COMPLETE)
        fail ("a zero-sized NDRange's event is %d", event_status (ev));
      clReleaseEvent (ev);
    }
  uint32_t back[16];
  CHECK (clEnqueueReadBuffer (q, m, CL_TRUE, 0, sizeof (back), back, 0, NULL,
                              NULL));
  if (memcmp (back, init, sizeof (back)) != 0)
    fail ("a zero-sized NDRange wrote to its buffer");
  clReleaseMemObject (m);
  clReleaseKernel (k);
  clReleaseProgram (exe);
  clReleaseProgram (pm);
  clReleaseProgram (pl);
  note ("zero-sized NDRanges in 1, 2 and 3 dimensions completed, nothing "
        "written");
}

int
main (int argc, char **argv)
{
  watchdog (120, "setup");
  char name[256];
  cl_int err;
  dev = open_test_device (argc, argv, name, sizeof (name), &ctx);
  q = clCreateCommandQueue (ctx, dev, 0, &err);
  CHECK_ERR (err, "clCreateCommandQueue");
  run_sub ("compiled object and library from binaries",
           test_objects_from_binaries, 120);
  run_sub ("zero-sized NDRange", test_zero_size, 120);
  if (sub_hung)
    return sub_finish ("");
  clFinish (q);
  clReleaseCommandQueue (q);
  clReleaseContext (ctx);
  return sub_finish (name);
}
