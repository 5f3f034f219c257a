/* remote_cmdbuf.c - command buffers (cl_khr_command_buffer) made once on
   the server: at finalize the recorded commands go to pocld in one
   CMDBUF_CREATE, and each clEnqueueCommandBufferKHR is then one CMDBUF_RUN
   (patch 0210 gives the driver the buffer whole: the op run_command_buffer
   says which buffers it took).  A buffer holding a command that has no
   entry kind (image and SVM commands, content-size copies) stays with
   PoCL's core, which replays it command by command.  */

#include <inttypes.h>
#include <string.h>

#include "pocl_util.h"
#include "remote_encode.h"

/* A buffer the server has: its id there, and how the server runs it.  Kept
   in a list of the driver's (PoCL's command buffer has no field for a
   driver), looked up at each run.  */
typedef struct remote_cmdbuf
{
  cl_command_buffer_khr cb;
  uint64_t wire_id;
  uint32_t mode; /* POCL_REMOTE_CMDBUF_NATIVE or _EMULATED */
  struct remote_cmdbuf *next;
} remote_cmdbuf;

static remote_cmdbuf *taken;
static pocl_lock_t taken_lock = POCL_LOCK_INITIALIZER;

/* The buffer's entry, or NULL where the core replays it.  */
static remote_cmdbuf *
find_taken (const void *cb)
{
  POCL_LOCK (taken_lock);
  remote_cmdbuf *r = taken;
  while (r != NULL && r->cb != cb)
    r = r->next;
  POCL_UNLOCK (taken_lock);
  return r;
}

/* The message being built: entries appended to a growing buffer.  */
typedef struct packer
{
  char *p;
  size_t len, cap;
  int failed;
} packer;

static void
put (packer *k, const void *src, size_t n)
{
  if (k->failed)
    return;
  if (k->len + n > k->cap)
    {
      size_t cap = k->cap ? k->cap * 2 : 4096;
      while (cap < k->len + n)
        cap *= 2;
      char *np = realloc (k->p, cap);
      if (np == NULL)
        {
          k->failed = 1;
          return;
        }
      k->p = np;
      k->cap = cap;
    }
  if (src != NULL)
    memcpy (k->p + k->len, src, n);
  else
    memset (k->p + k->len, 0, n);
  k->len += n;
}

/* One entry: header, sync points (0-based entry indices), the body and the
   payload of its message.  */
static void
put_entry (packer *k, _cl_command_node *cmd, uint32_t type, const void *body,
           size_t body_size, const void *payload, size_t payload_size)
{
  pocl_remote_cmdbuf_entry e;
  uint32_t n = cmd->sync.syncpoint.num_sync_points_in_wait_list;
  e.type = type;
  e.num_syncs = n;
  e.size = body_size + payload_size;
  put (k, &e, sizeof (e));
  for (uint32_t i = 0; i < n; ++i)
    {
      /* sync points are numbered from 1, in recording order */
      uint32_t s = cmd->sync.syncpoint.sync_point_wait_list[i] - 1;
      put (k, &s, sizeof (s));
    }
  if (n & 1)
    put (k, NULL, 4);
  put (k, body, body_size);
  put (k, payload, payload_size);
}

