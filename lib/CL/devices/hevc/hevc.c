/* hevc.c - the HEVC decoder driver: a CL_DEVICE_TYPE_CUSTOM device whose
   built-in kernels decode HEVC access units into frames (libavcodec).
   doc/custom-devices.md, section "HEVC decoder", is the specification.

   Each cl_kernel owns a decoder (its create_state), so that two kernels
   decode two streams.  A launch splits its input into access units with
   libavcodec's HEVC parser (a fresh one per launch, flushed at its end:
   the input holds whole access units, and none must wait for the next
   launch), decodes them and converts every frame the decoder returns into
   the output buffer with libswscale.  Frames that cannot be delivered (the
   output buffer is too small, or the launch fails) stay queued in the
   kernel's state, bounded, and come first at its next launch.  */

#include "pocl_hevc.h"

#include "devices.h"
#include "pocl_custom.h"

#include <libavcodec/avcodec.h>
#include <libavutil/hwcontext.h>
#include <libavutil/imgutils.h>
#include <libavutil/log.h>
#include <libswscale/swscale.h>

#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Frames larger than this in either dimension are refused before anything
   is allocated for them.  */
#define HEVC_MAX_DIM 8192
/* Bytes of frames a kernel keeps for its next launch (one second of 1080p
   RGBA at 30 fps is 249 MB); frames beyond it are dropped, and logged.  */
#define HEVC_MAX_QUEUED ((size_t)256 << 20)
/* The input goes to the parser in pieces of this size, copied into a
   buffer with the padding libavcodec may read past a buffer's end.  */
#define HEVC_CHUNK ((size_t)1 << 20)

typedef enum
{
  OUT_NV12,
  OUT_RGBA
} hevc_format;

/* The device's decoding path, shared by all its kernels.  */
typedef struct hevc_device
{
  /* NULL: software decoding */
  AVBufferRef *hw_device;
  enum AVPixelFormat hw_format;
  int threads;
  char name[64];
} hevc_device;

typedef struct hevc_state
{
  hevc_format format;
  hevc_device *dev;
  AVCodecContext *ctx;
  AVPacket *pkt;
  AVFrame *frame;
  AVFrame *sw_frame;
  struct SwsContext *sws;
  uint8_t *chunk;
  /* U and V planes of a hardware decoder's NV12 frame, for RGBA */
  uint8_t *planar;
  size_t planar_cap;

  /* frames not yet delivered, back to back in the output format */
  uint8_t *queued;
  size_t queued_len, queued_cap;

  /* this launch: the output buffer, and the bytes written into it.  Once a
     frame did not fit (overflow), all of the launch's frames are queued.  */
  uint8_t *out;
  size_t out_cap, out_len;
  int overflow;
  size_t dropped;
  /* a decoder or conversion error in this launch */
  int failed;
} hevc_state;

static size_t
frame_bytes (hevc_format format, size_t w, size_t h)
{
  if (format == OUT_RGBA)
    return w * h * 4;
  return w * h + ((w + 1) / 2) * ((h + 1) / 2) * 2;
}

static enum AVPixelFormat
get_format (AVCodecContext *ctx, const enum AVPixelFormat *fmts)
{
  hevc_state *s = (hevc_state *)ctx->opaque;
  const enum AVPixelFormat *p;
  if (s->dev->hw_device != NULL)
    for (p = fmts; *p != AV_PIX_FMT_NONE; ++p)
      if (*p == s->dev->hw_format)
        return *p;
  /* no hardware path for this stream: libavcodec's software formats */
  return avcodec_default_get_format (ctx, fmts);
}

static void
free_state (void *p)
{
  hevc_state *s = (hevc_state *)p;
  if (s == NULL)
    return;
  avcodec_free_context (&s->ctx);
  av_packet_free (&s->pkt);
  av_frame_free (&s->frame);
  av_frame_free (&s->sw_frame);
  sws_freeContext (s->sws);
  av_free (s->chunk);
  free (s->planar);
  free (s->queued);
  free (s);
}

