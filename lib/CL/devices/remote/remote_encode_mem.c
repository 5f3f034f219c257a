/* remote_encode_mem.c - encoders of the buffer and image commands: each fills
   the memory command's message (remote_encode.h) from PoCL's command.  */

#include <string.h>

#include "pocl_util.h"
#include "remote_encode.h"

int
pocl_remote_enc_read (remote_enc *x)
{
  _cl_command_read *rd = &x->node->command.read;
  cl_mem mem = x->node->sync.event.event->mem_objs[0];
  cl_device_id dev = rd->src_device != NULL ? rd->src_device : x->dev;
  x->type = POCL_RMSG_READ;
  x->m.src_id = pocl_remote_wire_id (mem->id, dev);
  x->m.src_origin[0] = rd->offset;
  x->m.region[0] = x->m.data_size = rd->size;
  x->re->inflight.dst = rd->dst_host_ptr;
  x->re->inflight.dst_size = rd->size;
  if (pocl_remote_content_size_id (mem, dev, &x->m.size_id))
    {
      x->m.cmd.flags |= POCL_RCMD_CONTENT_SIZE;
      x->re->inflight.partial = 1;
    }
  return REMOTE_ENC_MEM;
}

int
pocl_remote_enc_write (remote_enc *x)
{
  _cl_command_write *wr = &x->node->command.write;
  x->type = POCL_RMSG_WRITE;
  x->m.dst_id = pocl_remote_wire_id (
      x->node->sync.event.event->mem_objs[0]->id, x->dev);
  x->m.dst_origin[0] = wr->offset;
  x->m.region[0] = x->m.data_size = wr->size;
  x->data = wr->src_host_ptr;
  x->data_size = wr->size;
  return REMOTE_ENC_MEM;
}

int
pocl_remote_enc_copy (remote_enc *x)
{
  _cl_command_copy *cp = &x->node->command.copy;
  x->type = POCL_RMSG_COPY;
  x->m.src_id = pocl_remote_wire_id (cp->src->id, x->dev);
  x->m.dst_id = pocl_remote_wire_id (cp->dst->id, x->dev);
  x->m.src_origin[0] = cp->src_offset;
  x->m.dst_origin[0] = cp->dst_offset;
  x->m.region[0] = cp->size;
  if (pocl_remote_content_size_id (cp->src, x->dev, &x->m.size_id))
    x->m.cmd.flags |= POCL_RCMD_CONTENT_SIZE;
  return REMOTE_ENC_MEM;
}

int
pocl_remote_enc_read_rect (remote_enc *x)
{
  _cl_command_read_rect *rr = &x->node->command.read_rect;
  x->type = POCL_RMSG_READ_RECT;
  x->m.src_id = pocl_remote_wire_id (
      x->node->sync.event.event->mem_objs[0]->id, x->dev);
  pocl_remote_enc_copy3 (x->m.src_origin, rr->buffer_origin);
  pocl_remote_enc_copy3 (x->m.region, rr->region);
  x->m.src_row_pitch = rr->buffer_row_pitch;
  x->m.src_slice_pitch = rr->buffer_slice_pitch;
  x->m.data_size = rr->region[0] * rr->region[1] * rr->region[2];
  pocl_remote_enc_expect (x->re,
                          (char *)rr->dst_host_ptr
                              + rr->host_origin[2] * rr->host_slice_pitch
                              + rr->host_origin[1] * rr->host_row_pitch
                              + rr->host_origin[0],
                          rr->region, rr->host_row_pitch,
                          rr->host_slice_pitch);
  return REMOTE_ENC_MEM;
}

int
pocl_remote_enc_write_rect (remote_enc *x)
{
  _cl_command_write_rect *wr = &x->node->command.write_rect;
  x->type = POCL_RMSG_WRITE_RECT;
  x->m.dst_id = pocl_remote_wire_id (
      x->node->sync.event.event->mem_objs[0]->id, x->dev);
  pocl_remote_enc_copy3 (x->m.dst_origin, wr->buffer_origin);
  pocl_remote_enc_copy3 (x->m.region, wr->region);
  x->m.dst_row_pitch = wr->buffer_row_pitch;
  x->m.dst_slice_pitch = wr->buffer_slice_pitch;
  x->m.data_size = wr->region[0] * wr->region[1] * wr->region[2];
  x->data = x->packed = pocl_remote_enc_pack (
      (const char *)wr->src_host_ptr + wr->host_origin[2] * wr->host_slice_pitch
          + wr->host_origin[1] * wr->host_row_pitch + wr->host_origin[0],
      wr->region, wr->host_row_pitch, wr->host_slice_pitch);
  x->data_size = x->m.data_size;
  return x->packed ? REMOTE_ENC_MEM : -1;
}

