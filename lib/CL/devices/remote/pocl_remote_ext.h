/* pocl_remote_ext.h - what the remote driver tells applications (and our
   tests) beyond standard OpenCL.  */

#ifndef POCL_REMOTE_EXT_H
#define POCL_REMOTE_EXT_H

#include <stdint.h>

/* clGetDeviceInfo on a remote device: the traffic with its server so far,
   as a pocl_remote_traffic.  Lets tests prove what crossed the network
   (content-size transfers, server-to-server migrations).  */
#define CL_DEVICE_REMOTE_TRAFFIC_POCL 0x4F7E

typedef struct pocl_remote_traffic
{
  uint64_t bytes_sent;     /* by this client to the server, headers included */
  uint64_t bytes_received; /* by this client from the server */
  /* buffer bytes the server received from its peers in migrations */
  uint64_t peer_bytes_received;
} pocl_remote_traffic;

#endif
