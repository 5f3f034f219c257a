/* stream.c - the stream source driver: a CL_DEVICE_TYPE_CUSTOM device whose
   built-in kernel pocl.stream.read writes the next chunk of a stream (a
   file, a named pipe or a TCP feed) into a buffer, and the chunk's byte
   count into a second one (doc/custom-devices.md).  The stream is read
   through a buffer of the device's own: a chunk that does not fit the
   application's buffer stays there for the next launch.  */

#include "pocl_stream.h"

#include "pocl_custom.h"
#include "devices.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* An HEVC access unit larger than this is garbage, not video: the reader
   does not grow its buffer without bound looking for the next start code.  */
#define STREAM_HEVC_MAX_CHUNK (64u << 20)
/* fixed-size chunks up to this size */
#define STREAM_RAW_MAX_CHUNK (1u << 30)
#define STREAM_READ_SIZE (1u << 20)

typedef struct stream_data
{
  /* set at init; config_error: the parameters were wrong (logged at init),
     every launch fails */
  int config_error;
  int is_tcp;
  char *path;
  char *host;
  char *port;
  /* 0: HEVC access units; otherwise fixed-size chunks of this many bytes */
  size_t raw_chunk;
  int loop;
  unsigned fps;
  char *long_name;

  /* -1 until the first launch opens the source (again after a failure) */
  int fd;
  int is_regular;
  int eof;
  /* bytes read and not yet delivered: buf[start, end) */
  unsigned char *buf;
  size_t cap, start, end;
  /* the next chunk's length once known (a chunk that did not fit the
     application's buffer), else 0 */
  size_t pending;
  /* HEVC scan of the chunk at start, kept across reads: the offset from
     start where scanning goes on, and whether it has a VCL NAL unit */
  size_t scan;
  int have_vcl;

  /* fps: launches delivered so far, the first one's time */
  unsigned long long delivered;
  struct timespec t0;
} stream_data;

static const pocl_argument_info stream_read_args[] = {
  { "uchar*", "chunk", CL_KERNEL_ARG_ADDRESS_GLOBAL,
    CL_KERNEL_ARG_ACCESS_NONE, CL_KERNEL_ARG_TYPE_NONE, POCL_ARG_TYPE_POINTER,
    sizeof (cl_mem) },
  { "ulong*", "chunk_size", CL_KERNEL_ARG_ADDRESS_GLOBAL,
    CL_KERNEL_ARG_ACCESS_NONE, CL_KERNEL_ARG_TYPE_NONE, POCL_ARG_TYPE_POINTER,
    sizeof (cl_mem) },
};

static const char *
source_desc (stream_data *s)
{
  return s->long_name ? s->long_name : "stream";
}

static cl_int
open_source (stream_data *s)
{
  if (s->is_tcp)
    {
      struct addrinfo hints, *res = NULL, *ai;
      int err, fd = -1;
      memset (&hints, 0, sizeof (hints));
      hints.ai_family = AF_UNSPEC;
      hints.ai_socktype = SOCK_STREAM;
      err = getaddrinfo (s->host, s->port, &hints, &res);
      if (err != 0)
        {
          POCL_MSG_ERR ("%s: cannot resolve %s: %s\n", source_desc (s),
                        s->host, gai_strerror (err));
          return CL_OUT_OF_RESOURCES;
        }
      for (ai = res; ai != NULL; ai = ai->ai_next)
        {
          fd = socket (ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC,
                       ai->ai_protocol);
          if (fd < 0)
            continue;
          if (connect (fd, ai->ai_addr, ai->ai_addrlen) == 0)
            break;
          err = errno;
          close (fd);
          fd = -1;
          errno = err;
        }
      freeaddrinfo (res);
      if (fd < 0)
        {
          POCL_MSG_ERR ("%s: cannot connect to %s:%s: %s\n", source_desc (s),
                        s->host, s->port, strerror (errno));
          return CL_OUT_OF_RESOURCES;
        }
      s->fd = fd;
      s->is_regular = 0;
    }
  else
    {
      struct stat st;
      /* a named pipe blocks here until a writer opens it: this is the
         device's worker thread, nothing else waits on it */
      int fd = open (s->path, O_RDONLY | O_CLOEXEC);
      if (fd < 0)
        {
          POCL_MSG_ERR ("%s: cannot open %s: %s\n", source_desc (s), s->path,
                        strerror (errno));
          return CL_OUT_OF_RESOURCES;
        }
      s->fd = fd;
      s->is_regular = fstat (fd, &st) == 0 && S_ISREG (st.st_mode);
    }
  if (s->loop && !s->is_regular)
    {
      POCL_MSG_WARN ("%s: not a regular file, option loop ignored\n",
                     source_desc (s));
      s->loop = 0;
    }
  return CL_SUCCESS;
}

