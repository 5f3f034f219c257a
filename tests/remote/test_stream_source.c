/* test_stream_source.c - the stream source device (CL_DEVICE_TYPE_CUSTOM,
   built-in kernel pocl.stream.read), locally or through remote: whichever
   CUSTOM device offers the kernel.  test_stream_source.sh configures the
   device's source; this program gets the file the source serves and checks
   what the launches deliver.
     test_stream_source hevc REF FRAMES [loop]  access units of REF (FRAMES)
     test_stream_source raw REF BYTES [loop]    BYTES-byte chunks of REF
     test_stream_source missing                 the source does not exist
     test_stream_source garbage                 over 64 MiB without start codes
   A failed command fails the later commands on its buffers and its in-order
   queue (PoCL's failed dependencies), so each expected failure is followed
   by a fresh queue and fresh buffers.  */

#define TEST_NAME "stream_source"
#include "remote_test_util.c"

#include <CL/cl_ext_pocl.h>

#define KERNEL "pocl.stream.read"

static cl_platform_id plat;
static cl_device_id dev;
static cl_context ctx;
static cl_kernel kern;
static clSetContentSizeBufferPoCL_fn set_content_size;

/* A queue, a chunk buffer of CAP bytes and its chunk_size buffer (SIZE_CAP
   bytes), registered as its content size buffer when SIZE_CAP is 8.  */
typedef struct
{
  cl_command_queue q;
  cl_mem chunk, size;
} stream_io;

static stream_io
fresh (size_t cap, size_t size_cap)
{
  stream_io io;
  cl_int err;
  io.q = clCreateCommandQueue (ctx, dev, 0, &err);
  CHECK_ERR (err, "clCreateCommandQueue");
  io.chunk = create_buffer (ctx, CL_MEM_READ_WRITE, cap, NULL);
  io.size = create_buffer (ctx, CL_MEM_READ_WRITE, size_cap, NULL);
  if (size_cap == sizeof (cl_ulong))
    CHECK (set_content_size (io.chunk, io.size));
  return io;
}

static void
release_io (stream_io *io)
{
  clReleaseMemObject (io->chunk);
  clReleaseMemObject (io->size);
  clReleaseCommandQueue (io->q);
}

/* One launch: its event's final status.  */
static cl_int
launch (stream_io *io)
{
  size_t one = 1;
  cl_event ev;
  cl_int st;
  CHECK (clSetKernelArg (kern, 0, sizeof (cl_mem), &io->chunk));
  CHECK (clSetKernelArg (kern, 1, sizeof (cl_mem), &io->size));
  CHECK (clEnqueueNDRangeKernel (io->q, kern, 1, NULL, &one, &one, 0, NULL,
                                 &ev));
  step ("a " KERNEL " launch");
  clWaitForEvents (1, &ev);
  st = event_status (ev);
  clReleaseEvent (ev);
  return st;
}

/* The next chunk into *out (malloc'd); its size, checked against the
   buffer.  */
static size_t
next_chunk (stream_io *io, size_t cap, unsigned char **out)
{
  unsigned char le[8];
  cl_ulong n = 0;
  cl_int st = launch (io);
  unsigned i;
  if (st != CL_COMPLETE)
    fail (KERNEL " failed: event status %d (%s)", st, clerr (st));
  CHECK (clEnqueueReadBuffer (io->q, io->size, CL_TRUE, 0, 8, le, 0, NULL,
                              NULL));
  for (i = 0; i < 8; ++i)
    n |= (cl_ulong)le[i] << (8 * i);
  EXPECT (n <= cap, "chunk_size %llu > the chunk buffer's %zu bytes",
          (unsigned long long)n, cap);
  *out = xmalloc (n);
  if (n > 0)
    CHECK (clEnqueueReadBuffer (io->q, io->chunk, CL_TRUE, 0, n, *out, 0,
                                NULL, NULL));
  return n;
}

