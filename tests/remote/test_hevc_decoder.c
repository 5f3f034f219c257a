/* remote/hevc_decoder: the HEVC decoder device (lib/CL/devices/hevc,
   doc/custom-devices.md) against ffmpeg's own decode of the same clip.
     test_hevc_decoder CLIP REF_NV12 REF_RGBA WIDTH HEIGHT
   Runs on the first CL_DEVICE_TYPE_CUSTOM device whose built-in kernels
   include the decoder's (locally, or the remote device serving it):
   - the whole clip in one launch and a drain launch give ffmpeg's NV12
     frames, bit for bit; so does one launch per access unit, and the same
     kernel again after a drain (a new stream), and two kernels whose
     launches alternate (two decoders);
   - RGBA equals ffmpeg's -pix_fmt rgba;
   - a too-small frames buffer fails with CL_INVALID_BUFFER_SIZE and loses
     nothing (the next launch delivers the queued frames); bitstream_size
     beyond its buffer and a 4-byte size buffer fail with
     CL_INVALID_ARG_SIZE;
   - hostile bitstreams (truncated, bit-flipped, random) either decode or
     fail with CL_INVALID_VALUE (CL_INVALID_BUFFER_SIZE where they made up
     larger frames); then a new kernel still decodes the clip bit-exact.  */

#define TEST_NAME "hevc_decoder"
#include "remote_test_util.c"

#include <CL/cl_ext_pocl.h>

#define NV12 "pocl.hevc.decode.nv12"
#define RGBA "pocl.hevc.decode.rgba"

typedef struct bytes
{
  unsigned char *p;
  size_t len, cap;
} bytes;

static cl_context ctx;
static cl_device_id dev;
static cl_program prog;
static cl_command_queue queue;
static bytes clip, ref_nv12, ref_rgba;
static size_t nv12_frame, rgba_frame;
/* access units of the clip: offsets, and the clip's end last */
static size_t au_off[4096];
static size_t num_aus;
/* bitstream and its content-size buffer, frames and their size */
static cl_mem in, in_size, out, out_size;
static size_t in_cap, out_cap;

static void
append (bytes *b, const void *p, size_t n)
{
  if (b->len + n > b->cap)
    {
      b->cap = (b->len + n) * 2;
      b->p = realloc (b->p, b->cap);
      if (b->p == NULL)
        fail ("out of host memory");
    }
  memcpy (b->p + b->len, p, n);
  b->len += n;
}

static bytes
read_file (const char *path)
{
  bytes b = { NULL, 0, 0 };
  unsigned char buf[65536];
  size_t n;
  FILE *f = fopen (path, "rb");
  if (f == NULL)
    fail ("cannot open %s", path);
  while ((n = fread (buf, 1, sizeof (buf), f)) > 0)
    append (&b, buf, n);
  fclose (f);
  if (b.len == 0)
    fail ("%s is empty", path);
  return b;
}

/* Access units by the rule of doc/custom-devices.md: one begins at a VPS,
   SPS, PPS, AUD or prefix SEI NAL unit (types 32-35, 39), or at a slice
   (0-31) with first_slice_segment_in_pic_flag, once the unit so far holds
   a slice.  A 4-byte start code's zero byte goes with the new unit.  */
static void
split_access_units (void)
{
  const unsigned char *d = clip.p;
  int have_vcl = 0;
  size_t i;
  num_aus = 0;
  au_off[num_aus++] = 0;
  for (i = 0; i + 5 < clip.len; ++i)
    {
      if (d[i] != 0 || d[i + 1] != 0 || d[i + 2] != 1)
        continue;
      unsigned type = (d[i + 3] >> 1) & 0x3f;
      int vcl = type < 32;
      int first_slice = vcl && (d[i + 5] & 0x80);
      if (have_vcl
          && ((type >= 32 && type <= 35) || type == 39 || first_slice))
        {
          if (num_aus == sizeof (au_off) / sizeof (au_off[0]) - 1)
            fail ("more than %zu access units", num_aus);
          au_off[num_aus++] = i > 0 && d[i - 1] == 0 ? i - 1 : i;
          have_vcl = 0;
        }
      if (vcl)
        have_vcl = 1;
      i += 2;
    }
  au_off[num_aus] = clip.len;
}