/* Reads more of the stream behind buf[end]: up to need bytes, at least
   STREAM_READ_SIZE (not more, so that the HEVC size limit drops a known
   amount).  At the end of the stream sets eof.  */
static cl_int
fill (stream_data *s, size_t need)
{
  ssize_t n;
  if (need < STREAM_READ_SIZE)
    need = STREAM_READ_SIZE;
  if (s->start > 0 && (s->start == s->end || s->cap - s->end < need))
    {
      memmove (s->buf, s->buf + s->start, s->end - s->start);
      s->end -= s->start;
      s->start = 0;
    }
  if (s->cap - s->end < need)
    {
      size_t cap = s->cap ? s->cap : STREAM_READ_SIZE;
      unsigned char *b;
      while (cap - s->end < need)
        cap *= 2;
      b = realloc (s->buf, cap);
      if (b == NULL)
        {
          POCL_MSG_ERR ("%s: out of memory for a %zu-byte read buffer\n",
                        source_desc (s), cap);
          return CL_OUT_OF_HOST_MEMORY;
        }
      s->buf = b;
      s->cap = cap;
    }
  do
    n = read (s->fd, s->buf + s->end, need);
  while (n < 0 && errno == EINTR);
  if (n < 0)
    {
      POCL_MSG_ERR ("%s: read error: %s\n", source_desc (s),
                    strerror (errno));
      return CL_OUT_OF_RESOURCES;
    }
  if (n == 0)
    s->eof = 1;
  s->end += (size_t)n;
  return CL_SUCCESS;
}

static int
starts_access_unit (const unsigned char *nal)
{
  unsigned type = (nal[0] >> 1) & 0x3f;
  if (type == 32 || type == 33 || type == 34 || type == 35 || type == 39)
    return 1;
  /* a VCL NAL unit with first_slice_segment_in_pic_flag */
  return type <= 31 && (nal[2] & 0x80);
}

/* The length of the HEVC access unit at start, in *len; reads as much as
   it needs.  */
static cl_int
hevc_chunk (stream_data *s, size_t *len)
{
  for (;;)
    {
      const unsigned char *b = s->buf + s->start;
      size_t avail = s->end - s->start;
      size_t i = s->scan;
      cl_int err;
      /* 00 00 01 at i: the NAL header at i + 3, the slice's first byte at
         i + 5 */
      while (i + 6 <= avail)
        {
          if (b[i + 2] > 1)
            i += 3;
          else if (b[i + 2] == 1 && b[i + 1] == 0 && b[i] == 0)
            {
              const unsigned char *nal = b + i + 3;
              if (s->have_vcl && starts_access_unit (nal))
                {
                  /* the unit ends before this start code's leading zero
                     byte, if it has one */
                  *len = (b[i - 1] == 0) ? i - 1 : i;
                  return CL_SUCCESS;
                }
              if (((nal[0] >> 1) & 0x3f) <= 31)
                s->have_vcl = 1;
              i += 3;
            }
          else
            ++i;
        }
      s->scan = i;
      if (s->eof)
        {
          /* the rest, with a NAL unit too short to tell, is the last unit */
          *len = avail;
          return CL_SUCCESS;
        }
      if (avail > STREAM_HEVC_MAX_CHUNK)
        {
          POCL_MSG_ERR ("%s: no access unit boundary in %zu bytes: not an "
                        "HEVC Annex-B stream; dropping those bytes\n",
                        source_desc (s), avail);
          /* the next launch goes on with what follows */
          s->start = s->end = 0;
          s->scan = 0;
          s->have_vcl = 0;
          return CL_INVALID_VALUE;
        }
      err = fill (s, STREAM_READ_SIZE);
      if (err != CL_SUCCESS)
        return err;
    }
}

/* The length of the next chunk in *len, 0 at the end of the stream.  */
static cl_int
next_chunk (stream_data *s, size_t *len)
{
  cl_int err;
  int rewound = 0;
  if (s->pending > 0)
    {
      *len = s->pending;
      return CL_SUCCESS;
    }
  for (;;)
    {
      if (s->fd < 0)
        {
          err = open_source (s);
          if (err != CL_SUCCESS)
            return err;
        }
      if (s->raw_chunk > 0)
        {
          while (!s->eof && s->end - s->start < s->raw_chunk)
            {
              err = fill (s, s->raw_chunk - (s->end - s->start));
              if (err != CL_SUCCESS)
                return err;
            }
          *len = s->end - s->start < s->raw_chunk ? s->end - s->start
                                                   : s->raw_chunk;
        }
      else
        {
          err = hevc_chunk (s, len);
          if (err != CL_SUCCESS)
            return err;
        }
      if (*len > 0 || !s->loop || rewound)
        return CL_SUCCESS;
      /* everything delivered: start again (once per launch, so that an
         empty file ends the stream) */
      if (lseek (s->fd, 0, SEEK_SET) != 0)
        {
          POCL_MSG_ERR ("%s: cannot rewind: %s\n", source_desc (s),
                        strerror (errno));
          return CL_OUT_OF_RESOURCES;
        }
      s->eof = 0;
      rewound = 1;
    }
}

