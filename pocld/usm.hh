// usm.hh - a device's native unified shared memory
// (cl_intel_unified_shared_memory), where its platform has it: the
// functions pocld calls on the allocations it made with them.
#pragma once

#include "cl.hh"

namespace pocld {

struct UsmFns {
  clHostMemAllocINTEL_fn host;
  clDeviceMemAllocINTEL_fn device;
  clSharedMemAllocINTEL_fn shared;
  clMemBlockingFreeINTEL_fn free;
  clEnqueueMemcpyINTEL_fn memcpy;
  clEnqueueMemFillINTEL_fn fill;
  clSetKernelArgMemPointerINTEL_fn arg;
};

// The native functions for allocations of `kind` (POCL_REMOTE_ALLOC_USM_*)
// on the device, or nullptr where the device has no USM of that kind (its
// CL_DEVICE_*_MEM_CAPABILITIES_INTEL is 0 or refused) or its platform lacks
// a function.  Looked up once per platform.
const UsmFns *native_usm(cl_platform_id platform, cl_device_id device,
                         uint32_t kind);

} // namespace pocld
