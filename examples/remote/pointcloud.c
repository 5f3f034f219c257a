/* pointcloud.c - the PoCL-R papers' augmented-reality case in miniature.  An
   HEVC-coded depth video is read chunk by chunk by a stream source device
   (built-in kernel pocl.stream.read), decoded by an HEVC decoder device
   (pocl.hevc.decode.nv12) and turned into points on a compute device: each
   pixel's luma is its depth, and the points are sorted by their distance to
   a viewpoint that moves every frame.  Only the sorted indices reach the
   application.  The devices may sit on one server or on several: the
   runtime moves the buffers between them, server to server.

   Usage: remote_pointcloud WIDTH HEIGHT FRAMES [MODE]
     WIDTH x HEIGHT: the video's frame size (even numbers)
     FRAMES: how many frames to process
     MODE: size (default): the chunk buffer carries a cl_pocl_content_size
             buffer, so only an access unit's bytes move to the decoder;
           p2p: no content size, the whole chunk buffer moves;
           client: every stage's output is read by the application and
             written to the next stage's buffers, as without P2P.
   The devices are the first of the first platform offering pocl.stream.read,
   the first offering pocl.hevc.decode.nv12 and the first that is not a
   CL_DEVICE_TYPE_CUSTOM device.  Prints one line per run:
     pointcloud: FRAMES frames WxH mode MODE: F fps, B client bytes/frame,
       P peer bytes/frame, checksum C
   where the bytes are what crossed the links of the remote devices
   (CL_DEVICE_REMOTE_TRAFFIC_POCL; 0 for local devices), and C is a hash of
   all sorted indices, equal in every mode and between local and remote
   devices.  Each frame's indices are checked to be a permutation of the
   pixels and, with POINTCLOUD_VERIFY=1, sorted by distance (the frame is
   then also read back; not part of the figures).  Exits 0, or explains the
   failure and exits non-zero.  */

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#ifndef CL_USE_DEPRECATED_OPENCL_1_2_APIS
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#endif
#include <CL/cl.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* what crossed a remote device's links (lib/CL/devices/remote/pocl_remote_ext.h) */
#define CL_DEVICE_REMOTE_TRAFFIC_POCL 0x4F7E
typedef struct
{
  uint64_t bytes_sent, bytes_received, peer_bytes_received;
} traffic_t;

typedef cl_int (*set_content_size_fn) (cl_mem, cl_mem);

#define CHUNK_MAX (1u << 20)
#define MAX_DEVICES 32

static const char *kernel_source
    = "/* depth from luma; key = distance^2 bits << 32 | pixel: unique keys,\n"
      "   so the sorted order is the same on every device */\n"
      "__kernel void points (__global const uchar *nv12,\n"
      "                      __global const ulong *nv12_size,\n"
      "                      __global ulong *keys, uint w, uint h,\n"
      "                      float vx, float vy, float vz)\n"
      "{\n"
      "  uint i = get_global_id (0);\n"
      "  if (i >= w * h || nv12_size[0] < (ulong)w * h * 3 / 2)\n"
      "    {\n"
      "      keys[i] = ~0ul;\n"
      "      return;\n"
      "    }\n"
      "  float z = 0.5f + nv12[i] / 64.0f;\n"
      "  float x = ((float)(i % w) - 0.5f * w) * z / w;\n"
      "  float y = ((float)(i / w) - 0.5f * h) * z / w;\n"
      "  float dx = x - vx, dy = y - vy, dz = z - vz;\n"
      "  float d = dx * dx + dy * dy + dz * dz;\n"
      "  keys[i] = ((ulong)as_uint (d) << 32) | i;\n"
      "}\n"
      "__kernel void bitonic (__global ulong *keys, uint k, uint j)\n"
      "{\n"
      "  uint i = get_global_id (0), l = i ^ j;\n"
      "  if (l <= i)\n"
      "    return;\n"
      "  ulong a = keys[i], b = keys[l];\n"
      "  int up = (i & k) == 0;\n"
      "  if ((a > b) == up)\n"
      "    {\n"
      "      keys[i] = b;\n"
      "      keys[l] = a;\n"
      "    }\n"
      "}\n"
      "__kernel void indices (__global const ulong *keys,\n"
      "                       __global uint *idx)\n"
      "{\n"
      "  uint i = get_global_id (0);\n"
      "  idx[i] = (uint)keys[i];\n"
      "}\n";