static void *
create_state (cl_device_id device, hevc_format format)
{
  hevc_device *dev = (hevc_device *)pocl_custom_driver_data (device);
  const AVCodec *codec = avcodec_find_decoder (AV_CODEC_ID_HEVC);
  hevc_state *s = calloc (1, sizeof (hevc_state));
  if (s == NULL || codec == NULL)
    goto fail;
  s->format = format;
  s->dev = dev;
  s->ctx = avcodec_alloc_context3 (codec);
  s->pkt = av_packet_alloc ();
  s->frame = av_frame_alloc ();
  s->sw_frame = av_frame_alloc ();
  s->chunk = av_mallocz (HEVC_CHUNK + AV_INPUT_BUFFER_PADDING_SIZE);
  if (s->ctx == NULL || s->pkt == NULL || s->frame == NULL
      || s->sw_frame == NULL || s->chunk == NULL)
    goto fail;
  s->ctx->opaque = s;
  /* Slice threads (wavefronts, x265's default) add no delay: a frame
     leaves the decoder as soon as the stream's reordering allows, which
     one launch per access unit needs.  */
  s->ctx->thread_count = dev->threads;
  s->ctx->thread_type = FF_THREAD_SLICE;
  s->ctx->max_pixels = (int64_t)HEVC_MAX_DIM * HEVC_MAX_DIM;
  if (dev->hw_device != NULL)
    {
      s->ctx->hw_device_ctx = av_buffer_ref (dev->hw_device);
      s->ctx->get_format = get_format;
      if (s->ctx->hw_device_ctx == NULL)
        goto fail;
    }
  if (avcodec_open2 (s->ctx, codec, NULL) < 0)
    goto fail;
  return s;

fail:
  POCL_MSG_ERR ("hevc: cannot set up a decoder\n");
  free_state (s);
  return NULL;
}

static void *
create_nv12 (cl_device_id device)
{
  return create_state (device, OUT_NV12);
}

static void *
create_rgba (cl_device_id device)
{
  return create_state (device, OUT_RGBA);
}

/* Appends n bytes of room to the queue; NULL when the queue is full.  */
static uint8_t *
queue_reserve (hevc_state *s, size_t n)
{
  if (s->queued_len + n > HEVC_MAX_QUEUED)
    return NULL;
  if (s->queued_len + n > s->queued_cap)
    {
      size_t cap = s->queued_cap ? s->queued_cap : n;
      while (cap < s->queued_len + n)
        cap *= 2;
      if (cap > HEVC_MAX_QUEUED)
        cap = HEVC_MAX_QUEUED;
      uint8_t *q = realloc (s->queued, cap);
      if (q == NULL)
        return NULL;
      s->queued = q;
      s->queued_cap = cap;
    }
  s->queued_len += n;
  return s->queued + s->queued_len - n;
}

/* The launch's frames so far go to the queue, and so will its next ones.  */
static void
start_queueing (hevc_state *s)
{
  uint8_t *q;
  if (s->overflow)
    return;
  s->overflow = 1;
  if (s->out_len == 0)
    return;
  q = queue_reserve (s, s->out_len);
  if (q != NULL)
    memcpy (q, s->out, s->out_len);
  else
    s->dropped += s->out_len;
  s->out_len = 0;
}

/* Where the next frame of n bytes goes, or NULL (dropped).  */
static uint8_t *
frame_destination (hevc_state *s, size_t n)
{
  uint8_t *q;
  if (!s->overflow && s->out_cap - s->out_len >= n)
    {
      s->out_len += n;
      return s->out + s->out_len - n;
    }
  start_queueing (s);
  q = queue_reserve (s, n);
  if (q == NULL)
    s->dropped += n;
  return q;
}

/* An NV12 frame (from hardware decoders) into NV12 output: a copy, as
   ffmpeg, which inserts no scaler for it.  */