/* 0, or -2 where the command has no entry kind.  */
static int
pack_command (packer *k, _cl_command_node *cmd, cl_device_id dev)
{
  remote_enc x;
  memset (&x, 0, sizeof (x));
  x.node = cmd;
  x.dev = dev;
  switch (cmd->type)
    {
    case CL_COMMAND_NDRANGE_KERNEL:
    case CL_COMMAND_TASK:
      {
        struct pocl_context *pc = &cmd->command.run.pc;
        if (pc->num_groups[0] == 0 || pc->num_groups[1] == 0
            || pc->num_groups[2] == 0)
          {
            pocl_remote_cmd c;
            memset (&c, 0, sizeof (c));
            put_entry (k, cmd, POCL_RMSG_MARKER, &c, sizeof (c), NULL, 0);
            return 0;
          }
        pocl_remote_ndrange b;
        char stack[1024];
        char *args;
        size_t size;
        if (pocl_remote_pack_ndrange (cmd, dev, &b, stack, sizeof (stack),
                                      &args, &size))
          {
            k->failed = 1;
            return 0;
          }
        int svm = 0;
        /* SVM arguments need the launch's own synchronisation */
        for (char *p = args; p < args + size;)
          {
            pocl_remote_arg a;
            memcpy (&a, p, sizeof (a));
            svm |= a.kind == POCL_REMOTE_ARG_SVM;
            p += sizeof (a);
            if (a.kind == POCL_REMOTE_ARG_SCALAR)
              p += (a.a + 7) & ~(uint64_t)7;
          }
        if (!svm)
          put_entry (k, cmd, POCL_RMSG_NDRANGE, &b, sizeof (b), args, size);
        if (args != stack)
          free (args);
        return svm ? -2 : 0;
      }
    case CL_COMMAND_COPY_BUFFER:
      pocl_remote_enc_copy (&x);
      if (x.m.cmd.flags & POCL_RCMD_CONTENT_SIZE)
        return -2;
      put_entry (k, cmd, POCL_RMSG_COPY, &x.m, sizeof (x.m), NULL, 0);
      return 0;
    case CL_COMMAND_COPY_BUFFER_RECT:
      pocl_remote_enc_copy_rect (&x);
      put_entry (k, cmd, POCL_RMSG_COPY_RECT, &x.m, sizeof (x.m), NULL, 0);
      return 0;
    case CL_COMMAND_FILL_BUFFER:
      {
        _cl_command_fill_mem *f = &cmd->command.memfill;
        if (cmd->memobj_count < 1)
          return -2;
        x.m.dst_id = pocl_remote_wire_id (cmd->memobj_list[0]->id, dev);
        x.m.dst_origin[0] = f->offset;
        x.m.region[0] = f->size;
        x.m.data_size = f->pattern_size;
        put_entry (k, cmd, POCL_RMSG_FILL, &x.m, sizeof (x.m), f->pattern,
                   f->pattern_size);
        return 0;
      }
    case CL_COMMAND_BARRIER:
      x.m.cmd.flags = POCL_RCMD_BARRIER;
      put_entry (k, cmd, POCL_RMSG_MARKER, &x.m.cmd, sizeof (x.m.cmd), NULL,
                 0);
      return 0;
    default:
      return -2;
    }
}

