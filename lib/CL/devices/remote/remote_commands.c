/* remote_commands.c - one wire message per OpenCL command: kernel launches
   with their arguments, memory commands with their data, markers.  Called
   from pocl_remote_submit on the application's thread.  */

#include <string.h>

#include "pocl_image_util.h"
#include "pocl_remote_pixel.h"
#include "pocl_util.h"
#include "remote.h"

/* NDRange argument blobs up to this size stay on the stack.  */
#define STACK_ARGS 2048

/* pocld sizes image data with the same function; the device advertises only
   formats where it agrees with PoCL's own (store_image_formats).  */
static size_t
pixel_size (cl_mem image)
{
  return pocl_remote_pixel_size (image->image_channel_order,
                                 image->image_channel_data_type);
}

/* Sends one memory command; the data, if any, follows the waits inline or
   goes on the data socket.  `packed`: data is our temporary copy, which the
   replay log must copy too; otherwise it is the application's memory.  */
int
pocl_remote_send_mem (remote_server *s, uint32_t type, remote_event *re,
          pocl_remote_mem_cmd *m, struct iovec *waits, const void *data,
          size_t data_size, int packed)
{
  int on_data_socket = data_size >= POCL_REMOTE_DATA_SOCKET_THRESHOLD;
  struct iovec iov[2] = { *waits, { (void *)data, data_size } };
  if (!on_data_socket)
    return pocl_remote_send_ref (s, 0, type, re->id, m, sizeof (*m), iov,
                                 data ? 2 : 1, packed ? 2 : 1);
  m->cmd.flags |= POCL_RCMD_DATA_ON_DATA_SOCKET;
  pthread_mutex_lock (&s->data_order_lock);
  int r = pocl_remote_send (s, 0, type, re->id, m, sizeof (*m), iov, 1);
  if (r == 0)
    r = pocl_remote_send_ref (s, 1, POCL_RMSG_DATA, re->id, NULL, 0, &iov[1],
                              1, packed ? 1 : 0);
  pthread_mutex_unlock (&s->data_order_lock);
  return r;
}

/* Copies a 3D region of a pitched host array into a packed buffer.  */
static void *
pack_region (const char *src, const size_t *region, size_t row_pitch,
             size_t slice_pitch)
{
  char *p = malloc (region[0] * region[1] * region[2]);
  size_t y, z;
  if (p == NULL)
    return NULL;
  for (z = 0; z < region[2]; ++z)
    for (y = 0; y < region[1]; ++y)
      memcpy (p + (z * region[1] + y) * region[0],
              src + z * slice_pitch + y * row_pitch, region[0]);
  return p;
}

/* Sets up re so that the completion payload lands in dst with the given
   pitches (0: packed).  */
static void
expect_data (remote_event *re, void *dst, const size_t *region,
             size_t row_pitch, size_t slice_pitch)
{
  re->dst = dst;
  re->dst_size = region[0] * region[1] * region[2];
  re->region[0] = region[0];
  re->region[1] = region[1];
  re->region[2] = region[2];
  re->row_pitch = row_pitch ? row_pitch : region[0];
  re->slice_pitch = slice_pitch ? slice_pitch : re->row_pitch * region[1];
  re->unpack = (re->row_pitch != region[0]
                || re->slice_pitch != region[0] * region[1]);
}

static void
copy3 (uint64_t *dst, const size_t *src)
{
  dst[0] = src[0];
  dst[1] = src[1];
  dst[2] = src[2];
}