#define CHECK(call)                                                           \
  do                                                                          \
    {                                                                         \
      cl_int check_err_ = (call);                                             \
      if (check_err_ != CL_SUCCESS)                                           \
        {                                                                     \
          fprintf (stderr, "pointcloud: %s failed: %d (line %d)\n", #call,    \
                   check_err_, __LINE__);                                     \
          exit (1);                                                           \
        }                                                                     \
    }                                                                         \
  while (0)

static void
die (const char *msg)
{
  fprintf (stderr, "pointcloud: %s\n", msg);
  exit (1);
}

static int
offers (cl_device_id d, const char *kernel)
{
  char list[4096] = "";
  clGetDeviceInfo (d, CL_DEVICE_BUILT_IN_KERNELS, sizeof (list) - 1, list,
                   NULL);
  const char *p = strstr (list, kernel);
  size_t n = strlen (kernel);
  return p && (p == list || p[-1] == ';') && (p[n] == ';' || p[n] == 0);
}

/* The sum over the distinct servers of the devices: devices of one server
   report the same counters.  */
static void
traffic (cl_device_id *devs, int n, uint64_t *client, uint64_t *peer)
{
  traffic_t seen[MAX_DEVICES];
  int ns = 0, i, j;
  *client = *peer = 0;
  for (i = 0; i < n; ++i)
    {
      traffic_t t;
      if (clGetDeviceInfo (devs[i], CL_DEVICE_REMOTE_TRAFFIC_POCL, sizeof (t),
                           &t, NULL)
          != CL_SUCCESS)
        continue;
      for (j = 0; j < ns; ++j)
        if (memcmp (&seen[j], &t, sizeof (t)) == 0)
          break;
      if (j < ns)
        continue;
      seen[ns++] = t;
      *client += t.bytes_sent + t.bytes_received;
      *peer += t.peer_bytes_received;
    }
}