static void
new_queue (void)
{
  cl_int err;
  if (queue != NULL)
    clReleaseCommandQueue (queue);
  queue = clCreateCommandQueue (ctx, dev, 0, &err);
  CHECK_ERR (err, "clCreateCommandQueue");
}

/* One launch of K on data[0..len) (declared: the bitstream_size written,
   normally len) into FRAMES; returns the event's status, and on success
   appends the frames to ACC.  A failed command fails the commands queued
   behind it: a fresh queue follows a failure.  */
static cl_int
launch_on (cl_kernel k, cl_mem bits, cl_mem bits_size, const void *data,
           size_t len, cl_ulong declared, cl_mem frames, cl_mem frames_size,
           size_t frames_cap, bytes *acc)
{
  size_t one = 1;
  cl_event ev;
  cl_int status = CL_QUEUED;
  cl_ulong got = 0;
  CHECK (clEnqueueWriteBuffer (queue, bits_size, CL_TRUE, 0, sizeof (declared),
                               &declared, 0, NULL, NULL));
  if (len > 0)
    CHECK (clEnqueueWriteBuffer (queue, bits, CL_TRUE, 0, len, data, 0, NULL,
                                 NULL));
  CHECK (clSetKernelArg (k, 0, sizeof (cl_mem), &bits));
  CHECK (clSetKernelArg (k, 1, sizeof (cl_mem), &bits_size));
  CHECK (clSetKernelArg (k, 2, sizeof (cl_mem), &frames));
  CHECK (clSetKernelArg (k, 3, sizeof (cl_mem), &frames_size));
  CHECK (clEnqueueNDRangeKernel (queue, k, 1, NULL, &one, NULL, 0, NULL, &ev));
  clWaitForEvents (1, &ev);
  CHECK (clGetEventInfo (ev, CL_EVENT_COMMAND_EXECUTION_STATUS,
                         sizeof (status), &status, NULL));
  clReleaseEvent (ev);
  if (status != CL_COMPLETE)
    {
      EXPECT (status < 0, "launch ended with status %d", status);
      new_queue ();
      return status;
    }
  CHECK (clEnqueueReadBuffer (queue, frames_size, CL_TRUE, 0, sizeof (got),
                              &got, 0, NULL, NULL));
  EXPECT (got <= frames_cap, "frames_size %llu exceeds the buffer (%zu)",
          (unsigned long long)got, frames_cap);
  if (got > 0)
    {
      unsigned char *tmp = xmalloc ((size_t)got);
      CHECK (clEnqueueReadBuffer (queue, frames, CL_TRUE, 0, (size_t)got, tmp,
                                  0, NULL, NULL));
      append (acc, tmp, (size_t)got);
      free (tmp);
    }
  return CL_SUCCESS;
}

static cl_int
launch (cl_kernel k, const void *data, size_t len, bytes *acc)
{
  if (len > in_cap)
    fail ("test bitstream of %zu bytes over the buffer's %zu", len, in_cap);
  return launch_on (k, in, in_size, data, len, len, out, out_size, out_cap,
                    acc);
}

static void
expect_ok (cl_int status, const char *what)
{
  EXPECT (status == CL_SUCCESS, "%s: launch failed with %d (%s)", what,
          status, clerr (status));
}