static void
copy_nv12 (const AVFrame *f, uint8_t *dst)
{
  size_t w = (size_t)f->width, h = (size_t)f->height;
  size_t uv_w = ((w + 1) / 2) * 2, uv_h = (h + 1) / 2, y;
  uint8_t *uv = dst + w * h;
  for (y = 0; y < h; ++y)
    memcpy (dst + y * w, f->data[0] + (ptrdiff_t)y * f->linesize[0], w);
  for (y = 0; y < uv_h; ++y)
    memcpy (uv + y * uv_w, f->data[1] + (ptrdiff_t)y * f->linesize[1],
            uv_w);
}

/* Converts frame f into dst as the vf_scale filter that the ffmpeg command
   line inserts would: bicubic (its default flags), the frame's colour
   matrix and range.  */
static int
convert (hevc_state *s, const AVFrame *f, uint8_t *dst)
{
  int w = f->width, h = f->height;
  enum AVPixelFormat out_fmt
      = s->format == OUT_RGBA ? AV_PIX_FMT_RGBA : AV_PIX_FMT_NV12;
  uint8_t *planes[4] = { dst, NULL, NULL, NULL };
  int strides[4] = { w * 4, 0, 0, 0 };
  int *inv_table, *table, src_range, dst_range, brightness, contrast,
      saturation;
  enum AVPixelFormat src_fmt = (enum AVPixelFormat)f->format;
  const uint8_t *src[4] = { f->data[0], f->data[1], f->data[2], f->data[3] };
  int src_strides[4]
      = { f->linesize[0], f->linesize[1], f->linesize[2], f->linesize[3] };

  if (src_fmt == AV_PIX_FMT_NV12 && s->format == OUT_NV12)
    {
      copy_nv12 (f, dst);
      return 0;
    }
  if (src_fmt == AV_PIX_FMT_NV12)
    {
      /* libswscale's RGBA from NV12 rounds otherwise than from the
         software decoder's YUV420P: deinterleave, for the same pixels */
      size_t cw = ((size_t)w + 1) / 2, ch = ((size_t)h + 1) / 2, x, y;
      if (s->planar_cap < cw * ch * 2)
        {
          free (s->planar);
          s->planar_cap = 0;
          s->planar = malloc (cw * ch * 2);
          if (s->planar == NULL)
            {
              POCL_MSG_ERR ("hevc: no memory to convert a frame\n");
              return -1;
            }
          s->planar_cap = cw * ch * 2;
        }
      for (y = 0; y < ch; ++y)
        {
          const uint8_t *uv = f->data[1] + (ptrdiff_t)y * f->linesize[1];
          uint8_t *u = s->planar + y * cw, *v = s->planar + (ch + y) * cw;
          for (x = 0; x < cw; ++x)
            {
              u[x] = uv[2 * x];
              v[x] = uv[2 * x + 1];
            }
        }
      src[1] = s->planar;
      src[2] = s->planar + ch * cw;
      src_strides[1] = src_strides[2] = (int)cw;
      src_fmt = AV_PIX_FMT_YUV420P;
    }
  s->sws = sws_getCachedContext (s->sws, w, h, src_fmt, w, h, out_fmt,
                                 SWS_BICUBIC, NULL, NULL, NULL);
  if (s->sws == NULL)
    {
      POCL_MSG_ERR ("hevc: no conversion from %s at %dx%d\n",
                    av_get_pix_fmt_name ((enum AVPixelFormat)f->format), w,
                    h);
      return -1;
    }
  if (sws_getColorspaceDetails (s->sws, &inv_table, &src_range, &table,
                                &dst_range, &brightness, &contrast,
                                &saturation)
      >= 0)
    {
      inv_table = (int *)sws_getCoefficients (f->colorspace);
      if (f->color_range != AVCOL_RANGE_UNSPECIFIED)
        src_range = f->color_range == AVCOL_RANGE_JPEG;
      sws_setColorspaceDetails (s->sws, inv_table, src_range, table,
                                dst_range, brightness, contrast, saturation);
    }
  if (s->format == OUT_NV12)
    {
      planes[1] = dst + (size_t)w * (size_t)h;
      strides[0] = w;
      strides[1] = ((w + 1) / 2) * 2;
    }
  if (sws_scale (s->sws, src, src_strides, 0, h, planes, strides)
      != h)
    {
      POCL_MSG_ERR ("hevc: converting a %dx%d frame failed\n", w, h);
      return -1;
    }
  return 0;
}

