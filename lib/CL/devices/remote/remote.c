/* remote.c - the remote driver's device ops: probing, the device info
   fetched once from pocld (applied by remote_devinfo.c), memory objects,
   queues and samplers.  */

#include <stddef.h>
#include <string.h>

#include "common.h"
#include "common_driver.h"
#include "devices.h"
#include "pocl_image_util.h"
#include "pocl_remote.h"
#include "pocl_util.h"
#include "pocl_remote_ext.h"
#include "remote.h"
#include "remote_params.h"

static const char remote_device_name[] = "remote";

/* Every device of this driver, for marking them unavailable on loss.  */
static cl_device_id remote_devices[POCL_REMOTE_MAX_DEVICES];
static unsigned num_remote_devices = 0;

/* "OpenCL 3.0 CUDA" -> 300 */
static unsigned
parse_version (const char *v)
{
  unsigned major = 1, minor = 2;
  if (v && sscanf (v, "OpenCL %u.%u", &major, &minor) != 2)
    major = 1, minor = 2;
  return major * 100 + minor * 10;
}

static unsigned int
pocl_remote_probe (struct pocl_device_ops *ops)
{
  int n = pocl_device_get_env_count (ops->device_name);
  unsigned named = n > 0 ? (unsigned)n : 0;
  return named + pocl_remote_discovered_probe (named);
}

static char *
pocl_remote_build_hash (cl_device_id device)
{
  remote_device_data *d = (remote_device_data *)device->data;
  return strdup (d && d->build_hash ? d->build_hash : "pocl-remote");
}

/* A mistake in the user's settings, said whatever POCL_DEBUG is: the
   device is left out (patch 0104) and the application must learn why.  */
static void
config_error (unsigned j, const char *value, const char *why)
{
  fprintf (stderr,
           "pocl-remote: POCL_REMOTE%u_PARAMETERS='%.300s': %s (expected "
           "host[:port]/device_index[#peer_host[:peer_port]]); remote "
           "device %u is left out\n",
           j, value ? value : "", why, j);
}

