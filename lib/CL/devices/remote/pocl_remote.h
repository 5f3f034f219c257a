/* pocl_remote.h - the remote (PoCL-R client) driver's entry point.  Only
   this is public: the other ops are static, since their GEN_PROTOTYPES
   names would clash with the wire structs of pocl_remote_protocol.h.  */

#ifndef POCL_REMOTE_H
#define POCL_REMOTE_H

#include "pocl_cl.h"

POCL_EXPORT
void pocl_remote_init_device_ops (struct pocl_device_ops *ops);

#endif
