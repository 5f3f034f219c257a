/* remote_commands.c - one wire message per OpenCL command: the table of
   encoders (remote_encode.h), kernel launches with their arguments, markers
   and migrations; the buffer and image commands are in remote_encode_mem.c,
   SVM commands in remote_svm.c, and what they share in remote_encode.c.
   Called from pocl_remote_submit on the application's thread.  */

#include <string.h>

#include "pocl_image_util.h"
#include "pocl_util.h"
#include "remote_encode.h"

/* NDRange argument blobs up to this size stay on the stack.  */
#define STACK_ARGS 2048

static int
send_ndrange (remote_server *s, _cl_command_node *node, remote_event *re,
              pocl_remote_cmd *c, struct iovec *waits)
{
  pocl_remote_ndrange b;
  char stack[STACK_ARGS];
  char *args;
  size_t size;
  if (pocl_remote_pack_ndrange (node, node->device, &b, stack, sizeof (stack),
                                &args, &size))
    return -1;
  b.cmd = *c;

  struct iovec iov[2] = { *waits, { args, size } };
  int r = __atomic_load_n (&pocl_remote_svm_fine, __ATOMIC_RELAXED)
              ? pocl_remote_svm_send_ndrange (s, re, &b, iov)
              : pocl_remote_send (s, 0, POCL_RMSG_NDRANGE, re->inflight.id, &b,
                                  sizeof (b), iov, 2);
  if (args != stack)
    free (args);
  return r;
}

/* A buffer moves from the device that has its latest content to this one.
   On one server: a native copy between the two devices' objects.  Between
   servers: PUSH, with the wait list, tells the source server to send the
   bytes once ready, then MIGRATE_IN tells this server (s) to expect them.
   The migration event completes on s.  */