/* One frame from the decoder into the output (or the queue).  */
static void
emit_frame (hevc_state *s, AVFrame *f)
{
  uint8_t *dst;
  if (f->format == s->dev->hw_format && s->dev->hw_device != NULL)
    {
      av_frame_unref (s->sw_frame);
      if (av_hwframe_transfer_data (s->sw_frame, f, 0) < 0)
        {
          POCL_MSG_ERR ("hevc: cannot copy a frame from the hardware\n");
          s->failed = 1;
          return;
        }
      s->sw_frame->colorspace = f->colorspace;
      s->sw_frame->color_range = f->color_range;
      f = s->sw_frame;
    }
  if (f->width <= 0 || f->height <= 0 || f->width > HEVC_MAX_DIM
      || f->height > HEVC_MAX_DIM)
    {
      POCL_MSG_ERR ("hevc: refusing a %dx%d frame\n", f->width, f->height);
      s->failed = 1;
      return;
    }
  dst = frame_destination (
      s, frame_bytes (s->format, (size_t)f->width, (size_t)f->height));
  if (dst != NULL && convert (s, f, dst) != 0)
    s->failed = 1;
}

/* Takes every frame the decoder has ready.  */
static void
receive_frames (hevc_state *s)
{
  int ret;
  while ((ret = avcodec_receive_frame (s->ctx, s->frame)) >= 0)
    {
      emit_frame (s, s->frame);
      av_frame_unref (s->frame);
    }
  if (ret != AVERROR (EAGAIN) && ret != AVERROR_EOF)
    {
      POCL_MSG_ERR ("hevc: decoding failed: %s\n", av_err2str (ret));
      s->failed = 1;
    }
}

/* One access unit (a parser packet) into the decoder.  */
static void
decode_packet (hevc_state *s, uint8_t *data, int size)
{
  int ret;
  s->pkt->data = data;
  s->pkt->size = size;
  /* not reference-counted: libavcodec copies it, padded */
  ret = avcodec_send_packet (s->ctx, s->pkt);
  if (ret == AVERROR (EAGAIN))
    {
      receive_frames (s);
      ret = avcodec_send_packet (s->ctx, s->pkt);
    }
  av_packet_unref (s->pkt);
  if (ret < 0)
    {
      /* the decoder resynchronises at the next random access point */
      POCL_MSG_ERR ("hevc: access unit of %d bytes refused: %s\n", size,
                    av_err2str (ret));
      s->failed = 1;
    }
  receive_frames (s);
}

/* Decodes all access units of data[0..n).  */
static cl_int
decode (hevc_state *s, const uint8_t *data, size_t n)
{
  AVCodecParserContext *parser = av_parser_init (AV_CODEC_ID_HEVC);
  size_t chunk_len = 0, chunk_pos = 0;
  if (parser == NULL)
    {
      POCL_MSG_ERR ("hevc: no HEVC parser in libavcodec\n");
      return CL_OUT_OF_HOST_MEMORY;
    }
  for (;;)
    {
      uint8_t *pdata = NULL;
      int psize = 0, used, flushing;
      if (chunk_pos == chunk_len && n > 0)
        {
          chunk_len = n < HEVC_CHUNK ? n : HEVC_CHUNK;
          memcpy (s->chunk, data, chunk_len);
          memset (s->chunk + chunk_len, 0, AV_INPUT_BUFFER_PADDING_SIZE);
          data += chunk_len;
          n -= chunk_len;
          chunk_pos = 0;
        }
      /* with no input left, this call flushes the parser's last unit */
      flushing = chunk_pos == chunk_len;
      used = av_parser_parse2 (parser, s->ctx, &pdata, &psize,
                               s->chunk + chunk_pos,
                               (int)(chunk_len - chunk_pos), AV_NOPTS_VALUE,
                               AV_NOPTS_VALUE, 0);
      if (used < 0)
        break;
      chunk_pos += (size_t)used;
      if (psize > 0)
        decode_packet (s, pdata, psize);
      if (flushing && psize == 0)
        break;
    }
  av_parser_close (parser);
  return CL_SUCCESS;
}