static unsigned char *
read_file (const char *path, size_t *len)
{
  FILE *f = fopen (path, "rb");
  unsigned char *b;
  long n;
  if (f == NULL || fseek (f, 0, SEEK_END) != 0 || (n = ftell (f)) < 0)
    fail ("cannot read %s: %s", path, strerror (errno));
  rewind (f);
  b = xmalloc ((size_t)n);
  if (fread (b, 1, (size_t)n, f) != (size_t)n)
    fail ("short read of %s", path);
  fclose (f);
  *len = (size_t)n;
  return b;
}

static void
open_device (void)
{
  cl_platform_id plats[16];
  cl_uint nplat = 0, p;
  cl_int err;
  char names[4096], name[512];
  CHECK (clGetPlatformIDs (16, plats, &nplat));
  for (p = 0; p < nplat && dev == NULL; ++p)
    {
      cl_device_id devs[16];
      cl_uint n = 0, i;
      if (clGetDeviceIDs (plats[p], CL_DEVICE_TYPE_CUSTOM, 16, devs, &n)
          != CL_SUCCESS)
        continue;
      for (i = 0; i < n && i < 16; ++i)
        {
          names[0] = 0;
          CHECK (clGetDeviceInfo (devs[i], CL_DEVICE_BUILT_IN_KERNELS,
                                  sizeof (names), names, NULL));
          if (strstr (names, KERNEL) != NULL)
            {
              dev = devs[i];
              plat = plats[p];
              break;
            }
        }
    }
  if (dev == NULL)
    fail ("no CL_DEVICE_TYPE_CUSTOM device offers " KERNEL
          " (POCL_DEVICES=%s)",
          getenv ("POCL_DEVICES") ? getenv ("POCL_DEVICES") : "(unset)");
  device_name (dev, name, sizeof (name));
  note ("device: %s", name);
  EXPECT (strncmp (name, "stream", 6) == 0,
          "device name \"%s\" does not start with \"stream\"", name);
  set_content_size = (clSetContentSizeBufferPoCL_fn)
      clGetExtensionFunctionAddressForPlatform (plat,
                                                "clSetContentSizeBufferPoCL");
  EXPECT (set_content_size != NULL, "no clSetContentSizeBufferPoCL");

  ctx = clCreateContext (NULL, 1, &dev, NULL, NULL, &err);
  CHECK_ERR (err, "clCreateContext");
  const char *kn = KERNEL;
  cl_program prog
      = clCreateProgramWithBuiltInKernels (ctx, 1, &dev, kn, &err);
  CHECK_ERR (err, "clCreateProgramWithBuiltInKernels");
  CHECK (clBuildProgram (prog, 1, &dev, NULL, NULL, NULL));
  kern = create_kernel (prog, KERNEL);
  clReleaseProgram (prog);
}

/* The argument metadata that applications and pocld rely on.  */
static void
check_arg_info (void)
{
  static const char *names[] = { "chunk", "chunk_size" };
  static const char *types[] = { "uchar*", "ulong*" };
  cl_uint nargs = 0, a;
  CHECK (clGetKernelInfo (kern, CL_KERNEL_NUM_ARGS, sizeof (nargs), &nargs,
                          NULL));
  EXPECT (nargs == 2, KERNEL " has %u arguments, not 2", nargs);
  for (a = 0; a < 2; ++a)
    {
      char s[64];
      cl_kernel_arg_address_qualifier aq = 0;
      cl_kernel_arg_access_qualifier acc = 0;
      cl_kernel_arg_type_qualifier tq = 1;
      CHECK (clGetKernelArgInfo (kern, a, CL_KERNEL_ARG_NAME, sizeof (s), s,
                                 NULL));
      EXPECT (strcmp (s, names[a]) == 0, "argument %u is named %s", a, s);
      CHECK (clGetKernelArgInfo (kern, a, CL_KERNEL_ARG_TYPE_NAME, sizeof (s),
                                 s, NULL));
      EXPECT (strcmp (s, types[a]) == 0, "argument %u has type %s", a, s);
      CHECK (clGetKernelArgInfo (kern, a, CL_KERNEL_ARG_ADDRESS_QUALIFIER,
                                 sizeof (aq), &aq, NULL));
      EXPECT (aq == CL_KERNEL_ARG_ADDRESS_GLOBAL,
              "argument %u address qualifier 0x%x", a, (unsigned)aq);
      CHECK (clGetKernelArgInfo (kern, a, CL_KERNEL_ARG_ACCESS_QUALIFIER,
                                 sizeof (acc), &acc, NULL));
      EXPECT (acc == CL_KERNEL_ARG_ACCESS_NONE,
              "argument %u access qualifier 0x%x", a, (unsigned)acc);
      CHECK (clGetKernelArgInfo (kern, a, CL_KERNEL_ARG_TYPE_QUALIFIER,
                                 sizeof (tq), &tq, NULL));
      EXPECT (tq == CL_KERNEL_ARG_TYPE_NONE,
              "argument %u type qualifier 0x%llx", a,
              (unsigned long long)tq);
    }
}