static void
expect_frames (const bytes *got, const bytes *ref, size_t frame,
               const char *what)
{
  size_t i;
  EXPECT (got->len % frame == 0, "%s: %zu bytes, not whole frames of %zu",
          what, got->len, frame);
  EXPECT (got->len == ref->len, "%s: %zu frames, ffmpeg decoded %zu", what,
          got->len / frame, ref->len / frame);
  for (i = 0; i < got->len; ++i)
    if (got->p[i] != ref->p[i])
      fail ("%s: frame %zu differs from ffmpeg's at byte %zu (%u, not %u)",
            what, i / frame, i % frame, got->p[i], ref->p[i]);
}

static cl_kernel
new_kernel (const char *name)
{
  return create_kernel (prog, name);
}

/* Whole clip, then the drain launch.  */
static void
decode_clip (cl_kernel k, bytes *acc)
{
  expect_ok (launch (k, clip.p, clip.len, acc), "whole clip");
  expect_ok (launch (k, NULL, 0, acc), "drain");
}

static void
check_info (void)
{
  cl_device_type type = 0;
  char kernels[1024], name[64];
  cl_kernel k = new_kernel (NV12);
  static const char *names[] = { "bitstream", "bitstream_size", "frames",
                                 "frames_size" };
  static const char *types[] = { "uchar*", "ulong*", "uchar*", "ulong*" };
  cl_uint a;
  CHECK (clGetDeviceInfo (dev, CL_DEVICE_TYPE, sizeof (type), &type, NULL));
  EXPECT (type == CL_DEVICE_TYPE_CUSTOM, "device type %llu, not CUSTOM",
          (unsigned long long)type);
  CHECK (clGetDeviceInfo (dev, CL_DEVICE_BUILT_IN_KERNELS, sizeof (kernels),
                          kernels, NULL));
  EXPECT (strstr (kernels, NV12) && strstr (kernels, RGBA),
          "CL_DEVICE_BUILT_IN_KERNELS is \"%s\"", kernels);
  for (a = 0; a < 4; ++a)
    {
      cl_kernel_arg_address_qualifier aq = 0;
      cl_kernel_arg_type_qualifier tq = 0;
      CHECK (clGetKernelArgInfo (k, a, CL_KERNEL_ARG_NAME, sizeof (name),
                                 name, NULL));
      EXPECT (strcmp (name, names[a]) == 0, "argument %u is named %s", a,
              name);
      CHECK (clGetKernelArgInfo (k, a, CL_KERNEL_ARG_TYPE_NAME, sizeof (name),
                                 name, NULL));
      EXPECT (strcmp (name, types[a]) == 0, "argument %u has type %s", a,
              name);
      CHECK (clGetKernelArgInfo (k, a, CL_KERNEL_ARG_ADDRESS_QUALIFIER,
                                 sizeof (aq), &aq, NULL));
      EXPECT (aq == CL_KERNEL_ARG_ADDRESS_GLOBAL, "argument %u not global",
              a);
      CHECK (clGetKernelArgInfo (k, a, CL_KERNEL_ARG_TYPE_QUALIFIER,
                                 sizeof (tq), &tq, NULL));
      EXPECT ((tq == CL_KERNEL_ARG_TYPE_CONST) == (a < 2),
              "argument %u has type qualifier %llu", a,
              (unsigned long long)tq);
    }
  clReleaseKernel (k);
}

static void
check_whole_clip (void)
{
  bytes got = { NULL, 0, 0 };
  cl_kernel k = new_kernel (NV12);
  decode_clip (k, &got);
  expect_frames (&got, &ref_nv12, nv12_frame, "nv12, whole clip");
  /* the drain left the decoder ready for a new stream */
  got.len = 0;
  decode_clip (k, &got);
  expect_frames (&got, &ref_nv12, nv12_frame, "nv12, clip again");
  clReleaseKernel (k);
  free (got.p);
}

static void
check_access_units (void)
{
  bytes got = { NULL, 0, 0 };
  cl_kernel k = new_kernel (NV12);
  size_t i;
  for (i = 0; i < num_aus; ++i)
    expect_ok (launch (k, clip.p + au_off[i], au_off[i + 1] - au_off[i],
                       &got),
               "access unit");
  expect_ok (launch (k, NULL, 0, &got), "drain");
  expect_frames (&got, &ref_nv12, nv12_frame, "nv12, one launch per AU");
  clReleaseKernel (k);
  free (got.p);
}