/* End of stream: the decoder's delayed frames, then a fresh start.  */
static void
drain (hevc_state *s)
{
  int ret = avcodec_send_packet (s->ctx, NULL);
  if (ret < 0 && ret != AVERROR_EOF)
    {
      POCL_MSG_ERR ("hevc: draining failed: %s\n", av_err2str (ret));
      s->failed = 1;
    }
  receive_frames (s);
  avcodec_flush_buffers (s->ctx);
}

static cl_int
hevc_run (pocl_custom_launch *launch)
{
  hevc_state *s = (hevc_state *)launch->state;
  size_t in_cap, in_size_cap, out_size_cap;
  const uint8_t *in = pocl_custom_arg_buffer (launch, 0, &in_cap);
  const uint8_t *in_size = pocl_custom_arg_buffer (launch, 1, &in_size_cap);
  uint8_t *out = pocl_custom_arg_buffer (launch, 2, &s->out_cap);
  uint8_t *out_size = pocl_custom_arg_buffer (launch, 3, &out_size_cap);
  cl_ulong n, written;
  cl_int err = CL_SUCCESS;

  if (in_size == NULL || in_size_cap < sizeof (cl_ulong) || out == NULL
      || out_size == NULL || out_size_cap < sizeof (cl_ulong))
    {
      POCL_MSG_ERR ("hevc: a buffer argument is missing, or a size buffer "
                    "holds less than 8 bytes\n");
      return CL_INVALID_ARG_SIZE;
    }
  memcpy (&n, in_size, sizeof (n));
  if (n > 0 && (in == NULL || n > in_cap))
    {
      POCL_MSG_ERR ("hevc: bitstream_size %" PRIu64
                    " exceeds the bitstream buffer (%zu bytes)\n",
                    (uint64_t)n, in == NULL ? (size_t)0 : in_cap);
      return CL_INVALID_ARG_SIZE;
    }

  s->out = out;
  s->out_len = 0;
  s->overflow = 0;
  s->dropped = 0;
  s->failed = 0;
  /* frames left from earlier launches come first */
  if (s->queued_len > 0)
    {
      if (s->queued_len <= s->out_cap)
        {
          memcpy (out, s->queued, s->queued_len);
          s->out_len = s->queued_len;
          /* queueing is the exception: hold no memory for it */
          free (s->queued);
          s->queued = NULL;
          s->queued_len = s->queued_cap = 0;
        }
      else
        s->overflow = 1;
    }

  if (n == 0)
    drain (s);
  else
    err = decode (s, in, (size_t)n);

  if (err == CL_SUCCESS && s->failed)
    {
      POCL_MSG_ERR ("hevc: invalid bitstream in a launch of %" PRIu64
                    " bytes\n",
                    (uint64_t)n);
      err = CL_INVALID_VALUE;
    }
  else if (err == CL_SUCCESS && s->overflow)
    {
      POCL_MSG_ERR ("hevc: frames of %zu bytes do not fit the frames buffer "
                    "(%zu bytes); they stay queued\n",
                    s->queued_len, s->out_cap);
      err = CL_INVALID_BUFFER_SIZE;
    }
  /* a failed launch delivers nothing: its frames wait for the next one */
  if (err != CL_SUCCESS)
    start_queueing (s);
  if (s->dropped > 0)
    POCL_MSG_ERR ("hevc: %zu bytes of frames dropped: more than %zu bytes "
                  "queued\n",
                  s->dropped, HEVC_MAX_QUEUED);
  written = s->out_len;
  memcpy (out_size, &written, sizeof (written));
  s->out = NULL;
  return err;
}

