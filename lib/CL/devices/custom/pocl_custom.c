/* pocl_custom.c - common part of the CL_DEVICE_TYPE_CUSTOM drivers: device
   set-up, built-in kernel metadata from the driver's table, and one worker
   thread per device that runs the device's commands in order.  */

#include "pocl_custom.h"

#include "common.h"
#include "common_driver.h"
#include "devices.h"
#include "pocl_local_size.h"
#include "pocl_mem_management.h"
#include "pocl_util.h"
#include "utlist.h"

#include <pthread.h>
#include <string.h>
#include <unistd.h>

typedef struct custom_data
{
  const pocl_custom_driver *driver;
  void *driver_data;
  pthread_mutex_t lock;
  pthread_cond_t wake;
  /* commands whose dependencies have finished, oldest first */
  _cl_command_node *ready;
  int exit;
  pthread_t worker;
} custom_data;

typedef struct custom_event_data
{
  pthread_cond_t done;
} custom_event_data;

void *
pocl_custom_driver_data (cl_device_id device)
{
  return ((custom_data *)device->data)->driver_data;
}

static const pocl_custom_kernel *
find_kernel (const pocl_custom_driver *drv, const char *name)
{
  unsigned i;
  for (i = 0; i < drv->num_kernels; ++i)
    if (strcmp (drv->kernels[i].name, name) == 0)
      return &drv->kernels[i];
  return NULL;
}

void *
pocl_custom_arg_buffer (pocl_custom_launch *launch, unsigned i, size_t *size)
{
  struct pocl_argument *al = &launch->node->command.run.arguments[i];
  *size = 0;
  if (al->value == NULL)
    return NULL;
  cl_mem m = *(cl_mem *)al->value;
  if (m == NULL)
    return NULL;
  /* clSetKernelArg stored a sub-buffer as its parent plus an offset */
  *size = m->size > al->offset ? m->size - al->offset : 0;
  return (char *)m->device_ptrs[launch->device->global_mem_id].mem_ptr
         + al->offset;
}

size_t
pocl_custom_global_size (pocl_custom_launch *launch)
{
  struct pocl_context *pc = &launch->node->command.run.pc;
  return pc->num_groups[0] * pc->local_size[0];
}

/* Runs one built-in kernel launch; its event fails with the kernel's
   status.  */
static void
run_ndrange (custom_data *d, _cl_command_node *node)
{
  cl_event event = node->sync.event.event;
  cl_kernel kernel = node->command.run.kernel;
  const pocl_custom_kernel *k = find_kernel (d->driver, kernel->name);
  pocl_custom_launch launch
      = { node->device, node, kernel->data[node->program_device_i] };
  cl_int status = CL_INVALID_KERNEL;

  pocl_update_event_running (event);
  if (k != NULL && (k->create_state == NULL || launch.state != NULL))
    status = k->run (&launch);
  else
    POCL_MSG_ERR ("%s: kernel %s cannot run on this device\n",
                  node->device->short_name, kernel->name);
  if (status == CL_SUCCESS)
    {
      POCL_UPDATE_EVENT_COMPLETE_MSG (event, "Event Built-in Kernel       ");
    }
  else
    pocl_update_event_finished (status, __func__, __LINE__, event,
                                "Event Built-in Kernel failed");
}

static void *
worker (void *arg)
{
  cl_device_id device = (cl_device_id)arg;
  custom_data *d = (custom_data *)device->data;
  pthread_mutex_lock (&d->lock);
  for (;;)
    {
      _cl_command_node *node = d->ready;
      if (node == NULL)
        {
          if (d->exit)
            break;
          pthread_cond_wait (&d->wake, &d->lock);
          continue;
        }
      DL_DELETE (d->ready, node);
      pthread_mutex_unlock (&d->lock);
      if (node->type == CL_COMMAND_NDRANGE_KERNEL)
        run_ndrange (d, node);
      else
        pocl_exec_command (node);
      pthread_mutex_lock (&d->lock);
    }
  pthread_mutex_unlock (&d->lock);
  return NULL;
}