static int
send_d2d (remote_server *s, _cl_command_node *node, remote_event *re,
          pocl_remote_mem_cmd *m, struct iovec *waits, cl_mem mem, int image)
{
  cl_device_id dst = node->device;
  cl_device_id src = node->command.migrate.src_device;
  remote_device_data *sd = (remote_device_data *)src->data;
  if (pocl_remote_wait_server (node, s) == s)
    {
      m->src_id = pocl_remote_wire_id (mem->id, src);
      m->dst_id = pocl_remote_wire_id (mem->id, dst);
      if (image)
        return pocl_remote_send (s, 0, POCL_RMSG_COPY_IMAGE, re->inflight.id,
                                 m, sizeof (*m), waits, 1);
      m->region[0] = mem->size;
      return pocl_remote_send (s, 0, POCL_RMSG_COPY, re->inflight.id, m,
                               sizeof (*m), waits, 1);
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
  /* PUSH first: the source has a read to do before it sends, the
     destination only a slot to set up before the bytes come (its peer
     reader waits for the slot if they come first).  */
  pocl_remote_migrate push = mi;
  push.cmd = m->cmd;
  push.cmd.queue_id = src_q->id;
  push.peer = s->index;
  if (pocl_remote_send (sd->server, 0, POCL_RMSG_PUSH, re->inflight.id, &push,
                        sizeof (push), waits, 1))
    return -1;
  return pocl_remote_send (s, 0, POCL_RMSG_MIGRATE_IN, re->inflight.id, &mi,
                           sizeof (mi), NULL, 0);
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
      pocl_remote_enc_copy3 (m->region, region);
      row = mem->image_row_pitch;
      slice = mem->image_slice_pitch;
      region[0] *= pocl_remote_enc_pixel_size (mem);
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
      pocl_remote_enc_expect (re, mem->mem_host_ptr, region, row, slice);
      if (!image
          && pocl_remote_content_size_id (mem, node->device, &m->size_id))
        {
          m->cmd.flags |= POCL_RCMD_CONTENT_SIZE;
          re->inflight.partial = 1;
        }
      return pocl_remote_send (s, 0,
                               image ? POCL_RMSG_READ_IMAGE : POCL_RMSG_READ,
                               re->inflight.id, m, sizeof (*m), waits, 1);
    case ENQUEUE_MIGRATE_TYPE_H2D:
      {
        m->dst_id = id;
        m->data_size = region[0] * region[1] * region[2];
        const char *src = mem->mem_host_ptr;
        void *packed = NULL;
        if (image && (row != region[0] || slice != region[0] * region[1])
            && row != 0)
          src = packed = pocl_remote_enc_pack (src, region, row,
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

static int
enc_ndrange (remote_enc *x)
{
  struct pocl_context *pc = &x->node->command.run.pc;
  if (pc->num_groups[0] == 0 || pc->num_groups[1] == 0
      || pc->num_groups[2] == 0)
    return pocl_remote_send_marker (x->s, x->re, x->c, x->waits, 0);
  return send_ndrange (x->s, x->node, x->re, x->c, x->waits);
}

static int
enc_marker (remote_enc *x)
{
  return pocl_remote_send_marker (x->s, x->re, x->c, x->waits, 0);
}

static int
enc_barrier (remote_enc *x)
{
  return pocl_remote_send_marker (x->s, x->re, x->c, x->waits, 1);
}

static int
enc_migration (remote_enc *x)
{
  return send_migration (x->s, x->node, x->re, &x->m, x->waits);
}

static int
enc_svm (remote_enc *x)
{
  return pocl_remote_svm_command (x->s, x->node, x->re, &x->m, x->waits);
}

/* The encoders by command type, from CL_COMMAND_NDRANGE_KERNEL to
   CL_COMMAND_SVM_MIGRATE_MEM (consecutive numbers).  */
#define ENC_FIRST CL_COMMAND_NDRANGE_KERNEL
#define ENC(type) [(type) - ENC_FIRST]
static const remote_encoder encoders[CL_COMMAND_SVM_MIGRATE_MEM - ENC_FIRST
                                     + 1]
    = {
        ENC (CL_COMMAND_NDRANGE_KERNEL) = enc_ndrange,
        ENC (CL_COMMAND_TASK) = enc_ndrange,
        ENC (CL_COMMAND_MARKER) = enc_marker,
        ENC (CL_COMMAND_BARRIER) = enc_barrier,
        ENC (CL_COMMAND_MIGRATE_MEM_OBJECTS) = enc_migration,
        ENC (CL_COMMAND_READ_BUFFER) = pocl_remote_enc_read,
        ENC (CL_COMMAND_WRITE_BUFFER) = pocl_remote_enc_write,
        ENC (CL_COMMAND_COPY_BUFFER) = pocl_remote_enc_copy,
        ENC (CL_COMMAND_READ_BUFFER_RECT) = pocl_remote_enc_read_rect,
        ENC (CL_COMMAND_WRITE_BUFFER_RECT) = pocl_remote_enc_write_rect,
        ENC (CL_COMMAND_COPY_BUFFER_RECT) = pocl_remote_enc_copy_rect,
        ENC (CL_COMMAND_FILL_BUFFER) = pocl_remote_enc_fill,
        ENC (CL_COMMAND_MAP_BUFFER) = pocl_remote_enc_map,
        ENC (CL_COMMAND_MAP_IMAGE) = pocl_remote_enc_map,
        ENC (CL_COMMAND_UNMAP_MEM_OBJECT) = pocl_remote_enc_unmap,
        ENC (CL_COMMAND_READ_IMAGE) = pocl_remote_enc_read_image,
        ENC (CL_COMMAND_COPY_IMAGE_TO_BUFFER) = pocl_remote_enc_read_image,
        ENC (CL_COMMAND_WRITE_IMAGE) = pocl_remote_enc_write_image,
        ENC (CL_COMMAND_COPY_BUFFER_TO_IMAGE) = pocl_remote_enc_write_image,
        ENC (CL_COMMAND_COPY_IMAGE) = pocl_remote_enc_copy_image,
        ENC (CL_COMMAND_FILL_IMAGE) = pocl_remote_enc_fill_image,
        ENC (CL_COMMAND_SVM_FREE) = enc_svm,
        ENC (CL_COMMAND_SVM_MEMCPY) = enc_svm,
        ENC (CL_COMMAND_SVM_MEMFILL) = enc_svm,
        ENC (CL_COMMAND_SVM_MAP) = enc_svm,
        ENC (CL_COMMAND_SVM_UNMAP) = enc_svm,
        ENC (CL_COMMAND_SVM_MIGRATE_MEM) = enc_svm,
      };

int
pocl_remote_send_command (remote_server *s, _cl_command_node *node,
                          remote_event *re, pocl_remote_cmd *c,
                          struct iovec *waits)
{
  remote_encoder enc = NULL;
  cl_command_type t = node->type;
  if (t >= ENC_FIRST && t - ENC_FIRST < sizeof (encoders) / sizeof (*encoders))
    enc = encoders[t - ENC_FIRST];
  /* a run of a command buffer the server has (remote_cmdbuf.c), or the
     end of one replayed command by command (a marker) */
  else if (t == CL_COMMAND_COMMAND_BUFFER_KHR)
    enc = pocl_remote_enc_cmdbuf_run;
  if (enc == NULL)
    {
      POCL_MSG_ERR ("remote: %s is not supported on remote devices\n",
                    pocl_command_to_str (t));
      return -2;
    }

  remote_enc x;
  memset (&x, 0, sizeof (x));
  x.s = s;
  x.node = node;
  x.re = re;
  x.c = c;
  x.waits = waits;
  x.dev = node->device;
  x.m.cmd = *c;
  int r = enc (&x);
  if (r != REMOTE_ENC_MEM)
    return r;
  /* A transfer's host memory in a device allocation that the host reaches
     by faults (remote_usm_host.c): the faults of this thread's send, or of
     the reader's copy of the result, would wait for that send and that
     reader.  A buffer read or write there is the server's runtime's to do
     (SYCL runtimes read buffers into USM memory); any other fails.  */
  if (pocl_remote_usm_host_holds (x.data, x.data_size, re->inflight.dst,
                                  re->inflight.dst_size))
    {
      int rd = x.type == POCL_RMSG_READ;
      const void *p = rd ? re->inflight.dst : x.data;
      size_t n = rd ? re->inflight.dst_size : x.data_size;
      if ((rd || x.type == POCL_RMSG_WRITE) && x.packed == NULL
          && !(x.m.cmd.flags & POCL_RCMD_CONTENT_SIZE)
          && pocl_remote_usm_host_within (s, p, n))
        {
          x.m.cmd.flags |= POCL_RCMD_SVM_HOST;
          if (rd)
            x.m.dst_id = (uint64_t)(uintptr_t)p;
          else
            x.m.src_id = (uint64_t)(uintptr_t)p;
          x.m.data_size = 0;
          re->inflight.dst = NULL;
          re->inflight.dst_size = 0;
          return pocl_remote_send (s, 0, x.type, re->inflight.id, &x.m,
                                   sizeof (x.m), waits, 1);
        }
      POCL_MSG_ERR ("remote: %s with its host memory in a device "
                    "allocation: not supported, the command fails\n",
                    pocl_command_to_str (t));
      free (x.packed);
      return -2;
    }
  r = pocl_remote_send_mem (s, x.type, re, &x.m, waits, x.data, x.data_size,
                            x.packed != NULL);
  free (x.packed);
  return r;
}