cl_int
pocl_remote_create_finalized_command_buffer (cl_device_id dev,
                                             cl_command_buffer_khr cb)
{
  if (cb->num_queues != 1 || cb->cmds == NULL
      || __atomic_load_n (&pocl_remote_svm_fine, __ATOMIC_RELAXED))
    return CL_SUCCESS;
  cl_command_queue q = cb->queues[0];
  remote_server *s = pocl_remote_session_for (dev, q->context);
  if (s == NULL)
    return CL_SUCCESS;

  packer k;
  memset (&k, 0, sizeof (k));
  uint32_t n = 0;
  _cl_command_node *cmd;
  LL_FOREACH (cb->cmds, cmd)
  {
    /* The server's buffers, which PoCL otherwise makes at a buffer's first
       command on the device, must exist before CMDBUF_CREATE names them
       (sent before it on the same socket).  */
    for (unsigned i = 0; i < cmd->memobj_count; ++i)
      {
        cl_mem m = cmd->memobj_list[i];
        cl_int err = CL_SUCCESS;
        POCL_LOCK_OBJ (m);
        if (m->device_ptrs[dev->global_mem_id].mem_ptr == NULL)
          err = dev->ops->alloc_mem_obj (dev, m, NULL);
        POCL_UNLOCK_OBJ (m);
        if (err != CL_SUCCESS)
          {
            free (k.p);
            return err;
          }
      }
    if (pack_command (&k, cmd, dev) != 0)
      {
        POCL_MSG_PRINT_INFO ("command buffer %" PRIu64 ": a %s stays with "
                               "the core, replayed command by command\n",
                               cb->id, pocl_command_to_str (cmd->type));
        free (k.p);
        return CL_SUCCESS;
      }
    ++n;
  }
  if (k.failed || n > POCL_REMOTE_MAX_CMDBUF_COMMANDS
      || k.len > POCL_REMOTE_MAX_PAYLOAD)
    {
      free (k.p);
      return k.failed ? CL_OUT_OF_HOST_MEMORY : CL_SUCCESS;
    }

  remote_cmdbuf *rc = calloc (1, sizeof (*rc));
  if (rc == NULL)
    {
      free (k.p);
      return CL_OUT_OF_HOST_MEMORY;
    }
  pocl_remote_cmdbuf_create c;
  memset (&c, 0, sizeof (c));
  c.cmdbuf_id = rc->wire_id = pocl_remote_wire_id (cb->id, dev);
  c.queue_id = q->id;
  c.num_commands = n;
  struct iovec iov = { k.p, k.len };
  void *reply = NULL;
  uint64_t reply_size = 0;
  cl_int err = pocl_remote_request (s, POCL_RMSG_CMDBUF_CREATE, &c,
                                    sizeof (c), &iov, 1, &reply, &reply_size);
  free (k.p);
  if (err == CL_SUCCESS && reply_size == sizeof (uint32_t))
    memcpy (&rc->mode, reply, sizeof (uint32_t));
  free (reply);
  if (err != CL_SUCCESS)
    {
      free (rc);
      return err;
    }
  POCL_MSG_PRINT_INFO ("command buffer %" PRIu64 ": %u commands on the "
                         "server, %s\n",
                         cb->id, n,
                         rc->mode == POCL_REMOTE_CMDBUF_NATIVE ? "native"
                                                               : "emulated");
  rc->cb = cb;
  POCL_LOCK (taken_lock);
  rc->next = taken;
  taken = rc;
  POCL_UNLOCK (taken_lock);
  return CL_SUCCESS;
}

cl_int
pocl_remote_command_buffer_taken (void *dev, cl_command_buffer_khr cb)
{
  (void)dev;
  return find_taken (cb) != NULL ? CL_SUCCESS : CL_INVALID_OPERATION;
}

cl_int
pocl_remote_free_command_buffer (cl_device_id dev, cl_command_buffer_khr cb)
{
  POCL_LOCK (taken_lock);
  remote_cmdbuf **pp = &taken;
  while (*pp != NULL && (*pp)->cb != cb)
    pp = &(*pp)->next;
  remote_cmdbuf *rc = *pp;
  if (rc != NULL)
    *pp = rc->next;
  POCL_UNLOCK (taken_lock);
  if (rc == NULL)
    return CL_SUCCESS;
  remote_server *s = pocl_remote_session_for (dev, cb->queues[0]->context);
  pocl_remote_release r = { rc->wire_id };
  if (s != NULL)
    pocl_remote_send (s, 0, POCL_RMSG_CMDBUF_FREE, 0, &r, sizeof (r), NULL,
                      0);
  free (rc);
  return CL_SUCCESS;
}

int
pocl_remote_enc_cmdbuf_run (remote_enc *x)
{
  remote_cmdbuf *rc = find_taken (x->node->command.marker.data);
  if (rc == NULL)
    return pocl_remote_send_marker (x->s, x->re, x->c, x->waits, 0);
  pocl_remote_cmdbuf_run b;
  memset (&b, 0, sizeof (b));
  b.cmd = *x->c;
  b.cmdbuf_id = rc->wire_id;
  return pocl_remote_send (x->s, 0, POCL_RMSG_CMDBUF_RUN, x->re->inflight.id,
                           &b, sizeof (b), x->waits, 1);
}
