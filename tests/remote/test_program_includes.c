/* test_program_includes.c - a program that includes headers from the
   client's directories builds through remote as it does locally (run with
   the argument "local" for the same checks on the local device): -I
   directories of the options (relative to the client's working directory,
   which the server's is not), quoted includes next to the including
   header, with "./" and "../", angle includes, a header of the working
   directory, with
   clBuildProgram and with clCompileProgram; a changed header is seen by
   the next build; a missing one fails the build as locally.  */

#define TEST_NAME "program_includes"
#include "remote_test_util.c"

#include <sys/stat.h>

static cl_device_id dev;
static cl_context ctx;
static cl_command_queue q;
static char dir1[256], dir2[256];

static void
write_text (const char *path, const char *text)
{
  FILE *f = fopen (path, "w");
  if (f == NULL || fputs (text, f) < 0 || fclose (f) != 0)
    fail ("cannot write %s", path);
}

static const char *src = "#include \"a.h\"\n"
                         "#include <c.h>\n"
                         "#include \"cwd_header.h\"\n"
                         "__kernel void k (__global uint *o)\n"
                         "{ size_t i = get_global_id (0);\n"
                         "  o[i] = A_VAL * (uint)i + B_VAL + C_VAL + CWD_VAL; }\n";

/* Runs k of p and checks o[i] = mul * i + add.  */
static void
check (cl_program p, uint32_t mul, uint32_t add, const char *what)
{
  cl_kernel k = create_kernel (p, "k");
  cl_mem m = create_buffer (ctx, CL_MEM_READ_WRITE, 64 * 4, NULL);
  CHECK (clSetKernelArg (k, 0, sizeof (m), &m));
  size_t g = 64;
  CHECK (clEnqueueNDRangeKernel (q, k, 1, NULL, &g, NULL, 0, NULL, NULL));
  uint32_t o[64];
  CHECK (clEnqueueReadBuffer (q, m, CL_TRUE, 0, sizeof (o), o, 0, NULL,
                              NULL));
  for (uint32_t i = 0; i < 64; ++i)
    if (o[i] != mul * i + add)
      fail ("%s: element %u is %u, expected %u", what, i, o[i], mul * i + add);
  clReleaseMemObject (m);
  clReleaseKernel (k);
}

static void
test_includes (void)
{
  char path[512], opts[640];
  /* relative to this process's working directory, which the server's is
     not: only the files that travel make the build work there */
  snprintf (opts, sizeof (opts), "-I inc1 -Iinc2 -DUNUSED=1");
  snprintf (path, sizeof (path), "%s/a.h", dir1);
  write_text (path, "#include \"./sub/b.h\"\n#define A_VAL 5u\n");
  snprintf (path, sizeof (path), "%s/sub", dir1);
  mkdir (path, 0700);
  snprintf (path, sizeof (path), "%s/sub/b.h", dir1);
  write_text (path, "#include \"b2.h\"\n#include \"../b3.h\"\n"
                    "#define B_VAL (B2_VAL + B3_VAL)\n");
  snprintf (path, sizeof (path), "%s/b3.h", dir1);
  write_text (path, "#define B3_VAL 100u\n");
  snprintf (path, sizeof (path), "%s/sub/b2.h", dir1);
  write_text (path, "#define B2_VAL 20u\n");
  snprintf (path, sizeof (path), "%s/c.h", dir2);
  write_text (path, "#define C_VAL 3000u\n");
  write_text ("cwd_header.h", "#define CWD_VAL 40000u\n");

  cl_program p = build_program (ctx, dev, src, opts);
  check (p, 5, 43120, "clBuildProgram with includes");
  clReleaseProgram (p);

  /* a changed header: the next build sees it */
  snprintf (path, sizeof (path), "%s/sub/b2.h", dir1);
  write_text (path, "#define B2_VAL 70u\n");
  p = build_program (ctx, dev, src, opts);
  check (p, 5, 43170, "rebuilt after a header changed");
  clReleaseProgram (p);

  /* clCompileProgram + clLinkProgram with the same includes */
  cl_int err;
  p = clCreateProgramWithSource (ctx, 1, &src, NULL, &err);
  CHECK_ERR (err, "clCreateProgramWithSource");
  CHECK (clCompileProgram (p, 1, &dev, opts, 0, NULL, NULL, NULL, NULL));
  cl_program exe = clLinkProgram (ctx, 1, &dev, NULL, 1, &p, NULL, NULL, &err);
  CHECK_ERR (err, "clLinkProgram");
  check (exe, 5, 43170, "compiled with includes");
  clReleaseProgram (exe);
  clReleaseProgram (p);

  /* a header that exists nowhere: the build fails */
  const char *missing = "#include \"no_such_header.h\"\n"
                        "__kernel void k (__global uint *o) { o[0] = 1u; }\n";
  p = clCreateProgramWithSource (ctx, 1, &missing, NULL, &err);
  CHECK_ERR (err, "clCreateProgramWithSource");
  err = clBuildProgram (p, 1, &dev, opts, NULL, NULL);
  if (err != CL_BUILD_PROGRAM_FAILURE)
    fail ("a missing header: clBuildProgram returned %d (%s)", err,
          clerr (err));
  clReleaseProgram (p);
  note ("headers from two -I directories (nested, quoted and angle) and the "
        "working directory: built, rebuilt after a change, compiled; a "
        "missing one fails");
}