static int
send_ndrange (remote_server *s, _cl_command_node *node, remote_event *re,
              pocl_remote_cmd *c, struct iovec *waits)
{
  cl_device_id dev = node->device;
  _cl_command_run *run = &node->command.run;
  pocl_kernel_metadata_t *meta = run->kernel->meta;
  struct pocl_context *pc = &run->pc;
  pocl_remote_ndrange b;
  unsigned i;

  memset (&b, 0, sizeof (b));
  b.cmd = *c;
  b.kernel_id = pocl_remote_wire_id (run->kernel->id, dev);
  b.work_dim = pc->work_dim;
  b.num_args = meta->num_args;
  for (i = 0; i < 3; ++i)
    {
      b.offset[i] = pc->global_offset[i];
      b.local[i] = pc->local_size[i];
      b.global[i] = pc->num_groups[i] * pc->local_size[i];
    }

  size_t size = 0;
  for (i = 0; i < meta->num_args; ++i)
    {
      size += sizeof (pocl_remote_arg);
      if (meta->arg_info[i].type == POCL_ARG_TYPE_NONE)
        size += (run->arguments[i].size + 7) & ~(size_t)7;
    }
  char stack[STACK_ARGS];
  char *args = size <= STACK_ARGS ? stack : malloc (size);
  if (args == NULL)
    return -1;
  memset (args, 0, size);

  char *p = args;
  for (i = 0; i < meta->num_args; ++i)
    {
      struct pocl_argument *a = &run->arguments[i];
      struct pocl_argument_info *ai = &meta->arg_info[i];
      pocl_remote_arg ra;
      memset (&ra, 0, sizeof (ra));
      if (ARGP_IS_LOCAL (ai))
        {
          ra.kind = POCL_REMOTE_ARG_LOCAL;
          ra.a = a->size;
        }
      else if (ai->type == POCL_ARG_TYPE_POINTER)
        {
          if (a->value == NULL
              || (a->is_svm && *(void **)a->value == NULL))
            ra.kind = POCL_REMOTE_ARG_NULL;
          else if (a->is_svm)
            {
              /* the same address on both sides */
              ra.kind = POCL_REMOTE_ARG_SVM;
              ra.a = (uint64_t)(uintptr_t) * (void **)a->value;
            }
          else
            {
              ra.kind = POCL_REMOTE_ARG_BUFFER;
              ra.a = pocl_remote_wire_id ((*(cl_mem *)a->value)->id, dev);
              ra.b = a->offset;
            }
        }
      else if (ai->type == POCL_ARG_TYPE_IMAGE)
        {
          ra.kind = POCL_REMOTE_ARG_IMAGE;
          ra.a = pocl_remote_wire_id ((*(cl_mem *)a->value)->id, dev);
        }
      else if (ai->type == POCL_ARG_TYPE_SAMPLER)
        {
          ra.kind = POCL_REMOTE_ARG_SAMPLER;
          ra.a = pocl_remote_wire_id ((*(cl_sampler *)a->value)->id, dev);
        }
      else
        {
          ra.kind = POCL_REMOTE_ARG_SCALAR;
          ra.a = a->size;
        }
      memcpy (p, &ra, sizeof (ra));
      p += sizeof (ra);
      if (ra.kind == POCL_REMOTE_ARG_SCALAR)
        {
          if (a->value)
            memcpy (p, a->value, a->size);
          p += (a->size + 7) & ~(size_t)7;
        }
    }
  b.args_size = size;

  struct iovec iov[2] = { *waits, { args, size } };
  int r = __atomic_load_n (&pocl_remote_svm_fine, __ATOMIC_RELAXED)
              ? pocl_remote_svm_send_ndrange (s, re, &b, iov)
              : pocl_remote_send (s, 0, POCL_RMSG_NDRANGE, re->id, &b,
                                  sizeof (b), iov, 2);
  if (args != stack)
    free (args);
  return r;
}

int
pocl_remote_send_marker (remote_server *s, remote_event *re,
                         pocl_remote_cmd *c, struct iovec *waits, int barrier)
{
  if (barrier)
    c->flags |= POCL_RCMD_BARRIER;
  return pocl_remote_send (s, 0, POCL_RMSG_MARKER, re->id, c, sizeof (*c),
                           waits, 1);
}

int
pocl_remote_content_size_id (cl_mem mem, cl_device_id dev, uint64_t *size_id)
{
  cl_mem sb = mem->size_buffer;
  if (sb == NULL)
    return 0;
  /* only when the device holds the size buffer's latest content */
  pocl_mem_identifier *p = &sb->device_ptrs[dev->global_mem_id];
  if (p->mem_ptr == NULL || p->version != sb->latest_version)
    return 0;
  *size_id = pocl_remote_wire_id (sb->id, dev);
  return 1;
}