static cl_int
pocl_remote_init (unsigned j, cl_device_id dev, const char *parameters)
{
  pocl_remote_params pp;
  const char *why;
  uint32_t index;
  cl_int err;

  pocl_init_default_device_infos (dev);
  dev->available = CL_FALSE;
  dev->long_name = dev->short_name = "pocl-remote (not connected)";
  dev->has_own_timer = 1;
  dev->svm_caps = 0;
  dev->max_sub_devices = 0;
  dev->num_partition_properties = 0;
  dev->num_partition_types = 0;
  dev->device_side_printf = 0;

  if (pocl_remote_discovered_params (j) != NULL)
    parameters = pocl_remote_discovered_params (j);
  why = pocl_remote_parse_parameters (parameters, &pp);
  if (why != NULL)
    {
      config_error (j, parameters, why);
      return CL_INVALID_VALUE;
    }
  index = pp.device;

  remote_device_data *d = calloc (1, sizeof (remote_device_data));
  if (d == NULL)
    return CL_OUT_OF_HOST_MEMORY;
  pthread_mutex_init (&d->info_lock, NULL);
  dev->data = d;
  d->server_device = index;
  d->server = pocl_remote_server_get (pp.host, pp.port,
                                      pp.peer_host[0] ? pp.peer_host : NULL,
                                      pp.peer_port, &err);
  if (err != CL_SUCCESS)
    return err;
  if (index >= d->server->num_devices)
    {
      fprintf (stderr,
               "pocl-remote: POCL_REMOTE%u_PARAMETERS: %s:%u has %u "
               "devices, no device %u; remote device %u is left out\n",
               j, pp.host, pp.port, d->server->num_devices, index, j);
      return CL_DEVICE_NOT_FOUND;
    }

  pocl_remote_device_info req = { index, 0 };
  void *reply = NULL;
  uint64_t reply_size = 0;
  err = pocl_remote_request (d->server, POCL_RMSG_DEVICE_INFO, &req,
                             sizeof (req), NULL, 0, &reply, &reply_size);
  if (err != CL_SUCCESS)
    {
      free (reply);
      return err;
    }
  char *name = NULL;
  pocl_remote_apply_device_info (dev, reply, reply_size, &name);
  free (reply);
  pocl_remote_svm_setup (dev);
  pocl_remote_setup_builtins (dev);
  pocl_remote_set_partitioning (dev);

  char long_name[512];
  snprintf (long_name, sizeof (long_name), "%s (pocl-remote %s:%u/%u)",
            name ? name : "device", pp.host, pp.port, index);
  dev->long_name = strdup (long_name);
  dev->short_name = dev->long_name;
  d->build_hash = strdup (long_name);
  free (name);

  /* the API reports bits, PoCL keeps bytes */
  dev->mem_base_addr_align /= 8;
  if (dev->mem_base_addr_align == 0)
    dev->mem_base_addr_align = MAX_EXTENDED_ALIGNMENT;
  /* host function pointers mean nothing on the server */
  dev->execution_capabilities
      &= ~(cl_device_exec_capabilities)CL_EXEC_NATIVE_KERNEL;
  dev->version_as_int = parse_version (dev->version);
  if (dev->version_as_cl == 0)
    dev->version_as_cl = CL_MAKE_VERSION (dev->version_as_int / 100,
                                          dev->version_as_int / 10 % 10, 0);
  /* Applications may not map device memory directly; PoCL's host-side
     staging (mem_host_ptr) serves maps, migrations carry the bytes.  */
  dev->host_unified_memory = CL_FALSE;
  dev->queue_properties
      = CL_QUEUE_PROFILING_ENABLE | CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE;
  dev->on_host_queue_props = dev->queue_properties;
  dev->available = CL_TRUE;

  if (num_remote_devices < POCL_REMOTE_MAX_DEVICES)
    remote_devices[num_remote_devices++] = dev;
  POCL_MSG_PRINT_INFO ("remote: device %u is %s\n", j, dev->long_name);
  return CL_SUCCESS;
}

static cl_int
pocl_remote_uninit (unsigned j, cl_device_id device)
{
  return CL_SUCCESS;
}

/* CL_DEVICE_AVAILABLE of the server's devices.  */
static void
pocl_remote_set_available (remote_server *s, cl_bool available)
{
  unsigned i;
  for (i = 0; i < num_remote_devices; ++i)
    {
      remote_device_data *d = (remote_device_data *)remote_devices[i]->data;
      if (__atomic_load_n (&d->server, __ATOMIC_ACQUIRE) == s)
        __atomic_store_n (&remote_devices[i]->available, available,
                          __ATOMIC_RELEASE);
    }
}

/* The channel's handler of a session lost for good.  */
static void
pocl_remote_server_gone (remote_server *s)
{
  pocl_remote_set_available (s, CL_FALSE);
}

/* What the channel calls up: completions (remote_submit.c) and the loss of
   a session.  */
static const remote_channel_handlers remote_handlers = {
  pocl_remote_reader_thread_started,
  pocl_remote_complete,
  pocl_remote_complete_deferred,
  pocl_remote_server_gone,
  pocl_remote_usm_host_flush,
};

/* The device's session died (its session process crashed in a vendor
   library, the server restarted): a new one for `context` and newer ones
   (patch 0122), which every device of that server then uses.  */
