/* pocl_custom.h - common part of the CL_DEVICE_TYPE_CUSTOM drivers (stream,
   hevc): devices that build no OpenCL C and run only the built-in kernels of
   a table.  Buffers live in host memory (global_mem_id 0, shared with the CPU
   drivers of the same process), so moving a buffer between a custom device
   and pthread costs nothing.  Each device has one worker thread that runs
   its commands in order, so that a slow built-in kernel (a decode, a wait
   for the next frame) never runs on an application or pocld thread.  */

#ifndef POCL_CUSTOM_H
#define POCL_CUSTOM_H

#include "pocl_cl.h"

/* One launch of a built-in kernel, as its run function sees it.  */
typedef struct pocl_custom_launch
{
  cl_device_id device;
  _cl_command_node *node;
  /* what the kernel's create_state returned for this cl_kernel, or NULL */
  void *state;
} pocl_custom_launch;

typedef struct pocl_custom_kernel
{
  /* dotted name, as in CL_DEVICE_BUILT_IN_KERNELS */
  const char *name;
  cl_uint num_args;
  const pocl_argument_info *args;
  /* Runs one launch on the device's worker thread.  Returns CL_SUCCESS, or
     the negative status the command's event ends with (after logging why).  */
  cl_int (*run) (pocl_custom_launch *launch);
  /* Optional per-cl_kernel state (a decoder's context): made when the
     kernel is created, freed with it.  NULL on failure.  */
  void *(*create_state) (cl_device_id device);
  void (*free_state) (void *state);
} pocl_custom_kernel;

typedef struct pocl_custom_driver
{
  const pocl_custom_kernel *kernels;
  unsigned num_kernels;
  /* called on the worker thread before it exits, for the driver's data */
  void (*uninit) (cl_device_id device);
} pocl_custom_driver;

/* Fills ops with the common implementation; the driver sets device_name,
   probe and init afterwards.  */
void pocl_custom_init_ops (struct pocl_device_ops *ops);

/* Called from a driver's init: sets up the device as a CUSTOM device
   offering the table's kernels, with driver_data for the driver (see
   pocl_custom_driver_data), and starts its worker.  */
cl_int pocl_custom_init_device (cl_device_id device,
                                const pocl_custom_driver *driver,
                                void *driver_data);

void *pocl_custom_driver_data (cl_device_id device);

/* Buffer argument i of a launch: its host address, and in *size the bytes
   from there to the end of the buffer.  NULL (and *size 0) for a NULL
   argument.  */
void *pocl_custom_arg_buffer (pocl_custom_launch *launch, unsigned i,
                              size_t *size);

/* Global work size of dimension 0 of a launch.  */
size_t pocl_custom_global_size (pocl_custom_launch *launch);

#endif