/* Two kernels, launches interleaved access unit by access unit: two
   independent decoders.  */
static void
check_two_streams (void)
{
  bytes got[2] = { { NULL, 0, 0 }, { NULL, 0, 0 } };
  cl_kernel k[2] = { new_kernel (NV12), new_kernel (NV12) };
  size_t i;
  int j;
  for (i = 0; i < num_aus; ++i)
    for (j = 0; j < 2; ++j)
      expect_ok (launch (k[j], clip.p + au_off[i], au_off[i + 1] - au_off[i],
                         &got[j]),
                 "access unit, two kernels");
  for (j = 0; j < 2; ++j)
    {
      expect_ok (launch (k[j], NULL, 0, &got[j]), "drain, two kernels");
      expect_frames (&got[j], &ref_nv12, nv12_frame, "nv12, two kernels");
      clReleaseKernel (k[j]);
      free (got[j].p);
    }
}

static void
check_rgba (void)
{
  bytes got = { NULL, 0, 0 };
  cl_kernel k = new_kernel (RGBA);
  decode_clip (k, &got);
  expect_frames (&got, &ref_rgba, rgba_frame, "rgba, whole clip");
  clReleaseKernel (k);
  free (got.p);
}

static void
check_too_small (void)
{
  bytes got = { NULL, 0, 0 };
  cl_kernel k = new_kernel (NV12);
  size_t small_cap = nv12_frame - 1;
  cl_mem small = create_buffer (ctx, CL_MEM_READ_WRITE, small_cap, NULL);
  cl_int st = launch_on (k, in, in_size, clip.p, clip.len, clip.len, small,
                         out_size, small_cap, &got);
  EXPECT (st == CL_INVALID_BUFFER_SIZE,
          "a frames buffer of %zu bytes: status %d (%s), not "
          "CL_INVALID_BUFFER_SIZE",
          small_cap, st, clerr (st));
  /* the frames stayed queued: the drain delivers all of them */
  expect_ok (launch (k, NULL, 0, &got), "drain after too small");
  expect_frames (&got, &ref_nv12, nv12_frame, "nv12, after too small");
  clReleaseMemObject (small);
  clReleaseKernel (k);
  free (got.p);
}

static void
check_arg_sizes (void)
{
  bytes got = { NULL, 0, 0 };
  cl_kernel k = new_kernel (NV12);
  cl_mem bits = create_buffer (ctx, CL_MEM_READ_ONLY, 100, NULL);
  cl_mem short_size = create_buffer (ctx, CL_MEM_READ_WRITE, 4, NULL);
  cl_int st = launch_on (k, bits, in_size, clip.p, 100, 101, out, out_size,
                         out_cap, &got);
  EXPECT (st == CL_INVALID_ARG_SIZE,
          "bitstream_size 101 of 100 bytes: status %d (%s)", st, clerr (st));
  st = launch_on (k, in, in_size, clip.p, clip.len, clip.len, out,
                  short_size, out_cap, &got);
  EXPECT (st == CL_INVALID_ARG_SIZE,
          "a 4-byte frames_size buffer: status %d (%s)", st, clerr (st));
  /* refused launches leave the decoder untouched */
  decode_clip (k, &got);
  expect_frames (&got, &ref_nv12, nv12_frame, "nv12, after refusals");
  clReleaseMemObject (bits);
  clReleaseMemObject (short_size);
  clReleaseKernel (k);
  free (got.p);
}

/* Deterministic noise.  */
static uint32_t rng = 12345;
static uint32_t
next_random (void)
{
  rng = rng * 1103515245u + 12345u;
  return rng >> 8;
}

