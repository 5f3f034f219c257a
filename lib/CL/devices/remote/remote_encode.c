/* remote_encode.c - what the encoders of remote_commands.c,
   remote_encode_mem.c and remote_svm.c share: a memory command or a
   marker sent with its waits, pitched regions packed, where a read's data
   lands; and where a command goes (the queue and server it runs on, the
   server its waits go to), which pocl_remote_submit needs too.  */

#include <string.h>

#include "pocl_remote_pixel.h"
#include "remote_encode.h"

/* pocld sizes image data with the same function; the device advertises only
   formats where it agrees with PoCL's own (store_image_formats).  */
size_t
pocl_remote_enc_pixel_size (cl_mem image)
{
  return pocl_remote_pixel_size (image->image_channel_order,
                                 image->image_channel_data_type);
}

/* Sends one memory command; the data, if any, follows the waits inline or
   goes on the data socket.  `packed`: data is our temporary copy, which the
   replay log must copy too; otherwise it is the application's memory.  */
int
pocl_remote_send_mem (remote_server *s, uint32_t type, remote_event *re,
                      pocl_remote_mem_cmd *m, struct iovec *waits,
                      const void *data, size_t data_size, int packed)
{
  int on_data_socket = data_size >= POCL_REMOTE_DATA_SOCKET_THRESHOLD;
  struct iovec iov[2] = { *waits, { (void *)data, data_size } };
  if (!on_data_socket)
    return pocl_remote_send_ref (s, 0, type, re->inflight.id, m, sizeof (*m),
                                 iov, data ? 2 : 1, packed ? 2 : 1);
  m->cmd.flags |= POCL_RCMD_DATA_ON_DATA_SOCKET;
  pthread_mutex_lock (&s->data_order_lock);
  int r
      = pocl_remote_send (s, 0, type, re->inflight.id, m, sizeof (*m), iov, 1);
  if (r == 0)
    r = pocl_remote_send_ref (s, 1, POCL_RMSG_DATA, re->inflight.id, NULL, 0,
                              &iov[1], 1, packed ? 1 : 0);
  pthread_mutex_unlock (&s->data_order_lock);
  return r;
}

/* Copies a 3D region of a pitched host array into a packed buffer.  */
void *
pocl_remote_enc_pack (const char *src, const size_t *region, size_t row_pitch,
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
void
pocl_remote_enc_expect (remote_event *re, void *dst, const size_t *region,
                        size_t row_pitch, size_t slice_pitch)
{
  re->inflight.dst = dst;
  re->inflight.dst_size = region[0] * region[1] * region[2];
  re->inflight.region[0] = region[0];
  re->inflight.region[1] = region[1];
  re->inflight.region[2] = region[2];
  re->inflight.row_pitch = row_pitch ? row_pitch : region[0];
  re->inflight.slice_pitch
      = slice_pitch ? slice_pitch : re->inflight.row_pitch * region[1];
  re->inflight.unpack = (re->inflight.row_pitch != region[0]
                         || re->inflight.slice_pitch != region[0] * region[1]);
}

void
pocl_remote_enc_copy3 (uint64_t *dst, const size_t *src)
{
  dst[0] = src[0];
  dst[1] = src[1];
  dst[2] = src[2];
}

int
pocl_remote_send_marker (remote_server *s, remote_event *re,
                         pocl_remote_cmd *c, struct iovec *waits, int barrier)
{
  if (barrier)
    c->flags |= POCL_RCMD_BARRIER;
  return pocl_remote_send (s, 0, POCL_RMSG_MARKER, re->inflight.id, c,
                           sizeof (*c), waits, 1);
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

/* A kernel launch's body (but its cmd) and its arguments, naming the
   objects of dev: in `stack` where they fit, else malloc'd (*args != stack
   then).  Recorded launches of command buffers (remote_cmdbuf.c), which
   have no device of their own, are packed the same way.  */
int
pocl_remote_pack_ndrange (_cl_command_node *node, cl_device_id dev,
                          pocl_remote_ndrange *b,
                          char *stack, size_t stack_size, char **args_out,
                          size_t *size_out)
{
  _cl_command_run *run = &node->command.run;
  pocl_kernel_metadata_t *meta = run->kernel->meta;
  struct pocl_context *pc = &run->pc;
  unsigned i;

  memset (b, 0, sizeof (*b));
  b->kernel_id = pocl_remote_wire_id (run->kernel->id, dev);
  b->work_dim = pc->work_dim;
  b->num_args = meta->num_args;
  /* Without the application's local size the server's runtime chooses
     one: PoCL's choice for the device (1024 for BabelStream's copy on an
     H100) ran 7% slower there than NVIDIA's own (patch 0170).  */
  for (i = 0; i < 3; ++i)
    {
      b->offset[i] = pc->global_offset[i];
      b->local[i] = run->local_size_chosen ? 0 : pc->local_size[i];
      b->global[i] = pc->num_groups[i] * pc->local_size[i];
    }

  size_t size = 0;
  for (i = 0; i < meta->num_args; ++i)
    {
      size += sizeof (pocl_remote_arg);
      if (meta->arg_info[i].type == POCL_ARG_TYPE_NONE)
        size += (run->arguments[i].size + 7) & ~(size_t)7;
    }
  char *args = size <= stack_size ? stack : malloc (size);
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
  b->args_size = size;
  *args_out = args;
  *size_out = size;
  return 0;
}
