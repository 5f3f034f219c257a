/* test_il_programs.c - SPIR-V programs through a remote device as on a
   local one (run with the argument "local" for the same checks on the local
   device):
   - CL_DEVICE_IL_VERSION, CL_DEVICE_ILS_WITH_VERSION and cl_khr_il_program
     name SPIR-V; through remote, byte for byte what the server's device
     answers, which the client must see too as a local device of the same
     name (argument "remote"; "remote-only" where it cannot, e.g. another
     vendor's server);
   - a program from clCreateProgramWithIL answers CL_PROGRAM_IL with the
     bytes it was given, builds, and its kernel's results are checked bit for
     bit: with the specialization constant's default, then set with
     clSetProgramSpecializationConstant, then set again and rebuilt;
   - clCompileProgram of the IL with a constant set, then clLinkProgram;
   - the module as a binary (clCreateProgramWithBinary);
   - the error codes of a wrong constant size, an unknown id and IL that is
     not SPIR-V.
   With the argument "no-il" (through remote) or "no-il-local", on the first
   CUSTOM device, which has no SPIR-V: no IL is advertised and
   clCreateProgramWithIL is CL_INVALID_OPERATION.
   Usage: test_il_programs local|remote|remote-only|no-il|no-il-local
   MODULE.spv
   (the module: tests/remote/il_programs.cl, made at build time with clang
   -target spir64 and llvm-spirv).  */

#define TEST_NAME "il_programs"
#include "remote_test_util.c"

/* il_programs.cl: out[i] = in[i] * SpecId 5 (uint, default 3) + GOLDEN */
#define SPEC_ID 5u
#define SPEC_DEFAULT 3u
#define GOLDEN 0x9e3779b9u
#define N 1024

static cl_device_id dev;
static cl_context ctx;
static cl_command_queue q;
static unsigned char *il;
static size_t il_size;
static int remote_mode;

static unsigned char *
read_file (const char *path, size_t *size)
{
  FILE *f = fopen (path, "rb");
  if (f == NULL)
    fail ("cannot open %s", path);
  unsigned char *b = xmalloc (1 << 20);
  *size = fread (b, 1, 1 << 20, f);
  fclose (f);
  if (*size == 0 || *size == 1 << 20)
    fail ("%s: %zu bytes", path, *size);
  return b;
}

static char *
info_string (cl_device_id d, cl_device_info param, size_t *n)
{
  CHECK (clGetDeviceInfo (d, param, 0, NULL, n));
  char *s = xmalloc (*n + 1);
  CHECK (clGetDeviceInfo (d, param, *n, s, NULL));
  s[*n] = 0;
  return s;
}

static int
has_extension (cl_device_id d, const char *name)
{
  size_t n;
  char *ext = info_string (d, CL_DEVICE_EXTENSIONS, &n);
  size_t len = strlen (name);
  int found = 0;
  for (const char *p = ext; (p = strstr (p, name)) != NULL; p += len)
    if ((p == ext || p[-1] == ' ') && (p[len] == ' ' || p[len] == 0))
      found = 1;
  free (ext);
  return found;
}