static const pocl_argument_info hevc_args[] = {
  { (char *)"uchar*", (char *)"bitstream", CL_KERNEL_ARG_ADDRESS_GLOBAL,
    CL_KERNEL_ARG_ACCESS_NONE, CL_KERNEL_ARG_TYPE_CONST,
    POCL_ARG_TYPE_POINTER, sizeof (cl_mem) },
  { (char *)"ulong*", (char *)"bitstream_size", CL_KERNEL_ARG_ADDRESS_GLOBAL,
    CL_KERNEL_ARG_ACCESS_NONE, CL_KERNEL_ARG_TYPE_CONST,
    POCL_ARG_TYPE_POINTER, sizeof (cl_mem) },
  { (char *)"uchar*", (char *)"frames", CL_KERNEL_ARG_ADDRESS_GLOBAL,
    CL_KERNEL_ARG_ACCESS_NONE, CL_KERNEL_ARG_TYPE_NONE, POCL_ARG_TYPE_POINTER,
    sizeof (cl_mem) },
  { (char *)"ulong*", (char *)"frames_size", CL_KERNEL_ARG_ADDRESS_GLOBAL,
    CL_KERNEL_ARG_ACCESS_NONE, CL_KERNEL_ARG_TYPE_NONE, POCL_ARG_TYPE_POINTER,
    sizeof (cl_mem) },
};

static const pocl_custom_kernel hevc_kernels[] = {
  { "pocl.hevc.decode.nv12", 4, hevc_args, hevc_run, create_nv12,
    free_state },
  { "pocl.hevc.decode.rgba", 4, hevc_args, hevc_run, create_rgba,
    free_state },
};

static void
hevc_uninit (cl_device_id device)
{
  hevc_device *dev = (hevc_device *)pocl_custom_driver_data (device);
  if (dev == NULL)
    return;
  av_buffer_unref (&dev->hw_device);
  free (dev);
}

static const pocl_custom_driver hevc_driver
    = { hevc_kernels, sizeof (hevc_kernels) / sizeof (hevc_kernels[0]),
        hevc_uninit };

/* The first hardware decoder of `types` that opens, if any.  */
static void
open_hw_device (hevc_device *dev, const char *const *types, unsigned n)
{
  const AVCodec *codec = avcodec_find_decoder (AV_CODEC_ID_HEVC);
  unsigned i;
  int j, ret;
  for (i = 0; i < n && codec != NULL; ++i)
    {
      enum AVHWDeviceType t = av_hwdevice_find_type_by_name (types[i]);
      const AVCodecHWConfig *cfg = NULL;
      if (t == AV_HWDEVICE_TYPE_NONE)
        {
          POCL_MSG_PRINT_INFO ("hevc: libavutil has no %s support\n",
                               types[i]);
          continue;
        }
      for (j = 0; (cfg = avcodec_get_hw_config (codec, j)) != NULL; ++j)
        if ((cfg->methods & AV_CODEC_HW_CONFIG_METHOD_HW_DEVICE_CTX)
            && cfg->device_type == t)
          break;
      if (cfg == NULL)
        {
          POCL_MSG_PRINT_INFO ("hevc: libavcodec's HEVC decoder has no %s "
                               "hwaccel\n",
                               types[i]);
          continue;
        }
      ret = av_hwdevice_ctx_create (&dev->hw_device, t, NULL, NULL, 0);
      if (ret < 0)
        {
          POCL_MSG_PRINT_INFO ("hevc: no %s hardware decoding: %s\n",
                               types[i], av_err2str (ret));
          continue;
        }
      dev->hw_format = cfg->pix_fmt;
      snprintf (dev->name, sizeof (dev->name), "hevc: libavcodec %s",
                types[i]);
      return;
    }
}