static void
push_ready (cl_device_id device, _cl_command_node *node)
{
  custom_data *d = (custom_data *)device->data;
  pthread_mutex_lock (&d->lock);
  DL_APPEND (d->ready, node);
  pthread_cond_signal (&d->wake);
  pthread_mutex_unlock (&d->lock);
}

static void
custom_submit (_cl_command_node *node, cl_command_queue cq)
{
  node->ready = 1;
  if (pocl_command_is_ready (node->sync.event.event))
    {
      pocl_update_event_submitted (node->sync.event.event);
      push_ready (node->device, node);
    }
  POCL_UNLOCK_OBJ (node->sync.event.event);
}

static void
custom_notify (cl_device_id device, cl_event event, cl_event finished)
{
  _cl_command_node *node = event->command;
  if (finished->status < CL_COMPLETE)
    {
      pocl_update_event_failed (event);
      return;
    }
  if (!node->ready)
    return;
  if (pocl_command_is_ready (event) && event->status == CL_QUEUED)
    {
      pocl_update_event_submitted (event);
      push_ready (device, node);
    }
}

static void
custom_flush (cl_device_id device, cl_command_queue cq)
{
}

static void
custom_join (cl_device_id device, cl_command_queue cq)
{
  POCL_LOCK_OBJ (cq);
  while (cq->command_count != 0)
    pthread_cond_wait ((pthread_cond_t *)cq->data, &cq->pocl_lock);
  POCL_UNLOCK_OBJ (cq);
}

static void
custom_notify_cmdq_finished (cl_command_queue cq)
{
  /* the queue is locked; several threads may wait on it */
  pthread_cond_broadcast ((pthread_cond_t *)cq->data);
}

static void
custom_notify_event_finished (cl_event event)
{
  custom_event_data *e = (custom_event_data *)event->data;
  pthread_cond_broadcast (&e->done);
}

static void
custom_update_event (cl_device_id device, cl_event event)
{
  if (event->data == NULL && event->status == CL_QUEUED)
    {
      custom_event_data *e = malloc (sizeof (custom_event_data));
      assert (e);
      pthread_cond_init (&e->done, NULL);
      event->data = e;
    }
}

static void
custom_wait_event (cl_device_id device, cl_event event)
{
  custom_event_data *e = (custom_event_data *)event->data;
  POCL_LOCK_OBJ (event);
  while (event->status > CL_COMPLETE)
    pthread_cond_wait (&e->done, &event->pocl_lock);
  POCL_UNLOCK_OBJ (event);
}

static void
custom_free_event_data (cl_event event)
{
  custom_event_data *e = (custom_event_data *)event->data;
  if (e == NULL)
    return;
  pthread_cond_destroy (&e->done);
  free (e);
  event->data = NULL;
}

static int
custom_init_queue (cl_device_id device, cl_command_queue queue)
{
  pthread_cond_t *cond = malloc (sizeof (pthread_cond_t));
  if (cond == NULL)
    return CL_OUT_OF_HOST_MEMORY;
  pthread_cond_init (cond, NULL);
  queue->data = cond;
  return CL_SUCCESS;
}

static int
custom_free_queue (cl_device_id device, cl_command_queue queue)
{
  pthread_cond_destroy ((pthread_cond_t *)queue->data);
  POCL_MEM_FREE (queue->data);
  return CL_SUCCESS;
}

/* A program of built-in kernels builds when the table has every name.  */
static int
custom_build_builtin (cl_program program, cl_uint device_i)
{
  custom_data *d = (custom_data *)program->devices[device_i]->data;
  size_t i;
  for (i = 0; i < program->num_builtin_kernels; ++i)
    POCL_RETURN_ERROR_ON (
        (find_kernel (d->driver, program->builtin_kernel_names[i]) == NULL),
        CL_BUILD_PROGRAM_FAILURE, "no built-in kernel %s on %s\n",
        program->builtin_kernel_names[i],
        program->devices[device_i]->short_name);
  return CL_SUCCESS;
}

