/* stream.c - the stream source driver: a CL_DEVICE_TYPE_CUSTOM device whose
   built-in kernel writes the next chunk of a stream into a buffer.  */

#include "pocl_stream.h"

#include "pocl_custom.h"
#include "devices.h"

static const pocl_custom_driver stream_driver = { NULL, 0, NULL };

static unsigned int
stream_probe (struct pocl_device_ops *ops)
{
  int n = pocl_device_get_env_count (ops->device_name);
  return n < 0 ? 0 : (unsigned)n;
}

static cl_int
stream_init (unsigned j, cl_device_id device, const char *parameters)
{
  cl_int err = pocl_custom_init_device (device, &stream_driver, NULL);
  device->long_name = device->short_name = "stream";
  return err;
}

void
pocl_stream_init_device_ops (struct pocl_device_ops *ops)
{
  pocl_custom_init_ops (ops);
  ops->device_name = "stream";
  ops->probe = stream_probe;
  ops->init = stream_init;
}