static void
test_queries (void)
{
  size_t n, ils_n;
  char *v = info_string (dev, CL_DEVICE_IL_VERSION, &n);
  if (strstr (v, "SPIR-V") == NULL || n != strlen (v) + 1)
    fail ("CL_DEVICE_IL_VERSION is '%s' (%zu bytes), expected SPIR-V", v, n);
  cl_name_version ils[16];
  CHECK (clGetDeviceInfo (dev, CL_DEVICE_ILS_WITH_VERSION, sizeof (ils), ils,
                          &ils_n));
  if (ils_n == 0 || ils_n % sizeof (cl_name_version) != 0)
    fail ("CL_DEVICE_ILS_WITH_VERSION has %zu bytes", ils_n);
  for (size_t i = 0; i < ils_n / sizeof (cl_name_version); ++i)
    if (strcmp (ils[i].name, "SPIR-V") != 0
        || CL_VERSION_MAJOR (ils[i].version) != 1)
      fail ("CL_DEVICE_ILS_WITH_VERSION entry %zu is '%s' %#x", i,
            ils[i].name, ils[i].version);
  if (!has_extension (dev, "cl_khr_il_program"))
    fail ("cl_khr_il_program is not among the device's extensions");
  note ("CL_DEVICE_IL_VERSION '%s', %zu with version", v,
        ils_n / sizeof (cl_name_version));
  if (remote_mode)
    {
      /* the server's device, of the same name without the remote part */
      char rname[512], lname[512];
      device_name (dev, rname, sizeof (rname));
      char *cut = strstr (rname, " (" REMOTE_NAME_PART);
      if (cut != NULL)
        *cut = 0;
      cl_device_id local = find_device (0);
      if (local != NULL)
        device_name (local, lname, sizeof (lname));
      if (local == NULL || strcmp (lname, rname) != 0)
        fail ("no local device '%s' to compare with", rname);
      size_t ln, lils_n;
      char *lv = info_string (local, CL_DEVICE_IL_VERSION, &ln);
      cl_name_version lils[16];
      CHECK (clGetDeviceInfo (local, CL_DEVICE_ILS_WITH_VERSION,
                              sizeof (lils), lils, &lils_n));
      if (ln != n || memcmp (lv, v, n) != 0 || lils_n != ils_n
          || memcmp (lils, ils, ils_n) != 0)
        fail ("the remote device answers '%s' and %zu bytes of versions; "
              "the local device '%s' and %zu bytes",
              v, ils_n, lv, lils_n);
      free (lv);
    }
  free (v);
}

/* Runs "scale" of p over 0..N-1 and checks out[i] = i * factor + GOLDEN.  */
static void
run_and_check (cl_program p, cl_uint factor, const char *what)
{
  cl_uint in[N], out[N];
  for (cl_uint i = 0; i < N; ++i)
    in[i] = i * 2654435761u;
  cl_mem a = buffer_from (ctx, q, CL_MEM_READ_ONLY, sizeof (in), in);
  cl_mem b = create_buffer (ctx, CL_MEM_WRITE_ONLY, sizeof (out), NULL);
  cl_kernel k = create_kernel (p, "scale");
  CHECK (clSetKernelArg (k, 0, sizeof (a), &a));
  CHECK (clSetKernelArg (k, 1, sizeof (b), &b));
  size_t gws = N;
  CHECK (clEnqueueNDRangeKernel (q, k, 1, NULL, &gws, NULL, 0, NULL, NULL));
  CHECK (clEnqueueReadBuffer (q, b, CL_TRUE, 0, sizeof (out), out, 0, NULL,
                              NULL));
  for (cl_uint i = 0; i < N; ++i)
    if (out[i] != in[i] * factor + GOLDEN)
      fail ("%s: out[%u] = %#x, expected %#x (factor %u)", what, i, out[i],
            in[i] * factor + GOLDEN, factor);
  clReleaseKernel (k);
  clReleaseMemObject (a);
  clReleaseMemObject (b);
}

static void
build_or_fail (cl_program p, const char *what)
{
  cl_int err = clBuildProgram (p, 1, &dev, NULL, NULL, NULL);
  if (err != CL_SUCCESS)
    fail ("%s: clBuildProgram returned %d (%s); log:\n%s", what, err,
          clerr (err), build_log (p, dev));
}

static cl_program
from_il (void)
{
  cl_int err;
  cl_program p = clCreateProgramWithIL (ctx, il, il_size, &err);
  CHECK_ERR (err, "clCreateProgramWithIL");
  return p;
}