static int
custom_setup_metadata (cl_device_id device, cl_program program,
                       unsigned program_device_i)
{
  custom_data *d = (custom_data *)device->data;
  size_t i;
  unsigned a;
  if (program->builtin_kernel_names == NULL)
    return 0;
  program->num_kernels = program->num_builtin_kernels;
  program->kernel_meta
      = calloc (program->num_kernels, sizeof (pocl_kernel_metadata_t));
  if (program->kernel_meta == NULL)
    return 0;
  for (i = 0; i < program->num_kernels; ++i)
    {
      const pocl_custom_kernel *k
          = find_kernel (d->driver, program->builtin_kernel_names[i]);
      pocl_kernel_metadata_t *m = &program->kernel_meta[i];
      if (k == NULL)
        return 0;
      m->name = strdup (k->name);
      m->num_args = k->num_args;
      m->arg_info = calloc (k->num_args, sizeof (pocl_argument_info));
      m->data = calloc (program->num_devices, sizeof (void *));
      /* build_hash: allocated by the build after this (patch 0150) */
      if (m->name == NULL || m->arg_info == NULL || m->data == NULL)
        return 0;
      for (a = 0; a < k->num_args; ++a)
        {
          m->arg_info[a] = k->args[a];
          m->arg_info[a].name = strdup (k->args[a].name);
          m->arg_info[a].type_name = strdup (k->args[a].type_name);
          if (k->args[a].type == POCL_ARG_TYPE_POINTER)
            m->arg_info[a].type_size = sizeof (cl_mem);
        }
      m->has_arg_metadata = POCL_HAS_KERNEL_ARG_ADDRESS_QUALIFIER
                            | POCL_HAS_KERNEL_ARG_ACCESS_QUALIFIER
                            | POCL_HAS_KERNEL_ARG_TYPE_NAME
                            | POCL_HAS_KERNEL_ARG_TYPE_QUALIFIER
                            | POCL_HAS_KERNEL_ARG_NAME;
    }
  return 1;
}

static int
custom_free_program (cl_device_id device, cl_program program,
                     unsigned program_device_i)
{
  return 0;
}

static int
custom_supports_binary (cl_device_id device, size_t length,
                        const char *binary)
{
  return 0;
}

static int
custom_create_kernel (cl_device_id device, cl_program program,
                      cl_kernel kernel, unsigned program_device_i)
{
  custom_data *d = (custom_data *)device->data;
  const pocl_custom_kernel *k = find_kernel (d->driver, kernel->name);
  if (k == NULL || k->create_state == NULL)
    return CL_SUCCESS;
  kernel->data[program_device_i] = k->create_state (device);
  return kernel->data[program_device_i] ? CL_SUCCESS : CL_OUT_OF_RESOURCES;
}

static int
custom_free_kernel (cl_device_id device, cl_program program, cl_kernel kernel,
                    unsigned program_device_i)
{
  custom_data *d = (custom_data *)device->data;
  const pocl_custom_kernel *k = find_kernel (d->driver, kernel->name);
  if (k != NULL && k->free_state != NULL
      && kernel->data[program_device_i] != NULL)
    k->free_state (kernel->data[program_device_i]);
  kernel->data[program_device_i] = NULL;
  return CL_SUCCESS;
}

static char *
custom_build_hash (cl_device_id device)
{
  return strdup (device->ops->device_name);
}

static cl_int
custom_uninit (unsigned j, cl_device_id device)
{
  custom_data *d = (custom_data *)device->data;
  pthread_mutex_lock (&d->lock);
  d->exit = 1;
  pthread_cond_signal (&d->wake);
  pthread_mutex_unlock (&d->lock);
  pthread_join (d->worker, NULL);
  if (d->driver->uninit)
    d->driver->uninit (device);
  pthread_mutex_destroy (&d->lock);
  pthread_cond_destroy (&d->wake);
  POCL_MEM_FREE (device->data);
  return CL_SUCCESS;
}