static void
pocl_remote_revive (cl_device_id device, cl_context context)
{
  remote_device_data *d = (remote_device_data *)device->data;
  remote_server *old = __atomic_load_n (&d->server, __ATOMIC_ACQUIRE);
  if (old == NULL || !pocl_remote_dead (old))
    return;
  uint64_t epoch
      = context ? context->id
                : __atomic_load_n (&old->newest_context, __ATOMIC_ACQUIRE) + 1;
  cl_int err;
  remote_server *s = pocl_remote_server_renew (old, epoch, &err);
  if (s == NULL)
    return;
  unsigned i;
  for (i = 0; i < num_remote_devices; ++i)
    {
      remote_device_data *o = (remote_device_data *)remote_devices[i]->data;
      if (__atomic_load_n (&o->server, __ATOMIC_ACQUIRE) == old)
        __atomic_store_n (&o->server, s, __ATOMIC_RELEASE);
    }
  pocl_remote_set_available (s, CL_TRUE);
}

/* The servers of a context's remote devices become peers, so that their
   commands depend on each other and migrate buffers without this client.  */
static int
pocl_remote_init_context (cl_device_id device, cl_context context)
{
  remote_server *s = ((remote_device_data *)device->data)->server;
  unsigned i;
  uint64_t newest = __atomic_load_n (&s->newest_context, __ATOMIC_ACQUIRE);
  while (newest < context->id
         && !__atomic_compare_exchange_n (&s->newest_context, &newest,
                                          context->id, 0, __ATOMIC_ACQ_REL,
                                          __ATOMIC_ACQUIRE))
    ;
  for (i = 0; i < context->num_devices; ++i)
    {
      cl_device_id other = context->devices[i];
      if (other->ops == device->ops && other->data != NULL)
        pocl_remote_peer_link (
            s, ((remote_device_data *)other->data)->server);
    }
  return CL_SUCCESS;
}

/* Same server and platform: a native copy (3).  Same server, two
   platforms: a COPY too, which pocld stages in its own memory (2).  Linked
   servers: a push from one to the other (1).  Else PoCL goes through host
   memory.  */
static int
pocl_remote_can_migrate_d2d (cl_device_id dest, cl_device_id source)
{
  if (dest->ops != source->ops)
    return 0;
  remote_device_data *d = (remote_device_data *)dest->data;
  remote_device_data *s = (remote_device_data *)source->data;
  if (d->server == s->server)
    return d->platform == s->platform ? 3 : 2;
  return pocl_remote_linked (d->server, s->server) ? 1 : 0;
}

/* A read on dest of a buffer whose latest content is on another remote
   device goes to that device's server (patch 0103): the bytes cross the
   network once, from where they are.  Not for content-size buffers (their
   size buffer may be elsewhere) nor sub-buffers.  */
static int
pocl_remote_can_read_from (cl_device_id dest, cl_device_id holder, cl_mem mem)
{
  if (holder->ops != dest->ops || holder->data == NULL
      || mem->size_buffer != NULL || mem->parent != NULL
      || pocl_remote_default_queue (mem, holder) == NULL)
    return 0;
  return !pocl_remote_dead (((remote_device_data *)holder->data)->server);
}

