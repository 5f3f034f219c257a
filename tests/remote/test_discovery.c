/* test_discovery.c - the client side of remote/discovery_netns: the remote
   devices this process sees must be exactly the ones named on the command
   line (by the "host:port/index" in their names, whichever order platform
   initialisation found them in), and a kernel runs on each with exact
   results.
     remote_test_discovery [host:port/index]...  */

#define TEST_NAME "discovery"
#include "remote_test_util.c"

#define MAX_DEVS 16
#define N 4096

static const char *source
    = "__kernel void scramble(__global uint *a, uint k) {\n"
      "  uint i = get_global_id(0);\n"
      "  a[i] = (a[i] * 2654435761u) ^ (i + k);\n"
      "}\n";

/* A kernel on dev, checked word by word against the same on the host.  */
static void
run_on (cl_device_id dev, cl_uint k)
{
  cl_int err;
  cl_uint *in = xmalloc (N * sizeof (cl_uint)), *out = xmalloc (N * 4);
  size_t global = N;
  cl_uint i;
  cl_context ctx = clCreateContext (NULL, 1, &dev, NULL, NULL, &err);
  CHECK_ERR (err, "clCreateContext");
  cl_command_queue q = clCreateCommandQueue (ctx, dev, 0, &err);
  CHECK_ERR (err, "clCreateCommandQueue");
  cl_program p = clCreateProgramWithSource (ctx, 1, &source, NULL, &err);
  CHECK_ERR (err, "clCreateProgramWithSource");
  CHECK (clBuildProgram (p, 1, &dev, NULL, NULL, NULL));
  cl_kernel kern = clCreateKernel (p, "scramble", &err);
  CHECK_ERR (err, "clCreateKernel");
  for (i = 0; i < N; ++i)
    in[i] = i * 7919u + k;
  cl_mem buf = clCreateBuffer (ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                               N * sizeof (cl_uint), in, &err);
  CHECK_ERR (err, "clCreateBuffer");
  CHECK (clSetKernelArg (kern, 0, sizeof (buf), &buf));
  CHECK (clSetKernelArg (kern, 1, sizeof (k), &k));
  CHECK (
      clEnqueueNDRangeKernel (q, kern, 1, NULL, &global, NULL, 0, NULL, NULL));
  CHECK (clEnqueueReadBuffer (q, buf, CL_TRUE, 0, N * sizeof (cl_uint), out, 0,
                              NULL, NULL));
  for (i = 0; i < N; ++i)
    EXPECT (out[i] == ((in[i] * 2654435761u) ^ (i + k)),
            "word %u is %08x, not %08x", i, out[i],
            (in[i] * 2654435761u) ^ (i + k));
  clReleaseMemObject (buf);
  clReleaseKernel (kern);
  clReleaseProgram (p);
  clReleaseCommandQueue (q);
  clReleaseContext (ctx);
  free (in);
  free (out);
}

int
main (int argc, char **argv)
{
  cl_device_id devs[MAX_DEVS];
  char name[512];
  int seen[MAX_DEVS] = { 0 };
  cl_uint ndev, d, remote = 0;
  int a;
  main_thread = pthread_self ();
  if (argc > MAX_DEVS)
    fail ("at most %d expected devices", MAX_DEVS - 1);
  watchdog (120, "the discovered devices");
  ndev = all_devices (devs, MAX_DEVS);
  for (d = 0; d < ndev; ++d)
    {
      device_name (devs[d], name, sizeof (name));
      if (strstr (name, REMOTE_NAME_PART) == NULL)
        continue;
      ++remote;
      for (a = 1; a < argc; ++a)
        {
          char want[300];
          snprintf (want, sizeof (want), " %s)", argv[a]);
          if (strstr (name, want) != NULL)
            break;
        }
      if (a == argc)
        fail ("unexpected remote device '%s'", name);
      if (seen[a]++)
        fail ("%s twice", argv[a]);
      cl_bool avail = CL_FALSE;
      CHECK (clGetDeviceInfo (devs[d], CL_DEVICE_AVAILABLE, sizeof (avail),
                              &avail, NULL));
      EXPECT (avail, "'%s' is not available", name);
      run_on (devs[d], 0x9e3779b9u * (d + 1));
      note ("kernel on '%s': exact", name);
    }
  EXPECT (remote == (cl_uint)(argc - 1), "%u remote devices, expected %d",
          remote, argc - 1);
  note ("%u remote devices as expected", remote);
  return 0;
}