cl_command_queue
pocl_remote_default_queue (cl_mem mem, cl_device_id dev)
{
  cl_context ctx = mem->context;
  unsigned i;
  for (i = 0; i < ctx->num_devices; ++i)
    if (ctx->devices[i] == dev)
      return ctx->default_queues[i];
  return NULL;
}

cl_command_queue
pocl_remote_exec_queue (_cl_command_node *node, cl_command_queue cq)
{
  if (node->type != CL_COMMAND_READ_BUFFER
      || node->command.read.src_device == NULL)
    return cq;
  return pocl_remote_default_queue (node->sync.event.event->mem_objs[0],
                                    node->command.read.src_device);
}

static int
is_cross_server_d2d (_cl_command_node *node, remote_server *own)
{
  if (node->type != CL_COMMAND_MIGRATE_MEM_OBJECTS
      || node->command.migrate.type != ENQUEUE_MIGRATE_TYPE_D2D)
    return 0;
  remote_device_data *sd
      = (remote_device_data *)node->command.migrate.src_device->data;
  return sd->server != own;
}

remote_server *
pocl_remote_wait_server (_cl_command_node *node, remote_server *own)
{
  if (!is_cross_server_d2d (node, own))
    return own;
  return ((remote_device_data *)node->command.migrate.src_device->data)
      ->server;
}

/* A buffer moves from the device that has its latest content to this one.
   On one server: a native copy between the two devices' objects.  Between
   servers: MIGRATE_IN tells this server (s) to expect the bytes, then PUSH,
   with the wait list, tells the source server to send them once ready.  The
   migration event completes on s.  */
static int
send_d2d (remote_server *s, _cl_command_node *node, remote_event *re,
          pocl_remote_mem_cmd *m, struct iovec *waits, cl_mem mem, int image)
{
  cl_device_id dst = node->device;
  cl_device_id src = node->command.migrate.src_device;
  remote_device_data *sd = (remote_device_data *)src->data;
  if (!is_cross_server_d2d (node, s))
    {
      m->src_id = pocl_remote_wire_id (mem->id, src);
      m->dst_id = pocl_remote_wire_id (mem->id, dst);
      if (image)
        return pocl_remote_send (s, 0, POCL_RMSG_COPY_IMAGE, re->id, m,
                                 sizeof (*m), waits, 1);
      m->region[0] = mem->size;
      return pocl_remote_send (s, 0, POCL_RMSG_COPY, re->id, m, sizeof (*m),
                               waits, 1);
    }

  cl_command_queue src_q = pocl_remote_default_queue (mem, src);
  if (src_q == NULL)
    return -2;
  pocl_remote_migrate mi;
  memset (&mi, 0, sizeof (mi));
  mi.cmd = m->cmd;
  mi.cmd.num_waits = 0;
  mi.src_id = pocl_remote_wire_id (mem->id, src);
  mi.dst_id = pocl_remote_wire_id (mem->id, dst);
  mi.size = mem->size;
  mi.peer = sd->server->index;
  cl_mem sb = mem->size_buffer;
  if (!image && pocl_remote_content_size_id (mem, src, &mi.src_size_id))
    {
      /* the size travels along into the destination's size buffer */
      POCL_LOCK_OBJ (sb);
      if (sb->device_ptrs[dst->global_mem_id].mem_ptr == NULL
          && dst->ops->alloc_mem_obj (dst, sb, NULL) != CL_SUCCESS)
        mi.src_size_id = 0;
      POCL_UNLOCK_OBJ (sb);
      if (mi.src_size_id)
        mi.dst_size_id = pocl_remote_wire_id (sb->id, dst);
    }
  if (pocl_remote_send (s, 0, POCL_RMSG_MIGRATE_IN, re->id, &mi, sizeof (mi),
                        NULL, 0))
    return -1;
  mi.cmd = m->cmd;
  mi.cmd.queue_id = src_q->id;
  mi.peer = s->index;
  return pocl_remote_send (sd->server, 0, POCL_RMSG_PUSH, re->id, &mi,
                           sizeof (mi), waits, 1);
}