int
pocl_remote_enc_copy_rect (remote_enc *x)
{
  _cl_command_copy_rect *cr = &x->node->command.copy_rect;
  x->type = POCL_RMSG_COPY_RECT;
  x->m.src_id = pocl_remote_wire_id (cr->src->id, x->dev);
  x->m.dst_id = pocl_remote_wire_id (cr->dst->id, x->dev);
  pocl_remote_enc_copy3 (x->m.src_origin, cr->src_origin);
  pocl_remote_enc_copy3 (x->m.dst_origin, cr->dst_origin);
  pocl_remote_enc_copy3 (x->m.region, cr->region);
  x->m.src_row_pitch = cr->src_row_pitch;
  x->m.src_slice_pitch = cr->src_slice_pitch;
  x->m.dst_row_pitch = cr->dst_row_pitch;
  x->m.dst_slice_pitch = cr->dst_slice_pitch;
  return REMOTE_ENC_MEM;
}

int
pocl_remote_enc_fill (remote_enc *x)
{
  _cl_command_fill_mem *f = &x->node->command.memfill;
  x->type = POCL_RMSG_FILL;
  x->m.dst_id = pocl_remote_wire_id (
      x->node->sync.event.event->mem_objs[0]->id, x->dev);
  x->m.dst_origin[0] = f->offset;
  x->m.region[0] = f->size;
  x->m.data_size = x->data_size = f->pattern_size;
  x->data = f->pattern;
  return REMOTE_ENC_MEM;
}

/* A map reads the mapped region into the mapping's host memory, unless the
   application will overwrite it all.  */
int
pocl_remote_enc_map (remote_enc *x)
{
  mem_mapping_t *map = x->node->command.map.mapping;
  cl_mem mem = x->node->sync.event.event->mem_objs[0];
  if (map->map_flags & CL_MAP_WRITE_INVALIDATE_REGION)
    return pocl_remote_send_marker (x->s, x->re, x->c, x->waits, 0);
  if (mem->is_image && !IS_IMAGE1D_BUFFER (mem))
    {
      size_t region[3] = { map->region[0] * pocl_remote_enc_pixel_size (mem),
                           map->region[1], map->region[2] };
      x->type = POCL_RMSG_READ_IMAGE;
      x->m.src_id = pocl_remote_wire_id (mem->id, x->dev);
      pocl_remote_enc_copy3 (x->m.src_origin, map->origin);
      pocl_remote_enc_copy3 (x->m.region, map->region);
      x->m.data_size = region[0] * region[1] * region[2];
      pocl_remote_enc_expect (x->re, map->host_ptr, region, map->row_pitch,
                              map->slice_pitch);
      return REMOTE_ENC_MEM;
    }
  x->type = POCL_RMSG_READ;
  x->m.src_id = pocl_remote_wire_id (mem->id, x->dev);
  x->m.src_origin[0] = map->offset;
  x->m.region[0] = x->m.data_size = map->size;
  x->re->inflight.dst = map->host_ptr;
  x->re->inflight.dst_size = map->size;
  return REMOTE_ENC_MEM;
}

/* An unmap writes back what a writable mapping may have changed.  */
int
pocl_remote_enc_unmap (remote_enc *x)
{
  mem_mapping_t *map = x->node->command.unmap.mapping;
  cl_mem mem = x->node->sync.event.event->mem_objs[0];
  if (!(map->map_flags & (CL_MAP_WRITE | CL_MAP_WRITE_INVALIDATE_REGION)))
    return pocl_remote_send_marker (x->s, x->re, x->c, x->waits, 0);
  if (mem->is_image && !IS_IMAGE1D_BUFFER (mem))
    {
      size_t region[3] = { map->region[0] * pocl_remote_enc_pixel_size (mem),
                           map->region[1], map->region[2] };
      x->type = POCL_RMSG_WRITE_IMAGE;
      x->m.dst_id = pocl_remote_wire_id (mem->id, x->dev);
      pocl_remote_enc_copy3 (x->m.dst_origin, map->origin);
      pocl_remote_enc_copy3 (x->m.region, map->region);
      x->m.data_size = x->data_size = region[0] * region[1] * region[2];
      x->data = x->packed = pocl_remote_enc_pack (
          map->host_ptr, region, map->row_pitch ? map->row_pitch : region[0],
          map->slice_pitch ? map->slice_pitch : region[0] * region[1]);
      return x->packed ? REMOTE_ENC_MEM : -1;
    }
  x->type = POCL_RMSG_WRITE;
  x->m.dst_id = pocl_remote_wire_id (mem->id, x->dev);
  x->m.dst_origin[0] = map->offset;
  x->m.region[0] = x->m.data_size = x->data_size = map->size;
  x->data = map->host_ptr;
  return REMOTE_ENC_MEM;
}