/* One hostile input and a drain: frames or CL_INVALID_VALUE, and
   CL_INVALID_BUFFER_SIZE where made-up frames are larger than the buffer.  */
static void
hostile (cl_kernel k, const bytes *b, const char *what)
{
  bytes got = { NULL, 0, 0 };
  cl_int st[2];
  st[0] = launch (k, b->p, b->len, &got);
  st[1] = launch (k, NULL, 0, &got);
  for (int i = 0; i < 2; ++i)
    EXPECT (st[i] == CL_SUCCESS || st[i] == CL_INVALID_VALUE
                || st[i] == CL_INVALID_BUFFER_SIZE,
            "%s: status %d (%s)", what, st[i], clerr (st[i]));
  note ("%s: %s, %s, %zu bytes of frames", what, clerr (st[0]),
        clerr (st[1]), got.len);
  free (got.p);
}

static void
check_hostile (void)
{
  bytes b = { NULL, 0, 0 }, got = { NULL, 0, 0 };
  cl_kernel k = new_kernel (NV12), k2;
  size_t mid = num_aus / 2, i;

  /* the clip cut in the middle of an access unit */
  append (&b, clip.p, (au_off[mid] + au_off[mid + 1]) / 2);
  hostile (k, &b, "truncated clip");
  /* an access unit whose first half is missing */
  b.len = 0;
  append (&b, clip.p, au_off[mid]);
  append (&b, clip.p + (au_off[mid] + au_off[mid + 1]) / 2,
          clip.len - (au_off[mid] + au_off[mid + 1]) / 2);
  hostile (k, &b, "access unit without its first half");
  /* one bit in 97 bytes flipped, headers included */
  b.len = 0;
  append (&b, clip.p, clip.len);
  for (i = 7; i < b.len; i += 97)
    b.p[i] ^= (unsigned char)(1u << (next_random () % 8));
  hostile (k, &b, "bit-flipped clip");
  /* random bytes */
  b.len = 0;
  for (i = 0; i < 65536; ++i)
    {
      unsigned char c = (unsigned char)next_random ();
      append (&b, &c, 1);
    }
  hostile (k, &b, "random bytes");
  /* random NAL units behind start codes, parameter sets among them */
  for (i = 0; i + 300 < b.len; i += 211)
    {
      b.p[i] = 0;
      b.p[i + 1] = 0;
      b.p[i + 2] = 1;
      b.p[i + 3] = (unsigned char)((32 + next_random () % 10) << 1);
      b.p[i + 4] = 1;
    }
  hostile (k, &b, "random NAL units");
  clReleaseKernel (k);

  /* the device carries on: a new kernel decodes the clip bit-exact */
  k2 = new_kernel (NV12);
  decode_clip (k2, &got);
  expect_frames (&got, &ref_nv12, nv12_frame, "nv12, after hostile input");
  clReleaseKernel (k2);
  free (got.p);
  free (b.p);
}

/* The first CUSTOM device offering the decoder.  */
static cl_device_id
find_decoder (void)
{
  cl_platform_id plats[16];
  cl_uint np = 0, p;
  CHECK (clGetPlatformIDs (16, plats, &np));
  for (p = 0; p < np && p < 16; ++p)
    {
      cl_device_id devs[16];
      cl_uint n = 0, i;
      if (clGetDeviceIDs (plats[p], CL_DEVICE_TYPE_CUSTOM, 16, devs, &n)
          != CL_SUCCESS)
        continue;
      for (i = 0; i < n && i < 16; ++i)
        {
          char kernels[1024] = "";
          clGetDeviceInfo (devs[i], CL_DEVICE_BUILT_IN_KERNELS,
                           sizeof (kernels), kernels, NULL);
          kernels[sizeof (kernels) - 1] = 0;
          if (strstr (kernels, NV12) != NULL)
            return devs[i];
        }
    }
  fail ("no CL_DEVICE_TYPE_CUSTOM device offers %s (POCL_DEVICES=%s)", NV12,
        getenv ("POCL_DEVICES") ? getenv ("POCL_DEVICES") : "(unset)");
}