static double
now (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void
viewpoint (unsigned f, float *v)
{
  v[0] = 0.6f * cosf (0.2f * f);
  v[1] = 0.6f * sinf (0.2f * f);
  v[2] = -1.0f;
}

/* Recomputes each pixel's key from the frame and checks the order.  */
static void
verify_order (const unsigned char *nv12, const cl_uint *idx, unsigned w,
              unsigned h, unsigned f)
{
  float v[3];
  unsigned i;
  uint64_t prev = 0;
  viewpoint (f, v);
  for (i = 0; i < w * h; ++i)
    {
      cl_uint p = idx[i];
      float z = 0.5f + nv12[p] / 64.0f;
      float x = ((float)(p % w) - 0.5f * w) * z / w;
      float y = ((float)(p / w) - 0.5f * h) * z / w;
      float dx = x - v[0], dy = y - v[1], dz = z - v[2];
      float d = dx * dx + dy * dy + dz * dz;
      uint32_t bits;
      memcpy (&bits, &d, 4);
      uint64_t key = ((uint64_t)bits << 32) | p;
      /* the device may contract to fma: allow a last-bit difference by
         checking the order of the keys only where they differ clearly */
      if (i > 0 && key < prev && (prev >> 32) - (key >> 32) > 2)
        {
          fprintf (stderr, "pointcloud: frame %u: index %u out of order\n", f,
                   i);
          exit (1);
        }
      prev = key;
    }
}

int
main (int argc, char **argv)
{
  if (argc < 4 || argc > 5)
    die ("usage: remote_pointcloud WIDTH HEIGHT FRAMES [size|p2p|client]");
  unsigned w = (unsigned)atoi (argv[1]), h = (unsigned)atoi (argv[2]);
  unsigned frames = (unsigned)atoi (argv[3]);
  const char *mode = argc > 4 ? argv[4] : "size";
  int via_client = strcmp (mode, "client") == 0;
  int with_size = strcmp (mode, "size") == 0;
  if (!via_client && !with_size && strcmp (mode, "p2p") != 0)
    die ("MODE is size, p2p or client");
  if (w < 2 || h < 2 || w % 2 || h % 2 || w * h > (1u << 24) || frames == 0)
    die ("WIDTH and HEIGHT must be even, at most 2^24 pixels, FRAMES > 0");
  int verify = getenv ("POINTCLOUD_VERIFY") != NULL;

  cl_platform_id plat;
  CHECK (clGetPlatformIDs (1, &plat, NULL));
  cl_device_id all[MAX_DEVICES];
  cl_uint n_all = 0, n_custom = 0;
  clGetDeviceIDs (plat, CL_DEVICE_TYPE_ALL, MAX_DEVICES, all, &n_all);
  if (n_all > MAX_DEVICES)
    n_all = MAX_DEVICES;
  clGetDeviceIDs (plat, CL_DEVICE_TYPE_CUSTOM, MAX_DEVICES - n_all,
                  all + n_all, &n_custom);
  if (n_custom > MAX_DEVICES - n_all)
    n_custom = MAX_DEVICES - n_all;
  cl_device_id src = NULL, dec = NULL, comp = n_all ? all[0] : NULL;
  cl_uint i;
  for (i = 0; i < n_all + n_custom; ++i)
    {
      if (src == NULL && offers (all[i], "pocl.stream.read"))
        src = all[i];
      if (dec == NULL && offers (all[i], "pocl.hevc.decode.nv12"))
        dec = all[i];
    }
  if (src == NULL || dec == NULL || comp == NULL)
    die ("needs a device offering pocl.stream.read, one offering "
         "pocl.hevc.decode.nv12 and a compute device");

  cl_device_id devs[3] = { src, dec, comp };
  cl_uint ndev = 3;
  if (dec == src)
    {
      devs[1] = comp;
      ndev = 2;
    }
  cl_int err;
  cl_context ctx = clCreateContext (NULL, ndev, devs, NULL, NULL, &err);
  CHECK (err);
  cl_command_queue qs = clCreateCommandQueue (ctx, src, 0, &err);
  CHECK (err);
  cl_command_queue qd = clCreateCommandQueue (ctx, dec, 0, &err);
  CHECK (err);
  cl_command_queue qc = clCreateCommandQueue (ctx, comp, 0, &err);
  CHECK (err);

  cl_program ps
      = clCreateProgramWithBuiltInKernels (ctx, 1, &src, "pocl.stream.read",
                                           &err);
  CHECK (err);
  CHECK (clBuildProgram (ps, 1, &src, NULL, NULL, NULL));
  cl_program pd = clCreateProgramWithBuiltInKernels (
      ctx, 1, &dec, "pocl.hevc.decode.nv12", &err);
  CHECK (err);
  CHECK (clBuildProgram (pd, 1, &dec, NULL, NULL, NULL));
  cl_program pc
      = clCreateProgramWithSource (ctx, 1, &kernel_source, NULL, &err);
  CHECK (err);
  if (clBuildProgram (pc, 1, &comp, NULL, NULL, NULL) != CL_SUCCESS)
    die ("the compute kernels do not build");
  cl_kernel kread = clCreateKernel (ps, "pocl.stream.read", &err);
  CHECK (err);
  cl_kernel kdec = clCreateKernel (pd, "pocl.hevc.decode.nv12", &err);
  CHECK (err);
  cl_kernel kpoints = clCreateKernel (pc, "points", &err);
  CHECK (err);
  cl_kernel ksort = clCreateKernel (pc, "bitonic", &err);
  CHECK (err);
  cl_kernel kidx = clCreateKernel (pc, "indices", &err);
  CHECK (err);

  size_t pixels = (size_t)w * h, padded = 1, frame_bytes = pixels * 3 / 2;
  while (padded < pixels)
    padded *= 2;
  /* with MODE client, each device has buffers of its own ("B" ones are the
     next stage's); else one buffer serves both stages */
  cl_mem chunk = clCreateBuffer (ctx, CL_MEM_READ_WRITE, CHUNK_MAX, NULL, &err);
  CHECK (err);
  cl_mem chunk_size = clCreateBuffer (ctx, CL_MEM_READ_WRITE, 8, NULL, &err);
  CHECK (err);
  cl_mem frame = clCreateBuffer (ctx, CL_MEM_READ_WRITE, frame_bytes, NULL,
                                 &err);
  CHECK (err);
  cl_mem frame_size = clCreateBuffer (ctx, CL_MEM_READ_WRITE, 8, NULL, &err);
  CHECK (err);
  cl_mem chunk_b = chunk, chunk_size_b = chunk_size, frame_b = frame,
         frame_size_b = frame_size;
  if (via_client)
    {
      chunk_b = clCreateBuffer (ctx, CL_MEM_READ_WRITE, CHUNK_MAX, NULL, &err);
      CHECK (err);
      chunk_size_b = clCreateBuffer (ctx, CL_MEM_READ_WRITE, 8, NULL, &err);
      CHECK (err);
      frame_b = clCreateBuffer (ctx, CL_MEM_READ_WRITE, frame_bytes, NULL,
                                &err);
      CHECK (err);
      frame_size_b = clCreateBuffer (ctx, CL_MEM_READ_WRITE, 8, NULL, &err);
      CHECK (err);
    }
  cl_mem keys = clCreateBuffer (ctx, CL_MEM_READ_WRITE, padded * 8, NULL,
                                &err);
  CHECK (err);
  cl_mem idx = clCreateBuffer (ctx, CL_MEM_WRITE_ONLY, pixels * 4, NULL, &err);
  CHECK (err);
  if (with_size)
    {
      set_content_size_fn set_size
          = (set_content_size_fn)clGetExtensionFunctionAddressForPlatform (
              plat, "clSetContentSizeBufferPoCL");
      if (set_size == NULL)
        die ("no clSetContentSizeBufferPoCL on this platform");
      CHECK (set_size (chunk, chunk_size));
      CHECK (set_size (frame, frame_size));
    }

  CHECK (clSetKernelArg (kread, 0, sizeof (cl_mem), &chunk));
  CHECK (clSetKernelArg (kread, 1, sizeof (cl_mem), &chunk_size));
  CHECK (clSetKernelArg (kdec, 0, sizeof (cl_mem), &chunk_b));
  CHECK (clSetKernelArg (kdec, 1, sizeof (cl_mem), &chunk_size_b));
  CHECK (clSetKernelArg (kdec, 2, sizeof (cl_mem), &frame));
  CHECK (clSetKernelArg (kdec, 3, sizeof (cl_mem), &frame_size));
  CHECK (clSetKernelArg (kpoints, 0, sizeof (cl_mem), &frame_b));
  CHECK (clSetKernelArg (kpoints, 1, sizeof (cl_mem), &frame_size_b));
  CHECK (clSetKernelArg (kpoints, 2, sizeof (cl_mem), &keys));
  CHECK (clSetKernelArg (kpoints, 3, sizeof (cl_uint), &w));
  CHECK (clSetKernelArg (kpoints, 4, sizeof (cl_uint), &h));
  CHECK (clSetKernelArg (ksort, 0, sizeof (cl_mem), &keys));
  CHECK (clSetKernelArg (kidx, 0, sizeof (cl_mem), &keys));
  CHECK (clSetKernelArg (kidx, 1, sizeof (cl_mem), &idx));

  cl_uint *out = malloc (pixels * 4);
  unsigned char *seen = malloc (pixels);
  unsigned char *host_chunk = via_client ? malloc (CHUNK_MAX) : NULL;
  unsigned char *host_frame = (via_client || verify) ? malloc (frame_bytes)
                                                     : NULL;
  if (out == NULL || seen == NULL || (via_client && !host_chunk)
      || ((via_client || verify) && !host_frame))
    die ("out of memory");
  uint64_t hash = 1469598103934665603ull;
  uint64_t c0, p0, c1, p1;
  size_t one = 1;
  double t0 = 0;
  unsigned f;
  for (f = 0; f <= frames; ++f)
    {
      /* frame 0 warms up (builds, first allocations) and is not counted */
      if (f == 1)
        {
          traffic (devs, (int)ndev, &c0, &p0);
          t0 = now ();
        }
      cl_event read_done, dec_done;
      CHECK (clEnqueueNDRangeKernel (qs, kread, 1, NULL, &one, NULL, 0, NULL,
                                     &read_done));
      if (via_client)
        {
          cl_ulong got = 0;
          CHECK (clEnqueueReadBuffer (qs, chunk_size, CL_TRUE, 0, 8, &got, 1,
                                      &read_done, NULL));
          if (got > CHUNK_MAX)
            die ("chunk larger than the chunk buffer");
          CHECK (clEnqueueReadBuffer (qs, chunk, CL_TRUE, 0, CHUNK_MAX,
                                      host_chunk, 0, NULL, NULL));
          CHECK (clEnqueueWriteBuffer (qd, chunk_size_b, CL_FALSE, 0, 8, &got,
                                       0, NULL, NULL));
          CHECK (clEnqueueWriteBuffer (qd, chunk_b, CL_FALSE, 0, CHUNK_MAX,
                                       host_chunk, 0, NULL, NULL));
          CHECK (clReleaseEvent (read_done));
          CHECK (clEnqueueNDRangeKernel (qd, kdec, 1, NULL, &one, NULL, 0,
                                         NULL, &dec_done));
          CHECK (clEnqueueReadBuffer (qd, frame_size, CL_TRUE, 0, 8, &got, 1,
                                      &dec_done, NULL));
          CHECK (clEnqueueReadBuffer (qd, frame, CL_TRUE, 0, frame_bytes,
                                      host_frame, 0, NULL, NULL));
          CHECK (clEnqueueWriteBuffer (qc, frame_size_b, CL_FALSE, 0, 8, &got,
                                       0, NULL, NULL));
          CHECK (clEnqueueWriteBuffer (qc, frame_b, CL_FALSE, 0, frame_bytes,
                                       host_frame, 0, NULL, NULL));
          CHECK (clReleaseEvent (dec_done));
          dec_done = NULL;
        }
      else
        {
          CHECK (clEnqueueNDRangeKernel (qd, kdec, 1, NULL, &one, NULL, 1,
                                         &read_done, &dec_done));
          CHECK (clReleaseEvent (read_done));
        }
      float v[3];
      viewpoint (f, v);
      CHECK (clSetKernelArg (kpoints, 5, sizeof (float), &v[0]));
      CHECK (clSetKernelArg (kpoints, 6, sizeof (float), &v[1]));
      CHECK (clSetKernelArg (kpoints, 7, sizeof (float), &v[2]));
      CHECK (clEnqueueNDRangeKernel (qc, kpoints, 1, NULL, &padded, NULL,
                                     dec_done ? 1 : 0,
                                     dec_done ? &dec_done : NULL, NULL));
      if (dec_done)
        CHECK (clReleaseEvent (dec_done));
      cl_uint k, j;
      for (k = 2; k <= padded; k *= 2)
        for (j = k / 2; j > 0; j /= 2)
          {
            CHECK (clSetKernelArg (ksort, 1, sizeof (cl_uint), &k));
            CHECK (clSetKernelArg (ksort, 2, sizeof (cl_uint), &j));
            CHECK (clEnqueueNDRangeKernel (qc, ksort, 1, NULL, &padded, NULL,
                                           0, NULL, NULL));
          }
      CHECK (clEnqueueNDRangeKernel (qc, kidx, 1, NULL, &pixels, NULL, 0,
                                     NULL, NULL));
      CHECK (clEnqueueReadBuffer (qc, idx, CL_TRUE, 0, pixels * 4, out, 0,
                                  NULL, NULL));

      memset (seen, 0, pixels);
      size_t p;
      for (p = 0; p < pixels; ++p)
        {
          if (out[p] >= pixels || seen[out[p]])
            {
              fprintf (stderr,
                       "pointcloud: frame %u: the indices are not a "
                       "permutation of the pixels (no frame decoded?)\n",
                       f);
              return 1;
            }
          seen[out[p]] = 1;
          hash = (hash ^ out[p]) * 1099511628211ull;
        }
      if (verify)
        {
          CHECK (clEnqueueReadBuffer (qc, frame_b, CL_TRUE, 0, frame_bytes,
                                      host_frame, 0, NULL, NULL));
          verify_order (host_frame, out, w, h, f);
        }
    }
  double secs = now () - t0;
  traffic (devs, (int)ndev, &c1, &p1);
  printf ("pointcloud: %u frames %ux%u mode %s: %.1f fps, %.0f client "
          "bytes/frame, %.0f peer bytes/frame, checksum %016llx\n",
          frames, w, h, mode, frames / secs, (double)(c1 - c0) / frames,
          (double)(p1 - p0) / frames, (unsigned long long)hash);

  free (out);
  free (seen);
  free (host_chunk);
  free (host_frame);
  cl_mem mems[] = { chunk, chunk_size, frame, frame_size, keys, idx };
  for (i = 0; i < sizeof (mems) / sizeof (mems[0]); ++i)
    CHECK (clReleaseMemObject (mems[i]));
  if (via_client)
    {
      CHECK (clReleaseMemObject (chunk_b));
      CHECK (clReleaseMemObject (chunk_size_b));
      CHECK (clReleaseMemObject (frame_b));
      CHECK (clReleaseMemObject (frame_size_b));
    }
  cl_kernel ks[] = { kread, kdec, kpoints, ksort, kidx };
  for (i = 0; i < 5; ++i)
    CHECK (clReleaseKernel (ks[i]));
  CHECK (clReleaseProgram (ps));
  CHECK (clReleaseProgram (pd));
  CHECK (clReleaseProgram (pc));
  CHECK (clReleaseCommandQueue (qs));
  CHECK (clReleaseCommandQueue (qd));
  CHECK (clReleaseCommandQueue (qc));
  CHECK (clReleaseContext (ctx));
  return 0;
}
