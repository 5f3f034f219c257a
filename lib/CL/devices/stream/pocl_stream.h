/* pocl_stream.h - the stream source driver's entry point (CL_DEVICE_TYPE_CUSTOM).  */

#ifndef POCL_STREAM_H
#define POCL_STREAM_H

#include "pocl_cl.h"

POCL_EXPORT
void pocl_stream_init_device_ops (struct pocl_device_ops *ops);

#endif