static void
test_program_il (void)
{
  cl_program p = from_il ();
  size_t n = 0;
  CHECK (clGetProgramInfo (p, CL_PROGRAM_IL, 0, NULL, &n));
  unsigned char *back = xmalloc (n);
  CHECK (clGetProgramInfo (p, CL_PROGRAM_IL, n, back, NULL));
  if (n != il_size || memcmp (back, il, n) != 0)
    fail ("CL_PROGRAM_IL: %zu bytes, not the %zu given", n, il_size);
  free (back);
  build_or_fail (p, "the module");
  run_and_check (p, SPEC_DEFAULT, "the constant's default");
  /* a source program has no IL */
  cl_program s = build_program (ctx, dev, "kernel void k(void) {}", NULL);
  CHECK (clGetProgramInfo (s, CL_PROGRAM_IL, 0, NULL, &n));
  if (n != 0)
    fail ("CL_PROGRAM_IL of a source program: %zu bytes", n);
  clReleaseProgram (s);
  clReleaseProgram (p);
}

static void
test_spec_constants (void)
{
  cl_program p = from_il ();
  cl_uint f = 7;
  CHECK (clSetProgramSpecializationConstant (p, SPEC_ID, sizeof (f), &f));
  build_or_fail (p, "constant 7");
  run_and_check (p, 7, "constant 7");
  /* set again, built again: the new value */
  f = 0x10001;
  CHECK (clSetProgramSpecializationConstant (p, SPEC_ID, sizeof (f), &f));
  build_or_fail (p, "constant 0x10001");
  run_and_check (p, 0x10001, "constant 0x10001, rebuilt");
  clReleaseProgram (p);
}

static void
test_compile_link (void)
{
  cl_int err;
  cl_program p = from_il ();
  cl_uint f = 11;
  CHECK (clSetProgramSpecializationConstant (p, SPEC_ID, sizeof (f), &f));
  err = clCompileProgram (p, 1, &dev, NULL, 0, NULL, NULL, NULL, NULL);
  if (err != CL_SUCCESS)
    fail ("clCompileProgram of the module returned %d (%s); log:\n%s", err,
          clerr (err), build_log (p, dev));
  cl_program linked = clLinkProgram (ctx, 1, &dev, NULL, 1, &p, NULL, NULL,
                                     &err);
  if (err != CL_SUCCESS)
    fail ("clLinkProgram of the compiled module returned %d (%s)", err,
          clerr (err));
  run_and_check (linked, 11, "compiled with constant 11, linked");
  clReleaseProgram (linked);
  clReleaseProgram (p);
}

static void
test_binary (void)
{
  cl_int err, status = CL_INVALID_VALUE;
  const unsigned char *bins[1] = { il };
  cl_program p = clCreateProgramWithBinary (ctx, 1, &dev, &il_size, bins,
                                            &status, &err);
  CHECK_ERR (err, "clCreateProgramWithBinary of the module");
  CHECK_ERR (status, "its binary status");
  build_or_fail (p, "the module as a binary");
  run_and_check (p, SPEC_DEFAULT, "the module as a binary");
  clReleaseProgram (p);
}

static void
test_errors (void)
{
  cl_int err;
  cl_program p = from_il ();
  cl_ushort small = 1;
  err = clSetProgramSpecializationConstant (p, SPEC_ID, sizeof (small),
                                            &small);
  if (err != CL_INVALID_VALUE)
    fail ("a 2-byte value for a 4-byte constant: %d (%s), expected "
          "CL_INVALID_VALUE",
          err, clerr (err));
  cl_uint f = 1;
  err = clSetProgramSpecializationConstant (p, 77, sizeof (f), &f);
  if (err != CL_INVALID_SPEC_ID)
    fail ("an unknown constant id: %d (%s), expected CL_INVALID_SPEC_ID", err,
          clerr (err));
  clReleaseProgram (p);
  /* a module's length in bytes, but not SPIR-V */
  unsigned char junk[64];
  memset (junk, 0x5a, sizeof (junk));
  p = clCreateProgramWithIL (ctx, junk, sizeof (junk), &err);
  if (p != NULL || err != CL_INVALID_VALUE)
    fail ("IL that is not SPIR-V: %d (%s), expected CL_INVALID_VALUE", err,
          clerr (err));
}