/* clEnqueueReadImage, and clEnqueueCopyImageToBuffer (no host pointer).  */
int
pocl_remote_enc_read_image (remote_enc *x)
{
  _cl_command_read_image *ri = &x->node->command.read_image;
  x->m.src_id = pocl_remote_wire_id (ri->src->id, x->dev);
  pocl_remote_enc_copy3 (x->m.src_origin, ri->origin);
  pocl_remote_enc_copy3 (x->m.region, ri->region);
  if (ri->dst_host_ptr == NULL)
    {
      x->type = POCL_RMSG_COPY_IMAGE_TO_BUFFER;
      x->m.dst_id = pocl_remote_wire_id (ri->dst->id, x->dev);
      x->m.dst_origin[0] = ri->dst_offset;
      return REMOTE_ENC_MEM;
    }
  size_t region[3] = { ri->region[0] * pocl_remote_enc_pixel_size (ri->src),
                       ri->region[1], ri->region[2] };
  x->type = POCL_RMSG_READ_IMAGE;
  x->m.data_size = region[0] * region[1] * region[2];
  pocl_remote_enc_expect (x->re, (char *)ri->dst_host_ptr + ri->dst_offset,
                          region, ri->dst_row_pitch, ri->dst_slice_pitch);
  return REMOTE_ENC_MEM;
}

/* clEnqueueWriteImage, and clEnqueueCopyBufferToImage (no host pointer).  */
int
pocl_remote_enc_write_image (remote_enc *x)
{
  _cl_command_write_image *wi = &x->node->command.write_image;
  x->m.dst_id = pocl_remote_wire_id (wi->dst->id, x->dev);
  pocl_remote_enc_copy3 (x->m.dst_origin, wi->origin);
  pocl_remote_enc_copy3 (x->m.region, wi->region);
  if (wi->src_host_ptr == NULL)
    {
      x->type = POCL_RMSG_COPY_BUFFER_TO_IMAGE;
      x->m.src_id = pocl_remote_wire_id (wi->src->id, x->dev);
      x->m.src_origin[0] = wi->src_offset;
      return REMOTE_ENC_MEM;
    }
  size_t region[3] = { wi->region[0] * pocl_remote_enc_pixel_size (wi->dst),
                       wi->region[1], wi->region[2] };
  size_t row = wi->src_row_pitch ? wi->src_row_pitch : region[0];
  x->type = POCL_RMSG_WRITE_IMAGE;
  x->m.data_size = x->data_size = region[0] * region[1] * region[2];
  x->data = x->packed = pocl_remote_enc_pack (
      (const char *)wi->src_host_ptr + wi->src_offset, region, row,
      wi->src_slice_pitch ? wi->src_slice_pitch : row * region[1]);
  return x->packed ? REMOTE_ENC_MEM : -1;
}

int
pocl_remote_enc_copy_image (remote_enc *x)
{
  _cl_command_copy_image *ci = &x->node->command.copy_image;
  x->type = POCL_RMSG_COPY_IMAGE;
  x->m.src_id = pocl_remote_wire_id (ci->src->id, x->dev);
  x->m.dst_id = pocl_remote_wire_id (ci->dst->id, x->dev);
  pocl_remote_enc_copy3 (x->m.src_origin, ci->src_origin);
  pocl_remote_enc_copy3 (x->m.dst_origin, ci->dst_origin);
  pocl_remote_enc_copy3 (x->m.region, ci->region);
  return REMOTE_ENC_MEM;
}

int
pocl_remote_enc_fill_image (remote_enc *x)
{
  _cl_command_fill_image *fi = &x->node->command.fill_image;
  x->type = POCL_RMSG_FILL_IMAGE;
  x->m.dst_id = pocl_remote_wire_id (
      x->node->sync.event.event->mem_objs[0]->id, x->dev);
  pocl_remote_enc_copy3 (x->m.dst_origin, fi->origin);
  pocl_remote_enc_copy3 (x->m.region, fi->region);
  x->m.data_size = x->data_size = sizeof (cl_uint4);
  x->data = &fi->orig_pixel;
  return REMOTE_ENC_MEM;
}