void
pocl_custom_init_ops (struct pocl_device_ops *ops)
{
  memset (ops, 0, sizeof (*ops));
  ops->uninit = custom_uninit;

  ops->alloc_mem_obj = pocl_driver_alloc_mem_obj;
  ops->free = pocl_driver_free;
  ops->read = pocl_driver_read;
  ops->read_rect = pocl_driver_read_rect;
  ops->write = pocl_driver_write;
  ops->write_rect = pocl_driver_write_rect;
  ops->copy = pocl_driver_copy;
  ops->copy_with_size = pocl_driver_copy_with_size;
  ops->copy_rect = pocl_driver_copy_rect;
  ops->memfill = pocl_driver_memfill;
  ops->map_mem = pocl_driver_map_mem;
  ops->unmap_mem = pocl_driver_unmap_mem;
  ops->get_mapping_ptr = pocl_driver_get_mapping_ptr;
  ops->free_mapping_ptr = pocl_driver_free_mapping_ptr;

  ops->submit = custom_submit;
  ops->notify = custom_notify;
  ops->flush = custom_flush;
  ops->join = custom_join;
  ops->broadcast = pocl_broadcast;
  ops->wait_event = custom_wait_event;
  ops->notify_event_finished = custom_notify_event_finished;
  ops->notify_cmdq_finished = custom_notify_cmdq_finished;
  ops->update_event = custom_update_event;
  ops->free_event_data = custom_free_event_data;
  ops->init_queue = custom_init_queue;
  ops->free_queue = custom_free_queue;

  ops->build_builtin = custom_build_builtin;
  ops->setup_metadata = custom_setup_metadata;
  ops->free_program = custom_free_program;
  ops->supports_binary = custom_supports_binary;
  ops->create_kernel = custom_create_kernel;
  ops->free_kernel = custom_free_kernel;
  ops->build_hash = custom_build_hash;
  ops->compute_local_size = pocl_default_local_size_optimizer;
}

cl_int
pocl_custom_init_device (cl_device_id device, const pocl_custom_driver *driver,
                         void *driver_data)
{
  custom_data *d = calloc (1, sizeof (custom_data));
  size_t len = 1;
  unsigned i;
  if (d == NULL)
    return CL_OUT_OF_HOST_MEMORY;
  d->driver = driver;
  d->driver_data = driver_data;
  pthread_mutex_init (&d->lock, NULL);
  pthread_cond_init (&d->wake, NULL);
  device->data = d;

  pocl_init_default_device_infos (device);
  device->type = CL_DEVICE_TYPE_CUSTOM;
  /* buffers live in host memory, shared with the process's CPU devices */
  device->global_mem_id = 0;
  device->vendor_id = CL_KHRONOS_VENDOR_ID_POCL;
  device->max_compute_units = 1;
  device->compiler_available = CL_FALSE;
  device->linker_available = CL_FALSE;
  /* no compiler, so no IL either (the defaults name SPIR-V where PoCL was
     built with it) */
  device->supported_spir_v_versions = "";
  device->image_support = CL_FALSE;
  device->extensions = "";
  device->on_host_queue_props = CL_QUEUE_PROFILING_ENABLE;
  /* the host's memory: buffers are host allocations */
  device->global_mem_size
      = (cl_ulong)sysconf (_SC_PHYS_PAGES) * (cl_ulong)sysconf (_SC_PAGESIZE);
  pocl_set_buffer_image_limits (device);

  for (i = 0; i < driver->num_kernels; ++i)
    len += strlen (driver->kernels[i].name) + 1;
  device->builtin_kernel_list = calloc (len, 1);
  if (device->builtin_kernel_list == NULL)
    return CL_OUT_OF_HOST_MEMORY;
  for (i = 0; i < driver->num_kernels; ++i)
    {
      if (i > 0)
        strcat (device->builtin_kernel_list, ";");
      strcat (device->builtin_kernel_list, driver->kernels[i].name);
    }
  device->num_builtin_kernels = driver->num_kernels;
  pocl_setup_builtin_kernels_with_version (device);

  if (pthread_create (&d->worker, NULL, worker, device) != 0)
    return CL_OUT_OF_RESOURCES;
  return CL_SUCCESS;
}
