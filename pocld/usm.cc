// usm.cc - a device's native unified shared memory (usm.hh).
#include "usm.hh"

#include "pocl_remote_protocol.h"

#include <map>

namespace pocld {

namespace {

template <class F> F lookup(cl_platform_id p, const char *name)
{
  return reinterpret_cast<F>(clGetExtensionFunctionAddressForPlatform(p, name));
}

} // namespace

const UsmFns *native_usm(cl_platform_id platform, cl_device_id device,
                         uint32_t kind)
{
  // Only the command reader thread allocates.
  static std::map<cl_platform_id, UsmFns> fns;
  auto it = fns.find(platform);
  if (it == fns.end()) {
    UsmFns f;
    f.host = lookup<clHostMemAllocINTEL_fn>(platform, "clHostMemAllocINTEL");
    f.device =
        lookup<clDeviceMemAllocINTEL_fn>(platform, "clDeviceMemAllocINTEL");
    f.shared =
        lookup<clSharedMemAllocINTEL_fn>(platform, "clSharedMemAllocINTEL");
    f.free =
        lookup<clMemBlockingFreeINTEL_fn>(platform, "clMemBlockingFreeINTEL");
    f.memcpy =
        lookup<clEnqueueMemcpyINTEL_fn>(platform, "clEnqueueMemcpyINTEL");
    f.fill =
        lookup<clEnqueueMemFillINTEL_fn>(platform, "clEnqueueMemFillINTEL");
    f.arg = lookup<clSetKernelArgMemPointerINTEL_fn>(
        platform, "clSetKernelArgMemPointerINTEL");
    it = fns.emplace(platform, f).first;
  }
  const UsmFns &f = it->second;
  if (!f.host || !f.device || !f.shared || !f.free || !f.memcpy || !f.fill ||
      !f.arg)
    return nullptr;
  cl_device_info query = kind == POCL_REMOTE_ALLOC_USM_HOST
                             ? CL_DEVICE_HOST_MEM_CAPABILITIES_INTEL
                         : kind == POCL_REMOTE_ALLOC_USM_DEVICE
                             ? CL_DEVICE_DEVICE_MEM_CAPABILITIES_INTEL
                             : CL_DEVICE_SINGLE_DEVICE_SHARED_MEM_CAPABILITIES_INTEL;
  cl_device_unified_shared_memory_capabilities_intel caps = 0;
  if (clGetDeviceInfo(device, query, sizeof caps, &caps, nullptr) !=
          CL_SUCCESS ||
      caps == 0)
    return nullptr;
  return &f;
}

} // namespace pocld
