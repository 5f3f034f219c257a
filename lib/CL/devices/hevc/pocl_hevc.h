/* pocl_hevc.h - the HEVC decoder driver's entry point (CL_DEVICE_TYPE_CUSTOM).  */

#ifndef POCL_HEVC_H
#define POCL_HEVC_H

#include "pocl_cl.h"

POCL_EXPORT
void pocl_hevc_init_device_ops (struct pocl_device_ops *ops);

#endif