/* Whole-object transfers between mem_host_ptr and the device, which PoCL
   inserts to keep buffers coherent (host <-> device migrations), and
   between devices.  */
static int
send_migration (remote_server *s, _cl_command_node *node, remote_event *re,
                pocl_remote_mem_cmd *m, struct iovec *waits)
{
  cl_mem mem = node->sync.event.event->mem_objs[0];
  uint64_t id = pocl_remote_wire_id (mem->id, node->device);
  size_t region[3] = { mem->size, 1, 1 };
  size_t row = 0, slice = 0;
  int image = mem->is_image && !IS_IMAGE1D_BUFFER (mem);

  if (image)
    {
      region[0] = mem->image_width;
      region[1] = mem->image_height ? mem->image_height : 1;
      region[2] = mem->image_depth ? mem->image_depth : 1;
      if (mem->type == CL_MEM_OBJECT_IMAGE1D_ARRAY)
        region[1] = mem->image_array_size;
      if (mem->type == CL_MEM_OBJECT_IMAGE2D_ARRAY)
        region[2] = mem->image_array_size;
      copy3 (m->region, region);
      row = mem->image_row_pitch;
      slice = mem->image_slice_pitch;
      region[0] *= pixel_size (mem);
    }
  else
    m->region[0] = mem->size;

  switch (node->command.migrate.type)
    {
    case ENQUEUE_MIGRATE_TYPE_D2D:
      return send_d2d (s, node, re, m, waits, mem, image);
    case ENQUEUE_MIGRATE_TYPE_D2H:
      m->src_id = id;
      m->data_size = region[0] * region[1] * region[2];
      expect_data (re, mem->mem_host_ptr, region, row, slice);
      if (!image
          && pocl_remote_content_size_id (mem, node->device, &m->size_id))
        {
          m->cmd.flags |= POCL_RCMD_CONTENT_SIZE;
          re->partial = 1;
        }
      return pocl_remote_send (s, 0,
                               image ? POCL_RMSG_READ_IMAGE : POCL_RMSG_READ,
                               re->id, m, sizeof (*m), waits, 1);
    case ENQUEUE_MIGRATE_TYPE_H2D:
      {
        m->dst_id = id;
        m->data_size = region[0] * region[1] * region[2];
        const char *src = mem->mem_host_ptr;
        void *packed = NULL;
        if (image && (row != region[0] || slice != region[0] * region[1])
            && row != 0)
          src = packed = pack_region (src, region, row,
                                      slice ? slice : row * region[1]);
        if (src == NULL)
          return -1;
        int r = pocl_remote_send_mem (
            s, image ? POCL_RMSG_WRITE_IMAGE : POCL_RMSG_WRITE, re, m, waits,
            src, m->data_size, packed != NULL);
        free (packed);
        return r;
      }
    default:
      return pocl_remote_send_marker (s, re, &m->cmd, waits, 0);
    }
}

int
pocl_remote_send_command (remote_server *s, _cl_command_node *node,
                          remote_event *re, pocl_remote_cmd *c,
                          struct iovec *waits)
{
  cl_event e = node->sync.event.event;
  cl_device_id dev = node->device;
  _cl_command_t *cmd = &node->command;
  pocl_remote_mem_cmd m;
  const void *data = NULL;
  void *packed = NULL;
  uint32_t type;
  int r;

  memset (&m, 0, sizeof (m));
  m.cmd = *c;