static cl_int
pocl_remote_alloc_mem_obj (cl_device_id device, cl_mem mem, void *host_ptr)
{
  remote_device_data *d = (remote_device_data *)device->data;
  remote_server *s = pocl_remote_session_for (device, mem->context);
  pocl_mem_identifier *p = &mem->device_ptrs[device->global_mem_id];
  int on_svm = 0;
  const cl_mem_flags access = CL_MEM_READ_WRITE | CL_MEM_READ_ONLY
                              | CL_MEM_WRITE_ONLY | CL_MEM_HOST_WRITE_ONLY
                              | CL_MEM_HOST_READ_ONLY | CL_MEM_HOST_NO_ACCESS;
  if (s == NULL || pocl_remote_dead (s))
    return CL_MEM_OBJECT_ALLOCATION_FAILURE;
  /* PoCL asks for a CL_MEM_ALLOC_HOST_PTR image before it has set the
     format (no channel order is 0): its first command allocates it.  */
  if (mem->is_image && mem->image_channel_order == 0)
    return CL_SUCCESS;

  /* Asynchronous: the caller holds the cl_mem's lock, which a completion
     handled by the reader thread may need.  A failure surfaces as the error
     of the commands that use the object.  */
  if (mem->is_image)
    {
      pocl_remote_create_image ci;
      memset (&ci, 0, sizeof (ci));
      ci.mem_id = pocl_remote_wire_id (mem->id, device);
      ci.flags = mem->flags & access;
      ci.device = d->server_device;
      ci.image_type = mem->type;
      ci.channel_order = mem->image_channel_order;
      ci.channel_type = mem->image_channel_data_type;
      ci.width = mem->image_width;
      ci.height = mem->image_height;
      ci.depth = mem->image_depth;
      ci.array_size = mem->image_array_size;
      if (mem->type == CL_MEM_OBJECT_IMAGE1D_BUFFER && mem->buffer)
        ci.buffer_id = pocl_remote_wire_id (mem->buffer->id, device);
      pocl_remote_request_async (s, POCL_RMSG_CREATE_IMAGE, &ci,
                                 sizeof (ci), NULL, 0);
    }
  else
    on_svm
        = pocl_remote_create_buffer_on (s, device, mem, mem->flags & access);
  p->mem_ptr = (void *)(uintptr_t)pocl_remote_wire_id (mem->id, device);
  p->version = on_svm ? mem->latest_version : 0;
  return CL_SUCCESS;
}

static void
pocl_remote_free (cl_device_id device, cl_mem mem)
{
  remote_server *s = pocl_remote_session_for (device, mem->context);
  pocl_mem_identifier *p = &mem->device_ptrs[device->global_mem_id];
  pocl_remote_release r = { pocl_remote_wire_id (mem->id, device) };
  if (s != NULL)
    pocl_remote_send (s, 0, POCL_RMSG_FREE_BUFFER, 0, &r, sizeof (r), NULL,
                      0);
  p->mem_ptr = NULL;
  p->version = 0;
}

static int
pocl_remote_init_queue (cl_device_id device, cl_command_queue queue)
{
  remote_device_data *d = (remote_device_data *)device->data;
  remote_server *s = pocl_remote_session_for (device, queue->context);
  if (s == NULL || pocl_remote_dead (s))
    return CL_DEVICE_NOT_AVAILABLE;
  pocl_remote_create_queue cq;
  memset (&cq, 0, sizeof (cq));
  cq.queue_id = queue->id;
  /* only the standard bits: PoCL marks its internal queues CL_QUEUE_HIDDEN */
  cq.properties
      = queue->properties
        & (CL_QUEUE_PROFILING_ENABLE | CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE);
  cq.device = d->server_device;
  remote_queue *rq = calloc (1, sizeof (remote_queue));
  if (rq == NULL)
    return CL_OUT_OF_HOST_MEMORY;
  pthread_cond_init (&rq->idle_cond, NULL);
  rq->server = s;
  queue->data = rq;
  /* Asynchronous: clCreateContext creates its default queues under PoCL's
     global context lock, which the reader thread takes when a completion
     frees the last command of a released context (clReleaseContext always
     locks it); waiting for the reply here deadlocked (CLBlast's tests: a
     new context per routine).  The properties were checked against the
     server's device already; a failure surfaces in the queue's commands.  */
  pocl_remote_request_async (s, POCL_RMSG_CREATE_QUEUE, &cq,
                             sizeof (cq), NULL, 0);
  return CL_SUCCESS;
}

static int
pocl_remote_free_queue (cl_device_id device, cl_command_queue queue)
{
  remote_device_data *d = (remote_device_data *)device->data;
  remote_queue *rq = (remote_queue *)queue->data;
  pocl_remote_release r = { queue->id };
  /* a queue of a dead session's context: its session is not the device's */
  if (rq != NULL
      && rq->server == __atomic_load_n (&d->server, __ATOMIC_ACQUIRE))
    pocl_remote_send (rq->server, 0, POCL_RMSG_FREE_QUEUE, 0, &r, sizeof (r),
                      NULL, 0);
  if (queue->data)
    {
      pthread_cond_destroy (&((remote_queue *)queue->data)->idle_cond);
      POCL_MEM_FREE (queue->data);
    }
  return CL_SUCCESS;
}