/* POCL_HEVC<n>_PARAMETERS: comma-separated hwaccel=auto|none|cuda|vaapi|
   vdpau and threads=N.  */
static int
parse_parameters (hevc_device *dev, const char *parameters,
                  const char **hwaccel)
{
  char *copy, *tok, *save = NULL;
  int ok = 1;
  *hwaccel = "auto";
  if (parameters == NULL || *parameters == 0)
    return 1;
  copy = strdup (parameters);
  if (copy == NULL)
    return 0;
  for (tok = strtok_r (copy, ",", &save); tok != NULL;
       tok = strtok_r (NULL, ",", &save))
    {
      char *end = NULL;
      if (strcmp (tok, "hwaccel=auto") == 0)
        *hwaccel = "auto";
      else if (strcmp (tok, "hwaccel=none") == 0)
        *hwaccel = "none";
      else if (strcmp (tok, "hwaccel=cuda") == 0)
        *hwaccel = "cuda";
      else if (strcmp (tok, "hwaccel=vaapi") == 0)
        *hwaccel = "vaapi";
      else if (strcmp (tok, "hwaccel=vdpau") == 0)
        *hwaccel = "vdpau";
      else if (strncmp (tok, "threads=", 8) == 0)
        {
          long t = strtol (tok + 8, &end, 10);
          if (end == tok + 8 || *end != 0 || t < 0 || t > 64)
            ok = 0;
          else
            dev->threads = (int)t;
        }
      else
        ok = 0;
      if (!ok)
        {
          POCL_MSG_ERR ("hevc: unknown parameter \"%s\" (hwaccel=auto|none|"
                        "cuda|vaapi|vdpau, threads=0..64)\n",
                        tok);
          break;
        }
    }
  free (copy);
  return ok;
}

static unsigned int
hevc_probe (struct pocl_device_ops *ops)
{
  int n = pocl_device_get_env_count (ops->device_name);
  return n < 0 ? 0 : (unsigned)n;
}

static cl_int
hevc_init (unsigned j, cl_device_id device, const char *parameters)
{
  static const char *const auto_types[] = { "cuda", "vaapi", "vdpau" };
  hevc_device *dev = calloc (1, sizeof (hevc_device));
  const char *hwaccel;
  cl_int err;
  if (dev == NULL)
    return CL_OUT_OF_HOST_MEMORY;
  /* libavcodec reports damaged streams on stderr; the launch's failure and
     its POCL_MSG_ERR say what matters */
  if (getenv ("POCL_DEBUG") == NULL)
    av_log_set_level (AV_LOG_FATAL);
  /* 0: libavcodec picks one thread per CPU */
  dev->threads = 0;
  if (!parse_parameters (dev, parameters, &hwaccel))
    {
      free (dev);
      return CL_INVALID_DEVICE;
    }
  strcpy (dev->name, "hevc: libavcodec software");
  if (strcmp (hwaccel, "auto") == 0)
    open_hw_device (dev, auto_types, 3);
  else if (strcmp (hwaccel, "none") != 0)
    open_hw_device (dev, &hwaccel, 1);
  if (dev->hw_device == NULL && strcmp (hwaccel, "none") != 0)
    POCL_MSG_PRINT_INFO ("hevc%u: decoding in software\n", j);

  err = pocl_custom_init_device (device, &hevc_driver, dev);
  if (err != CL_SUCCESS)
    {
      av_buffer_unref (&dev->hw_device);
      free (dev);
      return err;
    }
  device->short_name = "hevc";
  device->long_name = dev->name;
  return CL_SUCCESS;
}

void
pocl_hevc_init_device_ops (struct pocl_device_ops *ops)
{
  pocl_custom_init_ops (ops);
  ops->device_name = "hevc";
  ops->probe = hevc_probe;
  ops->init = hevc_init;
}