int
main (int argc, char **argv)
{
  char name[256];
  cl_int err;
  cl_platform_id platform;
  clSetContentSizeBufferPoCL_fn set_content_size;
  long w, h;

  if (argc != 6)
    {
      fprintf (stderr, "usage: %s CLIP REF_NV12 REF_RGBA WIDTH HEIGHT\n",
               argv[0]);
      return 2;
    }
  watchdog (120, "setup");
  clip = read_file (argv[1]);
  ref_nv12 = read_file (argv[2]);
  ref_rgba = read_file (argv[3]);
  w = strtol (argv[4], NULL, 10);
  h = strtol (argv[5], NULL, 10);
  EXPECT (w > 0 && h > 0 && w <= 8192 && h <= 8192, "bad size %ldx%ld", w,
          h);
  nv12_frame = (size_t)(w * h + ((w + 1) / 2) * ((h + 1) / 2) * 2);
  rgba_frame = (size_t)(w * h * 4);
  EXPECT (ref_nv12.len % nv12_frame == 0
              && ref_rgba.len / rgba_frame == ref_nv12.len / nv12_frame,
          "reference decodes of %zu and %zu bytes do not match %ldx%ld",
          ref_nv12.len, ref_rgba.len, w, h);
  split_access_units ();

  dev = find_decoder ();
  device_name (dev, name, sizeof (name));
  note ("device: %s; clip: %zu bytes, %zu access units, %zu frames", name,
        clip.len, num_aus, ref_nv12.len / nv12_frame);
  ctx = clCreateContext (NULL, 1, &dev, NULL, NULL, &err);
  CHECK_ERR (err, "clCreateContext");
  new_queue ();
  prog = clCreateProgramWithBuiltInKernels (ctx, 1, &dev, NV12 ";" RGBA, &err);
  CHECK_ERR (err, "clCreateProgramWithBuiltInKernels");
  CHECK (clBuildProgram (prog, 1, &dev, NULL, NULL, NULL));

  /* room for the clip or 64 KiB of noise; frames: the whole RGBA clip */
  in_cap = (clip.len > 65536 ? clip.len : 65536) + 4096;
  out_cap = ref_rgba.len + rgba_frame;
  in = create_buffer (ctx, CL_MEM_READ_ONLY, in_cap, NULL);
  in_size = create_buffer (ctx, CL_MEM_READ_WRITE, sizeof (cl_ulong), NULL);
  out = create_buffer (ctx, CL_MEM_READ_WRITE, out_cap, NULL);
  out_size = create_buffer (ctx, CL_MEM_READ_WRITE, sizeof (cl_ulong), NULL);
  CHECK (clGetDeviceInfo (dev, CL_DEVICE_PLATFORM, sizeof (platform),
                          &platform, NULL));
  set_content_size
      = (clSetContentSizeBufferPoCL_fn)clGetExtensionFunctionAddressForPlatform (
          platform, "clSetContentSizeBufferPoCL");
  if (set_content_size != NULL)
    CHECK (set_content_size (in, in_size));
  else
    note ("no clSetContentSizeBufferPoCL: the whole bitstream buffer moves");
  watchdog (0, NULL);

  run_sub ("kernel and argument info", check_info, 60);
  run_sub ("whole clip, nv12", check_whole_clip, 120);
  run_sub ("one launch per access unit", check_access_units, 120);
  run_sub ("two kernels, two streams", check_two_streams, 120);
  run_sub ("whole clip, rgba", check_rgba, 120);
  run_sub ("too-small frames buffer", check_too_small, 120);
  run_sub ("argument sizes", check_arg_sizes, 120);
  run_sub ("hostile bitstreams", check_hostile, 300);
  return sub_finish ("kernel info, nv12 and rgba bit-exact, errors");
}