/* fps: launch k returns no earlier than the first one's time + k / fps.  */
static void
rate_limit (stream_data *s)
{
  struct timespec t;
  unsigned long long k = s->delivered++;
  if (s->fps == 0)
    return;
  if (k == 0)
    {
      clock_gettime (CLOCK_MONOTONIC, &s->t0);
      return;
    }
  t.tv_sec = s->t0.tv_sec + (time_t)(k / s->fps);
  t.tv_nsec = s->t0.tv_nsec
              + (long)((k % s->fps) * 1000000000ull / s->fps);
  if (t.tv_nsec >= 1000000000L)
    {
      t.tv_sec += 1;
      t.tv_nsec -= 1000000000L;
    }
  while (clock_nanosleep (CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL) == EINTR)
    ;
}

static cl_int
stream_read_run (pocl_custom_launch *launch)
{
  stream_data *s = (stream_data *)pocl_custom_driver_data (launch->device);
  size_t chunk_cap, size_cap, len = 0;
  unsigned char *chunk = pocl_custom_arg_buffer (launch, 0, &chunk_cap);
  unsigned char *size_out = pocl_custom_arg_buffer (launch, 1, &size_cap);
  cl_int err;
  unsigned i;

  if (s->config_error)
    {
      POCL_MSG_ERR ("%s: bad POCL_STREAMn_PARAMETERS (see the log of the "
                    "device's initialization)\n",
                    source_desc (s));
      return CL_INVALID_VALUE;
    }
  if (chunk == NULL || size_out == NULL || size_cap < sizeof (cl_ulong))
    {
      POCL_MSG_ERR ("%s: pocl.stream.read needs a chunk buffer and a "
                    "chunk_size buffer of at least 8 bytes\n",
                    source_desc (s));
      return CL_INVALID_ARG_SIZE;
    }
  err = next_chunk (s, &len);
  if (err != CL_SUCCESS)
    {
      if (err == CL_OUT_OF_RESOURCES && s->fd >= 0 && !s->is_regular)
        {
          /* a broken feed: the next launch connects again */
          close (s->fd);
          s->fd = -1;
          s->eof = 0;
        }
      return err;
    }
  if (len > chunk_cap)
    {
      POCL_MSG_ERR ("%s: the next chunk has %zu bytes, the chunk buffer "
                    "%zu; the chunk waits for a larger buffer\n",
                    source_desc (s), len, chunk_cap);
      s->pending = len;
      return CL_INVALID_BUFFER_SIZE;
    }
  rate_limit (s);
  memcpy (chunk, s->buf + s->start, len);
  for (i = 0; i < sizeof (cl_ulong); ++i)
    size_out[i] = (unsigned char)((cl_ulong)len >> (8 * i));
  s->start += len;
  s->pending = 0;
  s->scan = 0;
  s->have_vcl = 0;
  return CL_SUCCESS;
}

static const pocl_custom_kernel stream_kernels[] = {
  { "pocl.stream.read", 2, stream_read_args, stream_read_run, NULL, NULL },
};

static void
stream_uninit (cl_device_id device)
{
  stream_data *s = (stream_data *)pocl_custom_driver_data (device);
  if (s->fd >= 0)
    close (s->fd);
  device->long_name = "stream";
  free (s->buf);
  free (s->path);
  free (s->host);
  free (s->port);
  free (s->long_name);
  free (s);
}

static const pocl_custom_driver stream_driver
    = { stream_kernels, sizeof (stream_kernels) / sizeof (stream_kernels[0]),
        stream_uninit };

/* SOURCE[,OPTION]...: sets s's configuration, or logs what is wrong and
   returns nonzero.  */
