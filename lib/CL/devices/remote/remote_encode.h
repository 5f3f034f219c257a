/* remote_encode.h - the encoders of OpenCL commands into wire messages: one
   small function per command type, found through the table in
   remote_commands.c.  A new command is one function and one entry there.  */

#ifndef POCL_REMOTE_ENCODE_H
#define POCL_REMOTE_ENCODE_H

#include "remote.h"

/* What an encoder works on.  A memory command's encoder fills m, type and
   the payload (data, data_size; packed when data is a temporary copy it
   allocated) and returns REMOTE_ENC_MEM: pocl_remote_send_command sends it.
   Other encoders send their message themselves and return the result of
   sending (0, -1 when the connection failed, -2 when not supported).  */
typedef struct remote_enc
{
  remote_server *s;
  _cl_command_node *node;
  remote_event *re;
  pocl_remote_cmd *c;
  struct iovec *waits;
  /* the device whose objects the command names */
  cl_device_id dev;
  pocl_remote_mem_cmd m;
  uint32_t type;
  const void *data;
  size_t data_size;
  void *packed;
} remote_enc;

#define REMOTE_ENC_MEM 1

typedef int (*remote_encoder) (remote_enc *x);

/* Shared by the encoders (remote_encode.c).  */
size_t pocl_remote_enc_pixel_size (cl_mem image);
void *pocl_remote_enc_pack (const char *src, const size_t *region,
                            size_t row_pitch, size_t slice_pitch);
void pocl_remote_enc_expect (remote_event *re, void *dst,
                             const size_t *region, size_t row_pitch,
                             size_t slice_pitch);
void pocl_remote_enc_copy3 (uint64_t *dst, const size_t *src);

/* Buffer and image commands (remote_encode_mem.c).  */
int pocl_remote_enc_read (remote_enc *x);
int pocl_remote_enc_write (remote_enc *x);
int pocl_remote_enc_copy (remote_enc *x);
int pocl_remote_enc_read_rect (remote_enc *x);
int pocl_remote_enc_write_rect (remote_enc *x);
int pocl_remote_enc_copy_rect (remote_enc *x);
int pocl_remote_enc_fill (remote_enc *x);
int pocl_remote_enc_map (remote_enc *x);
int pocl_remote_enc_unmap (remote_enc *x);
int pocl_remote_enc_read_image (remote_enc *x);
int pocl_remote_enc_write_image (remote_enc *x);
int pocl_remote_enc_copy_image (remote_enc *x);
int pocl_remote_enc_fill_image (remote_enc *x);

/* A run of a command buffer: one message where the server has the buffer,
   else the marker of its end (remote_cmdbuf.c).  */
int pocl_remote_enc_cmdbuf_run (remote_enc *x);

#endif