  switch (node->type)
    {
    case CL_COMMAND_NDRANGE_KERNEL:
    case CL_COMMAND_TASK:
      {
        struct pocl_context *pc = &cmd->run.pc;
        if (pc->num_groups[0] == 0 || pc->num_groups[1] == 0
            || pc->num_groups[2] == 0)
          return pocl_remote_send_marker (s, re, c, waits, 0);
        return send_ndrange (s, node, re, c, waits);
      }

    case CL_COMMAND_MARKER:
    /* the end of a command buffer replayed command by command */
    case CL_COMMAND_COMMAND_BUFFER_KHR:
      return pocl_remote_send_marker (s, re, c, waits, 0);
    case CL_COMMAND_BARRIER:
      return pocl_remote_send_marker (s, re, c, waits, 1);

    case CL_COMMAND_MIGRATE_MEM_OBJECTS:
      return send_migration (s, node, re, &m, waits);

    case CL_COMMAND_READ_BUFFER:
      type = POCL_RMSG_READ;
      if (cmd->read.src_device != NULL)
        dev = cmd->read.src_device;
      m.src_id = pocl_remote_wire_id (e->mem_objs[0]->id, dev);
      m.src_origin[0] = cmd->read.offset;
      m.region[0] = m.data_size = cmd->read.size;
      re->dst = cmd->read.dst_host_ptr;
      re->dst_size = cmd->read.size;
      if (pocl_remote_content_size_id (e->mem_objs[0], dev, &m.size_id))
        {
          m.cmd.flags |= POCL_RCMD_CONTENT_SIZE;
          re->partial = 1;
        }
      break;

    case CL_COMMAND_WRITE_BUFFER:
      type = POCL_RMSG_WRITE;
      m.dst_id = pocl_remote_wire_id (e->mem_objs[0]->id, dev);
      m.dst_origin[0] = cmd->write.offset;
      m.region[0] = m.data_size = cmd->write.size;
      data = cmd->write.src_host_ptr;
      break;

    case CL_COMMAND_COPY_BUFFER:
      type = POCL_RMSG_COPY;
      m.src_id = pocl_remote_wire_id (cmd->copy.src->id, dev);
      m.dst_id = pocl_remote_wire_id (cmd->copy.dst->id, dev);
      m.src_origin[0] = cmd->copy.src_offset;
      m.dst_origin[0] = cmd->copy.dst_offset;
      m.region[0] = cmd->copy.size;
      if (pocl_remote_content_size_id (cmd->copy.src, dev, &m.size_id))
        m.cmd.flags |= POCL_RCMD_CONTENT_SIZE;
      break;

    case CL_COMMAND_READ_BUFFER_RECT:
      {
        _cl_command_read_rect *rr = &cmd->read_rect;
        type = POCL_RMSG_READ_RECT;
        m.src_id = pocl_remote_wire_id (e->mem_objs[0]->id, dev);
        copy3 (m.src_origin, rr->buffer_origin);
        copy3 (m.region, rr->region);
        m.src_row_pitch = rr->buffer_row_pitch;
        m.src_slice_pitch = rr->buffer_slice_pitch;
        m.data_size = rr->region[0] * rr->region[1] * rr->region[2];
        expect_data (re,
                     (char *)rr->dst_host_ptr
                         + rr->host_origin[2] * rr->host_slice_pitch
                         + rr->host_origin[1] * rr->host_row_pitch
                         + rr->host_origin[0],
                     rr->region, rr->host_row_pitch, rr->host_slice_pitch);
        break;
      }

    case CL_COMMAND_WRITE_BUFFER_RECT:
      {
        _cl_command_write_rect *wr = &cmd->write_rect;
        type = POCL_RMSG_WRITE_RECT;
        m.dst_id = pocl_remote_wire_id (e->mem_objs[0]->id, dev);
        copy3 (m.dst_origin, wr->buffer_origin);
        copy3 (m.region, wr->region);
        m.dst_row_pitch = wr->buffer_row_pitch;
        m.dst_slice_pitch = wr->buffer_slice_pitch;
        m.data_size = wr->region[0] * wr->region[1] * wr->region[2];
        data = packed = pack_region (
            (const char *)wr->src_host_ptr
                + wr->host_origin[2] * wr->host_slice_pitch
                + wr->host_origin[1] * wr->host_row_pitch + wr->host_origin[0],
            wr->region, wr->host_row_pitch, wr->host_slice_pitch);
        if (packed == NULL)
          return -1;
        break;
      }

    case CL_COMMAND_COPY_BUFFER_RECT:
      {
        _cl_command_copy_rect *cr = &cmd->copy_rect;
        type = POCL_RMSG_COPY_RECT;
        m.src_id = pocl_remote_wire_id (cr->src->id, dev);
        m.dst_id = pocl_remote_wire_id (cr->dst->id, dev);
        copy3 (m.src_origin, cr->src_origin);
        copy3 (m.dst_origin, cr->dst_origin);
        copy3 (m.region, cr->region);
        m.src_row_pitch = cr->src_row_pitch;
        m.src_slice_pitch = cr->src_slice_pitch;
        m.dst_row_pitch = cr->dst_row_pitch;
        m.dst_slice_pitch = cr->dst_slice_pitch;
        break;
      }

    case CL_COMMAND_FILL_BUFFER:
      type = POCL_RMSG_FILL;
      m.dst_id = pocl_remote_wire_id (e->mem_objs[0]->id, dev);
      m.dst_origin[0] = cmd->memfill.offset;
      m.region[0] = cmd->memfill.size;
      m.data_size = cmd->memfill.pattern_size;
      data = cmd->memfill.pattern;
      break;

    case CL_COMMAND_MAP_BUFFER:
    case CL_COMMAND_MAP_IMAGE:
      {
        mem_mapping_t *map = cmd->map.mapping;
        cl_mem mem = e->mem_objs[0];
        if (map->map_flags & CL_MAP_WRITE_INVALIDATE_REGION)
          return pocl_remote_send_marker (s, re, c, waits, 0);
        if (mem->is_image && !IS_IMAGE1D_BUFFER (mem))
          {
            size_t region[3] = { map->region[0] * pixel_size (mem),
                                 map->region[1], map->region[2] };
            type = POCL_RMSG_READ_IMAGE;
            m.src_id = pocl_remote_wire_id (mem->id, dev);
            copy3 (m.src_origin, map->origin);
            copy3 (m.region, map->region);
            m.data_size = region[0] * region[1] * region[2];
            expect_data (re, map->host_ptr, region, map->row_pitch,
                         map->slice_pitch);
          }
        else
          {
            type = POCL_RMSG_READ;
            m.src_id = pocl_remote_wire_id (mem->id, dev);
            m.src_origin[0] = map->offset;
            m.region[0] = m.data_size = map->size;
            re->dst = map->host_ptr;
            re->dst_size = map->size;
          }
        break;
      }

    case CL_COMMAND_UNMAP_MEM_OBJECT:
      {
        mem_mapping_t *map = cmd->unmap.mapping;
        cl_mem mem = e->mem_objs[0];
        if (!(map->map_flags
              & (CL_MAP_WRITE | CL_MAP_WRITE_INVALIDATE_REGION)))
          return pocl_remote_send_marker (s, re, c, waits, 0);
        if (mem->is_image && !IS_IMAGE1D_BUFFER (mem))
          {
            size_t region[3] = { map->region[0] * pixel_size (mem),
                                 map->region[1], map->region[2] };
            type = POCL_RMSG_WRITE_IMAGE;
            m.dst_id = pocl_remote_wire_id (mem->id, dev);
            copy3 (m.dst_origin, map->origin);
            copy3 (m.region, map->region);
            m.data_size = region[0] * region[1] * region[2];
            data = packed = pack_region (
                map->host_ptr, region,
                map->row_pitch ? map->row_pitch : region[0],
                map->slice_pitch ? map->slice_pitch : region[0] * region[1]);
            if (packed == NULL)
              return -1;
          }
        else
          {
            type = POCL_RMSG_WRITE;
            m.dst_id = pocl_remote_wire_id (mem->id, dev);
            m.dst_origin[0] = map->offset;
            m.region[0] = m.data_size = map->size;
            data = map->host_ptr;
          }
        break;
      }

    case CL_COMMAND_READ_IMAGE:
    case CL_COMMAND_COPY_IMAGE_TO_BUFFER:
      {
        _cl_command_read_image *ri = &cmd->read_image;
        m.src_id = pocl_remote_wire_id (ri->src->id, dev);
        copy3 (m.src_origin, ri->origin);
        copy3 (m.region, ri->region);
        if (ri->dst_host_ptr == NULL)
          {
            type = POCL_RMSG_COPY_IMAGE_TO_BUFFER;
            m.dst_id = pocl_remote_wire_id (ri->dst->id, dev);
            m.dst_origin[0] = ri->dst_offset;
            break;
          }
        size_t region[3] = { ri->region[0] * pixel_size (ri->src),
                             ri->region[1], ri->region[2] };
        type = POCL_RMSG_READ_IMAGE;
        m.data_size = region[0] * region[1] * region[2];
        expect_data (re, (char *)ri->dst_host_ptr + ri->dst_offset, region,
                     ri->dst_row_pitch, ri->dst_slice_pitch);
        break;
      }

    case CL_COMMAND_WRITE_IMAGE:
    case CL_COMMAND_COPY_BUFFER_TO_IMAGE:
      {
        _cl_command_write_image *wi = &cmd->write_image;
        m.dst_id = pocl_remote_wire_id (wi->dst->id, dev);
        copy3 (m.dst_origin, wi->origin);
        copy3 (m.region, wi->region);
        if (wi->src_host_ptr == NULL)
          {
            type = POCL_RMSG_COPY_BUFFER_TO_IMAGE;
            m.src_id = pocl_remote_wire_id (wi->src->id, dev);
            m.src_origin[0] = wi->src_offset;
            break;
          }
        size_t region[3] = { wi->region[0] * pixel_size (wi->dst),
                             wi->region[1], wi->region[2] };
        size_t row = wi->src_row_pitch ? wi->src_row_pitch : region[0];
        type = POCL_RMSG_WRITE_IMAGE;
        m.data_size = region[0] * region[1] * region[2];
        data = packed = pack_region (
            (const char *)wi->src_host_ptr + wi->src_offset, region, row,
            wi->src_slice_pitch ? wi->src_slice_pitch : row * region[1]);
        if (packed == NULL)
          return -1;
        break;
      }

    case CL_COMMAND_COPY_IMAGE:
      type = POCL_RMSG_COPY_IMAGE;
      m.src_id = pocl_remote_wire_id (cmd->copy_image.src->id, dev);
      m.dst_id = pocl_remote_wire_id (cmd->copy_image.dst->id, dev);
      copy3 (m.src_origin, cmd->copy_image.src_origin);
      copy3 (m.dst_origin, cmd->copy_image.dst_origin);
      copy3 (m.region, cmd->copy_image.region);
      break;

    case CL_COMMAND_FILL_IMAGE:
      type = POCL_RMSG_FILL_IMAGE;
      m.dst_id = pocl_remote_wire_id (e->mem_objs[0]->id, dev);
      copy3 (m.dst_origin, cmd->fill_image.origin);
      copy3 (m.region, cmd->fill_image.region);
      m.data_size = sizeof (cl_uint4);
      data = &cmd->fill_image.orig_pixel;
      break;

    case CL_COMMAND_SVM_FREE:
    case CL_COMMAND_SVM_MEMCPY:
    case CL_COMMAND_SVM_MEMFILL:
    case CL_COMMAND_SVM_MAP:
    case CL_COMMAND_SVM_UNMAP:
    case CL_COMMAND_SVM_MIGRATE_MEM:
      return pocl_remote_svm_command (s, node, re, &m, waits);

    default:
      POCL_MSG_ERR ("remote: %s is not supported on remote devices\n",
                    pocl_command_to_str (node->type));
      return -2;
    }

  r = pocl_remote_send_mem (s, type, re, &m, waits, data,
                            data ? m.data_size : 0, packed != NULL);
  free (packed);
  return r;
}