/* Absolute -I directories that the server has too (one machine, or one
   installation on both): the build goes as a local one, at the client's
   paths, so its log names the header where the client has it (and a
   caching compiler finds the local build's entry).  */
static void
test_shared_directories (void)
{
  char path[512], opts[640];
  snprintf (opts, sizeof (opts), "-I %s", dir1);
  snprintf (path, sizeof (path), "%s/warn.h", dir1);
  write_text (path, "#warning from_warn_h\n#define W_VAL 7u\n");
  const char *wsrc = "#include \"warn.h\"\n"
                     "__kernel void k (__global uint *o)\n"
                     "{ o[get_global_id (0)] = W_VAL * (uint)get_global_id (0); }\n";
  cl_program p = build_program (ctx, dev, wsrc, opts);
  check (p, 7, 0, "clBuildProgram with an absolute -I");
  char *log = build_log (p, dev);
  if (strstr (log, "from_warn_h") == NULL || strstr (log, path) == NULL)
    fail ("the build log does not name %s with its warning: %s", path, log);
  free (log);
  clReleaseProgram (p);
  note ("a header of an absolute -I directory: built where the client has "
        "it (the log names %s)", path);
}

int
main (int argc, char **argv)
{
  watchdog (300, "the whole test");
  char name[256], tmpl[] = "/tmp/remote_includes_XXXXXX";
  cl_int err;
  char *base = mkdtemp (tmpl);
  if (base == NULL || chdir (base) != 0)
    fail ("cannot make a working directory");
  snprintf (dir1, sizeof (dir1), "%s/inc1", base);
  snprintf (dir2, sizeof (dir2), "%s/inc2", base);
  if (mkdir (dir1, 0700) != 0 || mkdir (dir2, 0700) != 0)
    fail ("cannot make the include directories");
  dev = open_test_device (argc, argv, name, sizeof (name), &ctx);
  q = clCreateCommandQueue (ctx, dev, 0, &err);
  CHECK_ERR (err, "clCreateCommandQueue");
  run_sub ("includes from client directories", test_includes, 240);
  if (!sub_hung)
    run_sub ("includes from shared directories", test_shared_directories,
             120);
  if (sub_hung)
    return sub_finish ("");
  clFinish (q);
  clReleaseCommandQueue (q);
  clReleaseContext (ctx);
  char cmd[300];
  snprintf (cmd, sizeof (cmd), "rm -rf '%s'", base);
  if (system (cmd) != 0)
    note ("could not remove %s", base);
  return sub_finish (name);
}