/* Wrong buffers fail without consuming the stream: a chunk_size buffer of
   4 bytes, then a chunk buffer too small for the first chunk.  */
static void
check_bad_buffers (void)
{
  stream_io io = fresh (4096, 4);
  cl_int st = launch (&io);
  EXPECT (st == CL_INVALID_ARG_SIZE,
          "a 4-byte chunk_size buffer: status %d (%s), not "
          "CL_INVALID_ARG_SIZE",
          st, clerr (st));
  release_io (&io);
  io = fresh (16, 8);
  st = launch (&io);
  EXPECT (st == CL_INVALID_BUFFER_SIZE,
          "a 16-byte chunk buffer: status %d (%s), not "
          "CL_INVALID_BUFFER_SIZE",
          st, clerr (st));
  release_io (&io);
  note ("bad buffers refused (CL_INVALID_ARG_SIZE, CL_INVALID_BUFFER_SIZE)");
}

static int
has_start_code (const unsigned char *c, size_t n)
{
  return (n >= 3 && c[0] == 0 && c[1] == 0 && c[2] == 1)
         || (n >= 4 && c[0] == 0 && c[1] == 0 && c[2] == 0 && c[3] == 1);
}

/* hevc: FRAMES access units, raw: chunks of BYTES; then the end of the
   stream (size 0, three times), or with loop two more rounds of the same
   chunks.  */
static void
check_stream (int hevc, const char *ref_path, size_t param, int loop)
{
  size_t ref_len, off = 0, cap, n, first_len = 0, count = 0;
  unsigned char *ref = read_file (ref_path, &ref_len), *c;
  stream_io io;
  int i;

  cap = hevc ? (size_t)4 << 20 : param + 64;
  check_bad_buffers ();
  io = fresh (cap, 8);
  while (off < ref_len)
    {
      n = next_chunk (&io, cap, &c);
      EXPECT (n > 0, "size 0 after %zu of %zu bytes (%zu chunks)", off,
              ref_len, count);
      EXPECT (n <= ref_len - off, "chunk %zu of %zu bytes runs past the "
              "file's end (%zu of %zu bytes)", count, n, off, ref_len);
      EXPECT (memcmp (c, ref + off, n) == 0,
              "chunk %zu (%zu bytes) differs from the file at byte %zu",
              count, n, off);
      if (hevc)
        EXPECT (has_start_code (c, n),
                "access unit %zu does not start with a start code", count);
      else
        EXPECT (n == param || off + n == ref_len,
                "raw chunk %zu has %zu bytes, not %zu, and is not the last",
                count, n, param);
      if (count == 0)
        first_len = n;
      free (c);
      off += n;
      ++count;
    }
  if (hevc)
    EXPECT (count == param, "%zu access units, the clip has %zu frames",
            count, param);
  else
    EXPECT (count == (ref_len + param - 1) / param,
            "%zu raw chunks of %zu bytes for %zu bytes", count, param,
            ref_len);
  note ("%zu chunks, %zu bytes, equal to the file", count, ref_len);
  if (loop)
    for (i = 0; i < 2; ++i)
      {
        size_t roff = 0, k = 0;
        while (roff < ref_len)
          {
            n = next_chunk (&io, cap, &c);
            EXPECT (n > 0 && n <= ref_len - roff
                        && memcmp (c, ref + roff, n) == 0
                        && (k > 0 || n == first_len),
                    "looped round %d: chunk %zu (%zu bytes) is not the "
                    "file's bytes from %zu",
                    i + 2, k, n, roff);
            free (c);
            roff += n;
            ++k;
          }
        EXPECT (k == count, "looped round %d has %zu chunks, not %zu", i + 2,
                k, count);
      }
  else
    for (i = 0; i < 3; ++i)
      {
        n = next_chunk (&io, cap, &c);
        EXPECT (n == 0, "end of stream %d: chunk_size %zu, not 0", i, n);
        free (c);
      }
  note (loop ? "looped: two more rounds equal to the file"
             : "end of stream: chunk_size 0, three times");
  release_io (&io);
  free (ref);
}