/* The first CUSTOM device (CL_DEVICE_TYPE_ALL leaves them out), remote or
   local, with a context on it.  */
static cl_device_id
open_custom_device (int want_remote, char *name, size_t name_size)
{
  cl_platform_id plats[16];
  cl_uint nplat = 0;
  CHECK (clGetPlatformIDs (16, plats, &nplat));
  for (cl_uint p = 0; p < nplat && p < 16; ++p)
    {
      cl_device_id devs[16];
      cl_uint n = 0;
      if (clGetDeviceIDs (plats[p], CL_DEVICE_TYPE_CUSTOM, 16, devs, &n)
          != CL_SUCCESS)
        continue;
      for (cl_uint i = 0; i < n && i < 16; ++i)
        {
          device_name (devs[i], name, name_size);
          if ((strstr (name, REMOTE_NAME_PART) != NULL) == want_remote)
            {
              cl_int err;
              ctx = clCreateContext (NULL, 1, &devs[i], NULL, NULL, &err);
              CHECK_ERR (err, "clCreateContext");
              note ("device: %s", name);
              return devs[i];
            }
        }
    }
  fail ("no %s CUSTOM device", want_remote ? "remote" : "local");
  return NULL;
}

/* A device without SPIR-V advertises none and takes no IL.  */
static void
test_no_il (void)
{
  size_t n = 0, ils_n = 1;
  char *v = info_string (dev, CL_DEVICE_IL_VERSION, &n);
  if (n != 1 || v[0] != 0)
    fail ("CL_DEVICE_IL_VERSION is '%s' (%zu bytes), expected \"\"", v, n);
  free (v);
  CHECK (clGetDeviceInfo (dev, CL_DEVICE_ILS_WITH_VERSION, 0, NULL, &ils_n));
  if (ils_n != 0)
    fail ("CL_DEVICE_ILS_WITH_VERSION has %zu bytes, expected none", ils_n);
  if (has_extension (dev, "cl_khr_il_program"))
    fail ("cl_khr_il_program is advertised");
  cl_int err;
  cl_program p = clCreateProgramWithIL (ctx, il, il_size, &err);
  if (p != NULL || err != CL_INVALID_OPERATION)
    fail ("clCreateProgramWithIL: %d (%s), expected CL_INVALID_OPERATION",
          err, clerr (err));
  note ("no IL advertised, clCreateProgramWithIL refused");
}

int
main (int argc, char **argv)
{
  watchdog (300, "the whole test");
  char name[256];
  cl_int err;
  if (argc != 3)
    fail ("usage: %s local|remote|remote-only|no-il|no-il-local MODULE.spv",
          argv[0]);
  il = read_file (argv[2], &il_size);
  int no_il = strncmp (argv[1], "no-il", 5) == 0;
  remote_mode = strcmp (argv[1], "remote") == 0;
  if (no_il)
    {
      dev = open_custom_device (strcmp (argv[1], "no-il") == 0, name,
                                sizeof (name));
      run_sub ("a device without IL", test_no_il, 60);
      return sub_finish (name);
    }
  dev = open_test_device (2, argv, name, sizeof (name), &ctx);
  q = clCreateCommandQueue (ctx, dev, 0, &err);
  CHECK_ERR (err, "clCreateCommandQueue");
  run_sub ("the IL queries", test_queries, 60);
  run_sub ("a program from IL", test_program_il, 120);
  run_sub ("specialization constants", test_spec_constants, 120);
  run_sub ("compiled from IL, then linked", test_compile_link, 120);
  run_sub ("the module as a binary", test_binary, 120);
  run_sub ("refused constants and IL", test_errors, 60);
  if (sub_hung)
    return sub_finish ("");
  clReleaseCommandQueue (q);
  clReleaseContext (ctx);
  return sub_finish (name);
}