static int
parse_parameters (stream_data *s, unsigned j, const char *parameters)
{
  char *copy, *opt, *save = NULL, *end;
  int bad = 0;
  if (parameters == NULL || parameters[0] == '\0'
      || parameters[0] == ',')
    {
      POCL_MSG_ERR ("stream %u: POCL_STREAM%u_PARAMETERS must name a "
                    "source (a path or tcp:HOST:PORT)\n",
                    j, j);
      return 1;
    }
  copy = strdup (parameters);
  if (copy == NULL)
    return 1;
  opt = strtok_r (copy, ",", &save);
  if (strncmp (opt, "tcp:", 4) == 0)
    {
      char *colon = strrchr (opt + 4, ':');
      if (colon == NULL || colon == opt + 4 || colon[1] == '\0')
        {
          POCL_MSG_ERR ("stream %u: %s is not tcp:HOST:PORT\n", j, opt);
          bad = 1;
        }
      else
        {
          s->is_tcp = 1;
          s->host = strndup (opt + 4, (size_t)(colon - opt - 4));
          s->port = strdup (colon + 1);
        }
    }
  else
    s->path = strdup (opt);
  while ((opt = strtok_r (NULL, ",", &save)) != NULL)
    {
      if (strcmp (opt, "loop") == 0)
        s->loop = 1;
      else if (strcmp (opt, "chunk=hevc") == 0)
        s->raw_chunk = 0;
      else if (strncmp (opt, "chunk=", 6) == 0)
        {
          unsigned long long v;
          errno = 0;
          v = strtoull (opt + 6, &end, 10);
          if (errno != 0 || end == opt + 6 || *end != '\0' || v == 0
              || v > STREAM_RAW_MAX_CHUNK)
            {
              POCL_MSG_ERR ("stream %u: %s: chunk= takes hevc or a byte "
                            "count from 1 to %u\n",
                            j, opt, STREAM_RAW_MAX_CHUNK);
              bad = 1;
            }
          else
            s->raw_chunk = (size_t)v;
        }
      else if (strncmp (opt, "fps=", 4) == 0)
        {
          unsigned long v;
          errno = 0;
          v = strtoul (opt + 4, &end, 10);
          if (errno != 0 || end == opt + 4 || *end != '\0' || v == 0
              || v > 1000000)
            {
              POCL_MSG_ERR ("stream %u: %s: fps= takes a whole number of "
                            "frames per second from 1 to 1000000\n",
                            j, opt);
              bad = 1;
            }
          else
            s->fps = (unsigned)v;
        }
      else
        {
          POCL_MSG_ERR ("stream %u: unknown option %s\n", j, opt);
          bad = 1;
        }
    }
  if (s->is_tcp && s->loop)
    {
      POCL_MSG_WARN ("stream %u: a TCP feed cannot loop, option loop "
                     "ignored\n",
                     j);
      s->loop = 0;
    }
  free (copy);
  return bad;
}

static char *
make_long_name (stream_data *s)
{
  char chunks[64];
  const char *base;
  size_t len;
  char *name;
  if (s->raw_chunk > 0)
    snprintf (chunks, sizeof (chunks), "%zu-byte chunks", s->raw_chunk);
  else
    snprintf (chunks, sizeof (chunks), "hevc access units");
  if (s->is_tcp)
    base = NULL;
  else
    {
      base = strrchr (s->path, '/');
      base = base ? base + 1 : s->path;
    }
  len = strlen (chunks) + 64
        + (base ? strlen (base) : strlen (s->host) + strlen (s->port));
  name = malloc (len);
  if (name == NULL)
    return NULL;
  if (base == NULL)
    snprintf (name, len, "stream: tcp %s:%s, %s", s->host, s->port, chunks);
  else
    snprintf (name, len, "stream: file %s, %s%s", base, chunks,
              s->loop ? ", loop" : "");
  return name;
}

static unsigned int
stream_probe (struct pocl_device_ops *ops)
{
  int n = pocl_device_get_env_count (ops->device_name);
  return n < 0 ? 0 : (unsigned)n;
}

/* A wrong configuration does not fail the device's initialization (that
   would take the whole platform down): it is logged here, and each launch
   fails.  The source itself is opened at the first launch.  */
static cl_int
stream_init (unsigned j, cl_device_id device, const char *parameters)
{
  stream_data *s = calloc (1, sizeof (stream_data));
  cl_int err;
  if (s == NULL)
    return CL_OUT_OF_HOST_MEMORY;
  s->fd = -1;
  s->config_error = parse_parameters (s, j, parameters);
  if (!s->config_error)
    s->long_name = make_long_name (s);
  err = pocl_custom_init_device (device, &stream_driver, s);
  device->long_name = s->long_name ? s->long_name : "stream";
  POCL_MSG_PRINT_INFO ("stream %u: %s\n", j, device->long_name);
  return err;
}

void
pocl_stream_init_device_ops (struct pocl_device_ops *ops)
{
  pocl_custom_init_ops (ops);
  ops->device_name = "stream";
  ops->probe = stream_probe;
  ops->init = stream_init;
}
