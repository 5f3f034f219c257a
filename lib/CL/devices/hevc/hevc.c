/* hevc.c - the HEVC decoder driver: a CL_DEVICE_TYPE_CUSTOM device whose
   built-in kernels decode HEVC access units into frames (libavcodec).  */

#include "pocl_hevc.h"

#include "pocl_custom.h"
#include "devices.h"

static const pocl_custom_driver hevc_driver = { NULL, 0, NULL };

static unsigned int
hevc_probe (struct pocl_device_ops *ops)
{
  int n = pocl_device_get_env_count (ops->device_name);
  return n < 0 ? 0 : (unsigned)n;
}

static cl_int
hevc_init (unsigned j, cl_device_id device, const char *parameters)
{
  cl_int err = pocl_custom_init_device (device, &hevc_driver, NULL);
  device->long_name = device->short_name = "hevc";
  return err;
}

void
pocl_hevc_init_device_ops (struct pocl_device_ops *ops)
{
  pocl_custom_init_ops (ops);
  ops->device_name = "hevc";
  ops->probe = hevc_probe;
  ops->init = hevc_init;
}