static int
pocl_remote_new_sampler (cl_device_id device, cl_sampler samp,
                         unsigned context_device_i)
{
  remote_device_data *d = (remote_device_data *)device->data;
  remote_server *s = pocl_remote_session_for (device, samp->context);
  if (s == NULL)
    return CL_DEVICE_NOT_AVAILABLE;
  pocl_remote_create_sampler cs;
  cs.sampler_id = pocl_remote_wire_id (samp->id, device);
  cs.device = d->server_device;
  cs.normalized_coords = samp->normalized_coords;
  cs.addressing_mode = samp->addressing_mode;
  cs.filter_mode = samp->filter_mode;
  return pocl_remote_request (s, POCL_RMSG_CREATE_SAMPLER, &cs,
                              sizeof (cs), NULL, 0, NULL, NULL);
}

static int
pocl_remote_free_sampler (cl_device_id device, cl_sampler samp,
                          unsigned context_device_i)
{
  remote_server *s = pocl_remote_session_for (device, samp->context);
  pocl_remote_release r = { pocl_remote_wire_id (samp->id, device) };
  if (s != NULL)
    pocl_remote_send (s, 0, POCL_RMSG_FREE_SAMPLER, 0, &r, sizeof (r), NULL,
                      0);
  return CL_SUCCESS;
}

/* pocl_driver_get_mapping_ptr allocates the mapping when the buffer has no
   mem_host_ptr, which is usual here, but pocl_driver_free_mapping_ptr frees
   it only when there is one: every map of such a buffer leaked (ASan).  */
static cl_int
pocl_remote_free_mapping_ptr (void *data, pocl_mem_identifier *mem_id,
                              cl_mem mem, mem_mapping_t *map)
{
  if (map->host_ptr != NULL
      && (mem->mem_host_ptr == NULL
          || map->host_ptr != (char *)mem->mem_host_ptr + map->offset))
    pocl_aligned_free (map->host_ptr);
  map->host_ptr = NULL;
  return CL_SUCCESS;
}

void
pocl_remote_init_device_ops (struct pocl_device_ops *ops)
{
  memset (ops, 0, sizeof (struct pocl_device_ops));
  pocl_remote_channel_setup (&remote_handlers);
  ops->device_name = remote_device_name;
  ops->probe = pocl_remote_probe;
  ops->init = pocl_remote_init;
  ops->uninit = pocl_remote_uninit;
  ops->build_hash = pocl_remote_build_hash;
  ops->get_device_info_first = pocl_remote_get_device_info_first;
  ops->init_context = pocl_remote_init_context;
  ops->revive = pocl_remote_revive;
  ops->can_migrate_d2d = pocl_remote_can_migrate_d2d;
  ops->can_read_from = pocl_remote_can_read_from;

  ops->alloc_mem_obj = pocl_remote_alloc_mem_obj;
  ops->free = pocl_remote_free;
  ops->get_mapping_ptr = pocl_driver_get_mapping_ptr;
  ops->free_mapping_ptr = pocl_remote_free_mapping_ptr;

  ops->init_queue = pocl_remote_init_queue;
  ops->free_queue = pocl_remote_free_queue;
  ops->create_sampler = pocl_remote_new_sampler;
  ops->free_sampler = pocl_remote_free_sampler;
  ops->create_finalized_command_buffer
      = pocl_remote_create_finalized_command_buffer;
  ops->free_command_buffer = pocl_remote_free_command_buffer;
  ops->run_command_buffer = pocl_remote_command_buffer_taken;

  pocl_remote_init_program_ops (ops);
  pocl_remote_init_submit_ops (ops);
  pocl_remote_init_svm_ops (ops);
}