/* A missing source fails each launch with CL_OUT_OF_RESOURCES; the device
   runs other commands.  */
static void
check_missing (void)
{
  const unsigned char pattern[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
  unsigned char back[8] = { 0 };
  int i;
  for (i = 0; i < 2; ++i)
    {
      stream_io io = fresh (4096, 8);
      cl_int st = launch (&io);
      EXPECT (st == CL_OUT_OF_RESOURCES,
              "launch %d on a missing source: status %d (%s), not "
              "CL_OUT_OF_RESOURCES",
              i, st, clerr (st));
      release_io (&io);
    }
  stream_io io = fresh (4096, 8);
  CHECK (clEnqueueWriteBuffer (io.q, io.chunk, CL_FALSE, 0, 8, pattern, 0,
                               NULL, NULL));
  CHECK (clEnqueueReadBuffer (io.q, io.chunk, CL_TRUE, 0, 8, back, 0, NULL,
                              NULL));
  EXPECT (memcmp (back, pattern, 8) == 0,
          "a buffer written after the failures reads back wrong");
  release_io (&io);
  note ("missing source: CL_OUT_OF_RESOURCES twice, the device runs on");
}

/* An HEVC source without start codes fails a launch with CL_INVALID_VALUE
   once the device has read its 64 MiB limit; the next launch goes on after
   the dropped bytes.  */
static void
check_garbage (void)
{
  size_t cap = (size_t)8 << 20;
  unsigned char *c;
  stream_io io = fresh (cap, 8);
  cl_int st = launch (&io);
  EXPECT (st == CL_INVALID_VALUE,
          "a stream without start codes: status %d (%s), not "
          "CL_INVALID_VALUE",
          st, clerr (st));
  release_io (&io);
  io = fresh (cap, 8);
  size_t n = next_chunk (&io, cap, &c);
  EXPECT (n > 0, "after the dropped bytes, an empty chunk");
  free (c);
  release_io (&io);
  note ("no start codes: CL_INVALID_VALUE, then the %zu bytes after", n);
}

int
main (int argc, char **argv)
{
  int loop;
  watchdog (120, "the test");
  int other = argc >= 2
              && (strcmp (argv[1], "missing") == 0
                  || strcmp (argv[1], "garbage") == 0);
  if (argc < 2
      || (!other
          && (argc < 4 || (strcmp (argv[1], "hevc") != 0
                           && strcmp (argv[1], "raw") != 0))))
    {
      fprintf (stderr, "usage: %s hevc REF FRAMES [loop] | raw REF BYTES "
                       "[loop] | missing | garbage\n",
               argv[0]);
      return 2;
    }
  open_device ();
  check_arg_info ();
  if (strcmp (argv[1], "missing") == 0)
    check_missing ();
  else if (strcmp (argv[1], "garbage") == 0)
    check_garbage ();
  else
    {
      loop = argc > 4 && strcmp (argv[4], "loop") == 0;
      check_stream (strcmp (argv[1], "hevc") == 0, argv[2],
                    (size_t)strtoull (argv[3], NULL, 10), loop);
    }
  clReleaseKernel (kern);
  clReleaseContext (ctx);
  printf ("%s: PASS: %s\n", TEST_NAME, argv[1]);
  return 0;
}
